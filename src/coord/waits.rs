//! Lock waits as plain data (PROTOCOL-NOTES 8): one FIFO queue of waiters per symbol, and the
//! check that refuses a wait which would close a cycle of waiting sessions.
//!
//! Nothing here blocks or knows about async: a waiter is its session, the TTL it asked for,
//! the callers of its symbol (for the warnings of its eventual acquire) and a [`WaitReply`]
//! through which it is answered. [`super::Coord`] keeps the queues behind one mutex, taken
//! before the database, and hands a released, expired or reaped lock to the first waiter in
//! the same transaction that frees it.

use std::collections::{HashMap, HashSet, VecDeque};

use super::{AcquiredLock, CoordError};

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

/// Identifies one queued waiter.
pub type WaiterId = u64;

/// One queued request.
pub struct Waiter {
    /// Its id.
    pub id: WaiterId,
    /// The waiting session.
    pub session_id: String,
    /// The TTL of the lock it asked for.
    pub ttl_ms: i64,
    /// Callers of the symbol, for the caller warnings once it holds the lock.
    pub callers: Vec<String>,
    /// Where its answer goes.
    pub reply: Box<dyn WaitReply>,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter")
            .field("id", &self.id)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

/// The waiters of every symbol, each queue in arrival order.
#[derive(Debug, Default)]
pub struct WaitQueues {
    queues: HashMap<String, VecDeque<Waiter>>,
    symbol_of: HashMap<WaiterId, String>,
    /// When the holder of each waited-for symbol was last seen to expire (a wake-up hint).
    holder_expiry: HashMap<String, i64>,
    next_id: WaiterId,
}

impl WaitQueues {
    /// How many requests wait, over all symbols.
    pub fn len(&self) -> usize {
        self.symbol_of.len()
    }

    /// Whether nobody waits.
    pub fn is_empty(&self) -> bool {
        self.symbol_of.is_empty()
    }

    /// Whether anybody waits for `symbol`.
    pub fn has_waiters(&self, symbol: &str) -> bool {
        self.queues.get(symbol).is_some_and(|q| !q.is_empty())
    }

    /// Whether `session_id` has a queued request.
    pub fn has_session(&self, session_id: &str) -> bool {
        self.queues
            .values()
            .any(|q| q.iter().any(|w| w.session_id == session_id))
    }

    /// The symbols somebody waits for.
    pub fn symbols(&self) -> Vec<String> {
        self.queues.keys().cloned().collect()
    }

    /// The earliest holder expiry among waited-for symbols: when to look again.
    pub fn next_expiry_hint(&self) -> Option<i64> {
        self.holder_expiry.values().copied().min()
    }

    /// Records when the holder of `symbol` expires (as last seen).
    pub fn set_holder_expiry(&mut self, symbol: &str, expires_at_ms: i64) {
        if self.has_waiters(symbol) {
            self.holder_expiry.insert(symbol.to_owned(), expires_at_ms);
        }
    }

    /// Appends a waiter to the queue of `symbol`; its id.
    pub fn push(
        &mut self,
        symbol: &str,
        session_id: &str,
        ttl_ms: i64,
        callers: Vec<String>,
        reply: Box<dyn WaitReply>,
        holder_expires_at_ms: i64,
    ) -> WaiterId {
        self.next_id += 1;
        let id = self.next_id;
        self.queues
            .entry(symbol.to_owned())
            .or_default()
            .push_back(Waiter {
                id,
                session_id: session_id.to_owned(),
                ttl_ms,
                callers,
                reply,
            });
        self.symbol_of.insert(id, symbol.to_owned());
        self.holder_expiry
            .insert(symbol.to_owned(), holder_expires_at_ms);
        id
    }

    /// Drops the waiters of `symbol` whose request is gone, from the front, and returns the
    /// first open one (still queued).
    pub fn first_open(&mut self, symbol: &str) -> Option<&Waiter> {
        loop {
            let closed = match self.queues.get(symbol)?.front() {
                None => break,
                Some(w) => w.reply.is_closed(),
            };
            if !closed {
                break;
            }
            self.pop_front(symbol);
        }
        self.queues.get(symbol).and_then(VecDeque::front)
    }

    /// Removes and returns the first waiter of `symbol`.
    pub fn pop_front(&mut self, symbol: &str) -> Option<Waiter> {
        let queue = self.queues.get_mut(symbol)?;
        let waiter = queue.pop_front();
        if queue.is_empty() {
            self.queues.remove(symbol);
            self.holder_expiry.remove(symbol);
        }
        if let Some(w) = &waiter {
            self.symbol_of.remove(&w.id);
        }
        waiter
    }

