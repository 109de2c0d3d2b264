//! The `cli` section: one CLI call and a commit through the git hooks, timed as processes.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::measure::fmt_duration;

/// Median wall time of `runs` runs of the command `make` builds afresh for each run (whatever
/// `make` does to prepare it is not timed); fails when a run exits non-zero.
pub(crate) fn median_wall(
    runs: usize,
    mut make: impl FnMut(usize) -> Result<Command>,
) -> Result<Duration> {
    let mut times = Vec::with_capacity(runs);
    for i in 0..runs {
        let mut command = make(i)?;
        let started = Instant::now();
        let output = command.output()?;
        times.push(started.elapsed());
        if !output.status.success() {
            bail!(
                "{:?} failed: {}{}",
                command,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    times.sort_unstable();
    Ok(times[times.len() / 2])
}

/// One `git commit` of a one-line change to a file no contract covers.
pub(crate) fn commit_command(root: &Path, note: &str) -> Result<Command> {
    std::fs::write(root.join("notes.txt"), format!("{note}\n"))?;
    let status = Command::new("git")
        .args(["add", "notes.txt"])
        .current_dir(root)
        .status()?;
    if !status.success() {
        bail!("git add failed");
    }
    let mut command = Command::new("git");
    command
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(["commit", "-q", "-m", "bench"])
        .current_dir(root)
        .env("WIT_SESSION", "bench-committer");
    Ok(command)
}

/// Wall time of one CLI call against the running daemon, and of a `git commit` with and
/// without wit's hooks (no contract at stake).
pub(crate) fn cli_and_hook_timings(wit: &Path, root: &Path, runs: usize) -> Result<()> {
    let cli = |args: Vec<String>| {
        let mut command = Command::new(wit);
        command
            .args(&args)
            .arg("--repo")
            .arg(root)
            .env("WIT_SESSION", "bench-cli");
        command
    };
    let ping = median_wall(runs, |_| Ok(cli(vec!["call".into(), "ping".into()])))?;
    let lock = median_wall(runs, |i| {
        Ok(cli(vec![
            "lock".into(),
            format!("src/cli_{i}.ts:f"),
            "--ttl".into(),
            "10m".into(),
        ]))
    })?;
    let release = median_wall(runs, |i| {
        Ok(cli(vec!["release".into(), format!("src/cli_{i}.ts:f")]))
    })?;
    println!(
        "| CLI call, median wall of {runs} processes: `wit call ping` {} | `wit lock` {} | `wit release` {} | | | | | |",
        fmt_duration(ping),
        fmt_duration(lock),
        fmt_duration(release)
    );
    let git_floor = median_wall(runs, |i| commit_command(root, &format!("plain {i}")))?;
    let status = cli(vec!["hook".into(), "install".into()]).output()?;
    if !status.status.success() {
        bail!(
            "wit hook install failed: {}",
            String::from_utf8_lossy(&status.stderr)
        );
    }
    let with_hooks = median_wall(runs, |i| commit_command(root, &format!("hooked {i}")))?;
    println!(
        "| git commit, median of {runs}: without hooks {} | with wit's hooks {} | hooks add {} | | | | | |",
        fmt_duration(git_floor),
        fmt_duration(with_hooks),
        fmt_duration(with_hooks.saturating_sub(git_floor))
    );
    Ok(())
}
