//! The machine's floors, measured in the same run: a bare hyper server answering the ping
//! body (in a process of its own), and one SQLite WAL commit.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::net::Conn;

/// The floor server as a child process of its own (`wit-bench floor-server SOCKET`), so that
/// its CPU time per request is measured as the daemon's is; killed on drop.
pub(crate) struct FloorServer {
    child: Child,
    /// Its socket.
    pub(crate) socket: PathBuf,
}

impl FloorServer {
    /// Starts the floor server on `socket` and waits until it answers.
    pub(crate) async fn spawn(socket: PathBuf) -> Result<Self> {
        let child = Command::new(std::env::current_exe()?)
            .arg("floor-server")
            .arg(&socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("spawn the floor server")?;
        let server = Self { child, socket };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Conn::open(&server.socket).await.is_err() {
            if Instant::now() > deadline {
                bail!("the floor server did not listen within 10 s");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok(server)
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for FloorServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `wit-bench floor-server SOCKET`: the floor, a minimal hyper HTTP/1 server answering the
/// ping body over a Unix socket (keep-alive, one task per connection, nothing else), on the
/// bench's multi-thread runtime (one worker per core, as the daemon's); serves until killed.
pub(crate) async fn serve_floor(socket: &Path) -> Result<()> {
    use http_body_util::Full;
    use hyper::service::service_fn;
    let listener = tokio::net::UnixListener::bind(socket)?;
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
}

/// Mean time of one SQLite WAL commit (synchronous=NORMAL, as the daemon opens its store).
pub(crate) fn sqlite_commit_floor(dir: &Path, commits: usize) -> Result<Duration> {
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
