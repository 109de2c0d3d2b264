//! The `gate` section: the edit gate as an agent's harness runs it.
//!
//! On the 169 KB generated file, with 100 live locks and 100 active intents held by other
//! sessions: `wit hook pre-edit --agent claude` end to end (process start, payload parse, the
//! RPC, the answer) for a clean edit and for one that meets a lock, p50/p99 of the processes'
//! wall time; and `edit.preflight` alone on one keep-alive connection, p50/p99. Then
//! `edit.preflight` on Python files of one-line functions from 16 KiB to 8 MiB (issues 20.3,
//! 32.5): the first call (the index parses the file), the median of the next ones and its
//! cost per KiB against the smallest file's.
//! the news hook, `wit hook post-tool --agent claude`, end to end: when nothing changed (the
//! usual case) and when other sessions declared work since the last call. Last, the gate's
//! worst case (issue 20.4): in a repository where no daemon runs and another process holds
//! `.wit/launch.lock`, and with stdin left open, the gate's wall time against its 1 s budget.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::measure::{fmt_duration, p50_p99};
use crate::net::Conn;
use crate::Bench;

/// How many locks and intents other sessions hold on the file.
const HELD: usize = 100;

/// A Claude Code PreToolUse payload editing the body of `fn_{n}` in `file`.
fn payload(root: &std::path::Path, file: &str, n: usize, session: &str) -> Vec<u8> {
    json!({
        "session_id": session,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": root.display().to_string(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {
            "file_path": root.join(file).display().to_string(),
            "old_string": format!("  return c * {n};\n"),
            "new_string": format!("  return c * {};\n", n + 1),
        },
        "tool_use_id": "toolu_bench",
    })
    .to_string()
    .into_bytes()
}

/// Wall times of `runs` gate processes fed `body`; checks each answer with `check`.
pub(crate) fn gate_runs(
    wit: &std::path::Path,
    root: &std::path::Path,
    body: &[u8],
    runs: usize,
    check: impl Fn(&str) -> bool,
) -> Result<Vec<Duration>> {
    hook_runs(wit, "pre-edit", root, body, runs, check)
}

/// Wall times of `runs` processes of `wit hook HOOK --agent claude` fed `body`; checks each
/// answer with `check`.
fn hook_runs(
    wit: &std::path::Path,
    hook: &str,
    root: &std::path::Path,
    body: &[u8],
    runs: usize,
    check: impl Fn(&str) -> bool,
) -> Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let output = hook_process(wit, hook, "claude", root, body, None)?;
        samples.push(started.elapsed());
        let stdout = String::from_utf8_lossy(&output.stdout);
        // wit's own notes ("wit: …", what the parse could not follow) may accompany a verdict.
        let stray = String::from_utf8_lossy(&output.stderr)
            .lines()
            .any(|line| !line.starts_with("wit: "));
        if !output.status.success() || stray || !check(&stdout) {
            bail!(
                "unexpected {hook} answer ({}, stderr {:?}): {stdout}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    Ok(samples)
}

/// One `wit hook HOOK --agent AGENT` process in `root` as a harness runs it, `body` on its
/// stdin, its environment without a session unless `session` names one (`WIT_SESSION`:
/// Kiro's payload names none).
pub(crate) fn hook_process(
    wit: &std::path::Path,
    hook: &str,
    agent: &str,
    root: &std::path::Path,
    body: &[u8],
    session: Option<&str>,
) -> Result<std::process::Output> {
    let mut command = Command::new(wit);
    command
        .args(["hook", hook, "--agent", agent])
        .current_dir(root)
        .env_remove("WIT_SESSION")
        .env_remove("CLAUDE_SESSION_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(session) = session {
        command.env("WIT_SESSION", session);
    }
    let mut child = command.spawn()?;
    child.stdin.take().context("no stdin")?.write_all(body)?;
    Ok(child.wait_with_output()?)
}

/// Wall times of `runs` processes of the floor program `wit-bench-ping SOCKET` (connect, one
/// ping, exit), the least a hook process can cost.
pub(crate) fn floor_runs(
    wit: &std::path::Path,
    socket: &std::path::Path,
    runs: usize,
) -> Result<Vec<Duration>> {
    let floor = wit.with_file_name("wit-bench-ping");
    if !floor.exists() {
        bail!(
            "{} not found: build it (cargo build --release --bins)",
            floor.display()
        );
    }
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let status = Command::new(&floor)
            .arg(socket)
            .stdin(Stdio::null())
            .status()?;
        samples.push(started.elapsed());
        if !status.success() {
            bail!("{} {} failed: {status}", floor.display(), socket.display());
        }
    }
    Ok(samples)
}

