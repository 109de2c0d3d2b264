//! Lock waits as plain data (docs/protocol.md 8): the FIFO queues of waiting requests and the
//! check that refuses a wait which would close a cycle of waiting sessions.
//!
//! The queue order lives in the store (`lock_waiters`), shared by every daemon on it: a
//! request's id is its place. What stays in memory is this daemon's side of each of its
//! requests, [`LocalWaiters`]: the session, the TTL it asked for, the callers of its symbol
//! and the [`WaitReply`] through which it is answered. [`super::Coord`] keeps them behind one
//! mutex, taken before the database, and hands a released, expired or reaped lock to the
//! first waiter in the same transaction that frees it. A grant to a request of another daemon
//! is written to the request's row ([`Grant`]) and that daemon answers it when told.
//!
//! Nothing here blocks or knows about async.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::{AcquiredLock, CallerWarning, CoordError, Lock};
use crate::store::WaiterRow;

/// How a waiting request is finally answered.
#[derive(Debug)]
pub enum WaitOutcome {
    /// The lock was handed over: the waiter holds it now.
    Granted(AcquiredLock),
    /// The wait ended without the lock (its session ended, a cycle formed, the daemon
    /// stopped).
    Refused(CoordError),
}

/// The channel back to a waiting request (the `rpc` layer implements it over a oneshot).
pub trait WaitReply: Send {
    /// Whether the request is gone (its connection closed): it is skipped and dropped.
    fn is_closed(&self) -> bool;
    /// Delivers the outcome.
    fn send(self: Box<Self>, outcome: WaitOutcome);
}

/// A waiting request's id: its row in the store's queue (ids grow with arrival).
pub type WaiterId = i64;

/// One of this daemon's waiting requests.
pub struct Waiter {
    /// Its id in the shared queue.
    pub id: WaiterId,
    /// The normalised symbol path it waits for.
    pub symbol: String,
    /// The waiting session.
    pub session_id: String,
    /// Where the answer goes.
    pub reply: Box<dyn WaitReply>,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter")
            .field("id", &self.id)
            .field("symbol", &self.symbol)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

/// This daemon's waiting requests, and for each symbol they wait for when its holder's lock
/// expires (so the pulse wakes in time to hand it over).
#[derive(Debug, Default)]
pub struct LocalWaiters {
    waiters: HashMap<WaiterId, Waiter>,
    /// How many local requests wait for each symbol.
    per_symbol: HashMap<String, usize>,
    holder_expiry: HashMap<String, i64>,
}

impl LocalWaiters {
    /// How many requests wait.
    pub fn len(&self) -> usize {
        self.waiters.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// Whether a local request waits for `symbol`.
    pub fn waits_for(&self, symbol: &str) -> bool {
        self.per_symbol.contains_key(symbol)
    }

    /// Whether a local request of `session_id` waits.
    pub fn has_session(&self, session_id: &str) -> bool {
        self.waiters.values().any(|w| w.session_id == session_id)
    }

    /// The ids of the local requests of `session_id`.
    pub fn ids_of_session(&self, session_id: &str) -> Vec<WaiterId> {
        self.waiters
            .values()
            .filter(|w| w.session_id == session_id)
            .map(|w| w.id)
            .collect()
    }

    /// The symbols local requests wait for.
    pub fn symbols(&self) -> Vec<String> {
        self.per_symbol.keys().cloned().collect()
    }

    /// The request `id`, if it is this daemon's and still waits.
    pub fn get(&self, id: WaiterId) -> Option<&Waiter> {
        self.waiters.get(&id)
    }

    /// The earliest expiry among the locks local requests wait for.
    pub fn next_expiry_hint(&self) -> Option<i64> {
        self.holder_expiry.values().copied().min()
    }

    /// Notes when the current holder of `symbol` expires (only while somebody waits for it).
    pub fn set_holder_expiry(&mut self, symbol: &str, expires_at_ms: i64) {
        if self.waits_for(symbol) {
            self.holder_expiry.insert(symbol.to_owned(), expires_at_ms);
        }
    }

    /// Adds a request queued in the store as `waiter.id`.
    pub fn insert(&mut self, waiter: Waiter, holder_expires_at_ms: i64) {
        *self.per_symbol.entry(waiter.symbol.clone()).or_default() += 1;
        self.holder_expiry
            .insert(waiter.symbol.clone(), holder_expires_at_ms);
        self.waiters.insert(waiter.id, waiter);
    }

    /// Takes request `id` out (answered, cancelled or gone).
    pub fn remove(&mut self, id: WaiterId) -> Option<Waiter> {
        let waiter = self.waiters.remove(&id)?;
        if let Some(count) = self.per_symbol.get_mut(&waiter.symbol) {
            *count -= 1;
            if *count == 0 {
                self.per_symbol.remove(&waiter.symbol);
                self.holder_expiry.remove(&waiter.symbol);
            }
        }
        Some(waiter)
    }

    /// Takes every request out (the daemon stops).
    pub fn drain(&mut self) -> Vec<Waiter> {
        self.per_symbol.clear();
        self.holder_expiry.clear();
        self.waiters.drain().map(|(_, w)| w).collect()
    }
}

/// The shared queues as the store holds them: per symbol, the waiting sessions in order.
#[derive(Debug, Default)]
pub struct QueueView {
    queues: HashMap<String, Vec<String>>,
}

impl QueueView {
    /// The queues of `rows` (ordered by symbol, then arrival, as the store returns them).
    pub fn from_rows(rows: &[WaiterRow]) -> Self {
        let mut queues: HashMap<String, Vec<String>> = HashMap::new();
        for row in rows {
            queues
                .entry(row.symbol_path.clone())
                .or_default()
                .push(row.session_id.clone());
        }
        Self { queues }
    }

