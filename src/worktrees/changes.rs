//! A worktree's changes as git sees them (PROTOCOL-NOTES 14.4): against the merge-base of
//! its HEAD with the main worktree's HEAD, committed on its branch and uncommitted, with the
//! untracked files of supported languages; per file the lines of its current text that
//! changed (`git diff -U0`, git's own alignment: what a merge will see), and the two texts
//! the lines are carried between.
//!
//! Nothing here writes to the repository: `GIT_OPTIONAL_LOCKS=0` keeps `git diff` from
//! refreshing the index (which would wake the file watcher that asked for this).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::forecast::{git, new_side_lines, texts_at, GitError};
use crate::analysis::language::Language;

/// The largest text kept of a changed file (larger ones are file-level work).
pub const MAX_TEXT_BYTES: usize = 8 << 20;

/// At most this many changed files of one worktree are observed (the rest are left out).
pub const MAX_FILES: usize = 5_000;

/// One changed file of a worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// Its path relative to the worktree's root, `/`-separated.
    pub file: String,
    /// Its text at the merge-base (`None`: absent there, binary or too large).
    pub base: Option<String>,
    /// Its text in the worktree now (`None`: deleted, binary or too large).
    pub current: Option<String>,
    /// The lines of `current` that changed, 1-based inclusive (a pure deletion: the line
    /// where the two sides now join); empty when the file is file-level work.
    pub lines: Vec<(i64, i64)>,
    /// Whether the change is the whole file (13.1: deleted, new, or no line kept).
    pub whole_file: bool,
}

/// What a worktree changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeChanges {
    /// The worktree's root.
    pub root: PathBuf,
    /// Its merge-base with the main worktree's HEAD.
    pub merge_base: String,
    /// Its changed files, by path.
    pub files: Vec<ChangedFile>,
}

/// The changes of the worktree at `root` against the merge-base of its HEAD with the HEAD
/// of the main worktree at `main_root`.
pub fn changes_of(root: &Path, main_root: &Path) -> Result<WorktreeChanges, GitError> {
    let head = rev_parse(root)?;
    let main_head = if root == main_root {
        head.clone()
    } else {
        rev_parse(main_root)?
    };
    let merge_base = if head == main_head {
        head
    } else {
        quiet_git(root, &["merge-base", &head, &main_head])?
            .trim()
            .to_owned()
    };
    let diff = quiet_git(
        root,
        &[
            "-c",
            "core.quotePath=false",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "--no-textconv",
            "-U0",
            &merge_base,
            "--",
        ],
    )?;
    let mut hunks = parse_diff(&diff);
    let untracked = quiet_git(root, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    for file in untracked.split('\0').filter(|f| !f.is_empty()) {
        if Language::for_path(file).is_some() {
            hunks
                .entry(file.to_owned())
                .or_insert_with(FileDiff::new_file);
        }
    }
    let mut paths: Vec<String> = hunks.keys().cloned().collect();
    paths.sort();
    paths.truncate(MAX_FILES);
    let names: Vec<String> = paths.iter().map(|p| format!("{merge_base}:{p}")).collect();
    let bases = texts_at(root, &names)?;
    let files = paths
        .into_iter()
        .zip(bases)
        .map(|(file, base)| {
            let diff = hunks.remove(&file).unwrap_or_else(FileDiff::new_file);
            let current = read_text(&root.join(&file));
            changed_file(file, base, current, &diff)
        })
        .collect();
    Ok(WorktreeChanges {
        root: root.to_path_buf(),
        merge_base,
        files,
    })
}

fn rev_parse(root: &Path) -> Result<String, GitError> {
    Ok(quiet_git(root, &["rev-parse", "HEAD"])?.trim().to_owned())
}

/// `git` that takes no optional locks (no index refresh written behind our back).
fn quiet_git(root: &Path, args: &[&str]) -> Result<String, GitError> {
    git(root, args, &[("GIT_OPTIONAL_LOCKS", Path::new("0"))], &[])
}

/// One file's hunks in a `-U0` diff: `(old start, old count, new start, new count)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct FileDiff {
    hunks: Vec<(i64, i64, i64, i64)>,
    /// Binary, or a header this parser does not read: the whole file.
    opaque: bool,
}

impl FileDiff {
    fn new_file() -> FileDiff {
        FileDiff {
            hunks: Vec::new(),
            opaque: true,
        }
    }
}

