//! Cline's PreToolUse hook (`wit hook pre-edit --agent cline`): an executable file
//! `.clinerules/hooks/PreToolUse` that `wit init --agent cline` writes (and `PostToolUse` for
//! the news hook). Shapes from Cline's published hook reference (docs.cline.bot, "Hook
//! reference"); Cline publishes no package whose code could be read here.
//!
//! Payload: `{clineVersion, hookName: "PreToolUse", timestamp, taskId, workspaceRoots,
//! userId, preToolUse: {toolName, parameters}}`. The file tools: `write_to_file {path,
//! content}` and `replace_in_file {path, diff}` (SEARCH/REPLACE blocks: `------- SEARCH` /
//! `=======` / `+++++++ REPLACE`, or the older `<<<<<<< SEARCH` / `>>>>>>> REPLACE`);
//! `execute_command {command}` goes to the shell gate. The session is the task (`taskId`), the
//! directory the first workspace root.
//!
//! Answer (stdout, exit 0): `{"cancel": true, "errorMessage": …}` for a refusal (Cline has no
//! ask: an ask's reason asks the agent to get the person's go-ahead), `{"cancel": false,
//! "contextModification": …}` for a warning, `{"cancel": false}` otherwise.

use serde_json::{json, Value};

use super::claude::string_field;
use super::pre_edit::{Change, Decision, EditRequest, FileChange, PayloadError, TextEdit, Verdict};

/// The executable Cline runs for an event, as `wit init --agent cline` writes it (`{{WIT}}`:
/// the hook's command line).
pub const HOOK_SCRIPT: &str = "#!/bin/sh\n# wit's hook for Cline, written by `wit init --agent cline` (remove it with\n# `wit init --agent cline --remove`).\nexec {{WIT}}\n";

/// The first lines of wit's hook files (what marks them as wit's).
pub const SCRIPT_MARK: &str = "#!/bin/sh\n# wit's hook for Cline";

/// The payload as the shared gate reads a harness's: `{session_id, cwd, tool_name,
/// tool_input}` (the shell gate reads it too).
pub fn normalise(payload: &Value) -> Option<Value> {
    let call = payload
        .get("preToolUse")
        .or_else(|| payload.get("postToolUse"))?;
    let tool = call.get("toolName").and_then(Value::as_str)?;
    let input = call.get("parameters").cloned().unwrap_or(Value::Null);
    let tool = if tool == "execute_command" {
        "bash"
    } else {
        tool
    };
    Some(json!({
        "session_id": string_field(payload, "taskId"),
        "cwd": payload.get("workspaceRoots").and_then(|r| r.get(0)).cloned(),
        "tool_name": tool,
        "tool_input": input,
    }))
}

fn required<'a>(input: &'a Value, key: &str, tool: &str) -> Result<&'a str, PayloadError> {
    input
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| PayloadError::Shape(format!("{tool}: parameters.{key} is not a string")))
}

/// The SEARCH/REPLACE blocks of a `replace_in_file` diff as edits, in order.
pub fn search_replace(diff: &str) -> Result<Vec<TextEdit>, PayloadError> {
    let mut edits = Vec::new();
    let mut lines = diff.lines();
    while let Some(line) = lines.next() {
        let marker = line.trim_end();
        if !(marker.ends_with("SEARCH")
            && (marker.starts_with("-------") || marker.starts_with("<<<<<<<")))
        {
            continue;
        }
        let (mut old, mut new) = (Vec::new(), Vec::new());
        let mut in_new = false;
        let mut closed = false;
        for line in lines.by_ref() {
            let marker = line.trim_end();
            if !in_new && marker == "=======" {
                in_new = true;
            } else if in_new
                && marker.ends_with("REPLACE")
                && (marker.starts_with("+++++++") || marker.starts_with(">>>>>>>"))
            {
                closed = true;
                break;
            } else if in_new {
                new.push(line);
            } else {
                old.push(line);
            }
        }
        if !closed {
            return Err(PayloadError::Shape(
                "replace_in_file: a SEARCH block is not closed".into(),
            ));
        }
        edits.push(TextEdit {
            old_text: old.join("\n"),
            new_text: new.join("\n"),
            replace_all: false,
        });
    }
    if edits.is_empty() {
        return Err(PayloadError::Shape(
            "replace_in_file: no SEARCH/REPLACE block".into(),
        ));
    }
    Ok(edits)
}

