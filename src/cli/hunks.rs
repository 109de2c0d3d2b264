//! Line hunks between two versions of a file (committed, staged and working, as bytes), and
//! where the lines of one land in another: pure functions, so `wit commit`,
//! the pre-commit hook and the shell gate weigh hunks the same way. The hunks are wit's one
//! line diff, `coord::preflight::line_ops` (git's merge alignment, 13.7), never another.

use crate::coord::preflight::line_ops::{git_hunks, split_lines};

/// One changed block: `old_len` lines of the old text from `old_start` replaced by `new_len`
/// lines of the new text from `new_start` (0-based line indexes; a length may be 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hunk {
    /// The first replaced line of the old text.
    pub old_start: usize,
    /// How many old lines are replaced.
    pub old_len: usize,
    /// The first replacing line of the new text.
    pub new_start: usize,
    /// How many new lines replace them.
    pub new_len: usize,
}

impl Hunk {
    /// The 1-based lines of the new text this hunk covers: its new lines, or for a pure
    /// deletion the lines on both sides of where the old ones were (the line where the two
    /// sides now join).
    pub fn new_lines(&self) -> (usize, usize) {
        if self.new_len == 0 {
            (self.new_start.max(1), self.new_start + 1)
        } else {
            (self.new_start + 1, self.new_start + self.new_len)
        }
    }
}

/// The file's lines, each with its `\n` (bytes, never decoded: docs/protocol.md 15.4).
pub fn lines<T: AsRef<[u8]> + ?Sized>(bytes: &T) -> Vec<&[u8]> {
    split_lines(bytes.as_ref())
}

/// The hunks that turn `old` into `new`, in order: git's, from the one line diff of wit
/// (docs/protocol.md 13.7), so `wit commit` cuts a file where `git merge` would.
pub fn hunks(old: &[&[u8]], new: &[&[u8]]) -> Vec<Hunk> {
    git_hunks(old, new)
        .into_iter()
        .map(|hunk| Hunk {
            old_start: hunk.old.start,
            old_len: hunk.old.len(),
            new_start: hunk.new.start,
            new_len: hunk.new.len(),
        })
        .collect()
}

/// For each line of `from`, the 1-based line of `to` that is the same line (unchanged
/// between the two), or `None` where `from`'s line is not in `to`.
pub fn line_map(from: &[&[u8]], to: &[&[u8]]) -> Vec<Option<usize>> {
    let mut map = vec![None; from.len()];
    let (mut old_at, mut new_at) = (0, 0);
    let hunks = git_hunks(from, to);
    let ends = hunks
        .iter()
        .map(|hunk| (hunk.old.start, hunk.old.end, hunk.new.end))
        .chain([(from.len(), from.len(), to.len())]);
    for (equal_end, old_end, new_end) in ends {
        for (offset, slot) in map[old_at..equal_end].iter_mut().enumerate() {
            *slot = Some(new_at + offset + 1);
        }
        (old_at, new_at) = (old_end, new_end);
    }
    map
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    const OLD: &[u8] = b"a\nb\nc\nd\ne\nf\n";

    #[test]
    fn hunks_of_two_texts() {
        let new = "a\nB\nc\nd\nx\ny\nf\n";
        let (old_l, new_l) = (lines(OLD), lines(new));
        let found = hunks(&old_l, &new_l);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].new_lines(), (2, 2));
        assert_eq!(found[1].new_lines(), (5, 6));
    }

    #[test]
    fn a_deletions_lines_are_both_sides_of_the_join() {
        let new = "a\nb\nd\ne\nf\n";
        let found = hunks(&lines(OLD), &lines(new));
        assert_eq!(found.len(), 1);
        // A pure deletion: the lines on both sides of the join.
        assert_eq!(found[0].new_lines(), (2, 3));
        let grown = hunks(&lines(OLD), &lines("a\nb\nc\nd\ne\nf\ng\n"));
        assert_eq!(grown[0].new_lines(), (7, 7));
    }

    #[test]
    fn line_maps_follow_unchanged_lines() {
        let map = line_map(&lines("a\nb\nc\n"), &lines("a\nX\nb\nc\n"));
        assert_eq!(map, vec![Some(1), Some(3), Some(4)]);
        assert_eq!(
            line_map(&lines("a\nz\n"), &lines("a\n")),
            vec![Some(1), None]
        );
    }

    #[test]
    fn an_ambiguous_insertion_is_cut_where_git_s_merge_cuts_it() {
        // An ambiguous insertion (its lines repeat around it): cut where git's histogram
        // and its slide put it, as `git merge` will.
        let old = "class C:\n    def a(self):\n        return None\n\n    def c(self):\n        return None\n";
        let new = "class C:\n    def a(self):\n        return None\n\n    def b(self):\n        return None\n\n    def c(self):\n        return None\n";
        let found = hunks(&lines(old), &lines(new));
        let git = git_hunks(&lines(old), &lines(new));
        assert_eq!(found.len(), git.len());
        assert_eq!(
            (found[0].old_start, found[0].new_start, found[0].new_len),
            (git[0].old.start, git[0].new.start, git[0].new.len())
        );
        let bytes = hunks(&lines(b"a\n\xff\n"), &lines(b"a\n\xfe\n"));
        assert_eq!(bytes[0].new_lines(), (2, 2), "bytes, not text");
    }
}
