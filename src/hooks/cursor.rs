//! Cursor's preToolUse hook (`wit hook pre-edit --agent cursor`, wired in
//! `.cursor/hooks.json`).
//!
//! Payload: `{conversation_id, generation_id, hook_event_name: "preToolUse", tool_name,
//! tool_input, cwd?, workspace_roots}`. Cursor's file tools: `Write {file_path, content |
//! contents}`, `Edit`/`StrReplace`/`MultiEdit` with Claude-style `old_string`/`new_string`
//! (or `edits`), `Delete {file_path}`; every other tool is not an edit. The session is the
//! conversation (`conversation_id`); the directory `cwd`, else the first workspace root.
//!
//! Answer (stdout, exit 0), per Cursor's hooks documentation: `{"permission": "deny"|"ask",
//! "user_message": …, "agent_message": …}` (`user_message` is shown to the person,
//! `agent_message` to the agent); `{}` when the gate has nothing against the edit (never an
//! explicit `allow`, which could skip an approval Cursor would otherwise ask for). A warning
//! is `{"agent_message": …}` alone.

use serde_json::{json, Value};

use super::claude::{self, string_field};
use super::pre_edit::{Change, Decision, EditRequest, FileChange, PayloadError, Verdict};

/// Reads a Cursor preToolUse payload; `Ok(None)` when the tool is not a file edit.
pub fn parse(payload: &Value) -> Result<Option<EditRequest>, PayloadError> {
    let (tool, input) = claude::tool_call(payload, "tool_name")?;
    let path = || {
        ["file_path", "path", "target_file"]
            .iter()
            .find_map(|key| string_field(input, key))
            .ok_or_else(|| PayloadError::Shape(format!("{tool}: tool_input has no file_path")))
    };
    let files = match tool {
        "Write" => {
            let content = ["content", "contents"]
                .iter()
                .find_map(|key| input.get(*key).and_then(Value::as_str))
                .ok_or_else(|| PayloadError::Shape("Write: tool_input has no content".into()))?;
            vec![FileChange {
                path: path()?,
                change: Change::Content(content.to_string()),
            }]
        }
        "Delete" => vec![FileChange {
            path: path()?,
            change: Change::Content(String::new()),
        }],
        "Edit" | "StrReplace" | "MultiEdit" => {
            let as_claude = if input.get("edits").is_some() {
                "MultiEdit"
            } else {
                "Edit"
            };
            let mut normalised = input.clone();
            if let Value::Object(map) = &mut normalised {
                map.entry("file_path").or_insert(json!(path()?));
            }
            claude::tool_changes(as_claude, &normalised)?.unwrap_or_default()
        }
        _ => return Ok(None),
    };
    let cwd = super::hook_input::payload_cwd(payload);
    Ok(Some(EditRequest {
        session: string_field(payload, "conversation_id")
            .or_else(|| string_field(payload, "session_id")),
        cwd: cwd.map(Into::into),
        files,
    }))
}

/// The answer on stdout.
pub fn answer(verdict: &Verdict) -> Option<Value> {
    let reason = verdict.reason.as_deref().unwrap_or_default();
    let refuse = |permission: &str| {
        json!({
            "permission": permission,
            "user_message": format!("wit: {reason}"),
            "agent_message": reason,
        })
    };
    Some(match verdict.decision {
        Decision::Deny => refuse("deny"),
        Decision::Ask => refuse("ask"),
        // Never an explicit allow: the gate only takes rights away, and an allow could skip
        // an approval Cursor would otherwise ask for.
        Decision::Allow => match &verdict.context {
            Some(context) => json!({"agent_message": context}),
            None => json!({}),
        },
    })
}
