//! The mixed load's checks of the daemon's view against the clients' ledgers: a session's own
//! view as it goes (its task is the only writer of it), and everyone's at the end.

use std::collections::{BTreeSet, HashMap, HashSet};

use wit::client::WitClient;
use wit::protocol::{ContractRecordStatus, IntentRecord, IntentRecordStatus, LockRecord};

use super::ledger::{Ledger, Rng, LOAD_FILE};
use super::{iquery, is_open, now_ms, ALL_STATUSES, CHAINED_SIGNATURE};
use crate::contracts::cquery;
use crate::locks::query;

impl Ledger {
    /// This task is the only writer of its session and has nothing in flight, so the daemon's
    /// view of the session must be exactly the ledger (up to locks that may just have expired).
    pub(super) async fn check_own_view(&self, client: &WitClient, rng: &mut Rng) {
        let sent = now_ms();
        let listed = client.lock_query(query(Some(&self.session))).await.unwrap();
        check_listed_locks(&listed, &[self], sent, now_ms());
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

/// Checks a `lock.query` answer, read between `sent` and `answered`, against the ledgers of
/// every session it may list: each symbol has one holder, each listed lock was acknowledged
/// with its expiry and is not surely expired, and each surely live acknowledged lock is listed.
pub(super) fn check_listed_locks(
    listed: &[LockRecord],
    ledgers: &[&Ledger],
    sent: i64,
    answered: i64,
) {
    let mut symbols = HashSet::new();
    for lock in listed {
        assert!(
            symbols.insert(lock.symbol_path.as_str()),
            "two live holders of {}: {listed:?}",
            lock.symbol_path
        );
        let ledger = ledgers
            .iter()
            .find(|l| l.session == lock.session_id)
            .unwrap_or_else(|| panic!("lock of an unexpected session: {lock:?}"));
        let held = ledger.locks.get(&lock.symbol_path).unwrap_or_else(|| {
            panic!(
                "{}: listed lock never acknowledged or already released: {lock:?}",
                ledger.session
            )
        });
        assert_eq!(lock.expires_at, held.expires_at, "{lock:?} {held:?}");
        assert!(lock.ttl_remaining_ms > 0, "{lock:?}");
        assert!(
            !held.surely_expired_at(sent),
            "expired lock listed: {lock:?}"
        );
    }
    for ledger in ledgers {
        for (symbol, held) in &ledger.locks {
            if held.surely_live_at(answered) {
                assert!(
                    listed
                        .iter()
                        .any(|l| l.symbol_path == *symbol && l.session_id == ledger.session),
                    "{}: held lock {symbol} ({held:?}) missing from {listed:?}",
                    ledger.session
                );
            }
        }
    }
}

/// Checks every session's intents at the end: each listed under exactly one status, the last
/// one its session acknowledged, with its description and file; nothing else exists; the
/// default query lists the open ones.
pub(super) async fn check_intents(client: &WitClient, ledgers: &[Ledger]) {
    let mut found: HashMap<String, IntentRecord> = HashMap::new();
    for status in ALL_STATUSES {
        for record in client
            .intent_query(iquery(None, Some(status)))
            .await
            .unwrap()
        {
            assert_eq!(record.status, status, "{record:?}");
            // The files the load writes straight to disk are nobody's work (15.3): the
            // unowned session's active intent, not a client's.
            if record.session_id.starts_with("unowned:") {
                assert_eq!(record.status, IntentRecordStatus::Active, "{record:?}");
                continue;
            }
            let id = record.intent_id.clone();
            let before = found.insert(id, record);
            assert!(before.is_none(), "listed twice: {before:?}");
        }
    }
    let acknowledged: usize = ledgers.iter().map(|l| l.intents.len()).sum();
    assert!(acknowledged > 0);
    assert_eq!(found.len(), acknowledged, "intents held vs acknowledged");
    for ledger in ledgers {
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
        .filter(|r| !r.session_id.starts_with("unowned:"))
        .map(|r| r.intent_id)
        .collect();
    let open: HashSet<String> = found
        .values()
        .filter(|r| is_open(r.status))
        .map(|r| r.intent_id.clone())
        .collect();
    assert_eq!(default, open, "the default query lists declared and active");
}

/// Checks every session's contracts at the end: every acknowledged proposal kept with its
/// proposer and signature, every answer given once and kept with its responder.
pub(super) async fn check_contracts(client: &WitClient, ledgers: &[Ledger]) {
    let contracts = client.contract_query(cquery(None, None)).await.unwrap();
    let proposed: usize = ledgers.iter().map(|l| l.proposed.len()).sum();
    assert_eq!(contracts.len(), proposed, "contracts held vs acknowledged");
    let mut answers: HashMap<&str, (&str, bool)> = HashMap::new();
    for ledger in ledgers {
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
    for ledger in ledgers {
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
}
