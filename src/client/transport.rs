//! HTTP/1.1 over a Unix socket, with keep-alive: `POST /rpc` on a pooled connection.
//!
//! Idle connections are kept in a small pool and reused by the next call, so a process making
//! many calls connects once. A pooled connection the daemon has closed in the meantime is
//! detected either before use (`is_closed`) or when hyper hands the unsent request back
//! (`TrySendError::take_message`); only then is the request retried on another connection,
//! so a request the daemon may have executed is never sent twice.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{header, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;

use super::ClientError;

/// Most idle connections kept per client.
const MAX_IDLE: usize = 4;

/// A connection pool to one socket. Clones share the pool.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    socket_path: Arc<PathBuf>,
    idle: Arc<Mutex<Vec<SendRequest<Full<Bytes>>>>>,
}

impl Transport {
    /// A pool for `socket_path`; connects lazily.
    pub(crate) fn new(socket_path: PathBuf) -> Self {
        Self {
            socket_path: Arc::new(socket_path),
            idle: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The socket path.
    pub(crate) fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// Posts `body` to `/rpc` and returns the status and the whole response body.
    pub(crate) async fn post(&self, body: Vec<u8>) -> Result<(StatusCode, Bytes), ClientError> {
        let body = Bytes::from(body);
        while let Some(mut sender) = self.take_idle() {
            match sender.try_send_request(request(body.clone())?).await {
                Ok(response) => return self.finish(sender, response).await,
                Err(mut error) => {
                    let unsent = error.take_message().is_some();
                    let error = error.into_error();
                    // A broken pipe means the peer had closed the connection before the
                    // request was written: the daemon cannot have read it (a pooled
                    // connection whose daemon died, the close not yet seen).
                    if !unsent && !broken_pipe(&error) {
                        // The request went out: it may have run, so it must not be resent.
                        return Err(ClientError::Transport(error.to_string()));
                    }
                    // Never sent (the connection was closed or busy): try the next one.
                }
            }
        }
        let mut sender = self.connect().await?;
        let response = sender
            .send_request(request(body)?)
            .await
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        self.finish(sender, response).await
    }

    /// Reads the whole response, then returns the connection to the pool.
    async fn finish(
        &self,
        sender: SendRequest<Full<Bytes>>,
        response: http::Response<hyper::body::Incoming>,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        let status = response.status();
        let keep_alive = !response
            .headers()
            .get(header::CONNECTION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| ClientError::Transport(format!("reading the answer: {e}")))?
            .to_bytes();
        if keep_alive && !sender.is_closed() {
            if let Ok(mut idle) = self.idle.lock() {
                if idle.len() < MAX_IDLE {
                    idle.push(sender);
                }
            }
        }
        Ok((status, body))
    }

    /// An idle pooled connection that is still open, if any.
    fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle.lock().ok()?;
        while let Some(sender) = idle.pop() {
            if !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    /// Opens a new connection and drives it on a background task.
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, ClientError> {
        let stream = UnixStream::connect(self.socket_path.as_path())
            .await
            .map_err(ClientError::Unreachable)?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ClientError::Transport(format!("HTTP handshake: {e}")))?;
        tokio::spawn(async move {
            // The connection ends when the daemon closes it or the last sender is dropped;
            // either way the next call opens a new one, so its error is of no use here.
            let _ = connection.await;
        });
        Ok(sender)
    }
}

/// The `POST /rpc` request carrying `body`.
fn request(body: Bytes) -> Result<Request<Full<Bytes>>, ClientError> {
    Request::builder()
        .method(Method::POST)
        .uri("/rpc")
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))
        .map_err(|e| ClientError::Transport(format!("building the request: {e}")))
}

/// Whether `error` comes from writing to a connection its peer had already closed.
fn broken_pipe(error: &hyper::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return io.kind() == std::io::ErrorKind::BrokenPipe;
        }
        source = cause.source();
    }
    false
}
