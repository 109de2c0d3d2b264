//! The `index` section: the code index on a real checkout (`--repo PATH`) or on a generated
//! synthetic repository (`--synthetic MB`). For each run it times a cold build (no
//! `.wit/index.db`: start, then the first caller-aware `lock.acquire`, which waits for the
//! whole index), a warm restart (the same with the index of the previous run on disk), the
//! daemon's RSS once the index is complete, and the steady-state p50 of `lock.acquire`,
//! `intent.declare` and `edit.preflight` on one of the repository's symbols.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::fixtures::{lock_cycle, Daemon};
use crate::measure::{fmt_duration, measure, rss_kib, MakeOp};
use crate::net::{request, Conn};

/// One repository's measured figures, per run.
#[derive(Default)]
struct Runs {
    cold: Vec<Duration>,
    warm: Vec<Duration>,
    warm_pong: Vec<Duration>,
    rss_cold: Vec<u64>,
    rss_warm: Vec<u64>,
}

/// Runs the index section on `repo` `runs` times (cold build then warm restart each time).
pub(crate) async fn index(wit: &Path, repo: &Path, runs: usize, quick: bool) -> Result<()> {
    let (files, bytes) = source_size(repo);
    let (file, symbol) = pick_symbol(repo).context("no supported source file with a symbol")?;
    let symbol_path = format!("{file}:{symbol}");
    println!(
        "## index: {} ({files} source files, {:.1} MB); probe symbol {symbol_path}",
        repo.display(),
        bytes as f64 / 1e6
    );
    println!();
    // A `.wit` this run creates is removed at the end, so runs start alike (the intents the
    // steady state declares would otherwise pile up in state.db from run to run).
    let created = !repo.join(".wit").exists();
    let mut figures = Runs::default();
    for run in 0..runs.max(1) {
        remove_index(repo);
        let (cold, cold_rss, _) = first_acquire(wit, repo, &symbol_path).await?;
        let (warm, warm_rss, warm_pong) = first_acquire(wit, repo, &symbol_path).await?;
        println!(
            "run {run}: cold build {} ({:.1} MB/s), RSS {} KiB | warm restart: first acquire {} (pong {}), RSS {} KiB",
            fmt_duration(cold),
            bytes as f64 / 1e6 / cold.as_secs_f64(),
            cold_rss,
            fmt_duration(warm),
            fmt_duration(warm_pong),
            warm_rss
        );
        figures.cold.push(cold);
        figures.warm.push(warm);
        figures.warm_pong.push(warm_pong);
        figures.rss_cold.push(cold_rss);
        figures.rss_warm.push(warm_rss);
    }
    let cold = median(&mut figures.cold);
    let floor = parse_floor(repo);
    let cold_rate = bytes as f64 / 1e6 / cold.as_secs_f64();
    let floor_rate = bytes as f64 / 1e6 / floor.as_secs_f64();
    println!();
    println!(
        "floor: a bare tree-sitter parse of the same files on 2 threads {} ({floor_rate:.1} MB/s); the cold build is ×{:.2} the floor (target ≤ 1.25, ≥ 6.5 MB/s)",
        fmt_duration(floor),
        cold.as_secs_f64() / floor.as_secs_f64()
    );
    println!(
        "| {} | cold build {} ({:.1} MB/s) | warm restart to first caller-aware acquire {} (pong {}) | RSS after cold {} KiB, after warm {} KiB |",
        repo.file_name().and_then(|n| n.to_str()).unwrap_or("repo"),
        fmt_duration(cold),
        cold_rate,
        fmt_duration(median(&mut figures.warm)),
        fmt_duration(median(&mut figures.warm_pong)),
        median(&mut figures.rss_cold),
        median(&mut figures.rss_warm),
    );
    first_call_on_the_largest_file(wit, repo).await?;
    let outcome = steady_state(wit, repo, &file, &symbol, quick).await;
    if created {
        let _ = std::fs::remove_dir_all(repo.join(".wit"));
    }
    outcome
}

