//! What changed on disk in one worktree, handed to the coordination core for attribution
//! (docs/protocol.md 15.3): the bytes of each changed file now and in HEAD (through the
//! worktree's kept [`WorktreeGit`]), never decoded.

use std::collections::HashSet;
use std::path::Path;
use std::time::SystemTime;

use crate::coord::ownership::DiskChange;
use crate::coord::Coord;
use crate::daemon::worktree_git::WorktreeGit;
use crate::git::Git;
use crate::platform::at_rest;

/// The largest file whose changes are attributed line by line or kept (larger ones are left
/// out, and said so in the log).
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;

/// The largest file a pass has analysed beside the observer once it read it (a parse of
/// about half a second here); a larger one is analysed when a request asks for it.
pub const WARM_MOST_BYTES: usize = 1024 * 1024;

/// How a pass treats a file that is still being written.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// Files a writer has open and has written to since it opened them (a modification
    /// seen, its close not yet): a truncate-then-write read between the two would be taken
    /// for a deletion of every line, and the text written after it for new work over the
    /// whole file.
    pub writing: HashSet<String>,
    /// The observer's own pass (not a flush): a file modified within
    /// [`at_rest::STILL_WRITING`], or changing while it is read, counts as being written too
    /// (what a polled worktree, with no events, can tell).
    pub own_pass: bool,
    /// Files read however they are being written (held back long enough).
    pub overdue: HashSet<String>,
}

impl Reading {
    /// Whether `file`, read as `now`, is held back for a later pass (only a regular file: a
    /// symlink or a hard link is made whole, and a file gone has nothing to wait for).
    fn holds(&self, file: &str, now: &ReadNow) -> bool {
        now.regular
            && !self.overdue.contains(file)
            && (self.writing.contains(file) || (self.own_pass && now.still_writing))
    }
}

/// Which files of a worktree to read.
#[derive(Debug, Clone)]
pub enum Changed {
    /// These paths (relative to the root) changed.
    Paths(Vec<String>),
    /// Anything may have changed (an overflow, a poll): git's dirty files and every file the
    /// owner map holds.
    Everything,
    /// The worktree is first looked at (a daemon start, a worktree added) at this time: git's
    /// dirty files last modified before it are taken as they are, nobody's, their changes
    /// predating the observer; later ones are attributed as changes.
    Found(SystemTime),
}

/// What one pass did with the files it was given.
#[derive(Debug, Default)]
pub struct Pass {
    /// The files held back as still being written, for a later pass.
    pub held: Vec<String>,
    /// The files whose change was attributed and that exist on disk, of at most
    /// [`WARM_MOST_BYTES`] (whose analyses are now due).
    pub read: Vec<String>,
}

/// Reads the `changed` files of the worktree at `root` and hands them to `coord`; with
/// `head_moved`, every file the owner map holds is rebased on HEAD's new bytes too. Answers
/// the files held back as still being written (`reading`), for a later pass, and those
/// read. `git` is what the worktree's earlier passes asked git.
pub fn attribute(
    coord: &Coord,
    root: &Path,
    git: &mut WorktreeGit,
    changed: Changed,
    head_moved: bool,
    reading: &Reading,
) -> Result<Pass, String> {
    let key = root.to_string_lossy().into_owned();
    let owned = coord.owned_files(&key);
    let found = match changed {
        Changed::Found(at) => Some(at),
        _ => None,
    };
    let mut files = match changed {
        Changed::Paths(paths) => {
            git.paths_changed(&paths);
            paths
        }
        Changed::Everything | Changed::Found(_) => {
            git.forget_ignores();
            let mut files = dirty_files(root);
            files.extend(owned.iter().cloned());
            files
        }
    };
    files.retain(|f| !is_private(f));
    files.sort();
    files.dedup();
    let files = git.not_ignored(files);
    // HEAD moved: every file the map holds is rebased on HEAD's new bytes first, so the
    // changes read after it are against the new HEAD.
    let mut rebase: Vec<String> = if head_moved { owned } else { Vec::new() };
    rebase.sort();
    let names: Vec<String> = files
        .iter()
        .chain(rebase.iter())
        .map(|f| format!("HEAD:{f}"))
        .collect();
    if names.is_empty() {
        return Ok(Pass::default());
    }
    let heads = git
        .blobs(&names, MAX_FILE_BYTES)
        .map_err(|e| e.to_string())?;
    for (file, head) in rebase
        .iter()
        .zip(heads.get(files.len()..).unwrap_or_default())
    {
        coord.rebase_owner_map(&key, file, head.as_deref());
    }
    let mut pass = Pass::default();
    for (file, head) in files.iter().zip(&heads) {
        // A submodule is its gitlink (15.4): its own tree is not this one's work.
        if std::fs::symlink_metadata(root.join(file)).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let Some(now) = read_now(&root.join(file)) else {
            tracing::info!(file = %file, "too large to attribute");
            continue;
        };
        if reading.holds(file, &now) {
            pass.held.push(file.clone());
            continue;
        }
        let now = now.bytes;
        let warm = now
            .as_ref()
            .is_some_and(|bytes| bytes.len() <= WARM_MOST_BYTES);
        let change = DiskChange {
            root: &key,
            file,
            head: head.as_deref(),
            now: now.as_deref(),
        };
        if found.is_some_and(|at| !modified_since(&root.join(file), at)) {
            coord.seed_change(change);
        } else {
            coord.attribute_change(change).map_err(|e| e.to_string())?;
            // A file found as it was at the daemon's start is the index build's to analyse.
            if warm {
                pass.read.push(file.clone());
            }
        }
    }
    Ok(pass)
}

