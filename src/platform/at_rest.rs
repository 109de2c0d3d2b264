//! Whether a file read from disk was at rest: not modified within [`STILL_WRITING`] before the
//! read, and unchanged while it was read. A writer that truncates a file and then writes it
//! leaves a moment when the file is empty; a read in that moment would take the empty text for
//! the deletion of every line, and the text written after it for new work over the whole file.
//! What wit keeps from a read (lines attributed to an owner, docs/protocol.md 15.3; regions
//! carried to a new text, 13.3) it keeps only from a read at rest: a read that is not is good
//! for one answer, and a later read keeps what it saw. A writer that keeps a truncated file
//! open longer than [`STILL_WRITING`] is known by the tree observer's file-system events
//! ([`OpenWriters`]).

use std::collections::{HashMap, HashSet};
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// A file modified this recently may still be being written.
pub const STILL_WRITING: Duration = Duration::from_millis(100);

/// A file's text as read from disk, and whether the read was at rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskText {
    /// The text.
    pub text: String,
    /// Whether the file was at rest while it was read ([`was_at_rest`]).
    pub at_rest: bool,
}

/// Whether a file was at rest at `now` while it was read, given its metadata `before` the read
/// and `after` it (`None`: gone by then). A modification time ahead of `now` by less than
/// [`STILL_WRITING`] counts as recent too; one further ahead is a clock's doing, not a writer's.
pub fn was_at_rest(before: &Metadata, after: Option<&Metadata>, now: SystemTime) -> bool {
    let recent = before
        .modified()
        .map(|at| match now.duration_since(at) {
            Ok(age) => age < STILL_WRITING,
            Err(ahead) => ahead.duration() < STILL_WRITING,
        })
        .unwrap_or(true);
    let changed = after.is_none_or(|after| stamp(after) != stamp(before));
    !recent && !changed
}

/// The files a file-system watcher saw a writer make or write to and not yet close after
/// writing (absolute paths), each with when it was last written: kept by the tree observer,
/// asked by the readers whose reads must be at rest.
#[derive(Debug, Default)]
pub struct OpenWriters(Mutex<HashMap<PathBuf, Instant>>);

impl OpenWriters {
    /// The most files followed at once (beyond, the set starts again).
    const MAX: usize = 10_000;

    /// How long a file not written since counts as being written for [`OpenWriters::is_open`]:
    /// a writer that keeps a file open longer (a log), or a close whose event was lost, does
    /// not keep it from being at rest for good.
    pub const LONGEST_PAUSE: Duration = Duration::from_secs(5);

    fn files(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Instant>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `paths` were made or written to.
    pub fn opened(&self, paths: &[PathBuf]) {
        let mut files = self.files();
        if files.len() >= Self::MAX {
            files.clear();
        }
        let now = Instant::now();
        for path in paths {
            files.insert(path.clone(), now);
        }
    }

    /// `path` was closed after writing, or removed; whether it was followed as open.
    pub fn closed(&self, path: &Path) -> bool {
        self.files().remove(path).is_some()
    }

    /// Whether a writer has `path` open and wrote to it within [`OpenWriters::LONGEST_PAUSE`].
    pub fn is_open(&self, path: &Path) -> bool {
        self.files()
            .get(path)
            .is_some_and(|written| written.elapsed() < Self::LONGEST_PAUSE)
    }

    /// The files under `root` a writer has open, relative to it (however long ago they were
    /// written: the observer holds each back for a bounded time itself).
    pub fn under(&self, root: &Path) -> HashSet<String> {
        self.files()
            .keys()
            .filter_map(|path| path.strip_prefix(root).ok())
            .filter_map(|relative| relative.to_str().map(str::to_owned))
            .collect()
    }
}

/// What tells two looks at a file apart: its size and modification time.
fn stamp(meta: &Metadata) -> (u64, Option<SystemTime>) {
    (meta.len(), meta.modified().ok())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_file_is_open_until_closed_and_only_while_it_is_being_written() {
        let writers = OpenWriters::default();
        let (a, b) = (PathBuf::from("/r/a.py"), PathBuf::from("/r/sub/b.py"));
        writers.opened(&[a.clone(), b.clone()]);
        assert!(writers.is_open(&a) && writers.is_open(&b));
        let mut under: Vec<String> = writers.under(Path::new("/r")).into_iter().collect();
        under.sort();
        assert_eq!(under, ["a.py", "sub/b.py"]);
        assert!(writers.closed(&a));
        assert!(!writers.closed(&a), "closed once");
        assert!(!writers.is_open(&a));
        // A file not written for longer than the longest pause is not held open (a log, or
        // a close whose event was lost).
        writers
            .files()
            .insert(b.clone(), Instant::now() - 2 * OpenWriters::LONGEST_PAUSE);
        assert!(!writers.is_open(&b));
        assert_eq!(
            writers.under(Path::new("/r")).len(),
            1,
            "the observer still sees it"
        );
    }

    #[test]
    fn a_file_is_at_rest_once_it_is_old_enough_and_unchanged_by_the_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.py");
        std::fs::write(&path, "x = 1\n").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let written = meta.modified().unwrap();
        let now = written + 2 * STILL_WRITING;
        assert!(was_at_rest(&meta, Some(&meta), now));
        assert!(
            !was_at_rest(&meta, Some(&meta), written + STILL_WRITING / 2),
            "modified a moment ago"
        );
        assert!(!was_at_rest(&meta, None, now), "gone while it was read");
        std::fs::write(&path, "x = 22\n").unwrap();
        let after = std::fs::metadata(&path).unwrap();
        assert!(
            !was_at_rest(&meta, Some(&after), now),
            "changed while it was read"
        );
        assert!(
            !was_at_rest(&meta, Some(&meta), written - STILL_WRITING / 2),
            "a moment ahead of the clock"
        );
        assert!(
            was_at_rest(&meta, Some(&meta), written - 20 * STILL_WRITING),
            "far ahead: the clock's doing"
        );
    }
}
