//! Where two worktrees will collide when merged (docs/protocol.md 14.5), as git says: each
//! worktree's state (its HEAD plus uncommitted and untracked changes, written as a commit
//! object through a temporary index: the worktree and its index are not touched), `git
//! merge-tree` of two states for the files that would conflict, and the lines each side
//! changed in such a file since their merge-base (the one line diff of their bytes).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::changes::MAX_TEXT_BYTES;
use crate::coord::preflight::line_ops::changed_lines;
use crate::git::{blobs_at, Git, GitError};

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

/// git in `cwd` committing as wit (the author and committer of the state commits).
fn as_wit(cwd: &Path) -> Git<'_> {
    Git::new(cwd)
        .env("GIT_AUTHOR_NAME", "wit")
        .env("GIT_AUTHOR_EMAIL", "wit@localhost")
        .env("GIT_COMMITTER_NAME", "wit")
        .env("GIT_COMMITTER_EMAIL", "wit@localhost")
}

/// The state of the worktree at `root` as a commit: its HEAD when it has no changes, else a
/// commit of its files (uncommitted and untracked ones, `.gitignore` honoured) on its HEAD.
///
/// The files are added to a copy of the worktree's own index, so git looks again only at
/// files whose size or mtime changed since that index saw them (a fresh index read from
/// HEAD would hash every file); whether anything changed is whether the tree written differs
/// from HEAD's.
pub fn state_of(root: &Path) -> Result<State, GitError> {
    let facts =
        Git::new(root).text(&["rev-parse", "HEAD", "HEAD^{tree}", "--git-path", "index"])?;
    let mut lines = facts.lines().map(str::trim);
    let (Some(head), Some(head_tree), Some(own_index)) = (lines.next(), lines.next(), lines.next())
    else {
        return Err(GitError::new(
            "rev-parse HEAD HEAD^{tree} --git-path index",
            format!("unexpected answer {facts:?}"),
        ));
    };
    let temp = TempIndex::new();
    let indexed = Git::new(root).env("GIT_INDEX_FILE", &temp.0);
    if !copy_index(&root.join(own_index), &temp.0) {
        indexed.run(&["read-tree", "HEAD"])?;
    }
    indexed.run(&["add", "-A", "--", "."])?;
    let tree = indexed.text(&["write-tree"])?.trim().to_owned();
    if tree == head_tree {
        return Ok(State {
            root: root.to_path_buf(),
            commit: head.to_owned(),
            head: head.to_owned(),
        });
    }
    let commit = as_wit(root)
        .text(&[
            "commit-tree",
            &tree,
            "-p",
            head,
            "-m",
            "wit: worktree state",
        ])?
        .trim()
        .to_owned();
    Ok(State {
        root: root.to_path_buf(),
        commit,
        head: head.to_owned(),
    })
}

/// Copies the index at `from` to `to` with its modification time: git takes an entry whose
/// file changed in the second the index was written as "racily clean" (its content is
/// compared) by the index file's own time; a copy dated now would let a same-size change
/// made in that second pass as unchanged. Whether the copy is exact.
fn copy_index(from: &Path, to: &Path) -> bool {
    let Ok(written) = std::fs::metadata(from).and_then(|meta| meta.modified()) else {
        return false;
    };
    std::fs::copy(from, to).is_ok()
        && std::fs::File::options()
            .write(true)
            .open(to)
            .and_then(|copy| copy.set_modified(written))
            .is_ok()
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
/// pair (on a few threads) and one `cat-file --batch` for the bytes of each side and its
/// base, whose line diff gives the changed lines.
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
    // Per conflicted file, each side's bytes and their base's: the lines each side changed
    // are the one line diff's (docs/protocol.md 13.7), never a patch's.
    let names: Vec<String> = conflicted
        .iter()
        .zip(&bases)
        .flat_map(|(((i, j), files), base)| {
            files.iter().flat_map(move |file| {
                [
                    format!("{}:{file}", states[*i].commit),
                    format!("{}:{file}", states[*j].commit),
                    format!("{base}:{file}"),
                ]
            })
        })
        .collect();
    let mut blobs = blobs_at(repo, &names, MAX_TEXT_BYTES)?.into_iter();
    let mut next = || blobs.next().flatten();
    Ok(conflicted
        .into_iter()
        .map(|((i, j), files)| {
            let conflicts = files
                .into_iter()
                .map(|file| {
                    let (a, b, base) = (next(), next(), next());
                    let base = base.unwrap_or_default();
                    let side = |bytes: &Option<Vec<u8>>| {
                        changed_lines(&base, bytes.as_deref().unwrap_or_default())
                    };
                    let text =
                        |bytes: Option<Vec<u8>>| bytes.and_then(|b| String::from_utf8(b).ok());
                    Conflict {
                        lines_a: side(&a),
                        lines_b: side(&b),
                        text_a: text(a),
                        text_b: text(b),
                        file,
                    }
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
                    let merged = Git::new(repo).run_with_input(
                        &["merge-tree", "--stdin", "--name-only", "--no-messages"],
                        request.as_bytes(),
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
                Git::new(repo)
                    .text(&["merge-base", a, b])?
                    .trim()
                    .to_owned()
            };
            known.insert((a, b), base.clone());
            Ok(base)
        })
        .collect()
}

/// A scoped thread's answer; a panic there is reported as git's failure.
fn joined<T>(
    handle: std::thread::ScopedJoinHandle<'_, Result<T, GitError>>,
) -> Result<T, GitError> {
    handle
        .join()
        .unwrap_or_else(|_| Err(GitError::new("", "a forecast thread panicked".to_owned())))
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
    fn a_same_size_change_in_the_second_of_the_index_is_in_the_state() {
        // git compares a file's content, not its size and time, when it changed in the
        // second its index was written; the state's copy of the index must keep that second.
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            let git = crate::git::as_tester(root);
            git.run(&["init", "-q"]).unwrap();
            std::fs::write(root.join("a.py"), "x = 2\n").unwrap();
            git.run(&["add", "."]).unwrap();
            git.run(&["commit", "-qm", "one"]).unwrap();
            std::fs::write(root.join("a.py"), "x = 3\n").unwrap();
            let second = |path: &Path| {
                let modified = std::fs::metadata(path).unwrap().modified().unwrap();
                modified
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs()
            };
            if second(&root.join(".git/index")) != second(&root.join("a.py")) {
                continue; // a second ended in between: try again
            }
            std::thread::sleep(std::time::Duration::from_millis(1_100));
            let state = state_of(root).unwrap();
            assert_ne!(state.commit, state.head, "the change is in the state");
            return;
        }
        panic!("no try wrote the index and the change in one second");
    }

    #[test]
    fn worktrees_states_and_their_conflicts_come_from_git() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let run = |cwd: &Path, args: &[&str]| {
            crate::git::as_tester(cwd).run(args).unwrap();
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
        let status = Git::new(&roots[0])
            .text(&["status", "--porcelain"])
            .unwrap();
        assert_eq!(status.trim(), "M a.py");
    }
}
