//! The code index as the CLI shows it: the status line of `wit daemon status` and
//! `wit status`, and the progress of a first index after `wit init` / `wit daemon start`
//! (a one-line bar on a terminal, plain lines otherwise), all read from the status file the
//! daemon publishes (`.wit/index.json`); no protocol method is involved.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::analysis::progress::IndexStatus;
use crate::daemon::paths::WitPaths;
use crate::rpc::INDEX_STATUS;

/// A build that is done sooner than this shows no progress at all.
const QUIET_FOR: Duration = Duration::from_secs(1);

/// How long to wait for the daemon to publish its first status (an older daemon never does).
const FIRST_STATUS_WITHIN: Duration = Duration::from_secs(2);

/// The published status of the live daemon's index, if it has one.
pub fn current(paths: &WitPaths) -> Option<IndexStatus> {
    let status = IndexStatus::read(&paths.dir.join(INDEX_STATUS))?;
    (Some(status.pid) == daemon_pid(&paths.pid)).then_some(status)
}

/// How the live daemon observes the worktrees (`None`: it published nothing, which it does
/// once the repository has a second worktree).
pub fn watch_status(paths: &WitPaths) -> Option<crate::daemon::watch_set::WatchStatus> {
    use crate::daemon::watch_set::{WatchStatus, WATCH_STATUS};
    let status = WatchStatus::read(&paths.dir.join(WATCH_STATUS))?;
    (Some(status.pid) == daemon_pid(&paths.pid)).then_some(status)
}

/// The status line (`1603 files, 27.9 MB, complete in 3.1 s (12 parsed)`), or why there is
/// none.
pub fn line(paths: &WitPaths) -> String {
    current(paths).map_or_else(|| "not published yet".to_owned(), |s| s.describe())
}

/// Waits for the live daemon's index to be complete, showing its progress on stderr once it
/// has taken more than a second: a bar redrawn in place on a terminal, a line a second
/// otherwise. Returns the final status (`None` when the daemon publishes none).
pub fn follow(paths: &WitPaths) -> Option<IndexStatus> {
    let started = Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let mut shown = false;
    let mut last_line = Instant::now();
    loop {
        let status = current(paths);
        match &status {
            Some(status) if status.complete => {
                if shown {
                    finish_display(terminal, status);
                }
                return Some(status.clone());
            }
            Some(status) if started.elapsed() >= QUIET_FOR => {
                if terminal {
                    eprint!("\r{}", bar(status));
                    let _ = std::io::stderr().flush();
                    shown = true;
                } else if !shown || last_line.elapsed() >= Duration::from_secs(1) {
                    eprintln!("index: {}", status.describe());
                    shown = true;
                    last_line = Instant::now();
                }
            }
            Some(_) => {}
            None if started.elapsed() >= FIRST_STATUS_WITHIN => return None,
            None => {}
        }
        if daemon_pid(&paths.pid).is_none() {
            return status;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn finish_display(terminal: bool, status: &IndexStatus) {
    if terminal {
        eprintln!("\r{}", bar(status));
    } else {
        eprintln!("index: {}", status.describe());
    }
}

/// `[##########..........]  50%  812/1603 files  14.0/27.9 MB`, padded to overwrite.
fn bar(status: &IndexStatus) -> String {
    const WIDTH: u64 = 30;
    let percent = status.percent();
    let filled = (percent * WIDTH / 100) as usize;
    format!(
        "index [{}{}] {percent:>3}%  {}/{} files  {:.1}/{:.1} MB   ",
        "#".repeat(filled),
        ".".repeat(WIDTH as usize - filled),
        if status.complete {
            status.files
        } else {
            status.files_done
        },
        status.files,
        if status.complete {
            status.bytes
        } else {
            status.bytes_done
        } as f64
            / 1e6,
        status.bytes as f64 / 1e6
    )
}

/// The pid in `daemon.pid`, unless that process has exited.
fn daemon_pid(pid_file: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(pid_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let liveness = crate::platform::process::exit_state(pid);
    (liveness != crate::platform::process::Liveness::Dead).then_some(pid)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn the_bar_fills_with_the_bytes_done() {
        let status = IndexStatus {
            files: 10,
            bytes: 2_000_000,
            files_done: 5,
            bytes_done: 1_000_000,
            ..IndexStatus::default()
        };
        let drawn = bar(&status);
        assert!(
            drawn.contains(&format!("[{}{}]", "#".repeat(15), ".".repeat(15))),
            "{drawn}"
        );
        assert!(drawn.contains(" 50%  5/10 files  1.0/2.0 MB"), "{drawn}");
    }
}
