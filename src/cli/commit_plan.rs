//! Which of a file's changes a session commits, and the bytes that makes (docs/protocol.md
//! 15.6): the daemon's owner map gives the file's hunks against `HEAD` with their owners seen
//! from the committing session (`work.changes`); the commit is `HEAD`'s bytes with exactly the
//! session's hunks applied, never a re-diff of whole files. Pure: no git, no daemon.

use crate::coord::owner_map::compose;
use crate::protocol::OwnedHunk;

/// Whose a hunk is, seen from the committing session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HunkOwner {
    /// The session's (or its agent's) alone.
    Mine,
    /// The session's and other live sessions' too: it cannot be split.
    Shared,
    /// Other live sessions'.
    Others,
    /// Nobody's (a person's edit, or a session that ended).
    Nobody,
}

/// The owner of `hunk` as `work.changes {sessionId}` answered it.
pub fn owner_of(hunk: &OwnedHunk) -> HunkOwner {
    let live_others = hunk
        .others
        .iter()
        .any(|o| !crate::coord::ownership::is_unowned_session(o));
    match (hunk.mine == Some(true), live_others) {
        (true, false) => HunkOwner::Mine,
        (true, true) => HunkOwner::Shared,
        (false, true) => HunkOwner::Others,
        (false, false) => HunkOwner::Nobody,
    }
}

/// What a file's commit takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilePlan {
    /// The file's new bytes (`None`: the file is removed).
    Commit {
        /// The committed content.
        bytes: Option<Vec<u8>>,
        /// How many hunks were taken.
        taken: usize,
        /// How many were left in the working tree.
        left: usize,
    },
    /// Nothing of the session's in this file.
    Nothing,
}

/// Why a file cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// `HEAD` with every hunk applied is not the working file: the owner map is behind the
    /// disk (a change or a commit a moment ago).
    #[error("{0} changed while wit was reading it; run the command again")]
    Moved(String),
}

/// The hunk as the owner map's composition takes it (owners do not matter there).
fn map_hunk(hunk: &OwnedHunk) -> crate::coord::owner_map::OwnedHunk {
    let count = |n: i64| usize::try_from(n).unwrap_or(0);
    crate::coord::owner_map::OwnedHunk {
        old_start: count(hunk.old_start),
        old_lines: count(hunk.old_lines),
        new_start: count(hunk.new_start),
        new_lines: count(hunk.new_lines),
        mark: Default::default(),
    }
}

/// The hunks a commit takes: the session's, and nobody's with `include_unowned`.
fn taken(hunks: &[OwnedHunk], include_unowned: bool) -> Vec<&OwnedHunk> {
    hunks
        .iter()
        .filter(|h| match owner_of(h) {
            HunkOwner::Mine => true,
            HunkOwner::Nobody => include_unowned,
            HunkOwner::Shared | HunkOwner::Others => false,
        })
        .collect()
}

/// A run of lines of the committed text and who wrote them (empty: nobody).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedLines {
    /// Who wrote them.
    pub sessions: Vec<String>,
    /// First line, 1-based.
    pub start_line: i64,
    /// Last line.
    pub end_line: i64,
}

/// Where the lines the commit takes from `hunks` stand in the committed text (what its
/// Agent Trace record attributes).
pub fn committed_lines(hunks: &[OwnedHunk], include_unowned: bool) -> Vec<CommittedLines> {
    let mut shift = 0;
    let mut out = Vec::new();
    for hunk in taken(hunks, include_unowned) {
        let first_old = if hunk.old_lines == 0 {
            hunk.old_start + 1
        } else {
            hunk.old_start
        };
        if hunk.new_lines > 0 {
            let start_line = first_old + shift;
            out.push(CommittedLines {
                sessions: hunk
                    .session_ids
                    .iter()
                    .filter(|s| !hunk.others.contains(s))
                    .cloned()
                    .collect(),
                start_line,
                end_line: start_line + hunk.new_lines - 1,
            });
        }
        shift += hunk.new_lines - hunk.old_lines;
    }
    out
}

