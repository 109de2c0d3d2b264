//! `wit-bench worktrees` (issue 24): one daemon serving several worktrees of a real
//! repository, run alone (never in CI), on checkouts named on the command line:
//!
//! - `--index-repo PATH` (sympy): the code index's build time (the build's own `elapsedMs`,
//!   from each index's `index.json`) and size (`index.db` and its WAL) for the main worktree
//!   alone (cold), then for each added worktree up to `--worktrees` (each differing from
//!   the main one by `--changed-files` files): the daemon is stopped, the worktree added and
//!   changed, the daemon started again, and the new worktree's index timed once every index
//!   is complete. Ratios to the main worktree's figures are taken within each run, then the
//!   median over `--runs`. With every worktree served: the daemon's `VmRSS`/`VmHWM`, after
//!   a caller-aware `lock.acquire` on each worktree's socket, warm and from cold (every
//!   index deleted).
//! - `--forecast-repo PATH` (typeorm): `worktree.forecast` with `--forecast-worktrees`
//!   worktrees (the main one included), each with a few uncommitted changes inside functions,
//!   neighbours sharing files (so pairs collide): p50/p99 over `--calls` calls.
//!
//! Each checkout is cloned into a scratch directory first: the repository given is never
//! changed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::fixtures::{Daemon, WorkDir};
use crate::index::{median, pick_symbol, sources, stop};
use crate::measure::{cpu_time_with_children, fmt_duration, percentile};
use crate::net::Conn;

/// The arguments of `wit-bench worktrees`.
#[derive(Debug, clap::Args)]
pub(crate) struct WorktreesArgs {
    /// A checkout for the index figures (issue 24: sympy).
    #[arg(long, value_name = "PATH")]
    pub index_repo: Option<PathBuf>,
    /// Worktrees of the index figures, the main one included.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub worktrees: usize,
    /// Files each added worktree changes.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub changed_files: usize,
    /// Runs of the index figures (the table gives medians).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub runs: usize,
    /// A checkout for `worktree.forecast` (issue 24: typeorm).
    #[arg(long, value_name = "PATH")]
    pub forecast_repo: Option<PathBuf>,
    /// Worktrees of the forecast, the main one included.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub forecast_worktrees: usize,
    /// Timed `worktree.forecast` calls (after one warm-up call).
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub calls: usize,
}

/// Runs what the arguments name and prints the figures.
pub(crate) async fn worktrees(wit: &Path, args: &WorktreesArgs) -> Result<()> {
    if args.index_repo.is_none() && args.forecast_repo.is_none() {
        bail!("worktrees: give --index-repo PATH and/or --forecast-repo PATH");
    }
    let work = WorkDir::new()?;
    if let Some(repo) = &args.index_repo {
        index_figures(wit, repo, args, work.path()).await?;
    }
    if let Some(repo) = &args.forecast_repo {
        forecast_figures(wit, repo, args, work.path()).await?;
    }
    Ok(())
}

/// One run's index figures.
#[derive(Debug, Default, Clone)]
struct IndexRun {
    /// The main worktree's cold build and its index's bytes.
    main: (Duration, u64),
    /// The daemon's VmHWM (KiB) after the main worktree's cold build, alone.
    main_hwm: u64,
    /// Each added worktree's build and its index's bytes, in the order added.
    added: Vec<(Duration, u64)>,
    /// With every worktree served, warm: (VmRSS, VmHWM) in KiB.
    warm_rss: (u64, u64),
    /// With every worktree served, every index built from cold: (VmRSS, VmHWM) in KiB, and
    /// the time to every index complete.
    cold_rss: (u64, u64),
    cold_all: Duration,
}

/// The index figures on `repo`: `--runs` runs, each printed, then the medians.
async fn index_figures(wit: &Path, repo: &Path, args: &WorktreesArgs, work: &Path) -> Result<()> {
    let (files, bytes) = source_bytes(repo);
    println!(
        "## worktrees: index of {} ({files} source files, {:.1} MB), 1 to {} worktrees, {} changed files each",
        repo.display(),
        bytes as f64 / 1e6,
        args.worktrees,
        args.changed_files
    );
    println!();
    let mut runs = Vec::new();
    for run in 0..args.runs.max(1) {
        let dir = work.join(format!("ix{run}"));
        let figures = index_run(wit, repo, &dir, args).await;
        let _ = std::fs::remove_dir_all(&dir);
        let figures = figures?;
        print_index_run(run, &figures);
        runs.push(figures);
    }
    print_index_table(&mut runs);
    Ok(())
}

