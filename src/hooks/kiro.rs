//! Kiro CLI's hooks (`wit hook pre-edit --agent kiro`): `wit init --agent kiro` writes a Kiro
//! agent of wit's own, `.kiro/agents/wit.json` (`kiro-cli chat --agent wit`), with every
//! built-in tool, wit's MCP server, the gate on `preToolUse` and the news hook on
//! `postToolUse`. Shapes from Kiro CLI's published hooks and agent configuration reference
//! (kiro.dev, "CLI › Hooks"); Kiro CLI ships no package whose code could be read here.
//!
//! Payload: `{hook_event_name: "preToolUse", cwd, tool_name, tool_input}`. The file tool is
//! `fs_write` (also called `write`): `{command: "create", path, file_text}`, `{command:
//! "str_replace", path, old_str, new_str}`, `{command: "insert", path, insert_line, new_str}`,
//! `{command: "append", path, new_str}`; `execute_bash` (also `shell`) `{command}` goes to the
//! shell gate. Kiro gives no session id: the hook's session is the agent's (`WIT_SESSION`,
//! else the repository's).
//!
//! Answer: exit code 2 blocks the call and its stderr goes to the model (wit's reason; Kiro has
//! no ask, so an ask's reason asks the agent to get the person's go-ahead); a warning goes to
//! stdout, exit 0.

use std::path::Path;

use serde_json::{json, Value};

use super::claude::string_field;
use super::pre_edit::{Change, Decision, EditRequest, FileChange, PayloadError, TextEdit, Verdict};
use crate::cli::output::Report;

/// wit's Kiro agent, as `wit init --agent kiro` writes it (`{{GATE}}`, `{{NEWS}}`: the hooks'
/// command lines, `{{WIT}}`: the wit command, JSON strings).
pub const AGENT: &str = r#"{
  "name": "wit",
  "description": "wit's agent: every built-in tool, wit's MCP server, wit's edit gate and news (written by `wit init --agent kiro`)",
  "tools": ["*"],
  "mcpServers": {"wit": {"command": {{WIT}}, "args": ["mcp"]}},
  "hooks": {
    "preToolUse": [{"command": {{GATE}}}],
    "postToolUse": [{"command": {{NEWS}}}]
  }
}
"#;

/// What marks the agent file as wit's.
pub const AGENT_MARK: &str = "written by `wit init --agent kiro`";

/// The payload with Kiro's shell tool named as the shell gate knows it.
pub fn normalise(payload: &Value) -> Value {
    let mut normal = payload.clone();
    if let Some(map) = normal.as_object_mut() {
        if matches!(
            map.get("tool_name").and_then(Value::as_str),
            Some("execute_bash" | "shell")
        ) {
            map.insert("tool_name".into(), json!("bash"));
        }
    }
    normal
}

fn required<'a>(input: &'a Value, key: &str) -> Result<&'a str, PayloadError> {
    input
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| PayloadError::Shape(format!("fs_write: tool_input.{key} is not a string")))
}

/// Reads a Kiro preToolUse payload; `Ok(None)` when the tool is not a file write. An insert
/// or append is the file's whole new text, read from disk.
pub fn parse(payload: &Value) -> Result<Option<EditRequest>, PayloadError> {
    let tool = payload
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !matches!(tool, "fs_write" | "write") {
        return Ok(None);
    }
    let input = payload.get("tool_input").unwrap_or(&Value::Null);
    let path = required(input, "path")?.to_string();
    let cwd = string_field(payload, "cwd");
    let current = || {
        let full = cwd.as_deref().map_or_else(
            || Path::new(&path).to_path_buf(),
            |dir| Path::new(dir).join(&path),
        );
        std::fs::read_to_string(&full).map_err(|error| {
            PayloadError::Shape(format!("fs_write: cannot read {}: {error}", full.display()))
        })
    };
    let change = match required(input, "command")? {
        "create" => Change::Content(required(input, "file_text")?.to_string()),
        "str_replace" => Change::Edits(vec![TextEdit {
            old_text: required(input, "old_str")?.to_string(),
            new_text: required(input, "new_str")?.to_string(),
            replace_all: false,
        }]),
        "append" => {
            let mut text = current()?;
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(required(input, "new_str")?);
            Change::Content(text)
        }
        "insert" => {
            let after = input
                .get("insert_line")
                .and_then(Value::as_u64)
                .unwrap_or(0) as usize;
            let text = current()?;
            let mut lines: Vec<&str> = text.lines().collect();
            let at = after.min(lines.len());
            let new = required(input, "new_str")?;
            lines.insert(at, new);
            let mut joined = lines.join("\n");
            joined.push('\n');
            Change::Content(joined)
        }
        other => {
            return Err(PayloadError::Shape(format!(
                "fs_write: unknown command {other}"
            )))
        }
    };
    Ok(Some(EditRequest {
        session: None,
        cwd: cwd.map(Into::into),
        files: vec![FileChange { path, change }],
    }))
}

/// What the gate says: exit 2 and the reason on stderr to block; a warning on stdout.
pub fn report(verdict: &Verdict) -> Report {
    match verdict.decision {
        Decision::Deny | Decision::Ask => Report::nothing()
            .with_note(format!("wit: {}", verdict.refusal()))
            .with_code(2),
        Decision::Allow => match &verdict.context {
            Some(context) => Report::raw(format!("wit: {context}\n").into_bytes()),
            None => Report::nothing(),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn reads_each_fs_write_command() {
        let dir = std::env::temp_dir().join(format!("wit-kiro-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/a.ts"), "one\ntwo\n").unwrap();
        let cwd = dir.display().to_string();
        let call = |input: Value| {
            parse(&json!({"hook_event_name": "preToolUse", "cwd": cwd, "tool_name": "fs_write", "tool_input": input})).unwrap().unwrap().files.remove(0).change
        };
        assert_eq!(
            call(json!({"command": "create", "path": "src/b.ts", "file_text": "x"})),
            Change::Content("x".into())
        );
        assert_eq!(
            call(
                json!({"command": "str_replace", "path": "src/a.ts", "old_str": "one", "new_str": "1"})
            ),
            Change::Edits(vec![TextEdit {
                old_text: "one".into(),
                new_text: "1".into(),
                replace_all: false
            }])
        );
        assert_eq!(
            call(json!({"command": "append", "path": "src/a.ts", "new_str": "three"})),
            Change::Content("one\ntwo\nthree".into())
        );
        assert_eq!(
            call(
                json!({"command": "insert", "path": "src/a.ts", "insert_line": 1, "new_str": "1.5"})
            ),
            Change::Content("one\n1.5\ntwo\n".into())
        );
        assert!(parse(&json!({"tool_name": "fs_read", "tool_input": {}}))
            .unwrap()
            .is_none());
        assert_eq!(
            normalise(&json!({"tool_name": "execute_bash"}))["tool_name"],
            "bash"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
