//! Every owner's uncommitted work kept as git objects (docs/protocol.md 15.5): after each pass
//! of the tree observer, each session's work in the worktree (HEAD's bytes with exactly its
//! changes, from the owner map) is saved as a commit on `HEAD` under `refs/wit/work/…` when it
//! changed since the last save.
//!
//! The upkeep starts no process per save: the objects (blobs, trees, the commit) are written
//! by [`ObjectStore`], `HEAD` and its files are read through one `git cat-file --batch` kept
//! running per worktree ([`BatchReader`]), and the refs are written as loose refs
//! ([`RefWriter`]; through one `git update-ref --stdin` per refresh where they cannot be).
//!
//! A snapshot never forgets a file because its lines vanished from the tree: whatever took
//! them (`git stash` run by a script, a person's `git reset --hard`, `rm`), the file stays in
//! the session's snapshot until `HEAD` holds exactly what the snapshot holds (the work was
//! committed). A session whose work is all gone keeps its last snapshot; `wit snapshots`
//! lists them and `wit snapshots restore` writes the lines back.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::cli::snapshots::{self, work_ref, KEEP_SECS, WORK_REF_PREFIX};
use crate::coord::Coord;
use crate::git::{BatchReader, Change, GitError, ObjectStore, RefWriter};

/// One file's content in a snapshot (`None`: deleted).
type Content = Option<Vec<u8>>;

/// The work snapshots this daemon keeps up.
#[derive(Debug, Default)]
pub struct WorkSnapshots {
    /// Per (worktree root, session): the files of its last snapshot, and their digest.
    kept: HashMap<(String, String), (BTreeMap<String, Content>, u64)>,
    /// Per worktree root: its objects' store and reader (started at the first save).
    gits: HashMap<String, WorktreeGit>,
    /// When the stale snapshots of the repository were last dropped (after the first save).
    pruned_at: Option<std::time::Instant>,
}

/// How often the daemon drops stale snapshots.
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// What the snapshots of one worktree write and read through.
#[derive(Debug)]
struct WorktreeGit {
    /// Where its repository keeps its objects.
    store: ObjectStore,
    /// Its `git cat-file --batch`, kept running.
    reader: BatchReader,
    /// How its refs are moved.
    refs: RefWriter,
}

impl WorktreeGit {
    fn start(root: &Path) -> Result<WorktreeGit, GitError> {
        Ok(WorktreeGit {
            store: ObjectStore::of(root)?,
            reader: BatchReader::start(root)?,
            refs: RefWriter::of(root)?,
        })
    }

    /// `HEAD`'s commit id now (`None`: an unborn branch).
    fn head(&mut self) -> Result<Option<String>, GitError> {
        Ok(self
            .reader
            .object("HEAD")?
            .filter(|object| object.kind == "commit")
            .map(|object| object.id))
    }
}

/// The digest of a snapshot's files.
fn digest(files: &BTreeMap<String, Content>) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for (file, content) in files {
        hasher.update(file.as_bytes());
        hasher.update(&[0]);
        match content {
            Some(bytes) => {
                hasher.update(&(bytes.len() as u64).to_le_bytes());
                hasher.update(bytes);
            }
            None => hasher.update(b"\xff"),
        }
    }
    hasher.digest()
}