/// One run: a fresh clone, its main worktree's cold index, then the worktrees added one by one.
async fn index_run(wit: &Path, repo: &Path, dir: &Path, args: &WorktreesArgs) -> Result<IndexRun> {
    let main = dir.join("main");
    git(
        dir.parent().unwrap_or(dir),
        &["clone", "-q", &path_str(repo)?, &path_str(&main)?],
    )?;
    let (file, symbol) = pick_symbol(&main).context("no supported source file with a symbol")?;
    let probe = format!("{file}:{symbol}");
    let candidates = changeable_files(&main, &["py", "ts", "js", "go", "rs", "java"]);
    let mut figures = IndexRun::default();

    let daemon = start(wit, &main).await?;
    let statuses = wait_complete(&main, daemon.pid(), 0).await?;
    let main_status = statuses.first().context("no index status")?;
    figures.main_hwm = probe_all(&daemon, &main, &[], &probe).await?.1;
    stop(daemon).await;
    figures.main = (
        Duration::from_millis(main_status.1),
        db_bytes(&main.join(".wit")),
    );

    let mut linked = Vec::new();
    for k in 2..=args.worktrees.max(2) {
        let root = dir.join(format!("wt{k}"));
        let before = worktree_dirs(&main);
        git(
            &main,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("wit-bench-{k}"),
                &path_str(&root)?,
            ],
        )?;
        change_files(&root, &candidates, k, args.changed_files)?;
        linked.push(root);
        let daemon = start(wit, &main).await?;
        let statuses = wait_complete(&main, daemon.pid(), linked.len()).await?;
        let new_dir = worktree_dirs(&main)
            .into_iter()
            .find(|d| !before.contains(d))
            .context("the new worktree has no index directory")?;
        let elapsed = statuses
            .iter()
            .find(|(d, _)| *d == new_dir)
            .map(|(_, ms)| *ms)
            .context("the new worktree's index status")?;
        if k == args.worktrees.max(2) {
            figures.warm_rss = probe_all(&daemon, &main, &linked, &probe).await?;
        }
        stop(daemon).await;
        figures
            .added
            .push((Duration::from_millis(elapsed), db_bytes(&new_dir)));
    }

    // Every index from cold, every worktree served.
    remove_indexes(&main);
    let started = Instant::now();
    let daemon = start(wit, &main).await?;
    wait_complete(&main, daemon.pid(), linked.len()).await?;
    figures.cold_all = started.elapsed();
    figures.cold_rss = probe_all(&daemon, &main, &linked, &probe).await?;
    stop(daemon).await;
    Ok(figures)
}

/// One run's figures on one line.
fn print_index_run(run: usize, figures: &IndexRun) {
    let mb = |b: u64| b as f64 / 1e6;
    let added: Vec<String> = figures
        .added
        .iter()
        .enumerate()
        .map(|(i, (time, bytes))| {
            format!("#{} {} {:.1} MB", i + 2, fmt_duration(*time), mb(*bytes))
        })
        .collect();
    println!(
        "run {run}: main {} {:.1} MB, HWM {} KiB | added {} | {} worktrees warm: RSS {} KiB, HWM {} KiB | all cold: {} to complete, RSS {} KiB, HWM {} KiB",
        fmt_duration(figures.main.0),
        mb(figures.main.1),
        figures.main_hwm,
        added.join(", "),
        figures.added.len() + 1,
        figures.warm_rss.0,
        figures.warm_rss.1,
        fmt_duration(figures.cold_all),
        figures.cold_rss.0,
        figures.cold_rss.1,
    );
}

