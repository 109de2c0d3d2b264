//! Starting, stopping and inspecting a repository's daemon from the outside (CLI side).
//!
//! `start` spawns `wit daemon run` in its own process group with its log in
//! `.wit/daemon.log` and returns once `ping` answers. Concurrent starts are serialised by an
//! exclusive lock on `.wit/launch.lock`, so many CLI calls on a cold repository end with
//! exactly one daemon; a stale socket only ever means "not running". In a linked worktree
//! the lock, log and daemon are the repository's (its main worktree's): a call there starts
//! the repository's daemon, or waits for the running one to serve the new worktree.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::lifecycle::{ensure_state_dir, read_pid_file, DaemonError, PidRecord};
use super::paths::WitPaths;
use crate::client::WitClient;

/// How long `start` waits for a freshly spawned daemon to answer `ping`.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a launcher operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Preparing `.wit/` failed.
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    /// The daemon process could not be spawned.
    #[error("could not start the daemon ({program}): {source}")]
    Spawn {
        /// The program that was run.
        program: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The daemon was spawned but did not answer in time.
    #[error("the daemon did not answer within {timeout:?}; see {log}")]
    NoAnswer {
        /// How long we waited.
        timeout: Duration,
        /// The daemon's log file.
        log: String,
    },
    /// The daemon exited before it answered (its last log line says why).
    #[error("the daemon exited at start ({status}): {last_line}")]
    Exited {
        /// How it exited.
        status: String,
        /// The last line of its log.
        last_line: String,
    },
    /// Signalling the daemon failed.
    #[error("could not signal the daemon (pid {pid}): {reason}")]
    Signal {
        /// The daemon's pid.
        pid: u32,
        /// What went wrong.
        reason: String,
    },
    /// A file-system step failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// What `status` found.
#[derive(Debug, Clone)]
pub struct DaemonStatus {
    /// What the daemon published in `daemon.json`, when there is one.
    pub record: Option<PidRecord>,
    /// Whether the daemon answered `ping`.
    pub answering: bool,
    /// The socket path.
    pub socket: PathBuf,
}

/// Whether the daemon answers `ping` right now.
pub async fn is_answering(client: &WitClient) -> bool {
    client.ping().await.is_ok()
}

/// How a daemon started in the background is set up (unset: its defaults and environment).
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    /// Its log filter.
    pub log_level: Option<String>,
    /// Its store (`WIT_STORE` of the child: a URL's password never shows in `ps`).
    pub store: Option<String>,
    /// Its project (`WIT_PROJECT` of the child).
    pub project: Option<String>,
}

/// Makes sure a daemon serves `paths.root`, starting one in the background when none answers.
/// Returns whether this call started it.
pub async fn ensure_running(
    paths: &WitPaths,
    options: &LaunchOptions,
) -> Result<bool, LaunchError> {
    let client = WitClient::new(&paths.socket);
    if is_answering(&client).await {
        return Ok(false);
    }
    ensure_state_dir(paths)?;
    let launch_lock = open_launch_lock(paths)?;
    // Only one launcher at a time gets past this point; the others find the daemon running.
    let locked = tokio::task::spawn_blocking(move || launch_lock.lock().map(|()| launch_lock))
        .await
        .map_err(|e| LaunchError::Io {
            context: "waiting for the launch lock".into(),
            source: std::io::Error::other(e.to_string()),
        })?
        .map_err(|source| LaunchError::Io {
            context: format!("locking {}", paths.launch_lock.display()),
            source,
        })?;
    let started = if is_answering(&client).await {
        false
    } else if paths.is_linked_worktree()
        && is_answering(&WitClient::new(&paths.main().socket)).await
    {
        // The repository's daemon runs and picks this new worktree up by itself.
        wait_for_worktree(&client, paths).await?;
        false
    } else {
        let mut child = spawn_daemon(paths, options)?;
        wait_until_answering(&client, paths, &mut child).await?;
        true
    };
    drop(locked);
    Ok(started)
}

fn open_launch_lock(paths: &WitPaths) -> Result<File, LaunchError> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&paths.launch_lock)
        .map_err(|source| LaunchError::Io {
            context: format!("opening {}", paths.launch_lock.display()),
            source,
        })
}

