//! `wit-bench harness-hooks`: `wit hook pre-edit` end to end with every harness's edit payload
//! (the fixtures the black-box tests use, `tests/fixtures/hooks/`), beside the
//! `wit-bench-ping` floor measured in the same run (issue 30: p50 < 5 ms and p99 < 10 ms for
//! every harness's payload; issue 32: ≤ 1.5× / 2× the floor).
//!
//! Each payload is first checked to be read as an edit: with another agent's lock on the
//! function it edits, the hook must refuse it (an unread payload is let through at once and
//! would time nothing). Then `--runs` processes with the lock's own session, each a clean
//! edit: the verdict, the recorded edit and the call's window, as a harness runs it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::fixtures::{Daemon, WorkDir};
use crate::measure::{fmt_duration, p50_p99};
use crate::net::Conn;
use crate::safegit::git;

/// `wit-bench harness-hooks`.
#[derive(Debug, clap::Args)]
pub(crate) struct HarnessHooksArgs {
    /// Hook processes timed per payload (and for the floor).
    #[arg(long, default_value_t = 100)]
    runs: usize,
}

/// The file every fixture edits, as the black-box tests commit it.
const AUTH_TS: &str =
    "export function validateToken(token: string): boolean {\n  return token.length > 3;\n}\n";

/// Each harness and the fixture of its edit tool.
const PAYLOADS: &[(&str, &str)] = &[
    ("claude", "claude/edit-body.json"),
    ("codex", "codex/apply_patch.json"),
    ("gemini", "gemini/replace.json"),
    ("cursor", "cursor/edit.json"),
    ("copilot", "copilot/edit.json"),
    ("opencode", "opencode/edit.json"),
    ("cline", "cline/replace_in_file.json"),
    ("windsurf", "windsurf/pre_write_code.json"),
    ("kiro", "kiro/fs_write.json"),
];

/// The session holding the lock (and running the timed, clean edits).
const HOLDER: &str = "bench-holder";
/// The session whose edit must be refused.
const OTHER: &str = "bench-other";

/// Runs the section.
pub(crate) async fn harness_hooks(wit: &Path, args: &HarnessHooksArgs) -> Result<()> {
    let work = WorkDir::new()?;
    let root = work.path().join("r");
    std::fs::create_dir_all(root.join("src"))?;
    git(&root, &["init", "-q"])?;
    std::fs::write(root.join("src/auth.ts"), AUTH_TS)?;
    git(&root, &["add", "-A"])?;
    git(&root, &["commit", "-q", "-m", "init"])?;
    let root = std::fs::canonicalize(&root)?;
    let (daemon, _) = Daemon::start(wit, &root).await?;
    // The holder is another agent than the hook processes (this bench is their harness): its
    // own live process.
    let holder = Sleeper::start()?;
    let mut conn = Conn::open(&daemon.socket).await?;
    conn.call(
        "register",
        json!({"name": "holder", "sessionId": HOLDER, "pid": holder.pid()}),
    )
    .await?;
    conn.call(
        "lock.acquire",
        json!({"symbolPath": "src/auth.ts:validateToken", "sessionId": HOLDER, "ttlMs": 3_600_000}),
    )
    .await?;
    let meter = CostMeter::new(daemon.pid());
    let mark = meter.mark();
    let mut floor = crate::gate::floor_runs(wit, &daemon.socket, args.runs)?;
    let floor_cost = meter.since(&mark, args.runs);
    let (f50, f99) = p50_p99(&mut floor);
    println!(
        "floor: `wit-bench-ping` (connect, one ping, exit), {} processes: p50 {} p99 {}; {floor_cost}",
        args.runs,
        fmt_duration(f50),
        fmt_duration(f99)
    );
    println!("{}", hook_order_coverage(wit));
    println!("| harness | payload | p50 | p99 | p50 / floor | p99 / floor | per process |");
    println!("|---|---|---:|---:|---:|---:|---|");
    for (agent, name) in PAYLOADS {
        let denied = run_hook(wit, &root, agent, &fixture(name, &root, OTHER)?, OTHER)?;
        if !refused(agent, &denied) {
            bail!(
                "{agent} {name}: not refused with another agent's lock ({}): {} {}",
                denied.status,
                String::from_utf8_lossy(&denied.stdout),
                String::from_utf8_lossy(&denied.stderr)
            );
        }
        let payload = fixture(name, &root, HOLDER)?;
        let mut samples = Vec::with_capacity(args.runs);
        let mark = meter.mark();
        for _ in 0..args.runs {
            let started = Instant::now();
            let out = run_hook(wit, &root, agent, &payload, HOLDER)?;
            samples.push(started.elapsed());
            if !out.status.success() || refused(agent, &out) {
                bail!(
                    "{agent} {name}: the lock's own session was not let through: {}",
                    String::from_utf8_lossy(&out.stdout)
                );
            }
        }
        let cost = meter.since(&mark, args.runs);
        let (p50, p99) = p50_p99(&mut samples);
        println!(
            "| {agent} | {name} | {} | {} | {:.2}× | {:.2}× | {cost} |",
            fmt_duration(p50),
            fmt_duration(p99),
            p50.as_secs_f64() / f50.as_secs_f64().max(1e-9),
            p99.as_secs_f64() / f99.as_secs_f64().max(1e-9)
        );
    }
    drop(daemon);
    Ok(())
}

