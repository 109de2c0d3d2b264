//! `wit-bench replay`: two agents' real patches replayed live through one daemon, each
//! predictor scored against git's merge (issue 21 item 5).
//!
//! ```text
//! wit-bench replay --data /work/replay-data/pairs.jsonl [--limit N] [--json OUT] [--jobs N]
//!                  [--worktrees]
//! ```
//!
//! `--worktrees` replays the pairs with each agent in a git worktree of its own
//! ([`crate::replay_worktrees`]); what follows is the replay in one tree.
//!
//! The pairs come from `scripts/replay/mine.py` (see [`crate::replay_data`]). One daemon
//! serves the whole run (or each of `--jobs N` daemons a share of the pairs), on a scratch
//! repository; pair `i` lives in its own directory `pNNNN/` there, so no pair sees another's
//! files or sessions. A pair is:
//! 1. the pair's base files are written;
//! 2. agent A (session `a<i>`) makes its patch file by file as an agent would: one
//!    `edit.preflight` with `record: true` carrying the file's edits (see
//!    [`crate::replay_edits`]: one find-and-replace edit a hunk, `oldText` the hunk's lines
//!    widened only as far as uniqueness needs), then the file is written as the Edit tool
//!    would (created files: an empty `oldText`; deleted files: `content: ""`, then removed);
//! 3. agent B (session `b<i>`) previews its patch file by file (`edit.preflight` without
//!    `record`) against the tree as A left it: B's hunks of the base are carried onto A's
//!    text through A's line diff (a hunk over lines A rewrote takes A's lines), as an agent
//!    reading the current file would write them;
//! 4. both sessions end and the directory is removed.
//!
//! Predictors: `conflicts` (some preview of B has INTENT_OVERLAP or LOCK_INTERSECTION items),
//! `related` (some preview has `related` items; absent = none), same file (A and B change a
//! common file), lines ±1 (in a common file, a hunk of B's lies within one line of one of
//! A's, in base lines; creating or deleting a common file counts). The truth is git's merge of
//! the pair's replayed files ([`crate::replay_truth`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::fixtures::{Daemon, WorkDir};
use crate::net::Conn;
use crate::replay_data::{load, Pair, Side};
use crate::replay_edits::{
    agent_edits, apply_changes, changes_of, hunks, lines_meet, rebase_changes, Hunk,
};
use crate::replay_score::{print_report, to_json, Outcome, PREDICTORS, WORKTREE_PREDICTORS};
use crate::replay_truth::TruthRepo;
use crate::replay_worktrees;

/// `wit-bench replay` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// The pairs file (JSON lines from scripts/replay/mine.py).
    #[arg(long, value_name = "PATH")]
    pub data: PathBuf,
    /// Replay only the first N pairs.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Also write the scores and every pair's outcome as JSON here.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Daemons replaying at once, each on its own scratch repository and share of the pairs.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,
    /// Worktree mode (issue 24): A's patch is written into a worktree of its own with no wit
    /// call, B previews through another worktree's socket (see [`crate::replay_worktrees`]).
    #[arg(long)]
    pub worktrees: bool,
}

