//! The `restart` section: `wit daemon stop && wit daemon start`, round after round, on a
//! repository of its own (issue 32.6: `stop` returns once the daemon has exited, so the
//! `start` right after never finds the old daemon's lock still held).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::measure::{fmt_duration, p50_p99};

/// Runs `rounds` stop-then-start rounds through the CLI and prints how many succeeded, with
/// the wall times of each step.
pub(crate) fn restart(wit: &Path, dir: &Path, rounds: usize) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    if !Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()?
        .success()
    {
        bail!("git init failed");
    }
    std::fs::write(
        dir.join("a.ts"),
        "export function a(): number {\n  return 1;\n}\n",
    )?;
    let daemon = |verb: &str| -> Result<(bool, Duration, String)> {
        let started = Instant::now();
        let output = Command::new(wit)
            .args(["daemon", verb, "--repo"])
            .arg(dir)
            .env_remove("WIT_REPO_ROOT")
            .stdin(Stdio::null())
            .output()?;
        Ok((
            output.status.success(),
            started.elapsed(),
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ))
    };
    let (started, ..) = daemon("start")?;
    if !started {
        bail!("the first `wit daemon start` failed");
    }
    let mut stops = Vec::with_capacity(rounds);
    let mut starts = Vec::with_capacity(rounds);
    let mut succeeded = 0;
    let mut first_failure = None;
    for _ in 0..rounds {
        let (stopped, stop_time, stop_err) = daemon("stop")?;
        let (started, start_time, start_err) = daemon("start")?;
        stops.push(stop_time);
        starts.push(start_time);
        if stopped && started {
            succeeded += 1;
        } else if first_failure.is_none() {
            first_failure = Some(format!("{stop_err} {start_err}").trim().to_owned());
        }
    }
    let _ = daemon("stop");
    let (stop50, stop99) = p50_p99(&mut stops);
    let (start50, start99) = p50_p99(&mut starts);
    println!(
        "| `wit daemon stop && wit daemon start`, {rounds} rounds (target {rounds} of {rounds}): {succeeded} succeeded{} | stop p50 {} p99 {} | start p50 {} p99 {} | | | | |",
        first_failure
            .map(|failure| format!(" (first failure: {failure})"))
            .unwrap_or_default(),
        fmt_duration(stop50),
        fmt_duration(stop99),
        fmt_duration(start50),
        fmt_duration(start99)
    );
    Ok(())
}
