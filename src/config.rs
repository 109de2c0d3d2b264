//! The settings files of a repository, read by one typed reader: `wit.toml` at the root
//! (committed, shared by the team) and `.wit/config.toml` (this clone only).
//!
//! ```toml
//! [store]             # .wit/config.toml only (see `daemon::store_choice`)
//! url = "postgres://…"
//! project = "…"
//!
//! [gate]              # both files, the local one key by key over the shared one
//! locks = "deny"      # see `hooks::policy`
//! ```
//!
//! Tables and keys outside these are left alone (for later versions and other tools), except
//! inside `[gate]`, where an unknown key is most likely a typo and is named. A malformed file
//! is a [`ConfigError`] naming the file, the line and what is wrong; whoever reads it decides
//! what that means (the edit gate fails open, a daemon does not start). A missing file is
//! `None`: nothing is parsed unless the file exists.

use std::fmt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, Unexpected};
use serde::Deserialize;

/// The committed settings file, at the repository root.
pub const SHARED_FILE: &str = "wit.toml";
/// The clone's own settings file, under `.wit/`.
pub const LOCAL_FILE: &str = "config.toml";

/// One settings file: the tables wit reads.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
pub struct WitConfig {
    /// `[store]`: which store the daemon opens (read from `.wit/config.toml` only).
    #[serde(default)]
    pub store: StoreSection,
    /// `[gate]`: the edit gate's policy.
    #[serde(default)]
    pub gate: GateSection,
}

/// `[store]`; unset keys fall through to the defaults.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
pub struct StoreSection {
    /// `url`: `sqlite` or a PostgreSQL URL.
    pub url: Option<String>,
    /// `project`: the project the shared state is scoped to.
    pub project: Option<String>,
}

/// `[gate]`; unset keys keep the value below them (the shared file's, or the default).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateSection {
    /// `locks`: another live session's lock on a touched symbol.
    pub locks: Option<Action>,
    /// `intents`: another session's intent on the edited range.
    pub intents: Option<Action>,
    /// `contracts`: the edit breaks an accepted contract.
    pub contracts: Option<Action>,
    /// `record`: whether clean edits are noted as observed intents.
    pub record: Option<bool>,
    /// `related`: other sessions' work near the edit; `warn` or `off` only.
    #[serde(default, deserialize_with = "related")]
    pub related: Option<Action>,
    /// `git`: a git command that would take or drop another live session's lines.
    pub git: Option<Action>,
    /// `unowned`: a git command that would take or drop unowned lines (a person's editor, a
    /// formatter, an unhooked agent: docs/protocol.md 15.3).
    pub unowned: Option<Action>,
}

/// What the gate does about one kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// Ignore this kind.
    Off,
    /// Let the edit through and tell the agent (additional context).
    Warn,
    /// Ask the person at the harness (where the harness cannot ask: deny with the reason).
    Ask,
    /// Refuse the edit with an actionable reason.
    Deny,
}

impl Action {
    /// The action a word of the configuration names.
    fn parse(text: &str) -> Option<Self> {
        match text {
            "off" => Some(Self::Off),
            "warn" => Some(Self::Warn),
            "ask" => Some(Self::Ask),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }

    /// The word used in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Warn => "warn",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = String::deserialize(deserializer)?;
        Action::parse(&word).ok_or_else(|| {
            de::Error::invalid_value(
                Unexpected::Str(&word),
                &"\"deny\", \"ask\", \"warn\" or \"off\"",
            )
        })
    }
}

/// `related`: never more than a warning (it is context, never a denial).
fn related<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Action>, D::Error> {
    let word = String::deserialize(deserializer)?;
    match Action::parse(&word) {
        Some(action @ (Action::Warn | Action::Off)) => Ok(Some(action)),
        _ => Err(de::Error::invalid_value(
            Unexpected::Str(&word),
            &"\"warn\" or \"off\"",
        )),
    }
}

