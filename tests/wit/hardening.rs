//! Issue 20 (hardening): each item's regression test, against a real daemon.

use serde_json::{json, Value};

use crate::harness::*;

/// One JSON-RPC call over a fresh connection: the HTTP status and the parsed answer.
fn call(repo: &Repo, method: &str, params: Value) -> (u16, Value) {
    let request =
        json!({"jsonrpc": "2.0", "witVersion": "1", "id": 1, "method": method, "params": params});
    let (status, body) = post(&repo.socket(), &request.to_string());
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (status, answer)
}

/// Item 8: the largest `since` is an ordinary position past every event, not a gap.
#[test]
fn events_poll_at_the_largest_since_reports_no_gap() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let (_, registered) = call(&repo, "register", json!({"name": "a", "sessionId": "s1"}));
    assert!(registered.get("result").is_some(), "{registered}");
    let (status, answer) = call(&repo, "events.poll", json!({"since": i64::MAX}));
    assert_eq!(status, 200, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["gap"], json!(false), "{answer}");
    assert_eq!(result["events"], json!([]), "{answer}");
    assert_eq!(result["next"], json!(i64::MAX), "{answer}");
}
