//! From two texts to what an agent's Edit tool sends, and the changed-lines predictor.
//!
//! A patch of one file is its line hunks (a histogram line diff, as `git merge` computes it). An agent's
//! Edit tool sends find-and-replace pairs whose `oldText` must occur exactly once in the file
//! when the edit applies; so each hunk becomes one edit whose `oldText` is the hunk's replaced
//! lines, widened by whole lines of context (one above, then one below, alternately) only as
//! far as needed to make it unique (a pure insertion always takes at least one neighbouring
//! line). The edits of one file go in one `edit.preflight`, top to bottom, each unique in the
//! text the previous ones left.

use std::ops::Range;

use imara_diff::{Algorithm, Diff, InternedInput};

/// The lines of `text`, each with its line break.
pub(crate) fn lines_of(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// One changed block of a line diff: lines `old` (0-based, end exclusive) of the old text are
/// replaced by lines `new` of the new text. An empty `old` is a pure insertion before line
/// `old.start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    pub old: Range<usize>,
    pub new: Range<usize>,
}

/// The hunks turning `old` into `new`, top to bottom: git's merge diff (histogram, blocks
/// slid down), so that a patch's hunks are the ones `git merge` compares for the truth.
pub(crate) fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let old_lines = lines_of(old);
    let new_lines = lines_of(new);
    let mut input: InternedInput<&str> = InternedInput::default();
    input.update_before(old_lines.iter().copied());
    input.update_after(new_lines.iter().copied());
    let mut diff = Diff::compute(Algorithm::Histogram, &input);
    diff.postprocess_no_heuristic(&input);
    diff.hunks()
        .map(|h| Hunk {
            old: h.before.start as usize..h.before.end as usize,
            new: h.after.start as usize..h.after.end as usize,
        })
        .collect()
}

/// One find-and-replace edit as an agent sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentEdit {
    pub old_text: String,
    pub new_text: String,
}

/// A change to make to a text: its lines `lines` (0-based, end exclusive) become `with`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineChange {
    pub lines: Range<usize>,
    pub with: Vec<String>,
}

/// The changes of `hunks` of `old` → `new`.
pub(crate) fn changes_of(hunks: &[Hunk], new: &str) -> Vec<LineChange> {
    let new_lines = lines_of(new);
    hunks
        .iter()
        .map(|h| LineChange {
            lines: h.old.clone(),
            with: new_lines[h.new.clone()]
                .iter()
                .map(|l| (*l).to_owned())
                .collect(),
        })
        .collect()
}

/// The edits an agent sends to make `changes` (sorted, not overlapping) to `current`, or
/// `None` when some change cannot be made unique even with the whole file as context (the
/// caller then writes the whole content). A change of an empty text is one edit with an empty
/// `oldText` (10.1).
pub(crate) fn agent_edits(current: &str, changes: &[LineChange]) -> Option<Vec<AgentEdit>> {
    if current.is_empty() {
        let new_text: String = changes
            .iter()
            .flat_map(|c| c.with.iter().cloned())
            .collect();
        return Some(vec![AgentEdit {
            old_text: String::new(),
            new_text,
        }]);
    }
    let mut lines: Vec<String> = lines_of(current).iter().map(|l| (*l).to_owned()).collect();
    let mut shift: isize = 0;
    let mut edits = Vec::with_capacity(changes.len());
    for change in changes {
        let start = (change.lines.start as isize + shift) as usize;
        let end = (change.lines.end as isize + shift) as usize;
        let text: String = lines.concat();
        let (low, high) = unique_context(&lines, &text, start, end)?;
        let old_text: String = lines[low..high].concat();
        let mut new_text: String = lines[low..start].concat();
        new_text.extend(change.with.iter().cloned());
        new_text.push_str(&lines[end..high].concat());
        edits.push(AgentEdit { old_text, new_text });
        lines.splice(start..end, change.with.iter().cloned());
        shift += change.with.len() as isize - (end - start) as isize;
    }
    Some(edits)
}

/// `current` with `changes` (sorted, not overlapping) made: what the edits of
/// [`agent_edits`] give, and the whole content sent when they cannot be made unique.
pub(crate) fn apply_changes(current: &str, changes: &[LineChange]) -> String {
    let lines = lines_of(current);
    let mut out = String::with_capacity(current.len());
    let mut at = 0;
    for change in changes {
        out.extend(lines[at..change.lines.start].iter().copied());
        out.extend(change.with.iter().map(String::as_str));
        at = change.lines.end;
    }
    out.extend(lines[at..].iter().copied());
    out
}