    /// Removes the waiter `id` wherever it is; `None` when it is no longer queued.
    pub fn remove(&mut self, id: WaiterId) -> Option<(String, Waiter)> {
        let symbol = self.symbol_of.remove(&id)?;
        let queue = self.queues.get_mut(&symbol)?;
        let position = queue.iter().position(|w| w.id == id)?;
        let waiter = queue.remove(position)?;
        if queue.is_empty() {
            self.queues.remove(&symbol);
            self.holder_expiry.remove(&symbol);
        }
        Some((symbol, waiter))
    }

    /// Removes every waiter of `session_id`, with their symbols.
    pub fn remove_session(&mut self, session_id: &str) -> Vec<(String, Waiter)> {
        let ids: Vec<WaiterId> = self
            .queues
            .values()
            .flat_map(|q| q.iter().filter(|w| w.session_id == session_id))
            .map(|w| w.id)
            .collect();
        ids.into_iter().filter_map(|id| self.remove(id)).collect()
    }

    /// Removes every waiter, with their symbols.
    pub fn drain(&mut self) -> Vec<(String, Waiter)> {
        self.symbol_of.clear();
        self.holder_expiry.clear();
        self.queues
            .drain()
            .flat_map(|(symbol, queue)| queue.into_iter().map(move |w| (symbol.clone(), w)))
            .collect()
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
                    _ => Target::Session(queue[position - 1].session_id.as_str()),
                };
                waits_for
                    .entry(waiter.session_id.as_str())
                    .or_default()
                    .push(target);
            }
        }
        let first = match self.queues.get(symbol).and_then(VecDeque::back) {
            Some(last) => last.session_id.clone(),
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use super::*;

    struct Reply(Arc<AtomicBool>);
    impl WaitReply for Reply {
        fn is_closed(&self) -> bool {
            self.0.load(Ordering::SeqCst)
        }
        fn send(self: Box<Self>, _: WaitOutcome) {}
    }

    fn open() -> Box<dyn WaitReply> {
        Box::new(Reply(Arc::new(AtomicBool::new(false))))
    }

    fn push(q: &mut WaitQueues, symbol: &str, session: &str) -> WaiterId {
        q.push(symbol, session, 1000, Vec::new(), open(), 0)
    }

    #[test]
    fn queues_are_fifo_per_symbol() {
        let mut q = WaitQueues::default();
        push(&mut q, "x", "a");
        push(&mut q, "y", "z");
        push(&mut q, "x", "b");
        push(&mut q, "x", "c");
        assert_eq!(q.len(), 4);
        let order: Vec<String> = std::iter::from_fn(|| q.pop_front("x"))
            .map(|w| w.session_id)
            .collect();
        assert_eq!(order, ["a", "b", "c"]);
        assert!(!q.has_waiters("x"));
        assert!(q.has_waiters("y"));
    }

    #[test]
    fn closed_waiters_are_skipped() {
        let mut q = WaitQueues::default();
        let gone = Arc::new(AtomicBool::new(false));
        q.push("x", "a", 1, Vec::new(), Box::new(Reply(gone.clone())), 0);
        push(&mut q, "x", "b");
        gone.store(true, Ordering::SeqCst);
        assert_eq!(q.first_open("x").unwrap().session_id, "b");
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn remove_and_remove_session() {
        let mut q = WaitQueues::default();
        let a = push(&mut q, "x", "a");
        push(&mut q, "y", "b");
        push(&mut q, "z", "b");
        assert_eq!(q.remove(a).unwrap().0, "x");
        assert!(q.remove(a).is_none());
        assert!(q.has_session("b"));
        assert_eq!(q.remove_session("b").len(), 2);
        assert!(q.is_empty());
        assert_eq!(q.next_expiry_hint(), None);
    }

    #[test]
    fn two_session_cycle_starts_with_caller() {
        // a holds x, b holds y; b waits for x; a asking for y closes the cycle.
        let mut q = WaitQueues::default();
        let holders = |s: &str| match s {
            "x" => Some("a".to_string()),
            "y" => Some("b".to_string()),
            _ => None,
        };
        push(&mut q, "x", "b");
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
        let mut q = WaitQueues::default();
        let holders = |s: &str| match s {
            "x" => Some("a".to_string()),
            "y" => Some("b".to_string()),
            "z" => Some("c".to_string()),
            _ => None,
        };
        push(&mut q, "x", "b");
        push(&mut q, "y", "c");
        assert_eq!(
            q.find_cycle("a", "z", holders),
            Some(vec!["a".into(), "c".into(), "b".into()])
        );
        // Waiting behind another waiter is waiting for it: h holds w; d waits w first, then
        // e; d waiting for something e holds would deadlock.
        let mut q = WaitQueues::default();
        let holders = |s: &str| match s {
            "w" => Some("h".to_string()),
            "v" => Some("e".to_string()),
            _ => None,
        };
        push(&mut q, "w", "d");
        push(&mut q, "w", "e");
        assert_eq!(
            q.find_cycle("d", "v", holders),
            Some(vec!["d".into(), "e".into()])
        );
    }
}
