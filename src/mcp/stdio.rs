//! The stdio transport of `wit mcp`: one JSON-RPC message per line, like rmcp's own, except
//! that every line that is not a message the server can serve gets an error answer instead
//! of silence (issue 20 item 6):
//!
//! - a line over [`MAX_LINE_BYTES`] is dropped unread and answered INVALID_REQUEST (-32600);
//! - a line that is not JSON is answered PARSE_ERROR (-32700);
//! - a request of a method the server serves whose params do not fit (`arguments` that are
//!   no object, say) is answered INVALID_PARAMS (-32602), not METHOD_NOT_FOUND;
//! - JSON that is no JSON-RPC message is answered INVALID_REQUEST, with its id when it has one.
//!
//! Answers are written whole, one line each, under one lock shared with rmcp's own answers.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, InitializeRequestParams,
    JsonRpcMessage, PaginatedRequestParams,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read (one message): 16 MiB, as rmcp's own transport.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// The transport: lines in from `R`, lines out to `W`.
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line read so far (kept across cancelled reads: `receive` runs inside a `select!`).
    line: Vec<u8>,
    /// Dropping the rest of a line already refused as too long.
    discarding: bool,
    write: Arc<Mutex<W>>,
    /// The error answer being written: a task of its own, so that a `receive` cancelled
    /// meanwhile neither loses it nor cuts it in half.
    answering: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Reads from `read` and writes to `write`.
    pub fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            write: Arc::new(Mutex::new(write)),
            answering: None,
        }
    }

    /// Reads one whole line into `self.line`, never holding more than [`MAX_LINE_BYTES`].
    /// Cancellation-safe: what was read stays in `self.line` for the next call.
    async fn read_line(&mut self) -> std::io::Result<Line> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(Line::End);
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let outcome = if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
                None
            } else if self.line.len().saturating_add(take) > MAX_LINE_BYTES {
                self.line.clear();
                self.discarding = newline.is_none();
                Some(Line::TooLong)
            } else {
                self.line.extend_from_slice(&available[..take]);
                newline.map(|_| Line::Whole)
            };
            self.read.consume(take);
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
    }
}

enum Line {
    Whole,
    TooLong,
    End,
}

/// What to do with one line.
#[derive(Debug)]
enum Verdict {
    /// Hand it to the server.
    Serve(Box<ClientJsonRpcMessage>),
    /// Answer it with this error frame.
    Answer(Value),
    /// A notification nobody answers.
    Ignore,
}

/// Judges one line (without its line break).
fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => match params_problem(&message) {
            Some((id, problem)) => {
                Verdict::Answer(error_frame(id, INVALID_PARAMS, "Invalid params", &problem))
            }
            None => Verdict::Serve(Box::new(message)),
        },
        Err(error) => match serde_json::from_slice::<Value>(line) {
            Err(syntax) => Verdict::Answer(error_frame(
                Value::Null,
                PARSE_ERROR,
                "Parse error",
                &syntax.to_string(),
            )),
            Ok(value) => {
                let id = value.get("id").cloned();
                let notification = id.is_none() && value.get("method").is_some();
                if notification {
                    return Verdict::Ignore;
                }
                Verdict::Answer(error_frame(
                    id.unwrap_or(Value::Null),
                    INVALID_REQUEST,
                    "Invalid request",
                    &error.to_string(),
                ))
            }
        },
    }
}

/// A request of a method this server serves that rmcp could only read as a custom request:
/// its params do not fit the method. The id and why.
fn params_problem(message: &ClientJsonRpcMessage) -> Option<(Value, String)> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CustomRequest(custom) = &request.request else {
        return None;
    };
    let params = custom.params.clone().unwrap_or(Value::Null);
    let problem = match custom.method.as_str() {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).err(),
        "initialize" => serde_json::from_value::<InitializeRequestParams>(params).err(),
        "tools/list" => serde_json::from_value::<Option<PaginatedRequestParams>>(params).err(),
        _ => return None,
    };
    let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
    Some((
        id,
        problem.map_or_else(
            || "the params do not fit the method".to_owned(),
            |e| e.to_string(),
        ),
    ))
}

fn error_frame(id: Value, code: i64, message: &str, reason: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message, "data": {"reason": reason}},
    })
}

/// Writes one line (`frame` and a line break) and flushes it.
async fn write_line<W: AsyncWrite + Unpin>(write: &Mutex<W>, frame: &[u8]) -> std::io::Result<()> {
    let mut write = write.lock().await;
    write.write_all(frame).await?;
    write.write_all(b"\n").await?;
    write.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Sync + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = Arc::clone(&self.write);
        async move {
            let frame = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            write_line(&write, &frame).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(answering) = self.answering.as_mut() {
                let written = answering.await;
                self.answering = None;
                if !matches!(written, Ok(Ok(()))) {
                    return None;
                }
            }
            let read = match self.read_line().await {
                Ok(read) => read,
                Err(error) => {
                    tracing::error!(%error, "reading stdin failed");
                    return None;
                }
            };
            let verdict = match read {
                Line::End => {
                    if let Some(answering) = self.answering.take() {
                        let _ = answering.await;
                    }
                    return None;
                }
                Line::TooLong => Verdict::Answer(error_frame(
                    Value::Null,
                    INVALID_REQUEST,
                    "Invalid request",
                    &format!("the message is longer than {MAX_LINE_BYTES} bytes"),
                )),
                Line::Whole => {
                    let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    let verdict = if line.iter().all(u8::is_ascii_whitespace) {
                        Verdict::Ignore
                    } else {
                        judge(line)
                    };
                    self.line.clear();
                    verdict
                }
            };
            match verdict {
                Verdict::Serve(message) => return Some(*message),
                Verdict::Ignore => {}
                Verdict::Answer(frame) => {
                    let write = Arc::clone(&self.write);
                    self.answering = Some(tokio::spawn(async move {
                        write_line(&write, frame.to_string().as_bytes()).await
                    }));
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn code(verdict: &Verdict) -> Option<i64> {
        match verdict {
            Verdict::Answer(frame) => frame["error"]["code"].as_i64(),
            _ => None,
        }
    }

    #[test]
    fn lines_that_cannot_be_served_get_their_error() {
        assert_eq!(code(&judge(b"not json {")), Some(PARSE_ERROR));
        assert_eq!(
            code(&judge(
                br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ping","arguments":"x"}}"#
            )),
            Some(INVALID_PARAMS)
        );
        let wrong = judge(br#"{"jsonrpc":"2.0","id":"x","method":42}"#);
        assert_eq!(code(&wrong), Some(INVALID_REQUEST));
        let Verdict::Answer(frame) = wrong else {
            unreachable!()
        };
        assert_eq!(frame["id"], "x");
        assert!(matches!(
            judge(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#),
            Verdict::Serve(_)
        ));
        assert!(matches!(
            judge(br#"{"jsonrpc":"2.0","method":"notifications/whatever","params":3}"#),
            Verdict::Serve(_) | Verdict::Ignore
        ));
    }
}
