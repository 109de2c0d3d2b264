//! Gemini CLI's BeforeTool and AfterTool hooks (`wit hook pre-edit --agent gemini`, wired in
//! `.gemini/settings.json` for `replace|write_file` on both events).
//!
//! Payload: `{session_id, cwd, hook_event_name: "BeforeTool"|"AfterTool", tool_name,
//! tool_input}` with `replace {file_path, old_string, new_string, allow_multiple?}`
//! (`allow_multiple: true` replaces every occurrence; older releases sent
//! `expected_replacements`, more than one meaning the same) and `write_file {file_path,
//! content}`.
//!
//! Answer on BeforeTool (stdout, exit 0), as Gemini CLI 0.61 reads it (`HookOutput`:
//! `decision` "deny"/"block" refuses with `reason` as the tool's error, "ask" makes the user
//! confirm): `{"decision": "deny", "reason": …}`, `{"decision": "ask", "reason": …,
//! "systemMessage": …}`, `{}` when the gate has nothing against the edit.
//!
//! Gemini CLI ignores BeforeTool's `hookSpecificOutput.additionalContext`: only AfterTool's
//! reaches the model (appended to the tool's result as `<hook_context>`). So a warning of an
//! allowed edit is shown to the user at once (`systemMessage`) and kept in
//! `.wit/gate-notes/`, keyed by session and file; the AfterTool call of the same command
//! answers with it as `additionalContext` (and deletes it).

use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::claude::string_field;
use super::pre_edit::{
    find_root, Change, Decision, EditRequest, FileChange, PayloadError, TextEdit, Verdict,
};

/// The folder under `.wit/` where warnings wait for the AfterTool call.
const NOTES_DIR: &str = "gate-notes";

fn text<'a>(input: &'a Value, key: &str, tool: &str) -> Result<&'a str, PayloadError> {
    input
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| PayloadError::Shape(format!("{tool}: tool_input.{key} is not a string")))
}

/// Whether a `replace` replaces every occurrence.
fn replaces_all(input: &Value) -> bool {
    input.get("allow_multiple").and_then(Value::as_bool) == Some(true)
        || input
            .get("expected_replacements")
            .and_then(Value::as_u64)
            .is_some_and(|n| n > 1)
}

fn is_after_tool(payload: &Value) -> bool {
    payload.get("hook_event_name").and_then(Value::as_str) == Some("AfterTool")
}

/// Reads a Gemini CLI BeforeTool payload; `Ok(None)` when the tool is not a file edit (or the
/// event is not BeforeTool).
pub fn parse(payload: &Value) -> Result<Option<EditRequest>, PayloadError> {
    if is_after_tool(payload) {
        return Ok(None);
    }
    let (tool, input) = super::claude::tool_call(payload, "tool_name")?;
    let change = match tool {
        "replace" => Change::Edits(vec![TextEdit {
            old_text: text(input, "old_string", tool)?.to_string(),
            new_text: text(input, "new_string", tool)?.to_string(),
            replace_all: replaces_all(input),
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

/// The BeforeTool answer on stdout.
pub fn answer(verdict: &Verdict) -> Option<Value> {
    let reason = verdict.reason.as_deref().unwrap_or_default();
    Some(match verdict.decision {
        Decision::Deny => json!({"decision": "deny", "reason": reason}),
        Decision::Ask => json!({
            "decision": "ask",
            "reason": reason,
            "systemMessage": format!("wit: {reason}"),
        }),
        Decision::Allow => match &verdict.context {
            Some(context) => json!({"systemMessage": format!("wit: {context}")}),
            None => json!({}),
        },
    })
}

/// Where the warning for this payload's session and file waits; `None` when the payload
/// names neither or the repository has no `.wit/`.
fn note_path(payload: &Value, repo: Option<&Path>) -> Option<PathBuf> {
    let session = string_field(payload, "session_id")?;
    let file = payload
        .get("tool_input")
        .and_then(|input| string_field(input, "file_path"))?;
    let cwd: PathBuf = string_field(payload, "cwd")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| std::env::current_dir().ok())?;
    let paths = super::hook_input::gated_paths(&find_root(repo, &cwd)?)?;
    let absolute = cwd.join(&file);
    let mut hasher = DefaultHasher::new();
    (session.as_str(), absolute.as_path()).hash(&mut hasher);
    Some(
        paths
            .dir
            .join(NOTES_DIR)
            .join(format!("{:016x}", hasher.finish())),
    )
}

/// After a BeforeTool check: keeps the warning of an allowed edit for the AfterTool call.
pub fn keep_for_after_tool(payload: &Value, repo: Option<&Path>, verdict: &Verdict) {
    let (Decision::Allow, Some(context)) = (verdict.decision, &verdict.context) else {
        return;
    };
    if is_after_tool(payload) {
        return;
    }
    let Some(path) = note_path(payload, repo) else {
        return;
    };
    if let Some(dir) = path.parent() {
        let _ = fs::create_dir_all(dir);
    }
    let _ = fs::write(path, context);
}

/// The AfterTool answer: the kept warning as context for the model; `None` when the payload
/// is not an AfterTool call. Nothing kept: `{}`.
pub fn after_tool(payload: &Value, repo: Option<&Path>) -> Option<Value> {
    if !is_after_tool(payload) {
        return None;
    }
    let kept = note_path(payload, repo).and_then(|path| {
        let text = fs::read_to_string(&path).ok()?;
        let _ = fs::remove_file(&path);
        Some(text)
    });
    Some(match kept {
        Some(context) => json!({"hookSpecificOutput": {
            "hookEventName": "AfterTool",
            "additionalContext": format!("wit: {context}"),
        }}),
        None => json!({}),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn allow_multiple_replaces_every_occurrence() {
        let payload = |input: Value| {
            json!({"session_id": "s", "cwd": "/r", "hook_event_name": "BeforeTool",
                   "tool_name": "replace", "tool_input": input})
        };
        let replace_all = |input: Value| {
            let request = parse(&payload(input)).unwrap().unwrap();
            match &request.files[0].change {
                Change::Edits(edits) => edits[0].replace_all,
                Change::Content(_) => panic!("not an edit"),
            }
        };
        let base = json!({"file_path": "/r/a.ts", "old_string": "a", "new_string": "b"});
        let with = |key: &str, value: Value| {
            let mut input = base.clone();
            input[key] = value;
            input
        };
        assert!(replace_all(with("allow_multiple", json!(true))));
        assert!(!replace_all(with("allow_multiple", json!(false))));
        assert!(replace_all(with("expected_replacements", json!(2))));
        assert!(!replace_all(base.clone()));
        let mut after = payload(base);
        after["hook_event_name"] = json!("AfterTool");
        assert_eq!(parse(&after).unwrap(), None);
    }

    #[test]
    fn ask_stays_an_ask_and_a_warning_is_shown_to_the_user() {
        let ask = Verdict {
            decision: Decision::Ask,
            reason: Some("locked".into()),
            context: None,
        };
        assert_eq!(answer(&ask).unwrap()["decision"], "ask");
        let warn = Verdict {
            decision: Decision::Allow,
            reason: None,
            context: Some("overlaps".into()),
        };
        assert_eq!(
            answer(&warn).unwrap(),
            json!({"systemMessage": "wit: overlaps"})
        );
    }
}
