//! `lock.acquire`, `lock.release`, `lock.query` end to end (issue 4): every error with its exact
//! data, TTL expiry and takeover, refresh, racing acquires, caller warnings across an import.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Value};
use wit::client::{ClientError, WitClient};
use wit::protocol::{
    ErrorCode, LockAcquireParams, LockAcquireResult, LockQueryParams, LockReleaseParams,
    ProtocolError,
};

use crate::harness::*;

/// The JSON-RPC error of a call that must fail.
pub fn rpc_error<T: std::fmt::Debug>(result: Result<T, ClientError>) -> ProtocolError {
    match result {
        Err(ClientError::Rpc(error)) => error,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// Asserts a domain error: code -32000, the spec's name, and exactly `data`.
pub fn assert_domain(error: &ProtocolError, code: ErrorCode, data: Option<Value>) {
    assert!(error.is(code), "expected {code:?}, got {error:?}");
    assert_eq!(error.code, -32000, "{error:?}");
    assert_eq!(error.data, data, "data of {error:?}");
}

/// Asserts INVALID_REQUEST whose `fieldErrors` name exactly `fields` (each with a message).
pub fn assert_invalid_fields(error: &ProtocolError, fields: &[&str]) {
    assert_eq!(error.code, -32600, "{error:?}");
    assert_eq!(error.message, "INVALID_REQUEST", "{error:?}");
    let data = error.data.as_ref().expect("INVALID_REQUEST carries data");
    assert!(data["formErrors"].is_array(), "{data}");
    let named: HashSet<&str> = data["fieldErrors"]
        .as_object()
        .unwrap_or_else(|| panic!("fieldErrors is an object: {data}"))
        .iter()
        .map(|(field, messages)| {
            let messages = messages.as_array().unwrap();
            assert!(!messages.is_empty(), "{data}");
            assert!(
                messages
                    .iter()
                    .all(|m| m.as_str().is_some_and(|m| !m.is_empty())),
                "{data}"
            );
            field.as_str()
        })
        .collect();
    let wanted: HashSet<&str> = fields.iter().copied().collect();
    assert_eq!(named, wanted, "{data}");
}

pub fn acquire(symbol: &str, session: &str, ttl_ms: Option<i64>) -> LockAcquireParams {
    LockAcquireParams {
        symbol_path: symbol.into(),
        session_id: session.into(),
        ttl_ms,
        wait_ms: None,
    }
}

pub fn release(symbol: &str, session: &str) -> LockReleaseParams {
    LockReleaseParams {
        symbol_path: symbol.into(),
        session_id: session.into(),
    }
}

pub fn query(session: Option<&str>) -> LockQueryParams {
    LockQueryParams {
        session_id: session.map(str::to_owned),
    }
}

async fn raw_error(client: &WitClient, method: &str, params: Value) -> ProtocolError {
    rpc_error(client.call_raw(method, params).await)
}

#[test]
fn acquire_validates_every_param() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let e = raw_error(&client, "lock.acquire", json!({})).await;
        assert_invalid_fields(&e, &["symbolPath", "sessionId"]);
        let e = raw_error(
            &client,
            "lock.acquire",
            json!({"symbolPath": 1, "sessionId": [], "ttlMs": "x"}),
        )
        .await;
        assert_invalid_fields(&e, &["symbolPath", "sessionId", "ttlMs"]);
        let e = raw_error(
            &client,
            "lock.acquire",
            json!({"symbolPath": "a.ts", "sessionId": "s"}),
        )
        .await;
        assert_invalid_fields(&e, &["symbolPath"]);
        let e = raw_error(
            &client,
            "lock.acquire",
            json!({"symbolPath": "a.ts:f", "sessionId": ""}),
        )
        .await;
        assert_invalid_fields(&e, &["sessionId"]);
        let e = raw_error(
            &client,
            "lock.acquire",
            json!({"symbolPath": "a.ts:f", "sessionId": "s", "ttlMs": 1.5}),
        )
        .await;
        assert_invalid_fields(&e, &["ttlMs"]);
        for ttl in [0i64, -1, 604_800_001, i64::MAX] {
            let e = rpc_error(client.lock_acquire(acquire("a.ts:f", "s", Some(ttl))).await);
            assert_invalid_fields(&e, &["ttlMs"]);
        }
        for bad in [
            "../x.ts:f",
            "/etc/x.ts:f",
            "src/../../x.ts:f",
            ".:f",
            "a\\b.ts:f",
            "a.ts:",
            ":f",
        ] {
            let e = rpc_error(client.lock_acquire(acquire(bad, "s", None)).await);
            assert_invalid_fields(&e, &["symbolPath"]);
        }
        let long_session = "s".repeat(257);
        let e = rpc_error(
            client
                .lock_acquire(acquire("a.ts:f", &long_session, None))
                .await,
        );
        assert_invalid_fields(&e, &["sessionId"]);
        let long_path = format!("{}.ts:f", "a".repeat(4100));
        let e = rpc_error(client.lock_acquire(acquire(&long_path, "s", None)).await);
        assert_invalid_fields(&e, &["symbolPath"]);
        // Bounds are inclusive and nothing was stored by the refused calls.
        assert!(client.lock_query(query(None)).await.unwrap().is_empty());
        client
            .lock_acquire(acquire("a.ts:min", "s", Some(1)))
            .await
            .unwrap();
        client
            .lock_acquire(acquire("a.ts:max", "s", Some(604_800_000)))
            .await
            .unwrap();
    });
}

