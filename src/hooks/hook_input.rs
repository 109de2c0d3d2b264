//! What every harness hook (the edit gate, the news hook) does before its own work, under one
//! deadline: the payload read from stdin (a harness may keep stdin open: the first JSON value
//! is the payload, and nothing waits past the deadline), the repository found from the
//! payload's working directory, and the session.

use std::io::IsTerminal;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::daemon::paths::{discover_root, WitPaths, ROOT_ENV};
use crate::doorway::{session, Doorway};

/// The whole budget of a hook, process start to answer; past it the hook lets the harness go
/// on.
pub const BUDGET: Duration = Duration::from_secs(1);

/// The environment variable that overrides [`BUDGET`], in milliseconds (a value that is not a
/// positive integer is ignored).
pub const BUDGET_ENV: &str = "WIT_GATE_TIMEOUT_MS";

/// The largest payload read from stdin (the daemon's default body limit).
const MAX_PAYLOAD: u64 = 32 << 20;

/// When a hook must have answered.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// The moment.
    pub at: Instant,
    /// The budget it came from.
    pub budget: Duration,
}

impl Deadline {
    /// [`BUDGET_ENV`] (or [`BUDGET`]) from `started`.
    pub fn from_env(started: Instant) -> Self {
        let budget = std::env::var(BUDGET_ENV)
            .ok()
            .and_then(|ms| ms.trim().parse::<u64>().ok())
            .filter(|&ms| ms > 0)
            .map_or(BUDGET, Duration::from_millis);
        Self {
            at: started + budget,
            budget,
        }
    }

    /// The doorway to `paths`'s daemon with every call ending by this deadline; `autostart`
    /// says whether a call may start the daemon.
    pub fn doorway(&self, paths: WitPaths, autostart: bool) -> Doorway {
        Doorway::new(paths, autostart).with_deadline(self.at, self.budget)
    }

    /// The time left (zero once passed).
    pub fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }
}

/// Why no payload was read.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// JSON of the wrong shape.
    #[error("{0}")]
    Shape(String),
    /// Nothing complete arrived before the deadline (stdin kept open).
    #[error("no payload on stdin within {} ms", .0.as_millis())]
    TimedOut(Duration),
}

/// How long the payload may pause before what has arrived is tried as a whole payload.
const PAUSE: Duration = Duration::from_millis(10);

/// The room a read of the payload has at least (the payload grows by doubling past it).
const READ_ROOM: usize = 16 << 10;

/// Reads the first JSON value on stdin, waiting no later than `deadline`. The read runs on
/// this thread and never blocks: stdin is polled with the time left, so a harness that keeps
/// stdin open without sending a whole payload costs the budget, not a hang. What has arrived is
/// tried as a payload when stdin ends, when it pauses after a closing bracket, and whenever it
/// has doubled since the last try (so the tries of a large payload cost twice its parse).
pub fn read_payload(deadline: Deadline) -> Result<Value, PayloadError> {
    if std::io::stdin().is_terminal() {
        return Err(PayloadError::Shape(
            "no payload (stdin is a terminal)".into(),
        ));
    }
    let cannot = |error: std::io::Error| PayloadError::Shape(format!("cannot read stdin: {error}"));
    // Read straight into the payload's spare room: a zeroed read buffer of its own (64 KiB)
    // cost the hook 16 page faults and a memset for a payload of a few hundred bytes.
    let mut payload: Vec<u8> = Vec::with_capacity(READ_ROOM);
    let mut tried = 0;
    loop {
        let left = deadline.left();
        if left.is_zero() {
            return Err(PayloadError::TimedOut(deadline.budget));
        }
        let ready = stdin_readable(left.min(PAUSE)).map_err(cannot)?;
        if ready {
            if payload.capacity() - payload.len() < READ_ROOM / 2 {
                payload.reserve(payload.len().max(READ_ROOM));
            }
            match rustix::io::read(
                rustix::stdio::stdin(),
                rustix::buffer::spare_capacity(&mut payload),
            ) {
                Ok(0) => return first_value(&payload, true).unwrap_or(Err(empty())),
                Ok(_) => {}
                Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
                Err(error) => return Err(cannot(error.into())),
            }
            if payload.len() as u64 >= MAX_PAYLOAD {
                return first_value(&payload, true).unwrap_or(Err(empty()));
            }
        }
        let doubled = payload.len() >= tried * 2;
        let paused = !ready && ends_in_a_bracket(&payload);
        if payload.len() > tried && (doubled || paused) {
            if let Some(read) = first_value(&payload, false) {
                return read;
            }
            tried = payload.len();
        }
    }
}

