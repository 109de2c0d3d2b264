//! Running a workload over many connections and reporting it as a table row.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::net::{find, ping_body, Conn};

/// The outcome of one measured workload.
pub(crate) struct Measured {
    ops: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    cpu: Option<Duration>,
    errors: usize,
    /// The daemon's resident set right after the run.
    rss_kib: Option<u64>,
}

impl Measured {
    pub(crate) fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }
    pub(crate) fn percentile(&self, p: f64) -> Duration {
        percentile(&self.latencies, p)
    }
    /// The server's CPU time per operation, when its pid was given.
    pub(crate) fn cpu_per_op(&self) -> Option<Duration> {
        self.cpu.map(|cpu| cpu / self.ops.max(1) as u32)
    }
}

/// The `p` quantile (0..=1) of sorted samples (zero when there are none).
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

/// p50 and p99 of `samples` (sorted in place).
pub(crate) fn p50_p99(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort_unstable();
    (percentile(samples, 0.5), percentile(samples, 0.99))
}

/// Which request an operation sends: `(worker, i)` to a list of bodies sent in sequence (one
/// operation may be several requests, e.g. acquire then release).
pub(crate) type MakeOp = Arc<dyn Fn(usize, usize) -> Vec<Vec<u8>> + Send + Sync>;

/// Runs `ops` operations split over `concurrency` keep-alive connections.
pub(crate) async fn measure(
    socket: &Path,
    pid: Option<u32>,
    concurrency: usize,
    ops: usize,
    make: MakeOp,
) -> Result<Measured> {
    let per_worker = ops.div_ceil(concurrency);
    let mut conns = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        conns.push(Conn::open(socket).await?);
    }
    let cpu_before = pid.map(cpu_time).transpose()?;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (worker, mut conn) in conns.into_iter().enumerate() {
        let make = Arc::clone(&make);
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(per_worker);
            let mut errors = 0usize;
            for i in 0..per_worker {
                let bodies = make(worker, i);
                let start = Instant::now();
                for body in bodies {
                    let answer = conn.post(&body).await?;
                    if find(&answer, b"\"error\":").is_some() {
                        errors += 1;
                    }
                }
                latencies.push(start.elapsed());
            }
            anyhow::Ok((latencies, errors))
        });
    }
    let mut latencies = Vec::with_capacity(per_worker * concurrency);
    let mut errors = 0;
    while let Some(joined) = tasks.join_next().await {
        let (mut l, e) = joined??;
        latencies.append(&mut l);
        errors += e;
    }
    let elapsed = started.elapsed();
    let cpu = match (pid, cpu_before) {
        (Some(pid), Some(before)) => Some(cpu_time(pid)?.saturating_sub(before)),
        _ => None,
    };
    latencies.sort_unstable();
    Ok(Measured {
        ops: latencies.len(),
        elapsed,
        latencies,
        cpu,
        errors,
        rss_kib: pid.and_then(rss_kib),
    })
}

/// Runs `ops` pings, each on a connection of its own (what every hook and CLI process does:
/// connect, one request, close), over `concurrency` workers; the latency includes the connect.
pub(crate) async fn measure_fresh(
    socket: &Path,
    pid: Option<u32>,
    concurrency: usize,
    ops: usize,
) -> Result<Measured> {
    let per_worker = ops.div_ceil(concurrency);
    let body = ping_body();
    let cpu_before = pid.map(cpu_time_of_threads).transpose()?;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let socket = socket.to_owned();
        let body = body.clone();
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(per_worker);
            let mut errors = 0usize;
            for _ in 0..per_worker {
                let start = Instant::now();
                let mut conn = Conn::open(&socket).await?;
                let answer = conn.post(&body).await?;
                drop(conn);
                latencies.push(start.elapsed());
                if find(&answer, b"\"pong\"").is_none() {
                    errors += 1;
                }
            }
            anyhow::Ok((latencies, errors))
        });
    }
    let mut latencies = Vec::with_capacity(per_worker * concurrency);
    let mut errors = 0;
    while let Some(joined) = tasks.join_next().await {
        let (mut l, e) = joined??;
        latencies.append(&mut l);
        errors += e;
    }
    let elapsed = started.elapsed();
    // The last connections' ends are still being handled: give the server a moment before
    // reading its CPU time.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let cpu = match (pid, cpu_before) {
        (Some(pid), Some(before)) => Some(cpu_time_of_threads(pid)?.saturating_sub(before)),
        _ => None,
    };
    latencies.sort_unstable();
    Ok(Measured {
        ops: latencies.len(),
        elapsed,
        latencies,
        cpu,
        errors,
        rss_kib: pid.and_then(rss_kib),
    })
}