    /// The cycle that `caller` would close by waiting for `symbol`, as the session ids
    /// around it starting with the caller's, or `None`.
    ///
    /// A session waits for the holder of the symbol it queued for and for every waiter ahead
    /// of it in that queue (they get the lock first): an edge to the holder for the first
    /// waiter and to the waiter just ahead for the others carries the same reachability.
    /// `holder_of` answers who holds a symbol now (live locks only).
    pub fn find_cycle(
        &self,
        caller: &str,
        symbol: &str,
        mut holder_of: impl FnMut(&str) -> Option<String>,
    ) -> Option<Vec<String>> {
        // What each session waits for directly.
        let mut waits_for: HashMap<&str, Vec<Target<'_>>> = HashMap::new();
        for (sym, queue) in &self.queues {
            for (position, waiter) in queue.iter().enumerate() {
                let target = match position {
                    0 => Target::Holder(sym.as_str()),
                    _ => Target::Session(queue[position - 1].as_str()),
                };
                waits_for.entry(waiter.as_str()).or_default().push(target);
            }
        }
        let first = match self.queues.get(symbol).and_then(|q| q.last()) {
            Some(last) => last.clone(),
            None => holder_of(symbol)?,
        };
        if first == caller {
            // Queued behind its own request: slow, but the first request frees the way.
            return None;
        }
        // Depth-first search from the first session the caller would wait for.
        let mut holders: HashMap<&str, Option<String>> = HashMap::new();
        let mut visited: HashSet<String> = HashSet::new();
        let mut parent: HashMap<String, String> = HashMap::new();
        let mut stack = vec![first.clone()];
        visited.insert(first);
        while let Some(session) = stack.pop() {
            if session == caller {
                let mut path = vec![session.clone()];
                let mut at = session;
                while let Some(p) = parent.get(&at) {
                    path.push(p.clone());
                    at = p.clone();
                }
                // `path` runs caller ← … ← first; the cycle reads caller → first → … .
                path.remove(0);
                path.reverse();
                let mut cycle = vec![caller.to_owned()];
                cycle.extend(path);
                return Some(cycle);
            }
            for target in waits_for.get(session.as_str()).into_iter().flatten() {
                let next = match target {
                    Target::Session(s) => Some((*s).to_owned()),
                    Target::Holder(sym) => {
                        holders.entry(sym).or_insert_with(|| holder_of(sym)).clone()
                    }
                };
                if let Some(next) = next {
                    if visited.insert(next.clone()) {
                        parent.insert(next.clone(), session.clone());
                        stack.push(next);
                    }
                }
            }
        }
        None
    }
}

/// What a waiter waits for directly.
enum Target<'a> {
    /// The holder of this symbol.
    Holder(&'a str),
    /// This session (the waiter just ahead).
    Session(&'a str),
}

/// A lock handed to another daemon's request, as written to the request's row.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    symbol_path: String,
    session_id: String,
    acquired_at_ms: i64,
    expires_at_ms: i64,
    token: i64,
    warnings: Vec<GrantWarning>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GrantWarning {
    locked_symbol: String,
    held_by: String,
    chain: [String; 2],
}

impl Grant {
    /// The serialised grant of `acquired`.
    pub fn encode(acquired: &AcquiredLock) -> String {
        let grant = Grant {
            symbol_path: acquired.lock.symbol_path.clone(),
            session_id: acquired.lock.session_id.clone(),
            acquired_at_ms: acquired.lock.acquired_at_ms,
            expires_at_ms: acquired.lock.expires_at_ms,
            token: acquired.lock.token,
            warnings: acquired
                .warnings
                .iter()
                .map(|w| GrantWarning {
                    locked_symbol: w.locked_symbol.clone(),
                    held_by: w.held_by.clone(),
                    chain: w.chain.clone(),
                })
                .collect(),
        };
        serde_json::to_string(&grant).unwrap_or_default()
    }

    /// The acquired lock a serialised grant stands for (`None` when it is not one).
    pub fn decode(text: &str) -> Option<AcquiredLock> {
        let grant: Grant = serde_json::from_str(text).ok()?;
        Some(AcquiredLock {
            lock: Lock {
                symbol_path: grant.symbol_path,
                session_id: grant.session_id,
                acquired_at_ms: grant.acquired_at_ms,
                expires_at_ms: grant.expires_at_ms,
                token: grant.token,
            },
            warnings: grant
                .warnings
                .into_iter()
                .map(|w| CallerWarning {
                    locked_symbol: w.locked_symbol,
                    held_by: w.held_by,
                    chain: w.chain,
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    struct Reply;
    impl WaitReply for Reply {
        fn is_closed(&self) -> bool {
            false
        }
        fn send(self: Box<Self>, _: WaitOutcome) {}
    }

    fn waiter(id: WaiterId, symbol: &str, session: &str) -> Waiter {
        Waiter {
            id,
            symbol: symbol.into(),
            session_id: session.into(),
            reply: Box::new(Reply),
        }
    }

    fn row(id: i64, symbol: &str, session: &str) -> WaiterRow {
        WaiterRow {
            id,
            symbol_path: symbol.into(),
            session_id: session.into(),
            ttl_ms: 1000,
            daemon_id: "d".into(),
            callers: "[]".into(),
            queued_at_ms: 0,
            granted: None,
        }
    }

    #[test]
    fn local_waiters_count_per_symbol_and_session() {
        let mut local = LocalWaiters::default();
        local.insert(waiter(1, "x", "a"), 50);
        local.insert(waiter(2, "x", "b"), 50);
        local.insert(waiter(3, "y", "b"), 20);
        assert_eq!(local.len(), 3);
        assert!(local.waits_for("x") && local.has_session("b"));
        assert_eq!(local.next_expiry_hint(), Some(20));
        let mut ids = local.ids_of_session("b");
        ids.sort_unstable();
        assert_eq!(ids, [2, 3]);
        assert_eq!(local.remove(3).unwrap().symbol, "y");
        assert!(!local.waits_for("y"));
        assert_eq!(local.next_expiry_hint(), Some(50));
        assert!(local.remove(3).is_none());
        local.remove(1);
        assert!(local.waits_for("x"));
        local.remove(2);
        assert!(local.is_empty() && !local.waits_for("x"));
        assert_eq!(local.next_expiry_hint(), None);
    }

    #[test]
    fn two_session_cycle_starts_with_caller() {
        // a holds x, b holds y; b waits for x; a asking for y closes the cycle.
        let holders = |s: &str| match s {
            "x" => Some("a".to_string()),
            "y" => Some("b".to_string()),
            _ => None,
        };
        let q = QueueView::from_rows(&[row(1, "x", "b")]);
        assert_eq!(
            q.find_cycle("a", "y", holders),
            Some(vec!["a".into(), "b".into()])
        );
        // Nobody waits on anything a holds: no cycle for c.
        assert_eq!(q.find_cycle("c", "y", holders), None);
    }

    #[test]
    fn longer_cycles_and_queue_order_count() {
        // a holds x, b holds y, c holds z; b waits x, c waits y; a asking for z closes a→c→b→a.
        let holders = |s: &str| match s {
            "x" => Some("a".to_string()),
            "y" => Some("b".to_string()),
            "z" => Some("c".to_string()),
            _ => None,
        };
        let q = QueueView::from_rows(&[row(1, "x", "b"), row(2, "y", "c")]);
        assert_eq!(
            q.find_cycle("a", "z", holders),
            Some(vec!["a".into(), "c".into(), "b".into()])
        );
        // Waiting behind another waiter is waiting for it: h holds w; d waits w first, then
        // e; d waiting for something e holds would deadlock.
        let holders = |s: &str| match s {
            "w" => Some("h".to_string()),
            "v" => Some("e".to_string()),
            _ => None,
        };
        let q = QueueView::from_rows(&[row(1, "w", "d"), row(2, "w", "e")]);
        assert_eq!(
            q.find_cycle("d", "v", holders),
            Some(vec!["d".into(), "e".into()])
        );
    }

    #[test]
    fn grants_round_trip() {
        let acquired = AcquiredLock {
            lock: Lock {
                symbol_path: "a.ts:f".into(),
                session_id: "s".into(),
                acquired_at_ms: 1,
                expires_at_ms: 2,
                token: 3,
            },
            warnings: vec![CallerWarning {
                locked_symbol: "a.ts:g".into(),
                held_by: "t".into(),
                chain: ["a.ts:g".into(), "a.ts:f".into()],
            }],
        };
        assert_eq!(Grant::decode(&Grant::encode(&acquired)), Some(acquired));
        assert_eq!(Grant::decode("nope"), None);
    }
}
