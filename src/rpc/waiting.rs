//! The async side of waiting (docs/protocol.md 8 and 9.2): no rules here, only plumbing.
//!
//! - [`OneshotReply`] is the [`WaitReply`] of a queued `lock.acquire`: a oneshot sender whose
//!   receiver lives in the request's future. When the connection closes, hyper drops that
//!   future, the [`WaitTicket`] in it takes the waiter out of its queue, and if a lock was
//!   handed over in the meantime gives exactly that lock back (by its fencing token).
//! - [`EventBell`] is the store's [`CommitListener`]: a watch channel carrying the newest
//!   committed event `seq`, which `events.poll` waiters await. It also rings once more when
//!   the daemon stops, so that no poller holds up the shutdown.
//!
//! - [`parked`] runs a wait with the request's connection *parked*: the server's
//!   [`Parking`] of that connection (a task-local, set by [`with_parking`]) gives the
//!   connection's slot back while it waits, so waiters never use up the connection cap that
//!   serves everybody else (docs/protocol.md 8.2, issue 20 item 5).
//!
//! A waiting request holds a task, never a thread, a database transaction or a connection
//! slot.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use crate::coord::{Cancelled, Coord, CoordError, WaitOutcome, WaitReply, WaiterId};
use crate::store::CommitListener;

/// The reply channel of one queued lock request.
pub struct OneshotReply(oneshot::Sender<WaitOutcome>);

impl OneshotReply {
    /// A reply and the receiver its request awaits.
    pub fn channel() -> (Box<dyn WaitReply>, oneshot::Receiver<WaitOutcome>) {
        let (tx, rx) = oneshot::channel();
        (Box::new(OneshotReply(tx)), rx)
    }
}

impl WaitReply for OneshotReply {
    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    fn send(self: Box<Self>, outcome: WaitOutcome) {
        // A receiver dropped after `is_closed` was checked is handled by its WaitTicket,
        // which finds the answer gone and gives the lock back.
        let _ = self.0.send(outcome);
    }
}

/// What the server does with a request's connection while the request waits.
pub trait Parking: Send + Sync {
    /// The request starts waiting: its connection stops counting against the cap.
    fn park(&self);
    /// The wait is over: the connection counts again.
    fn unpark(&self);
}

tokio::task_local! {
    static PARKING: Arc<dyn Parking>;
}

/// Runs `request` (a request's whole future) with `parking` as its connection's [`Parking`].
pub fn with_parking<F: Future>(
    parking: Arc<dyn Parking>,
    request: F,
) -> impl Future<Output = F::Output> {
    PARKING.scope(parking, request)
}

/// Runs `wait` with the request's connection parked, if the server gave it a [`Parking`];
/// unparked when `wait` ends or is dropped.
pub async fn parked<F: Future>(wait: F) -> F::Output {
    struct Unpark(Arc<dyn Parking>);
    impl Drop for Unpark {
        fn drop(&mut self) {
            self.0.unpark();
        }
    }
    let _unpark = PARKING.try_with(Arc::clone).ok().map(|parking| {
        parking.park();
        Unpark(parking)
    });
    wait.await
}

/// A queued request's claim on its place: answers the wait, or undoes it when dropped.
pub struct WaitTicket {
    coord: Arc<Coord>,
    id: WaiterId,
    symbol_path: String,
    session_id: String,
    rx: Option<oneshot::Receiver<WaitOutcome>>,
}

impl WaitTicket {
    /// A ticket for waiter `id` of `session_id` on `symbol_path`.
    pub fn new(
        coord: Arc<Coord>,
        id: WaiterId,
        symbol_path: String,
        session_id: String,
        rx: oneshot::Receiver<WaitOutcome>,
    ) -> Self {
        Self {
            coord,
            id,
            symbol_path,
            session_id,
            rx: Some(rx),
        }
    }

