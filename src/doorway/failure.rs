//! Why a call through the doorway produced no result, as types: the daemon's protocol error
//! with its `data` read once into a [`Refusal`], or the daemon out of reach
//! ([`Unavailable`]). Every face renders these (see [`super::advice`]); none reads `data` by
//! string keys.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::client::ClientError;
use crate::protocol::{ErrorCode, ProtocolError};

/// Why a call produced no result.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The daemon answered with a protocol error.
    #[error("{0}")]
    Rpc(ProtocolError),
    /// No daemon could be reached, or it stopped answering.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Self {
        match error {
            ClientError::Rpc(error) => Self::Rpc(error),
            ClientError::Unreachable(source) => Self::Unavailable(Unavailable::NotRunning {
                socket: PathBuf::new(),
                cause: source.to_string(),
                autostart_off: false,
            }),
            ClientError::Transport(detail) => Self::Unavailable(Unavailable::Lost { detail }),
            ClientError::Decode(detail) => Self::Unavailable(Unavailable::BadAnswer { detail }),
        }
    }
}

/// The ways the daemon can be out of reach.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// Nothing answers on the socket and no daemon was started.
    #[error("{}", not_running(socket, cause, *autostart_off))]
    NotRunning {
        /// The socket tried (empty when unknown).
        socket: PathBuf,
        /// What connecting said.
        cause: String,
        /// Whether auto-start was turned off (`WIT_NO_AUTOSTART`).
        autostart_off: bool,
    },
    /// Starting the daemon failed.
    #[error("cannot start the wit daemon: {reason}")]
    StartFailed {
        /// The launcher's reason.
        reason: String,
    },
    /// The connection broke or timed out mid-call.
    #[error("the wit daemon stopped answering mid-call ({detail})")]
    Lost {
        /// What the transport said.
        detail: String,
    },
    /// The answer could not be read.
    #[error("unexpected answer from the wit daemon: {detail}")]
    BadAnswer {
        /// What decoding said.
        detail: String,
    },
    /// The caller's deadline passed first.
    #[error("no answer within {} ms", budget.as_millis())]
    OutOfTime {
        /// The whole allowance.
        budget: Duration,
    },
}

fn not_running(socket: &std::path::Path, cause: &str, autostart_off: bool) -> String {
    let on = if socket.as_os_str().is_empty() {
        String::new()
    } else {
        format!(" on {}", socket.display())
    };
    if autostart_off {
        format!(
            "no wit daemon answers{on} ({cause}) and {} is set",
            super::NO_AUTOSTART_ENV
        )
    } else {
        format!("no wit daemon answers{on} ({cause}); start one with `wit daemon start`")
    }
}

impl Unavailable {
    /// Whether the request may have reached the daemon (and run): a broken or late answer
    /// says nothing about that; a refused connection or a failed start proves it did not.
    pub fn delivered(&self) -> bool {
        matches!(
            self,
            Self::Lost { .. } | Self::BadAnswer { .. } | Self::OutOfTime { .. }
        )
    }
}

/// A protocol error with its `data` read into the fields the spec gives it
/// (`components.errors` of openrpc.json).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// LOCK_CONFLICT: held by another session (and, for a wait, the cycle it would close).
    LockConflict {
        /// The holder's session id.
        held_by: Option<String>,
        /// When the lock expires (ISO 8601).
        expires_at: Option<String>,
        /// The session ids around the cycle a wait would close, the caller's first.
        cycle: Vec<String>,
    },
    /// LOCK_NOT_HELD: the lock is someone else's.
    LockNotHeld {
        /// The holder's session id.
        held_by: Option<String>,
    },
    /// LOCK_NOT_FOUND: no live lock on the symbol.
    LockNotFound,
    /// INTENT_NOT_FOUND.
    IntentNotFound,
    /// INTENT_NOT_OWNED: the intent is another session's.
    IntentNotOwned,
    /// INVALID_TRANSITION between two intent statuses.
    InvalidTransition {
        /// The intent's status.
        current: Option<String>,
        /// The status asked for.
        requested: Option<String>,
    },
    /// SYMBOL_NOT_FOUND, or ambiguous (then with candidates).
    SymbolNotFound {
        /// The path asked for.
        symbol_path: Option<String>,
        /// The symbols it could mean.
        candidates: Vec<String>,
    },
    /// CONTRACT_NOT_FOUND.
    ContractNotFound,
    /// CONTRACT_ALREADY_RESOLVED.
    ContractAlreadyResolved {
        /// The contract's status.
        status: Option<String>,
    },
    /// SELF_ACCEPT_NOT_ALLOWED.
    SelfAcceptNotAllowed,
    /// SESSION_NOT_FOUND.
    SessionNotFound {
        /// The unknown session.
        session_id: Option<String>,
    },
    /// INVALID_REQUEST: every problem with the params, in the daemon's order.
    InvalidRequest {
        /// `field: message`, form errors, `reason` and `detail`, one each.
        problems: Vec<String>,
    },
    /// METHOD_NOT_FOUND: the daemon is older than this wit.
    MethodNotFound,
    /// Any other error (internal, parse, version mismatch): code, message and data as sent.
    Other,
}

