//! The daemon's life on disk: the `.wit/` directory, the exclusive lock that guarantees one
//! daemon per root, stale-socket recovery, the pid file, signals and clean shutdown
//! (docs/protocol.md section 5).

use std::fs::{self, DirBuilder, File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::net::UnixListener;
use tokio::signal::unix::{signal, Signal, SignalKind};

use super::paths::WitPaths;

/// Why the daemon could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// Another daemon holds `.wit/daemon.lock` for this root.
    #[error("a wit daemon is already running for {root} (pid {pid}); its socket is {socket}")]
    AlreadyRunning {
        /// The repository root.
        root: PathBuf,
        /// The running daemon's pid, or `unknown`.
        pid: String,
        /// The live socket, left untouched.
        socket: PathBuf,
    },
    /// The socket path is longer than a Unix socket address allows.
    #[error("socket path {0} is too long for a Unix socket (at most 107 bytes); use a shorter repository path")]
    SocketPathTooLong(PathBuf),
    /// A file-system step failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Opening the state (database, index) failed.
    #[error("could not open the daemon state: {0}")]
    State(String),
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> DaemonError {
    let context = context.into();
    move |source| DaemonError::Io { context, source }
}

/// What the live daemon publishes in `.wit/daemon.json` (the pid file itself holds the bare
/// pid, docs/protocol.md 5).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PidRecord {
    /// The daemon's process id.
    pub pid: u32,
    /// When it started, in unix milliseconds.
    pub started_at_ms: u64,
    /// The wit version it runs.
    pub version: String,
    /// The socket it serves.
    pub socket: PathBuf,
    /// Its store: `sqlite`, or the PostgreSQL URL without its password and the project.
    #[serde(default)]
    pub store: String,
}

impl PidRecord {
    /// Reads `daemon.json`, if there is a readable one.
    pub fn read(path: &Path) -> Option<Self> {
        let text = fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }
}

/// The pid in a pid file (`<pid>\n`), read as the earlier implementation's clients do.
pub fn read_pid_file(path: &Path) -> Option<u32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The resources a running daemon holds; dropping it does not clean up, [`Self::release`] does.
#[derive(Debug)]
pub struct Residence {
    paths: WitPaths,
    /// Held for the daemon's lifetime: the kernel drops the lock when the process dies, which
    /// is what proves a leftover socket stale.
    _lock: File,
}

impl Residence {
    /// The paths of this daemon.
    pub fn paths(&self) -> &WitPaths {
        &self.paths
    }

    /// Removes the socket and pid file; the lock is released when `self` drops.
    pub fn release(self) {
        for path in [&self.paths.socket, &self.paths.pid, &self.paths.info] {
            if let Err(error) = fs::remove_file(path) {
                if error.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(path = %path.display(), %error, "could not remove on shutdown");
                }
            }
        }
    }
}

/// Creates `.wit/` (0700) with its `.gitignore`, if missing: the repository's, and the
/// worktree's when it is a linked one.
pub fn ensure_state_dir(paths: &WitPaths) -> Result<(), DaemonError> {
    make_wit_dir(&paths.dir)?;
    if paths.worktree_dir != paths.dir {
        make_wit_dir(&paths.worktree_dir)?;
    }
    Ok(())
}

/// Creates a `.wit/` directory (0700) with its `.gitignore`, if missing.
pub fn make_wit_dir(dir: &Path) -> Result<(), DaemonError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_error(format!("creating {}", dir.display())))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(io_error(format!("setting the mode of {}", dir.display())))?;
    let gitignore = dir.join(".gitignore");
    if !gitignore.exists() {
        fs::write(&gitignore, "*\n")
            .map_err(io_error(format!("writing {}", gitignore.display())))?;
    }
    Ok(())
}

/// Takes the daemon lock, clears a stale socket and binds a fresh one (0600), writes the pid
/// file. A second daemon on the same root fails here without touching the live socket.
pub fn take_residence(
    paths: &WitPaths,
    store: &str,
) -> Result<(Residence, UnixListener), DaemonError> {
    ensure_state_dir(paths)?;
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&paths.lock)
        .map_err(io_error(format!("opening {}", paths.lock.display())))?;
    lock_residence(&lock, paths)?;
    // We hold the lock, so any socket file left here belongs to a dead daemon.
    let listener = bind_socket(&paths.socket)?;
    record_socket(paths)?;
    write_pid_file(paths, store)?;
    Ok((
        Residence {
            paths: paths.clone(),
            _lock: lock,
        },
        listener,
    ))
}

/// How long a daemon waits for the lock of a daemon known dead to come free.
const DEAD_HOLDER_GRACE: Duration = Duration::from_secs(3);

