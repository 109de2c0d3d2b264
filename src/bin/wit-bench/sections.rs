//! The sections that measure the wave-1 protocol against a settled daemon; each prints its
//! rows into the shared table.

use std::sync::Arc;

use anyhow::{bail, Result};
use serde_json::json;

use crate::fixtures::{accept_contract, generated_ts, lock_cycle};
use crate::measure::{fmt_duration, measure, measure_fresh, ping_beside, MakeOp};
use crate::net::{ping_body, request};
use crate::Bench;

/// `ping` at 1 and 16 connections.
pub(crate) async fn ping(b: &mut Bench) -> Result<()> {
    let socket = b.socket.clone();
    let pid = b.pid;
    for concurrency in [1, 16] {
        let ping: MakeOp = Arc::new(|_, _| vec![ping_body()]);
        let m = measure(&socket, pid, concurrency, b.ping_ops, ping).await?;
        b.report.row("ping", concurrency, &m);
    }
    // What every hook and CLI process costs the daemon: a connection for one request, beside
    // the floor server's cost for the same.
    let floor_socket = b.floor.socket.clone();
    let floor_pid = Some(b.floor.pid());
    let ops = crate::fresh_ops(b.ping_ops);
    let mut ratios = Vec::new();
    for concurrency in [1, 16] {
        let floor = measure_fresh(&floor_socket, floor_pid, concurrency, ops).await?;
        b.report.row(
            "floor: hyper ping, a new connection per request",
            concurrency,
            &floor,
        );
        let daemon = measure_fresh(&socket, pid, concurrency, ops).await?;
        b.report
            .row("ping, a new connection per request", concurrency, &daemon);
        if let (Some(daemon), Some(floor)) = (daemon.cpu_per_op(), floor.cpu_per_op()) {
            ratios.push(format!(
                "{concurrency} at a time: daemon {} vs floor {} = {:.2}×",
                fmt_duration(daemon),
                fmt_duration(floor),
                daemon.as_secs_f64() / floor.as_secs_f64().max(1e-9)
            ));
        }
    }
    println!(
        "| server CPU per ping on a fresh connection (target ≤ 1.3× the floor's): {} | | | | | | | |",
        ratios.join(" | ")
    );
    Ok(())
}

/// `register` at 1 and 16 connections.
pub(crate) async fn register(b: &mut Bench) -> Result<()> {
    let socket = b.socket.clone();
    let pid = b.pid;
    for concurrency in [1, 16] {
        let make: MakeOp = Arc::new(move |w, i| {
            vec![request(
                "register",
                &json!({"name": format!("agent {w}"), "sessionId": format!("reg-{w}-{}", i % 50)}),
            )]
        });
        let m = measure(&socket, pid, concurrency, b.scale(10_000, 2_000), make).await?;
        b.report.row("register", concurrency, &m);
    }
    Ok(())
}

/// Lock cycles at 1 and 16 connections, and 16 sessions contending for one symbol.
pub(crate) async fn locks(b: &mut Bench) -> Result<()> {
    let socket = b.socket.clone();
    let pid = b.pid;
    for concurrency in [1, 16] {
        let make: MakeOp = Arc::new(move |w, i| {
            let symbol = format!("src/cycle_{w}.ts:f{}", i % 100);
            let session = format!("cyc-{concurrency}-{w}");
            lock_cycle(&symbol, &session)
        });
        let m = measure(&socket, pid, concurrency, b.scale(10_000, 2_000), make).await?;
        b.report
            .row("lock.acquire+release cycle (2 requests)", concurrency, &m);
    }
    {
        // 16 sessions fight over one symbol; the winner releases.
        let make: MakeOp = Arc::new(move |w, i| {
            let session = format!("fight-{w}");
            let symbol = format!("src/hot.ts:f{}", i / 4);
            vec![request(
                "lock.acquire",
                &json!({"symbolPath": symbol, "sessionId": session, "ttlMs": 60_000}),
            )]
        });
        let m = measure(&socket, pid, 16, b.scale(20_000, 4_000), make).await?;
        b.report.row("lock.acquire contention (16 sessions, 1 symbol per 4 rounds; LOCK_CONFLICT counted as errors)", 16, &m);
    }
    Ok(())
}