fn empty() -> PayloadError {
    PayloadError::Shape("empty payload".into())
}

/// Whether stdin has something to read (or has ended) within `wait`.
fn stdin_readable(wait: Duration) -> std::io::Result<bool> {
    let timeout = rustix::time::Timespec {
        tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    let stdin = rustix::stdio::stdin();
    let mut fds = [rustix::event::PollFd::new(
        &stdin,
        rustix::event::PollFlags::IN,
    )];
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(ready) => Ok(ready > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(error) => Err(error.into()),
    }
}

fn ends_in_a_bracket(payload: &[u8]) -> bool {
    payload
        .iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| matches!(b, b'}' | b']'))
}

/// The first JSON value of `payload`; `None` when it may still be coming (`ended` false and
/// the text stops inside it, or nothing but white space yet).
fn first_value(payload: &[u8], ended: bool) -> Option<Result<Value, PayloadError>> {
    match serde_json::Deserializer::from_slice(payload)
        .into_iter::<Value>()
        .next()
    {
        Some(Ok(value)) => Some(Ok(value)),
        Some(Err(error)) if error.is_eof() && !ended => None,
        Some(Err(error)) => Some(Err(PayloadError::NotJson(error))),
        None if ended => Some(Err(empty())),
        None => None,
    }
}

/// The repository root: `--repo` or `$WIT_REPO_ROOT`, else the nearest ancestor of `cwd`
/// with a `.git`.
pub fn find_root(repo: Option<&Path>, cwd: &Path) -> Option<PathBuf> {
    if repo.is_some() || std::env::var_os(ROOT_ENV).is_some_and(|v| !v.is_empty()) {
        return discover_root(repo).ok();
    }
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The paths of the repository at `root` when the hooks gate it: only one set up with `wit
/// init` (its `.wit/` exists) is gated, and gets a daemon.
pub fn gated_paths(root: &Path) -> Option<WitPaths> {
    let paths = WitPaths::for_root(root);
    paths.dir.is_dir().then_some(paths)
}

/// The working directory a payload names: a non-empty `cwd`, else Cursor's first
/// `workspace_roots`.
pub fn payload_cwd(payload: &Value) -> Option<String> {
    super::claude::string_field(payload, "cwd").or_else(|| {
        payload
            .get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|roots| roots.first())
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

/// The harness's working directory: `given` when it is an absolute directory, else this
/// process's.
pub fn working_dir(given: Option<PathBuf>) -> Option<PathBuf> {
    given
        .filter(|dir| dir.is_absolute() && dir.is_dir())
        .or_else(|| std::env::current_dir().ok())
}

/// `path` (absolute, or relative to `cwd`) relative to `root`; `None` outside it (or inside
/// `.git/` or `.wit/`).
pub fn relative_path(root: &Path, cwd: &Path, path: &str) -> Option<String> {
    let absolute = normalise(&cwd.join(path));
    let inside = |root: &Path, file: &Path| {
        file.strip_prefix(root).ok().and_then(|rest| {
            let text = rest.to_str()?.to_string();
            (!text.is_empty() && !text.starts_with(".git/") && !text.starts_with(".wit/"))
                .then_some(text)
        })
    };
    if let Some(relative) = inside(root, &absolute) {
        return Some(relative);
    }
    // Through symlinks (e.g. /tmp → /private/tmp): the real root and the real path of the
    // file's nearest existing ancestor.
    let real_root = root.canonicalize().ok()?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
    let mut real = existing.canonicalize().ok()?;
    for part in rest.iter().rev() {
        real.push(part);
    }
    inside(&real_root, &real)
}

/// Folds `.` and `..` lexically.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The hook's session: `--session`, else `$WIT_SESSION`, else the harness's own id from its
/// payload, else `$CLAUDE_SESSION_ID`, else `.wit/session.id` (created once).
pub fn hook_session(flag: Option<&str>, harness: Option<&str>, paths: &WitPaths) -> Option<String> {
    session::resolve_for_hook(
        flag,
        harness,
        |name| std::env::var(name).ok(),
        &paths.session_id,
    )
    .map(|(id, _)| id)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn paths_are_made_relative_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        assert_eq!(
            relative_path(root, root, &root.join("src/a.ts").display().to_string()),
            Some("src/a.ts".into())
        );
        assert_eq!(
            relative_path(root, &root.join("src"), "./b.ts"),
            Some("src/b.ts".into())
        );
        assert_eq!(relative_path(root, root, "../outside.ts"), None);
        assert_eq!(relative_path(root, root, "/etc/passwd"), None);
        assert_eq!(relative_path(root, root, ".git/config"), None);
    }
}
