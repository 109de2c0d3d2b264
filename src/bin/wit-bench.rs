//! `wit-bench`: end-to-end benchmarks of a real `wit` daemon over its Unix socket, next to the
//! machine's floor (a minimal hyper server answering the same ping, one SQLite WAL commit, one
//! tree-sitter parse).
//!
//! ```text
//! cargo run --release --bin wit-bench -- [--quick] [--wit PATH]
//! ```
//!
//! It creates a temporary repository with generated TypeScript files (16 KB, 169 KB, 1.7 MB),
//! starts `wit daemon run` on it (the `wit` binary next to this one, or `--wit`), and drives it
//! with keep-alive HTTP/1.1 connections at 1 and 16 concurrent clients. Each line reports
//! ops/s, p50/p99 latency, the daemon's CPU time per operation (from `/proc/<pid>/stat`) and
//! the ratio of ops/s to the floor's ping. `--quick` runs fewer operations and skips the
//! 10,000-intent and 1.7 MB cases. The `mcp` section times `wit mcp` over stdio: start to
//! `initialize` answered, and a warm `lock_acquire` + `lock_release` tool-call pair.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// Parsed command line.
struct Options {
    quick: bool,
    wit: PathBuf,
    /// Sections to run (`--only`); empty runs them all.
    only: Vec<String>,
}

impl Options {
    /// Whether the section `name` runs.
    fn wants(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name)
    }
}

/// The sections `--only` can pick.
const SECTIONS: &[&str] = &[
    "ping",
    "register",
    "locks",
    "intents",
    "contracts",
    "isolation",
    "small",
    "cli",
    "mcp",
];

fn options() -> Result<Options> {
    let mut quick = false;
    let mut only = Vec::new();
    let mut wit = std::env::current_exe()?
        .parent()
        .context("the bench binary has no directory")?
        .join("wit");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--wit" => wit = PathBuf::from(args.next().context("--wit needs a path")?),
            "--only" => {
                for name in args
                    .next()
                    .context("--only needs a section list")?
                    .split(',')
                {
                    if !SECTIONS.contains(&name) {
                        bail!(
                            "unknown section {name:?}; sections: {}",
                            SECTIONS.join(", ")
                        );
                    }
                    only.push(name.to_owned());
                }
            }
            "-h" | "--help" => {
                println!(
                    "usage: wit-bench [--quick] [--wit PATH] [--only SECTION[,SECTION...]]\nsections: {}",
                    SECTIONS.join(", ")
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    if !wit.exists() {
        bail!(
            "{} not found: build it first (cargo build --release --bin wit) or pass --wit",
            wit.display()
        );
    }
    Ok(Options { quick, wit, only })
}

/// One keep-alive HTTP/1.1 connection to a Unix socket, posting to `/rpc`.
///
/// The daemon closes a connection that stays idle past its header timeout (30 s), so a
/// connection left unused for a while (the set-up connection during long measurements) is
/// reopened before its next request.
struct Conn {
    socket: PathBuf,
    stream: UnixStream,
    buffer: Vec<u8>,
    last_used: Instant,
}

/// How long a connection may sit idle before [`Conn::post`] reopens it.
const IDLE_REOPEN: Duration = Duration::from_secs(5);

impl Conn {
    async fn open(socket: &Path) -> Result<Self> {
        let stream = UnixStream::connect(socket)
            .await
            .with_context(|| format!("connect {}", socket.display()))?;
        Ok(Self {
            socket: socket.to_owned(),
            stream,
            buffer: Vec::with_capacity(64 * 1024),
            last_used: Instant::now(),
        })
    }

    /// Posts `body`, returns the response body.
    async fn post(&mut self, body: &[u8]) -> Result<Vec<u8>> {
        let head = format!(
            "POST /rpc HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        let mut request = Vec::with_capacity(head.len() + body.len());
        request.extend_from_slice(head.as_bytes());
        request.extend_from_slice(body);
        if self.last_used.elapsed() > IDLE_REOPEN {
            self.stream = UnixStream::connect(&self.socket)
                .await
                .with_context(|| format!("reconnect {}", self.socket.display()))?;
        }
        self.last_used = Instant::now();
        self.stream.write_all(&request).await?;
        self.buffer.clear();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buffer[..end])?;
                let length = head
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())
                            .flatten()
                    })
                    .context("response without content-length")?;
                let total = end + 4 + length;
                while self.buffer.len() < total {
                    let n = self.stream.read(&mut chunk).await?;
                    if n == 0 {
                        bail!("connection closed mid-body");
                    }
                    self.buffer.extend_from_slice(&chunk[..n]);
                }
                return Ok(self.buffer[end + 4..total].to_vec());
            }
            let n = self.stream.read(&mut chunk).await?;
            if n == 0 {
                bail!("connection closed before an answer");
            }
            self.buffer.extend_from_slice(&chunk[..n]);
        }
    }

    /// Calls `method` and returns its `result`, or an error carrying the JSON-RPC error.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let body = request(method, &params);
        let answer = self.post(&body).await?;
        let value: Value = serde_json::from_slice(&answer)?;
        if let Some(error) = value.get("error") {
            bail!("{method}: {error}");
        }
        Ok(value["result"].clone())
    }
}

