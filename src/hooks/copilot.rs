//! GitHub Copilot CLI's preToolUse hook (`wit hook pre-edit --agent copilot`, wired in
//! `.github/hooks/wit.json`: `{"version": 1, "hooks": {"preToolUse": [{"type": "command",
//! "bash": …, "timeoutSec": 5}]}}`).
//!
//! Payload, as the CLI's own code builds it: `{sessionId, timestamp, cwd, toolName,
//! toolArgs}`, where `toolArgs` is the tool call's arguments as the model sent them (a JSON
//! string for function tools, the raw text for `apply_patch`). The file tools: `edit {path,
//! old_str, new_str}`, `create {path, file_text}`, `str_replace_editor {command:
//! str_replace|create|insert, path, old_str, new_str, file_text, insert_line}` and
//! `apply_patch` (Codex's patch format); every other tool is not an edit.
//!
//! Answer (stdout, exit 0): `{"permissionDecision": "deny", "permissionDecisionReason": …}`
//! refuses (the CLI shows the model "Denied by preToolUse hook: <reason>"); nothing when the
//! gate has nothing against the edit. The CLI reads no other decision and no context from
//! preToolUse: an ask is a deny whose reason asks the agent to get the person's go-ahead, and
//! a warning of an allowed edit cannot reach the agent (it is dropped).

use serde_json::{json, Value};

use super::claude::string_field;
use super::codex::{parse_patch, patch_changes};
use super::pre_edit::{Change, Decision, EditRequest, FileChange, PayloadError, TextEdit, Verdict};

fn required<'a>(args: &'a Value, key: &str, tool: &str) -> Result<&'a str, PayloadError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| PayloadError::Shape(format!("{tool}: toolArgs.{key} is not a string")))
}

/// The file after inserting `text` after line `after` (0: at the top), as the
/// `str_replace_editor insert` command does.
fn inserted(current: &str, after: usize, text: &str) -> String {
    let mut lines: Vec<&str> = current.split_inclusive('\n').collect();
    let at = after.min(lines.len());
    let mut insert = text.to_string();
    if !insert.ends_with('\n') {
        insert.push('\n');
    }
    if at > 0 && !lines[at - 1].ends_with('\n') {
        insert.insert(0, '\n');
    }
    lines.insert(at, &insert);
    lines.concat()
}

/// The changes of one Copilot CLI tool call; `Ok(None)` for a tool that is not a file edit.
fn tool_changes(
    tool: &str,
    args: &Value,
    cwd: Option<&str>,
) -> Result<Option<Vec<FileChange>>, PayloadError> {
    let edit = |args: &Value| -> Result<Change, PayloadError> {
        Ok(Change::Edits(vec![TextEdit {
            old_text: required(args, "old_str", tool)?.to_string(),
            new_text: args
                .get("new_str")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            replace_all: false,
        }]))
    };
    let create = |args: &Value| -> Result<Change, PayloadError> {
        Ok(Change::Content(
            required(args, "file_text", tool)?.to_string(),
        ))
    };
    let change = match tool {
        "edit" => edit(args)?,
        "create" => create(args)?,
        "str_replace_editor" => match args.get("command").and_then(Value::as_str) {
            Some("str_replace") => edit(args)?,
            Some("create") => create(args)?,
            Some("insert") => {
                let path = required(args, "path", tool)?;
                let after = args
                    .get("insert_line")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| PayloadError::Shape("insert: no insert_line".into()))?;
                let full = std::path::Path::new(cwd.unwrap_or(".")).join(path);
                let current = std::fs::read_to_string(full).unwrap_or_default();
                let text = required(args, "new_str", tool)?;
                Change::Content(inserted(
                    &current,
                    usize::try_from(after).unwrap_or(usize::MAX),
                    text,
                ))
            }
            _ => return Ok(None),
        },
        "apply_patch" => {
            let text = args
                .as_str()
                .or_else(|| args.get("input").and_then(Value::as_str))
                .or_else(|| args.get("patch").and_then(Value::as_str))
                .ok_or_else(|| PayloadError::Shape("apply_patch: no patch text".into()))?;
            let ops = parse_patch(text).map_err(|error| {
                PayloadError::Shape(format!("the apply_patch patch cannot be read: {error}"))
            })?;
            return Ok(Some(patch_changes(ops)));
        }
        _ => return Ok(None),
    };
    let path = required(args, "path", tool)?.to_string();
    Ok(Some(vec![FileChange { path, change }]))
}

/// Reads a Copilot CLI preToolUse payload; `Ok(None)` when the tool is not a file edit.
pub fn parse(payload: &Value) -> Result<Option<EditRequest>, PayloadError> {
    let tool = payload
        .get("toolName")
        .and_then(Value::as_str)
        .ok_or_else(|| PayloadError::Shape("no toolName".into()))?;
    let raw = payload.get("toolArgs").unwrap_or(&Value::Null);
    // Function tools' arguments arrive as the JSON text the model wrote; a custom tool's
    // (apply_patch) as its raw input.
    let args = match raw {
        Value::String(text) => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| raw.clone()),
        other => other.clone(),
    };
    let cwd = string_field(payload, "cwd");
    let Some(files) = tool_changes(tool, &args, cwd.as_deref())? else {
        return Ok(None);
    };
    Ok(Some(EditRequest {
        session: string_field(payload, "sessionId"),
        cwd: cwd.map(Into::into),
        files,
    }))
}

/// The answer on stdout; `None` when the gate lets the edit through.
pub fn answer(verdict: &Verdict) -> Option<Value> {
    match verdict.decision {
        Decision::Allow => None,
        Decision::Deny | Decision::Ask => Some(json!({
            "permissionDecision": "deny",
            "permissionDecisionReason": verdict.refusal(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_goes_after_the_given_line() {
        assert_eq!(inserted("a\nb\n", 1, "x"), "a\nx\nb\n");
        assert_eq!(inserted("a\nb\n", 0, "x\n"), "x\na\nb\n");
        assert_eq!(inserted("a", 5, "x"), "a\nx\n");
    }
}