/// The medians over the runs; each ratio is taken within its run.
fn print_index_table(runs: &mut [IndexRun]) {
    println!();
    println!("| worktree | index build (median) | × main's | index size (median) | × main's |");
    println!("|---|---|---|---|---|");
    let mut times: Vec<Duration> = runs.iter().map(|r| r.main.0).collect();
    let mut sizes: Vec<u64> = runs.iter().map(|r| r.main.1).collect();
    println!(
        "| main (cold) | {} | 1 | {:.1} MB | 1 |",
        fmt_duration(median(&mut times)),
        median(&mut sizes) as f64 / 1e6
    );
    let added = runs.iter().map(|r| r.added.len()).min().unwrap_or(0);
    for i in 0..added {
        let mut times: Vec<Duration> = runs.iter().map(|r| r.added[i].0).collect();
        let mut sizes: Vec<u64> = runs.iter().map(|r| r.added[i].1).collect();
        let mut time_ratios: Vec<u64> = runs
            .iter()
            .map(|r| permille(r.added[i].0.as_micros(), r.main.0.as_micros()))
            .collect();
        let mut size_ratios: Vec<u64> = runs
            .iter()
            .map(|r| permille(u128::from(r.added[i].1), u128::from(r.main.1)))
            .collect();
        println!(
            "| #{} added | {} | {:.3} | {:.2} MB | {:.3} |",
            i + 2,
            fmt_duration(median(&mut times)),
            median(&mut time_ratios) as f64 / 1000.0,
            median(&mut sizes) as f64 / 1e6,
            median(&mut size_ratios) as f64 / 1000.0,
        );
    }
    let mut warm: Vec<u64> = runs.iter().map(|r| r.warm_rss.0).collect();
    let mut warm_hwm: Vec<u64> = runs.iter().map(|r| r.warm_rss.1).collect();
    let mut cold: Vec<u64> = runs.iter().map(|r| r.cold_rss.0).collect();
    let mut cold_hwm: Vec<u64> = runs.iter().map(|r| r.cold_rss.1).collect();
    let mut cold_all: Vec<Duration> = runs.iter().map(|r| r.cold_all).collect();
    let mut main_hwm: Vec<u64> = runs.iter().map(|r| r.main_hwm).collect();
    println!();
    println!(
        "one daemon serving the main worktree alone, after its cold build: VmHWM {} KiB (median)",
        median(&mut main_hwm)
    );
    println!(
        "one daemon serving {} worktrees: warm restart VmRSS {} KiB, VmHWM {} KiB; every index from cold ({} to complete): VmRSS {} KiB, VmHWM {} KiB (medians)",
        added + 1,
        median(&mut warm),
        median(&mut warm_hwm),
        fmt_duration(median(&mut cold_all)),
        median(&mut cold),
        median(&mut cold_hwm),
    );
}

/// `part` per thousand of `whole`.
fn permille(part: u128, whole: u128) -> u64 {
    u64::try_from(part * 1000 / whole.max(1)).unwrap_or(u64::MAX)
}

/// The daemon of `main`, answering.
async fn start(wit: &Path, main: &Path) -> Result<Daemon> {
    Ok(Daemon::start(wit, main).await?.0)
}

