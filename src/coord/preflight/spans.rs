//! From an edit to changed spans (docs/protocol.md 10.1–10.2), as pure functions: applying
//! find-and-replace edits, diffing whole new content, and mapping positions of the current
//! text into the new one.

use similar::DiffOp;

use super::line_ops::{common_head_lines, common_tail_lines, lines_sharing, text_line_ops};

/// One find-and-replace edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The text to find (exactly once, unless `replace_all`); empty only for an empty file.
    pub old_text: String,
    /// What replaces it.
    pub new_text: String,
    /// Replace every occurrence.
    pub replace_all: bool,
}

/// A replaced span of the current text and the span that replaces it in the new text, in
/// UTF-8 bytes, end exclusive. An empty `old` span is a pure insertion at that point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// In the current text.
    pub old: (usize, usize),
    /// In the new text.
    pub new: (usize, usize),
}

/// The new text and what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The whole new text.
    pub text: String,
    /// The changes, in order, not overlapping: each edit's exact spans (what byte ranges
    /// are checked against, 10.2).
    pub changes: Vec<Change>,
    /// The changed lines as git's diff of the whole texts aligns them (13.7): what regions
    /// are made of and checked against (13.1, 13.4).
    pub line_changes: Vec<Change>,
    /// That diff in line units, and the new text's line count, when the whole texts were
    /// diffed (each of at most [`MAX_DIFF_LINES`] lines): what carries regions onto the new
    /// text, without splitting and diffing the texts again.
    pub line_ops: Option<(Vec<DiffOp>, usize)>,
}

impl Applied {
    /// A whole new text: its changes are git's line diff from `current`.
    pub fn content(current: &str, text: &str) -> Applied {
        let (changes, line_ops) = match diff_lines_if_short(current, text) {
            Some(diff) => diff.into_parts(),
            None => (diff_lines(current, text), None),
        };
        Applied {
            text: text.to_owned(),
            line_changes: changes.clone(),
            changes,
            line_ops,
        }
    }
}

/// The most changes kept for one edit: past it, neighbouring changes are merged (their
/// spans widen to cover what lies between, which only ever finds more overlaps), so that a
/// `replaceAll` of a short text in a large file costs no more than a bounded list.
pub const MAX_CHANGES: usize = 4096;

/// The most lines a line diff compares once the common head and tail are cut off: its
/// memory is a small multiple of them. Past it the whole middle is one change.
pub const MAX_DIFF_LINES: usize = 65_536;

/// Why edits give no new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// They do not apply to the current text (an `oldText` missing or ambiguous, an empty
    /// `oldText` on a non-empty text): a normal answer, `applies: false`.
    DoesNotApply(String),
    /// The text they would produce is larger than `limit` bytes: a refused request.
    TooLarge {
        /// Which edit (1-based) crossed the limit.
        edit: usize,
        /// The size it would have produced.
        bytes: u128,
        /// The limit.
        limit: usize,
    },
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::DoesNotApply(why) => f.write_str(why),
            EditError::TooLarge { edit, bytes, limit } => write!(
                f,
                "edit {edit} would make the text {bytes} bytes long; the limit is {limit} \
                 bytes (the request body limit)"
            ),
        }
    }
}

/// Applies `edits` in order to `current` as an editor's find-and-replace does, never
/// producing a text over `limit` bytes (issue 20: a few `replaceAll` edits in a 3 KB request
/// must not build a gigabyte). Its memory is the texts (each at most `limit`) plus at most
/// [`MAX_CHANGES`] changes; the file is never diffed: each edit's `oldText` is diffed by lines
/// with its `newText` once (see [`apply_one`]), and the spans of several edits are composed.
pub fn apply_edits(current: &str, edits: &[Edit], limit: usize) -> Result<Applied, EditError> {
    let mut text: Option<String> = None;
    let mut changes: Vec<Change> = Vec::new();
    for (index, edit) in edits.iter().enumerate() {
        let base = text.as_deref().unwrap_or(current);
        let (next, step) = apply_one(base, edit, limit).map_err(|error| match error {
            EditError::DoesNotApply(why) if edits.len() > 1 => {
                EditError::DoesNotApply(format!("edit {}: {why}", index + 1))
            }
            EditError::TooLarge { bytes, limit, .. } => EditError::TooLarge {
                edit: index + 1,
                bytes,
                limit,
            },
            other => other,
        })?;
        changes = if index == 0 {
            step
        } else {
            compose(&changes, &step)
        };
        text = Some(next);
    }
    let text = text.unwrap_or_else(|| current.to_owned());
    // The lines git's merge would see changed (13.7): its diff of the whole texts, which may
    // align an ambiguous change differently from the diff of each edit's own texts.
    let (line_changes, line_ops) = match diff_lines_if_short(current, &text) {
        Some(diff) => diff.into_parts(),
        None => (changes.clone(), None),
    };
    Ok(Applied {
        text,
        changes,
        line_changes,
        line_ops,
    })
}

