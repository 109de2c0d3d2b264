//! `wit-bench worktree-watch`: how soon a change saved in one worktree is seen as observed
//! work from another (issue 24: within 2 s, p99), with no hook and no wit call in between.
//!
//! ```text
//! wit-bench worktree-watch [--repo PATH] [--changes N] [--worktrees N]
//! ```
//!
//! A clone of `--repo` (else the bench's generated TypeScript repository) gets `--worktrees`
//! linked worktrees; one daemon serves them all. Each change rewrites one line of a source
//! file in the first linked worktree, like an editor saving it, and polls `intent.query`
//! on the main worktree's socket (every 2 ms) until the worktree's intent on the file shows
//! the changed line. Reported: p50, p99 and max from save to seen, and the daemon's RSS.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::fixtures::{generated_ts, Daemon, WorkDir};
use crate::measure::{fmt_duration, p50_p99, rss_kib};
use crate::net::Conn;
use crate::safegit::git;

/// `wit-bench worktree-watch` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct WatchArgs {
    /// A checkout to clone for the run (default: a generated TypeScript repository).
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Changes saved and waited for.
    #[arg(long, default_value_t = 60)]
    pub changes: usize,
    /// Linked worktrees besides the main one.
    #[arg(long, default_value_t = 2)]
    pub worktrees: usize,
}

/// Runs the measurement.
pub(crate) async fn worktree_watch(wit: &Path, args: &WatchArgs) -> Result<()> {
    let work = WorkDir::new()?;
    let main = work.path().join("m");
    match &args.repo {
        Some(repo) => git(
            work.path(),
            &[
                "clone",
                "-q",
                "--no-hardlinks",
                &repo.display().to_string(),
                "m",
            ],
        )?,
        None => generated_repository(&main)?,
    }
    let mut roots = Vec::new();
    for n in 1..=args.worktrees.max(1) {
        let root = work.path().join(format!("w{n}"));
        let branch = format!("bench-w{n}");
        git(
            &main,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &branch,
                &root.display().to_string(),
            ],
        )?;
        roots.push(std::fs::canonicalize(&root)?);
    }
    let (daemon, _) = Daemon::start(wit, &main).await?;
    let mut conn = Conn::open(&daemon.socket).await?;
    let one = &roots[0];
    let file = pick_file(one)?;
    let original = std::fs::read_to_string(one.join(&file))?;
    let lines: Vec<&str> = original.lines().collect();
    let session = format!("worktree:{}", one.display());
    println!(
        "worktree-watch: {} worktrees, {} changes to {file} ({} lines) in {}",
        roots.len() + 1,
        args.changes,
        lines.len(),
        one.display()
    );
    let mut samples = Vec::with_capacity(args.changes);
    for n in 0..args.changes {
        // A different line each time (spread over the file), so each save is a new region.
        let line = 1 + (n * 7919) % lines.len().max(1);
        let mut changed: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
        changed[line - 1] = format!("{} // bench change {n}", changed[line - 1]);
        let text = changed.join("\n") + "\n";
        let saved = Instant::now();
        std::fs::write(one.join(&file), &text)?;
        wait_seen(&mut conn, &session, &file, line as i64).await?;
        samples.push(saved.elapsed());
        if std::env::var_os("WIT_BENCH_VERBOSE").is_some() {
            println!("  change {n}: {}", fmt_duration(saved.elapsed()));
        }
    }
    let max = samples.iter().max().copied().unwrap_or_default();
    let (p50, p99) = p50_p99(&mut samples);
    println!(
        "save → observed from another worktree: p50 {}  p99 {}  max {}  (target p99 < 2 s)",
        fmt_duration(p50),
        fmt_duration(p99),
        fmt_duration(max)
    );
    if let Some(two) = roots.get(1) {
        preview_from_another_worktree(two, &file, &lines, args.changes.max(50)).await?;
    }
    println!(
        "daemon RSS serving {} worktrees: {} KiB",
        roots.len() + 1,
        rss_kib(daemon.pid()).unwrap_or(0)
    );
    Ok(())
}

/// `edit.preflight` of a one-line edit of `file` through the second worktree's socket, while
/// the first worktree's change of the file is observed work: its regions are carried
/// through the merge-base into this worktree's text on every call.
async fn preview_from_another_worktree(
    root: &Path,
    file: &str,
    lines: &[&str],
    calls: usize,
) -> Result<()> {
    let mut conn = Conn::open(&root.join(".wit/daemon.sock")).await?;
    // A line that occurs once in the file, as text (the preview's oldText must be unique).
    let text = lines.join("\n");
    let Some(line) = lines
        .iter()
        .rev()
        .find(|l| l.trim().len() > 12 && text.matches(**l).count() == 1)
    else {
        return Ok(());
    };
    let params = json!({
        "sessionId": "bench-previewer",
        "file": file,
        "edits": [{"oldText": line, "newText": format!("{line} ")}],
    });
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let answer = conn.call("edit.preflight", params.clone()).await?;
        samples.push(started.elapsed());
        if answer["applies"] != json!(true) {
            bail!("the preview does not apply: {answer}");
        }
    }
    let (p50, p99) = p50_p99(&mut samples);
    println!(
        "edit.preflight from another worktree, the file holding observed work: p50 {}  p99 {}",
        fmt_duration(p50),
        fmt_duration(p99)
    );
    Ok(())
}

/// Polls until the worktree session's intent on `file` has exactly the one region `line`.
async fn wait_seen(conn: &mut Conn, session: &str, file: &str, line: i64) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = conn
            .call("intent.query", json!({"sessionId": session, "file": file}))
            .await?;
        if seen(&found, line) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("line {line} of {file} never seen as {session}'s work: {found}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn seen(found: &Value, line: i64) -> bool {
    found.as_array().is_some_and(|intents| {
        intents
            .iter()
            .any(|intent| intent["regions"] == json!([{"startLine": line, "endLine": line}]))
    })
}

/// The largest tracked source file of a supported language (at most 200 KB).
pub(crate) fn pick_file(root: &Path) -> Result<String> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()?;
    let mut best: Option<(u64, String)> = None;
    for file in out.stdout.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        let file = String::from_utf8_lossy(file).into_owned();
        if wit::analysis::Language::for_path(&file).is_none() {
            continue;
        }
        let size = std::fs::metadata(root.join(&file))
            .map(|m| m.len())
            .unwrap_or(0);
        if size <= 200_000 && best.as_ref().is_none_or(|(s, _)| size > *s) {
            best = Some((size, file));
        }
    }
    best.map(|(_, f)| f)
        .context("the repository has no source file of a supported language")
}

/// A repository of generated TypeScript (the bench's 16 KB and 169 KB files), committed.
pub(crate) fn generated_repository(root: &Path) -> Result<()> {
    std::fs::create_dir_all(root.join("src"))?;
    for (name, size) in [("small.ts", 16_000), ("medium.ts", 169_000)] {
        std::fs::write(root.join("src").join(name), generated_ts(size).0)?;
    }
    git(root, &["init", "-q", "-b", "main"])?;
    git(root, &["add", "-A"])?;
    git(root, &["commit", "-qm", "bench"])
}
