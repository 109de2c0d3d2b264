//! Where two worktrees will collide when merged (PROTOCOL-NOTES 14.5), as git says: each
//! worktree's state (its HEAD plus uncommitted and untracked changes, written as a commit
//! object through a temporary index: the worktree and its index are not touched), `git
//! merge-tree` of two states for the files that would conflict, and the lines each side
//! changed in such a file since their merge-base (`git diff -U0`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::changes::MAX_TEXT_BYTES;

/// A worktree's state as a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The worktree's root.
    pub root: PathBuf,
    /// The commit holding its state.
    pub commit: String,
    /// Its HEAD (the state's parent, or the state itself when nothing changed).
    pub head: String,
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
///
/// The files are added to a copy of the worktree's own index, so git looks again only at
/// files whose size or mtime changed since that index saw them (a fresh index read from
/// HEAD would hash every file); whether anything changed is whether the tree written differs
/// from HEAD's.
pub fn state_of(root: &Path) -> Result<State, GitError> {
    let facts = git(
        root,
        &["rev-parse", "HEAD", "HEAD^{tree}", "--git-path", "index"],
        &[],
        &[],
    )?;
    let mut lines = facts.lines().map(str::trim);
    let (Some(head), Some(head_tree), Some(own_index)) = (lines.next(), lines.next(), lines.next())
    else {
        return Err(GitError {
            args: "rev-parse HEAD HEAD^{tree} --git-path index".to_owned(),
            message: format!("unexpected answer {facts:?}"),
        });
    };
    let temp = TempIndex::new();
    let index: &[(&str, &Path)] = &[("GIT_INDEX_FILE", &temp.0)];
    if std::fs::copy(root.join(own_index), &temp.0).is_err() {
        git(root, &["read-tree", "HEAD"], index, &[])?;
    }
    git(root, &["add", "-A", "--", "."], index, &[])?;
    let tree = git(root, &["write-tree"], index, &[])?.trim().to_owned();
    if tree == head_tree {
        return Ok(State {
            root: root.to_path_buf(),
            commit: head.to_owned(),
            head: head.to_owned(),
        });
    }
    let commit = git(
        root,
        &[
            "commit-tree",
            &tree,
            "-p",
            head,
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
        head: head.to_owned(),
    })
}

/// The states of the worktrees at `roots`, in that order, each read on its own thread (git
/// spends most of their time waiting on the file system).
pub fn states_of(roots: &[PathBuf]) -> Result<Vec<State>, GitError> {
    std::thread::scope(|scope| {
        let reading: Vec<_> = roots
            .iter()
            .map(|root| scope.spawn(move || state_of(root)))
            .collect();
        reading.into_iter().map(joined).collect()
    })
}

/// What the forecast keeps between calls: each watched worktree's state while nothing on
/// its disk has changed (the observer's generation of it says so), and the conflicts of the
/// last set of states (a pure function of their commits).
#[derive(Debug, Default)]
pub struct ForecastMemory {
    states: HashMap<PathBuf, (u64, State)>,
    last: Option<(Vec<String>, PairConflicts)>,
}

/// `(i, j, conflicts)` of two states `i < j` that conflict.
pub type PairConflicts = Vec<(usize, usize, Vec<Conflict>)>;

impl ForecastMemory {
    /// The states of `roots`; `generations[i]` is the change count of `roots[i]` when it is
    /// watched (`None`: not watched, its state is always read again). Read before the
    /// states are: a change while they are read makes the next call read them again.
    pub fn states(
        &mut self,
        roots: &[PathBuf],
        generations: &[Option<u64>],
    ) -> Result<Vec<State>, GitError> {
        let kept = |i: usize| {
            let generation = generations.get(i).copied().flatten()?;
            self.states
                .get(&roots[i])
                .filter(|(at, _)| *at == generation)
                .map(|(_, state)| state.clone())
        };
        let known: Vec<Option<State>> = (0..roots.len()).map(kept).collect();
        let missing: Vec<PathBuf> = roots
            .iter()
            .zip(&known)
            .filter(|(_, state)| state.is_none())
            .map(|(root, _)| root.clone())
            .collect();
        let mut read = states_of(&missing)?.into_iter();
        let states: Vec<State> = known
            .into_iter()
            .map(|state| state.or_else(|| read.next()))
            .collect::<Option<Vec<State>>>()
            .ok_or_else(|| GitError::new("status", "a worktree's state was not read".into()))?;
        self.states.retain(|root, _| roots.contains(root));
        for (i, state) in states.iter().enumerate() {
            if let Some(generation) = generations.get(i).copied().flatten() {
                self.states
                    .insert(roots[i].clone(), (generation, state.clone()));
            }
        }
        Ok(states)
    }