/// The fields the spec's error `data` may hold; missing ones are `None`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Data {
    held_by: Option<String>,
    expires_at: Option<String>,
    cycle: Vec<String>,
    current: Option<String>,
    requested: Option<String>,
    symbol_path: Option<String>,
    candidates: Vec<String>,
    status: Option<String>,
    session_id: Option<String>,
    form_errors: Vec<String>,
    field_errors: serde_json::Map<String, Value>,
    reason: Option<String>,
    detail: Option<String>,
}

impl Refusal {
    /// Reads `error` (its code and message name the kind, its `data` the fields).
    pub fn of(error: &ProtocolError) -> Self {
        let data: Data = error
            .data
            .clone()
            .and_then(|data| serde_json::from_value(data).ok())
            .unwrap_or_default();
        match error.error_code() {
            Some(ErrorCode::LockConflict) => Self::LockConflict {
                held_by: data.held_by,
                expires_at: data.expires_at,
                cycle: data.cycle,
            },
            Some(ErrorCode::LockNotHeld) => Self::LockNotHeld {
                held_by: data.held_by,
            },
            Some(ErrorCode::LockNotFound) => Self::LockNotFound,
            Some(ErrorCode::IntentNotFound) => Self::IntentNotFound,
            Some(ErrorCode::IntentNotOwned) => Self::IntentNotOwned,
            Some(ErrorCode::InvalidTransition) => Self::InvalidTransition {
                current: data.current,
                requested: data.requested,
            },
            Some(ErrorCode::SymbolNotFound) => Self::SymbolNotFound {
                symbol_path: data.symbol_path,
                candidates: data.candidates,
            },
            Some(ErrorCode::ContractNotFound) => Self::ContractNotFound,
            Some(ErrorCode::ContractAlreadyResolved) => Self::ContractAlreadyResolved {
                status: data.status,
            },
            Some(ErrorCode::SelfAcceptNotAllowed) => Self::SelfAcceptNotAllowed,
            Some(ErrorCode::SessionNotFound) => Self::SessionNotFound {
                session_id: data.session_id,
            },
            Some(ErrorCode::InvalidRequest) => {
                let mut problems = data.form_errors;
                for (name, messages) in &data.field_errors {
                    for message in messages.as_array().into_iter().flatten() {
                        problems.push(format!("{name}: {}", message.as_str().unwrap_or_default()));
                    }
                }
                problems.extend(data.reason);
                problems.extend(data.detail);
                Self::InvalidRequest { problems }
            }
            Some(ErrorCode::MethodNotFound) => Self::MethodNotFound,
            _ => Self::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::*;

    #[test]
    fn data_is_read_into_the_fields_of_each_kind() {
        let error = ProtocolError::new(
            ErrorCode::LockConflict,
            Some(json!({"heldBy": "bob", "expiresAt": "x", "cycle": ["a", "bob"]})),
        );
        assert_eq!(
            Refusal::of(&error),
            Refusal::LockConflict {
                held_by: Some("bob".into()),
                expires_at: Some("x".into()),
                cycle: vec!["a".into(), "bob".into()],
            }
        );
        let error = ProtocolError::new(
            ErrorCode::InvalidRequest,
            Some(json!({"formErrors": ["f"], "fieldErrors": {"ttlMs": ["Expected integer"]}})),
        );
        assert_eq!(
            Refusal::of(&error),
            Refusal::InvalidRequest {
                problems: vec!["f".into(), "ttlMs: Expected integer".into()]
            }
        );
        // Data of the wrong shape reads as no data, never as a failure.
        let error = ProtocolError::new(ErrorCode::LockNotHeld, Some(json!({"heldBy": 7})));
        assert_eq!(Refusal::of(&error), Refusal::LockNotHeld { held_by: None });
        assert_eq!(
            Refusal::of(&ProtocolError::internal("boom")),
            Refusal::Other
        );
    }

    #[test]
    fn only_a_broken_or_late_answer_may_have_been_delivered() {
        assert!(!Unavailable::StartFailed { reason: "x".into() }.delivered());
        assert!(Unavailable::Lost { detail: "x".into() }.delivered());
        assert!(Unavailable::OutOfTime {
            budget: Duration::from_secs(1)
        }
        .delivered());
    }
}
