//! The `safegit` section: one tree, safe git (issue 23), in a repository of its own.
//!
//! 50 live sessions each hold 10 regions (500 in all) of uncommitted observed work in files
//! of their own. Measured end to end, as a harness runs them (process start to answer): the
//! shell gate on a command that is not git, and on `git stash` (denied, naming the owners);
//! then `wit commit` of one session's 20 hunks across 5 files in which 4 other sessions have
//! uncommitted work.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde_json::json;

use crate::fixtures::{Daemon, WorkDir};
use crate::gate::gate_runs;
use crate::measure::{fmt_duration, p50_p99};
use crate::net::Conn;

const SESSIONS: usize = 50;
const REGIONS_EACH: usize = 10;
const FUNCTIONS: usize = 40;

/// A file of `FUNCTIONS` small functions: `fn_m` returns on line `4m + 2`.
fn source() -> String {
    (0..FUNCTIONS)
        .map(|m| format!("export function fn_{m}(c: number): number {{\n  return c * {m};\n}}\n\n"))
        .collect()
}

/// Runs git in `root` as the bench's author; fails when git does.
pub(crate) fn git(root: &Path, args: &[&str]) -> Result<()> {
    let status = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .status()?;
    if !status.success() {
        bail!("git {args:?} failed");
    }
    Ok(())
}

/// `session` changes the return line of `fn_m` in `file` from `old` to `new`, recorded as
/// observed work, and writes it.
async fn observed_edit(
    conn: &mut Conn,
    root: &Path,
    session: &str,
    file: &str,
    old: &str,
    new: &str,
) -> Result<()> {
    let result = conn
        .call(
            "edit.preflight",
            json!({"sessionId": session, "file": file, "edits": [{"oldText": old, "newText": new}], "record": true}),
        )
        .await?;
    if result["applies"] != true || !result["conflicts"].as_array().is_some_and(Vec::is_empty) {
        bail!("unexpected preflight: {result}");
    }
    let path = root.join(file);
    let text = std::fs::read_to_string(&path)?;
    std::fs::write(&path, text.replacen(old, new, 1))?;
    Ok(())
}