    /// [`conflicts_of_all`], answered again without git while the states are the same.
    pub fn conflicts(&mut self, repo: &Path, states: &[State]) -> Result<PairConflicts, GitError> {
        let commits: Vec<String> = states.iter().map(|s| s.commit.clone()).collect();
        if let Some((known, conflicts)) = &self.last {
            if *known == commits {
                return Ok(conflicts.clone());
            }
        }
        let conflicts = conflicts_of_all(repo, states)?;
        self.last = Some((commits, conflicts.clone()));
        Ok(conflicts)
    }
}

/// The conflicts of every two of `states` (`(i, j, conflicts)` for `i < j`, in that order,
/// pairs without conflicts left out). Git is asked in batches, whatever the number of
/// pairs and files: one `merge-tree --stdin` for every pair, a `merge-base` per conflicting
/// pair (on a few threads), one `diff-tree --stdin` for each side's changed lines and one
/// `cat-file --batch` for the texts.
pub fn conflicts_of_all(
    repo: &Path,
    states: &[State],
) -> Result<Vec<(usize, usize, Vec<Conflict>)>, GitError> {
    let pairs: Vec<(usize, usize)> = (0..states.len())
        .flat_map(|i| (i + 1..states.len()).map(move |j| (i, j)))
        .collect();
    if pairs.is_empty() {
        return Ok(Vec::new());
    }
    let conflicted: Vec<((usize, usize), Vec<String>)> = pairs
        .iter()
        .copied()
        .zip(merge_all(repo, states, &pairs)?)
        .filter(|(_, files)| !files.is_empty())
        .collect();
    if conflicted.is_empty() {
        return Ok(Vec::new());
    }
    let bases = merge_bases(repo, states, &conflicted)?;
    // Each side's changes since its pair's base, for the conflicted files only.
    let mut files: Vec<&str> = conflicted
        .iter()
        .flat_map(|(_, files)| files.iter().map(String::as_str))
        .collect();
    files.sort_unstable();
    files.dedup();
    let sides: Vec<(&str, &str)> = conflicted
        .iter()
        .zip(&bases)
        .flat_map(|(((i, j), _), base)| {
            [
                (states[*i].commit.as_str(), base.as_str()),
                (states[*j].commit.as_str(), base.as_str()),
            ]
        })
        .collect();
    let mut lines = changed_lines_of(repo, &sides, &files)?.into_iter();
    let names: Vec<String> = conflicted
        .iter()
        .flat_map(|((i, j), files)| {
            files.iter().flat_map(move |file| {
                [
                    format!("{}:{file}", states[*i].commit),
                    format!("{}:{file}", states[*j].commit),
                ]
            })
        })
        .collect();
    let mut texts = texts_at(repo, &names)?.into_iter();
    Ok(conflicted
        .into_iter()
        .map(|((i, j), files)| {
            let lines_a = lines.next().unwrap_or_default();
            let lines_b = lines.next().unwrap_or_default();
            let conflicts = files
                .into_iter()
                .map(|file| Conflict {
                    lines_a: lines_a.get(&file).cloned().unwrap_or_default(),
                    lines_b: lines_b.get(&file).cloned().unwrap_or_default(),
                    text_a: texts.next().flatten(),
                    text_b: texts.next().flatten(),
                    file,
                })
                .collect();
            (i, j, conflicts)
        })
        .collect())
}

/// The conflicted files of merging each of `pairs` of `states`, in order: one `git
/// merge-tree --stdin` per core, each merging its share of the pairs.
fn merge_all(
    repo: &Path,
    states: &[State],
    pairs: &[(usize, usize)],
) -> Result<Vec<Vec<String>>, GitError> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = pairs.len().div_ceil(cores.clamp(1, 4)).max(1);
    let found: Vec<Vec<Vec<String>>> = std::thread::scope(|scope| {
        let running: Vec<_> = pairs
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let request: String = part
                        .iter()
                        .map(|&(i, j)| format!("{} {}\n", states[i].commit, states[j].commit))
                        .collect();
                    let merged = git_with_input(
                        repo,
                        &["merge-tree", "--stdin", "--name-only", "--no-messages"],
                        request,
                    )?;
                    let mut results = merge_results(&String::from_utf8_lossy(&merged));
                    results.resize(part.len(), Vec::new());
                    Ok(results)
                })
            })
            .collect();
        running.into_iter().map(joined).collect::<Result<_, _>>()
    })?;
    Ok(found.into_iter().flatten().collect())
}

