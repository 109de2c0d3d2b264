//! Observed work as line regions (PROTOCOL-NOTES 13.1, 13.3), as pure functions: the lines
//! of a text, the regions an edit's changes make, merging them, and carrying regions across
//! a change of the text (a line diff maps them).

use similar::DiffOp;

use super::preflight::spans::{line_ops, Change};
use super::LineRegion;

/// The start offsets of a text's lines: line `n` (1-based) starts at `starts[n - 1]`. A text
/// ending in a newline has no empty last line; an empty text has one empty line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lines {
    starts: Vec<usize>,
    len: usize,
}

impl Lines {
    /// The lines of `text` (one pass over its bytes).
    pub fn of(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(at, b)| b == b'\n' && at + 1 < text.len())
                .map(|(at, _)| at + 1),
        );
        Lines {
            starts,
            len: text.len(),
        }
    }

    /// How many lines the text has (at least 1).
    pub fn count(&self) -> i64 {
        to_i64(self.starts.len())
    }

    /// The 1-based line holding byte `at` (the last line for the end of the text).
    pub fn line_of(&self, at: usize) -> i64 {
        let at = at.min(self.len);
        to_i64(self.starts.partition_point(|&start| start <= at).max(1))
    }

    /// The 1-based lines `[first, last]` of the bytes `[start, end)` (an empty span: its line).
    pub fn lines_of(&self, start: usize, end: usize) -> (i64, i64) {
        let first = self.line_of(start);
        let last = if end > start {
            self.line_of(end - 1)
        } else {
            first
        };
        (first, last.max(first))
    }
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The regions of the new text an edit's changes make (13.1): each replacing span widened to
/// whole lines; a pure deletion is the line where the two sides now join. Sorted and merged.
pub fn regions_of_changes(changes: &[Change], new_lines: &Lines) -> Vec<LineRegion> {
    let regions = changes.iter().map(|change| {
        let (first, last) = new_lines.lines_of(change.new.0, change.new.1);
        LineRegion::new(first, last)
    });
    merge(regions.collect())
}

/// The lines of the current text a change replaces (13.4), as `[first, last]`: for a pure
/// insertion, the line before and the line after its point.
pub fn replaced_lines(change: &Change, old_lines: &Lines) -> (i64, i64) {
    let (start, end) = change.old;
    if start < end {
        return old_lines.lines_of(start, end);
    }
    let line = old_lines.line_of(start);
    let at_line_start = old_lines
        .starts
        .get(usize::try_from(line - 1).unwrap_or(0))
        .is_some_and(|&s| s == start);
    if at_line_start {
        // Between line - 1 and line.
        ((line - 1).max(1), line)
    } else {
        // Inside a line: that line is both neighbours.
        (line, line)
    }
}

/// Whether lines `[first, last]` lie inside `region` or directly next to it (13.4).
pub fn meets_region(first: i64, last: i64, region: &LineRegion) -> bool {
    first <= region.end_line + 1 && region.start_line - 1 <= last
}

/// Whether byte-ranged lines `[first, last]` contain a line of `region` (a symbol's lines
/// holding observed work).
pub fn shares_lines(first: i64, last: i64, region: &LineRegion) -> bool {
    first <= region.end_line && region.start_line <= last
}

/// Sorts and merges regions that overlap or touch.
pub fn merge(mut regions: Vec<LineRegion>) -> Vec<LineRegion> {
    regions.sort_unstable();
    let mut merged: Vec<LineRegion> = Vec::with_capacity(regions.len());
    for region in regions {
        match merged.last_mut() {
            Some(last) if region.start_line <= last.end_line + 1 => {
                last.end_line = last.end_line.max(region.end_line);
            }
            _ => merged.push(region),
        }
    }
    merged
}

/// How lines of an old text map into a new one: the diff's operations in line units.
#[derive(Debug, Clone)]
pub struct LineMap {
    ops: Vec<DiffOp>,
    new_count: usize,
}