/// One edit applied to `text`: the new text and the changes, each occurrence's changes being
/// the lines its `oldText` and `newText` differ in.
fn apply_one(text: &str, edit: &Edit, limit: usize) -> Result<(String, Vec<Change>), EditError> {
    if edit.old_text.is_empty() {
        if !text.is_empty() {
            return Err(EditError::DoesNotApply(
                "an empty oldText applies only to an empty or missing file".into(),
            ));
        }
        let len = edit.new_text.len();
        if len > limit {
            return Err(too_large(len as u128, limit));
        }
        return Ok((
            edit.new_text.clone(),
            vec![Change {
                old: (0, 0),
                new: (0, len),
            }],
        ));
    }
    // Counted first, keeping only the first position: the size is known before anything is
    // built, and a refused edit costs nothing. (memchr's searcher, several times faster than
    // `str::match_indices` on a large file; matches of a `str` in a `str` start on a char
    // boundary.)
    let finder = memchr::memmem::Finder::new(edit.old_text.as_bytes());
    let mut found = 0usize;
    let mut first = None;
    for at in finder.find_iter(text.as_bytes()) {
        first.get_or_insert(at);
        found += 1;
        if found > 1 && !edit.replace_all {
            break;
        }
    }
    match (found, edit.replace_all) {
        (0, _) => {
            return Err(EditError::DoesNotApply(
                "oldText does not occur in the file".into(),
            ))
        }
        (_, false) if found > 1 => {
            let n = finder.find_iter(text.as_bytes()).count();
            return Err(EditError::DoesNotApply(format!(
                "oldText occurs {n} times in the file; make it unique or set replaceAll"
            )));
        }
        _ => {}
    }
    let size = text.len() as u128 - found as u128 * edit.old_text.len() as u128
        + found as u128 * edit.new_text.len() as u128;
    if size > limit as u128 {
        return Err(too_large(size, limit));
    }
    // What the edit changes inside its own text (docs/protocol.md 13: the lines that actually
    // changed): the lines of `oldText` that `newText` keeps — the context an editor's
    // find-and-replace carries to be unique — are not replaced, so they are no change.
    let inner = diff_lines(&edit.old_text, &edit.new_text);
    let mut out = String::with_capacity(usize::try_from(size).unwrap_or(limit));
    let mut changes = Vec::new();
    let mut last = 0;
    // One occurrence is where it was found; several are found again as they are written.
    let at_each: Box<dyn Iterator<Item = usize>> = match (found, first) {
        (1, Some(at)) => Box::new(std::iter::once(at)),
        _ => Box::new(finder.find_iter(text.as_bytes())),
    };
    for at in at_each {
        out.push_str(&text[last..at]);
        let start = out.len();
        out.push_str(&edit.new_text);
        for change in &inner {
            push_bounded(
                &mut changes,
                Change {
                    old: (at + change.old.0, at + change.old.1),
                    new: (start + change.new.0, start + change.new.1),
                },
            );
        }
        last = at + edit.old_text.len();
    }
    out.push_str(&text[last..]);
    Ok((out, changes))
}

fn too_large(bytes: u128, limit: usize) -> EditError {
    EditError::TooLarge {
        edit: 1,
        bytes,
        limit,
    }
}

/// Appends `change` (which starts at or after the last one ends), merging it into the last
/// one when they touch, and halving the list by merging neighbours when it reaches twice
/// [`MAX_CHANGES`]: amortised O(1), never more than that many changes held.
fn push_bounded(changes: &mut Vec<Change>, change: Change) {
    if let Some(last) = changes.last_mut() {
        if last.old.1 >= change.old.0 && last.new.1 >= change.new.0 {
            last.old.1 = last.old.1.max(change.old.1);
            last.new.1 = last.new.1.max(change.new.1);
            return;
        }
    }
    if changes.len() >= 2 * MAX_CHANGES {
        let halved: Vec<Change> = changes
            .chunks(2)
            .map(|pair| Change {
                old: (pair[0].old.0, pair[pair.len() - 1].old.1),
                new: (pair[0].new.0, pair[pair.len() - 1].new.1),
            })
            .collect();
        *changes = halved;
    }
    changes.push(change);
}

