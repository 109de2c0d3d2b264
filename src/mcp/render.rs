//! Tool results: a daemon's result as `structuredContent` plus its one-line text; an error as
//! a one-line text that tells the agent what happened and what to do next (the words come from
//! [`crate::doorway::advice`], shared with the CLI) and its `{code, message, data}` as a second
//! text, never as `structuredContent`: output schemas list their `required` fields, and some
//! MCP clients validate an error's structured content against them too.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

use super::tools::ToolSpec;
use crate::doorway::{advice, Unavailable};
use crate::protocol::{ParamErrors, ProtocolError, INTERNAL_ERROR_CODE};

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

/// A protocol error: advice as text, then `{code, message, data}` as JSON text.
/// `params` are the params sent, to name the symbol or intent in the advice.
pub fn protocol_error(spec: &ToolSpec, error: &ProtocolError, params: &Value) -> CallToolResult {
    tool_error(&spec.name, &spec.method, error, params)
}

/// A protocol error of tool `tool` (acting as `method`), as [`protocol_error`] renders it.
pub fn tool_error(
    tool: &str,
    method: &str,
    error: &ProtocolError,
    params: &Value,
) -> CallToolResult {
    failure(
        error_object(error.code, &error.message, error.data.clone()),
        advice::for_agent(tool, method, error, params),
    )
}

/// Arguments the server itself rejects (its own `mine`): shaped like the daemon's
/// INVALID_REQUEST.
pub fn invalid_arguments(spec: &ToolSpec, errors: ParamErrors) -> CallToolResult {
    let error = ProtocolError::invalid_params(errors);
    protocol_error(spec, &error, &Value::Null)
}

/// No daemon could be reached for tool `tool`, or it vanished mid-call.
pub fn unavailable(tool: &str, why: &Unavailable) -> CallToolResult {
    let detail = why.to_string();
    failure(
        error_object(
            INTERNAL_ERROR_CODE,
            UNAVAILABLE,
            Some(json!({ "detail": detail, "delivered": why.delivered() })),
        ),
        format!(
            "{UNAVAILABLE}: {detail}. {}",
            advice::unavailable_for_agent(tool, why)
        ),
    )
}

fn error_object(code: i32, message: &str, data: Option<Value>) -> Value {
    json!({ "code": code, "message": message, "data": data })
}

/// A failed call: `text` as its one line, then `error` (`{code, message, data}`) as JSON text.
pub fn failure(error: Value, text: String) -> CallToolResult {
    CallToolResult::error(vec![
        ContentBlock::text(text),
        ContentBlock::text(error.to_string()),
    ])
}

/// The `{code, message, data}` of a failed call rendered by [`failure`].
pub fn error_of(result: &CallToolResult) -> Option<Value> {
    let text = result.content.get(1)?.as_text()?;
    serde_json::from_str(&text.text).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::mcp::tools::ToolTable;
    use crate::protocol::ErrorCode;

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
        assert_eq!(result.structured_content, None);
        let structured = error_of(&result).unwrap();
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
            error_of(&result).unwrap()["data"]["fieldErrors"]["files"][0],
            "Required"
        );
    }
}