/// Whether the file at `path` was modified, or renamed or made (its status changed), at or
/// after `at`; a file gone, whether its directory changed since. A rename keeps the
/// modification time; it moves the change time.
fn modified_since(path: &Path, at: SystemTime) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        // Gone: its directory changed when it went.
        return path
            .parent()
            .and_then(|dir| std::fs::metadata(dir).ok())
            .and_then(|dir| dir.modified().ok())
            .is_some_and(|m| m >= at);
    };
    let changed = u64::try_from(meta.ctime()).ok().map(|secs| {
        std::time::UNIX_EPOCH
            + std::time::Duration::new(secs, u32::try_from(meta.ctime_nsec()).unwrap_or(0))
    });
    meta.modified().is_ok_and(|m| m >= at) || changed.is_some_and(|c| c >= at)
}

/// Paths of wit's and git's own state, never work.
fn is_private(file: &str) -> bool {
    let first = file.split('/').next().unwrap_or(file);
    first == ".git" || first == ".wit"
}

/// A file as read now.
struct ReadNow {
    /// Its bytes (`None`: gone, or a directory), a symlink's target as its bytes (15.4).
    bytes: Option<Vec<u8>>,
    /// Modified within [`at_rest::STILL_WRITING`], or changed while it was read.
    still_writing: bool,
    /// A regular file (not gone, a symlink or a directory).
    regular: bool,
}

/// A file's bytes now; `None` when it is too large to keep.
fn read_now(path: &Path) -> Option<ReadNow> {
    let gone = ReadNow {
        bytes: None,
        still_writing: false,
        regular: false,
    };
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Some(gone);
    };
    if meta.file_type().is_symlink() {
        return Some(ReadNow {
            bytes: std::fs::read_link(path)
                .ok()
                .map(|target| target.as_os_str().as_encoded_bytes().to_vec()),
            still_writing: false,
            regular: false,
        });
    }
    if !meta.is_file() {
        return Some(gone);
    }
    if usize::try_from(meta.len()).unwrap_or(usize::MAX) > MAX_FILE_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok();
    let after = std::fs::symlink_metadata(path).ok();
    Some(ReadNow {
        bytes,
        still_writing: !at_rest::was_at_rest(&meta, after.as_ref(), SystemTime::now()),
        regular: true,
    })
}

/// The files git sees changed or untracked (not ignored) in the worktree.
fn dirty_files(root: &Path) -> Vec<String> {
    let Ok(out) = Git::new(root).quiet().run(&[
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
    ]) else {
        return Vec::new();
    };
    out.split(|&b| b == 0)
        .filter(|entry| entry.len() > 3)
        .filter_map(|entry| std::str::from_utf8(&entry[3..]).ok())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_file_written_a_moment_ago_is_still_being_written_and_an_older_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.py");
        // A truncate before the write: empty, modified just now.
        std::fs::write(&path, "").unwrap();
        let read = read_now(&path).unwrap();
        assert_eq!(read.bytes.as_deref(), Some(&b""[..]));
        assert!(read.still_writing);
        std::fs::write(&path, "def f(): pass\n").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::now() - 2 * at_rest::STILL_WRITING)
            .unwrap();
        let read = read_now(&path).unwrap();
        assert_eq!(read.bytes.as_deref(), Some(&b"def f(): pass\n"[..]));
        assert!(!read.still_writing);
        // Gone: nothing to wait for.
        std::fs::remove_file(&path).unwrap();
        let read = read_now(&path).unwrap();
        assert!(read.bytes.is_none() && !read.still_writing);
    }

    #[test]
    fn a_file_open_for_writing_is_held_back_and_a_recent_one_only_by_the_observers_own_pass() {
        let set = |files: &[&str]| files.iter().map(|f| (*f).to_owned()).collect();
        let settled = ReadNow {
            bytes: Some(Vec::new()),
            still_writing: false,
            regular: true,
        };
        let recent = ReadNow {
            bytes: Some(Vec::new()),
            still_writing: true,
            regular: true,
        };
        let flush = Reading {
            writing: set(&["open.py"]),
            own_pass: false,
            overdue: HashSet::new(),
        };
        assert!(flush.holds("open.py", &settled));
        assert!(!flush.holds("closed.py", &recent));
        let own = Reading {
            own_pass: true,
            ..flush.clone()
        };
        assert!(own.holds("closed.py", &recent));
        assert!(!own.holds("closed.py", &settled));
        let overdue = Reading {
            overdue: set(&["open.py", "closed.py"]),
            ..own
        };
        assert!(!overdue.holds("open.py", &settled));
        assert!(!overdue.holds("closed.py", &recent));
        let link = ReadNow {
            bytes: Some(b"target".to_vec()),
            still_writing: false,
            regular: false,
        };
        assert!(!flush.holds("open.py", &link), "a symlink is made whole");
    }
}
