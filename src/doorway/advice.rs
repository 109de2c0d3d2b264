//! What to tell about a failed call, and what to do next: for a person at the command line
//! ([`for_person`]) and for an agent calling an MCP tool ([`for_agent`],
//! [`unavailable_for_agent`]). Both read the typed [`Refusal`]; the wording differs only where
//! the two act differently (a person adds `--wait 5m`, an agent passes `waitMs`).

use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::Value;

use super::clock::until_text;
use super::failure::{Refusal, Unavailable};
use crate::protocol::ProtocolError;

/// The human text of a protocol error for the CLI: `wit: MESSAGE: what it means`, then every
/// field of `data` on its own line (INVALID_REQUEST lists its problems instead).
pub fn for_person(error: &ProtocolError, now_ms: i64) -> String {
    let mut text = format!("wit: {}", error.message);
    let detail = match Refusal::of(error) {
        Refusal::LockConflict {
            held_by: Some(held_by),
            expires_at,
            cycle,
        } => {
            let until = expires_at
                .as_deref()
                .map(|at| until_text(at, now_ms))
                .unwrap_or_default();
            let next = if cycle.is_empty() {
                "; add --wait 5m to wait for it (first come, first served)".to_string()
            } else {
                format!(
                    "; waiting would deadlock: {} -> {}",
                    cycle.join(" -> "),
                    cycle.first().map(String::as_str).unwrap_or_default()
                )
            };
            Some(format!("locked by {held_by}{until}{next}"))
        }
        Refusal::LockNotHeld {
            held_by: Some(held_by),
        } => Some(format!("the lock is held by {held_by}")),
        Refusal::LockNotFound => Some("no live lock on that symbol".to_string()),
        Refusal::InvalidTransition {
            current: Some(current),
            requested: Some(requested),
        } => Some(format!(
            "the intent is {current}; it cannot become {requested}"
        )),
        Refusal::SymbolNotFound {
            symbol_path: Some(path),
            candidates,
        } => Some(if candidates.is_empty() {
            format!("no symbol {path}")
        } else {
            format!("{path} is ambiguous; candidates: {}", candidates.join(", "))
        }),
        Refusal::ContractAlreadyResolved {
            status: Some(status),
        } => Some(format!("the contract is already {status}")),
        Refusal::SelfAcceptNotAllowed => {
            Some("a contract must be accepted or rejected by another session".to_string())
        }
        Refusal::IntentNotOwned => Some("the intent belongs to another session".to_string()),
        Refusal::SessionNotFound {
            session_id: Some(session),
        } => Some(format!(
            "the daemon has never seen session {session} (register it first)"
        )),
        Refusal::InvalidRequest { problems } => (!problems.is_empty()).then(|| problems.join("; ")),
        _ => None,
    };
    if let Some(detail) = detail {
        let _ = write!(text, ": {detail}");
    }
    // Everything in `data` stays visible, whether or not the summary used it.
    let listed = !matches!(Refusal::of(error), Refusal::InvalidRequest { .. });
    match &error.data {
        Some(Value::Object(data)) if listed => {
            for (key, value) in data {
                let value = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let _ = write!(text, "\n  {key}: {value}");
            }
        }
        Some(Value::Object(_)) | None => {}
        Some(other) => {
            let _ = write!(text, "\n  data: {other}");
        }
    }
    text
}

/// The ids a tool call named, for the advice.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Named {
    symbol_path: Option<String>,
    intent_id: Option<String>,
    contract_id: Option<String>,
}