/// Plans the commit of one file: `head` its bytes in `HEAD` (empty when not there),
/// `working` its bytes now (`None`: deleted), `hunks` its changes in order; a binary file's
/// work is its one file-level hunk. Nobody's hunks are taken with `include_unowned`. Every
/// hunk applied must give the working bytes, or the map is behind the disk.
pub fn plan_file(
    file: &str,
    head: &[u8],
    working: Option<&[u8]>,
    binary: bool,
    hunks: &[OwnedHunk],
    include_unowned: bool,
) -> Result<FilePlan, PlanError> {
    let taken = taken(hunks, include_unowned);
    if taken.is_empty() {
        return Ok(FilePlan::Nothing);
    }
    let left = hunks.len() - taken.len();
    let all_taken = left == 0;
    if binary {
        // File-level: the whole file or nothing of it.
        return Ok(FilePlan::Commit {
            bytes: working.map(<[u8]>::to_vec),
            taken: taken.len(),
            left,
        });
    }
    let current = working.unwrap_or_default();
    let mapped: Vec<crate::coord::owner_map::OwnedHunk> = hunks.iter().map(map_hunk).collect();
    // Every hunk applied must give the working bytes: else the map is behind the disk.
    if compose(head, current, &mapped, |_| true) != current {
        return Err(PlanError::Moved(file.to_owned()));
    }
    if working.is_none() && all_taken {
        return Ok(FilePlan::Commit {
            bytes: None,
            taken: taken.len(),
            left,
        });
    }
    let kept: Vec<crate::coord::owner_map::OwnedHunk> = taken.iter().map(|h| map_hunk(h)).collect();
    let bytes = compose(head, current, &kept, |_| true);
    Ok(FilePlan::Commit {
        bytes: Some(bytes),
        taken: taken.len(),
        left,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn hunk(old: (i64, i64), new: (i64, i64), mine: bool, others: &[&str]) -> OwnedHunk {
        OwnedHunk {
            old_start: old.0,
            old_lines: old.1,
            new_start: new.0,
            new_lines: new.1,
            session_ids: Vec::new(),
            mine: Some(mine),
            others: others.iter().map(|o| (*o).to_owned()).collect(),
        }
    }

    const HEAD: &[u8] = b"a\nb\nc\nd\ne\nf\ng\n";
    const WORKING: &[u8] = b"a\nB\nc\nD\nE\nf\ng\nh\n";

    fn three(alice: [bool; 3], others: [&[&str]; 3]) -> Vec<OwnedHunk> {
        vec![
            hunk((2, 1), (2, 1), alice[0], others[0]),
            hunk((4, 2), (4, 2), alice[1], others[1]),
            hunk((7, 0), (8, 1), alice[2], others[2]),
        ]
    }

    #[test]
    fn the_sessions_hunks_are_applied_to_heads_bytes() {
        let hunks = three([true, false, true], [&[], &["bob"], &[]]);
        let plan = plan_file("a", HEAD, Some(WORKING), false, &hunks, false).unwrap();
        assert_eq!(
            plan,
            FilePlan::Commit {
                bytes: Some(b"a\nB\nc\nd\ne\nf\ng\nh\n".to_vec()),
                taken: 2,
                left: 1
            }
        );
    }

    #[test]
    fn nobodys_hunks_only_when_asked_and_shared_ones_never() {
        let hunks = three([false, true, false], [&["unowned:/r"], &["bob"], &[]]);
        assert_eq!(
            plan_file("a", HEAD, Some(WORKING), false, &hunks, false).unwrap(),
            FilePlan::Nothing
        );
        let FilePlan::Commit { bytes, taken, .. } =
            plan_file("a", HEAD, Some(WORKING), false, &hunks, true).unwrap()
        else {
            panic!("nothing planned");
        };
        assert_eq!(taken, 2);
        assert_eq!(bytes.unwrap(), b"a\nB\nc\nd\ne\nf\ng\nh\n");
        assert_eq!(owner_of(&hunks[1]), HunkOwner::Shared);
    }

    #[test]
    fn committed_lines_are_counted_in_the_committed_text() {
        // Alice's line 2 and her appended line: in HEAD plus only hers, lines 2 and 8.
        let mut hunks = three([true, false, true], [&[], &["bob"], &[]]);
        for hunk in &mut hunks {
            hunk.session_ids = vec![if hunk.mine == Some(true) {
                "alice"
            } else {
                "bob"
            }
            .into()];
        }
        let lines = committed_lines(&hunks, false);
        let at: Vec<(i64, i64)> = lines.iter().map(|l| (l.start_line, l.end_line)).collect();
        assert_eq!(at, vec![(2, 2), (8, 8)]);
        assert_eq!(lines[0].sessions, vec!["alice".to_owned()]);
        // An insertion after a deletion of two lines moves up by two.
        let shifted = [
            hunk((1, 2), (0, 0), true, &[]),
            hunk((5, 0), (3, 2), true, &[]),
        ];
        let at: Vec<(i64, i64)> = committed_lines(&shifted, false)
            .iter()
            .map(|l| (l.start_line, l.end_line))
            .collect();
        assert_eq!(at, vec![(4, 5)]);
    }

    #[test]
    fn a_map_behind_the_disk_refuses() {
        let hunks = three([true, true, true], [&[], &[], &[]]);
        let moved = b"a\nB\nc\nD\nE\nf\ng\nh\ni\n";
        assert_eq!(
            plan_file("a", HEAD, Some(moved), false, &hunks, false),
            Err(PlanError::Moved("a".into()))
        );
    }

    #[test]
    fn a_deleted_file_and_a_binary_file_are_whole() {
        let gone = [hunk((1, 7), (0, 0), true, &[])];
        assert_eq!(
            plan_file("a", HEAD, None, false, &gone, false).unwrap(),
            FilePlan::Commit {
                bytes: None,
                taken: 1,
                left: 0
            }
        );
        let binary = [hunk((0, 0), (0, 0), true, &[])];
        let bytes = b"caf\xe9\n\x00";
        assert_eq!(
            plan_file("b", b"old", Some(bytes), true, &binary, false).unwrap(),
            FilePlan::Commit {
                bytes: Some(bytes.to_vec()),
                taken: 1,
                left: 0
            }
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_and_a_missing_last_newline_are_kept() {
        let head = b"x\xff\ny";
        let working = b"x\xff\nY\xfe";
        let hunks = [hunk((2, 1), (2, 1), true, &[])];
        assert_eq!(
            plan_file("c", head, Some(working), false, &hunks, false).unwrap(),
            FilePlan::Commit {
                bytes: Some(working.to_vec()),
                taken: 1,
                left: 0
            }
        );
    }
}
