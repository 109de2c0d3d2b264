//! Tool results: a daemon's result or error as `structuredContent` plus a one-line text that
//! tells the agent what happened and, for an error, what to do next.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Map, Value};

use super::tools::ToolSpec;
use crate::protocol::{ErrorCode, ParamErrors, ProtocolError, INTERNAL_ERROR_CODE};

/// The `message` of the error answered when the daemon cannot be reached.
pub const UNAVAILABLE: &str = "DAEMON_UNAVAILABLE";

/// A successful call: the result (wrapped as `{"result": ..}` when the tool says so) as
/// structured content, and as compact JSON on one line of text (what clients that ignore
/// structured content show the model).
pub fn success(spec: &ToolSpec, result: Value) -> CallToolResult {
    let text = result.to_string();
    let structured = if spec.wraps_result {
        json!({ "result": result })
    } else {
        result
    };
    let mut answer = CallToolResult::success(vec![ContentBlock::text(text)]);
    answer.structured_content = Some(structured);
    answer
}

/// A protocol error: `{code, message, data}` as structured content and advice as text.
/// `params` are the params sent, to name the symbol or intent in the advice.
pub fn protocol_error(spec: &ToolSpec, error: &ProtocolError, params: &Value) -> CallToolResult {
    failure(
        error_object(error.code, &error.message, error.data.clone()),
        advice(spec, error, params),
    )
}

/// Arguments the server itself rejects (its own `mine`): shaped like the daemon's
/// INVALID_REQUEST.
pub fn invalid_arguments(spec: &ToolSpec, errors: ParamErrors) -> CallToolResult {
    let error = ProtocolError::invalid_params(errors);
    protocol_error(spec, &error, &Value::Null)
}

/// No daemon could be reached, or it vanished mid-call.
pub fn unavailable(spec: &ToolSpec, detail: &str, delivered: bool) -> CallToolResult {
    let next = if delivered {
        format!(
            "The call may or may not have taken effect: check (e.g. with lock_query or \
             intent_query), then call {} again; the next call restarts the daemon.",
            spec.name
        )
    } else {
        format!(
            "Nothing was done. Call {} again in a moment; if this persists, run `wit daemon \
             status` in the repository.",
            spec.name
        )
    };
    failure(
        error_object(
            INTERNAL_ERROR_CODE,
            UNAVAILABLE,
            Some(json!({ "detail": detail, "delivered": delivered })),
        ),
        format!("{UNAVAILABLE}: {detail}. {next}"),
    )
}

fn error_object(code: i32, message: &str, data: Option<Value>) -> Value {
    json!({ "code": code, "message": message, "data": data })
}

fn failure(structured: Value, text: String) -> CallToolResult {
    let mut answer = CallToolResult::error(vec![ContentBlock::text(text)]);
    answer.structured_content = Some(structured);
    answer
}

