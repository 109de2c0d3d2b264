//! Where a repository's daemon lives: root discovery and the files under `.wit/`.
//!
//! One daemon serves every worktree of a repository (docs/protocol.md 14.1): its state (lock,
//! pid, database, log, index) lives once, in the main worktree's `.wit/`; each worktree's
//! own `.wit/` holds the socket the daemon serves it on (and its `session.id`). For a
//! repository with one worktree both are the same directory.

use std::path::{Path, PathBuf};

use crate::worktrees::repository_of;

/// Environment variable naming the repository root (docs/protocol.md 1.1).
pub const ROOT_ENV: &str = "WIT_REPO_ROOT";

/// The files of one repository's wit state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitPaths {
    /// The worktree root (the repository root for its main worktree).
    pub root: PathBuf,
    /// The main worktree's root: the repository's, where its state lives.
    pub main_root: PathBuf,
    /// `<main root>/.wit`, mode 0700: the repository's state directory.
    pub dir: PathBuf,
    /// `<root>/.wit`, mode 0700: this worktree's directory (its socket).
    pub worktree_dir: PathBuf,
    /// `<root>/.wit/daemon.sock`, the JSON-RPC socket of this worktree; when that path is
    /// longer than a Unix socket address allows, a short one ([`short_socket`]).
    pub socket: PathBuf,
    /// `<main root>/.wit/daemon.lock`, held exclusively by the live daemon.
    pub lock: PathBuf,
    /// `<main root>/.wit/daemon.pid`, the live daemon's pid alone, in decimal with a newline
    /// (clients of the earlier implementation parse it as a plain integer).
    pub pid: PathBuf,
    /// `<main root>/.wit/daemon.json`, what else the live daemon publishes (start time, version,
    /// socket): [`crate::daemon::lifecycle::PidRecord`].
    pub info: PathBuf,
    /// `<main root>/.wit/state.db`, the SQLite database.
    pub database: PathBuf,
    /// `<main root>/.wit/daemon.log`, where a background daemon writes its log.
    pub log: PathBuf,
    /// `<main root>/.wit/launch.lock`, serialises auto-start attempts of concurrent CLI calls.
    pub launch_lock: PathBuf,
    /// `<root>/.wit/session.id`, the default session identity created by `wit init`.
    pub session_id: PathBuf,
}

/// The longest path a Unix socket address holds (`sun_path` is 108 bytes with its NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// The name of the file in a worktree's `.wit/` that records the short socket path it is
/// served on when its own is too long.
pub const SOCKET_PATH_FILE: &str = "daemon.sock.path";

/// The socket of the worktree whose `.wit/` is `worktree_dir`: `daemon.sock` there, or, when
/// that path is too long for a Unix socket, [`short_socket`] of it. Daemon and clients
/// derive the same path from the worktree, so neither has to read the other's record.
fn socket_for(worktree_dir: &Path) -> PathBuf {
    let natural = worktree_dir.join("daemon.sock");
    if natural.as_os_str().len() <= MAX_SOCKET_PATH {
        return natural;
    }
    short_socket(&natural)
}

/// A short socket path standing for `natural`: `/tmp/wit-<uid>/<hash of the path>.sock` (the
/// directory is the user's own, mode 0700, checked when the socket is bound).
pub fn short_socket(natural: &Path) -> PathBuf {
    let hash = xxhash_rust::xxh3::xxh3_64(natural.as_os_str().as_encoded_bytes());
    short_socket_dir().join(format!("{hash:016x}.sock"))
}

/// The directory of short socket paths: `/tmp/wit-<uid>`.
pub fn short_socket_dir() -> PathBuf {
    let uid = rustix::process::getuid().as_raw();
    PathBuf::from(format!("/tmp/wit-{uid}"))
}

impl WitPaths {
    /// The paths for the worktree at `root`, the state in its repository's main worktree.
    pub fn for_root(root: &Path) -> Self {
        let main_root = repository_of(root).map_or_else(|| root.to_path_buf(), |r| r.main_root);
        let same = std::fs::canonicalize(root).is_ok_and(|r| r == main_root);
        let main_root = if same { root.to_path_buf() } else { main_root };
        let dir = main_root.join(".wit");
        let worktree_dir = root.join(".wit");
        Self {
            root: root.to_path_buf(),
            main_root,
            socket: socket_for(&worktree_dir),
            session_id: worktree_dir.join("session.id"),
            worktree_dir,
            lock: dir.join("daemon.lock"),
            pid: dir.join("daemon.pid"),
            info: dir.join("daemon.json"),
            database: dir.join("state.db"),
            log: dir.join("daemon.log"),
            launch_lock: dir.join("launch.lock"),
            dir,
        }
    }

    /// Whether this worktree is served on a short socket path (its own is too long).
    pub fn socket_is_short(&self) -> bool {
        !self.socket.starts_with(&self.worktree_dir)
    }

    /// Whether `root` is a linked worktree of a repository whose main worktree is elsewhere.
    pub fn is_linked_worktree(&self) -> bool {
        self.main_root != self.root
    }

    /// The paths of the repository's main worktree.
    pub fn main(&self) -> WitPaths {
        WitPaths::for_root(&self.main_root)
    }
}

/// Finds the repository root: `explicit` (from `--repo`), else `WIT_REPO_ROOT`, else the top
/// of the git work tree containing the current directory, else the current directory.
pub fn discover_root(explicit: Option<&Path>) -> std::io::Result<PathBuf> {
    let cwd = std::env::current_dir()?;
    if let Some(dir) = explicit {
        return absolute_dir(&cwd, dir);
    }
    if let Some(dir) = std::env::var_os(ROOT_ENV).filter(|v| !v.is_empty()) {
        return absolute_dir(&cwd, Path::new(&dir));
    }
    Ok(git_top_level(&cwd).unwrap_or(cwd))
}

fn absolute_dir(cwd: &Path, dir: &Path) -> std::io::Result<PathBuf> {
    let joined = cwd.join(dir);
    let canonical = joined.canonicalize()?;
    if !canonical.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("{} is not a directory", joined.display()),
        ));
    }
    Ok(canonical)
}

/// The nearest ancestor of `start` (itself included) that holds a `.git` directory or file.
fn git_top_level(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn git_top_level_finds_the_nearest_repository() {
        let temp = tempfile::tempdir().unwrap();
        let repo = temp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        assert_eq!(git_top_level(&repo.join("src/deep")), Some(repo.clone()));
        assert_eq!(git_top_level(temp.path()), None);
    }

    #[test]
    fn explicit_root_must_be_a_directory() {
        let temp = tempfile::tempdir().unwrap();
        let file = temp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(discover_root(Some(&file)).is_err());
        let found = discover_root(Some(temp.path())).unwrap();
        assert_eq!(found, temp.path().canonicalize().unwrap());
    }
}
