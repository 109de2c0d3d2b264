//! The mixed load's model of one client: what its session did that the daemon acknowledged
//! (its [`Ledger`]) and the random operations that keep it (`checks` compares the daemon's
//! view with it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use wit::client::WitClient;
use wit::protocol::{
    ContractRespondResultStatus, ErrorCode, IntentRecordStatus, IntentUpdateParams,
    IntentUpdateParamsStatus,
};

use super::{is_open, now_ms, CHAINED_SIGNATURE};
use crate::contracts::{propose, respond};
use crate::intents::declare;
use crate::locks::{acquire, release, rpc_error};

/// The file the mixed load works on.
pub(super) const LOAD_FILE: &str = "src/load.ts";
/// Functions in [`LOAD_FILE`]; locks go to the first [`SHARED_SYMBOLS`] so that they conflict.
pub(super) const LOAD_FUNCTIONS: usize = 8;
/// How many of the functions locks go to.
const SHARED_SYMBOLS: usize = 6;
/// Clock-reading slack (milliseconds) when deciding whether a lock is surely live or expired.
const SLACK_MS: i64 = 5;

/// A small deterministic generator (xorshift64), seeded per task.
pub(super) struct Rng(u64);

impl Rng {
    /// A generator for task `seed`.
    pub(super) fn new(seed: u64) -> Self {
        Self(seed.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number below `n`.
    pub(super) fn below(&mut self, n: usize) -> usize {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x % n as u64) as usize
    }
}

/// A lock as last acknowledged. The daemon set `expiresAt` to its clock at the acquisition plus
/// the TTL, and read that clock between `sent` and `answered`.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) expires_at: String,
    sent: i64,
    answered: i64,
    ttl: i64,
}

impl Held {
    /// Whether the lock is live at `t` whatever the daemon's clock read.
    pub(super) fn surely_live_at(&self, t: i64) -> bool {
        self.sent + self.ttl > t + SLACK_MS
    }

    /// Whether the lock has expired at `t` whatever the daemon's clock read.
    pub(super) fn surely_expired_at(&self, t: i64) -> bool {
        self.answered + self.ttl + SLACK_MS < t
    }
}

/// An intent as last acknowledged.
#[derive(Debug)]
pub(super) struct IntentBelief {
    pub(super) status: IntentRecordStatus,
    pub(super) description: String,
    pub(super) file: String,
}

/// Contracts proposed and not yet known to be answered: (id, proposer).
pub(super) type ContractPool = Arc<Mutex<Vec<(String, String)>>>;

/// What one task's session did that the daemon acknowledged.
#[derive(Debug)]
pub(super) struct Ledger {
    /// The session this task is.
    pub(super) session: String,
    /// Operations done.
    pub(super) ops: usize,
    /// Acquisitions refused for another session's lock.
    pub(super) conflicts: usize,
    /// Intents declared (numbers their descriptions).
    declared: usize,
    /// Symbol → the last acknowledged acquisition not followed by an acknowledged release.
    pub(super) locks: HashMap<String, Held>,
    /// Intent id → its last acknowledged status.
    pub(super) intents: HashMap<String, IntentBelief>,
    /// Ids of the acknowledged proposals.
    pub(super) proposed: Vec<String>,
    /// (contract id, accept) of every acknowledged `contract.respond`.
    pub(super) responded: Vec<(String, bool)>,
}

impl Ledger {
    /// An empty ledger of `session`.
    pub(super) fn new(session: String) -> Self {
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

    /// The ids of the session's open intents, sorted.
    pub(super) fn open_intents(&self) -> Vec<String> {
        let mut open: Vec<String> = self
            .intents
            .iter()
            .filter(|(_, b)| is_open(b.status))
            .map(|(id, _)| id.clone())
            .collect();
        open.sort();
        open
    }

    /// Acquires one of the shared symbols, now and then with a short TTL; a conflict must come
    /// from another session, and never over a lock of this one that is surely live.
    pub(super) async fn acquire(&mut self, client: &WitClient, rng: &mut Rng) {
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

    /// Releases one held lock (acquires one when none is held); only a lock that may have
    /// expired can be gone or taken over.
    pub(super) async fn release_one(&mut self, client: &WitClient, rng: &mut Rng) {
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

    /// Declares an intent on a function of the load's file or on a document.
    pub(super) async fn declare(&mut self, client: &WitClient, rng: &mut Rng) {
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
    pub(super) async fn advance(&mut self, client: &WitClient, rng: &mut Rng) {
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

    /// Proposes a contract on one of the load's functions and offers it to the others.
    pub(super) async fn propose(&mut self, client: &WitClient, rng: &mut Rng, pool: &ContractPool) {
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

    /// Answers another session's proposal (proposes one when there is none); losing the race
    /// to another responder is the only error.
    pub(super) async fn respond(&mut self, client: &WitClient, rng: &mut Rng, pool: &ContractPool) {
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
}

/// The record status an `intent.update` to `status` leaves.
fn record_status(status: IntentUpdateParamsStatus) -> IntentRecordStatus {
    match status {
        IntentUpdateParamsStatus::Active => IntentRecordStatus::Active,
        IntentUpdateParamsStatus::Resolved => IntentRecordStatus::Resolved,
        IntentUpdateParamsStatus::Abandoned => IntentRecordStatus::Abandoned,
    }
}