/// The smallest widening `low..high` of lines `start..end` (one line above, then one below,
/// alternately) whose text is non-empty and occurs in `text` exactly once, at its own place.
fn unique_context(
    lines: &[String],
    text: &str,
    start: usize,
    end: usize,
) -> Option<(usize, usize)> {
    let offset_of = |line: usize| lines[..line].iter().map(String::len).sum::<usize>();
    let (mut low, mut high) = (start, end);
    let mut above_next = true;
    loop {
        if low < high {
            let at = offset_of(low);
            let needle = &text[at..offset_of(high)];
            let mut found = text.match_indices(needle).map(|(i, _)| i);
            if found.next() == Some(at) && found.next().is_none() {
                return Some((low, high));
            }
        }
        let can_above = low > 0;
        let can_below = high < lines.len();
        match (above_next && can_above, can_below) {
            (true, _) => low -= 1,
            (false, true) => high += 1,
            (false, false) if can_above => low -= 1,
            _ => return None,
        }
        above_next = !above_next;
    }
}

/// Where a line position of a base text lands in a text the `hunks` (base → current) made.
/// A position inside a replaced block lands on the block's start (`Side::Start`) or end
/// (`Side::End`) in the current text; at a pure insertion, a start lands after the inserted
/// lines and an end before them, so a range keeps to its own lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Start,
    End,
}

pub(crate) fn map_line(hunks: &[Hunk], at: usize, side: Side) -> usize {
    let (mut anchor_old, mut anchor_new) = (0usize, 0usize);
    for h in hunks {
        if h.old.start > at || (h.old.start == at && !h.old.is_empty()) {
            break;
        }
        if h.old.end > at {
            return match side {
                Side::Start => h.new.start,
                Side::End => h.new.end,
            };
        }
        if h.old.is_empty() && h.old.start == at && side == Side::End {
            return at - anchor_old + anchor_new;
        }
        anchor_old = h.old.end;
        anchor_new = h.new.end;
    }
    at - anchor_old + anchor_new
}

/// `changes` of a base text carried onto the current text that `moved` (base → current)
/// made: each replaced range maps through [`map_line`] (an insertion at the point of one of
/// `moved`'s insertions replaces its lines); ranges that land on each other merge
/// (their replacement lines concatenated), as one agent edit of the other's lines would.
pub(crate) fn rebase_changes(changes: &[LineChange], moved: &[Hunk]) -> Vec<LineChange> {
    let mut out: Vec<LineChange> = Vec::with_capacity(changes.len());
    for change in changes {
        // An insertion where the other side inserted too lands on its lines: the agent
        // writes its lines there, which changes nothing when they are the same (git takes
        // one of two identical changes).
        let same_point = change.lines.is_empty().then(|| {
            moved
                .iter()
                .find(|h| h.old.is_empty() && h.old.start == change.lines.start)
        });
        let (start, end) = if let Some(Some(theirs)) = same_point {
            (theirs.new.start, theirs.new.end)
        } else {
            let start = map_line(moved, change.lines.start, Side::Start);
            let end = if change.lines.is_empty() {
                start
            } else {
                map_line(moved, change.lines.end, Side::End).max(start)
            };
            (start, end)
        };
        match out.last_mut() {
            Some(last) if start < last.lines.end => {
                last.lines.end = last.lines.end.max(end);
                last.with.extend(change.with.iter().cloned());
            }
            _ => out.push(LineChange {
                lines: start..end,
                with: change.with.clone(),
            }),
        }
    }
    out
}