/// The conflicted files of each merge of a `git merge-tree --stdin` answer (NUL-separated:
/// per merge its status, `1` clean or `0` conflicted, the merged tree, the conflicted files
/// and an empty field), in order.
fn merge_results(answer: &str) -> Vec<Vec<String>> {
    let mut fields = answer.split('\0');
    let mut results = Vec::new();
    while let (Some(status), Some(_tree)) = (fields.next(), fields.next()) {
        let mut files: Vec<String> = Vec::new();
        for field in fields.by_ref() {
            if field.is_empty() {
                break;
            }
            if files.last().is_none_or(|last| last != field) {
                files.push(field.to_owned());
            }
        }
        if status.trim() == "1" {
            files.clear();
        }
        results.push(files);
    }
    results
}

/// The merge-base of each conflicted pair, in order. A state is its HEAD or a commit on it,
/// so two states' merge-base is their HEADs': it is asked once per distinct pair of HEADs
/// (worktrees branched from one commit: once in all).
fn merge_bases(
    repo: &Path,
    states: &[State],
    conflicted: &[((usize, usize), Vec<String>)],
) -> Result<Vec<String>, GitError> {
    let heads = |i: usize, j: usize| {
        let (a, b) = (&states[i].head, &states[j].head);
        if a <= b {
            (a, b)
        } else {
            (b, a)
        }
    };
    let mut known: HashMap<(&String, &String), String> = HashMap::new();
    conflicted
        .iter()
        .map(|((i, j), _)| {
            let (a, b) = heads(*i, *j);
            if let Some(base) = known.get(&(a, b)) {
                return Ok(base.clone());
            }
            let base = if a == b {
                a.clone()
            } else {
                git(repo, &["merge-base", a, b], &[], &[])?
                    .trim()
                    .to_owned()
            };
            known.insert((a, b), base.clone());
            Ok(base)
        })
        .collect()
}

/// For each `(commit, base)` of `sides`, in order, the lines of each of `files` changed in
/// `commit` since `base` (see [`hunk_lines`]), from one `git diff-tree --stdin`.
fn changed_lines_of(
    repo: &Path,
    sides: &[(&str, &str)],
    files: &[&str],
) -> Result<Vec<LinesPerFile>, GitError> {
    let request: String = sides
        .iter()
        .map(|(commit, base)| format!("{commit} {base}\n"))
        .collect();
    let mut args = vec![
        "diff-tree",
        "--stdin",
        "--always",
        "-p",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--no-renames",
        "--",
    ];
    args.extend(files.iter().copied());
    let diff = git_with_input(repo, &args, request)?;
    let diff = String::from_utf8_lossy(&diff);
    // Each side's part starts with a line holding its commit alone (`--always`: also when
    // nothing changed); no line of a diff is a bare object name.
    let mut parts = Vec::with_capacity(sides.len());
    let mut current: Option<String> = None;
    for line in diff.split_inclusive('\n') {
        let next = parts.len() + usize::from(current.is_some());
        if sides
            .get(next)
            .is_some_and(|(commit, _)| *commit == line.trim_end())
        {
            if let Some(part) = current.replace(String::new()) {
                parts.push(lines_per_file(&part));
            }
        } else if let Some(part) = current.as_mut() {
            part.push_str(line);
        }
    }
    if let Some(part) = current {
        parts.push(lines_per_file(&part));
    }
    parts.resize(sides.len(), HashMap::new());
    Ok(parts)
}

/// Changed lines (1-based, inclusive) by file.
type LinesPerFile = HashMap<String, Vec<(i64, i64)>>;

