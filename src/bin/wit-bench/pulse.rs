//! The sections of sessions, waits and events (docs/protocol.md 7–9):
//! - `waits`: hand-over latency (release answered → the waiter's acquire answered), and the
//!   daemon's memory and threads with 1,000 requests waiting on one symbol;
//! - `events`: how soon a waiting `events.poll` answers after a change;
//! - `reap`: how soon a killed agent's lock is free.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::measure::{fmt_duration, p50_p99};
use crate::net::{request, Conn};
use crate::Bench;

/// Threads of a process.
fn threads(pid: u32) -> Option<u64> {
    wit::platform::measure::status_field(pid, "Threads:")
}

/// Resident set of a process in KiB.
fn rss(pid: u32) -> u64 {
    crate::measure::rss_kib(pid).unwrap_or(0)
}

/// Hand-over latency, and 1,000 waiters on one symbol.
pub(crate) async fn waits(b: &mut Bench) -> Result<()> {
    let rounds = b.scale(300, 60);
    let mut holder = Conn::open(&b.socket).await?;
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let symbol = format!("src/handover.ts:f{round}");
        holder
            .call(
                "lock.acquire",
                json!({"symbolPath": symbol, "sessionId": "h-holder"}),
            )
            .await?;
        let mut waiter = Conn::open(&b.socket).await?;
        let body = request(
            "lock.acquire",
            &json!({"symbolPath": symbol, "sessionId": "h-waiter", "waitMs": 10_000}),
        );
        let waiting = tokio::spawn(async move {
            let answer = waiter.post(&body).await;
            (answer, Instant::now())
        });
        // Let the waiter be queued before the release.
        tokio::time::sleep(Duration::from_millis(3)).await;
        holder
            .call(
                "lock.release",
                json!({"symbolPath": symbol, "sessionId": "h-holder"}),
            )
            .await?;
        let released = Instant::now();
        let (answer, answered) = waiting.await?;
        let answer = answer?;
        if crate::net::find(&answer, b"\"error\"").is_some() {
            bail!(
                "the waiter was refused: {}",
                String::from_utf8_lossy(&answer)
            );
        }
        samples.push(answered.saturating_duration_since(released));
        holder
            .call(
                "lock.release",
                json!({"symbolPath": symbol, "sessionId": "h-waiter"}),
            )
            .await?;
    }
    let (p50, p99) = p50_p99(&mut samples);
    println!(
        "| hand-over: release answered → waiter's acquire answered ({rounds} rounds; 0 when the waiter's answer came first) | 1 | {rounds} | | {} | {} | | | |",
        fmt_duration(p50),
        fmt_duration(p99)
    );

    let Some(pid) = b.pid else { return Ok(()) };
    let waiters = b.scale(1000, 200);
    holder
        .call(
            "lock.acquire",
            json!({"symbolPath": "src/crowd.ts:f", "sessionId": "crowd-holder"}),
        )
        .await?;
    let (rss_before, threads_before) = (rss(pid), threads(pid));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(waiters);
    for w in 0..waiters {
        let mut conn = Conn::open(&b.socket).await?;
        let body = request(
            "lock.acquire",
            &json!({"symbolPath": "src/crowd.ts:f", "sessionId": format!("crowd-{w}"), "waitMs": 120_000}),
        );
        tasks.push(tokio::spawn(async move { conn.post(&body).await }));
    }
    // Every request is queued once a ping behind them all is answered and memory settles.
    holder.call("ping", json!({})).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let queued_in = started.elapsed();
    let (rss_waiting, threads_waiting) = (rss(pid), threads(pid));
    // The holder leaves: the first waiter gets the lock; dropping the others' connections
    // takes them out of the queue.
    holder
        .call("session.end", json!({"sessionId": "crowd-holder"}))
        .await?;
    for task in &tasks {
        task.abort();
    }
    for task in tasks {
        let _ = task.await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_after = rss(pid);
    println!(
        "| {waiters} waiters on one symbol: queued in {}; daemon RSS {:.1} → {:.1} MB (+{:.1} MB), threads {} → {}; after they left {:.1} MB | {waiters} | | | | | | | |",
        fmt_duration(queued_in),
        rss_before as f64 / 1024.0,
        rss_waiting as f64 / 1024.0,
        rss_waiting.saturating_sub(rss_before) as f64 / 1024.0,
        threads_before.map_or("?".into(), |t| t.to_string()),
        threads_waiting.map_or("?".into(), |t| t.to_string()),
        rss_after as f64 / 1024.0,
    );
    Ok(())
}

