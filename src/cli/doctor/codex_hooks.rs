//! What Codex itself says of a project's hooks: `codex app-server`'s `hooks/list` (the call
//! behind Codex's `/hooks` screen) gives each hook its key, command and `trustStatus`, which is
//! `trusted` only while the hash recorded in `[hooks.state."<key>"] trusted_hash` is the hook's
//! current one. Codex's hash is its own (it is not a plain digest of the hook's JSON), so
//! asking Codex is the one way to tell a trusted gate from one changed since it was trusted.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

/// How long Codex may take to start and answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(15);

/// One hook as `hooks/list` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedHook {
    /// `<hooks.json>:<event>:<group>:<handler>`.
    pub key: String,
    /// Its command line.
    pub command: String,
    /// `trusted`, `untrusted`, `modified`, … as Codex says.
    pub trust_status: String,
}

/// Kills the app-server however the listing ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The hooks Codex lists for the project at `root` (`codex_home`: `$CODEX_HOME`); an error
/// line when there is no `codex` to ask or it does not answer.
pub fn list(root: &Path, codex_home: Option<&Path>) -> Result<Vec<ListedHook>, String> {
    let mut command = Command::new("codex");
    command
        .arg("app-server")
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(home) = codex_home {
        command.env("CODEX_HOME", home);
    }
    let mut server = Server(
        command
            .spawn()
            .map_err(|error| format!("cannot run `codex app-server`: {error}"))?,
    );
    let stdout = server.0.stdout.take().ok_or("no stdout from codex")?;
    let mut stdin = server.0.stdin.take().ok_or("no stdin to codex")?;
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"clientInfo": {"name": "wit-doctor", "version": env!("CARGO_PKG_VERSION")}}}),
        json!({"jsonrpc": "2.0", "method": "initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list",
               "params": {"cwds": [root.display().to_string()]}}),
    ];
    for request in requests {
        writeln!(stdin, "{request}").map_err(|error| format!("codex app-server: {error}"))?;
    }
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message.get("id") == Some(&json!(2)) {
                let _ = send.send(message);
                break;
            }
        }
    });
    let answer = receive
        .recv_timeout(ANSWER_WITHIN)
        .map_err(|_| "`codex app-server` did not answer hooks/list".to_string())?;
    drop(stdin);
    if let Some(error) = answer.get("error") {
        return Err(format!("codex app-server hooks/list: {error}"));
    }
    Ok(parse(&answer))
}

/// The hooks of a `hooks/list` answer.
fn parse(answer: &Value) -> Vec<ListedHook> {
    let text = |hook: &Value, key: &str| {
        hook.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    answer
        .pointer("/result/data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.get("hooks").and_then(Value::as_array))
        .flatten()
        .map(|hook| ListedHook {
            key: text(hook, "key"),
            command: text(hook, "command"),
            trust_status: text(hook, "trustStatus"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    /// An answer of Codex 0.171.0's app-server, shortened.
    #[test]
    fn reads_each_hooks_key_command_and_trust() {
        let answer = json!({"id": 2, "result": {"data": [{"cwd": "/r", "hooks": [
            {"key": "/r/.codex/hooks.json:pre_tool_use:0:0", "eventName": "preToolUse",
             "command": "wit hook pre-edit --agent codex", "currentHash": "sha256:c8",
             "trustStatus": "untrusted"},
            {"key": "/r/.codex/hooks.json:post_tool_use:0:0", "eventName": "postToolUse",
             "command": "wit hook post-tool --agent codex", "currentHash": "sha256:e2",
             "trustStatus": "trusted"}
        ], "warnings": [], "errors": []}]}});
        let hooks = parse(&answer);
        assert_eq!(hooks.len(), 2);
        assert_eq!(hooks[0].key, "/r/.codex/hooks.json:pre_tool_use:0:0");
        assert_eq!(hooks[0].trust_status, "untrusted");
        assert_eq!(hooks[1].command, "wit hook post-tool --agent codex");
        assert!(parse(&json!({"error": {}})).is_empty());
    }
}
