//! Claude Code's PreToolUse and PreSkillShellCommand hooks (`wit hook pre-edit --agent claude`,
//! wired in `.claude/settings.json` and in the plugin's `hooks/hooks.json`: PreToolUse for
//! [`crate::cli::agent_config::CLAUDE_MATCHER`], PreSkillShellCommand for the shell commands
//! a skill's or command's inline `!` runs, which PreToolUse never sees).
//!
//! Payload: `{session_id, cwd, hook_event_name: "PreToolUse", tool_name, tool_input}` with
//! `Edit {file_path, old_string, new_string, replace_all?}` and `Write {file_path, content}`.
//! `MultiEdit {file_path, edits: [{old_string, new_string, replace_all?}]}` (gone in Claude
//! Code 2.1, still read for older releases and for Cursor) too. `NotebookEdit {notebook_path,
//! cell_id?, new_source, edit_mode?}` names its notebook (`.ipynb`, a file wit does not
//! analyse: the gate has no symbols to weigh there and lets it through). `Bash` and
//! `PowerShell` go to the shell gate ([`super::shell`]); so does PreSkillShellCommand's
//! `{hook_event_name: "PreSkillShellCommand", tool_name: "Bash"|"PowerShell", tool_input:
//! {command}, command_name, invoked_by}` (read from Claude Code 2.1.332's hook input schema).
//!
//! Answer (stdout, exit 0): `{"hookSpecificOutput": {"hookEventName": <the payload's event>,
//! "permissionDecision": "deny"|"ask", "permissionDecisionReason": …, "additionalContext": …}}`
//! (PreSkillShellCommand's answer has no `additionalContext`: a warning there is dropped).
//! The gate never answers `allow`: in Claude Code that would also skip the user's own
//! permission prompt, and the gate only ever takes rights away. An edit the gate has nothing
//! against gets no output at all; a warning gets `additionalContext` alone.

use serde_json::{json, Map, Value};

use super::pre_edit::{Change, Decision, EditRequest, FileChange, PayloadError, TextEdit, Verdict};

/// The tool a Claude-shaped hook payload calls (`tool_name`) and its `tool_input` (null
/// when absent); a payload without a tool name is refused, naming `shown` as the field.
pub fn tool_call<'a>(
    payload: &'a Value,
    shown: &str,
) -> Result<(&'a str, &'a Value), PayloadError> {
    let tool = payload
        .get("tool_name")
        .and_then(Value::as_str)
        .ok_or_else(|| PayloadError::Shape(format!("no {shown}")))?;
    Ok((tool, payload.get("tool_input").unwrap_or(&Value::Null)))
}

/// A non-empty string field of `value`.
pub fn string_field(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_string)
}

fn required<'a>(input: &'a Value, key: &str, tool: &str) -> Result<&'a str, PayloadError> {
    input
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| PayloadError::Shape(format!("{tool}: tool_input.{key} is not a string")))
}

fn edit_of(item: &Value, tool: &str) -> Result<TextEdit, PayloadError> {
    Ok(TextEdit {
        old_text: required(item, "old_string", tool)?.to_string(),
        new_text: required(item, "new_string", tool)?.to_string(),
        replace_all: item
            .get("replace_all")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// The changes of one of Claude Code's edit tools; `Ok(None)` for any other tool.
pub fn tool_changes(tool: &str, input: &Value) -> Result<Option<Vec<FileChange>>, PayloadError> {
    let change = match tool {
        "Edit" => Change::Edits(vec![edit_of(input, tool)?]),
        "MultiEdit" => {
            let items = input
                .get("edits")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    PayloadError::Shape("MultiEdit: tool_input.edits is not a list".into())
                })?;
            let edits = items
                .iter()
                .map(|item| edit_of(item, tool))
                .collect::<Result<Vec<_>, _>>()?;
            if edits.is_empty() {
                return Ok(Some(Vec::new()));
            }
            Change::Edits(edits)
        }
        "Write" => Change::Content(required(input, "content", tool)?.to_string()),
        // The notebook is the file; its cells are no symbols wit knows, so the file's path is
        // all the gate needs (it lets a file it does not analyse through).
        "NotebookEdit" => {
            let path = required(input, "notebook_path", tool)?.to_string();
            return Ok(Some(vec![FileChange {
                path,
                change: Change::Edits(Vec::new()),
            }]));
        }
        _ => return Ok(None),
    };
    let path = required(input, "file_path", tool)?.to_string();
    Ok(Some(vec![FileChange { path, change }]))
}

/// Reads a Claude Code PreToolUse payload; `Ok(None)` when the tool is not a file edit.
pub fn parse(payload: &Value) -> Result<Option<EditRequest>, PayloadError> {
    let (tool, input) = tool_call(payload, "tool_name")?;
    let Some(files) = tool_changes(tool, input)? else {
        return Ok(None);
    };
    Ok(Some(EditRequest {
        session: string_field(payload, "session_id"),
        cwd: string_field(payload, "cwd").map(Into::into),
        files,
    }))
}

/// The event whose answer PreToolUse's shape also fits: the shell commands of skills.
pub const SKILL_SHELL_EVENT: &str = "PreSkillShellCommand";

/// The answer on stdout to PreToolUse; `None` when the gate has nothing to say.
pub fn answer(verdict: &Verdict) -> Option<Value> {
    answer_to("PreToolUse", verdict)
}

/// The answer on stdout to hook event `event` (PreToolUse or [`SKILL_SHELL_EVENT`]); `None`
/// when the gate has nothing to say.
pub fn answer_to(event: &str, verdict: &Verdict) -> Option<Value> {
    let mut output = Map::new();
    output.insert("hookEventName".into(), json!(event));
    match verdict.decision {
        Decision::Allow => {}
        Decision::Ask => {
            output.insert("permissionDecision".into(), json!("ask"));
        }
        Decision::Deny => {
            output.insert("permissionDecision".into(), json!("deny"));
        }
    }
    if verdict.decision != Decision::Allow {
        output.insert(
            "permissionDecisionReason".into(),
            json!(verdict.reason.as_deref().unwrap_or_default()),
        );
    }
    if let Some(context) = verdict
        .context
        .as_ref()
        .filter(|_| event != SKILL_SHELL_EVENT)
    {
        output.insert("additionalContext".into(), json!(context));
    }
    if output.len() == 1 {
        return None;
    }
    Some(json!({ "hookSpecificOutput": output }))
}