/// The changed-lines predictor: do two patches of one base text change lines within one line
/// of each other? Hunks compare in half-line units: a replaced line `i` is `2i`, a pure
/// insertion before line `i` is the gap `2i - 1`; A's hunks widen by one line each side.
pub(crate) fn lines_meet(a: &[Hunk], b: &[Hunk]) -> bool {
    let span = |h: &Hunk| -> (isize, isize) {
        let (s, e) = (h.old.start as isize, h.old.end as isize);
        if s == e {
            (2 * s - 1, 2 * s - 1)
        } else {
            (2 * s, 2 * (e - 1))
        }
    };
    a.iter().any(|ha| {
        let (lo, hi) = span(ha);
        let (lo, hi) = (lo - 2, hi + 2);
        b.iter().any(|hb| {
            let (blo, bhi) = span(hb);
            lo <= bhi && blo <= hi
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies edits the way the daemon does (each `oldText` exactly once, in order).
    fn apply(text: &str, edits: &[AgentEdit]) -> String {
        let mut text = text.to_owned();
        for e in edits {
            if e.old_text.is_empty() {
                assert!(text.is_empty());
                text = e.new_text.clone();
                continue;
            }
            assert_eq!(text.matches(&e.old_text).count(), 1, "{:?}", e.old_text);
            text = text.replacen(&e.old_text, &e.new_text, 1);
        }
        text
    }

    fn roundtrip(old: &str, new: &str) -> Vec<AgentEdit> {
        let changes = changes_of(&hunks(old, new), new);
        let edits = agent_edits(old, &changes).unwrap_or_default();
        assert_eq!(apply(old, &edits), new);
        assert_eq!(apply_changes(old, &changes), new);
        edits
    }

    #[test]
    fn edits_rebuild_the_new_text_with_the_least_context() {
        let old = "a\nb\nc\nd\n";
        let edits = roundtrip(old, "a\nB\nc\nd\n");
        assert_eq!(edits[0].old_text, "b\n");
        let edits = roundtrip(old, "a\nb\nx\nc\nd\n");
        assert_eq!(
            edits[0].old_text, "b\n",
            "an insertion takes the line above"
        );
        roundtrip(old, "x\na\nb\nc\nd\n");
        roundtrip(old, "a\nb\nc\nd\ne\n");
        roundtrip(old, "");
        roundtrip("", "new\n");
        roundtrip("a\nb", "a\nc");
    }

    #[test]
    fn repeated_lines_take_context_until_unique() {
        let old = "x\n}\ny\n}\nz\n";
        let edits = roundtrip(old, "x\n}\ny\n};\nz\n");
        assert_eq!(edits[0].old_text, "y\n}\n");
        roundtrip("}\n}\n}\n", "}\n};\n}\n");
        roundtrip("a\n}\nb\n}\nc\n}\n", "a\n};\nb\n}\nc\n};\n");
    }

    #[test]
    fn a_text_of_identical_lines_gives_up_only_when_nothing_is_unique() {
        let changes = changes_of(&hunks("}\n}\n", "}\n}\n}\n"), "}\n}\n}\n");
        let edits = agent_edits("}\n}\n", &changes);
        assert!(edits.is_some_and(|e| apply("}\n}\n", &e) == "}\n}\n}\n"));
    }

    #[test]
    fn base_lines_map_onto_the_current_text() {
        // base a b c d e; current a X Y c d N e (b replaced by X Y, N inserted before e)
        let moved = hunks("a\nb\nc\nd\ne\n", "a\nX\nY\nc\nd\nN\ne\n");
        assert_eq!(map_line(&moved, 0, Side::Start), 0);
        assert_eq!(map_line(&moved, 2, Side::Start), 3, "c moved down by one");
        assert_eq!(map_line(&moved, 1, Side::Start), 1);
        assert_eq!(map_line(&moved, 2, Side::End), 3);
        assert_eq!(
            map_line(&moved, 4, Side::Start),
            6,
            "a start skips the insertion"
        );
        assert_eq!(map_line(&moved, 4, Side::End), 5, "an end stays before it");
        let b = changes_of(
            &hunks("a\nb\nc\nd\ne\n", "a\nb\nC\nd\ne\n"),
            "a\nb\nC\nd\ne\n",
        );
        let rebased = rebase_changes(&b, &moved);
        assert_eq!(rebased[0].lines, 3..4);
    }

    #[test]
    fn an_insertion_where_the_other_side_inserted_lands_on_its_lines() {
        let base = "a\nb\nc\n";
        let moved = hunks(base, "a\nX\nY\nb\nc\n");
        let same = changes_of(&hunks(base, "a\nX\nY\nb\nc\n"), "a\nX\nY\nb\nc\n");
        let rebased = rebase_changes(&same, &moved);
        assert_eq!(
            rebased[0].lines,
            1..3,
            "the same lines: nothing left to change"
        );
        assert_eq!(
            apply_changes("a\nX\nY\nb\nc\n", &rebased),
            "a\nX\nY\nb\nc\n"
        );
        let other = changes_of(&hunks(base, "a\nb\nZ\nc\n"), "a\nb\nZ\nc\n");
        assert_eq!(rebase_changes(&other, &moved)[0].lines, 4..4);
    }

    #[test]
    fn hunks_are_gits_histogram() {
        // Myers would replace `c }` by `b` and insert `c b` below.
        assert_eq!(
            hunks("c\n}\n}\n", "b\n}\nc\nb\n"),
            [
                Hunk {
                    old: 0..0,
                    new: 0..2
                },
                Hunk {
                    old: 1..3,
                    new: 3..4
                }
            ]
        );
    }

    #[test]
    fn the_line_check_is_within_one_line() {
        let base = "1\n2\n3\n4\n5\n6\n7\n";
        let a = hunks(base, "1\n2\nX\n4\n5\n6\n7\n");
        let near = hunks(base, "1\n2\n3\nY\n5\n6\n7\n");
        let far = hunks(base, "1\n2\n3\n4\nY\n6\n7\n");
        let insert_after = hunks(base, "1\n2\n3\nI\n4\n5\n6\n7\n");
        let insert_far = hunks(base, "1\n2\n3\n4\nI\n5\n6\n7\n");
        assert!(lines_meet(&a, &near));
        assert!(!lines_meet(&a, &far));
        assert!(lines_meet(&a, &insert_after));
        assert!(!lines_meet(&a, &insert_far));
    }
}