/// Runs the replay and prints its report.
pub(crate) async fn replay(wit: &Path, args: &ReplayArgs) -> Result<()> {
    let mut pairs = load(&args.data)?;
    if let Some(limit) = args.limit {
        pairs.truncate(limit);
    }
    let pairs = Arc::new(pairs);
    let work = WorkDir::new()?;
    let started = std::time::Instant::now();
    let jobs = args.jobs.max(1);
    let worktrees = args.worktrees;
    let shards: Vec<_> = (0..jobs)
        .map(|shard| {
            let (wit, pairs) = (wit.to_owned(), Arc::clone(&pairs));
            let dir = work.path().join(format!("s{shard}"));
            std::thread::spawn(move || -> Result<Vec<(usize, Outcome)>> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                if worktrees {
                    runtime.block_on(replay_worktrees::replay_shard(
                        &wit, &dir, &pairs, shard, jobs,
                    ))
                } else {
                    runtime.block_on(replay_shard(&wit, &dir, &pairs, shard, jobs))
                }
            })
        })
        .collect();
    let mut outcomes: Vec<Option<Outcome>> = vec![None; pairs.len()];
    for shard in shards {
        let done = shard
            .join()
            .map_err(|_| anyhow::anyhow!("a replay shard panicked"))??;
        for (index, outcome) in done {
            outcomes[index] = Some(outcome);
        }
    }
    let outcomes: Vec<Outcome> = outcomes.into_iter().flatten().collect();
    let predictors: &[&str] = if worktrees {
        &WORKTREE_PREDICTORS
    } else {
        &PREDICTORS
    };
    println!(
        "# wit-bench replay{}: {} pairs of {} in {:.1} s ({jobs} daemons)",
        if worktrees { " --worktrees" } else { "" },
        outcomes.len(),
        args.data.display(),
        started.elapsed().as_secs_f64()
    );
    println!();
    print_report(predictors, &outcomes);
    if let Some(path) = &args.json {
        std::fs::write(
            path,
            serde_json::to_vec_pretty(&to_json(predictors, &outcomes))?,
        )
        .with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

/// Replays every `jobs`-th pair from `shard` on, on one daemon of its own, in `dir`.
async fn replay_shard(
    wit: &Path,
    dir: &Path,
    pairs: &[Pair],
    shard: usize,
    jobs: usize,
) -> Result<Vec<(usize, Outcome)>> {
    let root = dir.join("r");
    std::fs::create_dir_all(&root)?;
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&root)
        .status()?;
    anyhow::ensure!(status.success(), "git init failed");
    let truth = TruthRepo::create(&dir.join("truth.git"))?;
    let (daemon, _) = Daemon::start(wit, &root).await?;
    let mut conn = Conn::open(&daemon.socket).await?;
    let mut outcomes = Vec::new();
    for (index, pair) in pairs.iter().enumerate().skip(shard).step_by(jobs) {
        let outcome = replay_pair(&mut conn, &root, index, pair, &truth)
            .await
            .with_context(|| format!("pair {}", pair.id))?;
        outcomes.push((index, outcome));
        if outcomes.len() % 50 == 0 {
            eprintln!("daemon {shard}: replayed {} pairs", outcomes.len());
        }
    }
    Ok(outcomes)
}

/// Replays pair number `index` (steps 1–4 of the module doc) and scores it.
async fn replay_pair(
    conn: &mut Conn,
    root: &Path,
    index: usize,
    pair: &Pair,
    truth: &TruthRepo,
) -> Result<Outcome> {
    let dir = format!("p{index:04}");
    let on_disk = |path: &str| root.join(&dir).join(path);
    for (path, file) in &pair.files {
        if let Some(base) = &file.base {
            write(&on_disk(path), Some(base))?;
        }
    }
    let (session_a, session_b) = (format!("a{index}"), format!("b{index}"));
    let mut not_applied = 0;
    for path in pair.changed(Side::A) {
        let file = &pair.files[path];
        let target = file.after(Side::A);
        if let Some(change) = edit_request(file.base.as_deref(), file.base.as_deref(), target, None)
        {
            let answer =
                preflight(conn, &session_a, &format!("{dir}/{path}"), change, true).await?;
            if answer["applies"] != Value::Bool(true) {
                not_applied += 1;
            }
        }
        write(&on_disk(path), target)?;
    }
    let (previews, not_applied_b) = preview_b(conn, &session_b, &dir, pair, true).await?;
    let judged = Judged::of(pair, &previews);
    let conflicted = truth.conflicted_files(pair)?;
    let hint = if conflicted.is_empty() == judged.conflicts {
        hint(
            conn,
            &session_a,
            &dir,
            pair,
            &judged.common,
            &previews,
            &conflicted,
        )
        .await?
    } else {
        String::new()
    };
    for session in [&session_a, &session_b] {
        conn.call("session.end", json!({"sessionId": session}))
            .await?;
    }
    let _ = std::fs::remove_dir_all(root.join(&dir));
    Ok(judged.outcome(
        pair,
        conflicted,
        Vec::new(),
        not_applied + not_applied_b,
        hint,
    ))
}

/// What B's previews of one file said.
#[derive(Debug, Default)]
pub(crate) struct Preview {
    conflicts: Vec<Value>,
    related: Vec<Value>,
    symbols: Vec<String>,
}

