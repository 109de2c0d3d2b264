//! `wit-bench`: end-to-end benchmarks of a real `wit` daemon over its Unix socket, next to the
//! machine's floor (a minimal hyper server answering the same ping, one SQLite WAL commit, one
//! tree-sitter parse).
//!
//! ```text
//! cargo run --release --bin wit-bench -- [--quick] [--wit PATH] [--only SECTION,...]
//! ```
//!
//! It creates a temporary repository with generated TypeScript files (16 KB, 169 KB, 1.7 MB),
//! starts `wit daemon run` on it (the `wit` binary next to this one, or `--wit`), and drives it
//! with keep-alive HTTP/1.1 connections at 1 and 16 concurrent clients. Each line reports
//! ops/s, p50/p99 latency, the daemon's CPU time per operation (from `/proc/<pid>/stat`) and
//! the ratio of ops/s to the floor's ping. `--quick` runs fewer operations and skips the
//! 10,000-intent and 1.7 MB cases.
//!
//! Modules: [`net`] (the connection), [`measure`] (workloads and the table), [`fixtures`]
//! (generated sources, the daemon under test), [`floors`], [`sections`] (wave 1),
//! [`pulse`] (sessions, waits and events), [`gate`] (the edit gate: `wit hook pre-edit` end
//! to end and `edit.preflight`), [`cli_timings`], [`mcp_timings`] (`wit mcp` over stdio),
//! [`index`] (the code index on a checkout: `--repo PATH`, or on a generated repository:
//! `--synthetic MB [--synthetic-dir PATH]`, see [`synthetic`]; these run the index section
//! alone, `--runs` cold/warm pairs), [`store`] (daemons on one PostgreSQL database:
//! `--store URL`, run alone), [`replay`] (`wit-bench replay --data PAIRS`: real pairs of
//! patches replayed as two agents, predictors scored against git's merge; run alone),
//! [`worktree_watch`] (`wit-bench worktree-watch`: a change saved in one worktree seen from
//! another; run alone), [`worktrees`] (`wit-bench worktrees --index-repo PATH
//! --forecast-repo PATH`: one daemon serving several worktrees of real checkouts, issue 24;
//! run alone), and issue 34's owners targets, each run alone: [`attribution`] (`wit-bench
//! attribution`: a shell call's change in its session's observed intent, `work.end`'s
//! `changed`), [`window_gate`] (`wit-bench window-gate`: the hooks of a shell call with its
//! window, against a trivial process), [`watch_idle`] (`wit-bench watch-idle --repo PATH`:
//! the watcher's idle CPU and inotify watches on a real tree).

mod attribution;
mod cli_timings;
mod fixtures;
mod floors;
mod gate;
mod harness_hooks;
mod index;
mod mcp_timings;
mod measure;
mod net;
mod pulse;
mod replay;
mod replay_data;
mod replay_edits;
mod replay_score;
mod replay_truth;
mod replay_worktrees;
mod restart;
mod safegit;
mod sections;
mod store;
mod synthetic;
mod watch_idle;
mod window_gate;
mod worktree_add;
mod worktree_watch;
mod worktrees;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use serde_json::json;

use fixtures::{generated_ts, Daemon, WorkDir};
use floors::{sqlite_commit_floor, FloorServer};
use measure::{cpu_time, fmt_duration, measure, rss_kib, MakeOp, Report};
use net::{ping_body, Conn};

/// The sections `--only` can pick, in the order they run.
const SECTIONS: &[&str] = &[
    "ping",
    "register",
    "locks",
    "intents",
    "contracts",
    "isolation",
    "small",
    "waits",
    "events",
    "reap",
    "gate",
    "cli",
    "mcp",
    "safegit",
    "restart",
];

/// End-to-end benchmarks of a real wit daemon.
#[derive(Debug, Parser)]
#[command(name = "wit-bench")]
struct Options {
    #[command(subcommand)]
    command: Option<Subcommand>,
    /// Fewer operations; skips the 10,000-intent, 1.7 MB and 200-file cases.
    #[arg(long)]
    quick: bool,
    /// The `wit` binary to benchmark (default: the one next to this binary).
    #[arg(long, value_name = "PATH")]
    wit: Option<PathBuf>,
    /// Run only these sections (comma-separated).
    #[arg(long, value_name = "SECTION,...", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(SECTIONS))]
    only: Vec<String>,
    /// Run only the index section, on this checkout (cold build, warm restart, RSS, first
    /// caller-aware acquire, steady-state p50s).
    #[arg(long, value_name = "PATH")]
    repo: Option<PathBuf>,
    /// Run only the index section, on a generated repository of about this many MB of
    /// mixed-language source (kept in `--synthetic-dir`, else a scratch directory).
    #[arg(long, value_name = "MB")]
    synthetic: Option<u64>,
    /// Where `--synthetic` writes (and reuses) the generated repository.
    #[arg(long, value_name = "PATH")]
    synthetic_dir: Option<PathBuf>,
    /// Cold build / warm restart pairs of the index section (the table gives medians).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Run only the shared-store section, against this PostgreSQL URL (two daemons on one
    /// fresh project, and an embedded daemon beside them for the ratio).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
}