/// The changed lines of each file of a `-U0` diff of several files.
fn lines_per_file(diff: &str) -> LinesPerFile {
    let mut per_file = HashMap::new();
    // Each file's part starts with `diff --git`; its path is on the `+++ b/` line (or `---
    // a/` when the file is deleted on this side).
    for part in diff.split("diff --git ").filter(|p| !p.trim().is_empty()) {
        let path = part
            .lines()
            .find_map(|l| l.strip_prefix("+++ b/"))
            .or_else(|| part.lines().find_map(|l| l.strip_prefix("--- a/")));
        if let Some(path) = path {
            per_file.insert(path.to_owned(), hunk_lines(part));
        }
    }
    per_file
}

/// Runs git in `cwd` with `input` on its stdin; its stdout.
fn git_with_input(cwd: &Path, args: &[&str], input: String) -> Result<Vec<u8>, GitError> {
    use std::io::{Read, Write};
    let failed = |message: String| GitError {
        args: args.join(" "),
        message,
    };
    let mut child = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| failed("no stdin".into()))?;
    // Written from its own thread: git answers while it reads, and both pipes are bounded.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let mut output = Vec::new();
    let read = child
        .stdout
        .take()
        .ok_or_else(|| failed("no stdout".into()))?
        .read_to_end(&mut output);
    let _ = writer.join();
    let mut errors = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut errors);
    }
    let status = child.wait().map_err(|e| failed(e.to_string()))?;
    read.map_err(|e| failed(e.to_string()))?;
    if !status.success() {
        return Err(failed(errors.trim().to_owned()));
    }
    Ok(output)
}

/// A scoped thread's answer; a panic there is reported as git's failure.
fn joined<T>(
    handle: std::thread::ScopedJoinHandle<'_, Result<T, GitError>>,
) -> Result<T, GitError> {
    handle.join().unwrap_or_else(|_| {
        Err(GitError {
            args: String::new(),
            message: "a forecast thread panicked".to_owned(),
        })
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

/// The texts of `names` (`<commit>:<path>`), in order, through one `git cat-file --batch`
/// (`None`: missing there, not UTF-8, or over [`MAX_TEXT_BYTES`]).
pub(super) fn texts_at(repo: &Path, names: &[String]) -> Result<Vec<Option<String>>, GitError> {
    Ok(blobs_at(repo, names, MAX_TEXT_BYTES)?
        .into_iter()
        .map(|blob| blob.and_then(|bytes| String::from_utf8(bytes).ok()))
        .collect())
}

/// The bytes of the objects `names` (`<commit>:<path>`), in order, through one `git cat-file
/// --batch` (`None`: missing there, or over `limit` bytes).
pub fn blobs_at(
    repo: &Path,
    names: &[String],
    limit: usize,
) -> Result<Vec<Option<Vec<u8>>>, GitError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let request: String = names.iter().map(|n| format!("{n}\n")).collect();
    let output = git_with_input(repo, &["cat-file", "--batch"], request)?;
    Ok(batch_blobs(&output, names.len(), limit))
}

/// The objects of a `git cat-file --batch` answer (`<oid> <type> <size>\n<content>\n`, or
/// `<name> missing\n`), `count` of them; one over `limit` bytes is none.
fn batch_blobs(mut output: &[u8], count: usize, limit: usize) -> Vec<Option<Vec<u8>>> {
    let mut blobs = Vec::with_capacity(count);
    while blobs.len() < count {
        let Some(end) = output.iter().position(|b| *b == b'\n') else {
            break;
        };
        let header = &output[..end];
        output = &output[end + 1..];
        let size = header
            .rsplit(|b| *b == b' ')
            .next()
            .and_then(|s| std::str::from_utf8(s).ok())
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|_| !header.ends_with(b" missing") && !header.ends_with(b" ambiguous"));
        match size {
            Some(size) if output.len() > size => {
                blobs.push((size <= limit).then(|| output[..size].to_vec()));
                output = &output[size + 1..];
            }
            _ => blobs.push(None),
        }
    }
    blobs.resize(count, None);
    blobs
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
            Some(new_side_lines(start, count))
        })
        .collect()
}

