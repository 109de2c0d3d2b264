//! Tests of the client against a minimal HTTP server on a Unix socket.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::UnixListener;

use super::*;
use crate::protocol::{ErrorCode, LockAcquireParams, LockQueryParams, PingResult};

/// Serves `answer(request)` on a socket in a temp dir; counts accepted connections.
struct TestServer {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    connections: Arc<AtomicUsize>,
}

fn serve(answer: fn(&Value) -> Value) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("daemon.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = connections.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let service = service_fn(
                    move |request: http::Request<hyper::body::Incoming>| async move {
                        assert_eq!(request.uri().path(), "/rpc");
                        assert_eq!(request.method(), http::Method::POST);
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        let request: Value = serde_json::from_slice(&body).unwrap();
                        // A batch is answered element by element, last first: the client
                        // must match answers by id, not by place.
                        let response = match request.as_array() {
                            Some(batch) => Value::Array(
                                batch.iter().rev().map(|r| respond(r, answer)).collect(),
                            ),
                            None => respond(&request, answer),
                        };
                        Ok::<_, Infallible>(
                            http::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(response.to_string())))
                                .unwrap(),
                        )
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    TestServer {
        _dir: dir,
        socket,
        connections,
    }
}

/// The response to one request: its envelope around what `answer` says.
fn respond(request: &Value, answer: fn(&Value) -> Value) -> Value {
    let mut response = json!({"jsonrpc": "2.0", "witVersion": "1", "id": request["id"]});
    for (key, value) in answer(request).as_object().unwrap() {
        response[key] = value.clone();
    }
    response
}

fn echo(request: &Value) -> Value {
    match request["method"].as_str() {
        Some("ping") => {
            assert!(request.get("params").is_none());
            assert_eq!(request["witVersion"], "1");
            assert_eq!(request["jsonrpc"], "2.0");
            json!({"result": "pong"})
        }
        Some("lock.query") => json!({"result": []}),
        Some("lock.acquire") => json!({"error": {
            "code": -32000, "message": "LOCK_CONFLICT",
            "data": {"heldBy": "other", "expiresAt": "2026-01-15T10:30:00.000Z"}}}),
        Some("echo") => json!({"result": request["params"]}),
        _ => json!({"error": {"code": -32601, "message": "METHOD_NOT_FOUND"}}),
    }
}

#[tokio::test]
async fn calls_methods_and_reuses_the_connection() {
    let server = serve(echo);
    let client = WitClient::new(&server.socket);
    for _ in 0..5 {
        assert_eq!(client.ping().await.unwrap(), PingResult::Pong);
    }
    let locks = client
        .lock_query(LockQueryParams { session_id: None })
        .await
        .unwrap();
    assert!(locks.is_empty());
    let clone = client.clone();
    assert_eq!(clone.ping().await.unwrap(), PingResult::Pong);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn keeps_error_data() {
    let server = serve(echo);
    let client = WitClient::new(&server.socket);
    let params = LockAcquireParams {
        symbol_path: "a.ts:f".into(),
        session_id: "me".into(),
        ttl_ms: None,
        wait_ms: None,
    };
    let ClientError::Rpc(error) = client.lock_acquire(params).await.unwrap_err() else {
        panic!("expected an RPC error");
    };
    assert!(error.is(ErrorCode::LockConflict));
    assert_eq!(error.data.unwrap()["heldBy"], "other");
}

#[tokio::test]
async fn call_raw_passes_params_through() {
    let server = serve(echo);
    let client = WitClient::new(&server.socket);
    let answer = client.call_raw("echo", json!({"a": [1, 2]})).await.unwrap();
    assert_eq!(answer, json!({"a": [1, 2]}));
    let ClientError::Rpc(error) = client.call_raw("nope", Value::Null).await.unwrap_err() else {
        panic!("expected an RPC error");
    };
    assert_eq!(error.code, -32601);
}

#[tokio::test]
async fn reports_a_missing_daemon_as_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let client = WitClient::for_root(dir.path());
    assert_eq!(client.socket_path(), dir.path().join(".wit/daemon.sock"));
    assert!(matches!(
        client.ping().await,
        Err(ClientError::Unreachable(_))
    ));
}

#[tokio::test]
async fn a_batch_is_one_request_and_each_call_takes_its_own_answer() {
    let server = serve(echo);
    let client = WitClient::new(&server.socket);
    let mut batch = Batch::new();
    let ping = batch.ping();
    let locks = batch.lock_query(&LockQueryParams { session_id: None });
    let refused = batch.lock_acquire(&LockAcquireParams {
        symbol_path: "a.ts:f".into(),
        session_id: "me".into(),
        ttl_ms: None,
        wait_ms: None,
    });
    assert_eq!(batch.len(), 3);
    let mut answers = client.send(&batch).await.unwrap();
    let ClientError::Rpc(error) = answers.take(refused).unwrap_err() else {
        panic!("expected an RPC error");
    };
    assert!(error.is(ErrorCode::LockConflict));
    assert!(answers.take(locks).unwrap().is_empty());
    assert_eq!(answers.take(ping).unwrap(), PingResult::Pong);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    // Nothing to send: no request at all.
    client.send(&Batch::new()).await.unwrap();
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}

#[test]
fn decodes_responses() {
    let ok: Result<Vec<i64>, _> = decode_response(
        http::StatusCode::OK,
        br#"{"jsonrpc":"2.0","id":1,"result":[1,2]}"#,
    );
    assert_eq!(ok.unwrap(), [1, 2]);
    let bad: Result<Vec<i64>, _> = decode_response(
        http::StatusCode::OK,
        br#"{"jsonrpc":"2.0","id":1,"result":"x"}"#,
    );
    assert!(matches!(bad, Err(ClientError::Decode(_))));
    let not_json: Result<Value, _> = decode_response(http::StatusCode::BAD_GATEWAY, b"oops");
    let Err(ClientError::Transport(message)) = not_json else {
        panic!("expected a transport error");
    };
    assert!(message.contains("502"), "{message}");
}
