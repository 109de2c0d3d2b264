//! OpenCode's edit gate: wit's plugin (`.opencode/plugins/wit.js`, written by `wit init
//! --agent opencode`) runs `wit hook pre-edit --agent opencode` from its
//! `tool.execute.before` hook.
//!
//! OpenCode calls `tool.execute.before` with `(input: {tool, sessionID, callID}, output:
//! {args})`; the plugin passes on `{hook_event_name: "tool.execute.before", session_id:
//! sessionID, cwd: the project directory, tool_name: tool, tool_input: args}` (the
//! plugin's first version sent `tool` and `args`, still read), so that its `bash` tool reaches the
//! shell gate like any harness's shell tool. After each call `tool.execute.after` runs `wit
//! hook post-tool --agent opencode` and appends its news to the tool's output. The file tools, as OpenCode's own schemas name their arguments: `edit {filePath,
//! oldString, newString, replaceAll?}`, `write {filePath, content}`, `multiedit {filePath,
//! edits: [{oldString, newString, replaceAll?}]}` and `apply_patch {patchText}` (Codex's patch
//! format); every other tool is not an edit.
//!
//! Answer (stdout, exit 0): `{"decision": "deny"|"ask", "reason": …}` (the plugin throws
//! the reason, which OpenCode gives the model as the tool's error: a plugin has no way to ask
//! the person, so an ask's reason asks the agent to), `{"context": …}` for a warning (the
//! plugin appends it to the tool's output in `tool.execute.after`), nothing otherwise.

use serde_json::{json, Value};

use super::claude::string_field;
use super::codex::{parse_patch, patch_changes};
use super::pre_edit::{Change, Decision, EditRequest, FileChange, PayloadError, TextEdit, Verdict};

/// wit's OpenCode plugin, as `wit init --agent opencode` writes it (`{{WIT}}` is replaced by
/// the wit command, a JSON string).
pub const PLUGIN: &str = include_str!("opencode_plugin.js");

fn required<'a>(args: &'a Value, key: &str, tool: &str) -> Result<&'a str, PayloadError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| PayloadError::Shape(format!("{tool}: args.{key} is not a string")))
}

fn edit_of(item: &Value, tool: &str) -> Result<TextEdit, PayloadError> {
    Ok(TextEdit {
        old_text: required(item, "oldString", tool)?.to_string(),
        new_text: required(item, "newString", tool)?.to_string(),
        replace_all: item.get("replaceAll").and_then(Value::as_bool) == Some(true),
    })
}

/// Reads the plugin's payload; `Ok(None)` when the tool is not a file edit.
pub fn parse(payload: &Value) -> Result<Option<EditRequest>, PayloadError> {
    let tool = ["tool_name", "tool"]
        .iter()
        .find_map(|key| payload.get(*key).and_then(Value::as_str))
        .ok_or_else(|| PayloadError::Shape("no tool_name".into()))?;
    let args = payload
        .get("tool_input")
        .or_else(|| payload.get("args"))
        .unwrap_or(&Value::Null);
    let files = match tool {
        "edit" => vec![FileChange {
            path: required(args, "filePath", tool)?.to_string(),
            change: Change::Edits(vec![edit_of(args, tool)?]),
        }],
        "multiedit" => {
            let edits = args
                .get("edits")
                .and_then(Value::as_array)
                .ok_or_else(|| PayloadError::Shape("multiedit: args.edits is not a list".into()))?
                .iter()
                .map(|item| edit_of(item, tool))
                .collect::<Result<Vec<_>, _>>()?;
            vec![FileChange {
                path: required(args, "filePath", tool)?.to_string(),
                change: Change::Edits(edits),
            }]
        }
        "write" => vec![FileChange {
            path: required(args, "filePath", tool)?.to_string(),
            change: Change::Content(required(args, "content", tool)?.to_string()),
        }],
        "apply_patch" | "patch" => {
            let text = required(args, "patchText", tool)?;
            patch_changes(parse_patch(text).map_err(|error| {
                PayloadError::Shape(format!("the {tool} patch cannot be read: {error}"))
            })?)
        }
        _ => return Ok(None),
    };
    Ok(Some(EditRequest {
        session: string_field(payload, "session_id"),
        cwd: string_field(payload, "cwd").map(Into::into),
        files,
    }))
}

/// The answer on stdout; `None` when the gate has nothing to say.
pub fn answer(verdict: &Verdict) -> Option<Value> {
    match verdict.decision {
        Decision::Deny => Some(json!({"decision": "deny", "reason": verdict.refusal()})),
        Decision::Ask => Some(json!({"decision": "ask", "reason": verdict.refusal()})),
        Decision::Allow => verdict
            .context
            .as_ref()
            .map(|context| json!({"context": context})),
    }
}