/// The changes from the original text to the text after `step`, given `prev` (original →
/// current) and `step` (current → next): changes that meet or touch in the current text
/// become one; the others shift by what the other list changed before them. Exact (no
/// diff), linear, and bounded like [`push_bounded`].
fn compose(prev: &[Change], step: &[Change]) -> Vec<Change> {
    let delta = |c: &Change| (c.new.1 - c.new.0) as i64 - (c.old.1 - c.old.0) as i64;
    let shift = |at: usize, by: i64| usize::try_from(at as i64 + by).unwrap_or(0);
    let mut out = Vec::with_capacity((prev.len() + step.len()).min(2 * MAX_CHANGES));
    let (mut i, mut j) = (0, 0);
    // What `prev` and `step` changed in the lengths before the current group.
    let (mut before_prev, mut before_step) = (0i64, 0i64);
    while i < prev.len() || j < step.len() {
        // A group: the changes of both lists meeting or touching in the current text, taken
        // in order of their start there.
        let mut group: Option<(usize, usize)> = None;
        let (mut group_prev, mut group_step) = (0i64, 0i64);
        loop {
            let next_prev = prev.get(i).map(|c| c.new);
            let next_step = step.get(j).map(|c| c.old);
            let (span, from_prev) = match (next_prev, next_step) {
                (Some(p), Some(s)) if p.0 <= s.0 => (p, true),
                (Some(_), Some(s)) | (None, Some(s)) => (s, false),
                (Some(p), None) => (p, true),
                (None, None) => break,
            };
            match group.as_mut() {
                Some(g) if span.0 > g.1 => break,
                Some(g) => g.1 = g.1.max(span.1),
                None => group = Some(span),
            }
            if from_prev {
                group_prev += delta(&prev[i]);
                i += 1;
            } else {
                group_step += delta(&step[j]);
                j += 1;
            }
        }
        let Some((start, end)) = group else { break };
        push_bounded(
            &mut out,
            Change {
                old: (
                    shift(start, -before_prev),
                    shift(end, -before_prev - group_prev),
                ),
                new: (
                    shift(start, before_step),
                    shift(end, before_step + group_step),
                ),
            },
        );
        before_prev += group_prev;
        before_step += group_step;
    }
    out
}

/// The changed spans between two texts by lines (what a line diff marks as changed on either
/// side), for whole-content writes: git's diff of the whole texts ([`text_line_ops`], 13.7). Texts
/// longer than [`MAX_DIFF_LINES`] lines have their common head and tail cut off first, and a
/// middle still longer than that on either side is one change, so the diff's memory is
/// bounded whatever the texts.
pub fn diff_lines(current: &str, new: &str) -> Vec<Change> {
    if let Some(diff) = diff_lines_if_short(current, new) {
        return diff.changes;
    }
    let head = common_head_lines(current.as_bytes(), new.as_bytes());
    let tail = common_tail_lines(&current.as_bytes()[head..], &new.as_bytes()[head..]);
    let old_middle = &current[head..current.len() - tail];
    let new_middle = &new[head..new.len() - tail];
    if old_middle.is_empty() && new_middle.is_empty() {
        return Vec::new();
    }
    match (bounded_lines(old_middle), bounded_lines(new_middle)) {
        (Some(old_lines), Some(new_lines)) => {
            diff_of((old_middle, &old_lines), (new_middle, &new_lines), head).0
        }
        _ => vec![Change {
            old: (head, head + old_middle.len()),
            new: (head, head + new_middle.len()),
        }],
    }
}

/// git's line diff of two whole texts: as changed spans and as line operations.
struct WholeDiff {
    changes: Vec<Change>,
    ops: Vec<DiffOp>,
    new_count: usize,
}

impl WholeDiff {
    /// The changed spans, and the operations with the new text's line count
    /// ([`Applied::line_ops`]).
    fn into_parts(self) -> (Vec<Change>, Option<(Vec<DiffOp>, usize)>) {
        (self.changes, Some((self.ops, self.new_count)))
    }
}

