//! Observed work as line regions (docs/protocol.md 13.1, 13.3, 13.4), as pure functions: the
//! lines of a text, the regions an edit's changes make, git's meeting rule, merging regions,
//! and carrying them across a change of the text (git's line diff maps them). A region is
//! lines, or a *point* between two lines (`{startLine: n + 1, endLine: n}`): a pure
//! insertion, a pure deletion's region.

use similar::DiffOp;

use super::preflight::line_ops::text_line_ops;
use super::preflight::spans::{Applied, Change};
use super::LineRegion;

/// The start offsets of a text's lines: line `n` (1-based) starts at `starts[n - 1]`. A text
/// ending in a newline has no empty last line; an empty text has one empty line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lines {
    starts: Vec<usize>,
    len: usize,
    ends_with_newline: bool,
}

impl Lines {
    /// The lines of `text` (one pass over its bytes).
    pub fn of(text: &str) -> Lines {
        // `line_ops`' lines (the one rule of what a line is); an empty text has one line.
        let mut starts = super::preflight::line_ops::line_starts(text.as_bytes());
        if starts.is_empty() {
            starts.push(0);
        }
        Lines {
            starts,
            len: text.len(),
            ends_with_newline: text.ends_with('\n'),
        }
    }

    /// When byte `at` lies between two lines (a line's start, or the end of a text whose
    /// last line is ended): the line it follows (0: before the first). `None` inside a line.
    pub fn boundary_at(&self, at: usize) -> Option<i64> {
        if at == 0 {
            return Some(0);
        }
        if at >= self.len {
            return (at == self.len && self.ends_with_newline).then(|| self.count());
        }
        self.starts.binary_search(&at).ok().map(to_i64)
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
/// whole lines; a pure deletion is the point where the two sides now join (13.4). Sorted and
/// merged.
pub fn regions_of_changes(changes: &[Change], new_lines: &Lines) -> Vec<LineRegion> {
    let regions = changes
        .iter()
        .map(|change| span_region(change.new, new_lines));
    merge(regions.collect())
}

/// The lines of the current text a change replaces (13.4): its span widened to whole lines;
/// a pure insertion between two lines is that point.
pub fn replaced_lines(change: &Change, old_lines: &Lines) -> LineRegion {
    span_region(change.old, old_lines)
}

/// The region of bytes `[start, end)` of a text: the lines they lie on, or, empty between
/// two lines, that point (empty inside a line: that line).
fn span_region((start, end): (usize, usize), lines: &Lines) -> LineRegion {
    if start == end {
        if let Some(line) = lines.boundary_at(start) {
            return LineRegion::point_after(line);
        }
    }
    let (first, last) = lines.lines_of(start, end);
    LineRegion::new(first, last)
}

/// Whether a change replacing `change` (lines, or a point) meets `region` as git's merge
/// finds two changes conflicting (13.4): their ranges overlap or touch with no unchanged
/// line between them (xdiff's `xdl_do_merge`: neither ends before the other starts).
pub fn meets_region(change: &LineRegion, region: &LineRegion) -> bool {
    change.start_line <= region.end_line + 1 && region.start_line <= change.end_line + 1
}

/// Whether byte-ranged lines `[first, last]` contain a line of `region` (a symbol's lines
/// holding observed work).
pub fn shares_lines(first: i64, last: i64, region: &LineRegion) -> bool {
    first <= region.end_line && region.start_line <= last
}

/// Sorts and merges regions that overlap or touch (a point touching lines is one with them:
/// what meets the one meets the other).
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

/// What another worktree wrote over lines of the asking text (13.4, 14.5): the lines (or the
/// point) `at` of the asking text, which are the merge-base's there, that its change
/// replaced with `text`. A change writing exactly that over exactly those lines meets
/// nothing: git's merge applies one copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The lines of the asking text the change replaced.
    pub at: LineRegion,
    /// The lines it wrote there.
    pub text: String,
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
        let old_lines: Vec<&str> = crate::coord::preflight::line_ops::text_lines(old);
        let new_lines: Vec<&str> = crate::coord::preflight::line_ops::text_lines(new);
        let ops = text_line_ops((old.as_bytes(), &old_lines), (new.as_bytes(), &new_lines));
        LineMap {
            ops,
            new_count: new_lines.len(),
        }
    }