/// B (`session`) previews its patch of `pair` file by file (`edit.preflight` without
/// `record`) on `conn`, the pair's files being under `dir/`: against the tree as A left it
/// when `after_a` (B's hunks of the base carried onto A's text through A's line diff), else
/// against the base. Returns the previews by path and how many did not apply.
pub(crate) async fn preview_b(
    conn: &mut Conn,
    session: &str,
    dir: &str,
    pair: &Pair,
    after_a: bool,
) -> Result<(Vec<(String, Preview)>, usize)> {
    let mut not_applied = 0;
    let mut previews = Vec::new();
    for path in pair.changed(Side::B) {
        let file = &pair.files[path];
        let (current, moved) = if after_a {
            let moved = match (file.base.as_deref(), file.side(Side::A)) {
                (Some(base), Some(Some(a))) => Some(hunks(base, a)),
                _ => None,
            };
            (file.after(Side::A), moved)
        } else {
            (file.base.as_deref(), None)
        };
        let Some(change) = edit_request(
            current,
            file.base.as_deref(),
            file.after(Side::B),
            moved.as_deref(),
        ) else {
            continue;
        };
        let answer = preflight(conn, session, &format!("{dir}/{path}"), change, false).await?;
        if answer["applies"] != Value::Bool(true) {
            not_applied += 1;
        }
        let list = |key: &str| answer[key].as_array().cloned().unwrap_or_default();
        previews.push((
            path.to_owned(),
            Preview {
                conflicts: list("conflicts"),
                related: list("related"),
                symbols: list("symbols")
                    .iter()
                    .filter_map(|s| s.as_str())
                    .map(|s| s.strip_prefix(&format!("{dir}/")).unwrap_or(s).to_owned())
                    .collect(),
            },
        ));
    }
    Ok((previews, not_applied))
}

/// The predictors every mode shares, for one pair and B's previews.
pub(crate) struct Judged<'p> {
    /// The files both patches change.
    pub common: Vec<&'p str>,
    /// Some preview of B reported a collision (INTENT_OVERLAP or LOCK_INTERSECTION).
    pub conflicts: bool,
    /// `related` items over B's previews.
    pub related_items: usize,
    /// The line check: in a common file, hunks within one line of each other (base lines),
    /// or a common file created or deleted.
    pub lines: bool,
}

impl<'p> Judged<'p> {
    /// Judges `pair` by B's `previews`.
    pub(crate) fn of(pair: &'p Pair, previews: &[(String, Preview)]) -> Self {
        let common: Vec<&str> = pair
            .changed(Side::A)
            .filter(|p| pair.files[*p].b.is_some())
            .collect();
        let lines = common.iter().any(|path| {
            let file = &pair.files[*path];
            match (file.base.as_deref(), file.side(Side::A), file.side(Side::B)) {
                (Some(base), Some(Some(a)), Some(Some(b))) => {
                    lines_meet(&hunks(base, a), &hunks(base, b))
                }
                _ => true,
            }
        });
        let conflicts = previews.iter().any(|(_, p)| {
            p.conflicts.iter().any(|c| {
                matches!(
                    c["type"].as_str(),
                    Some("INTENT_OVERLAP") | Some("LOCK_INTERSECTION")
                )
            })
        });
        let related_items = previews.iter().map(|(_, p)| p.related.len()).sum();
        Self {
            common,
            conflicts,
            related_items,
            lines,
        }
    }

    /// The pair's outcome: git's `conflicted` files, the shared predictors in the order of
    /// [`crate::replay_score::PREDICTORS`] followed by `more`.
    pub(crate) fn outcome(
        &self,
        pair: &Pair,
        conflicted: Vec<String>,
        more: Vec<bool>,
        not_applied: usize,
        hint: String,
    ) -> Outcome {
        let is_conflict = !conflicted.is_empty();
        let mut predicted = vec![
            self.conflicts,
            self.related_items > 0,
            !self.common.is_empty(),
            self.lines,
        ];
        predicted.extend(more);
        Outcome {
            id: pair.id.clone(),
            language: pair.language.clone(),
            truth: is_conflict,
            mined_agrees: is_conflict != pair.mined_conflicted.is_empty(),
            conflicted,
            predicted,
            related_items: self.related_items,
            not_applied,
            hint,
            seen_after: None,
        }
    }
}