/// [`diff_lines`] of two texts of at most [`MAX_DIFF_LINES`] lines each (each split once),
/// with its line operations; `None` when either is longer.
fn diff_lines_if_short(current: &str, new: &str) -> Option<WholeDiff> {
    if current == new {
        let count = super::line_ops::line_count(current.as_bytes());
        let ops = (count > 0)
            .then_some(DiffOp::Equal {
                old_index: 0,
                new_index: 0,
                len: count,
            })
            .into_iter()
            .collect();
        return Some(WholeDiff {
            changes: Vec::new(),
            ops,
            new_count: count,
        });
    }
    let old_lines = bounded_lines(current)?;
    let new_lines = lines_sharing(current, &old_lines, new, MAX_DIFF_LINES)?;
    let (changes, ops) = diff_of((current, &old_lines), (new, &new_lines), 0);
    Some(WholeDiff {
        changes,
        ops,
        new_count: new_lines.len(),
    })
}

/// The lines of `text` when there are at most [`MAX_DIFF_LINES`].
fn bounded_lines(text: &str) -> Option<Vec<&str>> {
    super::line_ops::lines_at_most(text, MAX_DIFF_LINES)
}

/// The changes between two texts split into lines, which start at byte `head` of the texts
/// they are part of, and the diff's line operations (a large pair's diff is remembered by
/// the two texts' digests).
fn diff_of(
    (old, old_lines): (&str, &[&str]),
    (new, new_lines): (&str, &[&str]),
    head: usize,
) -> (Vec<Change>, Vec<DiffOp>) {
    let offsets = |lines: &[&str]| {
        let mut at = Vec::with_capacity(lines.len() + 1);
        let mut sum = head;
        at.push(sum);
        for line in lines {
            sum += line.len();
            at.push(sum);
        }
        at
    };
    let old_at = offsets(old_lines);
    let new_at = offsets(new_lines);
    let ops = text_line_ops((old.as_bytes(), old_lines), (new.as_bytes(), new_lines));
    (changes_of(&ops, &old_at, &new_at), ops)
}

/// Turns diff operations over units whose byte offsets are `old_at`/`new_at` into changes,
/// merging adjacent ones.
fn changes_of(ops: &[DiffOp], old_at: &[usize], new_at: &[usize]) -> Vec<Change> {
    let mut changes: Vec<Change> = Vec::new();
    for op in ops {
        let (old_range, new_range) = match *op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => (old_index..old_index + old_len, new_index..new_index),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => (old_index..old_index, new_index..new_index + new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (
                old_index..old_index + old_len,
                new_index..new_index + new_len,
            ),
        };
        let change = Change {
            old: (old_at[old_range.start], old_at[old_range.end]),
            new: (new_at[new_range.start], new_at[new_range.end]),
        };
        match changes.last_mut() {
            Some(last) if last.old.1 == change.old.0 && last.new.1 == change.new.0 => {
                last.old.1 = change.old.1;
                last.new.1 = change.new.1;
            }
            _ => changes.push(change),
        }
    }
    changes
}

/// Where the start of a region at position `at` of the current text (outside every change,
/// or at a change's edge) lies in the new text: changes that end at or before it shift it,
/// except an insertion exactly at `at`, which falls inside the region.
pub fn map_start(changes: &[Change], at: usize) -> usize {
    map(changes, at, false)
}

/// Where the end of a region at position `at` of the current text lies in the new text: like
/// [`map_start`], but an insertion exactly at `at` falls inside the region too.
pub fn map_end(changes: &[Change], at: usize) -> usize {
    map(changes, at, true)
}

fn map(changes: &[Change], at: usize, insertions_at_count: bool) -> usize {
    let mut shifted = at as i64;
    for change in changes {
        let insertion_here = change.old.0 == change.old.1 && change.old.0 == at;
        if change.old.1 <= at && (insertions_at_count || !insertion_here) {
            shifted += (change.new.1 - change.new.0) as i64 - (change.old.1 - change.old.0) as i64;
        }
    }
    usize::try_from(shifted).unwrap_or(0)
}