    /// The line diff of the text an edit applied to and the edit's new text: the one the
    /// edit's changed lines came from when it was made, else [`LineMap::between`].
    pub fn of_applied(before: &str, applied: &Applied) -> LineMap {
        match &applied.line_ops {
            Some((ops, new_count)) => LineMap {
                ops: ops.clone(),
                new_count: *new_count,
            },
            None => LineMap::between(before, &applied.text),
        }
    }

    /// The map from the new text back to the old one: the same alignment read the other
    /// way (what was inserted is deleted, and so on).
    pub fn reversed(&self) -> LineMap {
        let ops = self
            .ops
            .iter()
            .map(|op| match *op {
                DiffOp::Equal {
                    old_index,
                    new_index,
                    len,
                } => DiffOp::Equal {
                    old_index: new_index,
                    new_index: old_index,
                    len,
                },
                DiffOp::Delete {
                    old_index,
                    old_len,
                    new_index,
                } => DiffOp::Insert {
                    old_index: new_index,
                    new_index: old_index,
                    new_len: old_len,
                },
                DiffOp::Insert {
                    old_index,
                    new_index,
                    new_len,
                } => DiffOp::Delete {
                    old_index: new_index,
                    old_len: new_len,
                    new_index: old_index,
                },
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => DiffOp::Replace {
                    old_index: new_index,
                    old_len: new_len,
                    new_index: old_index,
                    new_len: old_len,
                },
            })
            .collect();
        LineMap {
            ops,
            new_count: self.ops.iter().map(|op| op.old_range().len()).sum(),
        }
    }

    /// The new lines old line `line` (1-based) became, as boundaries `(lo, hi)`: new lines
    /// `lo + 1..=hi`. A kept line is itself, moved; a replaced line the lines that replaced
    /// it; a deleted one the point where the two sides now join (`lo == hi`).
    fn image_of_line(&self, line: i64) -> (usize, usize) {
        let index = usize::try_from(line - 1).unwrap_or(0);
        for op in &self.ops {
            let old = op.old_range();
            if !old.contains(&index) {
                continue;
            }
            let new = op.new_range();
            return match op {
                DiffOp::Equal { .. } => {
                    let n = new.start + (index - old.start);
                    (n, n + 1)
                }
                _ => (new.start, new.end),
            };
        }
        // Past the old text's end: its last line.
        (self.new_count.saturating_sub(1), self.new_count)
    }

