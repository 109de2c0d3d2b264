//! Several calls sent as one JSON-RPC 2.0 batch (protocol notes 8): one request on one
//! connection instead of one connection per call.
//!
//! A hook process makes each call on a fresh connection, and a fresh connection costs both
//! sides more than the call itself (the daemon accepts it, spawns its task and sets up its
//! HTTP state; the hook connects and hands it to its runtime). Calls that do not depend on
//! each other's answers go together: [`Batch`] collects them (its methods, one per protocol
//! method, are generated from `openrpc.json` beside [`WitClient`]'s), [`WitClient::send`]
//! posts them, and [`BatchAnswers::take`] hands each call its typed answer. The daemon runs a
//! batch's calls one after the other, in order, so a batch suits quick reads; a call that may
//! wait (a flush, a long poll) belongs on its own connection.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{ClientError, Request, WitClient};
use crate::protocol::{ProtocolError, WIT_VERSION};

/// Calls to send at once, encoded as they are added. Ids are the calls' places in the batch.
#[derive(Debug, Default)]
pub struct Batch {
    /// Each call's request, encoded.
    requests: Vec<Vec<u8>>,
    /// The first call that could not be encoded: sending the batch reports it.
    unencodable: Option<String>,
}

/// A call added to a [`Batch`], whose answer is a `R`: handed to [`BatchAnswers::take`].
#[derive(Debug)]
#[must_use = "the call's answer is taken with BatchAnswers::take"]
pub struct Pending<R> {
    index: usize,
    answer: PhantomData<fn() -> R>,
}

/// A batch's answers, one per call, each taken once.
#[derive(Debug)]
pub struct BatchAnswers {
    answers: Vec<Option<Result<Box<RawValue>, ProtocolError>>>,
}

/// One element of a batch's answer: the parts the client reads.
#[derive(Deserialize)]
struct Element {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<ProtocolError>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many calls the batch holds.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether the batch holds no call.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Adds a call of `method` with `params` (`None`: no `params`); the generated methods
    /// call this.
    pub(crate) fn push<P, R>(&mut self, method: &str, params: Option<&P>) -> Pending<R>
    where
        P: Serialize + ?Sized,
    {
        let index = self.requests.len();
        let request = Request {
            jsonrpc: "2.0",
            wit_version: WIT_VERSION,
            id: index as u64,
            method,
            params,
        };
        match serde_json::to_vec(&request) {
            Ok(encoded) => self.requests.push(encoded),
            Err(error) => {
                self.unencodable
                    .get_or_insert_with(|| format!("cannot encode the {method} request: {error}"));
                self.requests.push(Vec::new());
            }
        }
        Pending {
            index,
            answer: PhantomData,
        }
    }

    /// The batch's body: its requests as one JSON array.
    fn body(&self) -> Result<Vec<u8>, ClientError> {
        if let Some(reason) = &self.unencodable {
            return Err(ClientError::Decode(reason.clone()));
        }
        let size = self.requests.iter().map(|r| r.len() + 1).sum::<usize>() + 1;
        let mut body = Vec::with_capacity(size);
        body.push(b'[');
        for (at, request) in self.requests.iter().enumerate() {
            if at > 0 {
                body.push(b',');
            }
            body.extend_from_slice(request);
        }
        body.push(b']');
        Ok(body)
    }
}

impl BatchAnswers {
    /// The answer to `call`: its result decoded, or the error the daemon gave it.
    pub fn take<R: DeserializeOwned>(&mut self, call: Pending<R>) -> Result<R, ClientError> {
        let answer = self
            .answers
            .get_mut(call.index)
            .and_then(Option::take)
            .ok_or_else(|| {
                ClientError::Decode(format!(
                    "the batch's answer has no element for call {}",
                    call.index
                ))
            })?;
        let raw = answer.map_err(ClientError::Rpc)?;
        serde_json::from_str(raw.get()).map_err(|e| ClientError::Decode(e.to_string()))
    }

