//! Serves a jsonrpsee method table over HTTP/1.1 on a Unix socket.
//!
//! One accept loop; each connection gets its own task running hyper's HTTP/1 connection
//! driver (keep-alive on) around the [`Envelope`], which dispatches to jsonrpsee's method
//! table. Connections are capped: an excess connection is answered with a JSON
//! 503 and closed, never left hanging. A connection whose request waits (a queued
//! `lock.acquire`, a waiting `events.poll`) does not count while it waits. Shutdown stops accepting, lets in-flight requests
//! finish within a bound, then returns.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use jsonrpsee::Methods;
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::envelope::{Envelope, EnvelopeConfig};
use crate::rpc::waiting::{with_parking, Parking};
use http::HeaderValue;

/// Limits and timeouts of the socket server.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Largest accepted request body (docs/protocol.md 1.4: 32 MiB by default).
    pub max_body_bytes: usize,
    /// Most connections served at once; more are refused with HTTP 503.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers (idle keep-alive included).
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body.
    pub body_timeout: Duration,
    /// How long shutdown waits for in-flight requests.
    pub shutdown_grace: Duration,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: crate::protocol::params::MAX_BODY_BYTES,
            max_connections: 1024,
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// Accepts connections on `listener` and serves `methods` until `shutdown` resolves.
pub async fn serve(
    listener: UnixListener,
    methods: Methods,
    config: ServeConfig,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let envelope = Envelope::new(
        EnvelopeConfig {
            max_body_bytes: config.max_body_bytes,
            body_timeout: config.body_timeout,
        },
        methods,
    );

    let permits = Arc::new(Semaphore::new(config.max_connections));
    let (closing_tx, closing_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);

    loop {
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _addr)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    // Running out of file descriptors is the usual cause: back off briefly.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        // Finished connections are reaped here, without a waker: waiting on `join_next`
        // would wake this loop (and its thread) once more for every connection that ends.
        while connections.try_join_next().is_some() {}
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            connections.spawn(refuse_connection(stream));
            continue;
        };
        let slot = Arc::new(ConnectionSlot {
            permits: Arc::clone(&permits),
            permit: std::sync::Mutex::new(Some(permit)),
        });
        let envelope = envelope.clone();
        let connection_slot = Arc::clone(&slot);
        let hyper_service = service_fn(move |request| {
            let envelope = envelope.clone();
            let slot = Arc::clone(&connection_slot);
            async move {
                let parking: Arc<dyn Parking> = Arc::clone(&slot) as Arc<dyn Parking>;
                let mut response = with_parking(parking, envelope.handle(request)).await;
                if !slot.holds_one() {
                    // Its wait ended with the cap full: answered, then closed.
                    response
                        .headers_mut()
                        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
                }
                Ok::<_, Infallible>(response)
            }
        });
        let mut closing = closing_rx.clone();
        let header_timeout = config.header_timeout;
        connections.spawn(async move {
            let _slot = slot;
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .keep_alive(true);
            let connection = builder.serve_connection(TokioIo::new(stream), hyper_service);
            tokio::pin!(connection);
            tokio::select! {
                result = &mut connection => log_connection_end(result),
                _ = async move { closing.wait_for(|closing| *closing).await.is_ok() } => {
                    connection.as_mut().graceful_shutdown();
                    log_connection_end(connection.await);
                }
            }
        });
    }

    drop(listener);
    let _ = closing_tx.send(true);
    let drained = tokio::time::timeout(config.shutdown_grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("shutdown grace period over; dropping remaining connections");
        connections.abort_all();
    }
}

/// A served connection's place under the cap: its permit, given back while its request
/// waits (a waiting `lock.acquire` or `events.poll` costs memory only, docs/protocol.md 8.2)
/// and taken again when the wait ends, if one is free; if none is, the connection closes
/// after its answer.
struct ConnectionSlot {
    permits: Arc<Semaphore>,
    permit: std::sync::Mutex<Option<OwnedSemaphorePermit>>,
}

impl ConnectionSlot {
    fn holds_one(&self) -> bool {
        self.permit.lock().is_ok_and(|permit| permit.is_some())
    }
}

impl Parking for ConnectionSlot {
    fn park(&self) {
        if let Ok(mut permit) = self.permit.lock() {
            permit.take();
        }
    }

    fn unpark(&self) {
        if let Ok(mut permit) = self.permit.lock() {
            if permit.is_none() {
                *permit = Arc::clone(&self.permits).try_acquire_owned().ok();
            }
        }
    }
}

fn log_connection_end(result: Result<(), hyper::Error>) {
    if let Err(error) = result {
        tracing::debug!(%error, "connection ended with an error");
    }
}

/// Answers a connection over the cap and closes it: a `ping` (one small request read within
/// a second) with its `pong` — `ping` always answers, it is how clients tell a busy daemon
/// from a dead one —, anything else with a JSON 503.
async fn refuse_connection(mut stream: UnixStream) {
    let answer =
        match tokio::time::timeout(Duration::from_secs(1), read_small_request(&mut stream)).await {
            Ok(Some(body)) => pong_for(&body),
            _ => None,
        };
    let (status, body) = match &answer {
        Some(pong) => ("200 OK", pong.as_str()),
        None => (
            "503 Service Unavailable",
            r#"{"jsonrpc":"2.0","witVersion":"1","id":null,"error":{"code":-32603,"message":"INTERNAL_ERROR","data":{"reason":"too many connections; retry later"}}}"#,
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    };
    if tokio::time::timeout(Duration::from_secs(1), write)
        .await
        .is_err()
    {
        tracing::debug!("refused connection did not take its answer in time");
    }
}

/// The most a refused connection's request may take to be read for a `ping`.
const SMALL_REQUEST_BYTES: usize = 4096;

/// The body of one small HTTP request (`None` when it is larger, malformed or incomplete).
async fn read_small_request(stream: &mut UnixStream) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if buffer.len() > SMALL_REQUEST_BYTES {
            return None;
        }
        let Some(split) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = std::str::from_utf8(&buffer[..split]).ok()?;
        let length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .unwrap_or(0);
        if buffer.len() >= split + 4 + length {
            return Some(buffer[split + 4..split + 4 + length].to_vec());
        }
    }
}

/// The answer to `body` if it is one `ping` of this protocol version.
fn pong_for(body: &[u8]) -> Option<String> {
    let request: serde_json::Value = serde_json::from_slice(body).ok()?;
    let is_ping = request.get("method").and_then(|m| m.as_str()) == Some("ping")
        && request.get("witVersion").and_then(|v| v.as_str()) == Some(crate::protocol::WIT_VERSION)
        && request.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0");
    let id = request.get("id")?;
    is_ping.then(|| {
        serde_json::json!({"jsonrpc": "2.0", "witVersion": crate::protocol::WIT_VERSION, "id": id, "result": "pong"})
            .to_string()
    })
}
