//! The only things a person may do from the page, each one ordinary protocol call: end a
//! session the daemon cannot see die (ended or reaped already, or registered without a pid:
//! a session with a live pid is ended by the daemon when its process exits), release a lock
//! whose holder is no longer live, accept or reject a proposed contract (as the person's own
//! session, so the event names the person). A worktree's unowned work (docs/protocol.md 15.3)
//! is no session a person ends.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::coord::ownership::is_unowned_session;
use crate::doorway::{Doorway, Failure};

/// An action as the page posts it (`{"action": "end-session", "sessionId": ..}`, ...).
#[derive(Debug, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Action {
    /// `session.end` of a session that is not live or has no pid: releases its locks,
    /// abandons its intents.
    #[serde(rename_all = "camelCase")]
    EndSession {
        /// The session to end.
        session_id: String,
    },
    /// `lock.release` of a lock whose holder is not live.
    #[serde(rename_all = "camelCase")]
    ReleaseLock {
        /// The locked symbol.
        symbol_path: String,
        /// Its holder.
        session_id: String,
    },
    /// `contract.respond` as the person.
    #[serde(rename_all = "camelCase")]
    RespondContract {
        /// The contract.
        contract_id: String,
        /// Accept (true) or reject (false).
        accept: bool,
    },
}

/// Why an action was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    /// The action is not one a person may take (the page never offers it).
    #[error("{0}")]
    NotAllowed(String),
    /// The daemon refused or could not be reached.
    #[error(transparent)]
    Call(#[from] Failure),
}

/// Carries out `action` for the person's session `person`; the protocol call's result.
pub async fn run(daemon: &Doorway, person: &str, action: Action) -> Result<Value, ActionError> {
    match action {
        Action::EndSession { session_id } => {
            if session_id == person {
                return Err(ActionError::NotAllowed(
                    "the page's own session ends when `wit ui` stops".into(),
                ));
            }
            if is_unowned_session(&session_id) {
                return Err(ActionError::NotAllowed(format!(
                    "{session_id} is unowned work, not an agent: committing or restoring its \
                     changes resolves it"
                )));
            }
            let sessions = daemon.call_raw("session.list", json!({})).await?;
            let watched = sessions.as_array().into_iter().flatten().any(|session| {
                session["sessionId"] == session_id.as_str()
                    && session["live"] == true
                    && !session["pid"].is_null()
            });
            if watched {
                return Err(ActionError::NotAllowed(format!(
                    "{session_id}'s process is alive: the daemon ends it when the process exits"
                )));
            }
            Ok(daemon
                .call_raw("session.end", json!({"sessionId": session_id}))
                .await?)
        }
        Action::ReleaseLock {
            symbol_path,
            session_id,
        } => {
            let sessions = daemon.call_raw("session.list", json!({})).await?;
            let live = sessions.as_array().into_iter().flatten().any(|session| {
                session["sessionId"] == session_id.as_str() && session["live"] == true
            });
            if live {
                return Err(ActionError::NotAllowed(format!(
                    "{session_id} is live: only a lock of an ended session may be released here"
                )));
            }
            Ok(daemon
                .call_raw(
                    "lock.release",
                    json!({"symbolPath": symbol_path, "sessionId": session_id}),
                )
                .await?)
        }
        Action::RespondContract {
            contract_id,
            accept,
        } => Ok(daemon
            .call_raw(
                "contract.respond",
                json!({"contractId": contract_id, "sessionId": person, "accept": accept}),
            )
            .await?),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_the_three_actions_parse() {
        let end: Action =
            serde_json::from_str(r#"{"action":"end-session","sessionId":"s1"}"#).unwrap();
        assert!(matches!(end, Action::EndSession { session_id } if session_id == "s1"));
        let respond: Action = serde_json::from_str(
            r#"{"action":"respond-contract","contractId":"c","accept":false}"#,
        )
        .unwrap();
        assert!(matches!(
            respond,
            Action::RespondContract { accept: false, .. }
        ));
        for refused in [
            r#"{"action":"lock.acquire","symbolPath":"a.ts:f","sessionId":"s1"}"#,
            r#"{"action":"end-session","sessionId":"s1","extra":1}"#,
            r#"{"action":"release-lock","symbolPath":"a.ts:f"}"#,
            r#"{"sessionId":"s1"}"#,
        ] {
            assert!(
                serde_json::from_str::<Action>(refused).is_err(),
                "{refused}"
            );
        }
    }
}