/// Whether the half-open range `[start, end)` meets `span`: intersects it, or strictly
/// contains its point when the span is empty (a pure insertion).
pub fn meets(start: usize, end: usize, span: (usize, usize)) -> bool {
    if span.0 == span.1 {
        start < span.0 && span.0 < end
    } else {
        start < span.1 && span.0 < end
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    const LIMIT: usize = 1 << 20;

    fn apply(current: &str, edits: &[Edit]) -> Result<Applied, String> {
        apply_edits(current, edits, LIMIT).map_err(|e| e.to_string())
    }

    fn edit(old: &str, new: &str, all: bool) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn one_edit_gives_exact_spans() {
        let got = apply("abc abc xyz", &[edit("xyz", "XY", false)]).unwrap();
        assert_eq!(got.text, "abc abc XY");
        assert_eq!(
            got.changes,
            [Change {
                old: (8, 11),
                new: (8, 10)
            }]
        );
        let got = apply("abc abc xyz", &[edit("abc", "A", true)]).unwrap();
        assert_eq!(got.text, "A A xyz");
        assert_eq!(
            got.changes,
            [
                Change {
                    old: (0, 3),
                    new: (0, 1)
                },
                Change {
                    old: (4, 7),
                    new: (2, 3)
                }
            ]
        );
    }

    #[test]
    fn missing_ambiguous_and_empty_old_text() {
        assert!(apply("abc", &[edit("zzz", "y", false)])
            .unwrap_err()
            .contains("does not occur"));
        assert!(apply("abc abc", &[edit("abc", "y", false)])
            .unwrap_err()
            .contains("2 times"));
        assert!(apply("abc", &[edit("", "y", false)]).is_err());
        let new_file = apply("", &[edit("", "hello\n", false)]).unwrap();
        assert_eq!(new_file.text, "hello\n");
        assert_eq!(
            new_file.changes,
            [Change {
                old: (0, 0),
                new: (0, 6)
            }]
        );
        let second = apply("a b", &[edit("a", "c", false), edit("zz", "", false)]);
        assert!(second.unwrap_err().starts_with("edit 2:"));
    }

    #[test]
    fn several_edits_compose() {
        // The second edit works on the first one's result.
        let got = apply(
            "one two three",
            &[edit("two", "2", false), edit("2 three", "2 3", false)],
        )
        .unwrap();
        assert_eq!(got.text, "one 2 3");
        let old: Vec<_> = got.changes.iter().map(|c| c.old).collect();
        assert!(old.iter().all(|&(s, _)| s >= 4), "{old:?}");
        assert_eq!(old.last().unwrap().1, 13);
    }

    #[test]
    fn line_diff_marks_changed_lines_on_both_sides() {
        let old = "a\nb\nc\nd\n";
        let new = "a\nB\nc\nd\ne\n";
        let changes = diff_lines(old, new);
        assert_eq!(
            changes,
            [
                Change {
                    old: (2, 4),
                    new: (2, 4)
                },
                Change {
                    old: (8, 8),
                    new: (8, 10)
                }
            ]
        );
        assert!(diff_lines(old, old).is_empty());
    }

    #[test]
    fn positions_map_across_changes() {
        let changes = [Change {
            old: (2, 4),
            new: (2, 7),
        }];
        assert_eq!(map_start(&changes, 0), 0);
        assert_eq!(map_start(&changes, 2), 2);
        assert_eq!(map_end(&changes, 4), 7);
        assert_eq!(map_start(&changes, 10), 13);
        let insertion = [Change {
            old: (5, 5),
            new: (5, 8),
        }];
        assert_eq!(
            map_start(&insertion, 5),
            5,
            "a region starting there holds the insertion"
        );
        assert_eq!(map_end(&insertion, 5), 8, "so does one ending there");
        assert_eq!(map_start(&insertion, 6), 9);
    }

    #[test]
    fn an_edit_changes_only_the_lines_its_texts_differ_in() {
        let current = "a\nb\nc\nd\ne\n";
        // An insertion carried with a line of context above it: only the new line.
        let got = apply(current, &[edit("b\n", "b\nnew\n", false)]).unwrap();
        assert_eq!(got.text, "a\nb\nnew\nc\nd\ne\n");
        assert_eq!(
            got.changes,
            [Change {
                old: (4, 4),
                new: (4, 8)
            }]
        );
        // Two lines changed in one edit, a kept line between them: two changes.
        let got = apply(current, &[edit("b\nc\nd\n", "B\nc\nD\n", false)]).unwrap();
        assert_eq!(
            got.changes,
            [
                Change {
                    old: (2, 4),
                    new: (2, 4)
                },
                Change {
                    old: (6, 8),
                    new: (6, 8)
                }
            ]
        );
        // An edit that changes nothing changes no line.
        let got = apply(current, &[edit("c\n", "c\n", false)]).unwrap();
        assert_eq!(got.text, current);
        assert!(got.changes.is_empty(), "{:?}", got.changes);
        // Each occurrence of a replaceAll, likewise.
        let got = apply("x\n1\nx\n2\n", &[edit("x\n", "x\ny\n", true)]).unwrap();
        assert_eq!(got.text, "x\ny\n1\nx\ny\n2\n");
        assert_eq!(
            got.changes,
            [
                Change {
                    old: (2, 2),
                    new: (2, 4)
                },
                Change {
                    old: (6, 6),
                    new: (8, 10)
                }
            ]
        );
    }

    #[test]
    fn the_line_diff_is_gits_histogram() {
        // `git diff --diff-algorithm=histogram` of these: `b }` inserted at the top, the two
        // `}` replaced by `b`; Myers instead replaces `c }` by `b` and inserts `c b` below.
        let changes = diff_lines("c\n}\n}\n", "b\n}\nc\nb\n");
        assert_eq!(
            changes,
            [
                Change {
                    old: (0, 0),
                    new: (0, 4)
                },
                Change {
                    old: (2, 6),
                    new: (6, 8)
                }
            ]
        );
    }

    #[test]
    fn meeting_a_span() {
        assert!(meets(0, 10, (5, 6)));
        assert!(!meets(0, 10, (10, 12)), "touching is not meeting");
        assert!(meets(0, 10, (5, 5)), "an insertion strictly inside");
        assert!(!meets(0, 10, (0, 0)), "an insertion at the edge");
        assert!(!meets(0, 10, (10, 10)));
    }

    #[test]
    fn amplifying_edits_are_refused_before_they_build_anything() {
        // Issue 20 item 1: from nothing, each replaceAll multiplies the text by 1000.
        let thousand = "a".repeat(1000);
        let edits = [
            edit("", "a", false),
            edit("a", &thousand, true),
            edit("a", &thousand, true),
            edit("a", &thousand, true),
        ];
        let err = apply_edits("", &edits, LIMIT).unwrap_err();
        assert_eq!(
            err,
            EditError::TooLarge {
                edit: 4,
                bytes: 1_000_000_000,
                limit: LIMIT
            }
        );
        assert!(err.to_string().contains("request body limit"), "{err}");
        // Up to the limit is fine.
        let ok = apply_edits("", &edits[..2], 1000).unwrap();
        assert_eq!(ok.text.len(), 1000);
    }

    #[test]
    fn changes_stay_bounded_and_cover_every_replacement() {
        let text = "a.".repeat(5 * MAX_CHANGES);
        let got = apply_edits(&text, &[edit("a", "bb", true)], LIMIT).unwrap();
        assert!(
            got.changes.len() <= 2 * MAX_CHANGES,
            "{}",
            got.changes.len()
        );
        assert_eq!(got.changes.first().unwrap().old.0, 0);
        assert_eq!(got.changes.last().unwrap().old.1, text.len() - 1);
        assert_eq!(got.changes.last().unwrap().new.1, got.text.len() - 1);
        // Touching replacements are one change.
        let got = apply_edits("aaaa", &[edit("a", "b", true)], LIMIT).unwrap();
        assert_eq!(
            got.changes,
            [Change {
                old: (0, 4),
                new: (0, 4)
            }]
        );
    }

    #[test]
    fn composed_spans_map_the_untouched_text() {
        let current = "one two three four five";
        let got = apply(
            current,
            &[
                edit("two", "2", false),
                edit("four", "FOUR!", false),
                edit("2 three", "23", false),
            ],
        )
        .unwrap();
        assert_eq!(got.text, "one 23 FOUR! five");
        assert_eq!(
            got.changes,
            [
                Change {
                    old: (4, 13),
                    new: (4, 6)
                },
                Change {
                    old: (14, 18),
                    new: (7, 12)
                }
            ]
        );
    }

    #[test]
    fn line_diff_cuts_the_common_head_and_tail_and_bounds_the_middle() {
        let old = "keep\nold\nkeep\n";
        let new = "keep\nnew line\nkeep\n";
        assert_eq!(
            diff_lines(old, new),
            [Change {
                old: (5, 9),
                new: (5, 14)
            }]
        );
        let many: String = (0..MAX_DIFF_LINES + 10).map(|i| format!("{i}\n")).collect();
        let changes = diff_lines("head\n", &format!("head\n{many}"));
        assert_eq!(
            changes,
            [Change {
                old: (5, 5),
                new: (5, 5 + many.len())
            }]
        );
        // A change inside a line keeps the whole line.
        assert_eq!(
            diff_lines("abc\ndef\n", "abc\ndXf\n"),
            [Change {
                old: (4, 8),
                new: (4, 8)
            }]
        );
        assert_eq!(
            diff_lines("x\n", "y\nx\n"),
            [Change {
                old: (0, 0),
                new: (0, 2)
            }]
        );
    }
}
