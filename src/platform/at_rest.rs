//! Whether a file read from disk was at rest: not modified within [`STILL_WRITING`] before the
//! read, and unchanged while it was read. A writer that truncates a file and then writes it
//! leaves a moment when the file is empty; a read in that moment would take the empty text for
//! the deletion of every line, and the text written after it for new work over the whole file.
//! What wit keeps from a read (lines attributed to an owner, docs/protocol.md 15.3; regions
//! carried to a new text, 13.3) it keeps only from a read at rest: a read that is not is good
//! for one answer, and a later read keeps what it saw.

use std::fs::Metadata;
use std::time::{Duration, SystemTime};

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

/// What tells two looks at a file apart: its size and modification time.
fn stamp(meta: &Metadata) -> (u64, Option<SystemTime>) {
    (meta.len(), meta.modified().ok())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

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
