//! The shared store (`--store URL`): daemons on one PostgreSQL database (docs/protocol.md 12).
//!
//! Two clones of one generated repository, a daemon on each, one fresh project. Rows: lock
//! cycles at 16 connections through one daemon and summed through two (8 + 8), the same
//! through an embedded (SQLite) daemon in the same run for the ratio, the hand-over from a
//! release on one daemon to a waiter on the other, and `intent.declare` at 100 and 10,000
//! active intents.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde_json::json;

use crate::fixtures::{generated_ts, lock_cycle, Daemon, WorkDir};
use crate::measure::{fmt_duration, measure, p50_p99, MakeOp, Measured, Report};
use crate::net::{request, Conn};

/// Lock cycles per row.
const CYCLES: usize = 10_000;
/// Hand-overs measured.
const HANDOVERS: usize = 200;

/// Runs the section against `url`.
pub(crate) async fn store_section(wit: &Path, url: &str, quick: bool) -> Result<()> {
    let work = WorkDir::new()?;
    let roots = [
        work.path().join("a"),
        work.path().join("b"),
        work.path().join("e"),
    ];
    for root in &roots {
        std::fs::create_dir_all(root.join("src"))?;
        let (text, _) = generated_ts(16 * 1024);
        std::fs::write(root.join("src/m.ts"), text)?;
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("git init failed");
        }
    }
    let project = format!("bench-{}", uuid::Uuid::new_v4());
    let env = [("WIT_STORE", url), ("WIT_PROJECT", project.as_str())];
    let (a, _) =
        Daemon::start_with_env(wit, &roots[0], &[env[0], env[1], ("WIT_HOST_ID", "a")]).await?;
    let (b, _) =
        Daemon::start_with_env(wit, &roots[1], &[env[0], env[1], ("WIT_HOST_ID", "b")]).await?;
    let (embedded, _) = Daemon::start(wit, &roots[2]).await?;
    let cycles = if quick { CYCLES / 5 } else { CYCLES };
    println!("## shared store: {} (project {project})", redact(url));
    let report = Report { floor_ping: None };
    report.header();

    let cycle = |tag: &'static str| -> MakeOp {
        Arc::new(move |w, i| {
            lock_cycle(
                &format!("src/m.ts:{tag}{w}_{}", i % 100),
                &format!("{tag}-{w}"),
            )
        })
    };
    let one = measure(&a.socket, Some(a.pid()), 16, cycles, cycle("one")).await?;
    report.row(
        "lock.acquire+release cycle, one daemon (PostgreSQL)",
        16,
        &one,
    );
    let (on_a, on_b) = tokio::join!(
        measure(&a.socket, Some(a.pid()), 8, cycles / 2, cycle("two-a")),
        measure(&b.socket, Some(b.pid()), 8, cycles / 2, cycle("two-b")),
    );
    let (on_a, on_b) = (on_a?, on_b?);
    report.row("lock cycle through daemon a of two", 8, &on_a);
    report.row("lock cycle through daemon b of two", 8, &on_b);
    // Both ran over the same window: their rates add up.
    let summed = on_a.ops_per_sec() + on_b.ops_per_sec();
    let sqlite = measure(
        &embedded.socket,
        Some(embedded.pid()),
        16,
        cycles,
        cycle("emb"),
    )
    .await?;
    report.row(
        "lock.acquire+release cycle, embedded SQLite daemon",
        16,
        &sqlite,
    );
    println!();
    println!(
        "summed through two daemons: {summed:.0} cycles/s; one PostgreSQL daemon / SQLite: {:.3}",
        one.ops_per_sec() / sqlite.ops_per_sec()
    );

    let mut handovers =
        handover_latencies(&a.socket, &b.socket, if quick { 50 } else { HANDOVERS }).await?;
    let (p50, p99) = p50_p99(&mut handovers);
    println!(
        "hand-over, release through a → waiter on b answered: p50 {} p99 {} ({} runs)",
        fmt_duration(p50),
        fmt_duration(p99),
        handovers.len()
    );

    declare_at_levels(&a, &report, if quick { 1_000 } else { 10_000 }).await?;
    Ok(())
}

/// For each run: s1 holds a lock through `a`, s2 waits for it through `b`; the time from
/// sending the release to `b` answering the waiter.
async fn handover_latencies(a: &Path, b: &Path, runs: usize) -> Result<Vec<Duration>> {
    let mut holder = Conn::open(a).await?;
    let mut samples = Vec::with_capacity(runs);
    for run in 0..runs {
        let symbol = format!("src/m.ts:hand{run}");
        holder
            .call(
                "lock.acquire",
                json!({"symbolPath": symbol, "sessionId": "s1"}),
            )
            .await?;
        let mut waiter = Conn::open(b).await?;
        let wait_symbol = symbol.clone();
        let waiting = tokio::spawn(async move {
            let answer = waiter
                .call(
                    "lock.acquire",
                    json!({"symbolPath": wait_symbol, "sessionId": "s2", "waitMs": 10_000}),
                )
                .await;
            (answer, Instant::now())
        });
        // Queued once its row is in the store: give it a moment (not part of the figure).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let released_at = Instant::now();
        holder
            .call(
                "lock.release",
                json!({"symbolPath": symbol, "sessionId": "s1"}),
            )
            .await?;
        let (answer, answered_at) = waiting.await?;
        let answer = answer?;
        if answer["sessionId"] != "s2" {
            bail!("the waiter was not handed the lock: {answer}");
        }
        samples.push(answered_at.saturating_duration_since(released_at));
        holder
            .call(
                "lock.release",
                json!({"symbolPath": symbol, "sessionId": "s2"}),
            )
            .await
            .ok();
    }
    Ok(samples)
}

/// `intent.declare` p50 with 100 and then `top` unrelated active intents in the project.
async fn declare_at_levels(a: &Daemon, report: &Report, top: usize) -> Result<()> {
    let mut setup = Conn::open(&a.socket).await?;
    let mut populated = 0usize;
    let mut rows: Vec<(usize, Measured)> = Vec::new();
    for level in [100, top] {
        while populated < level {
            let session = format!("pop-{}", populated % 7);
            let declared = setup
                .call(
                    "intent.declare",
                    json!({"sessionId": session, "description": "background",
                           "files": [format!("pop/f{populated}.ts")]}),
                )
                .await?;
            let id = declared["intentId"].as_str().unwrap_or_default().to_owned();
            setup
                .call(
                    "intent.update",
                    json!({"intentId": id, "sessionId": session, "status": "active"}),
                )
                .await?;
            populated += 1;
        }
        let make: MakeOp = Arc::new(move |w, i| {
            vec![request(
                "intent.declare",
                &json!({"sessionId": format!("decl-{w}"), "description": "measured",
                        "files": [format!("bench/l{level}_w{w}_{i}.ts")]}),
            )]
        });
        let m = measure(&a.socket, Some(a.pid()), 1, 1_000, make).await?;
        report.row(&format!("intent.declare, {level} active intents"), 1, &m);
        rows.push((level, m));
    }
    if let [(_, low), (_, high)] = rows.as_slice() {
        println!(
            "intent.declare p50 at {top} / at 100 active intents: {:.2}",
            high.percentile(0.5).as_secs_f64() / low.percentile(0.5).as_secs_f64()
        );
    }
    Ok(())
}

/// `url` without its password.
fn redact(url: &str) -> String {
    match wit::store::StoreUrl::parse(url) {
        Ok(parsed) => parsed.to_string(),
        Err(_) => "(not a store URL)".to_owned(),
    }
}
