//! `wit-bench window-gate`: the gate of one tool call with its window (issue 34 target 2,
//! docs/protocol.md 15.2): `wit hook pre-edit --agent claude` (the shell gate or the edit
//! gate, which opens the call's window with `work.begin`) and `wit hook post-tool --agent
//! claude` (which closes it with `work.end`, then tells the news), each end to end as a
//! harness runs it (process start, payload on stdin, the RPCs, the answer), beside a trivial
//! process in the same run.
//!
//! ```text
//! wit-bench window-gate [--runs N] [--file src/medium.ts|src/small.ts] [--think-ms MS]
//! ```
//!
//! A generated, committed TypeScript repository and one daemon watching it, its index
//! settled. Each of `--runs` rounds runs, one after the other: the floor `/bin/true` (and
//! `wit-bench-ping`, connect + one ping + exit, when it is built); a read-only call
//! (`ls src`: pre-edit, post-tool); and a call that writes (`sed -i` of one function's return
//! line, another function each round: pre-edit, the write, post-tool, whose `work.end` finds
//! the change); and an `Edit` of another line of that function (pre-edit, which records the
//! edit, the write, post-tool). Reported: p50 and p99 of each process, and each p50/p99
//! against the floor's. Last, whether the written lines are the session's observed work (not
//! unowned).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::attribution::wait_index_complete;
use crate::fixtures::{Daemon, WorkDir};
use crate::measure::{fmt_duration, p50_p99};
use crate::net::Conn;
use crate::worktree_watch::generated_repository;

/// `wit-bench window-gate` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct WindowGateArgs {
    /// Rounds (each: the floors, a read-only call, a call that writes).
    #[arg(long, default_value_t = 200)]
    pub runs: usize,
    /// The generated file the writing calls change (`src/medium.ts`, 169 KB, or
    /// `src/small.ts`, 16 KB: at most one round per function).
    #[arg(long, value_name = "FILE", default_value = "src/medium.ts")]
    pub file: String,
    /// A pause after each call, as an agent's turn between tool calls (0: back to back,
    /// which leaves the daemon no time of its own between calls).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub think_ms: u64,
}

/// The harness session of the run.
const SESSION: &str = "bench-gate";

/// The process samples of one run.
#[derive(Default)]
struct Samples {
    /// `/bin/true`.
    truth: Vec<Duration>,
    /// `wit-bench-ping` (empty when it is not built).
    ping: Vec<Duration>,
    /// `wit hook pre-edit` of `ls src`.
    pre_read: Vec<Duration>,
    /// `wit hook post-tool` of `ls src`.
    post_read: Vec<Duration>,
    /// `wit hook pre-edit` of `sed -i`.
    pre_write: Vec<Duration>,
    /// `wit hook post-tool` of `sed -i`, its change on disk.
    post_write: Vec<Duration>,
    /// `wit hook pre-edit` of an `Edit` (checked and recorded).
    pre_edit: Vec<Duration>,
    /// `wit hook post-tool` of that `Edit`, its change on disk.
    post_edit: Vec<Duration>,
    /// Hook runs that printed something (context, news).
    spoke: usize,
}

/// Runs the measurement.
pub(crate) async fn window_gate(wit: &Path, args: &WindowGateArgs) -> Result<()> {
    let work = WorkDir::new()?;
    let root = work.path().join("r");
    generated_repository(&root)?;
    let root = std::fs::canonicalize(&root)?;
    let (daemon, _) = Daemon::start(wit, &root).await?;
    let settled = wait_index_complete(&root, Duration::from_secs(120)).await?;
    let file = args.file.clone();
    let text = std::fs::read_to_string(root.join(&file))?;
    let functions = text.matches("export function ").count();
    let runs = args.runs.min(functions);
    println!(
        "window-gate: {runs} rounds in {} (index settled after {}); session {SESSION}; {} ms between a call and the next write",
        root.display(),
        fmt_duration(settled),
        args.think_ms
    );
    let (wit_path, socket, dir) = (wit.to_path_buf(), daemon.socket.clone(), root.clone());
    let written = file.clone();
    let think = Duration::from_millis(args.think_ms);
    let mut samples = tokio::task::spawn_blocking(move || {
        rounds(&wit_path, &dir, &socket, &written, runs, think)
    })
    .await??;

    let floor = p50_p99(&mut samples.truth);
    println!(
        "floor `/bin/true`: p50 {}  p99 {}",
        fmt_duration(floor.0),
        fmt_duration(floor.1)
    );
    if !samples.ping.is_empty() {
        let (p50, p99) = p50_p99(&mut samples.ping);
        println!(
            "floor `wit-bench-ping` (connect, one ping, exit): p50 {}  p99 {}  ({})",
            fmt_duration(p50),
            fmt_duration(p99),
            ratio(p50, p99, floor)
        );
    }
    for (label, set) in [
        ("pre-edit, `ls src` (read-only)", &mut samples.pre_read),
        ("post-tool, `ls src`", &mut samples.post_read),
        ("pre-edit, `sed -i` of one line", &mut samples.pre_write),
        (
            "post-tool, `sed -i` (the change on disk)",
            &mut samples.post_write,
        ),
        ("pre-edit, `Edit` of one line", &mut samples.pre_edit),
        (
            "post-tool, `Edit` (the change on disk)",
            &mut samples.post_edit,
        ),
    ] {
        let (p50, p99) = p50_p99(set);
        println!(
            "{label}: p50 {}  p99 {}  ({}; target p50 < 5 ms)",
            fmt_duration(p50),
            fmt_duration(p99),
            ratio(p50, p99, floor)
        );
    }
    println!(
        "hook runs that printed context or news: {} of {}",
        samples.spoke,
        6 * runs
    );
    check_attributed(&daemon, &root, &file, runs).await
}