fn request(method: &str, params: &Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "witVersion": "1", "id": 1, "method": method, "params": params}),
    )
    .unwrap_or_default()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The outcome of one measured workload.
struct Measured {
    ops: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    cpu: Option<Duration>,
    errors: usize,
    /// The daemon's resident set right after the run.
    rss_kib: Option<u64>,
}

impl Measured {
    fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }
    fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let index = ((self.latencies.len() as f64 - 1.0) * p).round() as usize;
        self.latencies[index]
    }
}

/// Which request an operation sends: `(worker, i)` to a list of bodies sent in sequence (one
/// operation may be several requests, e.g. acquire then release).
type MakeOp = Arc<dyn Fn(usize, usize) -> Vec<Vec<u8>> + Send + Sync>;

/// Runs `ops` operations split over `concurrency` keep-alive connections.
async fn measure(
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

/// utime + stime of a process.
fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat.rsplit_once(')').context("odd /proc stat")?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `after_name` starts at field 3.
    let utime: u64 = fields.get(11).context("utime")?.parse()?;
    let stime: u64 = fields.get(12).context("stime")?.parse()?;
    Ok(Duration::from_millis(
        (utime + stime) * 1000 / clock_ticks(),
    ))
}

fn clock_ticks() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100)
    })
}

/// Resident set size of a process, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Prints one table row.
struct Report {
    floor_ping: Option<f64>,
}