/// Why a settings file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML, or a value has the wrong type or an unknown word.
    #[error("{path}{at}: {message}", at = Location(*line, excerpt))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line (from 1) the parser points at, when it points at one.
        line: Option<usize>,
        /// That line as written, trimmed.
        excerpt: String,
        /// What is wrong.
        message: String,
    },
}

/// `:<line> (<excerpt>)`, or nothing without a line.
struct Location<'a>(Option<usize>, &'a str);

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location(Some(line), excerpt) if !excerpt.is_empty() => {
                write!(f, ":{line} ({excerpt})")
            }
            Location(Some(line), _) => write!(f, ":{line}"),
            Location(None, _) => Ok(()),
        }
    }
}

/// Reads the settings file at `path`: `None` when there is no such file.
pub fn read(path: &Path) -> Result<Option<WitConfig>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    parse(&text, path).map(Some)
}

/// Parses `text`, the content of the settings file at `path`.
pub fn parse(text: &str, path: &Path) -> Result<WitConfig, ConfigError> {
    toml::from_str(text).map_err(|error: toml::de::Error| {
        // The span is in bytes; `get` keeps a span that is not on a character boundary from
        // panicking (it then names no line).
        let line = error
            .span()
            .and_then(|span| text.get(..span.start))
            .map(|before| before.matches('\n').count() + 1);
        let excerpt = line
            .and_then(|line| text.lines().nth(line - 1))
            .unwrap_or_default()
            .trim()
            .to_owned();
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            excerpt,
            message: error.message().trim().to_owned(),
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn parsed(text: &str) -> Result<WitConfig, ConfigError> {
        parse(text, Path::new(".wit/config.toml"))
    }

    #[test]
    fn tables_are_typed_and_others_left_alone() {
        assert_eq!(parsed("").unwrap(), WitConfig::default());
        let config = parsed(
            "title = \"x\"\n[other]\nx = 1\n[store]\nurl = \"sqlite\"\nextra = 2\n\
             [gate]\nlocks = \"ask\"\nrecord = false\nrelated = \"off\"\n",
        )
        .unwrap();
        assert_eq!(config.store.url.as_deref(), Some("sqlite"));
        assert_eq!(config.store.project, None);
        assert_eq!(config.gate.locks, Some(Action::Ask));
        assert_eq!(config.gate.record, Some(false));
        assert_eq!(config.gate.related, Some(Action::Off));
        assert_eq!(config.gate.intents, None);
        let inline = parsed("gate = { git = \"warn\" }\n").unwrap();
        assert_eq!(inline.gate.git, Some(Action::Warn));
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_problem() {
        let error = parsed("[gate]\nintents = \"warn\"\nlocks = \"block\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(".wit/config.toml:3 (locks = \"block\"): "),
            "{error}"
        );
        assert!(
            error.contains("expected \"deny\", \"ask\", \"warn\" or \"off\""),
            "{error}"
        );
        let error = parsed("[gate]\nrelated = \"deny\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(":2 ") && error.contains("\"warn\" or \"off\""),
            "{error}"
        );
        let error = parsed("[gate]\nrecord = \"yes\"\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("boolean"), "{error}");
        let error = parsed("[gate]\nlock = \"deny\"\n").unwrap_err().to_string();
        assert!(error.contains("unknown field `lock`"), "{error}");
        let error = parsed("[store]\nurl = 5\n").unwrap_err().to_string();
        assert!(error.contains(":2 (url = 5)"), "{error}");
        assert!(parsed("gate = 3\n").is_err());
        let error = parsed("x = 1\n[gate\n").unwrap_err().to_string();
        assert!(error.starts_with(".wit/config.toml:2"), "{error}");
    }

    #[test]
    fn a_missing_file_is_none_and_an_unreadable_one_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(&dir.path().join(LOCAL_FILE)).unwrap().is_none());
        assert!(matches!(read(dir.path()), Err(ConfigError::Read { .. })));
        std::fs::write(dir.path().join(SHARED_FILE), "[gate]\ngit = \"off\"\n").unwrap();
        let config = read(&dir.path().join(SHARED_FILE)).unwrap().unwrap();
        assert_eq!(config.gate.git, Some(Action::Off));
    }
}