impl WorkSnapshots {
    /// Saves the work of every owner in the worktree at `root` that changed since its last
    /// snapshot. Git is asked about HEAD only for work that changed, or when `head_moved`.
    /// A reader that failed is started again on the next refresh.
    pub fn refresh(&mut self, coord: &Coord, root: &Path, head_moved: bool) -> Result<(), String> {
        let key_root = root.to_string_lossy().into_owned();
        // The `cat-file` of a worktree that was removed ends with it.
        self.gits.retain(|at, _| Path::new(at).exists());
        let measured = Upkeep::start(self.gits.get(&key_root));
        let result = self.refresh_in(coord, root, &key_root, head_moved);
        if result.is_err() {
            self.gits.remove(&key_root);
        }
        if let (Some(measured), Ok((saved, refs))) = (measured, &result) {
            measured.log(self.gits.get(&key_root), *saved, *refs);
        }
        // Only where this daemon's git for the worktree runs (a git repository), at most
        // hourly.
        let saves_here = self.gits.contains_key(&key_root);
        if saves_here && self.pruned_at.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
            self.pruned_at = Some(std::time::Instant::now());
            if let Err(error) = self.prune(root) {
                tracing::warn!(%error, "could not drop stale work snapshots");
            }
        }
        result.map(|_| ())
    }

    /// Drops the work snapshots last saved more than [`KEEP_SECS`] ago (15.5: 7 days after the
    /// work was committed, resolved or restored), but never one of a session whose work this
    /// daemon still keeps (work nobody touched for a week is still work).
    fn prune(&self, root: &Path) -> Result<(), String> {
        let live: std::collections::HashSet<String> = self
            .kept
            .keys()
            .map(|(_, session)| work_ref(session))
            .collect();
        let cutoff = snapshots::now_secs().saturating_sub(KEEP_SECS);
        let stale: String = snapshots::list(root)
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|item| {
                item.reference.starts_with(WORK_REF_PREFIX)
                    && item.at_secs < cutoff
                    && !live.contains(&item.reference)
            })
            .map(|item| format!("delete {}\n", item.reference))
            .collect();
        if stale.is_empty() {
            return Ok(());
        }
        crate::git::Git::new(root)
            .run_with_input(&["update-ref", "--stdin"], stale.as_bytes())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// [`WorkSnapshots::refresh`]'s work; how many snapshots it saved, and how long moving
    /// their refs took.
    fn refresh_in(
        &mut self,
        coord: &Coord,
        root: &Path,
        key_root: &str,
        head_moved: bool,
    ) -> Result<(usize, std::time::Duration), String> {
        let touched = coord.take_touched(key_root);
        let mut now = coord.work_of_owners(key_root);
        // A session's file changes in its snapshot only by its own changes: lines that
        // vanished by anybody else's (a reset, a stash, `rm`) stay, until HEAD holds them.
        for ((r, session), (files, _)) in &self.kept {
            if r != key_root {
                continue;
            }
            let entry = now.entry(session.clone()).or_default();
            for (file, content) in files {
                if !touched.contains(&(session.clone(), file.clone())) {
                    entry.insert(file.clone(), content.clone());
                }
            }
        }
        let mut head: Option<Option<String>> = None;
        let mut saved: Vec<(String, String)> = Vec::new();
        for (session, mut files) in now {
            let key = (key_root.to_owned(), session.clone());
            let unchanged = self
                .kept
                .get(&key)
                .is_some_and(|(_, d)| *d == digest(&files));
            if unchanged && !head_moved {
                continue;
            }
            let git = match self.gits.entry(key_root.to_owned()) {
                std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
                std::collections::hash_map::Entry::Vacant(entry) => {
                    entry.insert(WorktreeGit::start(root).map_err(|e| e.to_string())?)
                }
            };
            let head = match &head {
                Some(head) => head.clone(),
                None => {
                    let now = git.head().map_err(|e| e.to_string())?;
                    head = Some(now.clone());
                    now
                }
            };
            drop_committed(git, head.as_deref(), &mut files)?;
            if files.is_empty() {
                self.kept.remove(&key);
                continue;
            }
            let sum = digest(&files);
            if self.kept.get(&key).is_some_and(|(_, d)| *d == sum) {
                continue;
            }
            let commit = save_work(git, root, head.as_deref(), &session, &files)?;
            saved.push((work_ref(&session), commit));
            self.kept.insert(key, (files, sum));
        }
        let started = std::time::Instant::now();
        if let (false, Some(git)) = (saved.is_empty(), self.gits.get(key_root)) {
            git.refs.update(root, &saved).map_err(|e| e.to_string())?;
        }
        Ok((saved.len(), started.elapsed()))
    }
}

/// Leaves out the files whose snapshot content is what `head` holds (committed).
fn drop_committed(
    git: &mut WorktreeGit,
    head: Option<&str>,
    files: &mut BTreeMap<String, Content>,
) -> Result<(), String> {
    let Some(head) = head else {
        return Ok(());
    };
    let names: Vec<String> = files.keys().map(|f| format!("{head}:{f}")).collect();
    let heads = git
        .reader
        .blobs(&names, usize::MAX)
        .map_err(|e| e.to_string())?;
    let committed: Vec<String> = files
        .iter()
        .zip(heads)
        .filter(|((_, content), head)| *content == head)
        .map(|((file, _), _)| file.clone())
        .collect();
    for file in committed {
        files.remove(&file);
    }
    Ok(())
}