/// Where a hook process's time goes, per process of a loop: the daemon's CPU (its threads'
/// `schedstat`), the processes' own CPU and their minor page faults (this bench's waited-for
/// children: the loop waits for each process).
struct CostMeter {
    daemon: u32,
}

/// The meter's readings at the start of a loop.
struct CostMark {
    daemon: Duration,
    own: Duration,
    faults: u64,
}

impl CostMeter {
    fn new(daemon: u32) -> Self {
        Self { daemon }
    }

    fn mark(&self) -> CostMark {
        let daemon = wit::platform::measure::cpu_time_of_threads(self.daemon).unwrap_or_default();
        let (own, faults) =
            wit::platform::measure::waited_children_usage(std::process::id()).unwrap_or_default();
        CostMark {
            daemon,
            own,
            faults,
        }
    }

    /// Per process since `mark`, over `runs` processes.
    fn since(&self, mark: &CostMark, runs: usize) -> String {
        let now = self.mark();
        let runs = u32::try_from(runs.max(1)).unwrap_or(u32::MAX);
        // The children's CPU comes in clock ticks: over `runs` processes, one tick each way.
        let tick = Duration::from_secs(1)
            / u32::try_from(wit::platform::measure::clock_ticks())
                .unwrap_or(100)
                .max(1);
        format!(
            "daemon CPU {} / own CPU {} (±{}) / {} page faults",
            fmt_duration(now.daemon.saturating_sub(mark.daemon) / runs),
            fmt_duration(now.own.saturating_sub(mark.own) / runs),
            fmt_duration(tick / runs),
            now.faults.saturating_sub(mark.faults) / u64::from(runs)
        )
    }
}

/// A fixture with its placeholders filled in.
fn fixture(name: &str, root: &Path, session: &str) -> Result<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    Ok(text
        .replace("{{ROOT}}", &root.display().to_string())
        .replace("{{SESSION}}", session))
}

/// How much of `link/hook-order.txt` (the hook's functions, laid out together by the linker:
/// `scripts/hook-order`, build.rs) `wit` still has: a list gone stale with the code lays out
/// less of the hook path together, and the hook maps more pages of code.
fn hook_order_coverage(wit: &Path) -> String {
    let list = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("link/hook-order.txt");
    let Ok(list) = std::fs::read_to_string(&list) else {
        return "hook order list: none (link/hook-order.txt)".to_owned();
    };
    let Ok(symbols) = Command::new("nm").arg(wit).output() else {
        return "hook order list: not checked (no `nm`)".to_owned();
    };
    // Symbol names are ASCII (Rust's are mangled).
    let symbols = String::from_utf8(symbols.stdout).unwrap_or_default();
    let present: std::collections::HashSet<&str> = symbols
        .lines()
        .filter_map(|line| line.split_whitespace().last())
        .collect();
    let names: Vec<&str> = list.lines().filter(|name| !name.is_empty()).collect();
    let found = names.iter().filter(|name| present.contains(*name)).count();
    format!(
        "hook order list: {found} of its {} functions are in this `wit` (the rest are laid out as usual; `scripts/hook-order` renews it)",
        names.len()
    )
}

/// One hook process, as the harness runs it (Kiro's payload names no session: the agent's
/// `WIT_SESSION` does; the others' name it, and the same value is harmless).
fn run_hook(wit: &Path, root: &Path, agent: &str, payload: &str, session: &str) -> Result<Output> {
    crate::gate::hook_process(
        wit,
        "pre-edit",
        agent,
        root,
        payload.as_bytes(),
        Some(session),
    )
}

/// Whether the hook refused the call, in its harness's way.
fn refused(agent: &str, out: &Output) -> bool {
    let stdout = String::from_utf8_lossy(&out.stdout);
    match agent {
        "windsurf" | "kiro" => out.status.code() == Some(2),
        "cline" => stdout.contains("\"cancel\":true"),
        "cursor" => stdout.contains("\"permission\":\"deny\""),
        _ => stdout.contains("deny"),
    }
}

/// A live process standing in for another agent's harness; killed on drop.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Result<Sleeper> {
        Ok(Sleeper(
            Command::new("sleep")
                .arg("3600")
                .stdin(Stdio::null())
                .spawn()?,
        ))
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