/// What happened and what to do next, in one line, for an agent that called MCP tool `tool`
/// (protocol method `method`) with `params`.
pub fn for_agent(tool: &str, method: &str, error: &ProtocolError, params: &Value) -> String {
    let name = &error.message;
    let named: Named = serde_json::from_value(params.clone()).unwrap_or_default();
    let symbol = named.symbol_path.as_deref().unwrap_or("the symbol");
    let or = |value: &Option<String>, fallback: &str| -> String {
        value.clone().unwrap_or_else(|| fallback.to_string())
    };
    match Refusal::of(error) {
        Refusal::LockConflict {
            held_by,
            expires_at,
            cycle,
        } => {
            let holder = or(&held_by, "another session");
            let until = or(&expires_at, "its expiry");
            if cycle.is_empty() {
                format!(
                    "{name}: {symbol} is locked by {holder} until {until}. Do not edit it: work \
                     on something else, or call {tool} again with waitMs (up to 600000) to wait \
                     for it."
                )
            } else {
                format!(
                    "{name}: {symbol} is locked by {holder} until {until}, and waiting for it \
                     would close a cycle of waiting sessions ({}). Release a lock you hold \
                     or work on something else.",
                    cycle.join(" -> ")
                )
            }
        }
        Refusal::InvalidRequest { problems } => format!(
            "{name}: the arguments do not fit {tool}'s input schema: {}. Fix them and call it \
             again.",
            if problems.is_empty() {
                "the daemon named no detail".to_string()
            } else {
                problems.join("; ")
            }
        ),
        Refusal::MethodNotFound => format!(
            "{name}: the running wit daemon does not serve `{method}`: it is older than this \
             wit. Restart it (`wit daemon stop`; the next call starts the new one)."
        ),
        Refusal::LockNotFound => format!(
            "{name}: there is no live lock on {symbol} (it may have expired): nothing to release."
        ),
        Refusal::LockNotHeld { held_by } => format!(
            "{name}: {symbol} is locked by {}, not by this session: only its holder can \
             release it.",
            or(&held_by, "another session")
        ),
        Refusal::IntentNotFound => format!(
            "{name}: no intent {}: intent_query lists the open ones.",
            or(&named.intent_id, "with that id")
        ),
        Refusal::IntentNotOwned => format!(
            "{name}: intent {} belongs to another session: only its owner can update it.",
            or(&named.intent_id, "")
        ),
        Refusal::InvalidTransition { current, requested } => format!(
            "{name}: the intent is {} and cannot become {} (declared -> active|resolved|\
             abandoned, active -> resolved|abandoned).",
            or(&current, "in another status"),
            or(&requested, "that")
        ),
        Refusal::SymbolNotFound {
            symbol_path,
            candidates,
        } => {
            let wanted = symbol_path.as_deref().unwrap_or(symbol);
            if candidates.is_empty() {
                format!("{name}: {wanted} names no symbol the daemon can read (file:name).")
            } else {
                format!(
                    "{name}: {wanted} is ambiguous: use one of {}.",
                    candidates.join(", ")
                )
            }
        }
        Refusal::ContractNotFound => format!(
            "{name}: no contract {}: contract_query lists them.",
            or(&named.contract_id, "with that id")
        ),
        Refusal::ContractAlreadyResolved { status } => format!(
            "{name}: the contract is already {}.",
            or(&status, "resolved")
        ),
        Refusal::SelfAcceptNotAllowed => format!(
            "{name}: this session proposed the contract: another agent must accept or reject it."
        ),
        Refusal::SessionNotFound { session_id } => format!(
            "{name}: the daemon knows no session {}: call register first.",
            or(&session_id, "of that id")
        ),
        Refusal::Other => match &error.data {
            Some(data) => format!("{name} ({}): {data}", error.code),
            None => format!("{name} ({})", error.code),
        },
    }
}

/// What an agent should do when tool `tool` found no daemon, in one line (after the reason).
pub fn unavailable_for_agent(tool: &str, why: &Unavailable) -> String {
    if why.delivered() {
        format!(
            "The call may or may not have taken effect: check (e.g. with lock_query or \
             intent_query), then call {tool} again; the next call restarts the daemon."
        )
    } else {
        format!(
            "Nothing was done. Call {tool} again in a moment; if this persists, run `wit daemon \
             status` in the repository."
        )
    }
}
