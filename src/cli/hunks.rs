//! Line hunks between two texts (a committed and a working version of a file) and the
//! regions of the work map they meet (PROTOCOL-NOTES 13): pure functions, so `wit commit`,
//! the pre-commit hook and the shell gate weigh hunks the same way.

use similar::{Algorithm, DiffTag};

/// Lines `start..=end` (1-based, inclusive) of a file's working text: a region of an observed
/// intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// The first line.
    pub start: usize,
    /// The last line.
    pub end: usize,
}

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

/// The text's lines, each with its line end.
pub fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The hunks that turn `old` into `new`, adjacent changes merged, in order.
pub fn hunks(old: &[&str], new: &[&str]) -> Vec<Hunk> {
    let ops = similar::capture_diff_slices(Algorithm::Myers, old, new);
    let mut out: Vec<Hunk> = Vec::new();
    for op in ops {
        if op.tag() == DiffTag::Equal {
            continue;
        }
        let (old_range, new_range) = (op.old_range(), op.new_range());
        match out.last_mut() {
            Some(last)
                if last.old_start + last.old_len == old_range.start
                    && last.new_start + last.new_len == new_range.start =>
            {
                last.old_len += old_range.len();
                last.new_len += new_range.len();
            }
            _ => out.push(Hunk {
                old_start: old_range.start,
                old_len: old_range.len(),
                new_start: new_range.start,
                new_len: new_range.len(),
            }),
        }
    }
    out
}

/// For each line of `from`, the 1-based line of `to` that is the same line (unchanged
/// between the two), or `None` where `from`'s line is not in `to`.
pub fn line_map(from: &[&str], to: &[&str]) -> Vec<Option<usize>> {
    let mut map = vec![None; from.len()];
    for op in similar::capture_diff_slices(Algorithm::Myers, from, to) {
        if op.tag() == DiffTag::Equal {
            for (a, b) in op.old_range().zip(op.new_range()) {
                map[a] = Some(b + 1);
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    const OLD: &str = "a\nb\nc\nd\ne\nf\n";

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
}