    /// Waits up to `wait` for the outcome. When the time runs out the waiter leaves the
    /// queue and the answer is LOCK_CONFLICT with the holder of that moment, unless the lock
    /// was handed over at the very same time, which wins.
    pub async fn wait(mut self, wait: Duration) -> Result<WaitOutcome, CoordError> {
        // The receiver stays in `self` while waiting: if the request is dropped mid-wait,
        // `Drop` still finds it and undoes the wait.
        let Some(rx) = self.rx.as_mut() else {
            return Err(CoordError::InvalidInput {
                field: "waitMs",
                message: "the wait was already answered".into(),
            });
        };
        let outcome = match parked(tokio::time::timeout(wait, rx)).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => WaitOutcome::Refused(self.conflict_now()),
            Err(_) => match self.coord.cancel_wait(self.id) {
                Cancelled::Removed {
                    held_by,
                    expires_at_ms,
                } => WaitOutcome::Refused(CoordError::LockConflict {
                    held_by,
                    expires_at_ms,
                    cycle: None,
                }),
                // Answered while the timer fired: the answer is in the channel already.
                Cancelled::AlreadyAnswered => match self.rx.as_mut().map(|rx| rx.try_recv()) {
                    Some(Ok(outcome)) => outcome,
                    _ => WaitOutcome::Refused(self.conflict_now()),
                },
            },
        };
        // Answered: dropping `self` now has nothing to undo.
        self.rx = None;
        Ok(outcome)
    }

    fn conflict_now(&self) -> CoordError {
        let (held_by, expires_at_ms) = self.coord.holder(&self.symbol_path);
        CoordError::LockConflict {
            held_by,
            expires_at_ms,
            cycle: None,
        }
    }
}

impl Drop for WaitTicket {
    fn drop(&mut self) {
        // The request went away while queued (its connection closed).
        let Some(mut rx) = self.rx.take() else { return };
        if let Cancelled::AlreadyAnswered = self.coord.cancel_wait(self.id) {
            // The queue lock was held while the answer was sent, so it is in the channel.
            if let Ok(WaitOutcome::Granted(granted)) = rx.try_recv() {
                let token = Some(granted.lock.token);
                if let Err(error) =
                    self.coord
                        .release_lock_if(&self.symbol_path, &self.session_id, token)
                {
                    tracing::warn!(%error, symbol = %self.symbol_path,
                        "could not give back a lock handed to a waiter that left");
                }
            }
        }
    }
}

/// Wakes `events.poll` waiters when events commit (and once when the daemon stops).
#[derive(Debug, Clone)]
pub struct EventBell {
    tx: Arc<watch::Sender<BellState>>,
}

/// What the bell carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BellState {
    /// The newest committed event `seq`.
    pub newest_seq: i64,
    /// The daemon is stopping: waiters answer now.
    pub closing: bool,
}

impl Default for EventBell {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBell {
    /// A silent bell.
    pub fn new() -> Self {
        let (tx, _) = watch::channel(BellState::default());
        Self { tx: Arc::new(tx) }
    }

    /// A receiver that sees every later ring.
    pub fn subscribe(&self) -> watch::Receiver<BellState> {
        self.tx.subscribe()
    }

    /// Rings for the last time: the daemon is stopping.
    pub fn close(&self) {
        self.tx.send_modify(|state| state.closing = true);
    }

    /// The store's listener: rings this bell on events, and has `coord` answer its waiters
    /// when another daemon granted them a lock.
    pub fn listener(&self, coord: Weak<Coord>) -> Box<dyn CommitListener> {
        Box::new(StoreListener {
            bell: self.clone(),
            coord,
        })
    }
}

/// What the store tells after commits (its own and, with PostgreSQL, other daemons').
struct StoreListener {
    bell: EventBell,
    coord: Weak<Coord>,
}

impl CommitListener for StoreListener {
    fn events_committed(&self, newest_seq: i64) {
        self.bell.events_committed(newest_seq);
    }

    fn waiters_granted(&self) {
        let Some(coord) = self.coord.upgrade() else {
            return;
        };
        if let Err(error) = coord.deliver_granted() {
            tracing::warn!(%error, "could not answer waiters granted by another daemon");
        }
    }
}

impl CommitListener for EventBell {
    fn events_committed(&self, newest_seq: i64) {
        self.tx.send_if_modified(|state| {
            if newest_seq > state.newest_seq {
                state.newest_seq = newest_seq;
                true
            } else {
                false
            }
        });
    }
}