/// Benchmarks run on their own rather than as sections.
#[derive(Debug, clap::Subcommand)]
enum Subcommand {
    /// Replays real pairs of patches (scripts/replay/mine.py) as two agents through one
    /// daemon and scores wit's predictions against git's merge.
    Replay(replay::ReplayArgs),
    /// How soon a change saved in one worktree is seen as observed work from another
    /// (docs/protocol.md 14.4), with no hook in between.
    WorktreeWatch(worktree_watch::WatchArgs),
    /// Worktrees added while the daemon runs keep no directory without a watch (issue 35).
    WorktreeAdd(worktree_add::AddArgs),
    /// One daemon serving several worktrees of real checkouts (issue 24): the index's time,
    /// size and memory per added worktree, and `worktree.forecast`'s latency.
    Worktrees(worktrees::WorktreesArgs),
    /// How soon a shell call's change is its session's observed work, and whether
    /// `work.end` right after the write names it (issue 34).
    Attribution(attribution::AttributionArgs),
    /// `wit hook pre-edit` and `wit hook post-tool` of a shell call with its window, end to
    /// end, beside a trivial process (issue 34).
    WindowGate(window_gate::WindowGateArgs),
    /// `wit hook pre-edit` end to end with every harness's edit payload, beside the
    /// `wit-bench-ping` floor (issue 30).
    HarnessHooks(harness_hooks::HarnessHooksArgs),
    /// The tree watcher idle on a real checkout: CPU, inotify instances and watches
    /// (issue 34).
    WatchIdle(watch_idle::WatchIdleArgs),
    /// The floor server alone, on SOCKET, until killed (the suite runs it as a child process
    /// to measure its CPU time per request beside the daemon's).
    #[command(hide = true)]
    FloorServer {
        /// The Unix socket to listen on.
        socket: PathBuf,
    },
}

impl Options {
    /// Whether the section `name` runs.
    fn wants(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name)
    }
}

/// What every section shares: the bench repository and its settled daemon.
pub(crate) struct Bench {
    /// `--quick`.
    pub quick: bool,
    /// The bench repository.
    pub root: PathBuf,
    /// `(label, relative path, text, functions)` of each generated file.
    pub generated: Vec<(String, String, String, usize)>,
    /// The daemon's socket and pid.
    pub socket: PathBuf,
    pub pid: Option<u32>,
    /// A connection for set-up calls.
    pub setup: Conn,
    /// The table the rows go to.
    pub report: Report,
    /// The floor server, kept running for the rows measured beside it.
    pub floor: FloorServer,
    /// How many pings a ping row sends.
    pub ping_ops: usize,
}