    /// Reads a batch's answer to `calls` calls: each element put in its call's place by id.
    fn decode(status: http::StatusCode, body: &[u8], calls: usize) -> Result<Self, ClientError> {
        let not_an_answer = |e: serde_json::Error| {
            let preview = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            ClientError::Transport(format!(
                "HTTP {status}: the answer is not a JSON-RPC batch answer ({e}): {preview}"
            ))
        };
        // An array of elements, or one error about the whole batch (an envelope the daemon
        // could not read, say). Told apart by the first byte: raw values cannot be read
        // through serde's untagged enums.
        let is_array = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
        if !is_array {
            let whole: Element = serde_json::from_slice(body).map_err(not_an_answer)?;
            return Err(whole.error.map_or_else(
                || ClientError::Decode("a batch was answered with one result".into()),
                ClientError::Rpc,
            ));
        }
        let elements: Vec<Element> = serde_json::from_slice(body).map_err(not_an_answer)?;
        let mut answers: Vec<_> = (0..calls).map(|_| None).collect();
        for element in elements {
            let Some(slot) = element
                .id
                .and_then(|id| usize::try_from(id).ok())
                .and_then(|index| answers.get_mut(index))
            else {
                continue;
            };
            *slot = Some(match element.error {
                Some(error) => Err(error),
                None => Ok(element.result.unwrap_or_else(|| RawValue::NULL.to_owned())),
            });
        }
        Ok(Self { answers })
    }
}

impl WitClient {
    /// Sends every call of `batch` in one request and returns their answers. An empty batch
    /// sends nothing. `Err` when the batch as a whole failed (no daemon, a broken connection,
    /// an envelope the daemon refused); each call's own error is in its answer.
    pub async fn send(&self, batch: &Batch) -> Result<BatchAnswers, ClientError> {
        if batch.is_empty() {
            return Ok(BatchAnswers {
                answers: Vec::new(),
            });
        }
        let (status, body) = self.post(batch.body()?).await?;
        BatchAnswers::decode(status, &body, batch.len())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn call<R>(index: usize) -> Pending<R> {
        Pending {
            index,
            answer: PhantomData,
        }
    }

    #[test]
    fn answers_are_matched_by_id_and_taken_once() {
        let ok = http::StatusCode::OK;
        // Out of order, with an element whose id is no call's and a call with no element.
        let body = br#"[{"id":7,"result":1},{"id":1,"result":null},{"id":0,"result":[1,2]}]"#;
        let mut answers = BatchAnswers::decode(ok, body, 3).unwrap();
        assert_eq!(answers.take(call::<Vec<i64>>(0)).unwrap(), [1, 2]);
        assert!(matches!(
            answers.take(call::<Vec<i64>>(0)),
            Err(ClientError::Decode(_))
        ));
        answers.take(call::<()>(1)).unwrap();
        assert!(matches!(
            answers.take(call::<i64>(2)),
            Err(ClientError::Decode(_))
        ));
        let typed = BatchAnswers::decode(ok, br#"[{"id":0,"result":"x"}]"#, 1);
        assert!(matches!(
            typed.unwrap().take(call::<i64>(0)),
            Err(ClientError::Decode(_))
        ));
    }

    #[test]
    fn a_batch_refused_whole_or_not_json_fails_whole() {
        let whole = BatchAnswers::decode(
            http::StatusCode::BAD_REQUEST,
            br#"{"id":null,"error":{"code":-32600,"message":"INVALID_REQUEST"}}"#,
            1,
        );
        assert!(matches!(whole, Err(ClientError::Rpc(e)) if e.code == -32600));
        let not_json = BatchAnswers::decode(http::StatusCode::BAD_GATEWAY, b"oops", 1);
        assert!(matches!(not_json, Err(ClientError::Transport(m)) if m.contains("502")));
    }

    #[test]
    fn the_body_is_the_requests_as_one_array() {
        let mut batch = Batch::new();
        assert!(batch.is_empty());
        let _ping = batch.ping();
        let _echo: Pending<serde_json::Value> = batch.push("echo", Some(&[1, 2]));
        let body: serde_json::Value = serde_json::from_slice(&batch.body().unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!([
                {"jsonrpc": "2.0", "witVersion": "1", "id": 0, "method": "ping"},
                {"jsonrpc": "2.0", "witVersion": "1", "id": 1, "method": "echo", "params": [1, 2]},
            ])
        );
    }
}
