//! Reliability under load: a mixed workload from many clients keeps every invariant, a SIGKILL
//! in the middle of a write load loses no acknowledged write, a frozen client blocks nobody,
//! memory stays bounded under repeated work on large files, and a full disk gives JSON-RPC
//! errors the daemon recovers from.
//!
//! Only liveness is timed, with bounds far above what a loaded 2-core machine needs.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio::task::JoinSet;
use wit::client::{ClientError, WitClient};
use wit::protocol::{
    ContractRecordStatus, ContractRespondResultStatus, ErrorCode, IntentQueryParams, IntentRecord,
    IntentRecordStatus, IntentUpdateParams, IntentUpdateParamsStatus, ProtocolError,
};

use crate::contracts::{cquery, propose, respond};
use crate::harness::*;
use crate::intents::declare;
use crate::locks::{acquire, query, release, rpc_error};

/// Bounds every client call, so a hung daemon fails the test instead of stalling it.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Every function [`chained_functions`] writes has this signature.
const CHAINED_SIGNATURE: &str = r#"(a: number, b: string = "x"): number"#;

const ALL_STATUSES: [IntentRecordStatus; 4] = [
    IntentRecordStatus::Declared,
    IntentRecordStatus::Active,
    IntentRecordStatus::Resolved,
    IntentRecordStatus::Abandoned,
];

/// `count` exported functions `{prefix}0..`, each calling the next one.
fn chained_functions(prefix: &str, count: usize) -> String {
    let mut out = String::new();
    for n in 0..count {
        let _ = writeln!(
            out,
            "export function {prefix}{n}(a: number, b: string = \"x\"): number {{\n  const c = a * 2 + b.length;"
        );
        if n + 1 < count {
            let _ = writeln!(out, "  return {prefix}{}(c, b) + {n};\n}}\n", n + 1);
        } else {
            let _ = writeln!(out, "  return c;\n}}\n");
        }
    }
    out
}

/// [`chained_functions`] with as many functions as it takes to reach `bytes`: (text, count).
fn chained_functions_of_size(prefix: &str, bytes: usize) -> (String, usize) {
    let one = chained_functions(prefix, 2).len() / 2;
    let mut count = bytes / one;
    let mut text = chained_functions(prefix, count);
    while text.len() < bytes {
        count += 16;
        text = chained_functions(prefix, count);
    }
    (text, count)
}

/// A multi-thread runtime with 2 workers, like the CI machine's 2 cores.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Waits for every task; a task's panic is re-raised with its own message.
async fn join_all<T: 'static>(mut tasks: JoinSet<T>) -> Vec<T> {
    let mut out = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(value) => out.push(value),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => panic!("task failed: {error}"),
        }
    }
    out
}

/// The wall clock in unix milliseconds (the daemon reads the same clock).
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A small deterministic generator (xorshift64), seeded per task.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn below(&mut self, n: usize) -> usize {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x % n as u64) as usize
    }
}

fn iquery(session: Option<&str>, status: Option<IntentRecordStatus>) -> IntentQueryParams {
    IntentQueryParams {
        session_id: session.map(str::to_owned),
        file: None,
        status: status.map(|s| s.to_string()),
    }
}

fn record_status(status: IntentUpdateParamsStatus) -> IntentRecordStatus {
    match status {
        IntentUpdateParamsStatus::Active => IntentRecordStatus::Active,
        IntentUpdateParamsStatus::Resolved => IntentRecordStatus::Resolved,
        IntentUpdateParamsStatus::Abandoned => IntentRecordStatus::Abandoned,
    }
}

fn is_open(status: IntentRecordStatus) -> bool {
    matches!(
        status,
        IntentRecordStatus::Declared | IntentRecordStatus::Active
    )
}

// ---------------------------------------------------------------------------------------------
// 1. Mixed load
// ---------------------------------------------------------------------------------------------

const LOAD_FILE: &str = "src/load.ts";
/// Functions in [`LOAD_FILE`]; locks go to the first [`SHARED_SYMBOLS`] so that they conflict.
const LOAD_FUNCTIONS: usize = 8;
const SHARED_SYMBOLS: usize = 6;
/// Clock-reading slack (milliseconds) when deciding whether a lock is surely live or expired.
const SLACK_MS: i64 = 5;