#[test]
fn release_and_query_validate_their_params() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let e = raw_error(&client, "lock.release", json!({})).await;
        assert_invalid_fields(&e, &["symbolPath", "sessionId"]);
        let e = raw_error(
            &client,
            "lock.release",
            json!({"symbolPath": "", "sessionId": "s"}),
        )
        .await;
        assert_invalid_fields(&e, &["symbolPath"]);
        let e = rpc_error(client.lock_release(release("../a.ts:f", "s")).await);
        assert_invalid_fields(&e, &["symbolPath"]);
        let e = raw_error(&client, "lock.query", json!({"sessionId": 5})).await;
        assert_invalid_fields(&e, &["sessionId"]);
        let e = raw_error(&client, "lock.query", json!([1])).await;
        assert_eq!(e.code, -32600, "{e:?}");
        // params may be omitted or {} where nothing is required.
        assert_eq!(
            client.call_raw("lock.query", Value::Null).await.unwrap(),
            json!([])
        );
        assert_eq!(
            client.call_raw("lock.query", json!({})).await.unwrap(),
            json!([])
        );
    });
}

#[test]
fn conflict_release_errors_and_normalisation() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let held = client
            .lock_acquire(acquire("./src//a.ts:f", "s1", Some(60_000)))
            .await
            .unwrap();
        assert_eq!(held.symbol_path, "src/a.ts:f");
        assert_eq!(held.session_id, "s1");
        assert!(held.warnings.is_empty());
        assert!(
            held.acquired_at.ends_with('Z') && held.acquired_at.len() == 24,
            "{}",
            held.acquired_at
        );
        assert!(held.expires_at > held.acquired_at);

        let e = rpc_error(
            client
                .lock_acquire(acquire("src/../src/a.ts:f", "s2", None))
                .await,
        );
        assert_domain(
            &e,
            ErrorCode::LockConflict,
            Some(json!({"heldBy": "s1", "expiresAt": held.expires_at})),
        );

        let e = rpc_error(client.lock_release(release("src/a.ts:f", "s2")).await);
        assert_domain(&e, ErrorCode::LockNotHeld, Some(json!({"heldBy": "s1"})));
        let e = rpc_error(client.lock_release(release("src/a.ts:g", "s1")).await);
        assert_domain(&e, ErrorCode::LockNotFound, None);

        // A symbol of a file that does not exist can be locked; names may contain ':'.
        let other = client
            .lock_acquire(acquire("nowhere/x.py:C.m:odd", "s2", None))
            .await
            .unwrap();
        assert_eq!(other.symbol_path, "nowhere/x.py:C.m:odd");

        let released = client
            .lock_release(release("src/a.ts:f", "s1"))
            .await
            .unwrap();
        assert!(released.released);
        let e = rpc_error(client.lock_release(release("src/a.ts:f", "s1")).await);
        assert_domain(&e, ErrorCode::LockNotFound, None);
        // Released: the other session takes it at once.
        client
            .lock_acquire(acquire("src/a.ts:f", "s2", None))
            .await
            .unwrap();
    });
}