impl LineMap {
    /// The line diff of `old` and `new`.
    pub fn between(old: &str, new: &str) -> LineMap {
        let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
        let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
        let ops = line_ops(&old_lines, &new_lines);
        LineMap {
            ops,
            new_count: new_lines.len(),
        }
    }

    /// Where old line `line` (1-based) lies in the new text, as `[first, last]` (1-based): a
    /// kept line maps to itself moved, a replaced line to the lines that replaced it, a
    /// deleted one to the line where the two sides now join.
    fn map_line(&self, line: i64) -> (i64, i64) {
        let index = usize::try_from(line - 1).unwrap_or(0);
        let last_new = to_i64(self.new_count.max(1));
        let clamp = |n: usize| to_i64(n + 1).clamp(1, last_new);
        for op in &self.ops {
            let old = op.old_range();
            if !old.contains(&index) {
                continue;
            }
            let new = op.new_range();
            return match op {
                DiffOp::Equal { .. } => {
                    let n = new.start + (index - old.start);
                    (clamp(n), clamp(n))
                }
                DiffOp::Replace { .. } => (clamp(new.start), clamp(new.end.saturating_sub(1))),
                _ => (clamp(new.start), clamp(new.start)),
            };
        }
        // Past the old text's end (a region on its last, now joined line).
        (last_new, last_new)
    }

    /// The lines of the old text that `regions` of the new text came from, sorted and merged
    /// (the way back through a worktree's merge-base, 14.5): a kept line is itself, the lines
    /// a change wrote come from the old lines it replaced — all of them, and a region next to
    /// a deletion (a deletion's own region is its join line) takes in the deleted lines. A region of inserted lines
    /// only is the old line where they were inserted (its join line, as [`LineMap::carry`]
    /// would give).
    pub fn preimage(&self, regions: &[LineRegion]) -> Vec<LineRegion> {
        let last_old = self
            .ops
            .last()
            .map_or(1, |op| to_i64(op.old_range().end.max(1)));
        let mut found = Vec::new();
        for region in regions {
            let before = found.len();
            for op in &self.ops {
                let (old, new) = (op.old_range(), op.new_range());
                // The new lines of the op, 1-based inclusive; a deletion's are the lines on
                // both sides of the point where it joins them (a deletion next to changed
                // lines is one hunk with them, as git tells it).
                let (first, last) = if new.is_empty() {
                    (to_i64(new.start), to_i64(new.start + 1))
                } else {
                    (to_i64(new.start + 1), to_i64(new.end))
                };
                if last < region.start_line || region.end_line < first {
                    continue;
                }
                match op {
                    DiffOp::Equal { .. } => {
                        let from = first.max(region.start_line) - first;
                        let to = last.min(region.end_line) - first;
                        let start = to_i64(old.start + 1);
                        found.push(LineRegion::new(start + from, start + to));
                    }
                    _ if old.is_empty() => {
                        let at = to_i64(old.start + 1).clamp(1, last_old);
                        found.push(LineRegion::new(at, at));
                    }
                    _ => found.push(LineRegion::new(to_i64(old.start + 1), to_i64(old.end))),
                }
            }
            if found.len() == before {
                let at = last_old;
                found.push(LineRegion::new(at, at));
            }
        }
        merge(found)
    }