impl Bench {
    /// `full` operations, or `small` with `--quick`.
    pub fn scale(&self, full: usize, small: usize) -> usize {
        if self.quick {
            small
        } else {
            full
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let options = Options::parse();
    // The floor server (this binary, run by the ping section) measures no `wit`.
    if let Some(Subcommand::FloorServer { socket }) = &options.command {
        return floors::serve_floor(socket).await;
    }
    let wit = match &options.wit {
        Some(wit) => wit.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("the bench binary has no directory")?
            .join("wit"),
    };
    if !wit.exists() {
        bail!(
            "{} not found: build it first (cargo build --release --bin wit) or pass --wit",
            wit.display()
        );
    }
    match &options.command {
        Some(Subcommand::Replay(args)) => return replay::replay(&wit, args).await,
        Some(Subcommand::WorktreeWatch(args)) => {
            return worktree_watch::worktree_watch(&wit, args).await
        }
        Some(Subcommand::WorktreeAdd(args)) => return worktree_add::worktree_add(&wit, args).await,
        Some(Subcommand::Worktrees(args)) => {
            print_header(false, &wit);
            return worktrees::worktrees(&wit, args).await;
        }
        Some(Subcommand::Attribution(args)) => return attribution::attribution(&wit, args).await,
        Some(Subcommand::WindowGate(args)) => return window_gate::window_gate(&wit, args).await,
        Some(Subcommand::HarnessHooks(args)) => {
            return harness_hooks::harness_hooks(&wit, args).await
        }
        Some(Subcommand::WatchIdle(args)) => return watch_idle::watch_idle(&wit, args).await,
        Some(Subcommand::FloorServer { .. }) | None => {}
    }
    if options.repo.is_some() || options.synthetic.is_some() {
        return index_section(&options, &wit).await;
    }
    if let Some(url) = &options.store {
        return store::store_section(&wit, url, options.quick).await;
    }
    let quick = options.quick;
    let scale = |full: usize, small: usize| if quick { small } else { full };
    let work = WorkDir::new()?;
    let root = work.path().join("r");
    let generated = prepare_repository(&root, quick)?;
    print_header(quick, &wit);
    let ping_ops = scale(40_000, 5_000);
    let (report, floor) = measure_floors(work.path(), &generated, ping_ops).await?;
    startup_on_empty_repository(&wit, &work.path().join("e")).await?;
    let (daemon, setup) = start_settled(&wit, &root, &generated).await?;
    let pid = Some(daemon.pid());
    let socket = daemon.socket.clone();

    let mut bench = Bench {
        quick,
        root: root.clone(),
        generated,
        socket,
        pid,
        setup,
        report,
        floor,
        ping_ops,
    };
    if options.wants("ping") {
        sections::ping(&mut bench).await?;
    }
    if options.wants("register") {
        sections::register(&mut bench).await?;
    }
    if options.wants("locks") {
        sections::locks(&mut bench).await?;
    }
    if options.wants("intents") {
        sections::intents(&mut bench).await?;
    }
    if options.wants("contracts") {
        sections::contracts(&mut bench).await?;
    }
    if options.wants("isolation") {
        sections::isolation(&mut bench).await?;
    }
    if !quick && options.wants("small") {
        sections::small(&mut bench).await?;
    }
    if options.wants("waits") {
        pulse::waits(&mut bench).await?;
    }
    if options.wants("events") {
        pulse::events(&mut bench).await?;
    }
    if options.wants("reap") {
        pulse::reap(&mut bench).await?;
    }
    if options.wants("gate") {
        gate::gate(&mut bench, &wit).await?;
    }

    println!();
    let cli_root = root.clone();
    let runs = scale(60, 15);
    if options.wants("cli") {
        let wit = wit.clone();
        tokio::task::spawn_blocking(move || {
            cli_timings::cli_and_hook_timings(&wit, &cli_root, runs)
        })
        .await??;
    }
    if options.wants("mcp") {
        mcp_timings::mcp_timings(&wit, &root, scale(30, 10), scale(2_000, 300)).await?;
    }

    if options.wants("safegit") {
        safegit::safegit(&wit, quick).await?;
    }
    if options.wants("restart") {
        let (wit, dir) = (wit.clone(), work.path().join("restart"));
        let rounds = scale(100, 20);
        tokio::task::spawn_blocking(move || restart::restart(&wit, &dir, rounds)).await??;
    }

    println!();
    println!(
        "daemon RSS at the end: {} KiB; daemon CPU total: {:.2} s",
        rss_kib(daemon.pid()).unwrap_or(0),
        cpu_time(daemon.pid())?.as_secs_f64()
    );
    Ok(())
}

/// The index section alone, on `--repo` or a generated `--synthetic` repository.
async fn index_section(options: &Options, wit: &std::path::Path) -> Result<()> {
    print_header(options.quick, wit);
    if let Some(repo) = &options.repo {
        return index::index(wit, repo, options.runs, options.quick).await;
    }
    let megabytes = options.synthetic.unwrap_or(280);
    let work = WorkDir::new()?;
    let root = options
        .synthetic_dir
        .clone()
        .unwrap_or_else(|| work.path().join("synthetic"));
    if !root.join(".git").exists() {
        let started = Instant::now();
        let (files, bytes) = synthetic::generate(&root, megabytes * 1_000_000)?;
        println!(
            "generated {files} files, {:.1} MB in {}",
            bytes as f64 / 1e6,
            fmt_duration(started.elapsed())
        );
    }
    index::index(wit, &root, options.runs, options.quick).await
}

/// A git repository at `root` with the generated TypeScript files of each size.
fn prepare_repository(
    root: &std::path::Path,
    quick: bool,
) -> Result<Vec<(String, String, String, usize)>> {
    std::fs::create_dir_all(root.join("src"))?;
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status()?;
    if !status.success() {
        bail!("git init failed");
    }
    let sizes: Vec<(&str, usize)> = if quick {
        vec![("16k", 16 * 1024), ("169k", 169 * 1024)]
    } else {
        vec![
            ("16k", 16 * 1024),
            ("169k", 169 * 1024),
            ("1.7m", 1_700 * 1024),
        ]
    };
    let mut generated = Vec::new();
    for (label, size) in &sizes {
        let (text, functions) = generated_ts(*size);
        let rel = format!("src/gen_{}.ts", label.replace('.', "_"));
        std::fs::write(root.join(&rel), &text)?;
        generated.push((label.to_string(), rel, text, functions));
    }
    Ok(generated)
}

/// The run's title and the machine.
fn print_header(quick: bool, wit: &std::path::Path) {
    println!("# wit-bench ({})", if quick { "quick" } else { "full" });
    println!();
    let model = wit::platform::measure::cpu_model();
    println!(
        "machine: {} cores, {model}; wit: {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        wit.display()
    );
    println!();
}

/// The floors of this run (SQLite commit, one parse, a bare hyper server's ping), the table
/// whose ratio column divides by the floor's ping at 16 connections, and the floor server.
async fn measure_floors(
    work: &std::path::Path,
    generated: &[(String, String, String, usize)],
    ping_ops: usize,
) -> Result<(Report, FloorServer)> {
    let floor_server = FloorServer::spawn(work.join("floor.sock")).await?;
    let floor_socket = floor_server.socket.clone();
    let floor_pid = Some(floor_server.pid());
    let ping = Arc::new(|_: usize, _: usize| vec![ping_body()]) as MakeOp;
    let floor = Report { floor_ping: None };
    let sqlite = tokio::task::spawn_blocking({
        let dir = work.to_owned();
        move || sqlite_commit_floor(&dir, 2000)
    })
    .await??;
    println!(
        "floor: one SQLite WAL commit (synchronous=NORMAL): {:.1} µs",
        sqlite.as_secs_f64() * 1e6
    );
    let big = generated.last().context("no generated file")?;
    let parse_started = Instant::now();
    let parsed = wit::analysis::analyze(wit::analysis::Language::TypeScript, &big.2);
    let parse_time = parse_started.elapsed();
    println!(
        "floor: one tree-sitter analysis of the {} file ({} bytes, {} symbols, the analysis holds ~{:.1} MB): {}",
        big.0,
        big.2.len(),
        parsed.symbols.len(),
        parsed.approx_heap_bytes() as f64 / 1e6,
        fmt_duration(parse_time)
    );
    println!();
    floor.header();
    let mut floor_16 = 0.0;
    for concurrency in [1, 16] {
        let m = measure(
            &floor_socket,
            floor_pid,
            concurrency,
            ping_ops,
            Arc::clone(&ping),
        )
        .await?;
        floor.row("floor: hyper ping", concurrency, &m);
        if concurrency == 16 {
            floor_16 = m.ops_per_sec();
        }
    }
    Ok((
        Report {
            floor_ping: Some(floor_16),
        },
        floor_server,
    ))
}

/// How many pings a fresh-connection row sends (each costs a connect and a close).
pub(crate) fn fresh_ops(ping_ops: usize) -> usize {
    ping_ops / 2
}

/// Start-up to the first pong on an empty repository.
async fn startup_on_empty_repository(wit: &std::path::Path, empty: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(empty)?;
    let (daemon, startup) = Daemon::start(wit, empty).await?;
    println!(
        "| start-up to first pong (empty repo): {} | RSS {} KiB | | | | | | | |",
        fmt_duration(startup),
        rss_kib(daemon.pid()).unwrap_or(0)
    );
    Ok(())
}

/// The daemon of the bench repository, started and settled: the background index builds after
/// start-up and the first acquire that needs caller warnings waits for it, so measurements
/// start from a settled daemon (and the row says how long that took).
async fn start_settled(
    wit: &std::path::Path,
    root: &std::path::Path,
    generated: &[(String, String, String, usize)],
) -> Result<(Daemon, Conn)> {
    let (daemon, startup) = Daemon::start(wit, root).await?;
    println!(
        "| start-up to first pong (bench repo): {} | RSS {} KiB | | | | | | | |",
        fmt_duration(startup),
        rss_kib(daemon.pid()).unwrap_or(0)
    );
    let mut setup = Conn::open(&daemon.socket).await?;
    let settle_started = Instant::now();
    let big = generated.last().context("no generated file")?;
    let warm_symbol = format!("{}:fn_0", big.1);
    setup
        .call(
            "lock.acquire",
            json!({"symbolPath": warm_symbol, "sessionId": "warm-up", "ttlMs": 1_000}),
        )
        .await?;
    setup
        .call(
            "lock.release",
            json!({"symbolPath": warm_symbol, "sessionId": "warm-up"}),
        )
        .await?;
    println!(
        "| background index of the bench repo complete (first acquire answered) after: {} more | | | | | | | | |",
        fmt_duration(settle_started.elapsed())
    );
    Ok((daemon, setup))
}
