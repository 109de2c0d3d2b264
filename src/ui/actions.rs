//! The only things a person may do from the page, each one ordinary protocol call: end a
//! session, release a lock whose holder is no longer live, accept or reject a proposed
//! contract (as the person's own session, so the event names the person).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::mcp::dispatch::{CallError, Daemon};

/// An action as the page posts it (`{"action": "end-session", "sessionId": ..}`, ...).
#[derive(Debug, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Action {
    /// `session.end` of another session: releases its locks, abandons its intents.
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
    Call(#[from] CallError),
}

/// Carries out `action` for the person's session `person`; the protocol call's result.
pub async fn run(daemon: &Daemon, person: &str, action: Action) -> Result<Value, ActionError> {
    match action {
        Action::EndSession { session_id } => {
            if session_id == person {
                return Err(ActionError::NotAllowed(
                    "the page's own session ends when `wit ui` stops".into(),
                ));
            }
            Ok(daemon
                .call("session.end", json!({"sessionId": session_id}))
                .await?)
        }
        Action::ReleaseLock {
            symbol_path,
            session_id,
        } => {
            let sessions = daemon.call("session.list", json!({})).await?;
            let live = sessions.as_array().into_iter().flatten().any(|session| {
                session["sessionId"] == session_id.as_str() && session["live"] == true
            });
            if live {
                return Err(ActionError::NotAllowed(format!(
                    "{session_id} is live: only a lock of an ended session may be released here"
                )));
            }
            Ok(daemon
                .call(
                    "lock.release",
                    json!({"symbolPath": symbol_path, "sessionId": session_id}),
                )
                .await?)
        }
        Action::RespondContract {
            contract_id,
            accept,
        } => Ok(daemon
            .call(
                "contract.respond",
                json!({"contractId": contract_id, "sessionId": person, "accept": accept}),
            )
            .await?),
    }
}
