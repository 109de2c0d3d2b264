//! Which session (agent identity) each face acts for (docs/protocol.md 6), in one place.
//!
//! The CLI: `--session`, else `WIT_SESSION` when non-empty, else `CLAUDE_SESSION_ID` when
//! non-empty, else the contents of `.wit/session.id` ([`resolve_session`]). The file is
//! created once (by `wit init`, or by the first command that needs a session) and never
//! replaced. `wit mcp` stops before the file ([`session_from_flag_or_env`]; each server gets a
//! fresh id instead). The harness hooks put the harness's own session id from the payload
//! after `WIT_SESSION` ([`resolve_for_hook`]).

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Environment variable holding this agent's session id.
pub const SESSION_ENV: &str = "WIT_SESSION";
/// Environment variable Claude Code integrations set to the Claude session id.
pub const CLAUDE_SESSION_ENV: &str = "CLAUDE_SESSION_ID";

/// Where a session id came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionSource {
    /// The `--session` flag.
    Flag,
    /// `$WIT_SESSION`.
    WitSession,
    /// `$CLAUDE_SESSION_ID`.
    ClaudeSession,
    /// `.wit/session.id`.
    File,
    /// The harness's own session id, from a hook's payload.
    Harness,
}

impl SessionSource {
    /// A short human label, e.g. `WIT_SESSION`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Flag => "--session",
            Self::WitSession => SESSION_ENV,
            Self::ClaudeSession => CLAUDE_SESSION_ENV,
            Self::File => ".wit/session.id",
            Self::Harness => "the harness's payload",
        }
    }
}

/// Resolves the session without creating anything: `flag`, then the environment (read
/// through `env`), then the file. `Ok(None)` when none of them gives one.
pub fn resolve_session(
    flag: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
    file: &Path,
) -> Result<Option<(String, SessionSource)>, String> {
    Ok(match session_from_flag_or_env(flag, env)? {
        Some(found) => Some(found),
        None => read_session_file(file).map(|id| (id, SessionSource::File)),
    })
}

/// The first two steps of [`resolve_session`], shared with `wit mcp` (which never reads the
/// file): `flag` (an empty one is an error), then `WIT_SESSION`, then `CLAUDE_SESSION_ID`,
/// each only when non-empty.
pub fn session_from_flag_or_env(
    flag: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<(String, SessionSource)>, String> {
    if let Some(flag) = flag {
        let flag = flag.trim();
        if flag.is_empty() {
            return Err("--session must not be empty".to_string());
        }
        return Ok(Some((flag.to_string(), SessionSource::Flag)));
    }
    for (name, source) in [
        (SESSION_ENV, SessionSource::WitSession),
        (CLAUDE_SESSION_ENV, SessionSource::ClaudeSession),
    ] {
        if let Some(value) = env(name) {
            let value = value.trim();
            if !value.is_empty() {
                return Ok(Some((value.to_string(), source)));
            }
        }
    }
    Ok(None)
}

/// The session a harness hook acts for: `flag`, else `WIT_SESSION`, else the harness's own
/// session id from its payload (`harness`), else `CLAUDE_SESSION_ID`, else `file` (created
/// once when missing). `None` when even the file cannot be made.
pub fn resolve_for_hook(
    flag: Option<&str>,
    harness: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
    file: &Path,
) -> Option<(String, SessionSource)> {
    let given = |value: Option<String>| {
        value
            .map(|value| value.trim().to_string())
            .filter(|value| !value.is_empty())
    };
    if let Some(flag) = given(flag.map(str::to_string)) {
        return Some((flag, SessionSource::Flag));
    }
    if let Some(id) = given(env(SESSION_ENV)) {
        return Some((id, SessionSource::WitSession));
    }
    if let Some(id) = given(harness.map(str::to_string)) {
        return Some((id, SessionSource::Harness));
    }
    if let Some(id) = given(env(CLAUDE_SESSION_ENV)) {
        return Some((id, SessionSource::ClaudeSession));
    }
    read_session_file(file)
        .or_else(|| ensure_session_file(file).ok().map(|(id, _)| id))
        .map(|id| (id, SessionSource::File))
}

/// The session id stored in `file`, if there is a non-empty one.
pub fn read_session_file(file: &Path) -> Option<String> {
    let text = fs::read_to_string(file).ok()?;
    let id = text.trim();
    (!id.is_empty()).then(|| id.to_string())
}

/// Returns the id in `file`, creating the file with a fresh id when it does not exist.
/// Concurrent callers agree on one id: the new file is written aside and hard-linked into
/// place, which fails when another process got there first. Returns whether it created it.
pub fn ensure_session_file(file: &Path) -> std::io::Result<(String, bool)> {
    if let Some(id) = read_session_file(file) {
        return Ok((id, false));
    }
    let id = uuid::Uuid::new_v4().to_string();
    let aside = file.with_extension(format!("id.{}.tmp", std::process::id()));
    {
        use std::io::Write;
        let mut out = fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&aside)?;
        out.write_all(format!("{id}\n").as_bytes())?;
        out.sync_all()?;
    }
    let linked = fs::hard_link(&aside, file);
    let _ = fs::remove_file(&aside);
    match linked {
        Ok(()) => Ok((id, true)),
        Err(error) if error.kind() == ErrorKind::AlreadyExists => read_session_file(file)
            .map(|id| (id, false))
            .ok_or_else(|| std::io::Error::other(format!("{} is empty", file.display()))),
        Err(error) => Err(error),
    }
}