/// Takes `.wit/daemon.lock`. A daemon killed while it was starting a child process leaves
/// the lock with that child until it reaches `exec` (the child shares the lock's open file
/// until then; under load, tens of milliseconds): while the pid file names a process that has
/// exited, or none, the lock is retried for [`DEAD_HOLDER_GRACE`] instead of taking that for
/// a live daemon (a CI failure of `spine::restart_after_sigkill_cleans_the_stale_socket_and_keeps_data`).
fn lock_residence(lock: &File, paths: &WitPaths) -> Result<(), DaemonError> {
    let started = Instant::now();
    let deadline = started + DEAD_HOLDER_GRACE;
    loop {
        match lock.try_lock() {
            Ok(()) => {
                if started.elapsed() >= Duration::from_millis(10) {
                    tracing::info!(
                        waited_ms = started.elapsed().as_millis() as u64,
                        "the lock of a daemon that had exited came free"
                    );
                }
                return Ok(());
            }
            Err(TryLockError::WouldBlock) => {
                let recorded = read_pid_file(&paths.pid);
                let holder_is_dead = recorded.is_none_or(|pid| {
                    matches!(
                        crate::platform::process::exit_state(pid),
                        crate::platform::process::Liveness::Dead
                    )
                });
                if !holder_is_dead || Instant::now() >= deadline {
                    return Err(DaemonError::AlreadyRunning {
                        root: paths.root.clone(),
                        pid: recorded
                            .map(|pid| pid.to_string())
                            .unwrap_or_else(|| "unknown".into()),
                        socket: paths.socket.clone(),
                    });
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(TryLockError::Error(source)) => {
                return Err(DaemonError::Io {
                    context: format!("locking {}", paths.lock.display()),
                    source,
                })
            }
        }
    }
}

/// Binds a fresh socket (0600) at `socket`, removing a file left there: called only by the
/// daemon holding the repository's lock, so any socket there belongs to a dead daemon.
pub fn bind_socket(socket: &Path) -> Result<UnixListener, DaemonError> {
    if socket.as_os_str().len() > super::paths::MAX_SOCKET_PATH {
        return Err(DaemonError::SocketPathTooLong(socket.to_path_buf()));
    }
    if socket.parent() == Some(super::paths::short_socket_dir().as_path()) {
        own_short_socket_dir()?;
    }
    match fs::remove_file(socket) {
        Ok(()) => tracing::info!(socket = %socket.display(), "removed a stale socket"),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(DaemonError::Io {
                context: format!("removing the stale socket {}", socket.display()),
                source,
            })
        }
    }
    let listener =
        UnixListener::bind(socket).map_err(io_error(format!("binding {}", socket.display())))?;
    fs::set_permissions(socket, fs::Permissions::from_mode(0o600)).map_err(io_error(format!(
        "setting the mode of {}",
        socket.display()
    )))?;
    Ok(listener)
}

/// Records in the worktree's `.wit/` the short socket path it is served on when its own is
/// too long for a Unix socket (issue 35), for people and tools that look there; removes a
/// stale record otherwise.
pub fn record_socket(paths: &super::paths::WitPaths) -> Result<(), DaemonError> {
    let record = paths.worktree_dir.join(super::paths::SOCKET_PATH_FILE);
    if paths.socket_is_short() {
        let text = format!("{}\n", paths.socket.display());
        // Atomically: a reader never sees a half-written path (an empty one made a client's
        // connect fail with EINVAL).
        write_atomically(&record, text.as_bytes())?;
        tracing::info!(socket = %paths.socket.display(),
            "the worktree's socket path is too long for a Unix socket; served on a short path");
    } else {
        let _ = fs::remove_file(&record);
    }
    Ok(())
}

/// Makes the directory of short socket paths (mode 0700) or checks that it is this user's
/// own and nobody else's: another user's directory there could take the sockets over.
fn own_short_socket_dir() -> Result<(), DaemonError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = super::paths::short_socket_dir();
    let made = fs::DirBuilder::new().mode(0o700).create(&dir);
    if let Err(error) = made {
        if error.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(DaemonError::Io {
                context: format!("creating {}", dir.display()),
                source: error,
            });
        }
    }
    let meta =
        fs::symlink_metadata(&dir).map_err(io_error(format!("reading {}", dir.display())))?;
    let uid = rustix::process::getuid().as_raw();
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(DaemonError::Io {
            context: format!("the short socket directory {}", dir.display()),
            source: std::io::Error::other(
                "it is not a directory of this user's alone (mode 0700); remove it",
            ),
        });
    }
    Ok(())
}