fn spawn_daemon(
    paths: &WitPaths,
    options: &LaunchOptions,
) -> Result<std::process::Child, LaunchError> {
    let program = std::env::current_exe().map_err(|source| LaunchError::Io {
        context: "finding the wit executable".into(),
        source,
    })?;
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&paths.log)
        .map_err(|source| LaunchError::Io {
            context: format!("opening {}", paths.log.display()),
            source,
        })?;
    let log_err = log.try_clone().map_err(|source| LaunchError::Io {
        context: format!("opening {}", paths.log.display()),
        source,
    })?;
    let mut command = Command::new(&program);
    command
        .arg("daemon")
        .arg("run")
        .arg("--repo")
        .arg(&paths.root)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0);
    if let Some(level) = &options.log_level {
        command.arg("--log-level").arg(level);
    }
    if let Some(store) = &options.store {
        command.env(super::store_choice::STORE_ENV, store);
    }
    if let Some(project) = &options.project {
        command.env(super::store_choice::PROJECT_ENV, project);
    }
    // The child outlives this process: it is only watched until it answers (dropping a
    // `Child` neither kills nor waits for it).
    command
        .spawn()
        .map_err(|source| LaunchError::Spawn { program, source })
}

async fn wait_until_answering(
    client: &WitClient,
    paths: &WitPaths,
    child: &mut std::process::Child,
) -> Result<(), LaunchError> {
    let deadline = Instant::now() + START_TIMEOUT;
    let mut pause = Duration::from_micros(500);
    while Instant::now() < deadline {
        if is_answering(client).await {
            return Ok(());
        }
        // A daemon that could not open its state exits at once: say why, without waiting.
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(&paths.log).unwrap_or_default();
            let last_line = log
                .lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .unwrap_or("no log line")
                .to_owned();
            return Err(LaunchError::Exited {
                status: status.to_string(),
                last_line,
            });
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
    Err(LaunchError::NoAnswer {
        timeout: START_TIMEOUT,
        log: paths.log.display().to_string(),
    })
}

/// Waits until the running repository daemon serves the worktree of `paths` (it rescans the
/// worktrees every [`super::worktree_server::RESCAN`]).
async fn wait_for_worktree(client: &WitClient, paths: &WitPaths) -> Result<(), LaunchError> {
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if is_answering(client).await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(LaunchError::NoAnswer {
        timeout: START_TIMEOUT,
        log: paths.log.display().to_string(),
    })
}

/// Reads the pid file and pings the daemon.
pub async fn status(paths: &WitPaths) -> DaemonStatus {
    let client = WitClient::new(&paths.socket);
    DaemonStatus {
        record: PidRecord::read(&paths.info),
        answering: is_answering(&client).await,
        socket: paths.socket.clone(),
    }
}

/// Asks the daemon to stop (SIGTERM) and waits until its process has exited, so that its
/// `daemon.lock` is free and a `wit daemon start` right after succeeds (a socket that stops
/// answering is not enough: the process still holds the lock while it drains and cleans up).
/// Returns false when no daemon was running.
pub async fn stop(paths: &WitPaths, timeout: Duration) -> Result<bool, LaunchError> {
    let client = WitClient::new(&paths.socket);
    let Some(daemon_pid) = read_pid_file(&paths.pid) else {
        return Ok(false);
    };
    if !is_answering(&client).await {
        return Ok(false);
    }
    let pid = i32::try_from(daemon_pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or(LaunchError::Signal {
            pid: daemon_pid,
            reason: "invalid pid in the pid file".into(),
        })?;
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).map_err(|e| {
        LaunchError::Signal {
            pid: daemon_pid,
            reason: e.to_string(),
        }
    })?;
    if has_exited(pid, timeout).await {
        Ok(true)
    } else {
        Err(LaunchError::NoAnswer {
            timeout,
            log: paths.log.display().to_string(),
        })
    }
}

/// Whether process `pid` exited within `timeout`: gone, or a zombie whose threads have all
/// ended (its files, the lock among them, are closed then; its parent may not have reaped it
/// yet).
async fn has_exited(pid: rustix::process::Pid, timeout: Duration) -> bool {
    let raw = pid.as_raw_nonzero().get().unsigned_abs();
    let deadline = Instant::now() + timeout;
    loop {
        let gone = rustix::process::test_kill_process(pid).is_err()
            || crate::platform::process::exit_state(raw)
                == crate::platform::process::Liveness::Dead;
        if gone {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
