//! Maps domain errors to protocol errors, in exactly one place.

use serde_json::json;

use crate::coord::{iso_millis, CoordError};
use crate::protocol::{ErrorCode, ParamErrors, ProtocolError};
use crate::store::StoreError;

/// The protocol error for a domain error.
pub fn to_protocol(error: CoordError) -> ProtocolError {
    match error {
        CoordError::LockConflict {
            held_by,
            expires_at_ms,
            cycle,
        } => {
            let mut data = json!({ "heldBy": held_by, "expiresAt": iso_millis(expires_at_ms) });
            if let Some(cycle) = cycle {
                data["cycle"] = json!(cycle);
            }
            ProtocolError::new(ErrorCode::LockConflict, Some(data))
        }
        CoordError::SessionNotFound { session_id } => ProtocolError::new(
            ErrorCode::SessionNotFound,
            Some(json!({ "sessionId": session_id })),
        ),
        CoordError::LockNotFound => ProtocolError::new(ErrorCode::LockNotFound, None),
        CoordError::LockNotHeld { held_by } => {
            ProtocolError::new(ErrorCode::LockNotHeld, Some(json!({ "heldBy": held_by })))
        }
        CoordError::IntentNotFound => ProtocolError::new(ErrorCode::IntentNotFound, None),
        CoordError::IntentNotOwned => ProtocolError::new(ErrorCode::IntentNotOwned, None),
        CoordError::InvalidTransition { current, requested } => ProtocolError::new(
            ErrorCode::InvalidTransition,
            Some(json!({ "current": current.as_str(), "requested": requested.as_str() })),
        ),
        CoordError::SymbolNotFound {
            symbol_path,
            candidates,
        } => {
            let data = if candidates.is_empty() {
                json!({ "symbolPath": symbol_path })
            } else {
                json!({ "symbolPath": symbol_path, "candidates": candidates })
            };
            ProtocolError::new(ErrorCode::SymbolNotFound, Some(data))
        }
        CoordError::ContractNotFound => ProtocolError::new(ErrorCode::ContractNotFound, None),
        CoordError::ContractAlreadyResolved { status } => ProtocolError::new(
            ErrorCode::ContractAlreadyResolved,
            Some(json!({ "status": status.as_str() })),
        ),
        CoordError::SelfAcceptNotAllowed => {
            ProtocolError::new(ErrorCode::SelfAcceptNotAllowed, None)
        }
        CoordError::InvalidInput { field, message } => {
            ProtocolError::invalid_params(ParamErrors::field(field, message))
        }
        CoordError::Storage(error) => storage_failure(&error),
        CoordError::Abandoned => ProtocolError::internal("the client has gone"),
    }
}

/// `-32603` for a store that failed: nothing was changed. `data.reason` names the store and
/// what went wrong (never its credentials: store errors carry the URL without its password).
fn storage_failure(error: &StoreError) -> ProtocolError {
    let reason = match error {
        StoreError::Unavailable { .. } => {
            tracing::warn!(%error, "the store is unavailable; the request was not carried out");
            format!("store unavailable: {error}")
        }
        _ => {
            tracing::error!(%error, "storage failure; the request was rolled back");
            format!("store failure: {error}")
        }
    };
    let mut protocol = ProtocolError::internal(format!("storage failure: {error}"));
    if let Some(data) = protocol.data.as_mut() {
        data["reason"] = serde_json::Value::String(reason);
    }
    protocol
}

/// The protocol error for a blocking task that did not complete (it panicked or was cancelled).
pub fn task_failed(error: tokio::task::JoinError) -> ProtocolError {
    tracing::error!(%error, "a request's worker task failed");
    ProtocolError::internal("the request's worker task failed")
}