impl Report {
    fn header(&self) {
        println!(
            "| benchmark | conc | ops | ops/s | p50 | p99 | daemon CPU/op | ops/s vs floor ping | daemon RSS after |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    }
    fn row(&self, name: &str, concurrency: usize, m: &Measured) {
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

fn fmt_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

/// A generated TypeScript file of about `target` bytes: functions calling their neighbour.
fn generated_ts(target: usize) -> (String, usize) {
    let mut out = String::with_capacity(target + 1024);
    let mut n = 0;
    while out.len() < target {
        out.push_str(&format!(
            "/** Function {n}. */\nexport function fn_{n}(a: number, b: string = \"x\"): number {{\n  const c = a + b.length;\n  if (c > 10) {{\n    return fn_{next}(c - 1, b);\n  }}\n  return c * {n};\n}}\n\n",
            next = n + 1
        ));
        n += 1;
    }
    (out, n)
}

/// A scratch directory under /tmp (short: socket paths must stay under 108 bytes), removed on
/// drop.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new() -> Result<Self> {
        let path = PathBuf::from(format!("/tmp/witb-{}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(Self(path))
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A daemon child process, killed on drop.
struct Daemon {
    child: Child,
    socket: PathBuf,
}

impl Daemon {
    async fn start(wit: &Path, root: &Path) -> Result<(Self, Duration)> {
        let started = Instant::now();
        let child = Command::new(wit)
            .args(["daemon", "run", "--log-level", "warn", "--repo"])
            .arg(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("spawn {}", wit.display()))?;
        let daemon = Daemon {
            child,
            socket: root.join(".wit/daemon.sock"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(mut conn) = Conn::open(&daemon.socket).await {
                if conn.call("ping", json!({})).await.is_ok() {
                    return Ok((daemon, started.elapsed()));
                }
            }
            if Instant::now() > deadline {
                bail!("the daemon did not answer ping within 20 s");
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    }
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The floor: a minimal hyper HTTP/1 server answering the ping body over a Unix socket, on
/// its own two-thread runtime.
fn start_floor_server(socket: PathBuf) -> Result<()> {
    use http_body_util::Full;
    use hyper::service::service_fn;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let listener = {
        let _guard = runtime.enter();
        tokio::net::UnixListener::bind(&socket)?
    };
    std::thread::spawn(move || {
        runtime.block_on(async move {
            const PONG: &[u8] = br#"{"jsonrpc":"2.0","witVersion":"1","id":1,"result":"pong"}"#;
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let service = service_fn(
                        |request: hyper::Request<hyper::body::Incoming>| async move {
                            use http_body_util::BodyExt;
                            let _ = request.into_body().collect().await;
                            hyper::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(bytes::Bytes::from_static(PONG)))
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    });
    Ok(())
}

/// Mean time of one SQLite WAL commit (synchronous=NORMAL, as the daemon opens its store).
fn sqlite_commit_floor(dir: &Path, commits: usize) -> Result<Duration> {
    let connection = rusqlite::Connection::open(dir.join("floor.db"))?;
    connection.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER);",
    )?;
    let started = Instant::now();
    for i in 0..commits {
        connection.execute(
            "INSERT OR REPLACE INTO t (k, v) VALUES (?1, ?2)",
            rusqlite::params![format!("k{}", i % 64), i as i64],
        )?;
    }
    Ok(started.elapsed() / commits as u32)
}

fn ping_body() -> Vec<u8> {
    request("ping", &json!({}))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let options = options()?;
    let quick = options.quick;
    let scale = |full: usize, small: usize| if quick { small } else { full };
    let work = WorkDir::new()?;
    let root = work.path().join("r");
    std::fs::create_dir_all(root.join("src"))?;
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&root)
        .status()?;
    if !status.success() {
        bail!("git init failed");
    }
    let sizes: Vec<(&str, usize)> = if quick {
        vec![("16k", 16 * 1024), ("169k", 169 * 1024)]
    } else {
        vec![
            ("16k", 16 * 1024),
            ("169k", 169 * 1024),
            ("1.7m", 1_700 * 1024),
        ]
    };
    let mut generated = Vec::new();
    for (label, size) in &sizes {
        let (text, functions) = generated_ts(*size);
        let rel = format!("src/gen_{}.ts", label.replace('.', "_"));
        std::fs::write(root.join(&rel), &text)?;
        generated.push((label.to_string(), rel, text, functions));
    }

    println!("# wit-bench ({})", if quick { "quick" } else { "full" });
    println!();
    println!(
        "machine: {} cores, {}; wit: {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(
                |c| c.lines().find(|l| l.starts_with("model name")).map(|l| l
                    .split(':')
                    .nth(1)
                    .unwrap_or("")
                    .trim()
                    .to_owned())
            )
            .unwrap_or_default(),
        options.wit.display()
    );
    println!();

    // Floors.
    let floor_socket = work.path().join("floor.sock");
    start_floor_server(floor_socket.clone())?;
    let ping = Arc::new(|_: usize, _: usize| vec![ping_body()]) as MakeOp;
    let floor = Report { floor_ping: None };
    let sqlite = tokio::task::spawn_blocking({
        let dir = work.path().to_owned();
        move || sqlite_commit_floor(&dir, 2000)
    })
    .await??;
    println!(
        "floor: one SQLite WAL commit (synchronous=NORMAL): {:.1} µs",
        sqlite.as_secs_f64() * 1e6
    );
    let big = generated.last().context("no generated file")?;
    let parse_started = Instant::now();
    let parsed = wit::analysis::analyze(wit::analysis::Language::TypeScript, &big.2);
    let parse_time = parse_started.elapsed();
    println!(
        "floor: one tree-sitter analysis of the {} file ({} bytes, {} symbols, the analysis holds ~{:.1} MB): {}",
        big.0,
        big.2.len(),
        parsed.symbols.len(),
        parsed.approx_heap_bytes() as f64 / 1e6,
        fmt_duration(parse_time)
    );
    println!();
    floor.header();
    let ping_ops = scale(40_000, 5_000);
    let mut floor_16 = 0.0;
    for concurrency in [1, 16] {
        let m = measure(
            &floor_socket,
            None,
            concurrency,
            ping_ops,
            Arc::clone(&ping),
        )
        .await?;
        floor.row("floor: hyper ping", concurrency, &m);
        if concurrency == 16 {
            floor_16 = m.ops_per_sec();
        }
    }
    let report = Report {
        floor_ping: Some(floor_16),
    };

    // Start-up on an empty repository.
    let empty = work.path().join("e");
    std::fs::create_dir_all(&empty)?;
    {
        let (daemon, startup) = Daemon::start(&options.wit, &empty).await?;
        println!(
            "| start-up to first pong (empty repo): {} | RSS {} KiB | | | | | | | |",
            fmt_duration(startup),
            rss_kib(daemon.pid()).unwrap_or(0)
        );
    }

    let (daemon, startup) = Daemon::start(&options.wit, &root).await?;
    let pid = Some(daemon.pid());
    let socket = daemon.socket.clone();
    println!(
        "| start-up to first pong (bench repo): {} | RSS {} KiB | | | | | | | |",
        fmt_duration(startup),
        rss_kib(daemon.pid()).unwrap_or(0)
    );
    let mut setup = Conn::open(&socket).await?;
    // The index builds in the background after start-up; the first acquire that needs caller
    // warnings waits for it. Measure from a settled daemon, and report how long that took.
    let settle_started = Instant::now();
    let warm_symbol = format!("{}:fn_0", big.1);
    setup
        .call(
            "lock.acquire",
            json!({"symbolPath": warm_symbol, "sessionId": "warm-up", "ttlMs": 1_000}),
        )
        .await?;
    setup
        .call(
            "lock.release",
            json!({"symbolPath": warm_symbol, "sessionId": "warm-up"}),
        )
        .await?;
    println!(
        "| background index of the bench repo complete (first acquire answered) after: {} more | | | | | | | | |",
        fmt_duration(settle_started.elapsed())
    );

    if options.wants("ping") {
        for concurrency in [1, 16] {
            let m = measure(&socket, pid, concurrency, ping_ops, Arc::clone(&ping)).await?;
            report.row("ping", concurrency, &m);
        }
    }
    if options.wants("register") {
        for concurrency in [1, 16] {
            let make: MakeOp = Arc::new(move |w, i| {
                vec![request(
                    "register",
                    &json!({"name": format!("agent {w}"), "sessionId": format!("reg-{w}-{}", i % 50)}),
                )]
            });
            let m = measure(&socket, pid, concurrency, scale(10_000, 2_000), make).await?;
            report.row("register", concurrency, &m);
        }
    }
    if options.wants("locks") {
        for concurrency in [1, 16] {
            let make: MakeOp = Arc::new(move |w, i| {
                let symbol = format!("src/cycle_{w}.ts:f{}", i % 100);
                let session = format!("cyc-{concurrency}-{w}");
                lock_cycle(&symbol, &session)
            });
            let m = measure(&socket, pid, concurrency, scale(10_000, 2_000), make).await?;
            report.row("lock.acquire+release cycle (2 requests)", concurrency, &m);
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
            let m = measure(&socket, pid, 16, scale(20_000, 4_000), make).await?;
            report.row("lock.acquire contention (16 sessions, 1 symbol per 4 rounds; LOCK_CONFLICT counted as errors)", 16, &m);
        }
    }
    if options.wants("intents") {
        // intent.declare with 100 / 1,000 / 10,000 unrelated active intents.
        let levels: Vec<usize> = if quick {
            vec![100, 1_000]
        } else {
            vec![100, 1_000, 10_000]
        };
        let mut populated = 0usize;
        for level in levels {
            while populated < level {
                let declared = setup
                .call(
                    "intent.declare",
                    json!({"sessionId": format!("pop-{}", populated % 7), "description": "background work", "files": [format!("pop/f{populated}.ts")], "symbols": ["x"]}),
                )
                .await?;
                let id = declared["intentId"].as_str().unwrap_or_default().to_owned();
                setup
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
                let m = measure(&socket, pid, concurrency, scale(2_000, 400), make).await?;
                report.row(
                    &format!("intent.declare, {level} active intents"),
                    concurrency,
                    &m,
                );
            }
        }

        // Queries at 10,000 rows (intents as populated; 10,000 locks).
        let rows = populated;
        for i in 0..rows {
            setup
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
            let m = measure(&socket, pid, concurrency, scale(4_000, 1_000), make).await?;
            report.row(
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
            let m = measure(&socket, pid, concurrency, scale(200, 50), make).await?;
            report.row(
                &format!(
                    "lock.query by session ({rows} locks, ~{} rows returned)",
                    rows / 7
                ),
                concurrency,
                &m,
            );
            let make: MakeOp = Arc::new(move |_, _| vec![request("intent.query", &json!({}))]);
            let m = measure(&socket, pid, concurrency, scale(64, 16), make).await?;
            report.row(
                &format!("intent.query all ({rows}+ rows returned)"),
                concurrency,
                &m,
            );
        }
    }
    if options.wants("contracts") {
        // Contracts on generated files of each size.
        for (label, rel, text, functions) in &generated {
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
                let m = measure(&socket, pid, concurrency, scale(400, 64), make).await?;
                report.row(
                    &format!("contract.propose on {label} file"),
                    concurrency,
                    &m,
                );
            }
            // Accept up to 100 contracts on this file, then check it.
            let contracts = 100.min(functions);
            for k in 0..contracts {
                let symbol = format!("{rel}:fn_{}", k * functions / contracts);
                accept_contract(&mut setup, &symbol).await?;
            }
            let same = Arc::new(request(
                "check-contracts",
                &json!({"files": [{"path": rel, "content": text}]}),
            ));
            for concurrency in [1, 16] {
                let same = Arc::clone(&same);
                let make: MakeOp = Arc::new(move |_, _| vec![same.as_ref().clone()]);
                let m = measure(&socket, pid, concurrency, scale(200, 32), make).await?;
                report.row(
                    &format!(
                        "check-contracts {label}, {contracts} contracts, content = working copy"
                    ),
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
                let m = measure(&socket, pid, 1, scale(40, 8), make).await?;
                report.row(
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
                let m = measure(&socket, pid, 1, scale(400, 64), make).await?;
                report.row(
                    &format!("lock.acquire+release on a symbol of the unchanged {label} file"),
                    1,
                    &m,
                );
            }
        }
    }
    // Parsing never blocks other clients: ping on one connection while another hammers the
    // 169 KB file (acquire+release on it unchanged; check-contracts with new content each time,
    // so a real parse per call).
    if options.wants("isolation") {
        let (label, rel, text, functions) = &generated[1];
        let functions = *functions;
        // One accepted contract on the file, so that check-contracts must parse the content.
        accept_contract(&mut setup, &format!("{rel}:fn_1")).await?;
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
            let (m, hammered) = ping_beside(&socket, pid, scale(40_000, 10_000), hammer).await?;
            report.row(
                &format!("ping while another connection loops {what} ({hammered} calls meanwhile)"),
                1,
                &m,
            );
        }
    }

    // 200 small files with 1,000 accepted contracts, checked in one call.
    if !quick && options.wants("small") {
        let mut files = Vec::new();
        for f in 0..200 {
            // About 1.2 KB: six functions, five of them under contract.
            let (text, functions) = generated_ts(1_100);
            if functions < 5 {
                bail!("a small file has only {functions} functions");
            }
            let rel = format!("small/s{f}.ts");
            std::fs::create_dir_all(root.join("small"))?;
            std::fs::write(root.join(&rel), &text)?;
            for k in 0..5 {
                accept_contract(&mut setup, &format!("{rel}:fn_{k}")).await?;
            }
            files.push(json!({"path": rel, "content": text}));
        }
        let body = Arc::new(request("check-contracts", &json!({"files": files})));
        let make: MakeOp = Arc::new(move |_, _| vec![body.as_ref().clone()]);
        let m = measure(&socket, pid, 1, 50, make).await?;
        report.row("check-contracts, 200 small files, 1,000 contracts", 1, &m);
    }

    println!();
    let wit = options.wit.clone();
    let cli_root = root.clone();
    let runs = scale(60, 15);
    if options.wants("cli") {
        tokio::task::spawn_blocking(move || cli_and_hook_timings(&wit, &cli_root, runs)).await??;
    }
    if options.wants("mcp") {
        mcp_timings(&options.wit, &root, scale(30, 10), scale(2_000, 300)).await?;
    }

    println!();
    println!(
        "daemon RSS at the end: {} KiB; daemon CPU total: {:.2} s",
        rss_kib(daemon.pid()).unwrap_or(0),
        cpu_time(daemon.pid())?.as_secs_f64()
    );
    Ok(())
}

/// An acquire (60 s) and a release of `symbol` by `session`.
fn lock_cycle(symbol: &str, session: &str) -> Vec<Vec<u8>> {
    vec![
        request(
            "lock.acquire",
            &json!({"symbolPath": symbol, "sessionId": session, "ttlMs": 60_000}),
        ),
        request(
            "lock.release",
            &json!({"symbolPath": symbol, "sessionId": session}),
        ),
    ]
}

/// Proposes a contract on `symbol` as session `owner` and has `peer` accept it.
async fn accept_contract(conn: &mut Conn, symbol: &str) -> Result<()> {
    let proposed = conn
        .call(
            "contract.propose",
            json!({"sessionId": "owner", "symbolPath": symbol}),
        )
        .await?;
    let id = proposed["contractId"]
        .as_str()
        .context("contract.propose answered no contractId")?;
    conn.call(
        "contract.respond",
        json!({"contractId": id, "sessionId": "peer", "accept": true}),
    )
    .await?;
    Ok(())
}

/// Median wall time of `runs` runs of the command `make` builds afresh for each run (whatever
/// `make` does to prepare it is not timed); fails when a run exits non-zero.
/// The first MCP frame of a session.
const MCP_INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wit-bench","version":"1"}}}"#;

/// `wit mcp` on `root` with its stdio piped, as session `session`.
fn spawn_mcp(wit: &Path, root: &Path, session: &str) -> Result<tokio::process::Child> {
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
async fn mcp_exchange(
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
async fn mcp_timings(wit: &Path, root: &Path, starts: usize, pairs: usize) -> Result<()> {
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
    let at = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize];
    println!(
        "| wit mcp: lock_acquire + lock_release tool calls over stdio (warm, {pairs} pairs): p50 {} | p99 {} | | | | | | | |",
        fmt_duration(at(0.5)),
        fmt_duration(at(0.99))
    );
    drop(stdin);
    child.wait().await?;
    Ok(())
}

fn median_wall(runs: usize, mut make: impl FnMut(usize) -> Result<Command>) -> Result<Duration> {
    let mut times = Vec::with_capacity(runs);
    for i in 0..runs {
        let mut command = make(i)?;
        let started = Instant::now();
        let output = command.output()?;
        times.push(started.elapsed());
        if !output.status.success() {
            bail!(
                "{:?} failed: {}{}",
                command,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    times.sort_unstable();
    Ok(times[times.len() / 2])
}

/// One `git commit` of a one-line change to a file no contract covers.
fn commit_command(root: &Path, note: &str) -> Result<Command> {
    std::fs::write(root.join("notes.txt"), format!("{note}\n"))?;
    let status = Command::new("git")
        .args(["add", "notes.txt"])
        .current_dir(root)
        .status()?;
    if !status.success() {
        bail!("git add failed");
    }
    let mut command = Command::new("git");
    command
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(["commit", "-q", "-m", "bench"])
        .current_dir(root)
        .env("WIT_SESSION", "bench-committer");
    Ok(command)
}

/// Wall time of one CLI call against the running daemon, and of a `git commit` with and
/// without wit's hooks (no contract at stake).
fn cli_and_hook_timings(wit: &Path, root: &Path, runs: usize) -> Result<()> {
    let cli = |args: Vec<String>| {
        let mut command = Command::new(wit);
        command
            .args(&args)
            .arg("--repo")
            .arg(root)
            .env("WIT_SESSION", "bench-cli");
        command
    };
    let ping = median_wall(runs, |_| Ok(cli(vec!["call".into(), "ping".into()])))?;
    let lock = median_wall(runs, |i| {
        Ok(cli(vec![
            "lock".into(),
            format!("src/cli_{i}.ts:f"),
            "--ttl".into(),
            "10m".into(),
        ]))
    })?;
    let release = median_wall(runs, |i| {
        Ok(cli(vec!["release".into(), format!("src/cli_{i}.ts:f")]))
    })?;
    println!(
        "| CLI call, median wall of {runs} processes: `wit call ping` {} | `wit lock` {} | `wit release` {} | | | | | |",
        fmt_duration(ping),
        fmt_duration(lock),
        fmt_duration(release)
    );
    let git_floor = median_wall(runs, |i| commit_command(root, &format!("plain {i}")))?;
    let status = cli(vec!["hook".into(), "install".into()]).output()?;
    if !status.status.success() {
        bail!(
            "wit hook install failed: {}",
            String::from_utf8_lossy(&status.stderr)
        );
    }
    let with_hooks = median_wall(runs, |i| commit_command(root, &format!("hooked {i}")))?;
    println!(
        "| git commit, median of {runs}: without hooks {} | with wit's hooks {} | hooks add {} | | | | | |",
        fmt_duration(git_floor),
        fmt_duration(with_hooks),
        fmt_duration(with_hooks.saturating_sub(git_floor))
    );
    Ok(())
}

/// Measures `pings` pings on one connection while another connection sends `hammer`'s
/// requests in a loop; returns the pings' figures and how many hammer operations ran meanwhile.
async fn ping_beside(
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