fn write_pid_file(paths: &WitPaths, store: &str) -> Result<(), DaemonError> {
    let record = PidRecord {
        pid: std::process::id(),
        started_at_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        socket: paths.socket.clone(),
        store: store.to_owned(),
    };
    let text = serde_json::to_string(&record).map_err(|e| DaemonError::State(e.to_string()))?;
    // The metadata first: whoever sees the pid file finds the rest already there.
    write_atomically(&paths.info, text.as_bytes())?;
    write_atomically(&paths.pid, format!("{}\n", record.pid).as_bytes())
}

/// Writes `path` (mode 0600) through a temporary file and a rename, so that a reader sees
/// the old content or the new one, never a part.
fn write_atomically(path: &Path, content: &[u8]) -> Result<(), DaemonError> {
    let mut temp_name = path.as_os_str().to_owned();
    temp_name.push(".tmp");
    let temp = PathBuf::from(temp_name);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&temp)
        .map_err(io_error(format!("writing {}", temp.display())))?;
    file.write_all(content)
        .map_err(io_error(format!("writing {}", temp.display())))?;
    fs::rename(&temp, path).map_err(io_error(format!("writing {}", path.display())))
}

/// The signals that stop the daemon (SIGTERM, SIGINT, SIGHUP), installed: from then on they
/// no longer end the process at once but are received here. Installed before the socket is
/// bound, so a client that sees the socket can always stop the daemon cleanly.
pub struct TerminationSignals {
    terminate: Signal,
    interrupt: Signal,
    hangup: Signal,
}

impl TerminationSignals {
    /// Installs the handlers (within a tokio runtime).
    pub fn install() -> Result<Self, DaemonError> {
        Ok(Self {
            terminate: signal(SignalKind::terminate()).map_err(io_error("installing SIGTERM"))?,
            interrupt: signal(SignalKind::interrupt()).map_err(io_error("installing SIGINT"))?,
            hangup: signal(SignalKind::hangup()).map_err(io_error("installing SIGHUP"))?,
        })
    }

    /// Resolves when one of them arrives.
    pub async fn received(mut self) {
        let name = tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.hangup.recv() => "SIGHUP",
        };
        tracing::info!(signal = name, "shutting down");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn second_residence_on_one_root_is_refused_and_leaves_the_socket() {
        let temp = tempfile::tempdir().unwrap();
        let paths = WitPaths::for_root(temp.path());
        let (first, _listener) = take_residence(&paths, "sqlite").unwrap();
        let error = take_residence(&paths, "sqlite").unwrap_err();
        assert!(
            matches!(error, DaemonError::AlreadyRunning { .. }),
            "{error}"
        );
        assert!(paths.socket.exists());
        let mode = fs::metadata(&paths.dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let mode = fs::metadata(&paths.socket).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            fs::read_to_string(paths.dir.join(".gitignore")).unwrap(),
            "*\n"
        );
        assert_eq!(
            PidRecord::read(&paths.info).unwrap().pid,
            std::process::id()
        );
        // The pid file is the bare pid: what the earlier implementation's clients parse.
        let text = fs::read_to_string(&paths.pid).unwrap();
        assert_eq!(text, format!("{}\n", std::process::id()));
        assert_eq!(text.trim().parse::<u32>().unwrap(), std::process::id());
        first.release();
        assert!(!paths.socket.exists());
        assert!(!paths.pid.exists());
        assert!(!paths.info.exists());
    }

    #[tokio::test]
    async fn a_leftover_socket_without_a_lock_holder_is_replaced() {
        let temp = tempfile::tempdir().unwrap();
        let paths = WitPaths::for_root(temp.path());
        ensure_state_dir(&paths).unwrap();
        fs::write(&paths.socket, "stale").unwrap();
        let (residence, _listener) = take_residence(&paths, "sqlite").unwrap();
        residence.release();
    }

    #[tokio::test]
    async fn the_lock_of_a_dead_daemon_held_a_moment_longer_is_waited_for() {
        let temp = tempfile::tempdir().unwrap();
        let paths = WitPaths::for_root(temp.path());
        ensure_state_dir(&paths).unwrap();
        // A daemon that has exited (its pid names no process) while another open file of
        // the lock, as a child on its way to exec holds it, keeps the lock 150 ms longer.
        let mut exited = std::process::Command::new("true").spawn().unwrap();
        exited.wait().unwrap();
        fs::write(&paths.pid, format!("{}\n", exited.id())).unwrap();
        let holder = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&paths.lock)
            .unwrap();
        holder.try_lock().unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            drop(holder);
        });
        let (residence, _listener) = take_residence(&paths, "sqlite").unwrap();
        release.join().unwrap();
        residence.release();
    }
}