/// The hunks of a `git diff -U0 --no-renames` patch, per file.
fn parse_diff(diff: &str) -> HashMap<String, FileDiff> {
    let mut files: HashMap<String, FileDiff> = HashMap::new();
    let mut current: Option<String> = None;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            // `a/<p> b/<p>` with the same path on both sides (no renames).
            let path = (rest.len() >= 5 && (rest.len() - 5) % 2 == 0)
                .then(|| {
                    let half = (rest.len() - 5) / 2;
                    let (a, b) = (rest.get(2..2 + half)?, rest.get(half + 5..)?);
                    (rest.starts_with("a/") && a == b).then(|| a.to_owned())
                })
                .flatten();
            current = path;
            if let Some(path) = &current {
                files.entry(path.clone()).or_default();
            }
            continue;
        }
        let Some(path) = &current else { continue };
        let Some(entry) = files.get_mut(path) else {
            continue;
        };
        if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
            entry.opaque = true;
        } else if let Some(hunk) = line.strip_prefix("@@ ").and_then(parse_hunk) {
            entry.hunks.push(hunk);
        }
    }
    files
}

/// `-a,b +c,d @@ ...` as `(a, b, c, d)` (a missing count is 1).
fn parse_hunk(rest: &str) -> Option<(i64, i64, i64, i64)> {
    let mut parts = rest.split(' ');
    let side = |part: Option<&str>, sign: char| -> Option<(i64, i64)> {
        let part = part?.strip_prefix(sign)?;
        Some(match part.split_once(',') {
            Some((start, count)) => (start.parse().ok()?, count.parse().ok()?),
            None => (part.parse().ok()?, 1),
        })
    };
    let (old_start, old_count) = side(parts.next(), '-')?;
    let (new_start, new_count) = side(parts.next(), '+')?;
    Some((old_start, old_count, new_start, new_count))
}

/// A changed file from its texts and hunks (13.1 for what is whole-file work).
fn changed_file(
    file: String,
    base: Option<String>,
    current: Option<String>,
    diff: &FileDiff,
) -> ChangedFile {
    let line_count = |text: &str| crate::coord::regions::Lines::of(text).count();
    let whole_file = match (&base, &current) {
        (Some(base), Some(current)) if !diff.opaque && !diff.hunks.is_empty() => {
            // One hunk replacing every line by other lines keeps none.
            let (old_start, old_count, new_start, new_count) = diff.hunks[0];
            diff.hunks.len() == 1
                && old_start <= 1
                && new_start <= 1
                && old_count >= line_count(base)
                && new_count >= line_count(current)
        }
        (Some(_), Some(_)) => diff.opaque,
        _ => true,
    };
    let lines = if whole_file {
        Vec::new()
    } else {
        let last = current.as_deref().map_or(1, line_count);
        diff.hunks
            .iter()
            .map(|&(_, _, start, count)| {
                let (first, end) = new_side_lines(start, count);
                if count == 0 {
                    // A point: after a line of the text.
                    let at = end.min(last);
                    (at + 1, at)
                } else {
                    (first.min(last), end.min(last).max(first.min(last)))
                }
            })
            .collect()
    };
    ChangedFile {
        file,
        base,
        current,
        lines,
        whole_file,
    }
}

/// The text of a file on disk, when it is UTF-8 and not too large.
fn read_text(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_TEXT_BYTES as u64 {
        return None;
    }
    String::from_utf8(std::fs::read(path).ok()?).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_patch_gives_each_file_s_hunks() {
        let diff = "diff --git a/src/a.py b/src/a.py\nindex 1..2 100644\n--- a/src/a.py\n\
                    +++ b/src/a.py\n@@ -3 +3,2 @@ def f\n-x\n+y\n+z\n@@ -9,2 +10,0 @@\n-q\n-r\n\
                    diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n";
        let files = parse_diff(diff);
        assert_eq!(files["src/a.py"].hunks, [(3, 1, 3, 2), (9, 2, 10, 0)]);
        assert!(!files["src/a.py"].opaque);
        assert!(files["img.png"].opaque);
    }

    #[test]
    fn changed_lines_and_whole_files() {
        let diff = FileDiff {
            hunks: vec![(3, 1, 3, 2), (9, 2, 10, 0)],
            opaque: false,
        };
        let text = |n: usize| Some("l\n".repeat(n));
        let file = changed_file("a.py".into(), text(12), text(11), &diff);
        assert_eq!(
            file.lines,
            [(3, 4), (11, 10)],
            "a deletion is the point where the sides join (13.4)"
        );
        assert!(!file.whole_file);
        let new = changed_file("a.py".into(), None, text(3), &FileDiff::new_file());
        assert!(new.whole_file && new.lines.is_empty());
        let deleted = changed_file("a.py".into(), text(3), None, &diff);
        assert!(deleted.whole_file);
        let rewrite = FileDiff {
            hunks: vec![(1, 3, 1, 2)],
            opaque: false,
        };
        assert!(changed_file("a.py".into(), text(3), text(2), &rewrite).whole_file);
    }
}
