//! `wit-bench watch-idle`: what watching a real tree costs while nothing changes (issue 34
//! target 3, docs/protocol.md 15.3): the daemon's CPU when idle (< 1 %), its inotify instances
//! (≤ 1) and watches against the directories git knows.
//!
//! ```text
//! wit-bench watch-idle --repo PATH [--seconds N]
//! ```
//!
//! The daemon is started on `--repo` itself (a local clone made for the bench: the daemon
//! writes its `.wit/` there, removed after the run when the run created it). Once its index
//! is complete and it has been quiet (under 1 % CPU over two consecutive seconds, at most
//! 120 s), over `--seconds`: its CPU (utime + stime from `/proc/PID/stat`, and to the
//! nanosecond from the threads' `schedstat`), its voluntary context switches (wake-ups).
//! Then its inotify instances (`/proc/PID/fd` links to `anon_inode:inotify`) and their
//! watches (`inotify wd:` lines of `/proc/PID/fdinfo/FD`), against the directories of
//! `git ls-files` (the root included), and its RSS.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::attribution::wait_index_complete;
use crate::fixtures::Daemon;
use crate::measure::{cpu_time, cpu_time_of_threads, fmt_duration, rss_kib};

/// `wit-bench watch-idle` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct WatchIdleArgs {
    /// The checkout the daemon watches (a local clone: the daemon writes `.wit/` in it).
    #[arg(long, value_name = "PATH")]
    pub repo: PathBuf,
    /// How long the idle daemon is measured.
    #[arg(long, default_value_t = 30)]
    pub seconds: u64,
}

/// Runs the measurement.
pub(crate) async fn watch_idle(wit: &Path, args: &WatchIdleArgs) -> Result<()> {
    let root = std::fs::canonicalize(&args.repo)?;
    if !root.join(".git").exists() {
        bail!("{} is not a git checkout", root.display());
    }
    let created = !root.join(".wit").exists();
    let outcome = measure_idle(wit, &root, args.seconds).await;
    if created {
        let _ = std::fs::remove_dir_all(root.join(".wit"));
    }
    outcome
}

/// Starts the daemon on `root`, lets it settle, measures it idle for `seconds`.
async fn measure_idle(wit: &Path, root: &Path, seconds: u64) -> Result<()> {
    let (dirs, with_ancestors) = git_directories(root)?;
    let (daemon, pong) = Daemon::start(wit, root).await?;
    let pid = daemon.pid();
    let indexed = wait_index_complete(root, Duration::from_secs(600)).await?;
    let quiet_after = wait_quiet(pid, Duration::from_secs(120)).await?;
    println!(
        "watch-idle: {} ({dirs} directories hold files of git ls-files, {with_ancestors} with their ancestors); first pong {}, index complete {}, quiet {} later",
        root.display(),
        fmt_duration(pong),
        fmt_duration(indexed),
        match quiet_after {
            Some(after) => fmt_duration(after),
            None => "never (measured anyway)".to_owned(),
        }
    );
    let (ticks0, nanos0, switches0) = (cpu_time(pid)?, cpu_time_of_threads(pid)?, switches(pid));
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let wall = started.elapsed().as_secs_f64();
    let (ticks1, nanos1, switches1) = (cpu_time(pid)?, cpu_time_of_threads(pid)?, switches(pid));
    let ticks = ticks1.saturating_sub(ticks0).as_secs_f64();
    let nanos = nanos1.saturating_sub(nanos0).as_secs_f64();
    println!(
        "idle CPU over {wall:.1} s: {:.3} % (utime+stime {} ms; threads' schedstat {:.3} %, {:.1} ms) — target < 1 %; {:.1} voluntary context switches/s",
        100.0 * ticks / wall,
        (ticks * 1e3).round(),
        100.0 * nanos / wall,
        nanos * 1e3,
        switches1.saturating_sub(switches0) as f64 / wall
    );
    let (instances, watches) = inotify(pid)?;
    println!(
        "inotify: {instances} instance(s) (target ≤ 1), {watches} watches for {dirs} directories holding files git knows ({with_ancestors} with their ancestors)"
    );
    println!("daemon RSS: {} KiB", rss_kib(pid).unwrap_or(0));
    Ok(())
}

/// Waits until the daemon used under 1 % CPU in each of two consecutive seconds; how long
/// that took (`None`: not within `limit`).
async fn wait_quiet(pid: u32, limit: Duration) -> Result<Option<Duration>> {
    let started = Instant::now();
    let mut quiet_seconds = 0;
    while started.elapsed() < limit {
        let before = cpu_time_of_threads(pid)?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let used = cpu_time_of_threads(pid)?.saturating_sub(before);
        quiet_seconds = if used < Duration::from_millis(10) {
            quiet_seconds + 1
        } else {
            0
        };
        if quiet_seconds >= 2 {
            return Ok(Some(started.elapsed()));
        }
    }
    Ok(None)
}

/// The voluntary context switches of the process's live threads.
fn switches(pid: u32) -> u64 {
    wit::platform::measure::voluntary_switches(pid)
}

/// The process's inotify instances and their watches in all.
fn inotify(pid: u32) -> Result<(usize, usize)> {
    Ok(wit::platform::measure::inotify(pid)?)
}

/// The directories holding files git knows (`git ls-files`, the root counted as `.`), and
/// those with their ancestors.
fn git_directories(root: &Path) -> Result<(usize, usize)> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()?;
    if !out.status.success() {
        bail!("git ls-files failed in {}", root.display());
    }
    let mut dirs: Vec<&[u8]> = out
        .stdout
        .split(|&b| b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| match f.iter().rposition(|&b| b == b'/') {
            Some(slash) => &f[..slash],
            None => b".".as_slice(),
        })
        .collect();
    dirs.sort_unstable();
    dirs.dedup();
    // Their ancestors too (a directory holding only directories).
    let mut all: Vec<&[u8]> = dirs
        .iter()
        .flat_map(|dir| {
            std::iter::successors(Some(*dir), |d| match d.iter().rposition(|&b| b == b'/') {
                Some(slash) => Some(&d[..slash]),
                None => (*d != b".").then_some(b".".as_slice()),
            })
        })
        .collect();
    all.sort_unstable();
    all.dedup();
    Ok((dirs.len(), all.len()))
}
