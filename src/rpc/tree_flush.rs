//! Asking the tree observer to take in what is already on disk before an answer
//! (docs/protocol.md 15.2: `work.end` answers with a change the tool made just before the hook
//! ran). The observer lives in `daemon`; `rpc` only holds this handle, so the layers still
//! point one way.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{watch, Notify};

/// The longest an answer waits for the observer.
pub const FLUSH_WAIT: Duration = Duration::from_millis(750);

/// A request counter the handlers raise and the observer answers.
#[derive(Debug)]
pub struct TreeFlush {
    asked: AtomicU64,
    done: watch::Sender<u64>,
    wake: Notify,
    /// Whether an observer is running (else nobody answers: no wait).
    active: AtomicBool,
}

impl Default for TreeFlush {
    fn default() -> Self {
        TreeFlush {
            asked: AtomicU64::new(0),
            done: watch::channel(0).0,
            wake: Notify::new(),
            active: AtomicBool::new(false),
        }
    }
}

impl TreeFlush {
    /// Waits (at most [`FLUSH_WAIT`]) until the observer has read every change on disk that
    /// happened before this call. `Some(ticket)` when it did not in time: the observer reads
    /// them once it answers that ticket ([`TreeFlush::answered`]).
    pub async fn flush(&self) -> Option<u64> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        let ticket = self.asked.fetch_add(1, Ordering::AcqRel) + 1;
        let mut done = self.done.subscribe();
        self.wake.notify_one();
        let reached = tokio::time::timeout(FLUSH_WAIT, done.wait_for(|d| *d >= ticket))
            .await
            .is_ok_and(|answered| answered.is_ok());
        (!reached).then_some(ticket)
    }

    /// The observer side: it is running (`true`) or has stopped.
    pub fn set_active(&self, active: bool) {
        self.active.store(active, Ordering::Release);
    }

    /// The observer side: resolves when a flush is asked for.
    pub async fn asked(&self) {
        self.wake.notified().await;
    }

    /// The observer side: the newest request number (read before reading the disk).
    pub fn ticket(&self) -> u64 {
        self.asked.load(Ordering::Acquire)
    }

    /// The observer side: every request up to `ticket` is answered.
    pub fn answered(&self, ticket: u64) {
        self.done.send_if_modified(|done| {
            let moved = ticket > *done;
            *done = (*done).max(ticket);
            moved
        });
    }
}