#[test]
fn expired_locks_are_gone_everywhere_and_can_be_taken_over() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let first = client
            .lock_acquire(acquire("a.ts:f", "s1", Some(60)))
            .await
            .unwrap();
        let e = rpc_error(client.lock_acquire(acquire("a.ts:f", "s2", None)).await);
        assert_domain(
            &e,
            ErrorCode::LockConflict,
            Some(json!({"heldBy": "s1", "expiresAt": first.expires_at})),
        );
        tokio::time::sleep(Duration::from_millis(90)).await;
        // Invisible to query and release, whatever the sweep did.
        assert!(client.lock_query(query(None)).await.unwrap().is_empty());
        assert!(client
            .lock_query(query(Some("s1")))
            .await
            .unwrap()
            .is_empty());
        let e = rpc_error(client.lock_release(release("a.ts:f", "s1")).await);
        assert_domain(&e, ErrorCode::LockNotFound, None);
        // Another session takes it over as a new acquisition.
        let taken = client
            .lock_acquire(acquire("a.ts:f", "s2", Some(60_000)))
            .await
            .unwrap();
        assert!(taken.acquired_at > first.acquired_at);
        let e = rpc_error(client.lock_release(release("a.ts:f", "s1")).await);
        assert_domain(&e, ErrorCode::LockNotHeld, Some(json!({"heldBy": "s2"})));
        let e = rpc_error(client.lock_acquire(acquire("a.ts:f", "s1", None)).await);
        assert_domain(
            &e,
            ErrorCode::LockConflict,
            Some(json!({"heldBy": "s2", "expiresAt": taken.expires_at})),
        );

        // The old holder re-acquiring after expiry is a new acquisition too (acquiredAt moves).
        let mine = client
            .lock_acquire(acquire("a.ts:g", "s1", Some(30)))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let again = client
            .lock_acquire(acquire("a.ts:g", "s1", Some(60_000)))
            .await
            .unwrap();
        assert!(again.acquired_at > mine.acquired_at, "{mine:?} {again:?}");
    });
}

#[test]
fn refresh_keeps_acquired_at_and_moves_expiry() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let first = client
            .lock_acquire(acquire("a.ts:f", "s1", Some(10_000)))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(15)).await;
        let second = client
            .lock_acquire(acquire("a.ts:f", "s1", Some(20_000)))
            .await
            .unwrap();
        assert_eq!(second.acquired_at, first.acquired_at);
        assert!(second.expires_at > first.expires_at);
        // A refresh may also shorten the lock: expiresAt = now + ttlMs.
        let third = client
            .lock_acquire(acquire("a.ts:f", "s1", Some(5_000)))
            .await
            .unwrap();
        assert_eq!(third.acquired_at, first.acquired_at);
        assert!(third.expires_at < second.expires_at);
        let listed = client.lock_query(query(Some("s1"))).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].acquired_at, first.acquired_at);
        assert_eq!(listed[0].expires_at, third.expires_at);
        assert!(
            (1..=5_000).contains(&listed[0].ttl_remaining_ms),
            "{listed:?}"
        );
    });
}

#[test]
fn query_filters_literally_and_orders_by_acquisition() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        for (symbol, session) in [("b.ts:z", "s1"), ("b.ts:a", "s2"), ("a.ts:m", "s1")] {
            client
                .lock_acquire(acquire(symbol, session, Some(60_000)))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
        let all = client.lock_query(query(None)).await.unwrap();
        let order: Vec<_> = all
            .iter()
            .map(|l| (l.symbol_path.as_str(), l.session_id.as_str()))
            .collect();
        assert_eq!(
            order,
            [("b.ts:z", "s1"), ("b.ts:a", "s2"), ("a.ts:m", "s1")]
        );
        for lock in &all {
            assert!(
                lock.ttl_remaining_ms > 59_000 && lock.ttl_remaining_ms <= 60_000,
                "{lock:?}"
            );
        }
        let s1: Vec<_> = client
            .lock_query(query(Some("s1")))
            .await
            .unwrap()
            .into_iter()
            .map(|l| l.symbol_path)
            .collect();
        assert_eq!(s1, ["b.ts:z", "a.ts:m"]);
        assert!(client.lock_query(query(Some(""))).await.unwrap().is_empty());
        assert!(client
            .lock_query(query(Some("S1")))
            .await
            .unwrap()
            .is_empty());
        // The raw record has exactly the spec's keys.
        let raw = client
            .call_raw("lock.query", json!({"sessionId": "s2"}))
            .await
            .unwrap();
        let keys: HashSet<&str> = raw[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            HashSet::from([
                "symbolPath",
                "sessionId",
                "acquiredAt",
                "expiresAt",
                "ttlRemainingMs",
                "token"
            ])
        );
    });
}