/// Waits until the main worktree's index and `linked` worktree indexes are complete, as
/// published by the daemon `pid`; each index's directory and build time (ms), the main one
/// first.
async fn wait_complete(main: &Path, pid: u32, linked: usize) -> Result<Vec<(PathBuf, u64)>> {
    let state = main.join(".wit");
    let deadline = Instant::now() + Duration::from_secs(1200);
    loop {
        let mut dirs = vec![state.clone()];
        dirs.extend(worktree_dirs(main));
        let done: Vec<(PathBuf, u64)> = dirs
            .iter()
            .filter_map(|dir| {
                let status = wit::analysis::progress::IndexStatus::read(&dir.join("index.json"))?;
                (status.complete && status.pid == pid).then(|| (dir.clone(), status.elapsed_ms))
            })
            .collect();
        if done.len() == linked + 1 && done.first().is_some_and(|(d, _)| *d == state) {
            return Ok(done);
        }
        if Instant::now() > deadline {
            bail!("the indexes were not complete within 20 minutes");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The index directories of the linked worktrees (`<main>/.wit/worktrees/*`), sorted.
fn worktree_dirs(main: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(main.join(".wit").join("worktrees"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// Bytes of the index database in `dir` once its WAL is checkpointed into it (the daemon
/// stopped), so the figure does not depend on when SQLite last checkpointed.
fn db_bytes(dir: &Path) -> u64 {
    let path = dir.join("index.db");
    if let Ok(conn) = rusqlite::Connection::open(&path) {
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }
    ["index.db", "index.db-wal"]
        .iter()
        .filter_map(|name| std::fs::metadata(dir.join(name)).ok())
        .map(|m| m.len())
        .sum()
}

/// Deletes every index of the repository (a cold start of all of them next).
fn remove_indexes(main: &Path) {
    let mut dirs = vec![main.join(".wit")];
    dirs.extend(worktree_dirs(main));
    for dir in dirs {
        for name in ["index.db", "index.db-wal", "index.db-shm", "index.json"] {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }
}

/// A caller-aware `lock.acquire` (and its release) of `probe` on every worktree's socket,
/// then, after a short settle, the daemon's (VmRSS, VmHWM) in KiB.
async fn probe_all(
    daemon: &Daemon,
    main: &Path,
    linked: &[PathBuf],
    probe: &str,
) -> Result<(u64, u64)> {
    for root in std::iter::once(main).chain(linked.iter().map(PathBuf::as_path)) {
        let mut conn = Conn::open(&root.join(".wit").join("daemon.sock")).await?;
        conn.call(
            "lock.acquire",
            json!({"symbolPath": probe, "sessionId": "bench-worktrees", "ttlMs": 60_000}),
        )
        .await?;
        conn.call(
            "lock.release",
            json!({"symbolPath": probe, "sessionId": "bench-worktrees"}),
        )
        .await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let field = |name: &str| -> u64 {
        wit::platform::measure::status_field(daemon.pid(), name).unwrap_or(0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

/// Tracked source files of 2–50 KB (relative paths, sorted) with one of `suffixes`: the
/// files worktrees change.
fn changeable_files(root: &Path, suffixes: &[&str]) -> Vec<String> {
    let mut files: Vec<String> = sources(root)
        .into_iter()
        .filter(|(path, _)| {
            path.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| suffixes.contains(&e))
        })
        .filter(|(path, _)| {
            std::fs::metadata(path).is_ok_and(|m| (2_000..50_000).contains(&m.len()))
        })
        .filter_map(|(path, _)| Some(path.strip_prefix(root).ok()?.to_str()?.to_owned()))
        .collect();
    files.sort();
    files
}

/// Worktree `k` changes `count` of `candidates` (spread over the list, different per `k`):
/// a line added inside the file's first function.
fn change_files(root: &Path, candidates: &[String], k: usize, count: usize) -> Result<()> {
    if candidates.is_empty() {
        bail!("no source file to change");
    }
    for j in 0..count {
        let rel = &candidates[(k * 7_919 + j * 104_729) % candidates.len()];
        edit_inside_first_function(&root.join(rel), &format!("wit-bench worktree {k}"))?;
    }
    Ok(())
}

/// Adds a comment line `note` just after the first line of the file's first function (at
/// the end of the file when it has none).
fn edit_inside_first_function(path: &Path, note: &str) -> Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let language =
        wit::analysis::Language::for_path(&path_str(path)?).context("not a supported source")?;
    let analysis = wit::analysis::analyze(language, &text);
    let comment = if language == wit::analysis::Language::Python {
        "#"
    } else {
        "//"
    };
    let first = analysis
        .symbols
        .iter()
        .filter(|s| {
            matches!(
                s.kind,
                wit::analysis::SymbolKind::Function | wit::analysis::SymbolKind::Method
            )
        })
        .min_by_key(|s| s.start_byte);
    let changed = match first.and_then(|s| {
        text[s.start_byte..]
            .find('\n')
            .map(|n| s.start_byte + n + 1)
    }) {
        Some(at) => {
            // Indented like the function's second line, so the source stays valid.
            let next = &text[at..];
            let indent: String = next
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            format!("{}{indent}{comment} {note}\n{}", &text[..at], next)
        }
        None => format!("{text}\n{comment} {note}\n"),
    };
    std::fs::write(path, changed)?;
    Ok(())
}

/// The forecast figures on `repo`: the worktrees made and changed, one daemon serving them,
/// `--calls` timed calls after a first one.
async fn forecast_figures(
    wit: &Path,
    repo: &Path,
    args: &WorktreesArgs,
    work: &Path,
) -> Result<()> {
    let dir = work.join("fc");
    let main = dir.join("main");
    std::fs::create_dir_all(&dir)?;
    git(&dir, &["clone", "-q", &path_str(repo)?, &path_str(&main)?])?;
    let candidates = changeable_files(&main, &["ts"]);
    if candidates.len() < args.forecast_worktrees + 2 {
        bail!("too few TypeScript files to change");
    }
    // Neighbours share files: worktree i changes pool[i], pool[i+1], pool[i+2].
    let step = candidates.len() / (args.forecast_worktrees + 2);
    let pool: Vec<String> = (0..args.forecast_worktrees + 2)
        .map(|i| candidates[i * step].clone())
        .collect();
    let mut roots = vec![main.clone()];
    for i in 1..args.forecast_worktrees.max(2) {
        let root = dir.join(format!("wt{i}"));
        git(
            &main,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("wit-bench-{i}"),
                &path_str(&root)?,
            ],
        )?;
        roots.push(root);
    }
    for (i, root) in roots.iter().enumerate() {
        for rel in &pool[i..i + 3] {
            edit_inside_first_function(&root.join(rel), &format!("wit-bench worktree {i}"))?;
        }
    }
    println!(
        "## worktrees: worktree.forecast on {} ({} worktrees, 3 changed files each, neighbours sharing 2)",
        repo.display(),
        roots.len()
    );
    let daemon = start(wit, &main).await?;
    wait_complete(&main, daemon.pid(), roots.len() - 1).await?;
    let mut conn = Conn::open(&main.join(".wit").join("daemon.sock")).await?;
    let started = Instant::now();
    let first = conn.call("worktree.forecast", json!({})).await?;
    let first_call = started.elapsed();
    let (pairs, collisions, symbols) = tally(&first);
    let mut latencies = Vec::with_capacity(args.calls);
    let cpu_before = cpu_time_with_children(daemon.pid())?;
    for _ in 0..args.calls.max(1) {
        let started = Instant::now();
        let answer = conn.call("worktree.forecast", json!({})).await?;
        latencies.push(started.elapsed());
        if tally(&answer) != (pairs, collisions, symbols) {
            bail!("worktree.forecast answered differently from call to call");
        }
    }
    let cpu = (cpu_time_with_children(daemon.pid())? - cpu_before) / latencies.len() as u32;
    latencies.sort_unstable();
    println!(
        "worktree.forecast: first call {}; then {} calls, p50 {} p99 {} (max {}), CPU per call (daemon and its git processes) {}; {pairs} pairs colliding, {collisions} files, {symbols} symbols named",
        fmt_duration(first_call),
        latencies.len(),
        fmt_duration(percentile(&latencies, 0.5)),
        fmt_duration(percentile(&latencies, 0.99)),
        fmt_duration(latencies.last().copied().unwrap_or_default()),
        fmt_duration(cpu),
    );
    // Calls after one worktree saved a file: that worktree's state is read again, the
    // others' are kept (the observer saw nothing change there).
    let mut after_save = Vec::new();
    for k in 0..args.calls.clamp(1, 10) {
        let i = 1 + k % (roots.len() - 1);
        let path = roots[i].join(&pool[i]);
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str(&format!("// wit-bench save {k}\n"));
        std::fs::write(&path, text)?;
        // Past the observer's settling time: the save has been seen.
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        let started = Instant::now();
        conn.call("worktree.forecast", json!({})).await?;
        after_save.push(started.elapsed());
    }
    after_save.sort_unstable();
    println!(
        "worktree.forecast after one worktree saved a file: {} calls, p50 {} max {}",
        after_save.len(),
        fmt_duration(percentile(&after_save, 0.5)),
        fmt_duration(after_save.last().copied().unwrap_or_default()),
    );
    stop(daemon).await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// (pairs, colliding files, symbols named) of a forecast.
fn tally(forecast: &Value) -> (usize, usize, usize) {
    let pairs = forecast["pairs"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let collisions = pairs
        .iter()
        .filter_map(|p| p["collisions"].as_array())
        .flatten();
    let (files, symbols) = collisions.fold((0, 0), |(f, s), c| {
        (f + 1, s + c["symbols"].as_array().map_or(0, Vec::len))
    });
    (pairs.len(), files, symbols)
}

/// Supported source files and their bytes.
fn source_bytes(repo: &Path) -> (usize, u64) {
    sources(repo)
        .iter()
        .filter_map(|(p, _)| std::fs::metadata(p).ok())
        .fold((0, 0), |(n, b), m| (n + 1, b + m.len()))
}

/// `path` as UTF-8 (git and the JSON calls take strings).
fn path_str(path: &Path) -> Result<String> {
    path.to_str()
        .map(str::to_owned)
        .with_context(|| format!("not UTF-8: {}", path.display()))
}

/// Runs git in `dir`; its stdout.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new("git").args(args).current_dir(dir).output()?;
    if !output.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