/// A string field of an object, or `fallback`.
fn field<'a>(value: Option<&'a Value>, key: &str, fallback: &'a str) -> &'a str {
    value
        .and_then(|v| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or(fallback)
}

/// What happened and what to do next, in one line.
fn advice(spec: &ToolSpec, error: &ProtocolError, params: &Value) -> String {
    let data = error.data.as_ref();
    let name = &error.message;
    let symbol = field(Some(params), "symbolPath", "the symbol");
    match error.error_code() {
        Some(ErrorCode::LockConflict) => {
            let holder = field(data, "heldBy", "another session");
            let until = field(data, "expiresAt", "its expiry");
            match data.and_then(|d| d.get("cycle")).and_then(Value::as_array) {
                Some(cycle) => {
                    let ids: Vec<&str> = cycle.iter().filter_map(Value::as_str).collect();
                    format!(
                        "{name}: {symbol} is locked by {holder} until {until}, and waiting for it \
                         would close a cycle of waiting sessions ({}). Release a lock you hold \
                         or work on something else.",
                        ids.join(" -> ")
                    )
                }
                None => format!(
                    "{name}: {symbol} is locked by {holder} until {until}. Do not edit it: work \
                     on something else, or call {} again with waitMs (up to 600000) to wait \
                     for it.",
                    spec.name
                ),
            }
        }
        Some(ErrorCode::InvalidRequest) => {
            format!(
                "{name}: the arguments do not fit {}'s input schema: {}. Fix them and call it \
                 again.",
                spec.name,
                param_problems(data)
            )
        }
        Some(ErrorCode::MethodNotFound) => format!(
            "{name}: the running wit daemon does not serve `{}`: it is older than this wit. \
             Restart it (`wit daemon stop`; the next call starts the new one).",
            spec.method
        ),
        Some(ErrorCode::LockNotFound) => format!(
            "{name}: there is no live lock on {symbol} (it may have expired): nothing to release."
        ),
        Some(ErrorCode::LockNotHeld) => format!(
            "{name}: {symbol} is locked by {}, not by this session: only its holder can \
             release it.",
            field(data, "heldBy", "another session")
        ),
        Some(ErrorCode::IntentNotFound) => format!(
            "{name}: no intent {}: intent_query lists the open ones.",
            field(Some(params), "intentId", "with that id")
        ),
        Some(ErrorCode::IntentNotOwned) => format!(
            "{name}: intent {} belongs to another session: only its owner can update it.",
            field(Some(params), "intentId", "")
        ),
        Some(ErrorCode::InvalidTransition) => format!(
            "{name}: the intent is {} and cannot become {} (declared -> active|resolved|\
             abandoned, active -> resolved|abandoned).",
            field(data, "current", "in another status"),
            field(data, "requested", "that")
        ),
        Some(ErrorCode::SymbolNotFound) => {
            let candidates: Vec<&str> = data
                .and_then(|d| d.get("candidates"))
                .and_then(Value::as_array)
                .map(|c| c.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let wanted = field(data, "symbolPath", symbol);
            if candidates.is_empty() {
                format!("{name}: {wanted} names no symbol the daemon can read (file:name).")
            } else {
                format!(
                    "{name}: {wanted} is ambiguous: use one of {}.",
                    candidates.join(", ")
                )
            }
        }
        Some(ErrorCode::ContractNotFound) => format!(
            "{name}: no contract {}: contract_query lists them.",
            field(Some(params), "contractId", "with that id")
        ),
        Some(ErrorCode::ContractAlreadyResolved) => format!(
            "{name}: the contract is already {}.",
            field(data, "status", "resolved")
        ),
        Some(ErrorCode::SelfAcceptNotAllowed) => format!(
            "{name}: this session proposed the contract: another agent must accept or reject it."
        ),
        Some(ErrorCode::SessionNotFound) => format!(
            "{name}: the daemon knows no session {}: call register first.",
            field(data, "sessionId", "of that id")
        ),
        _ => match data {
            Some(data) => format!("{name} ({}): {data}", error.code),
            None => format!("{name} ({})", error.code),
        },
    }
}

/// `ttlMs: Expected integer; files: Required` from INVALID_REQUEST's data.
fn param_problems(data: Option<&Value>) -> String {
    let mut problems = Vec::new();
    let empty = Map::new();
    for form in data
        .and_then(|d| d.get("formErrors"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        problems.push(form.to_string());
    }
    let fields = data
        .and_then(|d| d.get("fieldErrors"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (field, messages) in fields {
        let messages: Vec<&str> = messages
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        problems.push(format!("{field}: {}", messages.join(", ")));
    }
    if problems.is_empty() {
        "the daemon named no detail".to_string()
    } else {
        problems.join("; ")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::mcp::tools::ToolTable;

    fn text(result: &CallToolResult) -> String {
        result.content[0].as_text().unwrap().text.clone()
    }

    #[test]
    fn wraps_non_object_results() {
        let table = ToolTable::load().unwrap();
        let ping = success(table.get("ping").unwrap(), json!("pong"));
        assert_eq!(ping.structured_content, Some(json!({"result": "pong"})));
        assert_eq!(text(&ping), "\"pong\"");
        assert_eq!(ping.is_error, Some(false));
    }

    #[test]
    fn a_lock_conflict_says_who_until_when_and_how_to_wait() {
        let table = ToolTable::load().unwrap();
        let spec = table.get("lock_acquire").unwrap();
        let error = ProtocolError::new(
            ErrorCode::LockConflict,
            Some(json!({"heldBy": "bob", "expiresAt": "2026-01-15T10:30:00.000Z"})),
        );
        let result = protocol_error(spec, &error, &json!({"symbolPath": "a.ts:f"}));
        assert_eq!(result.is_error, Some(true));
        let line = text(&result);
        assert!(
            line.contains("a.ts:f is locked by bob until 2026-01-15T10:30:00.000Z"),
            "{line}"
        );
        assert!(line.contains("waitMs"), "{line}");
        assert!(!line.contains('\n'));
        let structured = result.structured_content.unwrap();
        assert_eq!(structured["code"], -32000);
        assert_eq!(structured["message"], "LOCK_CONFLICT");
        assert_eq!(structured["data"]["heldBy"], "bob");
    }

    #[test]
    fn invalid_arguments_name_every_field() {
        let table = ToolTable::load().unwrap();
        let spec = table.get("intent_declare").unwrap();
        let mut errors = ParamErrors::default();
        errors
            .field_errors
            .insert("files".into(), vec!["Required".into()]);
        errors
            .field_errors
            .insert("description".into(), vec!["Expected string".into()]);
        let result = invalid_arguments(spec, errors);
        let line = text(&result);
        assert!(line.contains("files: Required"), "{line}");
        assert!(line.contains("description: Expected string"), "{line}");
        assert_eq!(
            result.structured_content.unwrap()["data"]["fieldErrors"]["files"][0],
            "Required"
        );
    }
}