/// `label`'s p50 and p99 against the floor's, as ratios (targets: p50 ≤ 1.5×, p99 ≤ 2×).
fn against_floor(label: &str, samples: &mut [Duration], floor: (Duration, Duration)) -> String {
    let (p50, p99) = p50_p99(samples);
    format!(
        "{label} p50 {:.2}× p99 {:.2}×",
        p50.as_secs_f64() / floor.0.as_secs_f64().max(1e-9),
        p99.as_secs_f64() / floor.1.as_secs_f64().max(1e-9)
    )
}

/// The gate section.
pub(crate) async fn gate(b: &mut Bench, wit: &std::path::Path) -> Result<()> {
    let (_, file, _, functions) = b
        .generated
        .iter()
        .find(|(label, ..)| label == "169k")
        .cloned()
        .context("no 169 KB file")?;
    if functions < 3 * HELD {
        bail!("the 169 KB file has only {functions} functions");
    }
    for i in 1..=HELD {
        b.setup
            .call(
                "lock.acquire",
                json!({"symbolPath": format!("{file}:fn_{i}"), "sessionId": format!("gate-locker-{i}"), "ttlMs": 3_600_000}),
            )
            .await?;
        let intent = b
            .setup
            .call(
                "intent.declare",
                json!({"sessionId": format!("gate-planner-{i}"), "description": format!("plan {i}"), "files": [file], "symbols": [format!("fn_{}", HELD + i)]}),
            )
            .await?;
        let id = intent["intentId"]
            .as_str()
            .context("no intent id")?
            .to_string();
        b.setup
            .call(
                "intent.update",
                json!({"intentId": id, "sessionId": format!("gate-planner-{i}"), "status": "active"}),
            )
            .await?;
    }

    // edit.preflight alone, on a file the index knows.
    let mut conn = Conn::open(&b.socket).await?;
    let ops = b.scale(2_000, 300);
    let mut samples = Vec::with_capacity(ops);
    let clean = 3 * HELD;
    for _ in 0..ops {
        let params = json!({
            "sessionId": "gate-bench",
            "file": file,
            "edits": [{"oldText": format!("  return c * {clean};\n"), "newText": format!("  return c * {};\n", clean + 1)}],
        });
        let started = Instant::now();
        let result: Value = conn.call("edit.preflight", params).await?;
        samples.push(started.elapsed());
        if result["applies"] != true || !result["conflicts"].as_array().is_some_and(Vec::is_empty) {
            bail!("unexpected preflight: {result}");
        }
    }
    let (p50, p99) = p50_p99(&mut samples);
    println!(
        "| edit.preflight, 169 KB file, {HELD} locks + {HELD} intents of others, {ops} calls: p50 {} | p99 {} | | | | | | |",
        fmt_duration(p50),
        fmt_duration(p99)
    );

    // The whole hook, as a harness runs it.
    let runs = b.scale(200, 40);
    let root = b.root.clone();
    let wit_exe = wit.to_path_buf();
    let clean_body = payload(&root, &file, clean, "gate-bench");
    let locked_body = payload(&root, &file, HELD / 2, "gate-bench");
    let (mut allowed, mut denied) = tokio::task::spawn_blocking(move || -> Result<_> {
        // One unmeasured run records the observed intent, as an agent's first edit would.
        gate_runs(&wit_exe, &root, &clean_body, 1, |out| out.is_empty())?;
        let allowed = gate_runs(&wit_exe, &root, &clean_body, runs, |out| out.is_empty())?;
        let denied = gate_runs(&wit_exe, &root, &locked_body, runs, |out| {
            out.contains("\"permissionDecision\":\"deny\"")
        })?;
        Ok((allowed, denied))
    })
    .await??;
    many_functions(b).await?;
    let (wit_path, socket) = (wit.to_path_buf(), b.socket.clone());
    let mut floor =
        tokio::task::spawn_blocking(move || floor_runs(&wit_path, &socket, runs)).await??;
    let floor = p50_p99(&mut floor);
    println!(
        "| floor of a hook process: `wit-bench-ping` (connect, one ping, exit), {runs} processes: p50 {} p99 {} | | | | | | |",
        fmt_duration(floor.0),
        fmt_duration(floor.1)
    );
    let (a50, a99) = p50_p99(&mut allowed);
    let (d50, d99) = p50_p99(&mut denied);
    println!(
        "| `wit hook pre-edit --agent claude` end to end, {runs} processes: clean edit p50 {} p99 {} | edit of a locked symbol (deny) p50 {} p99 {} | | | | | |",
        fmt_duration(a50),
        fmt_duration(a99),
        fmt_duration(d50),
        fmt_duration(d99)
    );

    // The news hook after each tool call: nothing changed, then others' work since each call.
    let news_body = post_tool_payload(&b.root, "gate-bench");
    let (wit_path, root) = (wit.to_path_buf(), b.root.clone());
    let body = news_body.clone();
    let mut quiet = tokio::task::spawn_blocking(move || -> Result<_> {
        // The first call starts the session's cursor (and its pulse).
        hook_runs(&wit_path, "post-tool", &root, &body, 1, |_| true)?;
        hook_runs(&wit_path, "post-tool", &root, &body, runs, str::is_empty)
    })
    .await??;
    let mut busy = Vec::with_capacity(runs);
    for i in 0..runs {
        b.setup
            .call(
                "intent.declare",
                json!({"sessionId": format!("news-peer-{i}"), "description": "peer work", "files": [file], "symbols": [format!("fn_{clean}")]}),
            )
            .await?;
        let (wit_path, root, body) = (wit.to_path_buf(), b.root.clone(), news_body.clone());
        let sample = tokio::task::spawn_blocking(move || {
            hook_runs(&wit_path, "post-tool", &root, &body, 1, |_| true)
        })
        .await??;
        busy.extend(sample);
    }
    let (q50, q99) = p50_p99(&mut quiet);
    let (n50, n99) = p50_p99(&mut busy);
    println!(
        "| `wit hook post-tool --agent claude` end to end, {runs} processes: nothing changed p50 {} p99 {} | another session declared work since the last call p50 {} p99 {} | | | | | |",
        fmt_duration(q50),
        fmt_duration(q99),
        fmt_duration(n50),
        fmt_duration(n99)
    );
    println!(
        "| hooks against their floor (targets p50 ≤ 1.5×, p99 ≤ 2×): {} | {} | {} | {} | | | |",
        against_floor("pre-edit clean", &mut allowed, floor),
        against_floor("pre-edit deny", &mut denied, floor),
        against_floor("post-tool quiet", &mut quiet, floor),
        against_floor("post-tool news", &mut busy, floor)
    );

    // The gate's worst case: no daemon, and another process holds the launch lock (it is
    // starting one that never answers); then stdin left open with half a payload.
    let wit_path = wit.to_path_buf();
    let (locked, open) = tokio::task::spawn_blocking(move || worst_case(&wit_path)).await??;
    println!(
        "| gate worst case, budget 1 s (median of 3): launch lock held by another process {} | stdin left open {} | | | | | |",
        fmt_duration(locked),
        fmt_duration(open)
    );
    Ok(())
}