/// Racing acquires on one symbol: exactly one winner per round, every loser told who won.
#[test]
fn racing_acquires_have_exactly_one_winner_per_round() {
    const CLIENTS: usize = 200;
    const ROUNDS: usize = 10;
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // One client (one connection) per contender, connected before the race.
        let mut clients = Vec::new();
        for _ in 0..CLIENTS {
            let client = repo.client();
            client.ping().await.unwrap();
            clients.push(client);
        }
        for round in 0..ROUNDS {
            let symbol = format!("src/race.ts:r{round}");
            let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(CLIENTS));
            let mut tasks = tokio::task::JoinSet::new();
            for (i, client) in clients.iter().enumerate() {
                let client = client.clone();
                let symbol = symbol.clone();
                let barrier = barrier.clone();
                tasks.spawn(async move {
                    let session = format!("racer-{i}");
                    barrier.wait().await;
                    let outcome = client
                        .lock_acquire(acquire(&symbol, &session, Some(60_000)))
                        .await;
                    (session, outcome)
                });
            }
            let mut winners: Vec<(String, LockAcquireResult)> = Vec::new();
            let mut losers = Vec::new();
            while let Some(joined) = tasks.join_next().await {
                let (session, outcome) = joined.unwrap();
                match outcome {
                    Ok(result) => winners.push((session, result)),
                    Err(error) => losers.push(rpc_error::<()>(Err(error))),
                }
            }
            assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
            assert_eq!(losers.len(), CLIENTS - 1);
            let (winner, won) = &winners[0];
            for loser in &losers {
                assert_domain(
                    loser,
                    ErrorCode::LockConflict,
                    Some(json!({"heldBy": winner, "expiresAt": won.expires_at})),
                );
            }
            let held = clients[0].lock_query(query(None)).await.unwrap();
            let holders: Vec<_> = held
                .iter()
                .filter(|l| l.symbol_path == symbol)
                .map(|l| l.session_id.clone())
                .collect();
            assert_eq!(holders.as_slice(), std::slice::from_ref(winner));
        }
    });
}

const CALLEE_TS: &str = "export function callee(x: number): number {\n  return x + 1;\n}\n\nexport function unrelated(): void {}\n";
const CALLER_TS: &str = "import { callee } from './b';\n\nexport function caller(): number {\n  return callee(41);\n}\n\nexport function bystander(): number {\n  return 0;\n}\n";

/// Two TS files joined by a relative import: `src/a.ts:caller` calls `src/b.ts:callee`.
pub fn write_import_pair(repo: &Repo) {
    repo.write("src/b.ts", CALLEE_TS);
    repo.write("src/a.ts", CALLER_TS);
}

#[test]
fn caller_warnings_follow_a_relative_import_and_never_block() {
    let repo = Repo::new();
    write_import_pair(&repo);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        client
            .lock_acquire(acquire("src/a.ts:caller", "s1", None))
            .await
            .unwrap();
        client
            .lock_acquire(acquire("src/a.ts:bystander", "s1", None))
            .await
            .unwrap();
        let locked = client
            .lock_acquire(acquire("src/b.ts:callee", "s2", None))
            .await
            .unwrap();
        let warnings = serde_json::to_value(&locked.warnings).unwrap();
        assert_eq!(
            warnings,
            json!([{"lockedSymbol": "src/a.ts:caller", "heldBy": "s1", "chain": ["src/a.ts:caller", "src/b.ts:callee"]}])
        );
        // A symbol nobody calls: no warnings. The caller's own session: no warnings either.
        let quiet = client
            .lock_acquire(acquire("src/b.ts:unrelated", "s2", None))
            .await
            .unwrap();
        assert!(quiet.warnings.is_empty());
        client
            .lock_release(release("src/b.ts:callee", "s2"))
            .await
            .unwrap();
        let own = client
            .lock_acquire(acquire("src/b.ts:callee", "s1", None))
            .await
            .unwrap();
        assert!(own.warnings.is_empty(), "{own:?}");
    });
}

#[test]
fn caller_warnings_see_edits_made_after_start() {
    let repo = Repo::new();
    write_import_pair(&repo);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        client
            .lock_acquire(acquire("src/a.ts:bystander", "s1", None))
            .await
            .unwrap();
        let before = client
            .lock_acquire(acquire("src/b.ts:callee", "s2", None))
            .await
            .unwrap();
        assert!(before.warnings.is_empty());
        client
            .lock_release(release("src/b.ts:callee", "s2"))
            .await
            .unwrap();
        // bystander now calls callee too (the size changes, so the index re-parses).
        repo.write(
            "src/a.ts",
            &CALLER_TS.replace("return 0;", "return callee(1) + callee(2);"),
        );
        let after = client
            .lock_acquire(acquire("src/b.ts:callee", "s2", None))
            .await
            .unwrap();
        let locked: Vec<_> = after
            .warnings
            .iter()
            .map(|w| w.locked_symbol.as_str())
            .collect();
        assert_eq!(locked, ["src/a.ts:bystander"], "{after:?}");
    });
}