fn shell_payload(root: &Path, command: &str) -> Vec<u8> {
    json!({
        "session_id": "safegit-bench",
        "cwd": root.display().to_string(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    })
    .to_string()
    .into_bytes()
}

/// The section.
pub(crate) async fn safegit(wit: &Path, quick: bool) -> Result<()> {
    let work = WorkDir::new()?;
    let root = work.path().join("sg");
    std::fs::create_dir_all(root.join("src"))?;
    git(&root, &["init", "-q"])?;
    for i in 0..SESSIONS {
        std::fs::write(root.join(format!("src/s{i}.ts")), source())?;
    }
    for j in 0..5 {
        std::fs::write(root.join(format!("src/c{j}.ts")), source())?;
    }
    git(&root, &["add", "."])?;
    git(&root, &["commit", "-q", "-m", "init"])?;
    let (daemon, _) = Daemon::start(wit, &root).await?;
    let mut conn = Conn::open(&daemon.socket).await?;
    for i in 0..SESSIONS {
        let session = format!("sg-{i}");
        conn.call("register", json!({"sessionId": session, "name": session}))
            .await?;
        for k in 0..REGIONS_EACH {
            let m = 4 * k;
            observed_edit(
                &mut conn,
                &root,
                &session,
                &format!("src/s{i}.ts"),
                &format!("  return c * {m};\n"),
                &format!("  return c * {m} + 1;\n"),
            )
            .await?;
        }
    }
    let runs = if quick { 30 } else { 100 };
    let (mut plain, mut stash) = {
        let wit = wit.to_path_buf();
        let root = root.clone();
        tokio::task::spawn_blocking(move || -> Result<_> {
            let plain = gate_runs(
                &wit,
                &root,
                &shell_payload(&root, "cargo test --workspace"),
                runs,
                |out| out.is_empty(),
            )?;
            let stash = gate_runs(
                &wit,
                &root,
                &shell_payload(&root, "git status && git stash"),
                runs,
                |out| out.contains("\"permissionDecision\":\"deny\"") && out.contains("sg-49"),
            )?;
            Ok((plain, stash))
        })
        .await??
    };
    let (p50, p99) = p50_p99(&mut plain);
    let (s50, s99) = p50_p99(&mut stash);
    println!();
    println!("## One tree, safe git (issue 23)");
    println!();
    println!("| measurement | p50 | p99 | runs |");
    println!("|---|---|---|---|");
    println!(
        "| shell gate end to end (`wit hook pre-edit --agent claude`, Bash), not git: `cargo test --workspace` | {} | {} | {runs} |",
        fmt_duration(p50),
        fmt_duration(p99)
    );
    println!(
        "| shell gate end to end, `git status && git stash` with {SESSIONS} live sessions and {} regions (deny) | {} | {} | {runs} |",
        SESSIONS * REGIONS_EACH,
        fmt_duration(s50),
        fmt_duration(s99)
    );

    worst_cases(wit, &root, quick).await?;

    // Four other sessions' uncommitted work in the five files of the commit.
    for other in 1..=4 {
        for j in 0..5 {
            let m = 8 * (other - 1) + 4;
            observed_edit(
                &mut conn,
                &root,
                &format!("other-{other}"),
                &format!("src/c{j}.ts"),
                &format!("  return c * {m};\n"),
                &format!("  return c * {m} - {other};\n"),
            )
            .await?;
        }
    }
    let commit_runs = if quick { 5 } else { 15 };
    let mut samples: Vec<Duration> = Vec::with_capacity(commit_runs);
    for run in 0..commit_runs {
        // The committer's 20 hunks: 4 functions in each of the 5 files.
        for j in 0..5 {
            for h in 0..4 {
                let m = 8 * h;
                let old = if run == 0 {
                    format!("  return c * {m};\n")
                } else {
                    format!("  return c * {m} + {};\n", run - 1)
                };
                observed_edit(
                    &mut conn,
                    &root,
                    "committer",
                    &format!("src/c{j}.ts"),
                    &old,
                    &format!("  return c * {m} + {run};\n"),
                )
                .await?;
            }
        }
        let started = Instant::now();
        let output = Command::new(wit)
            .args([
                "--session",
                "committer",
                "--json",
                "commit",
                "-m",
                "bench commit",
            ])
            .current_dir(&root)
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com")
            .output()?;
        samples.push(started.elapsed());
        let stdout = String::from_utf8_lossy(&output.stdout);
        let hunks: usize = serde_json::from_str::<serde_json::Value>(&stdout)
            .ok()
            .and_then(|v| {
                v["files"].as_array().map(|files| {
                    files
                        .iter()
                        .filter_map(|f| f["hunks"].as_u64())
                        .sum::<u64>() as usize
                })
            })
            .unwrap_or(0);
        if !output.status.success() || hunks != 20 {
            bail!(
                "unexpected wit commit ({hunks} hunks): {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    let (c50, c99) = p50_p99(&mut samples);
    println!(
        "| `wit commit` of 20 hunks across 5 files, 4 other sessions' uncommitted work in them | {} | {} | {commit_runs} |",
        fmt_duration(c50),
        fmt_duration(c99)
    );
    drop(daemon);
    Ok(())
}

/// The git guards' worst cases (issue 29), end to end with the 50 sessions' work in place:
/// a 1 MB line, 5,000 subcommands git does not know (one `git config` read for all), a
/// self-recursive shell alias fanning out three ways per level. Each must answer (deny: the
/// line also runs `git stash`) well inside the 1 s deadline.
async fn worst_cases(wit: &Path, root: &Path, quick: bool) -> Result<()> {
    git(
        root,
        &["config", "alias.loop", "!git loop; git loop; git loop"],
    )?;
    let long = format!("echo {} && git stash", "a".repeat(1 << 20));
    let unknown: String = (0..5_000)
        .map(|n| format!("git sub{n}; "))
        .collect::<String>()
        + "git stash";
    let cases = [
        ("a 1 MB line ending in `git stash`", long),
        ("5,000 unknown git subcommands, then `git stash`", unknown),
        (
            "a self-recursive alias (`!git loop; git loop; git loop`), then `git stash`",
            "git loop; git stash".to_string(),
        ),
    ];
    let runs = if quick { 5 } else { 15 };
    println!();
    println!("| worst case (issue 29), shell gate end to end | p50 | max | runs |");
    println!("|---|---|---|---|");
    for (what, line) in cases {
        let payload = shell_payload(root, &line);
        let wit = wit.to_path_buf();
        let root = root.to_path_buf();
        let mut times = tokio::task::spawn_blocking(move || {
            gate_runs(&wit, &root, &payload, runs, |out| {
                out.contains("\"permissionDecision\":\"deny\"")
            })
        })
        .await??;
        let max = times.iter().max().copied().unwrap_or_default();
        let (p50, _) = p50_p99(&mut times);
        println!(
            "| {what} | {} | {} | {runs} |",
            fmt_duration(p50),
            fmt_duration(max)
        );
    }
    git(root, &["config", "--unset", "alias.loop"])?;
    Ok(())
}
