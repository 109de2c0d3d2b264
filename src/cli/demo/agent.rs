//! A demo agent: a stand-in for its harness (Claude Code), a long-lived process of its own
//! whose name is not a shell's (`/bin/sh` under the agent's name, reading command lines), so
//! that the hooks it runs find it as their harness and register its session with its pid;
//! two agents are two processes, as two Claude Codes are. Its tool calls go through the real
//! hooks with Claude Code's payloads: `wit hook pre-edit` before, `wit hook post-tool` after.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

use crate::cli::output::CliError;

/// What a command run by the agent's process printed, and its exit code.
#[derive(Debug, Clone)]
pub struct Ran {
    /// The exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// The gate's answer to a tool call: `deny`, `ask` or empty (let through), and what it said.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// `permissionDecision` (empty when the call may go ahead).
    pub decision: String,
    /// The reason or the added context.
    pub said: String,
}

impl Verdict {
    /// Whether the tool call may go ahead.
    pub fn allowed(&self) -> bool {
        self.decision.is_empty() || self.decision == "allow"
    }
}

/// One agent's stand-in harness process; ended on drop.
pub struct Agent {
    /// The agent's (and its session's) name.
    pub name: String,
    cwd: PathBuf,
    exe: PathBuf,
    dir: PathBuf,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    calls: usize,
}

