//! SIGKILL in the middle of a write load: every acknowledged write survives the restart.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::task::JoinSet;
use wit::client::{ClientError, WitClient};
use wit::protocol::{ContractRecordStatus, IntentRecordStatus};

use super::{
    chained_functions, iquery, join_all, runtime, ALL_STATUSES, CALL_TIMEOUT, CHAINED_SIGNATURE,
};
use crate::contracts::{cquery, propose};
use crate::harness::*;
use crate::intents::declare;
use crate::locks::{acquire, query};

/// The file the writers work on.
const KILL_FILE: &str = "src/kill.ts";

/// What one writer's session wrote that the daemon acknowledged.
#[derive(Debug, Default)]
struct Acknowledged {
    session: String,
    /// (intent id, description, symbol)
    intents: Vec<(String, String, String)>,
    /// (symbol path, expiresAt)
    locks: Vec<(String, String)>,
    /// (contract id, symbol path)
    contracts: Vec<(String, String)>,
    ended_by_kill: bool,
}

/// Writes until the daemon goes away; a transport failure before the kill fails the test.
async fn writer(client: WitClient, task: usize, killing: Arc<AtomicBool>) -> Acknowledged {
    let session = format!("writer-{task}");
    let mut done = Acknowledged {
        session: session.clone(),
        ..Acknowledged::default()
    };
    let give_up = Instant::now() + Duration::from_secs(90);
    for n in 0.. {
        if Instant::now() > give_up {
            // The caller asserts `ended_by_kill`.
            break;
        }
        let outcome = match n % 3 {
            0 => {
                let description = format!("{session} intent {n}");
                let symbol = format!("k{}", n % 8);
                client
                    .intent_declare(declare(
                        &session,
                        &description,
                        &[KILL_FILE],
                        Some(&[symbol.as_str()]),
                    ))
                    .await
                    .map(|r| done.intents.push((r.intent_id, description, symbol)))
            }
            1 => {
                let symbol = format!("{KILL_FILE}:w{task}_{n}");
                client
                    .lock_acquire(acquire(&symbol, &session, Some(3_600_000)))
                    .await
                    .map(|r| done.locks.push((symbol, r.expires_at)))
            }
            _ => {
                let symbol = format!("{KILL_FILE}:k{}", n % 8);
                client
                    .contract_propose(propose(&session, &symbol))
                    .await
                    .map(|r| done.contracts.push((r.contract_id, symbol)))
            }
        };
        match outcome {
            Ok(()) => {}
            Err(error @ (ClientError::Transport(_) | ClientError::Unreachable(_))) => {
                assert!(
                    killing.load(Ordering::SeqCst),
                    "{session}: transport failure before the kill: {error}"
                );
                done.ended_by_kill = true;
                break;
            }
            Err(error) => panic!("{session}: write {n}: {error:?}"),
        }
    }
    done
}