/// `intent.declare` with 100 / 1,000 / 10,000 unrelated active intents; queries at 10,000 rows.
pub(crate) async fn intents(b: &mut Bench) -> Result<()> {
    let socket = b.socket.clone();
    let pid = b.pid;
    let quick = b.quick;
    // intent.declare with 100 / 1,000 / 10,000 unrelated active intents.
    let levels: Vec<usize> = if quick {
        vec![100, 1_000]
    } else {
        vec![100, 1_000, 10_000]
    };
    let mut populated = 0usize;
    for level in levels {
        while populated < level {
            let declared = b.setup
            .call(
                "intent.declare",
                json!({"sessionId": format!("pop-{}", populated % 7), "description": "background work", "files": [format!("pop/f{populated}.ts")], "symbols": ["x"]}),
            )
            .await?;
            let id = declared["intentId"].as_str().unwrap_or_default().to_owned();
            b.setup
            .call("intent.update", json!({"intentId": id, "sessionId": format!("pop-{}", populated % 7), "status": "active"}))
            .await?;
            populated += 1;
        }
        for concurrency in [1, 16] {
            let make: MakeOp = Arc::new(move |w, i| {
                vec![request(
                    "intent.declare",
                    &json!({"sessionId": format!("decl-{w}"), "description": "measured", "files": [format!("bench/l{level}_c{concurrency}_w{w}_{i}.ts")], "symbols": ["run"]}),
                )]
            });
            let m = measure(&socket, pid, concurrency, b.scale(2_000, 400), make).await?;
            b.report.row(
                &format!("intent.declare, {level} active intents"),
                concurrency,
                &m,
            );
        }
    }

    // Queries at 10,000 rows (intents as populated; 10,000 locks).
    let rows = populated;
    for i in 0..rows {
        b.setup
        .call("lock.acquire", json!({"symbolPath": format!("pop/f{i}.ts:x"), "sessionId": format!("pop-{}", i % 7), "ttlMs": 3_600_000}))
        .await?;
    }
    for concurrency in [1, 16] {
        let make: MakeOp = Arc::new(move |_, i| {
            vec![request(
                "intent.query",
                &json!({"file": format!("pop/f{}.ts", i % rows)}),
            )]
        });
        let m = measure(&socket, pid, concurrency, b.scale(4_000, 1_000), make).await?;
        b.report.row(
            &format!("intent.query by file ({rows} intents)"),
            concurrency,
            &m,
        );
        let make: MakeOp = Arc::new(move |_, i| {
            vec![request(
                "lock.query",
                &json!({"sessionId": format!("pop-{}", i % 7)}),
            )]
        });
        let m = measure(&socket, pid, concurrency, b.scale(200, 50), make).await?;
        b.report.row(
            &format!(
                "lock.query by session ({rows} locks, ~{} rows returned)",
                rows / 7
            ),
            concurrency,
            &m,
        );
        let make: MakeOp = Arc::new(move |_, _| vec![request("intent.query", &json!({}))]);
        let m = measure(&socket, pid, concurrency, b.scale(64, 16), make).await?;
        b.report.row(
            &format!("intent.query all ({rows}+ rows returned)"),
            concurrency,
            &m,
        );
    }
    Ok(())
}

