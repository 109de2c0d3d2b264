//! What the page shows, read from the daemon: one JSON text per section (sessions, locks,
//! waits, intents, contracts, violations, worktree forecast), so that a section is sent to the
//! page only when its text changed.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{json, Value};

use crate::coord::ownership::is_unowned_session;
use crate::doorway::{Doorway, Failure};

/// The largest source file read to check accepted contracts against the working tree.
const MAX_CHECKED_FILE: u64 = 1 << 20;

/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i32 = -32601;

/// The page's sections, each as its JSON text, in a fixed order.
pub type Sections = Vec<(&'static str, String)>;

/// Reads every section from the daemon. Violations come from `check-contracts` on the
/// working-tree text of the files that hold accepted contracts (what an edit preview of
/// those files reports).
///
/// Sessions and intents of unowned work (`unowned:<worktree root>`, docs/protocol.md 15.3) carry
/// `"unowned": true`, so that the page shows them as such and never as an agent.
pub async fn take(daemon: &Doorway, root: &Path) -> Result<Sections, Failure> {
    let mut sessions = daemon.call_raw("session.list", json!({})).await?;
    mark_unowned(&mut sessions);
    let mut locks = daemon.call_raw("lock.query", json!({})).await?;
    // Time left is shown from `expiresAt`: the relative figure would make every snapshot
    // differ from the last one and defeat the change check.
    if let Value::Array(items) = &mut locks {
        for lock in items {
            if let Value::Object(map) = lock {
                map.remove("ttlRemainingMs");
            }
        }
    }
    let waits = offered(daemon, "lock.waits").await?;
    let mut intents = Vec::new();
    for status in ["declared", "active"] {
        if let Value::Array(items) = daemon
            .call_raw("intent.query", json!({"status": status}))
            .await?
        {
            intents.extend(items);
        }
    }
    intents.sort_by_key(|intent| intent["declaredAt"].as_i64().unwrap_or(0));
    let mut intents = Value::Array(intents);
    mark_unowned(&mut intents);
    let contracts = daemon.call_raw("contract.query", json!({})).await?;
    let violations = violations(daemon, root, &contracts).await?;
    let forecast = offered(daemon, "worktree.forecast").await?;
    Ok(vec![
        ("sessions", sessions.to_string()),
        ("locks", locks.to_string()),
        ("waits", waits.to_string()),
        ("intents", intents.to_string()),
        ("contracts", contracts.to_string()),
        ("violations", violations.to_string()),
        ("forecast", forecast.to_string()),
    ])
}

/// Adds `"unowned": true` to each record of `items` (sessions or intents) whose `sessionId`
/// is a worktree's unowned work ([`is_unowned_session`], the one test for it).
fn mark_unowned(items: &mut Value) {
    for item in items.as_array_mut().into_iter().flatten() {
        let unowned = item["sessionId"].as_str().is_some_and(is_unowned_session);
        if let (true, Value::Object(map)) = (unowned, item) {
            map.insert("unowned".into(), Value::Bool(true));
        }
    }
}

/// The answer of `method` (without params: `worktree.forecast`, docs/protocol.md 14.5, or
/// `lock.waits`) where the daemon offers it; `null` where it does not (an older daemon
/// answers METHOD_NOT_FOUND).
async fn offered(daemon: &Doorway, method: &str) -> Result<Value, Failure> {
    match daemon.call_raw(method, json!({})).await {
        Ok(answer) => Ok(answer),
        Err(Failure::Rpc(error)) if error.code == METHOD_NOT_FOUND => Ok(Value::Null),
        Err(other) => Err(other),
    }
}

async fn violations(daemon: &Doorway, root: &Path, contracts: &Value) -> Result<Value, Failure> {
    let files: BTreeSet<&str> = contracts
        .as_array()
        .into_iter()
        .flatten()
        .filter(|contract| contract["status"] == "accepted")
        .filter_map(|contract| contract["symbolPath"].as_str())
        .filter_map(|path| path.rsplit_once(':').map(|(file, _)| file))
        .collect();
    let files: Vec<Value> = files
        .into_iter()
        .filter_map(|file| {
            let path = root.join(file);
            let small = std::fs::metadata(&path).ok()?.len() <= MAX_CHECKED_FILE;
            let content = if small {
                std::fs::read_to_string(&path).ok()?
            } else {
                return None;
            };
            Some(json!({"path": file, "content": content}))
        })
        .collect();
    if files.is_empty() {
        return Ok(json!([]));
    }
    let answer = daemon
        .call_raw("check-contracts", json!({"files": files}))
        .await?;
    Ok(answer.get("violations").cloned().unwrap_or(json!([])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_records_of_unowned_work_are_marked_unowned() {
        let mut items = json!([
            {"sessionId": "unowned:/tmp/repo", "name": null},
            {"sessionId": "alice"},
            {"sessionId": "worktree:/tmp/repo-w1"},
            {"noSession": true},
        ]);
        mark_unowned(&mut items);
        let marked: Vec<bool> = items
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| item["unowned"] == true)
            .collect();
        assert_eq!(marked, [true, false, false, false]);
    }
}