/// The `edit.preflight` params (`edits` or `content`) an agent sends to turn the file from
/// `current` into its side's `target`, given the side's patch of `base`; `moved` is the
/// other side's line diff of base to current when it changed the file. `None`: nothing to
/// send.
pub(crate) fn edit_request(
    current: Option<&str>,
    base: Option<&str>,
    target: Option<&str>,
    moved: Option<&[Hunk]>,
) -> Option<Value> {
    let current_text = current.unwrap_or("");
    let Some(target) = target else {
        return Some(json!({"content": ""}));
    };
    if current_text.is_empty() {
        return (!target.is_empty())
            .then(|| json!({"edits": [{"oldText": "", "newText": target}]}));
    }
    let Some(base) = base else {
        return Some(json!({"content": target}));
    };
    let mut changes = changes_of(&hunks(base, target), target);
    if let Some(moved) = moved {
        changes = rebase_changes(&changes, moved);
    }
    if changes.is_empty() {
        return None;
    }
    Some(match agent_edits(current_text, &changes) {
        Some(edits) => json!({"edits": edits
            .iter()
            .map(|e| json!({"oldText": e.old_text, "newText": e.new_text}))
            .collect::<Vec<_>>()}),
        None => json!({"content": apply_changes(current_text, &changes)}),
    })
}

/// One `edit.preflight` of `file` by `session`.
pub(crate) async fn preflight(
    conn: &mut Conn,
    session: &str,
    file: &str,
    change: Value,
    record: bool,
) -> Result<Value> {
    let mut params = json!({"sessionId": session, "file": file, "record": record});
    if let (Some(params), Some(change)) = (params.as_object_mut(), change.as_object()) {
        params.extend(change.clone());
    }
    conn.call("edit.preflight", params).await
}

/// Writes `text` to `path` (creating its directory), or removes the file for `None`.
pub(crate) fn write(path: &Path, text: Option<&str>) -> Result<()> {
    match text {
        Some(text) => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text).with_context(|| format!("write {}", path.display()))
        }
        None => {
            let _ = std::fs::remove_file(path);
            Ok(())
        }
    }
}

/// A short cause hint for a false alarm or a miss: per file both change, A's observed intent
/// (of `session_a`: its symbols, file-level or its regions), what B's preview touched and
/// reported, and whether git conflicts there.
pub(crate) async fn hint(
    conn: &mut Conn,
    session_a: &str,
    dir: &str,
    pair: &Pair,
    common: &[&str],
    previews: &[(String, Preview)],
    conflicted: &[String],
) -> Result<String> {
    let intents = conn
        .call("intent.query", json!({"sessionId": session_a}))
        .await?;
    let intents = intents.as_array().cloned().unwrap_or_default();
    let mut parts = Vec::new();
    for path in common.iter().take(4) {
        let full = format!(",{dir}/{path},");
        let a = intents
            .iter()
            .find(|i| i["files"].as_str().is_some_and(|f| f.contains(&full)))
            .map(describe_intent)
            .unwrap_or_else(|| "no intent".to_owned());
        let preview = previews.iter().find(|(p, _)| p == path).map(|(_, p)| p);
        let b = preview.map_or("no preview".to_owned(), |p| {
            let kinds: Vec<&str> = p
                .conflicts
                .iter()
                .filter_map(|c| c["type"].as_str())
                .collect();
            format!(
                "B touches [{}]{}{}",
                p.symbols.join(", "),
                if kinds.is_empty() {
                    String::new()
                } else {
                    format!(", {}", kinds.join("+"))
                },
                if p.related.is_empty() {
                    String::new()
                } else {
                    let kinds: Vec<&str> = p
                        .related
                        .iter()
                        .filter_map(|r| r["type"].as_str())
                        .collect();
                    format!(", related {}", kinds.join("+"))
                }
            )
        });
        let file = &pair.files[*path];
        let kind = match (&file.base, &file.a, &file.b) {
            (None, _, _) => " (added by both)",
            (_, Some(None), _) | (_, _, Some(None)) => " (deleted by one)",
            _ => "",
        };
        parts.push(format!(
            "`{path}`{kind}: git {}; A {a}; {b}",
            if conflicted.iter().any(|c| c == path) {
                "conflicts"
            } else {
                "clean"
            }
        ));
    }
    if common.is_empty() {
        parts.push("no common file".to_owned());
    }
    Ok(parts.join(" | "))
}

/// An observed intent in a few words: its symbols, and file-level or its regions.
fn describe_intent(intent: &Value) -> String {
    let symbols = intent["symbols"].as_str().unwrap_or("[]");
    let place = if let Some(regions) = intent["regions"].as_array() {
        let spans: Vec<String> = regions
            .iter()
            .map(|r| format!("{}-{}", r["startLine"], r["endLine"]))
            .collect();
        if spans.is_empty() {
            "file-level".to_owned()
        } else {
            format!("lines {}", spans.join(","))
        }
    } else if intent["startByte"].is_null() {
        "file-level".to_owned()
    } else {
        "symbol ranges".to_owned()
    };
    format!("{place} {symbols}")
}