    /// The new boundaries the point after old line `after` became, `(lo, hi)`: a point,
    /// unless lines were inserted right there or the lines around it replaced (then those
    /// lines: what is written at a point is what meets it).
    fn image_of_point(&self, after: i64) -> (usize, usize) {
        let at = usize::try_from(after).unwrap_or(0);
        let mut image: Option<(usize, usize)> = None;
        for op in &self.ops {
            let (old, new) = (op.old_range(), op.new_range());
            let found = match op {
                DiffOp::Equal { .. } => (old.start <= at && at <= old.end).then(|| {
                    let n = new.start + (at - old.start);
                    (n, n)
                }),
                DiffOp::Insert { .. } => (old.start == at).then_some((new.start, new.end)),
                _ if old.start < at && at < old.end => Some((new.start, new.end)),
                _ if old.start == at => Some((new.start, new.start)),
                _ if old.end == at => Some((new.end, new.end)),
                _ => None,
            };
            if let Some((lo, hi)) = found {
                image = Some(image.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi))));
            }
        }
        image.unwrap_or((self.new_count, self.new_count))
    }

    /// The lines of the old text that `regions` of the new text came from, sorted and merged
    /// (the way back through a worktree's merge-base, 14.5): a kept line is itself, the lines
    /// a change wrote come from the old lines it replaced — all of them —, and a region next
    /// to a deletion takes in the deleted lines. A region of inserted lines only is the
    /// point where they were inserted; a point (a deletion) is the lines it deleted.
    pub fn preimage(&self, regions: &[LineRegion]) -> Vec<LineRegion> {
        let last_old = self
            .ops
            .last()
            .map_or(1, |op| to_i64(op.old_range().end.max(1)));
        let mut found = Vec::new();
        for region in regions {
            let before = found.len();
            // The region as new boundaries `[lo, hi]` (a point: `lo == hi`).
            let lo = usize::try_from(region.start_line - 1).unwrap_or(0);
            let hi = usize::try_from(region.end_line).unwrap_or(0).max(lo);
            for op in &self.ops {
                let (old, new) = (op.old_range(), op.new_range());
                // An op with new lines meets the region when they share a line, or, for a
                // point, when the point lies at or inside their edges; an op without new
                // lines (a deletion) when its point lies at or inside the region's edges.
                let meets = if new.is_empty() || lo == hi {
                    lo <= new.end && new.start <= hi
                } else {
                    new.start < hi && lo < new.end
                };
                if !meets {
                    continue;
                }
                match op {
                    DiffOp::Equal { .. } => {
                        let from = lo.max(new.start) - new.start;
                        let to = hi.min(new.end) - new.start;
                        found.push(LineRegion::new(
                            to_i64(old.start + from + 1),
                            to_i64(old.start + to),
                        ));
                    }
                    _ if old.is_empty() => found.push(LineRegion::point_after(to_i64(old.start))),
                    _ => found.push(LineRegion::new(to_i64(old.start + 1), to_i64(old.end))),
                }
            }
            if found.len() == before {
                found.push(LineRegion::new(last_old, last_old));
            }
        }
        merge(found)
    }

    /// Where the old lines `[start, end)` (0-based) lie in the new text when they are all
    /// kept, in one run, with nothing inserted at either edge: their first new line.
    fn kept_run(&self, start: usize, end: usize) -> Option<usize> {
        let (lo, hi) = self.image_of_point(to_i64(start));
        let (lo_end, hi_end) = self.image_of_point(to_i64(end));
        if lo != hi || lo_end != hi_end {
            return None;
        }
        if start == end {
            return Some(lo);
        }
        self.ops.iter().find_map(|op| match op {
            DiffOp::Equal { .. } => {
                let old = op.old_range();
                (old.start <= start && end <= old.end)
                    .then(|| op.new_range().start + (start - old.start))
            }
            _ => None,
        })
    }

    /// This map's changes (merge-base → `origin`, its new text) as written over the lines
    /// of another text that `from_base` (merge-base → that text) maps the base to: each
    /// change whose base lines that text keeps as they are, with the lines it wrote.
    pub fn written_into(&self, origin: &str, from_base: &LineMap) -> Vec<Written> {
        let origin_lines: Vec<&str> = crate::coord::preflight::line_ops::text_lines(origin);
        self.ops
            .iter()
            .filter(|op| !matches!(op, DiffOp::Equal { .. }))
            .filter_map(|op| {
                let (old, new) = (op.old_range(), op.new_range());
                let at = from_base.kept_run(old.start, old.end)?;
                let text = origin_lines.get(new.clone())?.concat();
                Some(Written {
                    at: LineRegion::new(to_i64(at + 1), to_i64(at + old.len())),
                    text,
                })
            })
            .collect()
    }

    /// `regions` of the old text carried into the new one (13.3), sorted and merged: lines
    /// to what their first and last line became, a point to what it became.
    pub fn carry(&self, regions: &[LineRegion]) -> Vec<LineRegion> {
        let carried = regions.iter().map(|region| {
            let (lo, hi) = if region.is_point() {
                self.image_of_point(region.end_line)
            } else {
                let (lo, _) = self.image_of_line(region.start_line);
                let (_, hi) = self.image_of_line(region.end_line);
                (lo, hi.max(lo))
            };
            LineRegion::new(to_i64(lo + 1), to_i64(hi))
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
        // Lines 2 and 3 (touching) merge; line 5 stays apart; a deletion is the point where
        // the sides join (after line 4), one line apart from line 2-3's region.
        let got = regions_of_changes(&[change(2, 4), change(4, 6), change(8, 8)], &new);
        assert_eq!(got, [r(2, 3), r(5, 4)]);
        // Deleted at the end of the text, at its start; inside a line it is the line.
        assert_eq!(regions_of_changes(&[change(10, 10)], &new), [r(6, 5)]);
        assert_eq!(regions_of_changes(&[change(0, 0)], &new), [r(1, 0)]);
        assert_eq!(regions_of_changes(&[change(3, 3)], &new), [r(2, 2)]);
        // A text without a last newline: its end is inside its last line.
        assert_eq!(
            regions_of_changes(&[change(3, 3)], &Lines::of("a\nb")),
            [r(2, 2)]
        );
    }

    /// The meeting rule of 13.4, as git's merge has it (each case checked with `git
    /// merge-file` in `tests/wit/foresight.rs`).
    #[test]
    fn meeting_is_gits_rule() {
        let old = Lines::of("a\nb\nc\n");
        let change = |o0, o1| Change {
            old: (o0, o1),
            new: (0, 0),
        };
        assert_eq!(replaced_lines(&change(2, 4), &old), r(2, 2));
        assert_eq!(
            replaced_lines(&change(2, 2), &old),
            r(2, 1),
            "an insertion point"
        );
        assert_eq!(replaced_lines(&change(6, 6), &old), r(4, 3), "at the end");
        assert_eq!(
            replaced_lines(&change(3, 3), &old),
            r(2, 2),
            "inside a line"
        );
        let region = r(5, 7);
        let meets = |a, b| meets_region(&r(a, b), &region);
        // Replaced lines inside it, directly before it, directly after it.
        assert!(meets(6, 6) && meets(4, 4) && meets(8, 9));
        // One unchanged line between: git merges them.
        assert!(!meets(1, 3) && !meets(9, 9));
        // An insertion point inside it or at either edge; one line away, not.
        assert!(meets(6, 5) && meets(5, 4) && meets(8, 7));
        assert!(!meets(4, 3) && !meets(9, 8));
        // Two insertions at one point meet; one line apart they do not.
        assert!(meets_region(&r(4, 3), &r(4, 3)));
        assert!(!meets_region(&r(4, 3), &r(5, 4)));
        // A deletion's point right after a replaced line meets it.
        assert!(meets_region(&r(3, 2), &r(2, 2)));
        assert!(!meets_region(&r(4, 3), &r(2, 2)));
        assert!(shares_lines(7, 9, &region) && !shares_lines(8, 9, &region));
    }

    #[test]
    fn merging() {
        assert_eq!(merge(vec![r(5, 6), r(1, 2), r(3, 3)]), [r(1, 3), r(5, 6)]);
        assert_eq!(merge(vec![r(1, 9), r(2, 3)]), [r(1, 9)]);
        // A point touching lines is one with them; points one line apart stay apart.
        assert_eq!(merge(vec![r(3, 2), r(3, 5), r(6, 5)]), [r(3, 5)]);
        assert_eq!(merge(vec![r(4, 3), r(3, 2), r(4, 3)]), [r(3, 2), r(4, 3)]);
    }

    /// The map an edit carries is the map of its two texts.
    #[test]
    fn an_edits_line_map_is_the_map_of_its_texts() {
        use crate::coord::preflight::spans::{apply_edits, Edit};
        let old: String = (0..50)
            .map(|n| match n % 5 {
                0 => "}\n".to_owned(),
                _ => format!("line {n}\n"),
            })
            .collect();
        let edit = |old_text: &str, new_text: &str| Edit {
            old_text: old_text.into(),
            new_text: new_text.into(),
            replace_all: false,
        };
        let applied = [
            apply_edits(&old, &[edit("line 12\nline 13\n", "x\n}\n")], 1 << 20).unwrap(),
            Applied::content(&old, &old.replace("line 2\n", "")),
            Applied::content(&old, &old),
            Applied::content(&old, ""),
            Applied::content("", &old),
        ];
        for (n, applied) in applied.iter().enumerate() {
            let before = if n == 4 { "" } else { old.as_str() };
            let carried = LineMap::of_applied(before, applied);
            let fresh = LineMap::between(before, &applied.text);
            assert!(applied.line_ops.is_some(), "case {n}");
            assert_eq!(carried.ops, fresh.ops, "case {n}");
            assert_eq!(carried.new_count, fresh.new_count, "case {n}");
            let back = LineMap::between(&applied.text, before);
            assert_eq!(carried.reversed().ops, back.ops, "case {n}, reversed");
            assert_eq!(
                carried.reversed().new_count,
                back.new_count,
                "case {n}, reversed"
            );
        }
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
        // A deletion's region is its point: it goes back to the deleted lines; a region
        // beside the point takes them in too.
        let map = LineMap::between(old, "a\ne\n");
        assert_eq!(map.preimage(&[r(2, 1)]), [r(2, 4)]);
        assert_eq!(map.preimage(&[r(2, 2)]), [r(2, 5)]);
        // Inserted lines only: the point where they were inserted.
        let map = LineMap::between(old, "a\nb\nnew\nc\nd\ne\n");
        assert_eq!(map.preimage(&[r(3, 3)]), [r(3, 2)]);
        // A point in kept text is that point.
        assert_eq!(map.preimage(&[r(6, 5)]), [r(5, 4)]);
    }

    #[test]
    fn what_a_worktree_wrote_lies_over_the_asking_texts_lines() {
        let base = "a\nb\nc\nd\n";
        let origin = "a\nB\nc\nd\nnew\n";
        let wrote = LineMap::between(base, origin);
        // The asking text inserted a line at the top: the lines moved down by one.
        let asking = LineMap::between(base, "x\na\nb\nc\nd\n");
        assert_eq!(
            wrote.written_into(origin, &asking),
            [
                Written {
                    at: r(3, 3),
                    text: "B\n".into()
                },
                Written {
                    at: r(6, 5),
                    text: "new\n".into()
                }
            ]
        );
        // Where the asking text changed the same base lines, nothing lies there as it was.
        let asking = LineMap::between(base, "a\nb2\nc\nd\n");
        assert_eq!(wrote.written_into(origin, &asking).len(), 1);
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
        // Deleted: the point where the sides join.
        let map = LineMap::between(old, "a\nd\n");
        assert_eq!(map.carry(&[r(2, 3)]), [r(2, 1)]);
        // A point moves with the text; lines inserted right at it are what it becomes.
        assert_eq!(map.carry(&[r(4, 3)]), [r(2, 1)], "its neighbours deleted");
        let map = LineMap::between(old, "x\na\nb\nc\nd\n");
        assert_eq!(map.carry(&[r(3, 2)]), [r(4, 3)]);
        let map = LineMap::between(old, "a\nb\nnew\nc\nd\n");
        assert_eq!(map.carry(&[r(3, 2)]), [r(3, 3)]);
        // Lines inserted inside a region widen it; below it, nothing moves.
        let map = LineMap::between(old, "a\nb\nnew\nc\nd\ne\n");
        assert_eq!(map.carry(&[r(2, 3)]), [r(2, 4)]);
        assert_eq!(map.carry(&[r(1, 1)]), [r(1, 1)]);
    }
}
