//! The Claude Code plugin's session hooks (`wit hook claude-session-start|end`).
//!
//! SessionStart makes later `wit` calls of the Claude session use its id, registers the
//! session with the pid of the Claude process (so a crashed Claude loses its locks within
//! seconds, docs/protocol.md 7) and prints `wit status` as context. SessionEnd ends the session.
//! Both never fail and never get in the harness's way: every problem leaves them silent.

use std::fs;
use std::io::{IsTerminal, Read, Write};
use std::time::Duration;

use serde_json::Value;

use super::context::{block_on, Context};
use super::output::{self, Report};
use crate::protocol::{RegisterParams, SessionEndParams};
use crate::safegit::git::shell_quote;

/// The name Claude sessions register under.
const AGENT_NAME: &str = "claude-code";

/// How long SessionEnd waits for the daemon.
const END_BUDGET: Duration = Duration::from_millis(1500);

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
        let harness = crate::harness::harness_pid();
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