/// How soon a waiting `events.poll` answers after a change.
pub(crate) async fn events(b: &mut Bench) -> Result<()> {
    let rounds = b.scale(300, 60);
    let mut writer = Conn::open(&b.socket).await?;
    let mut poller = Conn::open(&b.socket).await?;
    let mut since = poller.call("events.poll", json!({})).await?["next"]
        .as_i64()
        .context("events.poll answered no next")?;
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let body = request("events.poll", &json!({"since": since, "waitMs": 10_000}));
        let mut conn = poller;
        let polling = tokio::spawn(async move {
            let answer = conn.post(&body).await;
            (answer, Instant::now(), conn)
        });
        tokio::time::sleep(Duration::from_millis(3)).await;
        let symbol = format!("src/events.ts:f{round}");
        writer
            .call(
                "lock.acquire",
                json!({"symbolPath": symbol, "sessionId": "ev-writer", "ttlMs": 60_000}),
            )
            .await?;
        let changed = Instant::now();
        let (answer, answered, conn) = polling.await?;
        poller = conn;
        let value: serde_json::Value = serde_json::from_slice(&answer?)?;
        let next = value["result"]["next"]
            .as_i64()
            .context("events.poll answered no next")?;
        if next <= since {
            bail!("events.poll woke without the event: {value}");
        }
        since = next;
        samples.push(answered.saturating_duration_since(changed));
        writer
            .call(
                "lock.release",
                json!({"symbolPath": symbol, "sessionId": "ev-writer"}),
            )
            .await?;
        // The release is an event too: step over it so the next poll waits for the acquire.
        since += 1;
    }
    let (p50, p99) = p50_p99(&mut samples);
    println!(
        "| events.poll wake-up: change answered → waiting poll answered ({rounds} rounds; 0 when the poll's answer came first) | 1 | {rounds} | | {} | {} | | | |",
        fmt_duration(p50),
        fmt_duration(p99)
    );
    Ok(())
}

/// How soon a killed agent's lock is free (the reaper runs about once a second).
pub(crate) async fn reap(b: &mut Bench) -> Result<()> {
    let rounds = b.scale(5, 2);
    let mut conn = Conn::open(&b.socket).await?;
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let mut agent = Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .context("spawn sleep")?;
        let session = format!("mortal-{round}");
        let symbol = format!("src/reap.ts:f{round}");
        conn.call(
            "register",
            json!({"name": "mortal", "sessionId": session, "pid": agent.id()}),
        )
        .await?;
        conn.call(
            "lock.acquire",
            json!({"symbolPath": symbol, "sessionId": session}),
        )
        .await?;
        agent.kill()?;
        agent.wait()?;
        let killed = Instant::now();
        loop {
            let locks = conn
                .call("lock.query", json!({"sessionId": session}))
                .await?;
            if locks.as_array().is_some_and(Vec::is_empty) {
                break;
            }
            if killed.elapsed() > Duration::from_secs(30) {
                bail!("a killed agent's lock was not freed in 30 s");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        samples.push(killed.elapsed());
    }
    let worst = samples.iter().copied().max().unwrap_or_default();
    let (p50, _) = p50_p99(&mut samples);
    println!(
        "| a killed agent's lock is free after (kill → lock.query empty; {rounds} agents) | 1 | {rounds} | | {} | max {} | | | |",
        fmt_duration(p50),
        fmt_duration(worst)
    );
    Ok(())
}
