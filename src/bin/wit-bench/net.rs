//! One keep-alive HTTP/1.1 connection to the daemon's socket, and request bodies.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// One keep-alive HTTP/1.1 connection to a Unix socket, posting to `/rpc`.
///
/// The daemon closes a connection that stays idle past its header timeout (30 s), so a
/// connection left unused for a while (the set-up connection during long measurements) is
/// reopened before its next request.
pub(crate) struct Conn {
    socket: PathBuf,
    stream: UnixStream,
    buffer: Vec<u8>,
    last_used: Instant,
}

/// How long a connection may sit idle before [`Conn::post`] reopens it.
pub(crate) const IDLE_REOPEN: Duration = Duration::from_secs(5);

impl Conn {
    pub(crate) async fn open(socket: &Path) -> Result<Self> {
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
    pub(crate) async fn post(&mut self, body: &[u8]) -> Result<Vec<u8>> {
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
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let body = request(method, &params);
        let answer = self.post(&body).await?;
        let value: Value = serde_json::from_slice(&answer)?;
        if let Some(error) = value.get("error") {
            bail!("{method}: {error}");
        }
        Ok(value["result"].clone())
    }
}

pub(crate) fn request(method: &str, params: &Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "witVersion": "1", "id": 1, "method": method, "params": params}),
    )
    .unwrap_or_default()
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub(crate) fn ping_body() -> Vec<u8> {
    request("ping", &json!({}))
}
