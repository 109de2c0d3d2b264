//! A worktree's changes as git sees them (docs/protocol.md 14.4): against the merge-base of
//! its HEAD with the main worktree's HEAD, committed on its branch and uncommitted, with the
//! untracked files of supported languages; per file the lines of its current text that
//! changed (the one line diff of its two texts, git's merge alignment: what a merge will
//! see), and the two texts the lines are carried between.
//!
//! Nothing here writes to the repository: `GIT_OPTIONAL_LOCKS=0` keeps `git diff` from
//! refreshing the index (which would wake the file watcher that asked for this).

use std::path::{Path, PathBuf};

use crate::analysis::language::Language;
use crate::coord::preflight::line_ops::{git_hunks, split_lines};
use crate::git::{blobs_at, Git, GitError};

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
    let git = Git::new(root).quiet();
    let head = rev_parse(root)?;
    let main_head = if root == main_root {
        head.clone()
    } else {
        rev_parse(main_root)?
    };
    let merge_base = if head == main_head {
        head
    } else {
        git.text(&["merge-base", &head, &main_head])?
            .trim()
            .to_owned()
    };
    let changed = git.text(&[
        "diff",
        "--name-only",
        "-z",
        "--no-renames",
        &merge_base,
        "--",
    ])?;
    let untracked = git.text(&["ls-files", "--others", "--exclude-standard", "-z"])?;
    let untracked = untracked
        .split('\0')
        .filter(|file| Language::for_path(file).is_some());
    let mut paths: Vec<String> = changed
        .split('\0')
        .chain(untracked)
        .filter(|file| !file.is_empty())
        .map(str::to_owned)
        .collect();
    paths.sort();
    paths.dedup();
    paths.truncate(MAX_FILES);
    let names: Vec<String> = paths.iter().map(|p| format!("{merge_base}:{p}")).collect();
    let bases = blobs_at(root, &names, MAX_TEXT_BYTES)?;
    let files = paths
        .into_iter()
        .zip(bases)
        .map(|(file, base)| {
            let base = base.and_then(|bytes| String::from_utf8(bytes).ok());
            let current = read_text(&root.join(&file));
            changed_file(file, base, current)
        })
        .collect();
    Ok(WorktreeChanges {
        root: root.to_path_buf(),
        merge_base,
        files,
    })
}

fn rev_parse(root: &Path) -> Result<String, GitError> {
    Ok(Git::new(root)
        .quiet()
        .text(&["rev-parse", "HEAD"])?
        .trim()
        .to_owned())
}

/// A changed file from its two texts (13.1 for what is whole-file work): its lines are the
/// one line diff's (13.7), the alignment `git merge` uses.
fn changed_file(file: String, base: Option<String>, current: Option<String>) -> ChangedFile {
    let (lines, whole_file) = match (&base, &current) {
        (Some(base), Some(current)) => {
            let (old, new) = (
                split_lines(base.as_bytes()),
                split_lines(current.as_bytes()),
            );
            let hunks = git_hunks(&old, &new);
            // One hunk replacing every line by other lines keeps none.
            let whole = matches!(hunks.as_slice(),
                [only] if only.old.len() == old.len() && only.new.len() == new.len());
            let line = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            let lines = hunks
                .iter()
                .map(|hunk| (line(hunk.new.start) + 1, line(hunk.new.end)))
                .collect();
            (if whole { Vec::new() } else { lines }, whole)
        }
        _ => (Vec::new(), true),
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
    use crate::coord::preflight::line_ops::changed_lines;

    #[test]
    fn changed_lines_and_whole_files() {
        let base = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n".to_owned();
        let current = "a\nb\nC\nC2\nd\ne\nf\ng\nh\nj\nk\nl\n".to_owned();
        let file = changed_file("a.py".into(), Some(base.clone()), Some(current.clone()));
        assert_eq!(
            file.lines,
            [(3, 4), (10, 9)],
            "a deletion is the point where the sides join (13.4)"
        );
        assert!(!file.whole_file);
        let new = changed_file("a.py".into(), None, Some(current.clone()));
        assert!(new.whole_file && new.lines.is_empty());
        let deleted = changed_file("a.py".into(), Some(base), None);
        assert!(deleted.whole_file);
        let rewrite = changed_file("a.py".into(), Some("a\nb\n".into()), Some("x\n".into()));
        assert!(rewrite.whole_file && rewrite.lines.is_empty());
        let same = changed_file("a.py".into(), Some("a\n".into()), Some("a\n".into()));
        assert!(!same.whole_file && same.lines.is_empty(), "a mode change");
    }

    #[test]
    fn a_worktree_s_changes_are_read_from_git_and_diffed_by_histogram() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = crate::git::as_tester(root);
        git.run(&["init", "-q"]).unwrap();
        let old = "class C:\n    def a(self):\n        return None\n\n    def c(self):\n        return None\n";
        std::fs::write(root.join("a.py"), old).unwrap();
        std::fs::write(root.join("gone.py"), "x = 1\n").unwrap();
        git.run(&["add", "."]).unwrap();
        git.run(&["commit", "-qm", "one"]).unwrap();
        // An ambiguous insertion: git's merge inserts `b` whole, after the blank line.
        let new = "class C:\n    def a(self):\n        return None\n\n    def b(self):\n        return None\n\n    def c(self):\n        return None\n";
        std::fs::write(root.join("a.py"), new).unwrap();
        std::fs::remove_file(root.join("gone.py")).unwrap();
        std::fs::write(root.join("new.py"), "y = 2\n").unwrap();
        std::fs::write(root.join("notes.txt"), "not source\n").unwrap();
        let changes = changes_of(root, root).unwrap();
        let files: Vec<&str> = changes.files.iter().map(|f| f.file.as_str()).collect();
        assert_eq!(files, ["a.py", "gone.py", "new.py"]);
        let expected = changed_lines(old.as_bytes(), new.as_bytes());
        assert_eq!(changes.files[0].lines, expected);
        assert_eq!(changes.files[0].lines, [(5, 7)]);
        assert!(changes.files[1].whole_file && changes.files[2].whole_file);
    }
}
