//! `wit-bench replay --worktrees`: the replay of [`crate::replay`] with each agent in a git
//! worktree of its own and no hook or wit call for A (issue 24, docs/protocol.md 14.4/14.5).
//!
//! One scratch repository and one daemon per job: its main worktree `m/` and two linked
//! worktrees `a/` (branch `wa`) and `b/` (branch `wb`). Pair `i` is:
//! 1. its base files, under `pNNNN/`, are committed in the main worktree (the previous
//!    pair's directory removed in the same commit); A and B are `git reset --hard` to that
//!    commit and cleaned, so each holds the base and the merge-base of each with the main
//!    worktree is the pair's base;
//! 2. A's patch is written into worktree A as an editor saves (a temporary file renamed over
//!    the file; a deleted file removed), with no wit call at all;
//! 3. the bench polls `intent.query` until the live intents on the pair's files are exactly
//!    A's changes as git tells them (one intent of the session `worktree:<A>` per changed
//!    file, with git's changed lines as its regions; tracked files, and new files of
//!    supported languages) and no other session's: the time from the last write to then is
//!    the pair's visibility;
//! 4. B (session `b<i>`) previews its patch file by file through B's own socket
//!    (`<b>/.wit/daemon.sock`, `edit.preflight` without `record`) against the base, which is
//!    what B's worktree holds → predictor `conflicts (worktree)`;
//! 5. B's patch is written into worktree B and `worktree.forecast` asked → predictor
//!    `forecast` (some collision between A and B).
//!
//! The truth, the line check and the same-file check are the replay's own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::fixtures::Daemon;
use crate::net::Conn;
use crate::replay::{hint, preview_b, Judged};
use crate::replay_data::{Pair, Side};
use crate::replay_score::{Outcome, NOT_SEEN};
use crate::replay_truth::TruthRepo;
use crate::safegit::git;
use wit::worktrees::changes::changes_of;

/// How long the bench waits for A's patch to show as observed work (a condition, generous).
const SEEN_DEADLINE: Duration = Duration::from_secs(30);
/// How often `intent.query` is asked meanwhile.
const POLL: Duration = Duration::from_millis(5);

/// Replays every `jobs`-th pair from `shard` on, in worktrees of one scratch repository in
/// `dir` served by one daemon.
pub(crate) async fn replay_shard(
    wit: &Path,
    dir: &Path,
    pairs: &[Pair],
    shard: usize,
    jobs: usize,
) -> Result<Vec<(usize, Outcome)>> {
    std::fs::create_dir_all(dir)?;
    let truth = TruthRepo::create(&dir.join("truth.git"))?;
    let mut scene = Scene::create(wit, dir).await?;
    let mut outcomes = Vec::new();
    for (index, pair) in pairs.iter().enumerate().skip(shard).step_by(jobs) {
        let outcome = scene
            .replay_pair(index, pair, &truth)
            .await
            .with_context(|| format!("pair {}", pair.id))?;
        outcomes.push((index, outcome));
        if outcomes.len() % 50 == 0 {
            eprintln!("daemon {shard}: replayed {} pairs", outcomes.len());
        }
    }
    Ok(outcomes)
}

/// The scratch repository, its two linked worktrees and the daemon serving them.
struct Scene {
    main: PathBuf,
    a: PathBuf,
    b: PathBuf,
    /// On the main worktree's socket.
    conn: Conn,
    /// On B's socket.
    conn_b: Conn,
    /// The previous pair's directory, removed with the next base commit.
    previous: Option<String>,
    _daemon: Daemon,
}

impl Scene {
    async fn create(wit: &Path, dir: &Path) -> Result<Self> {
        let main = dir.join("m");
        std::fs::create_dir_all(&main)?;
        git(&main, &["init", "-q", "-b", "main"])?;
        // The worktrees' `.wit/` (sockets, session ids) is no work of theirs.
        std::fs::write(main.join(".git/info/exclude"), ".wit/\n")?;
        git(&main, &["commit", "-q", "--allow-empty", "-m", "start"])?;
        let mut roots = Vec::new();
        for name in ["a", "b"] {
            let root = dir.join(name);
            let (root_arg, branch) = (root.display().to_string(), format!("w{name}"));
            git(&main, &["worktree", "add", "-q", "-b", &branch, &root_arg])?;
            roots.push(std::fs::canonicalize(&root)?);
        }
        let main = std::fs::canonicalize(&main)?;
        let (daemon, _) = Daemon::start(wit, &main).await?;
        let conn = Conn::open(&daemon.socket).await?;
        let conn_b = open_when_served(&roots[1].join(".wit/daemon.sock")).await?;
        let b = roots.pop().context("worktree b")?;
        let a = roots.pop().context("worktree a")?;
        Ok(Self {
            main,
            a,
            b,
            conn,
            conn_b,
            previous: None,
            _daemon: daemon,
        })
    }

