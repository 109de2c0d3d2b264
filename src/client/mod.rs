//! The typed client of the wit daemon (feature `client`).
//!
//! [`WitClient`] has one async method per protocol method, generated from `openrpc.json`
//! (`lock_acquire(LockAcquireParams) -> Result<LockAcquireResult, ClientError>`, ..), on top
//! of a small HTTP/1.1-over-Unix-socket transport that keeps connections alive between
//! calls. Every request carries `"jsonrpc":"2.0","witVersion":"1"` and a fresh `id`.
#![cfg(feature = "client")]

mod batch;
mod transport;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::protocol::{ProtocolError, WIT_VERSION};

pub use batch::{Batch, BatchAnswers, Pending};

/// Why a call did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Connecting to the socket failed: no daemon is running for this repository (or the
    /// socket is stale).
    #[error("cannot connect to the wit daemon: {0}")]
    Unreachable(#[source] std::io::Error),
    /// The connection broke, timed out, or the answer was not HTTP/JSON-RPC.
    #[error("error talking to the wit daemon: {0}")]
    Transport(String),
    /// The daemon answered with a JSON-RPC error (code, message and data kept).
    #[error("the wit daemon answered {0}")]
    Rpc(ProtocolError),
    /// The answer's `result` does not have the expected type.
    #[error("cannot decode the wit daemon's answer: {0}")]
    Decode(String),
}

/// A client of one daemon, reusing its connections across calls. Cheap to clone; clones
/// share the connection pool.
#[derive(Debug, Clone)]
pub struct WitClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    transport: transport::Transport,
    next_id: AtomicU64,
    timeout: Option<Duration>,
}

/// The request envelope: keys in the order the protocol notes use.
#[derive(Serialize)]
struct Request<'a, P: ?Sized> {
    jsonrpc: &'static str,
    #[serde(rename = "witVersion")]
    wit_version: &'static str,
    id: u64,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

/// The parts of a response the client reads.
#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ProtocolError>,
}

impl WitClient {
    /// A client of the daemon listening on `socket_path`. Nothing is connected until the
    /// first call.
    pub fn new(socket_path: impl Into<PathBuf>) -> Self {
        Self {
            inner: Arc::new(Inner {
                transport: transport::Transport::new(socket_path.into()),
                next_id: AtomicU64::new(1),
                timeout: None,
            }),
        }
    }

    /// A client of the daemon of repository `root` (socket `root/.wit/daemon.sock`).
    pub fn for_root(root: impl AsRef<Path>) -> Self {
        Self::new(root.as_ref().join(".wit").join("daemon.sock"))
    }

    /// The same client with every call bounded by `timeout` (connecting included); a call
    /// that takes longer fails with [`ClientError::Transport`].
    pub fn with_timeout(self, timeout: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                transport: self.inner.transport.clone(),
                next_id: AtomicU64::new(self.inner.next_id.load(Ordering::Relaxed)),
                timeout: Some(timeout),
            }),
        }
    }

    /// The socket this client talks to.
    pub fn socket_path(&self) -> &Path {
        self.inner.transport.socket_path()
    }

    /// Calls `method` with untyped `params` (`Value::Null` sends no `params`) and returns the
    /// untyped result.
    pub async fn call_raw(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, ClientError> {
        let params = (!params.is_null()).then_some(&params);
        self.call(method, params).await
    }

    /// Sends one request and decodes its result; the generated methods call this.
    pub(crate) async fn call<P, R>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<R, ClientError>
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let request = Request {
            jsonrpc: "2.0",
            wit_version: WIT_VERSION,
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            method,
            params,
        };
        let body = serde_json::to_vec(&request)
            .map_err(|e| ClientError::Decode(format!("cannot encode the request: {e}")))?;
        let (status, answer) = self.post(body).await?;
        decode_response(status, &answer)
    }

    /// Posts `body` and returns the status and the whole answer, within the client's timeout.
    async fn post(&self, body: Vec<u8>) -> Result<(http::StatusCode, bytes::Bytes), ClientError> {
        let send = self.inner.transport.post(body);
        match self.inner.timeout {
            None => send.await,
            Some(limit) => tokio::time::timeout(limit, send).await.map_err(|_| {
                ClientError::Transport(format!("no answer within {} ms", limit.as_millis()))
            })?,
        }
    }
}

/// Turns a response body into the result or the error it carries.
fn decode_response<R: DeserializeOwned>(
    status: http::StatusCode,
    body: &[u8],
) -> Result<R, ClientError> {
    let response: Response<'_> = serde_json::from_slice(body).map_err(|e| {
        let preview = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        ClientError::Transport(format!(
            "HTTP {status}: the answer is not a JSON-RPC response ({e}): {preview}"
        ))
    })?;
    if let Some(error) = response.error {
        return Err(ClientError::Rpc(error));
    }
    let raw = response.result.map_or("null", RawValue::get);
    serde_json::from_str(raw).map_err(|e| ClientError::Decode(e.to_string()))
}

#[allow(
    clippy::all,
    reason = "generated code: fixed in the generator, not by hand"
)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/client.rs"));
}

#[cfg(test)]
mod tests;