/// `p50`'s and `p99`'s ratio to the floor's.
fn ratio(p50: Duration, p99: Duration, floor: (Duration, Duration)) -> String {
    format!(
        "{:.1}× / {:.1}× the floor",
        p50.as_secs_f64() / floor.0.as_secs_f64().max(1e-9),
        p99.as_secs_f64() / floor.1.as_secs_f64().max(1e-9)
    )
}

/// The rounds, one process after the other.
fn rounds(
    wit: &Path,
    root: &Path,
    socket: &Path,
    file: &str,
    runs: usize,
    think: Duration,
) -> Result<Samples> {
    let ping = wit.with_file_name("wit-bench-ping");
    let ping = ping.exists().then_some(ping);
    let read = bash_call(root, "ls src");
    let mut samples = Samples::default();
    for n in 0..runs {
        samples.truth.push(floor_run(Command::new("/bin/true"))?);
        if let Some(ping) = &ping {
            let mut command = Command::new(ping);
            command.arg(socket);
            samples.ping.push(floor_run(command)?);
        }
        let (pre, spoke) = hook_run(wit, "pre-edit", root, &read.0)?;
        samples.pre_read.push(pre);
        samples.spoke += usize::from(spoke);
        let (post, spoke) = hook_run(wit, "post-tool", root, &read.1)?;
        samples.post_read.push(post);
        samples.spoke += usize::from(spoke);

        let sed = format!("sed -i 's/^  return c \\* {n};$/  return c * -{n};/' {file}");
        let written = WritingCall {
            old: format!("  return c * {n};\n"),
            new: format!("  return c * -{n};\n"),
            payloads: bash_call(root, &sed),
        };
        let (pre, post) = written.run(wit, root, file, &mut samples.spoke)?;
        samples.pre_write.push(pre);
        samples.post_write.push(post);
        std::thread::sleep(think);

        let (old, new) = (
            format!("    return fn_{}(c - 1, b);\n", n + 1),
            format!("    return fn_{}(c - 2, b);\n", n + 1),
        );
        let edited = WritingCall {
            payloads: edit_call(root, &root.join(file), &old, &new),
            old,
            new,
        };
        let (pre, post) = edited.run(wit, root, file, &mut samples.spoke)?;
        samples.pre_edit.push(pre);
        samples.post_edit.push(post);
        std::thread::sleep(think);
    }
    Ok(samples)
}

/// A tool call that writes one line of a file: its hooks' payloads and the line it changes.
struct WritingCall {
    old: String,
    new: String,
    /// The PreToolUse and PostToolUse payloads.
    payloads: (Vec<u8>, Vec<u8>),
}

impl WritingCall {
    /// The pre-edit hook, the write (as the tool makes it), the post-tool hook: the two
    /// hooks' times; `spoke` counts the hooks that printed something.
    fn run(
        &self,
        wit: &Path,
        root: &Path,
        file: &str,
        spoke: &mut usize,
    ) -> Result<(Duration, Duration)> {
        let (pre, said) = hook_run(wit, "pre-edit", root, &self.payloads.0)?;
        *spoke += usize::from(said);
        let path = root.join(file);
        let text = std::fs::read_to_string(&path)?;
        if !text.contains(&self.old) {
            bail!("{file} has no line {:?}", self.old);
        }
        std::fs::write(&path, text.replacen(&self.old, &self.new, 1))?;
        let (post, said) = hook_run(wit, "post-tool", root, &self.payloads.1)?;
        *spoke += usize::from(said);
        Ok((pre, post))
    }
}

