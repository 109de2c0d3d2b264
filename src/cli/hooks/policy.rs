//! The edit gate's policy: the `[gate]` table of `wit.toml` at the repository root (committed,
//! shared by the team) overridden key by key by `.wit/config.toml` (this clone only).
//!
//! ```toml
//! [gate]
//! locks = "deny"      # another live session's lock on a touched symbol: deny | ask | warn | off
//! intents = "warn"    # another session's declared/active intent on the edited range
//! contracts = "deny"  # the edit breaks an accepted contract
//! record = true       # note clean edits as an active "observed edit" intent
//! related = "warn"    # other sessions' work near the edit (context, never a denial): warn | off
//! ```
//!
//! A missing file or table means the defaults. A bad value is an error here; the pre-edit hook
//! turns it into "allow, with a note on stderr" (it never blocks on a broken configuration),
//! and `wit hook policy` prints what is wrong.

use std::fmt;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item};

/// The committed policy file, at the repository root.
pub const SHARED_FILE: &str = "wit.toml";
/// The local override, under `.wit/`.
pub const LOCAL_FILE: &str = "config.toml";

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

/// The effective `[gate]` policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Locks of other live sessions on touched symbols (default deny).
    pub locks: Action,
    /// Other sessions' intents on the edited range (default warn).
    pub intents: Action,
    /// Broken accepted contracts (default deny).
    pub contracts: Action,
    /// Whether clean edits are recorded as observed intents (default true).
    pub record: bool,
    /// Other sessions' work near the edit, `related` (PROTOCOL-NOTES 13.5): warn or off,
    /// never more (default warn).
    pub related: Action,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            locks: Action::Deny,
            intents: Action::Warn,
            contracts: Action::Deny,
            record: true,
            related: Action::Warn,
        }
    }
}

/// Why the policy could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{path} is not valid TOML: {message}")]
    Toml {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A key of `[gate]` has a value the gate does not know.
    #[error("{path}: [gate] {key} = {value} is not allowed; {expected}")]
    Value {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// What would be accepted.
        expected: &'static str,
    },
}

/// The policy of the repository at `root`, with the files it came from (those that exist).
pub fn load(root: &Path) -> Result<(Policy, Vec<PathBuf>), PolicyError> {
    let mut policy = Policy::default();
    let mut sources = Vec::new();
    for path in [root.join(SHARED_FILE), root.join(".wit").join(LOCAL_FILE)] {
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == ErrorKind::NotFound => continue,
            Err(source) => return Err(PolicyError::Read { path, source }),
        };
        apply(&mut policy, &text, &path)?;
        sources.push(path);
    }
    Ok((policy, sources))
}

/// Applies the `[gate]` table of `text` (the file at `path`) over `policy`.
pub fn apply(policy: &mut Policy, text: &str, path: &Path) -> Result<(), PolicyError> {
    let doc: DocumentMut =
        text.parse()
            .map_err(|error: toml_edit::TomlError| PolicyError::Toml {
                path: path.to_path_buf(),
                message: error.message().to_string(),
            })?;
    let Some(gate) = doc.get("gate") else {
        return Ok(());
    };
    let bad = |key: &str, item: &Item, expected: &'static str| PolicyError::Value {
        path: path.to_path_buf(),
        key: key.to_string(),
        value: item.to_string().trim().to_string(),
        expected,
    };
    let Some(table) = gate.as_table_like() else {
        return Err(bad("", gate, "[gate] must be a table"));
    };
    const ACTIONS: &str = "expected \"deny\", \"ask\", \"warn\" or \"off\"";
    for (key, item) in table.iter() {
        match key {
            "locks" | "intents" | "contracts" => {
                let action = item
                    .as_str()
                    .and_then(Action::parse)
                    .ok_or_else(|| bad(key, item, ACTIONS))?;
                match key {
                    "locks" => policy.locks = action,
                    "intents" => policy.intents = action,
                    _ => policy.contracts = action,
                }
            }
            "related" => {
                policy.related = item
                    .as_str()
                    .and_then(Action::parse)
                    .filter(|action| matches!(action, Action::Warn | Action::Off))
                    .ok_or_else(|| bad(key, item, "expected \"warn\" or \"off\""))?;
            }
            "record" => {
                policy.record = item
                    .as_bool()
                    .ok_or_else(|| bad(key, item, "expected true or false"))?;
            }
            // Unknown keys are left for later versions (and typos are named).
            _ => {
                return Err(bad(
                    key,
                    item,
                    "known keys are locks, intents, contracts, record and related",
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn parsed(text: &str) -> Result<Policy, PolicyError> {
        let mut policy = Policy::default();
        apply(&mut policy, text, Path::new("wit.toml")).map(|()| policy)
    }

    #[test]
    fn defaults_and_every_value() {
        assert_eq!(parsed("").unwrap(), Policy::default());
        assert_eq!(parsed("[other]\nx = 1\n").unwrap(), Policy::default());
        let policy = parsed(
            "[gate]\nlocks = \"ask\"\nintents = \"off\"\ncontracts = \"warn\"\nrecord = false\n",
        )
        .unwrap();
        assert_eq!(
            policy,
            Policy {
                locks: Action::Ask,
                intents: Action::Off,
                contracts: Action::Warn,
                record: false,
                related: Action::Warn,
            }
        );
        assert_eq!(
            parsed("[gate]\nrelated = \"off\"\n").unwrap().related,
            Action::Off
        );
        let inline = parsed("gate = { locks = \"warn\" }\n").unwrap();
        assert_eq!(inline.locks, Action::Warn);
        assert_eq!(inline.intents, Action::Warn);
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        let error = parsed("[gate]\nlocks = \"block\"\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("locks = \"block\""), "{error}");
        assert!(
            error.contains("\"deny\", \"ask\", \"warn\" or \"off\""),
            "{error}"
        );
        let error = parsed("[gate]\nrecord = \"yes\"\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("true or false"), "{error}");
        let error = parsed("[gate]\nrelated = \"deny\"\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"warn\" or \"off\""), "{error}");
        let error = parsed("[gate]\nlock = \"deny\"\n").unwrap_err().to_string();
        assert!(error.contains("known keys"), "{error}");
        assert!(parsed("gate = 3\n").is_err());
        assert!(matches!(parsed("[gate"), Err(PolicyError::Toml { .. })));
    }

    #[test]
    fn the_local_file_overrides_the_shared_one_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join(".wit")).unwrap();
        assert_eq!(load(dir.path()).unwrap(), (Policy::default(), vec![]));
        fs::write(
            dir.path().join(SHARED_FILE),
            "[gate]\nlocks = \"ask\"\nintents = \"deny\"\n",
        )
        .unwrap();
        fs::write(
            dir.path().join(".wit").join(LOCAL_FILE),
            "[gate]\nlocks = \"warn\"\n",
        )
        .unwrap();
        let (policy, sources) = load(dir.path()).unwrap();
        assert_eq!(policy.locks, Action::Warn, "local wins");
        assert_eq!(
            policy.intents,
            Action::Deny,
            "shared kept where local is silent"
        );
        assert_eq!(sources.len(), 2);
    }
}
