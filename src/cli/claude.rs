//! The Claude Code plugin's session hooks (`wit hook claude-session-start|end`).
//!
//! SessionStart makes later `wit` calls of the Claude session use its id, registers the
//! session with the pid of the Claude process (so a crashed Claude loses its locks within
//! seconds, PROTOCOL-NOTES 7) and prints `wit status` as context. SessionEnd ends the session.
//! Both never fail and never get in the harness's way: every problem leaves them silent.

use std::fs;
use std::io::{IsTerminal, Read, Write};
use std::time::Duration;

use serde_json::Value;

use super::context::{block_on, Context};
use super::hooks::shell_quote;
use super::output::{self, Report};
use crate::protocol::{RegisterParams, SessionEndParams};

/// The name Claude sessions register under.
const AGENT_NAME: &str = "claude-code";

/// How long SessionEnd waits for the daemon.
const END_BUDGET: Duration = Duration::from_millis(1500);

/// Programs that stand between Claude and this hook (`sh -c "… wit hook …"`): the session's
/// process is the first ancestor that is none of them.
const INTERMEDIATES: &[&str] = &["sh", "bash", "dash", "zsh", "fish", "env", "timeout", "wit"];

/// The hook's JSON payload on stdin (at most 1 MiB; nothing when stdin is a terminal).
fn read_payload() -> Value {
    let mut input = String::new();
    if !std::io::stdin().is_terminal() {
        let _ = std::io::stdin().take(1 << 20).read_to_string(&mut input);
    }
    serde_json::from_str(&input).unwrap_or(Value::Null)
}

fn payload_session(payload: &Value) -> Option<String> {
    payload
        .get("session_id")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_string)
}

/// SessionStart: export, register with the Claude process's pid, print the status.
pub fn session_start(ctx: &Context) -> Report {
    let payload = read_payload();
    let session_id = payload_session(&payload);
    if let (Some(id), Some(env_file)) = (&session_id, std::env::var_os("CLAUDE_ENV_FILE")) {
        let line = format!("export CLAUDE_SESSION_ID={}\n", shell_quote(id));
        let _ = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(env_file)
            .and_then(|mut file| file.write_all(line.as_bytes()));
    }
    // Only repositories set up with `wit init` get a registration, a status (and a daemon).
    if !ctx.paths.dir.is_dir() {
        return Report::nothing();
    }
    let status_ctx = match Context::new(Some(&ctx.paths.root), session_id.clone(), false) {
        Ok(status_ctx) => status_ctx,
        Err(_) => return Report::nothing(),
    };
    if let Some(session_id) = session_id {
        let harness = harness_pid(i64::from(std::os::unix::process::parent_id()), &proc_entry);
        let params = RegisterParams {
            name: AGENT_NAME.into(),
            session_id,
            pid: harness,
            lease_ms: None,
        };
        // A failed registration only costs the pulse; the status below says what is wrong.
        let _ = block_on(status_ctx.call(|client| {
            let params = params.clone();
            async move { client.register(params).await }
        }));
    }
    match block_on(super::status::status(&status_ctx)) {
        Ok(report) => report.with_code(0),
        Err(error) => Report::new(
            Value::Null,
            format!(
                "wit is set up here but unavailable: {}",
                output::error_text(&error)
            ),
        ),
    }
}

/// SessionEnd: ends the session; never starts a daemon, never prints.
pub fn session_end(ctx: &Context) -> Report {
    let Some(session_id) = payload_session(&read_payload()) else {
        return Report::nothing();
    };
    if !ctx.paths.socket.exists() {
        return Report::nothing();
    }
    let client = ctx.client().with_timeout(END_BUDGET);
    let _ = block_on(async move {
        client
            .session_end(SessionEndParams { session_id })
            .await
            .map_err(super::output::CliError::from)
    });
    Report::nothing()
}

/// `(command name, parent pid)` of a process, from `/proc/<pid>/stat`.
fn proc_entry(pid: i64) -> Option<(String, i64)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let ppid = stat
        .get(close + 1..)?
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((name, ppid))
}

/// The first process from `start` upwards that is not a shell or wrapper: the harness that
/// ran the hook. `None` when the walk finds nothing better than init.
fn harness_pid(start: i64, entry: &dyn Fn(i64) -> Option<(String, i64)>) -> Option<i64> {
    let mut pid = start;
    for _ in 0..16 {
        if pid <= 1 {
            return None;
        }
        let (name, ppid) = entry(pid)?;
        if !INTERMEDIATES.contains(&name.as_str()) {
            return Some(pid);
        }
        pid = ppid;
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn the_harness_is_the_first_ancestor_that_is_not_a_shell() {
        let table = |pid: i64| match pid {
            30 => Some(("sh".to_string(), 20)),
            20 => Some(("bash".to_string(), 10)),
            10 => Some(("claude".to_string(), 1)),
            5 => Some(("sh".to_string(), 1)),
            _ => None,
        };
        assert_eq!(harness_pid(30, &table), Some(10));
        assert_eq!(harness_pid(10, &table), Some(10));
        assert_eq!(harness_pid(5, &table), None, "only shells up to init");
        assert_eq!(harness_pid(99, &table), None);
    }

    #[test]
    fn this_process_has_an_entry() {
        let me = i64::from(std::process::id());
        let (_, ppid) = proc_entry(me).unwrap();
        assert_eq!(ppid, i64::from(std::os::unix::process::parent_id()));
    }
}