/// The lines of the new text a `-U0` hunk `+start,count` changed, 1-based and inclusive; a
/// pure deletion (count 0, after line `start`) is the point where the two sides now join,
/// `(start + 1, start)` (PROTOCOL-NOTES 13.4).
pub(super) fn new_side_lines(start: i64, count: i64) -> (i64, i64) {
    if count == 0 {
        let at = start.max(0);
        (at + 1, at)
    } else {
        (start, start + count - 1)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_batch_of_merges_gives_each_merge_its_conflicted_files() {
        let answer = "0|tree1|a.ts|a.ts|b.ts||1|tree2||0|tree3|c d.py||".replace('|', "\0");
        assert_eq!(
            merge_results(&answer),
            [
                vec!["a.ts".to_owned(), "b.ts".to_owned()],
                vec![],
                vec!["c d.py".to_owned()]
            ]
        );
        assert!(merge_results("").is_empty());
    }

    #[test]
    fn a_diff_of_several_files_gives_each_file_its_lines() {
        let diff = "diff --git a/x.ts b/x.ts\nindex 1..2 100644\n--- a/x.ts\n+++ b/x.ts\n@@ -1 +1,2 @@\n-a\n+b\n+c\ndiff --git a/y.ts b/y.ts\ndeleted file mode 100644\n--- a/y.ts\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-a\n";
        let lines = lines_per_file(diff);
        assert_eq!(lines["x.ts"], [(1, 2)]);
        assert_eq!(
            lines["y.ts"],
            [(1, 0)],
            "all deleted: the point before line 1"
        );
        assert_eq!(lines.len(), 2);
    }

    #[test]
    fn a_cat_file_batch_gives_blobs_in_order_and_none_for_missing() {
        let output = b"abc blob 3\nhi\n\nc1:gone missing\ndef blob 2\n\xff\xfe\n";
        assert_eq!(
            batch_blobs(output, 4, 1024),
            [
                Some(b"hi\n".to_vec()),
                None,
                Some(b"\xff\xfe".to_vec()),
                None
            ]
        );
        assert_eq!(batch_blobs(output, 1, 2), [None], "over the limit");
    }

    #[test]
    fn worktrees_states_and_their_conflicts_come_from_git() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let run = |cwd: &Path, args: &[&str]| {
            let status = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(cwd)
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        std::fs::create_dir_all(&main).unwrap();
        run(&main, &["init", "-q"]);
        std::fs::write(main.join("a.py"), "def f():\n    return 1\n").unwrap();
        std::fs::write(main.join("b.py"), "def g():\n    return 2\n").unwrap();
        run(&main, &["add", "."]);
        run(&main, &["commit", "-qm", "one"]);
        let roots: Vec<PathBuf> = ["w1", "w2", "w3"]
            .iter()
            .map(|name| dir.path().join(name))
            .collect();
        for root in &roots {
            run(
                &main,
                &["worktree", "add", "-q", "--detach", root.to_str().unwrap()],
            );
        }
        // w1 and w2 change f's body differently; w3 only adds an untracked file; main is clean.
        std::fs::write(roots[0].join("a.py"), "def f():\n    return 10\n").unwrap();
        std::fs::write(roots[1].join("a.py"), "def f():\n    return 20\n").unwrap();
        std::fs::write(roots[2].join("new.py"), "def n(): pass\n").unwrap();
        let mut all = vec![main.clone()];
        all.extend(roots.iter().cloned());
        let states = states_of(&all).unwrap();
        assert_eq!(
            states[0].commit, states[0].head,
            "a clean worktree is its HEAD"
        );
        assert!(states[1..].iter().all(|s| s.commit != s.head));
        let found = conflicts_of_all(&main, &states).unwrap();
        assert_eq!(found.len(), 1, "only w1 and w2 collide: {found:?}");
        let (i, j, conflicts) = &found[0];
        assert_eq!((*i, *j), (1, 2));
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].file, "a.py");
        assert_eq!(conflicts[0].lines_a, [(2, 2)]);
        assert_eq!(conflicts[0].lines_b, [(2, 2)]);
        assert!(conflicts[0].text_a.as_deref().unwrap().contains("10"));
        assert!(conflicts[0].text_b.as_deref().unwrap().contains("20"));
        // The worktrees' own indexes were not touched.
        let status = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(&roots[0])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&status.stdout).trim(), "M a.py");
    }

    #[test]
    fn hunks_give_the_new_side_lines() {
        let diff =
            "diff --git a/x b/x\n@@ -1,2 +1,3 @@ def f\n-a\n+b\n@@ -9 +10 @@\n@@ -20,2 +21,0 @@\n";
        assert_eq!(
            hunk_lines(diff),
            [(1, 3), (10, 10), (22, 21)],
            "a deletion is a point"
        );
    }
}