/// Claude Code's PreToolUse and PostToolUse payloads of a Bash call running `command`.
fn bash_call(root: &Path, command: &str) -> (Vec<u8>, Vec<u8>) {
    claude_call(
        root,
        "Bash",
        json!({"command": command, "description": "bench"}),
        json!({"stdout": "", "stderr": "", "interrupted": false, "isImage": false}),
    )
}

/// Claude Code's PreToolUse and PostToolUse payloads of an `Edit` of `path` replacing `old`
/// by `new`, in the repository at `root`.
fn edit_call(root: &Path, path: &Path, old: &str, new: &str) -> (Vec<u8>, Vec<u8>) {
    let path = path.display().to_string();
    claude_call(
        root,
        "Edit",
        json!({"file_path": path, "old_string": old, "new_string": new}),
        json!({"filePath": path, "oldString": old, "newString": new}),
    )
}

/// Claude Code's PreToolUse and PostToolUse payloads of a `tool` call with `input`, in the
/// repository at `root`; the post-tool payload carries `response`.
fn claude_call(root: &Path, tool: &str, input: Value, response: Value) -> (Vec<u8>, Vec<u8>) {
    let mut call = json!({
        "session_id": SESSION,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": root.display().to_string(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "toolu_bench",
    });
    let pre = call.to_string().into_bytes();
    call["hook_event_name"] = json!("PostToolUse");
    call["tool_response"] = response;
    (pre, call.to_string().into_bytes())
}

/// The wall time of one floor process (stdin closed, output discarded); fails when it fails.
fn floor_run(mut command: Command) -> Result<Duration> {
    let started = Instant::now();
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    let elapsed = started.elapsed();
    if !status.success() {
        bail!("{command:?} failed: {status}");
    }
    Ok(elapsed)
}

/// The wall time of one `wit hook HOOK --agent claude` fed `body`, and whether it printed
/// anything; fails when it fails, writes to stderr, or the gate denies or asks.
fn hook_run(wit: &Path, hook: &str, root: &Path, body: &[u8]) -> Result<(Duration, bool)> {
    let started = Instant::now();
    let mut child = Command::new(wit)
        .args(["hook", hook, "--agent", "claude"])
        .current_dir(root)
        .env_remove("WIT_SESSION")
        .env_remove("CLAUDE_SESSION_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child.stdin.take().context("no stdin")?.write_all(body)?;
    let output = child.wait_with_output()?;
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success()
        || !output.stderr.is_empty()
        || stdout.contains("\"permissionDecision\":\"deny\"")
        || stdout.contains("\"permissionDecision\":\"ask\"")
    {
        bail!(
            "unexpected {hook} answer: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok((elapsed, !stdout.trim().is_empty()))
}

/// Whether the written lines are the session's observed work: the regions of its intents on
/// the file against the lines written, and any unowned work on it.
async fn check_attributed(daemon: &Daemon, root: &Path, file: &str, runs: usize) -> Result<()> {
    let mut conn = Conn::open(&daemon.socket).await?;
    // The last write may still be on its way (the post-tool hook does not wait for it).
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let intents = conn.call("intent.query", json!({"file": file})).await?;
    let (mut mine, mut unowned) = (0i64, 0i64);
    for intent in intents.as_array().map(Vec::as_slice).unwrap_or_default() {
        let lines: i64 = intent["regions"]
            .as_array()
            .map(|regions| regions.iter().map(region_lines).sum())
            .unwrap_or(0);
        match intent["sessionId"].as_str() {
            Some(SESSION) => mine += lines,
            Some(other) if other.starts_with("unowned:") => unowned += lines,
            _ => {}
        }
    }
    println!(
        "lines of {file} written by the {runs} `sed -i` calls and the {runs} edits: {SESSION}'s observed intent covers {mine}, unowned work {unowned} (expected {} and 0) in {}",
        2 * runs,
        root.display()
    );
    Ok(())
}

/// How many lines a `{startLine, endLine}` region spans.
fn region_lines(region: &Value) -> i64 {
    match (region["startLine"].as_i64(), region["endLine"].as_i64()) {
        (Some(start), Some(end)) if end >= start => end - start + 1,
        _ => 0,
    }
}
