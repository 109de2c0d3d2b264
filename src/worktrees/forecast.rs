//! Where two worktrees will collide when merged (PROTOCOL-NOTES 14.5), as git says: each
//! worktree's state (its HEAD plus uncommitted and untracked changes, written as a commit
//! object through a temporary index: the worktree and its index are not touched), `git
//! merge-tree` of two states for the files that would conflict, and the lines each side
//! changed in such a file since their merge-base (`git diff -U0`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A worktree's state as a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The worktree's root.
    pub root: PathBuf,
    /// The commit holding its state.
    pub commit: String,
}

/// Why git could not answer.
#[derive(Debug, thiserror::Error)]
#[error("git {args}: {message}")]
pub struct GitError {
    args: String,
    message: String,
}

impl GitError {
    /// Git run with `args` failed with `message`.
    pub(super) fn new(args: &str, message: String) -> GitError {
        GitError {
            args: args.to_owned(),
            message,
        }
    }
}

/// A file where merging two states would conflict, with the lines (1-based, inclusive)
/// each side changed since the merge-base, and each side's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// Relative path.
    pub file: String,
    /// Changed lines of the first state's text.
    pub lines_a: Vec<(i64, i64)>,
    /// Changed lines of the second state's text.
    pub lines_b: Vec<(i64, i64)>,
    /// The first state's text of the file (`None`: deleted there, or not UTF-8).
    pub text_a: Option<String>,
    /// The second state's text.
    pub text_b: Option<String>,
}

/// Runs git in `cwd` with `env`; its stdout, also when it exits with one of `ok_codes`.
pub(super) fn git(
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    ok_codes: &[i32],
) -> Result<String, GitError> {
    let output = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .env("GIT_AUTHOR_NAME", "wit")
        .env("GIT_AUTHOR_EMAIL", "wit@localhost")
        .env("GIT_COMMITTER_NAME", "wit")
        .env("GIT_COMMITTER_EMAIL", "wit@localhost")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| GitError {
            args: args.join(" "),
            message: e.to_string(),
        })?;
    let code = output.status.code().unwrap_or(-1);
    if code != 0 && !ok_codes.contains(&code) {
        return Err(GitError {
            args: args.join(" "),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The state of the worktree at `root` as a commit: its HEAD when it has no changes, else a
/// commit of its files (uncommitted and untracked ones, `.gitignore` honoured) on its HEAD.
pub fn state_of(root: &Path) -> Result<State, GitError> {
    let head = git(root, &["rev-parse", "HEAD"], &[], &[])?
        .trim()
        .to_owned();
    let dirty = !git(
        root,
        &["status", "--porcelain", "--untracked-files=all"],
        &[],
        &[],
    )?
    .trim()
    .is_empty();
    if !dirty {
        return Ok(State {
            root: root.to_path_buf(),
            commit: head,
        });
    }
    let temp = TempIndex::new();
    let index: &[(&str, &Path)] = &[("GIT_INDEX_FILE", &temp.0)];
    git(root, &["read-tree", "HEAD"], index, &[])?;
    git(root, &["add", "-A", "--", "."], index, &[])?;
    let tree = git(root, &["write-tree"], index, &[])?.trim().to_owned();
    let commit = git(
        root,
        &[
            "commit-tree",
            &tree,
            "-p",
            &head,
            "-m",
            "wit: worktree state",
        ],
        &[],
        &[],
    )?
    .trim()
    .to_owned();
    Ok(State {
        root: root.to_path_buf(),
        commit,
    })
}

/// A temporary index file's path, deleted on drop (git creates the file).
struct TempIndex(PathBuf);

impl TempIndex {
    fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("wit-forecast-{}-{n}.index", std::process::id());
        TempIndex(std::env::temp_dir().join(name))
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The files where merging `a` and `b` would conflict, with the lines each side changed.
/// `repo` is any worktree of the repository (git runs there).
pub fn conflicts(repo: &Path, a: &State, b: &State) -> Result<Vec<Conflict>, GitError> {
    // Exit 1: conflicts; the first line is the merged tree, then one conflicted file a line.
    let merged = git(
        repo,
        &[
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            &a.commit,
            &b.commit,
        ],
        &[],
        &[1],
    )?;
    let files: Vec<&str> = merged.lines().skip(1).filter(|l| !l.is_empty()).collect();
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let base = git(repo, &["merge-base", &a.commit, &b.commit], &[], &[])?
        .trim()
        .to_owned();
    files
        .into_iter()
        .map(|file| {
            Ok(Conflict {
                file: file.to_owned(),
                lines_a: changed_lines(repo, &base, &a.commit, file)?,
                lines_b: changed_lines(repo, &base, &b.commit, file)?,
                text_a: text_at(repo, &a.commit, file),
                text_b: text_at(repo, &b.commit, file),
            })
        })
        .collect()
}

fn text_at(repo: &Path, commit: &str, file: &str) -> Option<String> {
    git(repo, &["show", &format!("{commit}:{file}")], &[], &[]).ok()
}

/// The lines of `file` in `to` changed since `from` (a pure deletion: the line where the two
/// sides now join).
fn changed_lines(
    repo: &Path,
    from: &str,
    to: &str,
    file: &str,
) -> Result<Vec<(i64, i64)>, GitError> {
    let diff = git(
        repo,
        &[
            "diff",
            "--no-color",
            "--no-ext-diff",
            "-U0",
            from,
            to,
            "--",
            file,
        ],
        &[],
        &[],
    )?;
    Ok(hunk_lines(&diff))
}

/// The new-side lines of each hunk of a `-U0` diff.
fn hunk_lines(diff: &str) -> Vec<(i64, i64)> {
    diff.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("@@ ")?;
            let new = rest.split(' ').find(|part| part.starts_with('+'))?;
            let new = new.trim_start_matches('+');
            let (start, count) = match new.split_once(',') {
                Some((start, count)) => (start.parse::<i64>().ok()?, count.parse::<i64>().ok()?),
                None => (new.parse::<i64>().ok()?, 1),
            };
            Some(if count == 0 {
                // A pure deletion after line `start`: the line where the sides join.
                let at = (start + 1).max(1);
                (at, at)
            } else {
                (start, start + count - 1)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_give_the_new_side_lines() {
        let diff =
            "diff --git a/x b/x\n@@ -1,2 +1,3 @@ def f\n-a\n+b\n@@ -9 +10 @@\n@@ -20,2 +21,0 @@\n";
        assert_eq!(hunk_lines(diff), [(1, 3), (10, 10), (22, 22)]);
    }
}