    /// Steps 1–5 of the module doc for pair number `index`, scored.
    async fn replay_pair(
        &mut self,
        index: usize,
        pair: &Pair,
        truth: &TruthRepo,
    ) -> Result<Outcome> {
        let dir = format!("p{index:04}");
        self.stage_base(&dir, pair)?;
        let written = write_side(&self.a.join(&dir), pair, Side::A)?;
        let session_a = format!("worktree:{}", self.a.display());
        let expected = expected_work(&self.a, &self.main, &dir)?;
        let seen = wait_seen(&mut self.conn, &session_a, &dir, &expected).await?;
        let seen_after = seen.then(|| written.elapsed());
        let session_b = format!("b{index}");
        let (previews, not_applied) =
            preview_b(&mut self.conn_b, &session_b, &dir, pair, false).await?;
        self.conn_b
            .call("session.end", json!({"sessionId": session_b}))
            .await?;
        write_side(&self.b.join(&dir), pair, Side::B)?;
        let forecast = self.forecast().await?;
        let judged = Judged::of(pair, &previews);
        let conflicted = truth.conflicted_files(pair)?;
        let is_conflict = !conflicted.is_empty();
        let forecasts = !forecast.is_empty();
        let mut hint_text = if is_conflict != judged.conflicts || is_conflict != forecasts {
            let mut text = hint(
                &mut self.conn,
                &session_a,
                &dir,
                pair,
                &judged.common,
                &previews,
                &conflicted,
            )
            .await?;
            text.push_str(&format!("; forecast [{}]", forecast.join(", ")));
            text
        } else {
            String::new()
        };
        if !seen {
            hint_text = format!("{NOT_SEEN}; {hint_text}");
        }
        let mut outcome = judged.outcome(pair, conflicted, vec![forecasts], not_applied, hint_text);
        outcome.seen_after = seen_after;
        Ok(outcome)
    }

    /// Step 1: the pair's base committed in the main worktree (alone: the previous pair's
    /// directory goes), A and B reset to it and cleaned of untracked files.
    fn stage_base(&mut self, dir: &str, pair: &Pair) -> Result<()> {
        if let Some(previous) = self.previous.replace(dir.to_owned()) {
            let _ = std::fs::remove_dir_all(self.main.join(previous));
        }
        for (path, file) in &pair.files {
            if let Some(base) = &file.base {
                crate::replay::write(&self.main.join(dir).join(path), Some(base))?;
            }
        }
        git(&self.main, &["add", "-A"])?;
        git(&self.main, &["commit", "-q", "--allow-empty", "-m", dir])?;
        for root in [&self.a, &self.b] {
            git(root, &["reset", "-q", "--hard", "main"])?;
            git(root, &["clean", "-q", "-f", "-d"])?;
        }
        Ok(())
    }

    /// Step 5: the files of `worktree.forecast`'s collisions between A and B.
    async fn forecast(&mut self) -> Result<Vec<String>> {
        let answer = self.conn.call("worktree.forecast", json!({})).await?;
        let root = |key: &str, item: &Value| {
            item[key]
                .as_str()
                .and_then(|r| std::fs::canonicalize(r).ok())
        };
        let (a, b) = (Some(self.a.clone()), Some(self.b.clone()));
        let mut files = Vec::new();
        for item in answer["pairs"].as_array().into_iter().flatten() {
            let ends = (root("a", item), root("b", item));
            if ends != (a.clone(), b.clone()) && ends != (b.clone(), a.clone()) {
                continue;
            }
            for collision in item["collisions"].as_array().into_iter().flatten() {
                if let Some(file) = collision["file"].as_str() {
                    files.push(file.to_owned());
                }
            }
        }
        Ok(files)
    }
}