    /// `regions` of the old text carried into the new one (13.3), sorted and merged.
    pub fn carry(&self, regions: &[LineRegion]) -> Vec<LineRegion> {
        let carried = regions.iter().map(|region| {
            let (first, _) = self.map_line(region.start_line);
            let (_, last) = self.map_line(region.end_line);
            LineRegion::new(first, last.max(first))
        });
        merge(carried.collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn r(a: i64, b: i64) -> LineRegion {
        LineRegion::new(a, b)
    }

    #[test]
    fn lines_of_a_text() {
        let lines = Lines::of("a\nbb\nc\n");
        assert_eq!(lines.count(), 3);
        assert_eq!(lines.line_of(0), 1);
        assert_eq!(lines.line_of(2), 2);
        assert_eq!(lines.line_of(4), 2, "the newline belongs to its line");
        assert_eq!(lines.line_of(7), 3, "the end is the last line");
        assert_eq!(lines.lines_of(2, 7), (2, 3));
        assert_eq!(Lines::of("").count(), 1);
        assert_eq!(Lines::of("x").count(), 1);
    }

    #[test]
    fn changes_make_merged_regions() {
        let new = Lines::of("a\nb\nc\nd\ne\n");
        let change = |n0, n1| Change {
            old: (0, 0),
            new: (n0, n1),
        };
        // Lines 2 and 3 (touching) merge; line 5 stays apart; a deletion is its join line.
        let got = regions_of_changes(&[change(2, 4), change(4, 6), change(8, 8)], &new);
        assert_eq!(got, [r(2, 3), r(5, 5)]);
    }

    #[test]
    fn replaced_lines_and_meeting() {
        let old = Lines::of("a\nb\nc\n");
        let change = |o0, o1| Change {
            old: (o0, o1),
            new: (0, 0),
        };
        assert_eq!(replaced_lines(&change(2, 4), &old), (2, 2));
        assert_eq!(replaced_lines(&change(2, 2), &old), (1, 2), "an insertion");
        assert_eq!(replaced_lines(&change(3, 3), &old), (2, 2), "inside a line");
        let region = r(5, 7);
        assert!(meets_region(4, 4, &region), "directly next to it");
        assert!(meets_region(8, 9, &region));
        assert!(!meets_region(1, 3, &region));
        assert!(!meets_region(9, 9, &region));
        assert!(shares_lines(7, 9, &region) && !shares_lines(8, 9, &region));
    }

    #[test]
    fn merging() {
        assert_eq!(merge(vec![r(5, 6), r(1, 2), r(3, 3)]), [r(1, 3), r(5, 6)]);
        assert_eq!(merge(vec![r(1, 9), r(2, 3)]), [r(1, 9)]);
    }

    #[test]
    fn regions_go_back_to_the_lines_they_came_from() {
        let old = "a\nb\nc\nd\ne\n";
        // A kept line is itself, moved back.
        let map = LineMap::between(old, "x\na\nb\nc\nd\ne\n");
        assert_eq!(map.preimage(&[r(3, 4)]), [r(2, 3)]);
        // Replaced lines come from all the lines they replaced.
        let map = LineMap::between(old, "a\nB\ne\n");
        assert_eq!(map.preimage(&[r(2, 2)]), [r(2, 4)]);
        // A deletion's region is its join line: it takes in the deleted lines (and the
        // line it joins).
        let map = LineMap::between(old, "a\ne\n");
        assert_eq!(map.preimage(&[r(2, 2)]), [r(2, 5)]);
        // Inserted lines only: the old line where they were inserted.
        let map = LineMap::between(old, "a\nb\nnew\nc\nd\ne\n");
        assert_eq!(map.preimage(&[r(3, 3)]), [r(3, 3)]);
    }

    #[test]
    fn regions_follow_the_text() {
        let old = "a\nb\nc\nd\n";
        // Two lines inserted above: the region moves down.
        let map = LineMap::between(old, "x\ny\na\nb\nc\nd\n");
        assert_eq!(map.carry(&[r(3, 4)]), [r(5, 6)]);
        // Its lines replaced: it maps to what replaced them.
        let map = LineMap::between(old, "a\nB\nC\nC2\nd\n");
        assert_eq!(map.carry(&[r(2, 3)]), [r(2, 4)]);
        // Deleted: the line where the sides join.
        let map = LineMap::between(old, "a\nd\n");
        assert_eq!(map.carry(&[r(2, 3)]), [r(2, 2)]);
        // Lines inserted inside a region widen it; below it, nothing moves.
        let map = LineMap::between(old, "a\nb\nnew\nc\nd\ne\n");
        assert_eq!(map.carry(&[r(2, 3)]), [r(2, 4)]);
        assert_eq!(map.carry(&[r(1, 1)]), [r(1, 1)]);
    }
}
