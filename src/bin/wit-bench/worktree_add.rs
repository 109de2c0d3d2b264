//! `wit-bench worktree-add`: worktrees added while the daemon runs never keep a directory
//! without a watch (issue 35: 0 unwatched directories, every save seen within 2 s, p99).
//!
//! ```text
//! wit-bench worktree-add [--adds N] [--dirs N] [--saves N]
//! ```
//!
//! A generated Python repository of `--dirs` directories (nested up to 8 deep, one module
//! each) and one linked worktree, served by one daemon. Then, `--adds` times while it runs:
//! `git worktree add` of a new worktree, and at once `--saves` saves, one after the other,
//! each of one line of a module in another directory of it (the deepest first), each
//! waited for (at most 10 s) until the worktree's observed work shows exactly that line.
//! A save never seen counts its directory as unwatched. Reported: saves, unwatched
//! directories, p50/p99/max from save to seen.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{json, Value};

use crate::fixtures::{Daemon, WorkDir};
use crate::measure::{fmt_duration, p50_p99};
use crate::net::Conn;
use crate::safegit::git;

/// `wit-bench worktree-add` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct AddArgs {
    /// Worktrees added while the daemon runs.
    #[arg(long, default_value_t = 30)]
    pub adds: usize,
    /// Directories of the generated repository.
    #[arg(long, default_value_t = 210)]
    pub dirs: usize,
    /// Saves per added worktree, each in another directory.
    #[arg(long, default_value_t = 8)]
    pub saves: usize,
}

/// Runs the measurement.
pub(crate) async fn worktree_add(wit: &Path, args: &AddArgs) -> Result<()> {
    let work = WorkDir::new()?;
    let main = work.path().join("m");
    let modules = generated_repository(&main, args.dirs.max(1))?;
    git(&main, &["worktree", "add", "-q", "-b", "first", "../first"])?;
    let (daemon, _) = Daemon::start(wit, &main).await?;
    let mut conn = Conn::open(&daemon.socket).await?;
    println!(
        "worktree-add: {} directories, {} adds while the daemon runs, {} saves each",
        args.dirs, args.adds, args.saves
    );
    let (mut samples, mut unwatched, mut saves) = (Vec::new(), 0usize, 0usize);
    for n in 0..args.adds {
        let name = format!("add{n}");
        git(
            &main,
            &["worktree", "add", "-q", "-b", &name, &format!("../{name}")],
        )?;
        let root = std::fs::canonicalize(work.path().join(&name))?;
        let session = format!("worktree:{}", root.display());
        for s in 0..args.saves.min(modules.len()) {
            // The deepest module first, then others spread over the tree.
            let at = if s == 0 {
                modules.len() - 1
            } else {
                (s * 37 + n * 11) % modules.len()
            };
            let module = &modules[at];
            let path = root.join(module);
            let text = std::fs::read_to_string(&path)?;
            std::fs::write(
                &path,
                text.replacen("VALUE = 0", &format!("VALUE = {}", s + 1), 1),
            )?;
            let saved = Instant::now();
            saves += 1;
            if wait_seen(&mut conn, &session, module).await? {
                samples.push(saved.elapsed());
            } else {
                unwatched += 1;
                println!("  {name}: {module} never seen");
            }
            std::fs::write(&path, text)?;
            wait_gone(&mut conn, &session, module).await?;
        }
    }
    let max = samples.iter().max().copied().unwrap_or_default();
    let (p50, p99) = p50_p99(&mut samples);
    println!(
        "{saves} saves in worktrees added while the daemon ran: {unwatched} unwatched \
         directories; save → seen p50 {}  p99 {}  max {}  (targets: 0, p99 < 2 s)",
        fmt_duration(p50),
        fmt_duration(p99),
        fmt_duration(max)
    );
    Ok(())
}

/// Polls (every 5 ms, at most 10 s) until `session` has work on `module`, line 1.
async fn wait_seen(conn: &mut Conn, session: &str, module: &str) -> Result<bool> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let found = conn
            .call(
                "intent.query",
                json!({"sessionId": session, "file": module}),
            )
            .await?;
        if lines_of(&found) == [json!({"startLine": 1, "endLine": 1})] {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(false)
}

/// Polls until `session` has no live work on `module` (the save was undone).
async fn wait_gone(conn: &mut Conn, session: &str, module: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let found = conn
            .call(
                "intent.query",
                json!({"sessionId": session, "file": module}),
            )
            .await?;
        if lines_of(&found).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// The regions of the live intents in an `intent.query` answer.
fn lines_of(found: &Value) -> Vec<Value> {
    found
        .as_array()
        .map(|intents| {
            intents
                .iter()
                .filter(|i| i["status"] != "resolved")
                .flat_map(|i| i["regions"].as_array().cloned().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// `dirs` directories, nested up to 8 deep, each holding one module `VALUE = 0`; committed.
/// The modules, the deepest last.
fn generated_repository(root: &Path, dirs: usize) -> Result<Vec<String>> {
    let mut modules = Vec::with_capacity(dirs);
    for n in 0..dirs {
        let depth = 1 + n % 8;
        let dir: PathBuf = (0..depth).map(|d| format!("p{}_{d}", n / 8)).collect();
        let module = dir.join(format!("m{n}.py"));
        std::fs::create_dir_all(root.join(&dir))?;
        std::fs::write(
            root.join(&module),
            "VALUE = 0\n\n\ndef f():\n    return VALUE\n",
        )?;
        modules.push((depth, module.display().to_string()));
    }
    modules.sort();
    git(root, &["init", "-q", "-b", "main"])?;
    git(root, &["add", "-A"])?;
    git(root, &["commit", "-qm", "bench"])?;
    Ok(modules.into_iter().map(|(_, m)| m).collect())
}