/// CPU time of a process's live threads to the nanosecond (`schedstat`).
pub(crate) fn cpu_time_of_threads(pid: u32) -> Result<Duration> {
    Ok(wit::platform::measure::cpu_time_of_threads(pid)?)
}

/// utime + stime of a process.
pub(crate) fn cpu_time(pid: u32) -> Result<Duration> {
    Ok(wit::platform::measure::cpu_time(pid)?)
}

/// CPU time (user + system) of process `pid` and of its children it has waited for (the git
/// processes a daemon runs, say).
pub(crate) fn cpu_time_with_children(pid: u32) -> Result<Duration> {
    Ok(wit::platform::measure::cpu_time_with_children(pid)?)
}

/// Resident set size of a process, in KiB.
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    wit::platform::measure::status_field(pid, "VmRSS:")
}

/// Prints one table row.
pub(crate) struct Report {
    /// The floor server's ping rate at 16 connections (the ratio column's denominator).
    pub(crate) floor_ping: Option<f64>,
}

impl Report {
    pub(crate) fn header(&self) {
        println!(
            "| benchmark | conc | ops | ops/s | p50 | p99 | daemon CPU/op | ops/s vs floor ping | daemon RSS after |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    }
    pub(crate) fn row(&self, name: &str, concurrency: usize, m: &Measured) {
        let cpu = m
            .cpu
            .map(|c| format!("{:.1} µs", c.as_secs_f64() * 1e6 / m.ops as f64))
            .unwrap_or_else(|| "-".into());
        let ratio = self
            .floor_ping
            .map(|f| format!("{:.3}", m.ops_per_sec() / f))
            .unwrap_or_else(|| "1".into());
        let errors = if m.errors > 0 {
            format!(" ({} errors)", m.errors)
        } else {
            String::new()
        };
        let rss = m
            .rss_kib
            .map(|kib| format!("{:.1} MB", kib as f64 / 1024.0))
            .unwrap_or_else(|| "-".into());
        println!(
            "| {name}{errors} | {concurrency} | {} | {:.0} | {} | {} | {cpu} | {ratio} | {rss} |",
            m.ops,
            m.ops_per_sec(),
            fmt_duration(m.percentile(0.5)),
            fmt_duration(m.percentile(0.99)),
        );
    }
}

pub(crate) fn fmt_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

/// Measures `pings` pings on one connection while another connection sends `hammer`'s
/// requests in a loop; returns the pings' figures and how many hammer operations ran meanwhile.
pub(crate) async fn ping_beside(
    socket: &Path,
    pid: Option<u32>,
    pings: usize,
    hammer: MakeOp,
) -> Result<(Measured, usize)> {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut conn = Conn::open(socket).await?;
    let hammering = tokio::spawn({
        let stop = Arc::clone(&stop);
        async move {
            let mut done = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for body in hammer(0, done) {
                    conn.post(&body).await?;
                }
                done += 1;
            }
            anyhow::Ok(done)
        }
    });
    // Let the hammer get going before measuring.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ping = Arc::new(|_: usize, _: usize| vec![ping_body()]) as MakeOp;
    let measured = measure(socket, pid, 1, pings, ping).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let hammered = hammering.await??;
    Ok((measured?, hammered))
}