/// Starts a daemon on `repo` and times its first caller-aware `lock.acquire` from the spawn;
/// the daemon's RSS once answered (after a short settle) and the time to the first pong.
async fn first_acquire(
    wit: &Path,
    repo: &Path,
    symbol_path: &str,
) -> Result<(Duration, u64, Duration)> {
    let started = Instant::now();
    let (daemon, pong) = Daemon::start(wit, repo).await?;
    let mut conn = Conn::open(&daemon.socket).await?;
    let answer = conn
        .call(
            "lock.acquire",
            json!({"symbolPath": symbol_path, "sessionId": "bench-index", "ttlMs": 60_000}),
        )
        .await?;
    let elapsed = started.elapsed();
    if answer.get("error").is_some() {
        bail!("lock.acquire failed: {answer}");
    }
    conn.call(
        "lock.release",
        json!({"symbolPath": symbol_path, "sessionId": "bench-index"}),
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss = rss_kib(daemon.pid()).unwrap_or(0);
    stop(daemon).await;
    Ok((elapsed, rss, pong))
}

/// Issue 20 item 11: after a restart with the index on disk, once the index is complete (and
/// 2 s later), the first `lock.acquire` on a symbol of the largest source file against the median of the
/// next ten on other symbols of that file (the steady state), in one run.
async fn first_call_on_the_largest_file(wit: &Path, repo: &Path) -> Result<()> {
    let Some((file, symbols)) = largest_file_symbols(repo) else {
        return Ok(());
    };
    let (daemon, _) = Daemon::start(wit, repo).await?;
    let status = repo.join(".wit").join("index.json");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !std::fs::read_to_string(&status).is_ok_and(|s| s.contains("\"complete\":true"))
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The stored analyses of large files are read back right after the build: an agent's
    // first call comes seconds after a restart, not within the same millisecond.
    tokio::time::sleep(IDLE).await;
    let mut conn = Conn::open(&daemon.socket).await?;
    let mut times = Vec::new();
    for symbol in symbols.iter().take(11) {
        times.push(timed_lock(&mut conn, &format!("{file}:{symbol}")).await?);
    }
    // What the deferred warm-up holds once it has run (issue 32.3 reads RSS right after start).
    let rss = rss_kib(daemon.pid()).unwrap_or(0);
    // The idle floor: the same call after the same pause, on the daemon now warm. The first
    // call comes after a pause too, and a pause alone costs what the machine's caches lost.
    let mut after_idle = Vec::new();
    for symbol in symbols.iter().skip(1).take(IDLE_ROUNDS) {
        tokio::time::sleep(IDLE).await;
        after_idle.push(timed_lock(&mut conn, &format!("{file}:{symbol}")).await?);
    }
    stop(daemon).await;
    if let Some((first, rest)) = times.split_first_mut() {
        let steady = median(rest);
        let idle = median(&mut after_idle);
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
        println!(
            "first call after restart on the largest file {file} ({} KB): {}, steady state (median of {}): {} (×{:.2}, target ≤ 2); daemon RSS then {rss} KiB",
            std::fs::metadata(repo.join(&file)).map_or(0, |m| m.len() / 1000),
            fmt_duration(*first),
            rest.len(),
            fmt_duration(steady),
            ratio(*first, steady)
        );
        let (hot, cold) = memory_walk_after_idle();
        println!(
            "idle floor: the same call after the same {} s pause on the warm daemon, median of {}: {} (first call ×{:.2} of it, steady state ×{:.2}); this machine walks {} MiB in {} hot, {} after the pause (×{:.1})",
            IDLE.as_secs(),
            after_idle.len(),
            fmt_duration(idle),
            ratio(*first, idle),
            ratio(idle, steady),
            WALK_BYTES >> 20,
            fmt_duration(hot),
            fmt_duration(cold),
            ratio(cold, hot)
        );
    }
    Ok(())
}

/// How long a `lock.acquire` of `symbol_path` takes (the lock released after it, untimed).
async fn timed_lock(conn: &mut Conn, symbol_path: &str) -> Result<Duration> {
    let started = Instant::now();
    conn.call(
        "lock.acquire",
        json!({"symbolPath": symbol_path, "sessionId": "bench-first", "ttlMs": 60_000}),
    )
    .await?;
    let took = started.elapsed();
    conn.call(
        "lock.release",
        json!({"symbolPath": symbol_path, "sessionId": "bench-first"}),
    )
    .await?;
    Ok(took)
}

/// The pause before the first call after a restart, and before each idle-floor call.
const IDLE: Duration = Duration::from_secs(2);

/// How many calls after a pause make the idle floor.
const IDLE_ROUNDS: usize = 3;

/// The memory the machine probe walks.
const WALK_BYTES: usize = 8 << 20;

/// What a pause costs on this machine, without wit: one walk over [`WALK_BYTES`] of memory
/// right after another, then one after an [`IDLE`] pause (a host whose caches other tenants
/// take over meanwhile reads it from memory again).
fn memory_walk_after_idle() -> (Duration, Duration) {
    let mut memory: Vec<u8> = (0..WALK_BYTES).map(|i| i as u8).collect();
    let walk = |memory: &mut [u8]| {
        let started = Instant::now();
        let mut hash = 0u64;
        for byte in memory.iter_mut().step_by(64) {
            hash = hash.wrapping_mul(31).wrapping_add(u64::from(*byte));
            *byte = hash as u8;
        }
        std::hint::black_box(hash);
        started.elapsed()
    };
    walk(&mut memory);
    let hot = walk(&mut memory);
    std::thread::sleep(IDLE);
    let cold = walk(&mut memory);
    (hot, cold)
}

/// The largest supported source file and its top-level functions.
fn largest_file_symbols(repo: &Path) -> Option<(String, Vec<String>)> {
    let (_, path, language) = sources(repo)
        .into_iter()
        .filter_map(|(p, l)| Some((std::fs::metadata(&p).ok()?.len(), p, l)))
        .filter(|(len, _, _)| *len <= 8 * 1024 * 1024)
        .max_by_key(|(len, _, _)| *len)?;
    let text = std::fs::read_to_string(&path).ok()?;
    let analysis = wit::analysis::analyze(language, &text);
    let symbols: Vec<String> = analysis
        .symbols
        .iter()
        .filter(|s| {
            s.kind == wit::analysis::SymbolKind::Function && !s.qualified_name.contains('.')
        })
        .map(|s| s.qualified_name.clone())
        .collect();
    let rel = path.strip_prefix(repo).ok()?.to_str()?.to_owned();
    (!symbols.is_empty()).then_some((rel, symbols))
}

/// Stops a daemon with SIGTERM (its index and state flushed), SIGKILL after 10 s.
pub(crate) async fn stop(daemon: Daemon) {
    let pid = daemon.pid();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    // A zombie until the Daemon's drop reaps it: that counts as exited.
    while wit::platform::process::exit_state(pid) != wit::platform::process::Liveness::Dead
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(daemon);
}

/// p50 of acquire+release, intent.declare and edit.preflight on a warm daemon.
async fn steady_state(
    wit: &Path,
    repo: &Path,
    file: &str,
    symbol: &str,
    quick: bool,
) -> Result<()> {
    let (daemon, _) = Daemon::start(wit, repo).await?;
    let socket = daemon.socket.clone();
    let pid = Some(daemon.pid());
    let symbol_path = format!("{file}:{symbol}");
    let mut conn = Conn::open(&socket).await?;
    conn.call(
        "lock.acquire",
        json!({"symbolPath": symbol_path, "sessionId": "warm", "ttlMs": 1_000}),
    )
    .await?;
    conn.call(
        "lock.release",
        json!({"symbolPath": symbol_path, "sessionId": "warm"}),
    )
    .await?;
    let ops = if quick { 300 } else { 2_000 };
    let make: MakeOp = {
        let symbol_path = symbol_path.clone();
        Arc::new(move |w, _| lock_cycle(&symbol_path, &format!("acq-{w}")))
    };
    let m = measure(&socket, pid, 1, ops, make).await?;
    println!(
        "steady state: lock.acquire+release p50 {} p99 {}",
        fmt_duration(m.percentile(0.5)),
        fmt_duration(m.percentile(0.99))
    );
    let make: MakeOp = {
        let (file, symbol) = (file.to_owned(), symbol.to_owned());
        Arc::new(move |w, i| {
            vec![request(
                "intent.declare",
                &json!({"sessionId": format!("decl-{w}-{i}"), "description": "bench", "files": [file], "symbols": [symbol]}),
            )]
        })
    };
    let m = measure(&socket, pid, 1, ops / 4, make).await?;
    println!(
        "steady state: intent.declare p50 {} p99 {}",
        fmt_duration(m.percentile(0.5)),
        fmt_duration(m.percentile(0.99))
    );
    // The intents end with their sessions: the next run starts from the same state (each
    // declare reports every earlier one on the file as a conflict, so they would pile up).
    for i in 0..ops / 4 {
        conn.call("session.end", json!({"sessionId": format!("decl-0-{i}")}))
            .await?;
    }
    let make: MakeOp = {
        let file = file.to_owned();
        let symbol = symbol.to_owned();
        Arc::new(move |w, _| {
            vec![request(
                "edit.preflight",
                &json!({"sessionId": format!("pre-{w}"), "file": file, "edits": [{"oldText": symbol, "newText": format!("{symbol}_renamed")}]}),
            )]
        })
    };
    let m = measure(&socket, pid, 1, ops / 4, make).await?;
    println!(
        "steady state: edit.preflight p50 {} p99 {}",
        fmt_duration(m.percentile(0.5)),
        fmt_duration(m.percentile(0.99))
    );
    println!(
        "daemon RSS at the end: {} KiB",
        rss_kib(daemon.pid()).unwrap_or(0)
    );
    stop(daemon).await;
    Ok(())
}

/// The floor of a cold build: every source the index would parse (as [`sources`] finds them,
/// up to 8 MiB each), read and parsed by tree-sitter alone (no queries, no store) on two
/// threads taking files in turn, the median of 3 rounds.
fn parse_floor(repo: &Path) -> Duration {
    let files: Vec<(PathBuf, wit::analysis::Language)> = sources(repo)
        .into_iter()
        .filter(|(p, _)| std::fs::metadata(p).is_ok_and(|m| m.len() <= 8 * 1024 * 1024))
        .collect();
    let mut rounds: Vec<Duration> = (0..3)
        .map(|_| {
            let next = std::sync::atomic::AtomicUsize::new(0);
            let started = Instant::now();
            std::thread::scope(|scope| {
                for _ in 0..2 {
                    scope.spawn(|| {
                        let mut parser = tree_sitter::Parser::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some((path, language)) = files.get(i) else {
                                break;
                            };
                            let Ok(text) = std::fs::read(path) else {
                                continue;
                            };
                            if parser.set_language(&language.grammar()).is_ok() {
                                let _ = parser.parse(&text, None);
                            }
                        }
                    });
                }
            });
            started.elapsed()
        })
        .collect();
    median(&mut rounds)
}