/// Contracts on the generated files of each size: propose, check (cached and new content), and lock cycles on the unchanged file.
pub(crate) async fn contracts(b: &mut Bench) -> Result<()> {
    let socket = b.socket.clone();
    let pid = b.pid;
    // Contracts on generated files of each size.
    for (label, rel, text, functions) in &b.generated {
        let rel = rel.clone();
        let functions = *functions;
        let middle = functions / 2;
        for concurrency in [1, 16] {
            let rel = rel.clone();
            let make: MakeOp = Arc::new(move |w, _| {
                vec![request(
                    "contract.propose",
                    &json!({"sessionId": format!("prop-{w}"), "symbolPath": format!("{rel}:fn_{middle}")}),
                )]
            });
            let m = measure(&socket, pid, concurrency, b.scale(400, 64), make).await?;
            b.report.row(
                &format!("contract.propose on {label} file"),
                concurrency,
                &m,
            );
        }
        // Accept up to 100 contracts on this file, then check it.
        let contracts = 100.min(functions);
        for k in 0..contracts {
            let symbol = format!("{rel}:fn_{}", k * functions / contracts);
            accept_contract(&mut b.setup, &symbol).await?;
        }
        let same = Arc::new(request(
            "check-contracts",
            &json!({"files": [{"path": rel, "content": text}]}),
        ));
        for concurrency in [1, 16] {
            let same = Arc::clone(&same);
            let make: MakeOp = Arc::new(move |_, _| vec![same.as_ref().clone()]);
            let m = measure(&socket, pid, concurrency, b.scale(200, 32), make).await?;
            b.report.row(
                &format!("check-contracts {label}, {contracts} contracts, content = working copy"),
                concurrency,
                &m,
            );
        }
        {
            let rel = rel.clone();
            let text = text.clone();
            let make: MakeOp = Arc::new(move |w, i| {
                // A fresh comment each time: new content, so a real parse.
                let content = format!("{text}// edit {w} {i}\n");
                vec![request(
                    "check-contracts",
                    &json!({"files": [{"path": rel, "content": content}]}),
                )]
            });
            let m = measure(&socket, pid, 1, b.scale(40, 8), make).await?;
            b.report.row(
                &format!("check-contracts {label}, {contracts} contracts, new content (parse)"),
                1,
                &m,
            );
        }
        {
            let rel = rel.clone();
            let make: MakeOp = Arc::new(move |w, i| {
                let symbol = format!("{rel}:fn_{}", (w * 7 + i) % functions.max(1));
                let session = format!("big-{w}");
                lock_cycle(&symbol, &session)
            });
            let m = measure(&socket, pid, 1, b.scale(400, 64), make).await?;
            b.report.row(
                &format!("lock.acquire+release on a symbol of the unchanged {label} file"),
                1,
                &m,
            );
        }
    }
    Ok(())
}

/// Parsing never blocks other clients: ping on one connection while another hammers the 169 KB file (acquire+release on it unchanged; check-contracts with new content each time, so a real parse per call).
pub(crate) async fn isolation(b: &mut Bench) -> Result<()> {
    let socket = b.socket.clone();
    let pid = b.pid;
    let (label, rel, text, functions) = &b.generated[1];
    let functions = *functions;
    // One accepted contract on the file, so that check-contracts must parse the content.
    accept_contract(&mut b.setup, &format!("{rel}:fn_1")).await?;
    let hammer_rel = rel.clone();
    let hammer_locks: MakeOp = Arc::new(move |_, i| {
        let symbol = format!("{hammer_rel}:fn_{}", i % functions.max(1));
        lock_cycle(&symbol, "hammer")
    });
    let hammer_rel = rel.clone();
    let hammer_text = text.clone();
    let hammer_parse: MakeOp = Arc::new(move |_, i| {
        let content = format!("{hammer_text}// hammer {i}\n");
        vec![request(
            "check-contracts",
            &json!({"files": [{"path": hammer_rel, "content": content}]}),
        )]
    });
    for (what, hammer) in [
        (
            format!("lock.acquire+release on the {label} file"),
            hammer_locks,
        ),
        (
            format!("check-contracts parsing new {label} content"),
            hammer_parse,
        ),
    ] {
        let (m, hammered) = ping_beside(&socket, pid, b.scale(40_000, 10_000), hammer).await?;
        b.report.row(
            &format!("ping while another connection loops {what} ({hammered} calls meanwhile)"),
            1,
            &m,
        );
    }
    Ok(())
}

/// 200 small files with 1,000 accepted contracts, checked in one call (full runs only).
pub(crate) async fn small(b: &mut Bench) -> Result<()> {
    let socket = b.socket.clone();
    let pid = b.pid;
    let mut files = Vec::new();
    for f in 0..200 {
        // About 1.2 KB: six functions, five of them under contract.
        let (text, functions) = generated_ts(1_100);
        if functions < 5 {
            bail!("a small file has only {functions} functions");
        }
        let rel = format!("small/s{f}.ts");
        std::fs::create_dir_all(b.root.join("small"))?;
        std::fs::write(b.root.join(&rel), &text)?;
        for k in 0..5 {
            accept_contract(&mut b.setup, &format!("{rel}:fn_{k}")).await?;
        }
        files.push(json!({"path": rel, "content": text}));
    }
    let body = Arc::new(request("check-contracts", &json!({"files": files})));
    let make: MakeOp = Arc::new(move |_, _| vec![body.as_ref().clone()]);
    let m = measure(&socket, pid, 1, 50, make).await?;
    b.report
        .row("check-contracts, 200 small files, 1,000 contracts", 1, &m);
    Ok(())
}