/// How long the mixed load runs: `WIT_SOAK_SECS` (a soak run sets it high), else 4 s.
fn soak_duration() -> Duration {
    let secs = std::env::var("WIT_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(4.0);
    Duration::from_secs_f64(secs)
}

/// A lock as last acknowledged. The daemon set `expiresAt` to its clock at the acquisition plus
/// the TTL, and read that clock between `sent` and `answered`.
#[derive(Debug)]
struct Held {
    expires_at: String,
    sent: i64,
    answered: i64,
    ttl: i64,
}

impl Held {
    fn surely_live_at(&self, t: i64) -> bool {
        self.sent + self.ttl > t + SLACK_MS
    }

    fn surely_expired_at(&self, t: i64) -> bool {
        self.answered + self.ttl + SLACK_MS < t
    }
}

#[derive(Debug)]
struct IntentBelief {
    status: IntentRecordStatus,
    description: String,
    file: String,
}

/// Contracts proposed and not yet known to be answered: (id, proposer).
type ContractPool = Arc<Mutex<Vec<(String, String)>>>;

/// What one task's session did that the daemon acknowledged.
#[derive(Debug)]
struct Ledger {
    session: String,
    ops: usize,
    conflicts: usize,
    declared: usize,
    /// Symbol → the last acknowledged acquisition not followed by an acknowledged release.
    locks: HashMap<String, Held>,
    /// Intent id → its last acknowledged status.
    intents: HashMap<String, IntentBelief>,
    proposed: Vec<String>,
    /// (contract id, accept) of every acknowledged `contract.respond`.
    responded: Vec<(String, bool)>,
}

impl Ledger {
    fn new(session: String) -> Self {
        Self {
            session,
            ops: 0,
            conflicts: 0,
            declared: 0,
            locks: HashMap::new(),
            intents: HashMap::new(),
            proposed: Vec::new(),
            responded: Vec::new(),
        }
    }

    fn open_intents(&self) -> Vec<String> {
        let mut open: Vec<String> = self
            .intents
            .iter()
            .filter(|(_, b)| is_open(b.status))
            .map(|(id, _)| id.clone())
            .collect();
        open.sort();
        open
    }

    async fn acquire(&mut self, client: &WitClient, rng: &mut Rng) {
        let symbol = format!("{LOAD_FILE}:f{}", rng.below(SHARED_SYMBOLS));
        let ttl = if rng.below(4) == 0 {
            20 + rng.below(180) as i64
        } else {
            60_000
        };
        let sent = now_ms();
        let outcome = client
            .lock_acquire(acquire(&symbol, &self.session, Some(ttl)))
            .await;
        let answered = now_ms();
        match outcome {
            Ok(got) => {
                assert_eq!(got.symbol_path, symbol);
                assert_eq!(got.session_id, self.session);
                let held = Held {
                    expires_at: got.expires_at,
                    sent,
                    answered,
                    ttl,
                };
                self.locks.insert(symbol, held);
            }
            Err(error) => {
                let error = rpc_error::<()>(Err(error));
                assert!(
                    error.is(ErrorCode::LockConflict),
                    "{}: acquire {symbol}: {error:?}",
                    self.session
                );
                let data = error.data.clone().unwrap_or_default();
                assert!(data["expiresAt"].is_string(), "{error:?}");
                assert_ne!(
                    data["heldBy"],
                    json!(self.session),
                    "a session conflicts with itself: {error:?}"
                );
                if let Some(mine) = self.locks.remove(&symbol) {
                    assert!(
                        !mine.surely_live_at(answered),
                        "{}: {symbol} was acknowledged as held ({mine:?}) but {data} holds it",
                        self.session
                    );
                }
                self.conflicts += 1;
            }
        }
    }

    async fn release_one(&mut self, client: &WitClient, rng: &mut Rng) {
        let mut symbols: Vec<String> = self.locks.keys().cloned().collect();
        if symbols.is_empty() {
            return self.acquire(client, rng).await;
        }
        symbols.sort();
        let symbol = symbols.swap_remove(rng.below(symbols.len()));
        let held = self.locks.remove(&symbol).unwrap();
        let outcome = client.lock_release(release(&symbol, &self.session)).await;
        let answered = now_ms();
        match outcome {
            Ok(released) => assert!(released.released),
            Err(error) => {
                // Only a lock that may have expired can be gone or taken over.
                let error = rpc_error::<()>(Err(error));
                assert!(
                    error.is(ErrorCode::LockNotFound) || error.is(ErrorCode::LockNotHeld),
                    "{}: release {symbol}: {error:?}",
                    self.session
                );
                assert!(
                    !held.surely_live_at(answered),
                    "{}: release of {symbol}, acknowledged as held ({held:?}), failed: {error:?}",
                    self.session
                );
                if error.is(ErrorCode::LockNotHeld) {
                    assert_ne!(error.data.unwrap()["heldBy"], json!(self.session));
                }
            }
        }
    }

    async fn declare(&mut self, client: &WitClient, rng: &mut Rng) {
        let description = format!("{} change {}", self.session, self.declared);
        self.declared += 1;
        let symbol = format!("f{}", rng.below(LOAD_FUNCTIONS));
        let (file, symbols) = if rng.below(2) == 0 {
            (LOAD_FILE.to_owned(), vec![symbol.as_str()])
        } else {
            (format!("docs/n{}.md", rng.below(8)), Vec::new())
        };
        let symbols = (!symbols.is_empty()).then_some(symbols.as_slice());
        let declared = client
            .intent_declare(declare(
                &self.session,
                &description,
                &[file.as_str()],
                symbols,
            ))
            .await
            .unwrap_or_else(|e| panic!("{}: declare: {e:?}", self.session));
        assert_eq!(
            declared.conflicts.has_conflicts,
            !declared.conflicts.items.is_empty()
        );
        let belief = IntentBelief {
            status: IntentRecordStatus::Declared,
            description,
            file,
        };
        let before = self.intents.insert(declared.intent_id.clone(), belief);
        assert!(before.is_none(), "intent id reused: {}", declared.intent_id);
    }

    /// Moves one open intent forward; now and then asks a closed one for a move it may not make.
    async fn advance(&mut self, client: &WitClient, rng: &mut Rng) {
        let mut closed: Vec<&String> = self
            .intents
            .iter()
            .filter(|(_, b)| !is_open(b.status))
            .map(|(id, _)| id)
            .collect();
        closed.sort();
        if !closed.is_empty() && rng.below(6) == 0 {
            let id = closed[rng.below(closed.len())].clone();
            let current = self.intents[&id].status;
            let error = rpc_error(
                client
                    .intent_update(IntentUpdateParams {
                        intent_id: id.clone(),
                        session_id: self.session.clone(),
                        status: IntentUpdateParamsStatus::Active,
                    })
                    .await,
            );
            assert!(error.is(ErrorCode::InvalidTransition), "{error:?}");
            assert_eq!(
                error.data,
                Some(json!({"current": current.to_string(), "requested": "active"}))
            );
            return;
        }
        let open = self.open_intents();
        let id = open[rng.below(open.len())].clone();
        let next = match self.intents[&id].status {
            IntentRecordStatus::Declared => [
                IntentUpdateParamsStatus::Active,
                IntentUpdateParamsStatus::Resolved,
                IntentUpdateParamsStatus::Abandoned,
            ][rng.below(3)],
            _ => [
                IntentUpdateParamsStatus::Resolved,
                IntentUpdateParamsStatus::Abandoned,
            ][rng.below(2)],
        };
        let updated = client
            .intent_update(IntentUpdateParams {
                intent_id: id.clone(),
                session_id: self.session.clone(),
                status: next,
            })
            .await
            .unwrap_or_else(|e| panic!("{}: update {id} to {next}: {e:?}", self.session));
        assert_eq!(updated.intent_id, id);
        assert_eq!(updated.status, record_status(next).to_string());
        self.intents.get_mut(&id).unwrap().status = record_status(next);
    }

    async fn propose(&mut self, client: &WitClient, rng: &mut Rng, pool: &ContractPool) {
        let symbol = format!("{LOAD_FILE}:f{}", rng.below(LOAD_FUNCTIONS));
        let proposed = client
            .contract_propose(propose(&self.session, &symbol))
            .await
            .unwrap_or_else(|e| panic!("{}: propose {symbol}: {e:?}", self.session));
        assert_eq!(proposed.symbol_path, symbol);
        assert_eq!(proposed.signature, CHAINED_SIGNATURE);
        self.proposed.push(proposed.contract_id.clone());
        pool.lock()
            .unwrap()
            .push((proposed.contract_id, self.session.clone()));
    }

    async fn respond(&mut self, client: &WitClient, rng: &mut Rng, pool: &ContractPool) {
        let candidate = {
            let pool = pool.lock().unwrap();
            let others: Vec<&String> = pool
                .iter()
                .filter(|(_, proposer)| *proposer != self.session)
                .map(|(id, _)| id)
                .collect();
            (!others.is_empty()).then(|| others[rng.below(others.len())].clone())
        };
        let Some(id) = candidate else {
            return self.propose(client, rng, pool).await;
        };
        let accept = rng.below(2) == 0;
        match client
            .contract_respond(respond(&id, &self.session, accept))
            .await
        {
            Ok(answer) => {
                assert_eq!(answer.contract_id, id);
                let expected = if accept {
                    ContractRespondResultStatus::Accepted
                } else {
                    ContractRespondResultStatus::Rejected
                };
                assert_eq!(answer.status, expected);
                self.responded.push((id.clone(), accept));
                pool.lock().unwrap().retain(|(c, _)| *c != id);
            }
            Err(error) => {
                // Another session answered it first.
                let error = rpc_error::<()>(Err(error));
                assert!(error.is(ErrorCode::ContractAlreadyResolved), "{error:?}");
                let status = error.data.unwrap()["status"].clone();
                assert!(
                    status == json!("accepted") || status == json!("rejected"),
                    "{status}"
                );
            }
        }
    }

    /// This task is the only writer of its session and has nothing in flight, so the daemon's
    /// view of the session must be exactly the ledger (up to locks that may just have expired).
    async fn check_own_view(&self, client: &WitClient, rng: &mut Rng) {
        let sent = now_ms();
        let listed = client.lock_query(query(Some(&self.session))).await.unwrap();
        let answered = now_ms();
        let mut seen = HashSet::new();
        for lock in &listed {
            assert_eq!(lock.session_id, self.session, "{listed:?}");
            assert!(seen.insert(lock.symbol_path.as_str()), "{listed:?}");
            let held = self.locks.get(&lock.symbol_path).unwrap_or_else(|| {
                panic!(
                    "{}: listed lock never acknowledged or already released: {lock:?}",
                    self.session
                )
            });
            assert_eq!(lock.expires_at, held.expires_at, "{lock:?} {held:?}");
            assert!(lock.ttl_remaining_ms > 0, "{lock:?}");
            assert!(
                !held.surely_expired_at(sent),
                "expired lock listed: {lock:?}"
            );
        }
        for (symbol, held) in &self.locks {
            if held.surely_live_at(answered) {
                assert!(
                    seen.contains(symbol.as_str()),
                    "{}: held lock {symbol} ({held:?}) missing from {listed:?}",
                    self.session
                );
            }
        }
        let status = ALL_STATUSES[rng.below(ALL_STATUSES.len())];
        let records = client
            .intent_query(iquery(Some(&self.session), Some(status)))
            .await
            .unwrap();
        let mut listed_ids = BTreeSet::new();
        for record in &records {
            assert_eq!(record.session_id, self.session);
            assert_eq!(record.status, status);
            assert!(listed_ids.insert(record.intent_id.as_str()), "{records:?}");
        }
        let expected: BTreeSet<&str> = self
            .intents
            .iter()
            .filter(|(_, b)| b.status == status)
            .map(|(id, _)| id.as_str())
            .collect();
        assert_eq!(listed_ids, expected, "{}: {status} intents", self.session);
    }
}

async fn mixed_worker(
    client: WitClient,
    session: String,
    seed: u64,
    deadline: Instant,
    pool: ContractPool,
) -> Ledger {
    let mut rng = Rng::new(seed);
    let mut ledger = Ledger::new(session);
    while Instant::now() < deadline {
        match rng.below(10) {
            0..=2 => ledger.acquire(&client, &mut rng).await,
            3 | 4 => ledger.release_one(&client, &mut rng).await,
            5 if ledger.open_intents().len() < 3 => ledger.declare(&client, &mut rng).await,
            5 | 6 if !ledger.open_intents().is_empty() => {
                ledger.advance(&client, &mut rng).await;
            }
            6 => ledger.declare(&client, &mut rng).await,
            7 => ledger.propose(&client, &mut rng, &pool).await,
            8 => ledger.respond(&client, &mut rng, &pool).await,
            _ => ledger.check_own_view(&client, &mut rng).await,
        }
        ledger.ops += 1;
    }
    ledger
}

/// 32 clients, each with its own keep-alive connection, run locks, intents, contracts and
/// queries on a few shared symbols for `WIT_SOAK_SECS` (default 4 s). Every task records what
/// the daemon acknowledged and checks its own session's view as it goes; afterwards no symbol
/// has two live holders, every live acknowledged lock is listed with its holder and expiry and
/// nothing else is, every acknowledged intent has its last acknowledged status (and nothing
/// else exists), every contract answer was given once, and `ping` still answers.
#[test]
fn mixed_load_keeps_invariants() {
    const TASKS: usize = 32;
    let repo = Repo::new();
    repo.write(LOAD_FILE, &chained_functions("f", LOAD_FUNCTIONS));
    let _daemon = Daemon::start(&repo);
    let pool = ContractPool::default();
    let ledgers = runtime().block_on(async {
        let deadline = Instant::now() + soak_duration();
        let mut tasks = JoinSet::new();
        for i in 0..TASKS {
            let client = repo.client().with_timeout(CALL_TIMEOUT);
            tasks.spawn(mixed_worker(
                client,
                format!("load-{i}"),
                i as u64,
                deadline,
                pool.clone(),
            ));
        }
        join_all(tasks).await
    });
    assert_eq!(ledgers.len(), TASKS);
    for ledger in &ledgers {
        assert!(ledger.ops > 0, "{} did nothing", ledger.session);
    }
    let conflicts: usize = ledgers.iter().map(|l| l.conflicts).sum();
    eprintln!(
        "mixed load: {} operations ({} to {} per client), {conflicts} lock conflicts, {} intents, {} contracts",
        ledgers.iter().map(|l| l.ops).sum::<usize>(),
        ledgers.iter().map(|l| l.ops).min().unwrap_or(0),
        ledgers.iter().map(|l| l.ops).max().unwrap_or(0),
        ledgers.iter().map(|l| l.intents.len()).sum::<usize>(),
        ledgers.iter().map(|l| l.proposed.len()).sum::<usize>(),
    );
    assert!(conflicts > 0, "the load never made two sessions conflict");
    let by_session: HashMap<&str, &Ledger> =
        ledgers.iter().map(|l| (l.session.as_str(), l)).collect();

    let client = repo.client().with_timeout(CALL_TIMEOUT);
    block_on(async {
        // Locks: at most one live holder per symbol, and exactly the acknowledged ones.
        let sent = now_ms();
        let locks = client.lock_query(query(None)).await.unwrap();
        let answered = now_ms();
        let mut symbols = HashSet::new();
        for lock in &locks {
            assert!(
                symbols.insert(lock.symbol_path.as_str()),
                "two live holders of {}: {locks:?}",
                lock.symbol_path
            );
            let ledger = by_session
                .get(lock.session_id.as_str())
                .unwrap_or_else(|| panic!("lock of an unknown session: {lock:?}"));
            let held = ledger.locks.get(&lock.symbol_path).unwrap_or_else(|| {
                panic!("listed lock never acknowledged or already released: {lock:?}")
            });
            assert_eq!(lock.expires_at, held.expires_at, "{lock:?} {held:?}");
            assert!(
                !held.surely_expired_at(sent),
                "expired lock listed: {lock:?}"
            );
        }
        for ledger in &ledgers {
            for (symbol, held) in &ledger.locks {
                if held.surely_live_at(answered) {
                    assert!(
                        locks
                            .iter()
                            .any(|l| l.symbol_path == *symbol && l.session_id == ledger.session),
                        "{}: held lock {symbol} ({held:?}) missing from {locks:?}",
                        ledger.session
                    );
                }
            }
        }

        // Intents: each under exactly one status, the last acknowledged one.
        let mut found: HashMap<String, IntentRecord> = HashMap::new();
        for status in ALL_STATUSES {
            for record in client
                .intent_query(iquery(None, Some(status)))
                .await
                .unwrap()
            {
                assert_eq!(record.status, status, "{record:?}");
                let id = record.intent_id.clone();
                let before = found.insert(id, record);
                assert!(before.is_none(), "listed twice: {before:?}");
            }
        }
        let acknowledged: usize = ledgers.iter().map(|l| l.intents.len()).sum();
        assert!(acknowledged > 0);
        assert_eq!(found.len(), acknowledged, "intents held vs acknowledged");
        for ledger in &ledgers {
            for (id, belief) in &ledger.intents {
                let record = found
                    .get(id)
                    .unwrap_or_else(|| panic!("acknowledged intent {id} is missing"));
                assert_eq!(record.status, belief.status, "{record:?}");
                assert_eq!(record.session_id, ledger.session, "{record:?}");
                assert_eq!(record.description, belief.description, "{record:?}");
                assert_eq!(record.files, format!(",{},", belief.file), "{record:?}");
                assert!(record.updated_at >= record.declared_at, "{record:?}");
            }
        }
        let default: HashSet<String> = client
            .intent_query(iquery(None, None))
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.intent_id)
            .collect();
        let open: HashSet<String> = found
            .values()
            .filter(|r| is_open(r.status))
            .map(|r| r.intent_id.clone())
            .collect();
        assert_eq!(default, open, "the default query lists declared and active");

        // Contracts: every proposal kept, every answer given once and kept.
        let contracts = client.contract_query(cquery(None, None)).await.unwrap();
        let proposed: usize = ledgers.iter().map(|l| l.proposed.len()).sum();
        assert_eq!(contracts.len(), proposed, "contracts held vs acknowledged");
        let mut answers: HashMap<&str, (&str, bool)> = HashMap::new();
        for ledger in &ledgers {
            for (id, accept) in &ledger.responded {
                let before = answers.insert(id.as_str(), (ledger.session.as_str(), *accept));
                assert!(before.is_none(), "contract {id} answered twice");
            }
        }
        let by_id: HashMap<&str, _> = contracts
            .iter()
            .map(|c| (c.contract_id.as_str(), c))
            .collect();
        assert_eq!(by_id.len(), contracts.len());
        for ledger in &ledgers {
            for id in &ledger.proposed {
                let contract = by_id
                    .get(id.as_str())
                    .unwrap_or_else(|| panic!("acknowledged contract {id} is missing"));
                assert_eq!(contract.proposer_session_id, ledger.session);
                assert_eq!(contract.signature, CHAINED_SIGNATURE);
                assert!(contract.symbol_path.starts_with(LOAD_FILE));
            }
        }
        for contract in &contracts {
            match (contract.status, answers.get(contract.contract_id.as_str())) {
                (ContractRecordStatus::Proposed, None) => {
                    assert_eq!(contract.responder_session_id, None, "{contract:?}");
                }
                (ContractRecordStatus::Accepted, Some((responder, true)))
                | (ContractRecordStatus::Rejected, Some((responder, false))) => {
                    assert_eq!(
                        contract.responder_session_id.as_deref(),
                        Some(*responder),
                        "{contract:?}"
                    );
                    assert!(contract.responded_at.is_some(), "{contract:?}");
                }
                (_, answer) => panic!("{contract:?} does not match its answer {answer:?}"),
            }
        }

        client.ping().await.unwrap();
    });
}