/// `edit.preflight` of one function in the middle of files of one-line functions, from
/// 16 KiB to just under the 8 MiB index limit: the cost must grow with the file, not with its
/// square (issue 20.3, docs/protocol.md 13.6), and must not jump once the analysis outgrows the
/// parse cache (issue 32.5: at 128k functions it was decoded again on every call). Each row
/// gives the p50 after the first call and its cost per KiB, whose ratio to the smallest
/// file's is the cliff (1.0: linear); and the daemon's RSS after the row.
async fn many_functions(b: &mut Bench) -> Result<()> {
    let sizes: &[usize] = if b.quick {
        &[16 << 10, 256 << 10, 1 << 20]
    } else {
        &[
            16 << 10,
            64 << 10,
            256 << 10,
            1 << 20,
            2 << 20,
            4 << 20,
            (8 << 20) - (64 << 10),
        ]
    };
    let mut conn = Conn::open(&b.socket).await?;
    let mut base_per_kib = None;
    for &bytes in sizes {
        let mut text = String::with_capacity(bytes + 64);
        let mut count = 0;
        while text.len() + 32 < bytes {
            text.push_str(&format!("def f{count}(): return {count}\n"));
            count += 1;
        }
        let file = format!("many_{count}.py");
        std::fs::write(b.root.join(&file), &text)?;
        let middle = count / 2;
        let params = json!({
            "sessionId": "many-bench",
            "file": file,
            "edits": [{"oldText": format!("def f{middle}(): return {middle}\n"), "newText": format!("def f{middle}(): return -{middle}\n")}],
        });
        let started = Instant::now();
        let first: Value = conn.call("edit.preflight", params.clone()).await?;
        let first_time = started.elapsed();
        if first["symbols"] == json!([]) {
            // Parsed past its budget (a loaded machine): no symbols, nothing to time.
            println!(
                "| edit.preflight, {count} one-line Python functions ({} KiB): first call {} found no symbols (the parse ran past its budget) | | | | | | |",
                text.len() / 1024,
                fmt_duration(first_time)
            );
            let _ = std::fs::remove_file(b.root.join(&file));
            continue;
        }
        if first["symbols"] != json!([format!("{file}:f{middle}")]) {
            bail!("unexpected preflight: {first}");
        }
        let mut samples = Vec::new();
        for _ in 0..b.scale(9, 5) {
            let started = Instant::now();
            let _: Value = conn.call("edit.preflight", params.clone()).await?;
            samples.push(started.elapsed());
        }
        let (p50, _) = p50_p99(&mut samples);
        let kib = text.len() as f64 / 1024.0;
        let per_kib = p50.as_secs_f64() * 1e6 / kib;
        let base = *base_per_kib.get_or_insert(per_kib);
        println!(
            "| edit.preflight, {count} one-line Python functions ({:.0} KiB): first call (parse) {} | then p50 {} | {:.2} µs/KiB, ×{:.2} the 16 KiB file's (1.0: linear) | daemon RSS {} KiB | | | |",
            kib,
            fmt_duration(first_time),
            fmt_duration(p50),
            per_kib,
            per_kib / base,
            b.pid.and_then(crate::measure::rss_kib).unwrap_or(0)
        );
        let _ = std::fs::remove_file(b.root.join(&file));
    }
    Ok(())
}