/// Deletes the index database of `repo` (a cold start next).
fn remove_index(repo: &Path) {
    for name in ["index.db", "index.db-wal", "index.db-shm", "index.json"] {
        let _ = std::fs::remove_file(repo.join(".wit").join(name));
    }
}

/// The median of `values` (sorted in place); the default when empty.
pub(crate) fn median<T: Copy + Ord + Default>(values: &mut [T]) -> T {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

/// Supported source files (as the index walks them) and their bytes.
fn source_size(repo: &Path) -> (usize, u64) {
    let mut files = 0;
    let mut bytes = 0;
    for (path, _) in sources(repo) {
        if let Ok(meta) = std::fs::metadata(&path) {
            files += 1;
            bytes += meta.len();
        }
    }
    (files, bytes)
}

/// Supported source files as the index walks them (`.gitignore` honoured, no
/// `node_modules`), with their languages.
pub(crate) fn sources(repo: &Path) -> Vec<(PathBuf, wit::analysis::Language)> {
    let mut builder = ignore::WalkBuilder::new(repo);
    builder.hidden(true).require_git(false).parents(false);
    builder
        .filter_entry(|e| e.file_name() != "node_modules")
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| {
            let language = wit::analysis::Language::for_path(e.path().to_str()?)?;
            Some((e.path().to_owned(), language))
        })
        .collect()
}

/// A function somewhere in the middle of the repository's larger files that others may call:
/// (relative file, qualified name).
pub(crate) fn pick_symbol(repo: &Path) -> Option<(String, String)> {
    let mut candidates: Vec<(u64, PathBuf, wit::analysis::Language)> = sources(repo)
        .into_iter()
        .filter_map(|(p, l)| Some((std::fs::metadata(&p).ok()?.len(), p, l)))
        .filter(|(len, _, _)| (8_000..200_000).contains(len))
        .collect();
    candidates.sort();
    let mid = candidates.len() / 2;
    for (_, path, language) in candidates.iter().skip(mid).chain(candidates.iter()) {
        let text = std::fs::read_to_string(path).ok()?;
        let analysis = wit::analysis::analyze(*language, &text);
        let found = analysis.symbols.iter().find(|s| {
            s.kind == wit::analysis::SymbolKind::Function && !s.qualified_name.contains('.')
        });
        if let Some(symbol) = found {
            let rel = path.strip_prefix(repo).ok()?.to_str()?.to_owned();
            return Some((rel, symbol.qualified_name.clone()));
        }
    }
    None
}
