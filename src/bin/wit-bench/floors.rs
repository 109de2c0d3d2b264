//! The machine's floors, measured in the same run: a bare hyper server answering the ping
//! body, and one SQLite WAL commit.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

/// The floor: a minimal hyper HTTP/1 server answering the ping body over a Unix socket, on
/// its own two-thread runtime.
pub(crate) fn start_floor_server(socket: PathBuf) -> Result<()> {
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