/// An environment of fixed `pairs`, for tests of the resolution order.
#[cfg(test)]
pub(crate) fn env_of(
    pairs: &'static [(&'static str, &'static str)],
) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn order_is_flag_env_claude_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("session.id");
        fs::write(&file, "from-file\n").unwrap();
        let all = env_of(&[
            ("WIT_SESSION", "from-env"),
            ("CLAUDE_SESSION_ID", "from-claude"),
        ]);
        let got = resolve_session(Some("from-flag"), &all, &file)
            .unwrap()
            .unwrap();
        assert_eq!(got, ("from-flag".into(), SessionSource::Flag));
        let got = resolve_session(None, &all, &file).unwrap().unwrap();
        assert_eq!(got, ("from-env".into(), SessionSource::WitSession));
        let claude = env_of(&[("WIT_SESSION", " "), ("CLAUDE_SESSION_ID", "from-claude")]);
        let got = resolve_session(None, claude, &file).unwrap().unwrap();
        assert_eq!(got, ("from-claude".into(), SessionSource::ClaudeSession));
        let empty = env_of(&[("WIT_SESSION", ""), ("CLAUDE_SESSION_ID", "")]);
        let got = resolve_session(None, empty, &file).unwrap().unwrap();
        assert_eq!(got, ("from-file".into(), SessionSource::File));
        fs::remove_file(&file).unwrap();
        assert_eq!(resolve_session(None, env_of(&[]), &file).unwrap(), None);
        assert!(resolve_session(Some(""), env_of(&[]), &file).is_err());
    }

    #[test]
    fn a_hook_puts_the_harness_after_wit_session() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("session.id");
        let all = env_of(&[("WIT_SESSION", "env"), ("CLAUDE_SESSION_ID", "claude")]);
        let got = resolve_for_hook(None, Some("h"), &all, &file).unwrap();
        assert_eq!(got, ("env".into(), SessionSource::WitSession));
        let claude = env_of(&[("CLAUDE_SESSION_ID", "claude")]);
        let got = resolve_for_hook(None, Some("h"), &claude, &file).unwrap();
        assert_eq!(got, ("h".into(), SessionSource::Harness));
        let got = resolve_for_hook(None, Some(" "), &claude, &file).unwrap();
        assert_eq!(got, ("claude".into(), SessionSource::ClaudeSession));
        let (made, source) = resolve_for_hook(None, None, env_of(&[]), &file).unwrap();
        assert_eq!(source, SessionSource::File);
        assert_eq!(read_session_file(&file), Some(made));
    }

    #[test]
    fn the_session_file_is_created_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("session.id");
        let (first, created) = ensure_session_file(&file).unwrap();
        assert!(created);
        let (again, created) = ensure_session_file(&file).unwrap();
        assert!(!created);
        assert_eq!(first, again);
        let leftovers = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file is left behind");
    }
}
