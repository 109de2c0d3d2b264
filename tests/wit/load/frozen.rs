//! A frozen client: connections that never read their answers, never send, or stop halfway
//! hold up nobody else, and get every answer once they go on.

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::CALL_TIMEOUT;
use crate::harness::*;
use crate::intents::declare;
use crate::locks::acquire;

/// `ping` on a fresh connection; fails when it takes longer than `bound`.
fn ping_within(socket: &Path, bound: Duration) {
    let started = Instant::now();
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(bound)).unwrap();
    stream.set_write_timeout(Some(bound)).unwrap();
    let (status, body) = exchange(&mut stream, "POST", "/rpc", PING.as_bytes())
        .unwrap_or_else(|e| panic!("ping not answered within {bound:?}: {e}"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""result":"pong""#), "{body}");
    assert!(started.elapsed() < bound, "{:?}", started.elapsed());
}

/// Two clients pipeline `intent.query` requests whose answers (over 1 MiB each, far more than
/// a Unix socket buffers) they never read, so the daemon's writes to them block; a third
/// connects and sends nothing, a fourth sends headers and half a body. Meanwhile fresh
/// connections get `ping` and a pooled client gets `lock.acquire` answered, each within 5 s
/// (typically milliseconds). Then the stalled clients finish their requests and get every
/// answer, complete and in order.
#[test]
fn a_frozen_client_does_not_block_others() {
    const INTENTS: usize = 200;
    const PIPELINED: usize = 8;
    const BOUND: Duration = Duration::from_secs(5);
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let socket = repo.socket();
    let client = repo.client().with_timeout(CALL_TIMEOUT);
    let answer_len = block_on(async {
        for i in 0..INTENTS {
            let description = format!("{i}: {}", "a long description ".repeat(420));
            let file = format!("docs/n{i}.md");
            client
                .intent_declare(declare("bulk", &description, &[file.as_str()], None))
                .await
                .unwrap();
        }
        let all = client.call_raw("intent.query", json!({})).await.unwrap();
        assert_eq!(all.as_array().unwrap().len(), INTENTS);
        all.to_string().len()
    });
    assert!(answer_len > 1 << 20, "{answer_len}");

    let frozen: Vec<UnixStream> = (0..2)
        .map(|_| {
            let mut stream = UnixStream::connect(&socket).unwrap();
            let mut requests = Vec::new();
            for id in 0..PIPELINED {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","witVersion":"1","id":{id},"method":"intent.query","params":{{}}}}"#
                );
                requests.extend(daemon_request("POST", "/rpc", body.as_bytes()));
            }
            stream.write_all(&requests).unwrap();
            stream
        })
        .collect();
    let mut silent = UnixStream::connect(&socket).unwrap();
    let mut half = UnixStream::connect(&socket).unwrap();
    let ping_request = daemon_request("POST", "/rpc", PING.as_bytes());
    let (half_sent, half_rest) = ping_request.split_at(ping_request.len() - PING.len() / 2);
    half.write_all(half_sent).unwrap();
    // The daemon has started answering the frozen clients (and is now stuck writing to them).
    let mut frozen: Vec<ResponseReader<UnixStream>> = frozen
        .into_iter()
        .map(|stream| {
            stream.set_read_timeout(Some(CALL_TIMEOUT)).unwrap();
            let mut reader = ResponseReader::new(stream);
            reader.read_some(16).unwrap();
            reader
        })
        .collect();

    let others = repo.client().with_timeout(BOUND);
    block_on(async {
        for round in 0..20 {
            ping_within(&socket, BOUND);
            let started = Instant::now();
            let symbol = format!("src/other.ts:f{round}");
            others
                .lock_acquire(acquire(&symbol, "other", None))
                .await
                .unwrap_or_else(|e| panic!("lock.acquire not answered within {BOUND:?}: {e:?}"));
            assert!(started.elapsed() < BOUND, "{:?}", started.elapsed());
        }
    });

    // The stalled clients were only waiting for themselves.
    for stream in [&mut silent, &mut half] {
        stream.set_read_timeout(Some(CALL_TIMEOUT)).unwrap();
    }
    silent.write_all(&ping_request).unwrap();
    half.write_all(half_rest).unwrap();
    for stream in [&mut silent, &mut half] {
        let (status, body) = read_response(stream).unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(r#""result":"pong""#), "{body}");
    }
    for reader in &mut frozen {
        for id in 0..PIPELINED {
            let response = reader.next_response().unwrap();
            assert_eq!(response.status, 200);
            let answer: Value = serde_json::from_slice(&response.body).unwrap();
            assert_eq!(answer["id"], json!(id));
            assert_eq!(answer["result"].as_array().unwrap().len(), INTENTS);
        }
    }
}