/// `lock.waits` as plain JSON (the raw answer: the wire shape is what is under test).
fn lock_waits(client: &WitClient) -> Vec<Value> {
    let waits = block_on(client.call_raw("lock.waits", json!({}))).unwrap();
    waits.as_array().unwrap().clone()
}

/// Polls `lock.waits` until `done` holds (a wait is queued by another thread's request).
fn waits_until(client: &WitClient, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..400 {
        let waits = lock_waits(client);
        if done(&waits) {
            return waits;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{what}: lock.waits is {:?}", lock_waits(client));
}

/// `(symbolPath, sessionId, holder)` of each wait, in the answer's order.
fn who_waits(waits: &[Value]) -> Vec<(String, String, Value)> {
    waits
        .iter()
        .map(|w| {
            (
                w["symbolPath"].as_str().unwrap().to_owned(),
                w["sessionId"].as_str().unwrap().to_owned(),
                w["holder"].clone(),
            )
        })
        .collect()
}

/// A raw connection that sends a waiting `lock.acquire` and is read or dropped later.
fn waiting_acquire(repo: &Repo, symbol: &str, session: &str) -> std::os::unix::net::UnixStream {
    let body = json!({"jsonrpc": "2.0", "witVersion": "1", "id": 1, "method": "lock.acquire",
        "params": {"symbolPath": symbol, "sessionId": session, "waitMs": 60_000}})
    .to_string();
    let mut stream = std::os::unix::net::UnixStream::connect(repo.socket()).unwrap();
    write_request(&mut stream, "POST", "/rpc", body.as_bytes()).unwrap();
    stream
}

#[test]
fn lock_waits_shows_who_waits_for_whom_until_the_waiter_leaves_or_gets_the_lock() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    assert!(lock_waits(&client).is_empty(), "nobody waits yet");
    block_on(async {
        client
            .lock_acquire(acquire("b.ts:g", "hold-b", None))
            .await
            .unwrap();
        client
            .lock_acquire(acquire("a.ts:f", "hold-a", None))
            .await
            .unwrap();
    });

    // Two waiters on b (in arrival order), one on a: symbols in order, oldest first.
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut first_b = waiting_acquire(&repo, "b.ts:g", "w1");
    waits_until(&client, "w1 queued", |w| w.len() == 1);
    let second_b = waiting_acquire(&repo, "b.ts:g", "w2");
    waits_until(&client, "w2 queued", |w| w.len() == 2);
    let on_a = waiting_acquire(&repo, "a.ts:f", "w3");
    let waits = waits_until(&client, "w3 queued", |w| w.len() == 3);
    assert_eq!(
        who_waits(&waits),
        [
            ("a.ts:f".into(), "w3".into(), json!("hold-a")),
            ("b.ts:g".into(), "w1".into(), json!("hold-b")),
            ("b.ts:g".into(), "w2".into(), json!("hold-b")),
        ]
    );
    for wait in &waits {
        let keys: HashSet<&str> = wait
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            HashSet::from(["symbolPath", "sessionId", "since", "holder"])
        );
        assert!(wait["since"].as_i64().unwrap() >= started, "{wait}");
    }
    assert!(waits[1]["since"].as_i64() <= waits[2]["since"].as_i64());

    // A waiter whose connection closes leaves.
    drop(on_a);
    let waits = waits_until(&client, "w3 gone", |w| w.len() == 2);
    assert_eq!(who_waits(&waits)[0].1, "w1");

    // The first waiter gets the lock on release: it leaves, and w2 now waits for w1.
    block_on(client.lock_release(release("b.ts:g", "hold-b"))).unwrap();
    let (status, body) = read_response(&mut first_b).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"sessionId\":\"w1\""), "{body}");
    let waits = waits_until(&client, "w1 served", |w| w.len() == 1);
    assert_eq!(
        who_waits(&waits),
        [("b.ts:g".into(), "w2".into(), json!("w1"))]
    );
    drop(second_b);
    waits_until(&client, "w2 gone", <[Value]>::is_empty);
}