/// Reads a Cline PreToolUse payload, [`normalise`]d; `Ok(None)` when the tool is not a file
/// edit.
pub fn parse(normal: &Value) -> Result<Option<EditRequest>, PayloadError> {
    let (tool, input) = super::claude::tool_call(normal, "preToolUse.toolName")?;
    let change = match tool {
        "write_to_file" => Change::Content(required(input, "content", tool)?.to_string()),
        "replace_in_file" => Change::Edits(search_replace(required(input, "diff", tool)?)?),
        _ => return Ok(None),
    };
    Ok(Some(EditRequest {
        session: string_field(normal, "session_id"),
        cwd: string_field(normal, "cwd").map(Into::into),
        files: vec![FileChange {
            path: required(input, "path", tool)?.to_string(),
            change,
        }],
    }))
}

/// The answer on stdout (Cline wants one for every call).
pub fn answer(verdict: &Verdict) -> Option<Value> {
    Some(match verdict.decision {
        Decision::Deny | Decision::Ask => {
            json!({"cancel": true, "errorMessage": format!("wit: {}", verdict.refusal())})
        }
        Decision::Allow => match &verdict.context {
            Some(context) => {
                json!({"cancel": false, "contextModification": format!("wit: {context}")})
            }
            None => json!({"cancel": false}),
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn payload(tool: &str, parameters: Value) -> Value {
        normalise(&raw(tool, parameters)).unwrap()
    }

    fn raw(tool: &str, parameters: Value) -> Value {
        json!({"clineVersion": "3.40.0", "hookName": "PreToolUse", "timestamp": "1",
               "taskId": "task-1", "workspaceRoots": ["/r"], "userId": "u",
               "preToolUse": {"toolName": tool, "parameters": parameters}})
    }

    #[test]
    fn reads_writes_and_search_replace_blocks() {
        let write = parse(&payload(
            "write_to_file",
            json!({"path": "src/a.ts", "content": "x"}),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(write.session.as_deref(), Some("task-1"));
        assert_eq!(write.cwd, Some("/r".into()));
        assert_eq!(write.files[0].change, Change::Content("x".into()));
        let diff = "------- SEARCH\n  return 1;\n=======\n  return 2;\n+++++++ REPLACE\n<<<<<<< SEARCH\na\nb\n=======\n>>>>>>> REPLACE\n";
        let edits = parse(&payload(
            "replace_in_file",
            json!({"path": "src/a.ts", "diff": diff}),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            edits.files[0].change,
            Change::Edits(vec![
                TextEdit {
                    old_text: "  return 1;".into(),
                    new_text: "  return 2;".into(),
                    replace_all: false
                },
                TextEdit {
                    old_text: "a\nb".into(),
                    new_text: String::new(),
                    replace_all: false
                },
            ])
        );
        assert!(parse(&payload("read_file", json!({"path": "a"})))
            .unwrap()
            .is_none());
        assert!(parse(&payload(
            "replace_in_file",
            json!({"path": "a", "diff": "------- SEARCH\nx\n"})
        ))
        .is_err());
        let shell = payload("execute_command", json!({"command": "git stash"}));
        assert_eq!(shell["tool_name"], "bash");
        assert_eq!(shell["tool_input"]["command"], "git stash");
    }

    #[test]
    fn refuses_with_cancel_and_warns_with_context() {
        let deny = Verdict {
            decision: Decision::Deny,
            reason: Some("locked".into()),
            context: None,
        };
        assert_eq!(
            answer(&deny).unwrap(),
            json!({"cancel": true, "errorMessage": "wit: locked"})
        );
        let warn = Verdict {
            decision: Decision::Allow,
            reason: None,
            context: Some("overlap".into()),
        };
        assert_eq!(
            answer(&warn).unwrap()["contextModification"],
            "wit: overlap"
        );
        assert_eq!(answer(&Verdict::allow()).unwrap(), json!({"cancel": false}));
    }
}
