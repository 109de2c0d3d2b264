//! Windsurf's Cascade hooks (`wit hook pre-edit --agent windsurf`, wired in
//! `.windsurf/hooks.json` on `pre_write_code` and `pre_run_command`; the news hook on
//! `post_write_code` and `post_run_command`). Shapes from Windsurf's published Cascade hooks
//! documentation (docs.windsurf.com, "Cascade Hooks"); Windsurf ships no package whose code
//! could be read here.
//!
//! Payload: `{agent_action_name, trajectory_id, execution_id, timestamp, tool_info}` with
//! `pre_write_code`'s `tool_info: {file_path, edits: [{old_string, new_string}]}` and
//! `pre_run_command`'s `tool_info: {command_line, cwd}` (which goes to the shell gate). The
//! session is the trajectory.
//!
//! Answer: a pre-hook blocks by exiting with code 2, its stderr shown (wit's reason; Windsurf
//! has no ask, so an ask's reason asks the agent to get the person's go-ahead); anything else
//! lets the action go ahead, a warning on stderr.

use serde_json::{json, Value};

use super::claude::{self, string_field};
use super::pre_edit::{Decision, EditRequest, PayloadError, Verdict};
use crate::cli::output::Report;

/// The payload as the shared gate reads a harness's: `{session_id, cwd, tool_name,
/// tool_input}` (`Edit`-shaped for a write, `bash` for a command).
pub fn normalise(payload: &Value) -> Option<Value> {
    let action = payload.get("agent_action_name").and_then(Value::as_str)?;
    let info = payload.get("tool_info").cloned().unwrap_or(Value::Null);
    let session = string_field(payload, "trajectory_id");
    let cwd = string_field(&info, "cwd").or_else(|| string_field(payload, "cwd"));
    let (tool, input) = match action {
        "pre_run_command" | "post_run_command" => (
            "bash",
            json!({"command": info.get("command_line").cloned().unwrap_or(Value::Null)}),
        ),
        "pre_write_code" | "post_write_code" => ("MultiEdit", {
            let edits = info.get("edits").cloned().unwrap_or_else(|| json!([]));
            json!({"file_path": info.get("file_path").cloned().unwrap_or(Value::Null), "edits": edits})
        }),
        other => (other, info),
    };
    Some(json!({"session_id": session, "cwd": cwd, "tool_name": tool, "tool_input": input}))
}

/// Reads a (normalised) Windsurf payload; `Ok(None)` when it is not a file write.
pub fn parse(payload: &Value) -> Result<Option<EditRequest>, PayloadError> {
    claude::parse(payload)
}

/// What the gate says: exit 2 and the reason on stderr to block, else nothing.
pub fn report(verdict: &Verdict) -> Report {
    match verdict.decision {
        Decision::Deny | Decision::Ask => Report::nothing()
            .with_note(format!("wit: {}", verdict.refusal()))
            .with_code(2),
        Decision::Allow => match &verdict.context {
            Some(context) => Report::nothing().with_note(format!("wit: {context}")),
            None => Report::nothing(),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::hooks::pre_edit::{Change, TextEdit};

    #[test]
    fn reads_writes_and_commands() {
        let write = json!({"agent_action_name": "pre_write_code", "trajectory_id": "t1",
            "execution_id": "e1", "timestamp": "2026-01-01T00:00:00Z",
            "tool_info": {"file_path": "/r/src/a.ts", "edits": [{"old_string": "a", "new_string": "b"}]}});
        let request = parse(&normalise(&write).unwrap()).unwrap().unwrap();
        assert_eq!(request.session.as_deref(), Some("t1"));
        assert_eq!(request.files[0].path, "/r/src/a.ts");
        assert_eq!(
            request.files[0].change,
            Change::Edits(vec![TextEdit {
                old_text: "a".into(),
                new_text: "b".into(),
                replace_all: false
            }])
        );
        let run = json!({"agent_action_name": "pre_run_command", "trajectory_id": "t1",
            "tool_info": {"command_line": "git stash", "cwd": "/r"}});
        let shell = normalise(&run).unwrap();
        assert_eq!(shell["tool_name"], "bash");
        assert_eq!(shell["tool_input"]["command"], "git stash");
        assert_eq!(shell["cwd"], "/r");
    }
}
