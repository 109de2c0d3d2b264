//! Gemini CLI's BeforeTool hook (`wit hook pre-edit --agent gemini`, wired in
//! `.gemini/settings.json` for `replace|write_file`).
//!
//! Payload: `{session_id, cwd, hook_event_name: "BeforeTool", tool_name, tool_input}` with
//! `replace {file_path, old_string, new_string, expected_replacements?}` (more than one
//! expected replacement replaces every occurrence) and `write_file {file_path, content}`.
//!
//! Answer (stdout, exit 0): `{"decision": "deny", "reason": …}` to refuse (the reason goes to
//! the agent as the tool's error); `{}` when the gate has nothing against the edit. BeforeTool
//! has no "ask": an ask is a deny whose reason asks the agent to get the person's go-ahead. A
//! warning goes out as `systemMessage` (shown to the user) and as
//! `hookSpecificOutput.additionalContext` (for the agent, where Gemini reads it).

use serde_json::{json, Value};

use super::claude::string_field;
use super::pre_edit::{Change, Decision, EditRequest, FileChange, PayloadError, TextEdit, Verdict};

fn text<'a>(input: &'a Value, key: &str, tool: &str) -> Result<&'a str, PayloadError> {
    input
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| PayloadError::Shape(format!("{tool}: tool_input.{key} is not a string")))
}

/// Reads a Gemini CLI BeforeTool payload; `Ok(None)` when the tool is not a file edit.
pub fn parse(payload: &Value) -> Result<Option<EditRequest>, PayloadError> {
    let tool = payload
        .get("tool_name")
        .and_then(Value::as_str)
        .ok_or_else(|| PayloadError::Shape("no tool_name".into()))?;
    let input = payload.get("tool_input").unwrap_or(&Value::Null);
    let change = match tool {
        "replace" => Change::Edits(vec![TextEdit {
            old_text: text(input, "old_string", tool)?.to_string(),
            new_text: text(input, "new_string", tool)?.to_string(),
            replace_all: input
                .get("expected_replacements")
                .and_then(Value::as_u64)
                .is_some_and(|n| n > 1),
        }]),
        "write_file" => Change::Content(text(input, "content", tool)?.to_string()),
        _ => return Ok(None),
    };
    Ok(Some(EditRequest {
        session: string_field(payload, "session_id"),
        cwd: string_field(payload, "cwd").map(Into::into),
        files: vec![FileChange {
            path: text(input, "file_path", tool)?.to_string(),
            change,
        }],
    }))
}

/// The answer on stdout.
pub fn answer(verdict: &Verdict) -> Option<Value> {
    Some(match verdict.decision {
        Decision::Deny => json!({
            "decision": "deny",
            "reason": verdict.reason.as_deref().unwrap_or_default(),
        }),
        Decision::Ask => json!({
            "decision": "deny",
            "reason": format!(
                "{} (wit asks for a person's go-ahead: ask the user before making this edit)",
                verdict.reason.as_deref().unwrap_or_default()
            ),
        }),
        Decision::Allow => match &verdict.context {
            Some(context) => json!({
                "systemMessage": context,
                "hookSpecificOutput": {
                    "hookEventName": "BeforeTool",
                    "additionalContext": context,
                },
            }),
            None => json!({}),
        },
    })
}
