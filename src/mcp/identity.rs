//! Which session a `wit mcp` server acts for, and the name and pid it registers.
//!
//! Order: `--session`, else `WIT_SESSION` when non-empty, else `CLAUDE_SESSION_ID` when
//! non-empty, else a new id for this server process. Unlike the CLI, the server never falls
//! back to `.wit/session.id`: each agent session runs its own server, and two agents sharing
//! the repository's default id would share their locks.

use crate::cli::{session_from_flag_or_env, SessionSource};

use super::ServeError;

/// The protocol's bound on `name` (docs/protocol.md 1.6), in bytes.
const MAX_NAME_BYTES: usize = 256;
/// The name registered when the MCP client gives none.
const FALLBACK_NAME: &str = "mcp-client";

/// The session a server acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The `sessionId` every call carries.
    pub session_id: String,
    /// Where it came from; `None`: a fresh id for this server process.
    pub source: Option<SessionSource>,
}

/// Resolves the session: `flag`, then the environment (read through `env`), then a new id.
pub fn resolve(
    flag: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Identity, ServeError> {
    let found = session_from_flag_or_env(flag, env).map_err(|_| ServeError::EmptySession)?;
    Ok(match found {
        Some((session_id, source)) => Identity {
            session_id,
            source: Some(source),
        },
        None => Identity {
            session_id: uuid::Uuid::new_v4().to_string(),
            source: None,
        },
    })
}

/// The name to register for an MCP client: its `clientInfo.name`, cut to the protocol's bound
/// (at a character boundary), or a fixed name when it is empty.
pub fn registered_name(client_name: &str) -> String {
    let name = client_name.trim();
    if name.is_empty() {
        return FALLBACK_NAME.to_string();
    }
    let mut end = name.len().min(MAX_NAME_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// The pid whose life is the session's life: the agent that started the server (the first
/// ancestor that is not a shell or wrapper; the parent when there is none). The edit gate
/// finds the same pid from its hook, so the two see one agent.
pub fn agent_pid() -> i64 {
    crate::harness::harness_pid().unwrap_or_else(crate::platform::process::parent_pid)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;
    use crate::doorway::session::env_of;

    #[test]
    fn order_is_flag_env_claude_then_a_new_id() {
        let all = env_of(&[("WIT_SESSION", "env"), ("CLAUDE_SESSION_ID", "claude")]);
        let got = resolve(Some(" flag "), &all).unwrap();
        assert_eq!(
            (got.session_id.as_str(), got.source),
            ("flag", Some(SessionSource::Flag))
        );
        let got = resolve(None, &all).unwrap();
        assert_eq!(got.source, Some(SessionSource::WitSession));
        let got = resolve(
            None,
            env_of(&[("WIT_SESSION", " "), ("CLAUDE_SESSION_ID", "c")]),
        )
        .unwrap();
        assert_eq!(
            (got.session_id.as_str(), got.source),
            ("c", Some(SessionSource::ClaudeSession))
        );
        let first = resolve(None, env_of(&[])).unwrap();
        let second = resolve(None, env_of(&[])).unwrap();
        assert_eq!(first.source, None, "generated");
        assert_ne!(
            first.session_id, second.session_id,
            "each server gets its own id"
        );
        assert!(matches!(
            resolve(Some(""), env_of(&[])),
            Err(ServeError::EmptySession)
        ));
    }

    #[test]
    fn names_are_bounded_and_never_empty() {
        assert_eq!(registered_name("claude-code"), "claude-code");
        assert_eq!(registered_name("  "), FALLBACK_NAME);
        let long = "é".repeat(200);
        let cut = registered_name(&long);
        assert!(cut.len() <= MAX_NAME_BYTES && cut.chars().all(|c| c == 'é'));
    }
}
