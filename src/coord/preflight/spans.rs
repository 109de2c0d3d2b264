//! From an edit to changed spans (PROTOCOL-NOTES 10.1–10.2), as pure functions: applying
//! find-and-replace edits, diffing whole new content, and mapping positions of the current
//! text into the new one.

use similar::{Algorithm, DiffOp};

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
    /// The changes, in order, not overlapping.
    pub changes: Vec<Change>,
}

/// How long a diff may search for the shortest edit script before settling for a coarser one.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_millis(200);

/// Applies `edits` in order to `current` as an editor's find-and-replace does. `Err` says why
/// they do not apply (an `oldText` missing or ambiguous, an empty `oldText` on a non-empty
/// text).
pub fn apply_edits(current: &str, edits: &[Edit]) -> Result<Applied, String> {
    let mut text = current.to_owned();
    let mut single: Option<Vec<Change>> = None;
    for (index, edit) in edits.iter().enumerate() {
        let (next, changes) = apply_one(&text, edit).map_err(|why| {
            if edits.len() == 1 {
                why
            } else {
                format!("edit {}: {why}", index + 1)
            }
        })?;
        text = next;
        if edits.len() == 1 {
            single = Some(changes);
        }
    }
    // One edit: its spans are exact. Several: their spans compose, which a diff of the
    // result against the current text gives directly.
    let changes = match single {
        Some(changes) => changes,
        None => diff_bytes(current, &text),
    };
    Ok(Applied { text, changes })
}

fn apply_one(text: &str, edit: &Edit) -> Result<(String, Vec<Change>), String> {
    if edit.old_text.is_empty() {
        if !text.is_empty() {
            return Err("an empty oldText applies only to an empty or missing file".into());
        }
        let len = edit.new_text.len();
        return Ok((
            edit.new_text.clone(),
            vec![Change {
                old: (0, 0),
                new: (0, len),
            }],
        ));
    }
    let found: Vec<usize> = text
        .match_indices(&edit.old_text)
        .map(|(at, _)| at)
        .collect();
    match (found.len(), edit.replace_all) {
        (0, _) => return Err("oldText does not occur in the file".into()),
        (n, false) if n > 1 => {
            return Err(format!(
                "oldText occurs {n} times in the file; make it unique or set replaceAll"
            ))
        }
        _ => {}
    }
    let mut out = String::with_capacity(text.len() + found.len() * edit.new_text.len());
    let mut changes = Vec::with_capacity(found.len());
    let mut last = 0;
    for at in found {
        out.push_str(&text[last..at]);
        let start = out.len();
        out.push_str(&edit.new_text);
        changes.push(Change {
            old: (at, at + edit.old_text.len()),
            new: (start, out.len()),
        });
        last = at + edit.old_text.len();
    }
    out.push_str(&text[last..]);
    Ok((out, changes))
}

/// The changed spans between two texts by lines (what a line diff marks as changed on either
/// side), for whole-content writes.
pub fn diff_lines(current: &str, new: &str) -> Vec<Change> {
    let old_lines: Vec<&str> = current.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let offsets = |lines: &[&str]| {
        let mut at = Vec::with_capacity(lines.len() + 1);
        let mut sum = 0;
        at.push(0);
        for line in lines {
            sum += line.len();
            at.push(sum);
        }
        at
    };
    let old_at = offsets(&old_lines);
    let new_at = offsets(&new_lines);
    let deadline = std::time::Instant::now() + DIFF_DEADLINE;
    let ops = similar::capture_diff_slices_deadline(
        Algorithm::Myers,
        &old_lines,
        &new_lines,
        Some(deadline),
    );
    changes_of(&ops, &old_at, &new_at)
}

/// The changed spans between two texts by bytes (several edits composed).
fn diff_bytes(current: &str, new: &str) -> Vec<Change> {
    let old = current.as_bytes();
    let new_bytes = new.as_bytes();
    let deadline = std::time::Instant::now() + DIFF_DEADLINE;
    let ops =
        similar::capture_diff_slices_deadline(Algorithm::Myers, old, new_bytes, Some(deadline));
    let old_at: Vec<usize> = (0..=old.len()).collect();
    let new_at: Vec<usize> = (0..=new_bytes.len()).collect();
    changes_of(&ops, &old_at, &new_at)
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

    fn edit(old: &str, new: &str, all: bool) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn one_edit_gives_exact_spans() {
        let got = apply_edits("abc abc xyz", &[edit("xyz", "XY", false)]).unwrap();
        assert_eq!(got.text, "abc abc XY");
        assert_eq!(
            got.changes,
            [Change {
                old: (8, 11),
                new: (8, 10)
            }]
        );
        let got = apply_edits("abc abc xyz", &[edit("abc", "A", true)]).unwrap();
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
        assert!(apply_edits("abc", &[edit("zzz", "y", false)])
            .unwrap_err()
            .contains("does not occur"));
        assert!(apply_edits("abc abc", &[edit("abc", "y", false)])
            .unwrap_err()
            .contains("2 times"));
        assert!(apply_edits("abc", &[edit("", "y", false)]).is_err());
        let new_file = apply_edits("", &[edit("", "hello\n", false)]).unwrap();
        assert_eq!(new_file.text, "hello\n");
        assert_eq!(
            new_file.changes,
            [Change {
                old: (0, 0),
                new: (0, 6)
            }]
        );
        let second = apply_edits("a b", &[edit("a", "c", false), edit("zz", "", false)]);
        assert!(second.unwrap_err().starts_with("edit 2:"));
    }

    #[test]
    fn several_edits_compose() {
        // The second edit works on the first one's result.
        let got = apply_edits(
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
    fn meeting_a_span() {
        assert!(meets(0, 10, (5, 6)));
        assert!(!meets(0, 10, (10, 12)), "touching is not meeting");
        assert!(meets(0, 10, (5, 5)), "an insertion strictly inside");
        assert!(!meets(0, 10, (0, 0)), "an insertion at the edge");
        assert!(!meets(0, 10, (10, 10)));
    }
}