/// What the daemon should show as A's work on the pair's files under `dir/`, as git says
/// (the observer's own reading of a worktree, [`changes_of`]): per changed file its changed
/// lines merged into regions, `None` for file-level work.
fn expected_work(a: &Path, main: &Path, dir: &str) -> Result<Vec<(String, Option<Value>)>> {
    let changes =
        changes_of(a, main).map_err(|e| anyhow::anyhow!("git on {}: {e:?}", a.display()))?;
    let prefix = format!("{dir}/");
    Ok(changes
        .files
        .into_iter()
        .filter(|file| file.file.starts_with(&prefix))
        .map(|file| {
            let regions = (!file.whole_file).then(|| {
                let mut merged: Vec<(i64, i64)> = Vec::new();
                let mut lines = file.lines.clone();
                lines.sort_unstable();
                for (first, last) in lines {
                    match merged.last_mut() {
                        Some(end) if first <= end.1 + 1 => end.1 = end.1.max(last),
                        _ => merged.push((first, last)),
                    }
                }
                Value::Array(
                    merged
                        .into_iter()
                        .map(|(first, last)| json!({"startLine": first, "endLine": last}))
                        .collect(),
                )
            });
            (file.file, regions)
        })
        .collect())
}

/// Writes `side`'s patch of `pair` under `dir` as an editor saves: each changed file's new
/// text to a temporary file renamed over it (so no reader sees half a file), a deleted file
/// removed. Returns when the last write was done.
fn write_side(dir: &Path, pair: &Pair, side: Side) -> Result<Instant> {
    for path in pair.changed(side) {
        let target = dir.join(path);
        match pair.files[path].after(side) {
            Some(text) => {
                let parent = target.parent().context("a file has no directory")?;
                std::fs::create_dir_all(parent)?;
                let temporary = parent.join(".wit-replay-save.tmp");
                std::fs::write(&temporary, text)?;
                std::fs::rename(&temporary, &target)
                    .with_context(|| format!("save {}", target.display()))?;
            }
            None => {
                let _ = std::fs::remove_file(&target);
            }
        }
    }
    Ok(Instant::now())
}

/// Polls `intent.query` until the live intents on the pair's files (under `dir/`) are
/// exactly `expected`, all of them `session`'s (step 3): transitional states the daemon may
/// have seen meanwhile (the base's files untracked in the main worktree before its commit,
/// a worktree half reset) must be gone. `false`: not within [`SEEN_DEADLINE`].
async fn wait_seen(
    conn: &mut Conn,
    session: &str,
    dir: &str,
    expected: &[(String, Option<Value>)],
) -> Result<bool> {
    let deadline = Instant::now() + SEEN_DEADLINE;
    loop {
        let found = conn.call("intent.query", json!({})).await?;
        if shows(&found, session, dir, expected) {
            return Ok(true);
        }
        if Instant::now() > deadline {
            return Ok(false);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether the live intents `found` on files under `dir/` are `session`'s, one per file of
/// `expected`, each with its expected regions.
fn shows(found: &Value, session: &str, dir: &str, expected: &[(String, Option<Value>)]) -> bool {
    let under = format!(",{dir}/");
    let live: Vec<&Value> = found
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|i| matches!(i["status"].as_str(), Some("active") | Some("declared")))
        .filter(|i| i["files"].as_str().is_some_and(|f| f.contains(&under)))
        .collect();
    live.len() == expected.len()
        && live.iter().all(|i| i["sessionId"] == session)
        && expected.iter().all(|(file, regions)| {
            let listed = format!(",{file},");
            live.iter().any(|i| {
                i["files"].as_str().is_some_and(|f| f == listed)
                    && match regions {
                        Some(regions) => i["regions"] == *regions,
                        None => i["regions"].as_array().is_none_or(|r| r.is_empty()),
                    }
            })
        })
}

/// A connection to a linked worktree's socket once the daemon serves it (it binds new
/// worktrees' sockets within moments).
async fn open_when_served(socket: &Path) -> Result<Conn> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(mut conn) = Conn::open(socket).await {
            if conn.call("ping", json!({})).await.is_ok() {
                return Ok(conn);
            }
        }
        if Instant::now() > deadline {
            bail!("{} was not served within 20 s", socket.display());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