fn failed(what: &str, error: impl std::fmt::Display) -> CliError {
    CliError::Failed(format!("demo: {what}: {error}"))
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl Agent {
    /// Starts `name`'s harness process working in `cwd`; its files live in `dir`.
    pub fn spawn(name: &str, cwd: &Path, dir: &Path, exe: &Path) -> Result<Self, CliError> {
        let dir = dir.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| failed("agent directory", e))?;
        let program = dir.join(name);
        std::os::unix::fs::symlink("/bin/sh", &program).map_err(|e| failed("agent", e))?;
        let script = "while IFS= read -r line; do eval \"$line\"; echo \"done $?\"; done";
        let mut child = Command::new(&program)
            .args(["-c", script])
            .current_dir(cwd)
            .env_remove("WIT_SESSION")
            .env_remove("CLAUDE_SESSION_ID")
            .env_remove("WIT_REPO_ROOT")
            .env_remove("WIT_NO_AUTOSTART")
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE")
            // Give the gate room on a loaded machine instead of failing open.
            .env(crate::hooks::hook_input::BUDGET_ENV, "20000")
            .env(crate::cli::contracts::HOOK_BUDGET_ENV, "20000")
            .env("GIT_AUTHOR_NAME", name)
            .env("GIT_AUTHOR_EMAIL", format!("{name}@example.com"))
            .env("GIT_COMMITTER_NAME", name)
            .env("GIT_COMMITTER_EMAIL", format!("{name}@example.com"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| failed("starting an agent", e))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(CliError::Failed("demo: an agent without pipes".into()));
        };
        Ok(Self {
            name: name.to_owned(),
            cwd: cwd.to_path_buf(),
            exe: exe.to_path_buf(),
            dir,
            child,
            stdin,
            stdout: BufReader::new(stdout),
            calls: 0,
        })
    }

    /// Runs the shell command `command` as a child of the agent's process, with `input` on
    /// its standard input.
    pub fn sh(&mut self, command: &str, input: &str) -> Result<Ran, CliError> {
        self.calls += 1;
        let base = self.dir.join(format!("call-{}", self.calls));
        let (stdin, out, err) = (
            base.with_extension("in"),
            base.with_extension("out"),
            base.with_extension("err"),
        );
        std::fs::write(&stdin, input).map_err(|e| failed("agent input", e))?;
        let line = format!(
            "( cd {} && {command} ) < {} > {} 2> {}\n",
            quote(&self.cwd.display().to_string()),
            quote(&stdin.display().to_string()),
            quote(&out.display().to_string()),
            quote(&err.display().to_string()),
        );
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| failed("talking to an agent", e))?;
        let mut done = String::new();
        self.stdout
            .read_line(&mut done)
            .map_err(|e| failed("reading an agent", e))?;
        let code = done
            .trim()
            .strip_prefix("done ")
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| CliError::Failed(format!("demo: the agent {} stopped", self.name)))?;
        let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
        Ok(Ran {
            code,
            stdout: read(&out),
            stderr: read(&err),
        })
    }

    /// Runs `wit ARGS` as the agent (as its session), with `input` on stdin.
    pub fn wit(&mut self, args: &[&str], input: &str) -> Result<Ran, CliError> {
        let mut command = format!(
            "WIT_SESSION={} {}",
            quote(&self.name),
            quote(&self.exe.display().to_string())
        );
        for arg in args {
            command.push(' ');
            command.push_str(&quote(arg));
        }
        self.sh(&command, input)
    }

    fn payload(&self, event: &str, tool: &str, input: Value) -> String {
        let mut payload = json!({
            "session_id": self.name,
            "cwd": self.cwd.display().to_string(),
            "hook_event_name": event,
            "tool_name": tool,
            "tool_input": input,
        });
        if event == "PostToolUse" {
            payload["tool_response"] = json!({});
        }
        payload.to_string()
    }

    /// Claude Code's PreToolUse hook for `tool` with `input`: the gate's verdict.
    pub fn pre_tool(&mut self, tool: &str, input: Value) -> Result<Verdict, CliError> {
        let payload = self.payload("PreToolUse", tool, input);
        let ran = self.hook("pre-edit", &payload)?;
        let value: Value = if ran.stdout.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&ran.stdout).map_err(|e| failed("the gate's answer", e))?
        };
        let output = &value["hookSpecificOutput"];
        let said = output["permissionDecisionReason"]
            .as_str()
            .or(output["additionalContext"].as_str())
            .unwrap_or("");
        Ok(Verdict {
            decision: output["permissionDecision"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
            said: format!("{said}{}", ran.stderr).trim_end().to_owned(),
        })
    }

    /// Claude Code's PostToolUse hook for `tool`: the tool call is over.
    pub fn post_tool(&mut self, tool: &str) -> Result<(), CliError> {
        let payload = self.payload("PostToolUse", tool, json!({}));
        self.hook("post-tool", &payload).map(|_| ())
    }

    fn hook(&mut self, which: &str, payload: &str) -> Result<Ran, CliError> {
        let exe = quote(&self.exe.display().to_string());
        let ran = self.sh(&format!("{exe} hook {which} --agent claude"), payload)?;
        if ran.code != 0 {
            return Err(CliError::Failed(format!(
                "demo: wit hook {which} failed for {}: {}",
                self.name, ran.stderr
            )));
        }
        Ok(ran)
    }

    /// The Edit tool replacing `old` by `new` in `file`: the gate first; the edit is written
    /// only if it may go ahead, then the post-tool hook.
    pub fn edit(&mut self, file: &str, old: &str, new: &str) -> Result<Verdict, CliError> {
        let path = self.cwd.join(file);
        let verdict = self.pre_tool(
            "Edit",
            json!({"file_path": path.display().to_string(), "old_string": old, "new_string": new}),
        )?;
        if verdict.allowed() {
            let text = std::fs::read_to_string(&path).map_err(|e| failed("reading", e))?;
            std::fs::write(&path, text.replacen(old, new, 1)).map_err(|e| failed("writing", e))?;
            self.post_tool("Edit")?;
        }
        Ok(verdict)
    }

    /// The Bash tool running `command`: the shell gate first; the command runs (as the
    /// agent's child, in its directory) only if it may go ahead, then the post-tool hook.
    pub fn bash(&mut self, command: &str) -> Result<(Verdict, Option<Ran>), CliError> {
        let verdict = self.pre_tool("Bash", json!({ "command": command }))?;
        if !verdict.allowed() {
            return Ok((verdict, None));
        }
        // `wit` in the command is this binary, run as the agent's session.
        let wit = format!(
            "WIT_SESSION={} {} ",
            quote(&self.name),
            quote(&self.exe.display().to_string())
        );
        let real = command.replace("wit ", &wit);
        let ran = self.sh(&format!("sh -c {}", quote(&real)), "")?;
        self.post_tool("Bash")?;
        Ok((verdict, Some(ran)))
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