/// A Claude Code PostToolUse payload of `session`.
fn post_tool_payload(root: &std::path::Path, session: &str) -> Vec<u8> {
    json!({
        "session_id": session,
        "cwd": root.display().to_string(),
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": root.join("README.md").display().to_string()},
        "tool_response": {},
    })
    .to_string()
    .into_bytes()
}

/// The gate's wall time (median of 3) in a fresh repository with no daemon while another
/// process holds `.wit/launch.lock`, and with stdin left open after half a payload.
fn worst_case(wit: &std::path::Path) -> Result<(Duration, Duration)> {
    let dir = std::env::temp_dir().join(format!("witgate-{}", std::process::id()));
    let root = dir.as_path();
    std::fs::create_dir_all(root.join(".git"))?;
    std::fs::create_dir_all(root.join(".wit"))?;
    std::fs::write(
        root.join("a.ts"),
        "export function f() {\n  return c * 1;\n}\n",
    )?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(".wit/launch.lock"))?;
    lock.lock()?;
    let body = json!({
        "session_id": "worst",
        "cwd": root.display().to_string(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": root.join("a.ts").display().to_string(), "old_string": "c * 1", "new_string": "c * 2"},
    })
    .to_string()
    .into_bytes();
    let run = |payload: &[u8], close: bool| -> Result<Duration> {
        let started = Instant::now();
        let mut child = Command::new(wit)
            .args(["hook", "pre-edit", "--agent", "claude"])
            .current_dir(root)
            .env_remove("WIT_GATE_TIMEOUT_MS")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdin = child.stdin.take().context("no stdin")?;
        stdin.write_all(payload)?;
        let kept = (!close).then_some(stdin);
        child.wait()?;
        drop(kept);
        Ok(started.elapsed())
    };
    let median = |mut samples: Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2]
    };
    let locked = median((0..3).map(|_| run(&body, true)).collect::<Result<_>>()?);
    drop(lock);
    let half = &body[..body.len() / 2];
    let open = median((0..3).map(|_| run(half, false)).collect::<Result<_>>()?);
    let _ = std::fs::remove_dir_all(&dir);
    Ok((locked, open))
}