/// Writes `session`'s uncommitted work in the worktree at `root` (15.5): `files` are HEAD's
/// bytes with exactly that session's changes (`None`: deleted), as a commit on `head`; the
/// commit's id (its ref is moved by the caller). A file HEAD holds keeps HEAD's mode; a new
/// one takes the working file's.
fn save_work(
    git: &mut WorktreeGit,
    root: &Path,
    head: Option<&str>,
    session: &str,
    files: &BTreeMap<String, Content>,
) -> Result<String, String> {
    let modes: Vec<String> = files
        .keys()
        .map(|file| crate::cli::gitio::file_mode(&root.join(file)))
        .collect();
    let changes = files
        .iter()
        .zip(&modes)
        .map(|((file, bytes), mode)| {
            let change = match bytes {
                Some(bytes) => Change::File {
                    mode,
                    bytes,
                    keep_base_mode: true,
                },
                None => Change::Removed,
            };
            (file.clone(), change)
        })
        .collect();
    let tree = git
        .store
        .tree_over(&mut git.reader, head, &changes)
        .map_err(|e| e.to_string())?;
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    let message = format!(
        "wit work of {session}\n\nsession: {session}\nfiles: {}\n",
        names.join(", ")
    );
    git.store
        .write_commit(&tree, head, &message)
        .map_err(|e| e.to_string())
}

/// The CPU a refresh costs, measured only when the daemon logs at debug level (`wit-bench
/// attribution` reads it): this thread's and the kept `cat-file`'s (Linux: its threads' run
/// time), and beside them the wall time of moving the refs (an upper bound of the CPU of a
/// `git update-ref`, where one runs: std gives no child's own usage).
struct Upkeep {
    thread: std::time::Duration,
    reader: Option<std::time::Duration>,
}

impl Upkeep {
    fn start(git: Option<&WorktreeGit>) -> Option<Upkeep> {
        if !tracing::enabled!(tracing::Level::DEBUG) {
            return None;
        }
        Some(Upkeep {
            thread: thread_cpu(),
            reader: git.and_then(|git| reader_cpu(&git.reader)),
        })
    }

    fn log(self, git: Option<&WorktreeGit>, saved: usize, refs: std::time::Duration) {
        if saved == 0 {
            return;
        }
        let reader = match (git.and_then(|git| reader_cpu(&git.reader)), self.reader) {
            (Some(now), Some(before)) => now.saturating_sub(before),
            (Some(now), None) => now,
            _ => std::time::Duration::ZERO,
        };
        let cpu = thread_cpu().saturating_sub(self.thread) + reader;
        tracing::debug!(
            saved,
            cpu_us = cpu.as_micros() as u64,
            refs_us = refs.as_micros() as u64,
            "work snapshots refreshed"
        );
    }
}

/// This thread's CPU time.
fn thread_cpu() -> std::time::Duration {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    std::time::Duration::new(
        u64::try_from(time.tv_sec).unwrap_or(0),
        u32::try_from(time.tv_nsec).unwrap_or(0),
    )
}

/// The CPU time of the kept `cat-file` so far.
#[cfg(target_os = "linux")]
fn reader_cpu(reader: &BatchReader) -> Option<std::time::Duration> {
    crate::platform::measure::cpu_time_of_threads(reader.pid()).ok()
}

/// The CPU time of the kept `cat-file` so far (not measured here).
#[cfg(not(target_os = "linux"))]
fn reader_cpu(_reader: &BatchReader) -> Option<std::time::Duration> {
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// A commit dated `days` ago under the work ref of `session`.
    fn dated_work_ref(root: &Path, session: &str, days: u64) {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            - days * 24 * 3600;
        let date = format!("@{at} +0000");
        let git = crate::git::Git::new(root)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_DATE", &date);
        let tree = git.text(&["mktree"]).unwrap();
        let commit = git
            .text(&["commit-tree", tree.trim(), "-m", session])
            .unwrap();
        let name = work_ref(session);
        git.run(&["update-ref", &name, commit.trim()]).unwrap();
    }

    #[test]
    fn stale_snapshots_are_dropped_but_never_a_kept_sessions() {
        let dir = tempfile::tempdir().unwrap();
        crate::git::Git::new(dir.path())
            .run(&["init", "-q"])
            .unwrap();
        dated_work_ref(dir.path(), "old", 8);
        dated_work_ref(dir.path(), "recent", 6);
        dated_work_ref(dir.path(), "old but live", 30);
        let mut snapshots = WorkSnapshots::default();
        snapshots.kept.insert(
            ("/elsewhere".into(), "old but live".into()),
            (BTreeMap::new(), 0),
        );
        snapshots.prune(dir.path()).unwrap();
        let left = crate::git::Git::new(dir.path())
            .text(&["for-each-ref", "--format=%(subject)", WORK_REF_PREFIX])
            .unwrap();
        let mut left: Vec<&str> = left.lines().collect();
        left.sort_unstable();
        assert_eq!(left, ["old but live", "recent"]);
    }
}
