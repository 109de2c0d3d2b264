//! The `mcp` section: `wit mcp` over stdio, start to `initialize` answered (median), and the
//! round trip of a warm `lock_acquire` + `lock_release` tool-call pair (p50/p99).

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::measure::{fmt_duration, percentile};

/// The first MCP frame of a session.
pub(crate) const MCP_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wit-bench","version":"1"}}}"#;

/// `wit mcp` on `root` with its stdio piped, as session `session`.
pub(crate) fn spawn_mcp(wit: &Path, root: &Path, session: &str) -> Result<tokio::process::Child> {
    tokio::process::Command::new(wit)
        .arg("mcp")
        .current_dir(root)
        .env("WIT_SESSION", session)
        .env("WIT_NO_AUTOSTART", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting wit mcp")
}

/// Writes one MCP frame and, for a request, reads its answer line.
pub(crate) async fn mcp_exchange(
    stdin: &mut tokio::process::ChildStdin,
    stdout: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    frame: &str,
    answer: bool,
) -> Result<String> {
    stdin.write_all(frame.as_bytes()).await?;
    stdin.write_all(b"\n").await?;
    stdin.flush().await?;
    if !answer {
        return Ok(String::new());
    }
    stdout
        .next_line()
        .await?
        .context("wit mcp closed stdout before answering")
}

/// `wit mcp`: process start to `initialize` answered (median of `starts` runs), and the round
/// trip of a warm `lock_acquire` + `lock_release` tool-call pair over stdio (p50/p99 of `pairs`).
pub(crate) async fn mcp_timings(
    wit: &Path,
    root: &Path,
    starts: usize,
    pairs: usize,
) -> Result<()> {
    use tokio::io::AsyncBufReadExt;
    let mut times = Vec::with_capacity(starts);
    for i in 0..starts {
        let started = Instant::now();
        let mut child = spawn_mcp(wit, root, &format!("bench-mcp-start-{i}"))?;
        let mut stdin = child.stdin.take().context("no stdin")?;
        let mut stdout =
            tokio::io::BufReader::new(child.stdout.take().context("no stdout")?).lines();
        let answer = mcp_exchange(&mut stdin, &mut stdout, MCP_INITIALIZE, true).await?;
        times.push(started.elapsed());
        if !answer.contains("\"serverInfo\"") {
            bail!("wit mcp answered initialize with {answer}");
        }
        drop(stdin);
        child.wait().await?;
    }
    times.sort();
    println!(
        "| wit mcp: start to initialize answered (median of {starts}): {} | | | | | | | | |",
        fmt_duration(times[times.len() / 2])
    );

    let mut child = spawn_mcp(wit, root, "bench-mcp")?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().context("no stdout")?).lines();
    mcp_exchange(&mut stdin, &mut stdout, MCP_INITIALIZE, true).await?;
    mcp_exchange(
        &mut stdin,
        &mut stdout,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        false,
    )
    .await?;
    let call = |id: usize, tool: &str, symbol: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": {"symbolPath": symbol}}})
        .to_string()
    };
    let warm_up = pairs / 10 + 10;
    let mut latencies = Vec::with_capacity(pairs);
    for i in 0..warm_up + pairs {
        let symbol = format!("src/mcp.ts:f{}", i % 100);
        let started = Instant::now();
        for (n, tool) in ["lock_acquire", "lock_release"].into_iter().enumerate() {
            let answer = mcp_exchange(
                &mut stdin,
                &mut stdout,
                &call(2 * i + n + 1, tool, &symbol),
                true,
            )
            .await?;
            if !answer.contains("\"isError\":false") {
                bail!("{tool} failed: {answer}");
            }
        }
        if i >= warm_up {
            latencies.push(started.elapsed());
        }
    }
    latencies.sort();
    let at = |p: f64| percentile(&latencies, p);
    println!(
        "| wit mcp: lock_acquire + lock_release tool calls over stdio (warm, {pairs} pairs): p50 {} | p99 {} | | | | | | | |",
        fmt_duration(at(0.5)),
        fmt_duration(at(0.99))
    );
    drop(stdin);
    child.wait().await?;
    Ok(())
}