/// 16 clients write (intents, long-TTL locks, contracts) while another thread SIGKILLs the
/// daemon after about 2 s. The clients see transport errors only after the kill and stop. A
/// daemon restarted on the same repository (over the stale socket and pid file) holds every
/// write that was acknowledged, each complete, and at most one unacknowledged (in-flight) write
/// per client.
#[test]
fn sigkill_mid_load_loses_no_acknowledged_write() {
    const TASKS: usize = 16;
    let repo = Repo::new();
    repo.write(KILL_FILE, &chained_functions("k", 8));
    let daemon = Daemon::start(&repo);
    let killing = Arc::new(AtomicBool::new(false));
    let killer = {
        let killing = Arc::clone(&killing);
        std::thread::spawn(move || {
            let mut daemon = daemon;
            std::thread::sleep(Duration::from_secs(2));
            killing.store(true, Ordering::SeqCst);
            daemon.kill9();
            daemon
        })
    };
    let ledgers = runtime().block_on(async {
        let mut tasks = JoinSet::new();
        for task in 0..TASKS {
            let client = repo.client().with_timeout(CALL_TIMEOUT);
            tasks.spawn(writer(client, task, Arc::clone(&killing)));
        }
        join_all(tasks).await
    });
    let mut killed = killer.join().unwrap();
    let stderr = killed.stderr_text();
    assert!(!stderr.contains("panicked"), "{stderr}");
    for done in &ledgers {
        assert!(done.ended_by_kill, "{} never saw the kill", done.session);
    }
    let acknowledged: usize = ledgers
        .iter()
        .map(|d| d.intents.len() + d.locks.len() + d.contracts.len())
        .sum();
    assert!(
        ledgers.iter().all(|d| !d.intents.is_empty()),
        "some writer had nothing acknowledged before the kill: {ledgers:?}"
    );
    // The killed daemon left its socket and pid file behind; they must not block a restart.
    assert!(repo.socket().exists());
    assert!(repo.path().join(".wit/daemon.pid").exists());
    let mut daemon = Daemon::start(&repo);
    let client = repo.client().with_timeout(CALL_TIMEOUT);
    let mut unacknowledged = 0;
    block_on(async {
        // Intents: every stored one complete; every acknowledged one stored as declared.
        let intents = client
            .intent_query(iquery(None, Some(IntentRecordStatus::Declared)))
            .await
            .unwrap();
        for status in &ALL_STATUSES[1..] {
            // What the load wrote straight to disk is nobody's work (15.3).
            let other: Vec<_> = client
                .intent_query(iquery(None, Some(*status)))
                .await
                .unwrap()
                .into_iter()
                .filter(|record| !record.session_id.starts_with("unowned:"))
                .collect();
            assert!(other.is_empty(), "{status}: {other:?}");
        }
        let mut by_id = HashMap::new();
        for record in &intents {
            let (session, n) = record
                .description
                .split_once(" intent ")
                .unwrap_or_else(|| panic!("{record:?}"));
            let n: usize = n.parse().unwrap();
            assert_eq!(record.session_id, session, "{record:?}");
            assert_eq!(record.files, format!(",{KILL_FILE},"), "{record:?}");
            let symbols: Value = serde_json::from_str(&record.symbols).unwrap();
            assert_eq!(symbols, json!([format!("k{}", n % 8)]), "{record:?}");
            match (record.start_byte, record.end_byte) {
                (Some(start), Some(end)) => assert!(start < end, "{record:?}"),
                _ => panic!("symbol range lost: {record:?}"),
            }
            assert!(by_id.insert(record.intent_id.as_str(), record).is_none());
        }
        let mut acknowledged_ids = HashSet::new();
        for done in &ledgers {
            for (id, description, _) in &done.intents {
                let record = by_id
                    .get(id.as_str())
                    .unwrap_or_else(|| panic!("acknowledged intent {id} lost"));
                assert_eq!(record.description, *description);
                assert_eq!(record.session_id, done.session);
                acknowledged_ids.insert(id.as_str());
            }
        }
        unacknowledged += by_id.len() - acknowledged_ids.len();

        // Locks: every acknowledged one live with its expiry; every stored one well-formed.
        let locks = client.lock_query(query(None)).await.unwrap();
        let stored: HashMap<&str, _> = locks.iter().map(|l| (l.symbol_path.as_str(), l)).collect();
        assert_eq!(stored.len(), locks.len());
        for lock in &locks {
            let (task, _) = lock
                .symbol_path
                .strip_prefix(&format!("{KILL_FILE}:w"))
                .and_then(|rest| rest.split_once('_'))
                .unwrap_or_else(|| panic!("{lock:?}"));
            assert_eq!(lock.session_id, format!("writer-{task}"), "{lock:?}");
        }
        let mut acknowledged_locks = 0;
        for done in &ledgers {
            for (symbol, expires_at) in &done.locks {
                let lock = stored
                    .get(symbol.as_str())
                    .unwrap_or_else(|| panic!("acknowledged lock {symbol} lost"));
                assert_eq!(lock.expires_at, *expires_at, "{lock:?}");
                acknowledged_locks += 1;
            }
        }
        unacknowledged += locks.len() - acknowledged_locks;

        // Contracts: every acknowledged one stored, proposed, with its signature.
        let contracts = client.contract_query(cquery(None, None)).await.unwrap();
        let by_id: HashMap<&str, _> = contracts
            .iter()
            .map(|c| (c.contract_id.as_str(), c))
            .collect();
        for contract in &contracts {
            assert_eq!(contract.status, ContractRecordStatus::Proposed);
            assert_eq!(contract.signature, CHAINED_SIGNATURE, "{contract:?}");
            assert!(contract.proposer_session_id.starts_with("writer-"));
            assert_eq!(contract.responder_session_id, None);
        }
        let mut acknowledged_contracts = 0;
        for done in &ledgers {
            for (id, symbol) in &done.contracts {
                let contract = by_id
                    .get(id.as_str())
                    .unwrap_or_else(|| panic!("acknowledged contract {id} lost"));
                assert_eq!(contract.symbol_path, *symbol);
                assert_eq!(contract.proposer_session_id, done.session);
                acknowledged_contracts += 1;
            }
        }
        unacknowledged += by_id.len() - acknowledged_contracts;

        // The restarted daemon takes writes.
        client
            .lock_acquire(acquire("src/after.ts:f", "after", None))
            .await
            .unwrap();
        client.ping().await.unwrap();
    });
    eprintln!("SIGKILL: {acknowledged} acknowledged writes kept, {unacknowledged} in-flight writes also stored");
    // Each writer had at most one request in flight at the kill.
    assert!(
        unacknowledged <= TASKS,
        "{unacknowledged} stored writes were never acknowledged ({acknowledged} were)"
    );
    let stderr = daemon.stderr_text();
    assert!(!stderr.contains("panicked"), "{stderr}");
}