// ---------------------------------------------------------------------------------------------
// 2. SIGKILL in the middle of a write load
// ---------------------------------------------------------------------------------------------

const KILL_FILE: &str = "src/kill.ts";

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
            let other = client
                .intent_query(iquery(None, Some(*status)))
                .await
                .unwrap();
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

// ---------------------------------------------------------------------------------------------
// 3. A frozen client
// ---------------------------------------------------------------------------------------------

/// Reads HTTP responses one after the other from one connection, keeping what arrives early.
struct ResponseReader {
    stream: UnixStream,
    buffer: Vec<u8>,
}

impl ResponseReader {
    /// Reads at most `most` bytes (at least one) into the buffer.
    fn read_some(&mut self, most: usize) -> std::io::Result<()> {
        let mut chunk = vec![0u8; most];
        let n = read_retrying(&mut self.stream, &mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    fn next_response(&mut self) -> std::io::Result<(u16, Vec<u8>)> {
        loop {
            if let Some((status, body, end)) = first_response(&self.buffer) {
                let body = body.to_vec();
                self.buffer.drain(..end);
                return Ok((status, body));
            }
            self.read_some(1 << 16)?;
        }
    }
}

fn http_request(body: &str) -> String {
    format!(
        "POST /rpc HTTP/1.1\r\nhost: localhost\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

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
            let mut requests = String::new();
            for id in 0..PIPELINED {
                requests.push_str(&http_request(&format!(
                    r#"{{"jsonrpc":"2.0","witVersion":"1","id":{id},"method":"intent.query","params":{{}}}}"#
                )));
            }
            stream.write_all(requests.as_bytes()).unwrap();
            stream
        })
        .collect();
    let mut silent = UnixStream::connect(&socket).unwrap();
    let mut half = UnixStream::connect(&socket).unwrap();
    let ping_request = http_request(PING);
    let (half_sent, half_rest) = ping_request.split_at(ping_request.len() - PING.len() / 2);
    half.write_all(half_sent.as_bytes()).unwrap();
    // The daemon has started answering the frozen clients (and is now stuck writing to them).
    let mut frozen: Vec<ResponseReader> = frozen
        .into_iter()
        .map(|stream| {
            stream.set_read_timeout(Some(CALL_TIMEOUT)).unwrap();
            let mut reader = ResponseReader {
                stream,
                buffer: Vec::new(),
            };
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
    silent.write_all(ping_request.as_bytes()).unwrap();
    half.write_all(half_rest.as_bytes()).unwrap();
    for stream in [&mut silent, &mut half] {
        let (status, body) = read_response(stream).unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(r#""result":"pong""#), "{body}");
    }
    for reader in &mut frozen {
        for id in 0..PIPELINED {
            let (status, body) = reader.next_response().unwrap();
            assert_eq!(status, 200);
            let answer: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(answer["id"], json!(id));
            assert_eq!(answer["result"].as_array().unwrap().len(), INTENTS);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Memory
// ---------------------------------------------------------------------------------------------

/// The resident set of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .map(|v| v.trim().trim_end_matches("kB").trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no VmRSS in {status}"))
}

/// Calls `from..to`: lock.acquire + lock.release on a symbol of the big file and
/// contract.propose on a symbol of the small one, spread over the clients.
async fn large_file_work(
    clients: &[WitClient],
    (big, small): (usize, usize),
    from: usize,
    to: usize,
) {
    let mut tasks = JoinSet::new();
    let stride = clients.len();
    for (t, client) in clients.iter().enumerate() {
        let client = client.clone();
        tasks.spawn(async move {
            let session = format!("mem-{t}");
            for k in (from..to).filter(|k| k % stride == t) {
                // Distinct symbols: the multipliers are primes that divide neither count.
                let symbol = format!("src/big.ts:fn_{}", (k * 7919) % big);
                let got = client
                    .lock_acquire(acquire(&symbol, &session, Some(60_000)))
                    .await
                    .unwrap_or_else(|e| panic!("acquire {symbol}: {e:?}"));
                assert_eq!(got.symbol_path, symbol);
                client
                    .lock_release(release(&symbol, &session))
                    .await
                    .unwrap_or_else(|e| panic!("release {symbol}: {e:?}"));
                let symbol = format!("src/small.ts:g_{}", (k * 104_729) % small);
                let proposed = client
                    .contract_propose(propose(&session, &symbol))
                    .await
                    .unwrap_or_else(|e| panic!("propose {symbol}: {e:?}"));
                assert_eq!(proposed.signature, CHAINED_SIGNATURE, "{symbol}");
            }
        });
    }
    join_all(tasks).await;
}

/// The daemon bounds glibc's malloc arenas (it re-executes itself with `MALLOC_ARENA_MAX`),
/// keeping its process id; an explicit setting is left alone.
#[test]
fn the_daemon_runs_with_bounded_malloc_arenas() {
    let repo = Repo::new();
    let daemon = Daemon::start(&repo);
    let environ = std::fs::read(format!("/proc/{}/environ", daemon.child.id())).unwrap();
    let vars: Vec<String> = environ
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    let expected = match std::env::var("MALLOC_ARENA_MAX") {
        Ok(value) => format!("MALLOC_ARENA_MAX={value}"),
        Err(_) => "MALLOC_ARENA_MAX=2".to_owned(),
    };
    assert!(vars.contains(&expected), "{vars:?}");
}

/// With a 1.7 MB and a 169 KB TypeScript file in the repository, 1,000 lock.acquire +
/// lock.release on symbols of the big one and 1,000 contract.propose on symbols of the small
/// one (4 clients in parallel): the daemon's resident set stays under 100 MB and grows by less
/// than 25 MB between the 200th call of each and the end (memory does not grow per call).
#[test]
fn memory_stays_bounded_under_repeated_large_file_work() {
    const CALLS: usize = 1_000;
    const CHECKPOINT: usize = 200;
    let repo = Repo::new();
    let (big_text, big) = chained_functions_of_size("fn_", 1_700_000);
    let (small_text, small) = chained_functions_of_size("g_", 169_000);
    assert!(big % 7919 != 0 && small % 104_729 != 0 && small >= CALLS);
    repo.write("src/big.ts", &big_text);
    repo.write("src/small.ts", &small_text);
    drop((big_text, small_text));
    let daemon = Daemon::start(&repo);
    let pid = daemon.child.id();
    let clients: Vec<WitClient> = (0..4)
        .map(|_| repo.client().with_timeout(CALL_TIMEOUT))
        .collect();
    let runtime = runtime();
    runtime.block_on(large_file_work(&clients, (big, small), 0, CHECKPOINT));
    let checkpoint = rss_kib(pid);
    runtime.block_on(large_file_work(&clients, (big, small), CHECKPOINT, CALLS));
    let end = rss_kib(pid);
    eprintln!(
        "daemon VmRSS: {checkpoint} KiB after {CHECKPOINT} calls of each, {end} KiB after {CALLS}"
    );
    let contracts = runtime
        .block_on(clients[0].contract_query(cquery(None, None)))
        .unwrap();
    assert_eq!(contracts.len(), CALLS);
    assert!(
        end < 100 * 1024,
        "daemon RSS {end} KiB at the end (checkpoint {checkpoint} KiB)"
    );
    assert!(
        end.saturating_sub(checkpoint) < 25 * 1024,
        "daemon RSS grew from {checkpoint} KiB to {end} KiB"
    );
}

// ---------------------------------------------------------------------------------------------
// 5. A full disk
// ---------------------------------------------------------------------------------------------

/// A small tmpfs mounted at a directory; lazily unmounted on drop.
struct TmpfsMount {
    dir: PathBuf,
}

impl TmpfsMount {
    fn mount(dir: &Path, size: &str) -> Result<Self, String> {
        std::fs::create_dir_all(dir).unwrap();
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if output.status.success() {
            Ok(Self {
                dir: dir.to_path_buf(),
            })
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Writes zeros to `path` until the file system says it is full; returns the bytes written.
fn fill(path: &Path) -> usize {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = [0u8; 4096];
    let mut written = 0;
    loop {
        match file.write(&chunk) {
            Ok(0) => panic!("write of zero bytes"),
            Ok(n) => written += n,
            Err(error) if error.kind() == std::io::ErrorKind::StorageFull => return written,
            Err(error) => panic!("filling {}: {error}", path.display()),
        }
    }
}

/// Asserts a storage failure: `-32603 INTERNAL_ERROR` whose detail names the database.
fn assert_storage_failure(error: &ProtocolError) {
    assert_eq!(error.code, -32603, "{error:?}");
    assert_eq!(error.message, "INTERNAL_ERROR", "{error:?}");
    let detail = error.data.as_ref().and_then(|d| d["detail"].as_str());
    let detail = detail.unwrap_or_else(|| panic!("no data.detail: {error:?}"));
    assert!(detail.contains("database or disk is full"), "{error:?}");
}

/// Waits (up to 10 s: the log is drained by a thread) until the daemon's stderr has `needle`.
fn wait_for_log(daemon: &mut Daemon, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = daemon.stderr_text();
        if text.contains(needle) || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// With `.wit` on a 2 MB tmpfs (root only): once the file system is full, lock.acquire,
/// intent.declare and contract.propose answer `-32603` naming the full database, on a
/// connection that stays usable; reads, `ping` and the earlier data are unaffected, nothing of
/// the failed writes is stored, and the daemon logs the failure. Once space is freed, writes
/// succeed again, and everything acknowledged survives a restart. Where tmpfs cannot be
/// mounted (or `WIT_TEST_NO_MOUNT=1`), an unwritable or unreadable `.wit/state.db` must make
/// the daemon exit non-zero with a clear message and no panic, and it starts and serves with
/// the earlier data once the file is restored.
#[test]
fn a_full_disk_gives_errors_and_the_daemon_recovers() {
    if shared_store_skips("a full disk under .wit/") {
        return;
    }
    let repo = Repo::new();
    let wit_dir = repo.path().join(".wit");
    let mounted = if std::env::var_os("WIT_TEST_NO_MOUNT").is_some() {
        Err("WIT_TEST_NO_MOUNT is set".to_owned())
    } else {
        TmpfsMount::mount(&wit_dir, "2m")
    };
    match mounted {
        Ok(mount) => full_tmpfs(&repo, mount),
        Err(reason) => {
            eprintln!("no tmpfs ({}); a broken state file instead", reason.trim());
            broken_state_file(&repo);
        }
    }
}

fn full_tmpfs(repo: &Repo, _mount: TmpfsMount) {
    let filler = repo.path().join(".wit/filler");
    let mut daemon = Daemon::start(repo);
    let client = repo.client().with_timeout(CALL_TIMEOUT);
    let mut raw = UnixStream::connect(repo.socket()).unwrap();
    raw.set_read_timeout(Some(CALL_TIMEOUT)).unwrap();
    let rpc = |id: usize, method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "witVersion": "1", "id": id, "method": method, "params": params})
            .to_string()
    };
    block_on(async {
        let mut before = Vec::new();
        for i in 0..3 {
            let symbol = format!("src/a.ts:before{i}");
            let lock = client
                .lock_acquire(acquire(&symbol, "s1", Some(3_600_000)))
                .await
                .unwrap();
            before.push(lock);
        }
        let intent = client
            .intent_declare(declare("s1", "before the disk filled", &["src/a.ts"], None))
            .await
            .unwrap();

        let filled = fill(&filler);
        assert!(filled > 0);
        for i in 0..3 {
            let symbol = format!("src/a.ts:during{i}");
            let error = rpc_error(client.lock_acquire(acquire(&symbol, "s1", None)).await);
            assert_storage_failure(&error);
        }
        let error = rpc_error(
            client
                .intent_declare(declare("s1", "while full", &["src/b.ts"], None))
                .await,
        );
        assert_storage_failure(&error);
        // The same keep-alive connection answers a failed write and then a ping.
        let body = rpc(
            1,
            "lock.acquire",
            json!({"symbolPath": "src/a.ts:raw", "sessionId": "s2"}),
        );
        let (status, answer) = exchange(&mut raw, "POST", "/rpc", body.as_bytes()).unwrap();
        assert_eq!(status, 200, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["error"]["code"], json!(-32603), "{answer}");
        let (status, answer) = exchange(&mut raw, "POST", "/rpc", PING.as_bytes()).unwrap();
        assert_eq!(status, 200);
        assert!(answer.contains("pong"), "{answer}");
        client.ping().await.unwrap();
        // Reads still work and show nothing of the failed writes.
        let locks = client.lock_query(query(None)).await.unwrap();
        let symbols: Vec<&str> = locks.iter().map(|l| l.symbol_path.as_str()).collect();
        assert_eq!(
            symbols,
            ["src/a.ts:before0", "src/a.ts:before1", "src/a.ts:before2"]
        );
        let intents = client.intent_query(iquery(None, None)).await.unwrap();
        assert_eq!(intents.len(), 1, "{intents:?}");
        assert_eq!(intents[0].intent_id, intent.intent_id);

        let log = wait_for_log(&mut daemon, "database or disk is full");
        eprintln!("daemon log while the disk was full:\n{log}");
        assert!(log.contains("storage failure"), "{log}");
        assert!(log.contains("database or disk is full"), "{log}");
        assert!(!log.contains("panicked"), "{log}");
        assert!(
            !log.contains('\u{1b}'),
            "plain text, no colour codes: {log:?}"
        );

        std::fs::remove_file(&filler).unwrap();
        let after = client
            .lock_acquire(acquire("src/a.ts:after", "s1", Some(3_600_000)))
            .await
            .unwrap();
        client
            .intent_declare(declare("s1", "after space was freed", &["src/b.ts"], None))
            .await
            .unwrap();
        let locks = client.lock_query(query(None)).await.unwrap();
        for lock in before.iter().chain([&after]) {
            assert!(
                locks
                    .iter()
                    .any(|l| l.symbol_path == lock.symbol_path && l.expires_at == lock.expires_at),
                "{lock:?} missing from {locks:?}"
            );
        }
        assert_eq!(locks.len(), 4, "{locks:?}");
    });
    // Everything acknowledged survives a clean restart on the same file system.
    assert!(daemon.terminate().success());
    drop(daemon);
    let mut daemon = Daemon::start(repo);
    let client = repo.client().with_timeout(CALL_TIMEOUT);
    block_on(async {
        let locks = client.lock_query(query(None)).await.unwrap();
        let mut symbols: Vec<&str> = locks.iter().map(|l| l.symbol_path.as_str()).collect();
        symbols.sort_unstable();
        assert_eq!(
            symbols,
            [
                "src/a.ts:after",
                "src/a.ts:before0",
                "src/a.ts:before1",
                "src/a.ts:before2"
            ]
        );
        let descriptions: BTreeSet<String> = client
            .intent_query(iquery(None, None))
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.description)
            .collect();
        assert_eq!(
            descriptions,
            BTreeSet::from([
                "before the disk filled".into(),
                "after space was freed".into()
            ])
        );
    });
    assert!(!daemon.stderr_text().contains("panicked"));
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The fallback fault for machines that cannot mount: a state file the daemon cannot open.
fn broken_state_file(repo: &Repo) {
    let wit_dir = repo.path().join(".wit");
    let database = wit_dir.join("state.db");
    let lock = {
        let mut daemon = Daemon::start(repo);
        let client = repo.client().with_timeout(CALL_TIMEOUT);
        let lock =
            block_on(client.lock_acquire(acquire("src/a.ts:kept", "s1", Some(3_600_000)))).unwrap();
        assert!(daemon.terminate().success());
        lock
    };
    assert!(database.exists());

    // Restores usable modes even when an assertion fails, so the temporary repository can go.
    struct Restore(PathBuf);
    impl Drop for Restore {
        fn drop(&mut self) {
            let mode = |path: &Path, mode| {
                let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
            };
            mode(&self.0, 0o700);
            mode(&self.0.join("state.db"), 0o600);
        }
    }
    let _restore = Restore(wit_dir.clone());
    set_mode(&database, 0o400);
    set_mode(&wit_dir, 0o500);
    // Without CAP_DAC_OVERRIDE the daemon cannot open the database for writing. A privileged
    // user that could not mount (say, a container without CAP_SYS_ADMIN) gets a file that is
    // not a database instead, with the real one moved aside.
    let privileged = std::fs::OpenOptions::new()
        .append(true)
        .open(&database)
        .is_ok();
    let aside = repo.path().join("state-aside");
    let expected = if privileged {
        set_mode(&wit_dir, 0o700);
        set_mode(&database, 0o600);
        std::fs::create_dir(&aside).unwrap();
        for name in ["state.db", "state.db-wal", "state.db-shm"] {
            if wit_dir.join(name).exists() {
                std::fs::rename(wit_dir.join(name), aside.join(name)).unwrap();
            }
        }
        std::fs::write(
            &database,
            "this is not a SQLite database, but it is long enough to look like one\n".repeat(64),
        )
        .unwrap();
        "file is not a database"
    } else {
        "Permission denied"
    };

    let mut daemon = Daemon::spawn(repo);
    let status = wait_with_timeout(&mut daemon.child, CALL_TIMEOUT);
    let stderr = daemon.stderr_text();
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("could not open the daemon state"),
        "{stderr}"
    );
    assert!(stderr.contains(".wit/state.db"), "names the file: {stderr}");
    assert!(stderr.contains(expected), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("stack backtrace"),
        "{stderr}"
    );
    assert!(
        !repo.socket().exists(),
        "a failed start left its socket behind"
    );
    drop(daemon);

    // Restored, the daemon starts, serves, and has the earlier lock.
    set_mode(&wit_dir, 0o700);
    if privileged {
        std::fs::remove_file(&database).unwrap();
        for name in ["state.db", "state.db-wal", "state.db-shm"] {
            let _ = std::fs::remove_file(wit_dir.join(name));
            if aside.join(name).exists() {
                std::fs::rename(aside.join(name), wit_dir.join(name)).unwrap();
            }
        }
    } else {
        set_mode(&database, 0o600);
    }
    let mut daemon = Daemon::start(repo);
    let client = repo.client().with_timeout(CALL_TIMEOUT);
    block_on(async {
        let locks = client.lock_query(query(None)).await.unwrap();
        assert_eq!(locks.len(), 1, "{locks:?}");
        assert_eq!(locks[0].symbol_path, lock.symbol_path);
        assert_eq!(locks[0].expires_at, lock.expires_at);
        client
            .lock_acquire(acquire("src/a.ts:new", "s1", None))
            .await
            .unwrap();
    });
    assert!(!daemon.stderr_text().contains("panicked"));
}
