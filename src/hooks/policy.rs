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
//! git = "deny"        # a git command (shell gate, pre-commit) that would take or drop another
//!                     # live session's uncommitted lines: deny | ask | warn | off
//! unowned = "warn"    # the same for unowned lines (nobody's session: a person's editor, a
//!                     # formatter); the work snapshots keep them: deny | ask | warn | off
//! ```
//!
//! Both files are read by [`crate::config`]. A missing file or table means the defaults. A bad
//! value is an error here (naming the file and the line); the pre-edit hook
//! turns it into "allow, with a note on stderr" (it never blocks on a broken configuration),
//! and `wit hook policy` prints what is wrong.

use std::path::{Path, PathBuf};

pub use crate::config::Action;
use crate::config::{self, ConfigError, GateSection, LOCAL_FILE, SHARED_FILE};

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
    /// Other sessions' work near the edit, `related` (docs/protocol.md 13.5): warn or off,
    /// never more (default warn).
    pub related: Action,
    /// Git commands that would take or drop other live sessions' uncommitted lines (shell
    /// gate and pre-commit; default deny).
    pub git: Action,
    /// Git commands that would take or drop unowned lines (docs/protocol.md 15.3; default
    /// warn: the agent is told, and the work snapshots keep the lines).
    pub unowned: Action,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            locks: Action::Deny,
            intents: Action::Warn,
            contracts: Action::Deny,
            record: true,
            related: Action::Warn,
            git: Action::Deny,
            unowned: Action::Warn,
        }
    }
}

/// The policy of the repository at `root`, with the files it came from (those that exist).
pub fn load(root: &Path) -> Result<(Policy, Vec<PathBuf>), ConfigError> {
    let mut policy = Policy::default();
    let mut sources = Vec::new();
    for path in [root.join(SHARED_FILE), root.join(".wit").join(LOCAL_FILE)] {
        if let Some(file) = config::read(&path)? {
            policy.apply(&file.gate);
            sources.push(path);
        }
    }
    Ok((policy, sources))
}

impl Policy {
    /// Sets the keys `gate` sets, keeping the others.
    pub fn apply(&mut self, gate: &GateSection) {
        let GateSection {
            locks,
            intents,
            contracts,
            record,
            related,
            git,
            unowned,
        } = *gate;
        self.locks = locks.unwrap_or(self.locks);
        self.intents = intents.unwrap_or(self.intents);
        self.contracts = contracts.unwrap_or(self.contracts);
        self.record = record.unwrap_or(self.record);
        self.related = related.unwrap_or(self.related);
        self.git = git.unwrap_or(self.git);
        self.unowned = unowned.unwrap_or(self.unowned);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn parsed(text: &str) -> Result<Policy, ConfigError> {
        let mut policy = Policy::default();
        let file = config::parse(text, Path::new("wit.toml"))?;
        policy.apply(&file.gate);
        Ok(policy)
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
                git: Action::Deny,
                unowned: Action::Warn,
            }
        );
        assert_eq!(
            parsed("[gate]\nunowned = \"deny\"\n").unwrap().unowned,
            Action::Deny
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
        assert!(error.contains("wit.toml:2 (locks = \"block\")"), "{error}");
        assert!(
            error.contains("\"deny\", \"ask\", \"warn\" or \"off\""),
            "{error}"
        );
        let error = parsed("[gate]\nrelated = \"deny\"\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"warn\" or \"off\""), "{error}");
        let error = parsed("[gate]\nlock = \"deny\"\n").unwrap_err().to_string();
        assert!(error.contains("unknown field `lock`"), "{error}");
        assert!(parsed("gate = 3\n").is_err());
        assert!(matches!(parsed("[gate"), Err(ConfigError::Invalid { .. })));
    }

    #[test]
    fn the_local_file_overrides_the_shared_one_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".wit")).unwrap();
        assert_eq!(load(dir.path()).unwrap(), (Policy::default(), vec![]));
        std::fs::write(
            dir.path().join(SHARED_FILE),
            "[gate]\nlocks = \"ask\"\nintents = \"deny\"\n",
        )
        .unwrap();
        std::fs::write(
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
