//! Envelope rules exercised over a real Unix socket with a small hand-registered method table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use jsonrpsee::RpcModule;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

use super::server::{serve, ServeConfig};

fn test_module() -> RpcModule<()> {
    let mut module = RpcModule::new(());
    module.register_method("ping", |_, _, _| "pong").unwrap();
    module
        .register_method("echo", |params, _, _| {
            params.as_str().map(str::to_owned).unwrap_or_default()
        })
        .unwrap();
    module
}

struct Harness {
    _dir: tempfile::TempDir,
    socket: std::path::PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Harness {
    async fn start(config: ServeConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("s.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, test_module().into(), config, async {
            let _ = rx.await;
        }));
        Self {
            _dir: dir,
            socket,
            stop: Some(tx),
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

// The tests' one HTTP/1.1 reader, shared with the integration tests.
#[path = "../../tests/common/http.rs"]
mod http;

use http::{parse_response, request_bytes, HttpResponse};

/// Sends one raw HTTP/1.1 request and reads one response on `stream`.
async fn exchange(stream: &mut UnixStream, method: &str, path: &str, body: &[u8]) -> HttpResponse {
    let request = request_bytes(method, path, &[("host", "localhost")], body);
    stream.write_all(&request).await.unwrap();
    read_response(stream).await
}

async fn read_response(stream: &mut UnixStream) -> HttpResponse {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some((response, _)) = parse_response(&buffer, false) {
            return response;
        }
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
            .await
            .expect("response in time")
            .unwrap();
        assert!(n > 0, "connection closed before a full response");
        buffer.extend_from_slice(&chunk[..n]);
    }
}

async fn post(socket: &Path, body: &str) -> (u16, String) {
    let mut stream = UnixStream::connect(socket).await.unwrap();
    let response = exchange(&mut stream, "POST", "/rpc", body.as_bytes()).await;
    (response.status, response.text())
}

#[tokio::test]
async fn ping_answers_with_the_envelope_in_key_order() {
    let h = Harness::start(ServeConfig::default()).await;
    let (status, body) = post(
        &h.socket,
        r#"{"jsonrpc":"2.0","witVersion":"1","id":"1","method":"ping","params":{}}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        r#"{"jsonrpc":"2.0","witVersion":"1","id":"1","result":"pong"}"#
    );
}

#[tokio::test]
async fn ids_are_echoed_exactly_as_written() {
    let h = Harness::start(ServeConfig::default()).await;
    for id in [
        "-7",
        "1.50",
        "1e3",
        "null",
        "\"x\\u0041\"",
        "18446744073709551616",
    ] {
        let (status, body) = post(
            &h.socket,
            &format!(r#"{{"jsonrpc":"2.0","witVersion":"1","id":{id},"method":"ping"}}"#),
        )
        .await;
        assert_eq!(status, 200, "{id}");
        assert_eq!(
            body,
            format!(r#"{{"jsonrpc":"2.0","witVersion":"1","id":{id},"result":"pong"}}"#)
        );
    }
}

#[tokio::test]
async fn envelope_errors_in_order_with_http_400() {
    let h = Harness::start(ServeConfig::default()).await;
    let cases = [
        ("{not json", 400, r#""id":null,"error":{"code":-32700"#),
        ("[]", 400, r#""id":null,"error":{"code":-32600"#),
        ("42", 400, r#""id":null,"error":{"code":-32600"#),
        (
            r#"{"witVersion":"1","id":1,"method":"ping"}"#,
            400,
            r#""id":null,"error":{"code":-32600"#,
        ),
        (
            r#"{"jsonrpc":"2.0","witVersion":"1","id":1,"method":7}"#,
            400,
            r#""id":null,"error":{"code":-32600"#,
        ),
        (
            r#"{"jsonrpc":"2.0","witVersion":"1","id":{},"method":"ping"}"#,
            400,
            r#""id":null,"error":{"code":-32600"#,
        ),
        (
            r#"{"jsonrpc":"2.0","witVersion":"1","id":true,"method":"ping"}"#,
            400,
            r#""id":null,"error":{"code":-32600"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"nope"}"#,
            400,
            r#""id":5,"error":{"code":-32001,"message":"VERSION_MISMATCH","data":{"expected":"1"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","witVersion":2,"id":5,"method":"ping"}"#,
            400,
            r#""id":5,"error":{"code":-32001,"message":"VERSION_MISMATCH","data":{"expected":"1","received":2}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","witVersion":"1","id":"a","method":"nope"}"#,
            200,
            r#""id":"a","error":{"code":-32601,"message":"METHOD_NOT_FOUND""#,
        ),
    ];
    for (request, want_status, want_fragment) in cases {
        let (status, body) = post(&h.socket, request).await;
        assert_eq!(status, want_status, "{request} -> {body}");
        assert!(
            body.starts_with(r#"{"jsonrpc":"2.0","witVersion":"1","#),
            "{body}"
        );
        assert!(body.contains(want_fragment), "{request} -> {body}");
    }
}

#[tokio::test]
async fn paths_and_methods_other_than_post_rpc_are_refused() {
    let h = Harness::start(ServeConfig::default()).await;
    let mut stream = UnixStream::connect(&h.socket).await.unwrap();
    let answer = exchange(&mut stream, "POST", "/other", b"{}").await;
    let (status, body) = (answer.status, answer.text());
    assert_eq!(status, 404);
    let content_type = answer.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    assert!(
        body.contains(r#""code":-32600"#) && body.contains("reason"),
        "{body}"
    );
    let answer = exchange(&mut stream, "GET", "/rpc", b"").await;
    let (status, body) = (answer.status, answer.text());
    assert_eq!(status, 405);
    assert!(body.contains(r#""code":-32600"#), "{body}");
    // The same connection still serves a good request afterwards (keep-alive).
    let answer = exchange(
        &mut stream,
        "POST",
        "/rpc",
        br#"{"jsonrpc":"2.0","witVersion":"1","id":1,"method":"ping"}"#,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
}

#[tokio::test]
async fn oversized_bodies_answer_413_with_the_limit() {
    let config = ServeConfig {
        max_body_bytes: 1000,
        ..ServeConfig::default()
    };
    let h = Harness::start(config).await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","witVersion":"1","id":1,"method":"echo","params":"{}"}}"#,
        "x".repeat(2000)
    );
    let (status, body) = post(&h.socket, &big).await;
    assert_eq!(status, 413);
    assert!(body.contains(r#""data":{"limit":1000}"#), "{body}");
}

#[tokio::test]
async fn batches_check_each_element_and_skip_notifications() {
    let h = Harness::start(ServeConfig::default()).await;
    let (status, body) = post(
        &h.socket,
        r#"[{"jsonrpc":"2.0","witVersion":"1","id":1,"method":"ping"},
            {"jsonrpc":"2.0","id":2,"method":"ping"},
            {"jsonrpc":"2.0","witVersion":"1","method":"ping"},
            {"jsonrpc":"2.0","witVersion":"1","id":"z","method":"missing"},
            7]"#,
    )
    .await;
    assert_eq!(status, 200);
    let answers: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(answers.len(), 4, "{body}");
    assert_eq!(answers[0]["result"], "pong");
    assert_eq!(answers[1]["error"]["code"], -32001);
    assert_eq!(answers[1]["id"], 2);
    assert_eq!(answers[2]["error"]["code"], -32601);
    assert_eq!(answers[3]["error"]["code"], -32600);
    assert!(answers.iter().all(|a| a["witVersion"] == "1"));
}

#[tokio::test]
async fn a_lone_notification_gets_no_body() {
    let h = Harness::start(ServeConfig::default()).await;
    let (status, body) = post(
        &h.socket,
        r#"{"jsonrpc":"2.0","witVersion":"1","method":"ping"}"#,
    )
    .await;
    assert_eq!(status, 204);
    assert!(body.is_empty());
}

#[tokio::test]
async fn connections_over_the_cap_are_refused_with_503() {
    let config = ServeConfig {
        max_connections: 1,
        ..ServeConfig::default()
    };
    let h = Harness::start(config).await;
    let mut first = UnixStream::connect(&h.socket).await.unwrap();
    let answer = exchange(
        &mut first,
        "POST",
        "/rpc",
        br#"{"jsonrpc":"2.0","witVersion":"1","id":1,"method":"ping"}"#,
    )
    .await;
    assert_eq!(answer.status, 200);
    let mut second = UnixStream::connect(&h.socket).await.unwrap();
    let answer = read_response(&mut second).await;
    assert_eq!(answer.status, 503);
    let body = answer.text();
    assert!(body.contains("too many connections"), "{body}");
}

#[tokio::test]
async fn a_silent_client_does_not_hold_up_others() {
    let h = Harness::start(ServeConfig::default()).await;
    let mut silent = UnixStream::connect(&h.socket).await.unwrap();
    silent
        .write_all(b"POST /rpc HTTP/1.1\r\ncontent-length: 100\r\n\r\n{")
        .await
        .unwrap();
    let (status, body) = post(
        &h.socket,
        r#"{"jsonrpc":"2.0","witVersion":"1","id":1,"method":"ping"}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
}
