//! Symbol locks (docs/protocol.md 3, `lock.*`) and waiting for them (docs/protocol.md 8).
//!
//! A lock is live while its expiry is in the future. An expired row is treated as absent by
//! every operation, so correctness never depends on [`Coord::sweep_expired_locks`] having run;
//! the sweep appends the `lock.expired` events and reclaims space.
//!
//! Waiting: a request with a wait that meets another session's live lock is queued (see
//! [`super::waits`]). Whatever frees a lock (release, expiry, a reap) hands it to the first
//! open waiter in the same transaction, so no later request can take it first. The queue
//! mutex is always taken before the database; answers go out after the commit, still under
//! the queue mutex, so a waiter that gives up either is still queued or has its answer.

use std::collections::HashSet;

use serde_json::json;

use super::conflicts::{held_by_another, Others};
use super::events::{self, EventKind};
use super::waits::{Grant, LocalWaiters, QueueView, WaitOutcome, WaitReply, Waiter, WaiterId};
use super::{parse_symbol_path, Coord, CoordError, Lock, LockWait, Result, Vantage};
use crate::store::{NewWaiter, Writer};

/// Default lock lifetime: 30 minutes.
pub const DEFAULT_TTL_MS: i64 = 1_800_000;
/// Shortest lock lifetime accepted.
pub const MIN_TTL_MS: i64 = 1;
/// Longest lock lifetime accepted: 7 days.
pub const MAX_TTL_MS: i64 = 604_800_000;
/// Longest wait for a lock: 10 minutes.
pub const MAX_WAIT_MS: i64 = 600_000;

/// A caller of the newly locked symbol that another session has locked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerWarning {
    /// Symbol path of the locked caller.
    pub locked_symbol: String,
    /// The session holding the caller's lock.
    pub held_by: String,
    /// `[caller, newly locked symbol]`.
    pub chain: [String; 2],
}

/// The outcome of a successful acquire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquiredLock {
    /// The lock as stored now (normalised symbol path).
    pub lock: Lock,
    /// Locked callers (informational; never prevent the acquire).
    pub warnings: Vec<CallerWarning>,
}

/// What [`Coord::acquire_or_wait`] did.
#[derive(Debug)]
pub enum Acquire {
    /// The lock is the caller's now.
    Acquired(AcquiredLock),
    /// Another session holds it; the request is queued and is answered through its
    /// [`WaitReply`].
    Queued {
        /// The waiter's id (to cancel it).
        id: WaiterId,
        /// The normalised symbol path it waits for.
        symbol_path: String,
    },
}

/// A live lock as `lock.query` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveLock {
    /// The lock.
    pub lock: Lock,
    /// `expires_at_ms - now`, from one clock reading for the whole query (always ≥ 1).
    pub ttl_remaining_ms: i64,
}

/// A lock handed to a waiter of this daemon inside a transaction, to answer once it commits.
pub(crate) struct Handover {
    waiter: WaiterId,
    granted: AcquiredLock,
}

/// To whom a freed lock went.
enum Handed {
    /// Nobody waits for it.
    Nobody,
    /// A waiter of this daemon, answered after the commit.
    Here(Handover),
    /// A waiter of another daemon (the lock as granted).
    Elsewhere(Lock),
}

/// What an acquire's transaction decided.
enum Step {
    /// The lock is the caller's.
    Acquired(AcquiredLock),
    /// Another session holds it; with the cycle a wait would have closed.
    Conflict(Lock, Option<Vec<String>>),
    /// The request is queued as `id`.
    Queued {
        /// Its id in the queue.
        id: WaiterId,
        /// When the holder's lock expires.
        holder_expiry: i64,
    },
}

/// What [`Coord::cancel_wait`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancelled {
    /// The waiter was still queued and is gone now; who holds the lock.
    Removed {
        /// The holder (empty when the lock is free).
        held_by: String,
        /// Its expiry.
        expires_at_ms: i64,
    },
    /// The waiter was already answered (its reply holds the answer).
    AlreadyAnswered,
}

impl Coord {
    /// Whether [`Coord::acquire_lock`] on `symbol_path` would finish without parsing source
    /// (the index already knows the file and its callers as they are on disk), so it can run
    /// on the calling thread. An invalid path is quick too: it fails before any lookup.
    pub fn acquire_is_quick(&self, symbol_path: &str) -> bool {
        match parse_symbol_path("symbolPath", symbol_path) {
            Ok((file, name, _)) => self.index.callers_are_fresh(&file, &name),
            Err(_) => true,
        }
    }

    /// Acquires or refreshes the exclusive lock on `symbol_path` for `session_id`, without
    /// waiting.
    ///
    /// `ttl_ms` defaults to [`DEFAULT_TTL_MS`] and must lie in `MIN_TTL_MS..=MAX_TTL_MS`.
    /// A live lock of another session: [`CoordError::LockConflict`]. A live lock of the same
    /// session is refreshed (`acquired_at` and token kept, new expiry). An expired lock
    /// (anyone's) is replaced as a new acquisition. The check and the write are one
    /// transaction.
    pub fn acquire_lock(
        &self,
        symbol_path: &str,
        session_id: &str,
        ttl_ms: Option<i64>,
    ) -> Result<AcquiredLock> {
        let at = self.vantage(Some(session_id));
        match self.acquire_or_wait(&at, symbol_path, ttl_ms, None)? {
            Acquire::Acquired(lock) => Ok(lock),
            // Without a reply nothing is ever queued.
            Acquire::Queued { .. } => Err(CoordError::invalid("waitMs", "no wait was asked for")),
        }
    }

    /// Acquires like [`Coord::acquire_lock`]; when another session holds a live lock and
    /// `wait` is given, queues the request instead of failing (unless the wait would close a
    /// cycle: [`CoordError::LockConflict`] with `cycle`).
    pub fn acquire_or_wait(
        &self,
        at: &Vantage,
        symbol_path: &str,
        ttl_ms: Option<i64>,
        wait: Option<Box<dyn WaitReply>>,
    ) -> Result<Acquire> {
        let (file, name, path) = parse_symbol_path("symbolPath", symbol_path)?;
        let session_id = self.acting(at)?;
        let ttl = ttl_ms.unwrap_or(DEFAULT_TTL_MS);
        if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl) {
            return Err(CoordError::invalid(
                "ttlMs",
                format!("must be an integer from {MIN_TTL_MS} to {MAX_TTL_MS}"),
            ));
        }
        // Ask the index before taking the database: it may have to parse files.
        let callers = self.index.callers(&file, &name);
        let wants_wait = wait.is_some();

        // The lock rows the transaction reads (the symbol's and its callers'), read in the
        // round trip that opens it where that saves round trips.
        let prefetch: Vec<&str> = std::iter::once(path.as_str())
            .chain(callers.iter().map(String::as_str))
            .collect();
        let mut waits = self.waits();
        let (step, handover) = self.store.write_prefetching(&prefetch, |w| {
            let now = self.clock.now_ms();
            let mut held = w.lock(&path)?;
            let mut handover = None;
            // A free or expired lock with waiters belongs to the first of them, not to this
            // request.
            match self.free_for_waiters(w, &mut waits, &path, &held, now)? {
                None => {}
                Some(Handed::Nobody) => held = None,
                Some(Handed::Here(local)) => {
                    held = Some(local.granted.lock.clone());
                    handover = Some(local);
                }
                Some(Handed::Elsewhere(lock)) => held = Some(lock),
            }
            let step = match held {
                Some(held) if held_by_another(&held, session_id, now) => {
                    if wants_wait {
                        self.queue_or_refuse(w, held, &path, session_id, ttl, &callers, now)?
                    } else {
                        Step::Conflict(held, None)
                    }
                }
                Some(held) if held.is_live(now) => {
                    // Warnings first: they read other symbols' locks, and the writes after
                    // them can then travel with the commit.
                    let warnings = caller_warnings(w, &path, session_id, &callers, now)?;
                    let lock = Lock {
                        expires_at_ms: now.saturating_add(ttl),
                        ..held
                    };
                    w.put_lock(&lock)?;
                    events::append(
                        w,
                        now,
                        EventKind::LockRefreshed,
                        Some(session_id),
                        &path,
                        events::lock_data(&lock, json!({})),
                    )?;
                    Step::Acquired(AcquiredLock { lock, warnings })
                }
                expired => {
                    let warnings = caller_warnings(w, &path, session_id, &callers, now)?;
                    if let Some(old) = expired {
                        append_expired(w, now, &old)?;
                    }
                    let lock = new_acquisition(w, &path, session_id, ttl, now)?;
                    Step::Acquired(AcquiredLock { lock, warnings })
                }
            };
            Ok::<_, CoordError>((step, handover))
        })?;
        self.deliver(&mut waits, handover);
        match step {
            Step::Acquired(mut acquired) => {
                // Warnings are reports: only live other agents' locks (the rules' filter,
                // which reads liveness: never while holding the waiters).
                drop(waits);
                if !acquired.warnings.is_empty() {
                    let others = Others::of(self, at)?;
                    acquired.warnings = others.filter(acquired.warnings, |w| w.held_by.as_str())?;
                }
                Ok(Acquire::Acquired(acquired))
            }
            Step::Conflict(held, cycle) => Err(CoordError::LockConflict {
                held_by: held.session_id,
                expires_at_ms: held.expires_at_ms,
                cycle,
            }),
            Step::Queued { id, holder_expiry } => {
                let Some(reply) = wait else {
                    // Never reached: a request is queued only when it asked to wait.
                    return Err(CoordError::invalid("waitMs", "no wait was asked for"));
                };
                let waiter = Waiter {
                    id,
                    symbol: path.clone(),
                    session_id: session_id.to_owned(),
                    reply,
                };
                waits.insert(waiter, holder_expiry);
                Ok(Acquire::Queued {
                    id,
                    symbol_path: path,
                })
            }
        }
    }

    /// Inside the acquire's transaction, with `held` another session's live lock: queues the
    /// request behind the symbol's waiters, unless waiting would close a cycle.
    #[allow(
        clippy::too_many_arguments,
        reason = "one call site, all of it the request"
    )]
    fn queue_or_refuse(
        &self,
        w: &Writer<'_>,
        held: Lock,
        path: &str,
        session_id: &str,
        ttl: i64,
        callers: &[String],
        now: i64,
    ) -> Result<Step> {
        let queues = QueueView::from_rows(&w.waiters()?);
        let mut lookup_failed = None;
        let cycle = queues.find_cycle(session_id, path, |symbol| match w.lock(symbol) {
            Ok(lock) => lock.filter(|l| l.is_live(now)).map(|l| l.session_id),
            Err(e) => {
                lookup_failed = Some(e);
                None
            }
        });
        if let Some(e) = lookup_failed {
            return Err(e.into());
        }
        if cycle.is_some() {
            return Ok(Step::Conflict(held, cycle));
        }
        let callers = serde_json::to_string(callers).unwrap_or_else(|_| "[]".to_owned());
        let id = w.insert_waiter(&NewWaiter {
            symbol_path: path,
            session_id,
            ttl_ms: ttl,
            daemon_id: self.store.daemon_id(),
            callers: &callers,
            queued_at_ms: now,
        })?;
        Ok(Step::Queued {
            id,
            holder_expiry: held.expires_at_ms,
        })
    }

    /// Takes waiting request `id` out of the queue (its wait ran out or its connection
    /// closed). A grant another daemon wrote for it meanwhile is given back.
    pub fn cancel_wait(&self, id: WaiterId) -> Cancelled {
        let mut waits = self.waits();
        let Some(waiter) = waits.remove(id) else {
            return Cancelled::AlreadyAnswered;
        };
        let left = self.store.write(|w| {
            let row = w.waiter(id)?;
            w.delete_waiter(id)?;
            Ok::<_, CoordError>(row)
        });
        drop(waits);
        match left {
            Ok(row) => {
                if let Some(granted) = row
                    .and_then(|r| r.granted)
                    .as_deref()
                    .and_then(Grant::decode)
                {
                    self.give_back(&granted.lock);
                }
            }
            // The row stays behind: whoever reaches it finds no request and skips it.
            Err(error) => tracing::warn!(%error, "could not take a waiter out of the queue"),
        }
        let (held_by, expires_at_ms) = self.holder(&waiter.symbol);
        Cancelled::Removed {
            held_by,
            expires_at_ms,
        }
    }

    /// Releases `session_id`'s live lock on `symbol_path`. No live lock:
    /// [`CoordError::LockNotFound`]; another session's: [`CoordError::LockNotHeld`]. The
    /// first waiter, if any, gets the lock in the same transaction.
    pub fn release_lock(&self, symbol_path: &str, session_id: &str) -> Result<()> {
        self.release_lock_if(symbol_path, session_id, None)
    }

    /// Releases like [`Coord::release_lock`], but only the acquisition with fencing token
    /// `token` when one is given (a waiter that left after being handed a lock gives back
    /// exactly that lock, never a later one).
    pub fn release_lock_if(
        &self,
        symbol_path: &str,
        session_id: &str,
        token: Option<i64>,
    ) -> Result<()> {
        let (_, _, path) = parse_symbol_path("symbolPath", symbol_path)?;
        self.acting_session(session_id)?;
        let mut waits = self.waits();
        let handover = self.store.write_prefetching(&[path.as_str()], |w| {
            let now = self.clock.now_ms();
            match w.lock(&path)? {
                Some(held) if held.is_live(now) => {
                    if held.session_id != session_id {
                        return Err(CoordError::LockNotHeld {
                            held_by: held.session_id,
                        });
                    }
                    if token.is_some_and(|t| t != held.token) {
                        return Err(CoordError::LockNotFound);
                    }
                    w.delete_lock(&path)?;
                    events::append(
                        w,
                        now,
                        EventKind::LockReleased,
                        Some(session_id),
                        &path,
                        events::lock_data(&held, json!({"reason": "released"})),
                    )?;
                    self.hand_over(w, &mut waits, &path, now)
                }
                _ => Err(CoordError::LockNotFound),
            }
        })?;
        self.deliver(&mut waits, handover);
        Ok(())
    }

    /// Gives back a lock handed to a request that is gone (exactly that acquisition, by its
    /// token); logged, never failing the caller.
    fn give_back(&self, lock: &Lock) {
        match self.release_lock_if(&lock.symbol_path, &lock.session_id, Some(lock.token)) {
            Ok(()) | Err(CoordError::LockNotFound | CoordError::LockNotHeld { .. }) => {}
            Err(error) => tracing::warn!(%error, symbol = %lock.symbol_path,
                "could not give back a lock handed to a waiter that left"),
        }
    }

    /// `lock.waits`: every waiting `lock.acquire` with the holder of its symbol's live lock,
    /// oldest first per symbol, symbols in order (docs/protocol.md 8). Read-only.
    pub fn lock_waits(&self) -> Result<Vec<LockWait>> {
        self.store.read(|r| Ok(r.lock_waits(self.clock.now_ms())?))
    }

    /// Live locks, optionally of one session (the filter is applied literally: an empty
    /// string matches nothing), ordered by acquisition time, then symbol path.
    pub fn query_locks(&self, session_id: Option<&str>) -> Result<Vec<LiveLock>> {
        if let Some(session) = session_id {
            super::check_len("sessionId", session, super::MAX_SESSION_ID_BYTES)?;
            self.check_storable("sessionId", session)?;
        }
        self.store.read(|r| {
            let now = self.clock.now_ms();
            let locks = r.live_locks(now, session_id)?;
            Ok(locks
                .into_iter()
                .map(|lock| LiveLock {
                    ttl_remaining_ms: lock.expires_at_ms - now,
                    lock,
                })
                .collect())
        })
    }

    /// Deletes expired lock rows, appending a `lock.expired` event for each, and hands each
    /// to its first waiter; how many expired. Liveness never depends on it having run.
    pub fn sweep_expired_locks(&self) -> Result<usize> {
        let mut waits = self.waits();
        let mut handovers = Vec::new();
        let expired = self.store.write(|w| {
            let now = self.clock.now_ms();
            let expired = w.expired_locks(now)?;
            for lock in &expired {
                w.delete_lock(&lock.symbol_path)?;
                append_expired(w, now, lock)?;
                if let Some(h) = self.hand_over(w, &mut waits, &lock.symbol_path, now)? {
                    handovers.push(h);
                }
            }
            Ok::<_, CoordError>(expired.len())
        })?;
        self.deliver_all(&mut waits, handovers);
        Ok(expired)
    }

    /// Hands every waited-for lock that is free or has expired to its first waiter (run by
    /// the pulse, and when the earliest holder expiry among waited-for symbols comes; see
    /// [`Coord::next_wait_wakeup`]). With a shared store that covers every daemon's waiters.
    pub fn hand_over_expired(&self) -> Result<()> {
        let mut waits = self.waits();
        let symbols: Vec<String> = if self.store.is_shared() {
            let rows = self.store.read(|r| r.waiters())?;
            let mut symbols: Vec<String> = rows.into_iter().map(|r| r.symbol_path).collect();
            symbols.dedup();
            symbols
        } else {
            waits.symbols()
        };
        for symbol in symbols {
            self.hand_over_if_free(&mut waits, &symbol)?;
        }
        Ok(())
    }

    /// When the earliest holder of a lock this daemon's requests wait for expires (unix ms),
    /// if any waits.
    pub fn next_wait_wakeup(&self) -> Option<i64> {
        self.waits().next_expiry_hint()
    }

    /// How many requests wait for a lock on this daemon.
    pub fn waiting_requests(&self) -> usize {
        self.waits().len()
    }

    /// Answers every waiting request of this daemon with LOCK_CONFLICT (the daemon stops).
    pub fn refuse_all_waiters(&self) {
        let drained = self.waits().drain();
        self.refuse(drained);
    }

    /// Answers `waiters` with LOCK_CONFLICT naming the current holder.
    pub(crate) fn refuse(&self, waiters: Vec<Waiter>) {
        for waiter in waiters {
            let (held_by, expires_at_ms) = self.holder(&waiter.symbol);
            waiter
                .reply
                .send(WaitOutcome::Refused(CoordError::LockConflict {
                    held_by,
                    expires_at_ms,
                    cycle: None,
                }));
        }
    }

    /// Answers this daemon's requests that another daemon granted (told through the store's
    /// listener). A request that is gone meanwhile gives its lock back. How many.
    pub fn deliver_granted(&self) -> Result<usize> {
        let mut waits = self.waits();
        let rows = self.store.write(|w| {
            let rows = w.granted_waiters(self.store.daemon_id())?;
            for row in &rows {
                w.delete_waiter(row.id)?;
            }
            Ok::<_, CoordError>(rows)
        })?;
        let mut give_back = Vec::new();
        let delivered = rows.len();
        for row in rows {
            let Some(granted) = row.granted.as_deref().and_then(Grant::decode) else {
                continue;
            };
            match waits.remove(row.id) {
                Some(waiter) if !waiter.reply.is_closed() => {
                    waits.set_holder_expiry(&waiter.symbol, granted.lock.expires_at_ms);
                    waiter.reply.send(WaitOutcome::Granted(granted));
                    self.saw(&row.session_id);
                }
                _ => give_back.push(granted.lock),
            }
        }
        drop(waits);
        for lock in &give_back {
            self.give_back(lock);
        }
        Ok(delivered)
    }

    /// Whether a request may wait for `symbol`: always possible with a shared store (another
    /// daemon's), else only when one of this daemon's does (a lookup saved on every acquire).
    fn may_have_waiters(&self, waits: &LocalWaiters, symbol: &str) -> bool {
        self.store.is_shared() || waits.waits_for(symbol)
    }

    /// In its own transaction, hands `symbol` to its first waiter if the lock is free or has
    /// expired, then answers the waiter.
    fn hand_over_if_free(&self, waits: &mut LocalWaiters, symbol: &str) -> Result<()> {
        let handover = self.store.write(|w| {
            let now = self.clock.now_ms();
            let held = w.lock(symbol)?;
            Ok::<_, CoordError>(match self.free_for_waiters(w, waits, symbol, &held, now)? {
                Some(Handed::Here(handover)) => Some(handover),
                _ => None,
            })
        })?;
        self.deliver(waits, handover);
        Ok(())
    }

    /// Inside a transaction, with `held` the lock row of `symbol` just read: if the lock is
    /// free or expired (then its row goes, with `lock.expired`) and somebody may wait, hands it
    /// to the first waiter and says to whom (`None`: nothing was done, the row stands; a live
    /// holder's expiry is noted for the pulse).
    fn free_for_waiters(
        &self,
        w: &Writer<'_>,
        waits: &mut LocalWaiters,
        symbol: &str,
        held: &Option<Lock>,
        now: i64,
    ) -> Result<Option<Handed>> {
        if !self.may_have_waiters(waits, symbol) {
            return Ok(None);
        }
        match held {
            Some(live) if live.is_live(now) => {
                waits.set_holder_expiry(symbol, live.expires_at_ms);
                return Ok(None);
            }
            Some(expired) => {
                w.delete_lock(symbol)?;
                append_expired(w, now, expired)?;
            }
            None => {}
        }
        self.hand_over_to_first(w, waits, symbol, now).map(Some)
    }

    /// Inside the transaction that freed `symbol`: makes its first open waiter the holder (a
    /// new acquisition with its own `lock.acquired` event). A waiter of this daemon is
    /// answered once the transaction commits ([`Coord::deliver`]); one of another daemon gets
    /// the grant written to its row, and its daemon is told after the commit. Requests of
    /// this daemon that are gone (their connection closed) or unknown leave the queue.
    pub(crate) fn hand_over(
        &self,
        w: &Writer<'_>,
        waits: &mut LocalWaiters,
        symbol: &str,
        now: i64,
    ) -> Result<Option<Handover>> {
        Ok(match self.hand_over_to_first(w, waits, symbol, now)? {
            Handed::Here(handover) => Some(handover),
            Handed::Nobody | Handed::Elsewhere(_) => None,
        })
    }

    /// [`Coord::hand_over`], saying to whom the lock went.
    fn hand_over_to_first(
        &self,
        w: &Writer<'_>,
        waits: &mut LocalWaiters,
        symbol: &str,
        now: i64,
    ) -> Result<Handed> {
        if !self.may_have_waiters(waits, symbol) {
            return Ok(Handed::Nobody);
        }
        while let Some(row) = w.first_waiter(symbol)? {
            let mine = row.daemon_id == self.store.daemon_id();
            if mine
                && waits
                    .get(row.id)
                    .is_none_or(|waiter| waiter.reply.is_closed())
            {
                w.delete_waiter(row.id)?;
                waits.remove(row.id);
                continue;
            }
            let callers: Vec<String> = serde_json::from_str(&row.callers).unwrap_or_default();
            let warnings = caller_warnings(w, symbol, &row.session_id, &callers, now)?;
            let lock = new_acquisition(w, symbol, &row.session_id, row.ttl_ms, now)?;
            let granted = AcquiredLock { lock, warnings };
            if mine {
                w.delete_waiter(row.id)?;
                return Ok(Handed::Here(Handover {
                    waiter: row.id,
                    granted,
                }));
            }
            w.grant_waiter(row.id, &row.daemon_id, &Grant::encode(&granted))?;
            return Ok(Handed::Elsewhere(granted.lock));
        }
        Ok(Handed::Nobody)
    }

    /// Inside a transaction: releases `lock` if exactly that acquisition still holds (a lock
    /// granted to a request whose daemon died), handing it to the next waiter.
    pub(crate) fn give_back_in(
        &self,
        w: &Writer<'_>,
        waits: &mut LocalWaiters,
        lock: &Lock,
        now: i64,
    ) -> Result<Option<Handover>> {
        match w.lock(&lock.symbol_path)? {
            Some(held)
                if held.is_live(now)
                    && held.token == lock.token
                    && held.session_id == lock.session_id =>
            {
                w.delete_lock(&held.symbol_path)?;
                events::append(
                    w,
                    now,
                    EventKind::LockReleased,
                    Some(&held.session_id),
                    &held.symbol_path,
                    events::lock_data(&held, json!({"reason": "waiter gone"})),
                )?;
                self.hand_over(w, waits, &lock.symbol_path, now)
            }
            _ => Ok(None),
        }
    }

    /// Answers the waiter of a committed hand-over.
    pub(crate) fn deliver(&self, waits: &mut LocalWaiters, handover: Option<Handover>) {
        let Some(handover) = handover else { return };
        let Some(waiter) = waits.remove(handover.waiter) else {
            return;
        };
        waits.set_holder_expiry(&waiter.symbol, handover.granted.lock.expires_at_ms);
        let session = waiter.session_id.clone();
        waiter.reply.send(WaitOutcome::Granted(handover.granted));
        self.saw(&session);
    }

    /// Answers the waiters of several committed hand-overs.
    pub(crate) fn deliver_all(&self, waits: &mut LocalWaiters, handovers: Vec<Handover>) {
        for handover in handovers {
            self.deliver(waits, Some(handover));
        }
    }

    /// Who holds `symbol` now and until when (`("", 0)` when nobody does or the store fails).
    pub(crate) fn holder(&self, symbol: &str) -> (String, i64) {
        let now = self.clock.now_ms();
        match self.store.read(|r| r.lock(symbol)) {
            Ok(Some(lock)) if lock.is_live(now) => (lock.session_id, lock.expires_at_ms),
            _ => (String::new(), 0),
        }
    }
}

/// Writes a new acquisition of `symbol` by `session_id`: its `lock.acquired` event first,
/// whose `seq` is the lock's fencing token.
fn new_acquisition(
    w: &Writer<'_>,
    symbol: &str,
    session_id: &str,
    ttl_ms: i64,
    now: i64,
) -> Result<Lock> {
    let mut lock = Lock {
        symbol_path: symbol.to_owned(),
        session_id: session_id.to_owned(),
        acquired_at_ms: now,
        expires_at_ms: now.saturating_add(ttl_ms),
        token: 0,
    };
    // The token is the event's seq: known only once the event is written, and part of it.
    let seq = w.next_event_seq()?;
    lock.token = seq;
    let written = events::append(
        w,
        now,
        EventKind::LockAcquired,
        Some(session_id),
        symbol,
        events::lock_data(&lock, json!({})),
    )?;
    debug_assert_eq!(written, seq);
    lock.token = written;
    w.put_lock(&lock)?;
    Ok(lock)
}

/// Appends the `lock.expired` event of a lock whose row is being removed or replaced.
fn append_expired(w: &Writer<'_>, now: i64, lock: &Lock) -> Result<()> {
    events::append(
        w,
        now,
        EventKind::LockExpired,
        Some(&lock.session_id),
        &lock.symbol_path,
        events::lock_data(lock, json!({})),
    )?;
    Ok(())
}

/// The callers of `path` locked by sessions other than `session_id`.
fn caller_warnings(
    w: &Writer<'_>,
    path: &str,
    session_id: &str,
    callers: &[String],
    now: i64,
) -> Result<Vec<CallerWarning>> {
    let mut warnings = Vec::new();
    let mut seen = HashSet::new();
    for caller in callers {
        if caller == path || !seen.insert(caller.as_str()) {
            continue;
        }
        if let Some(held) = w.lock(caller)? {
            if held_by_another(&held, session_id, now) {
                warnings.push(CallerWarning {
                    locked_symbol: caller.clone(),
                    held_by: held.session_id,
                    chain: [caller.clone(), path.to_owned()],
                });
            }
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use std::sync::{Arc, Barrier};

    use super::*;
    use crate::coord::testing::{FakeIndex, Harness};
    use crate::coord::{ManualClock, SystemClock};
    use crate::store::Store;

    const T0: i64 = 1_768_473_000_000;

    #[test]
    fn acquire_new_lock() {
        let h = Harness::new();
        let got = h
            .coord
            .acquire_lock("./src//a.ts:f", "s1", Some(1000))
            .unwrap();
        assert_eq!(
            got.lock,
            Lock {
                symbol_path: "src/a.ts:f".into(),
                session_id: "s1".into(),
                acquired_at_ms: T0,
                expires_at_ms: T0 + 1000,
                token: 1,
            }
        );
        assert!(got.warnings.is_empty());
    }

    #[test]
    fn default_ttl_is_thirty_minutes() {
        let h = Harness::new();
        let got = h.coord.acquire_lock("a.ts:f", "s1", None).unwrap();
        assert_eq!(got.lock.expires_at_ms, T0 + 1_800_000);
    }

    #[test]
    fn ttl_is_validated() {
        let h = Harness::new();
        for ttl in [0, -1, MAX_TTL_MS + 1, i64::MIN, i64::MAX] {
            let err = h.coord.acquire_lock("a.ts:f", "s1", Some(ttl)).unwrap_err();
            assert!(
                matches!(err, CoordError::InvalidInput { field: "ttlMs", .. }),
                "{ttl}: {err:?}"
            );
        }
        assert!(h.coord.acquire_lock("a.ts:f", "s1", Some(1)).is_ok());
        assert!(h
            .coord
            .acquire_lock("a.ts:g", "s1", Some(MAX_TTL_MS))
            .is_ok());
    }

    #[test]
    fn symbol_path_and_session_are_validated() {
        let h = Harness::new();
        for path in ["a.ts", "../a.ts:f", "/a.ts:f", "a.ts:", "a\\b:f", ":f"] {
            let err = h.coord.acquire_lock(path, "s1", None).unwrap_err();
            assert!(
                matches!(
                    err,
                    CoordError::InvalidInput {
                        field: "symbolPath",
                        ..
                    }
                ),
                "{path}: {err:?}"
            );
            let err = h.coord.release_lock(path, "s1").unwrap_err();
            assert!(matches!(
                err,
                CoordError::InvalidInput {
                    field: "symbolPath",
                    ..
                }
            ));
        }
        let long = format!("a.ts:{}", "x".repeat(4096));
        assert!(matches!(
            h.coord.acquire_lock(&long, "s1", None).unwrap_err(),
            CoordError::InvalidInput {
                field: "symbolPath",
                ..
            }
        ));
        assert!(matches!(
            h.coord.acquire_lock("a.ts:f", "", None).unwrap_err(),
            CoordError::InvalidInput {
                field: "sessionId",
                ..
            }
        ));
    }

    #[test]
    fn conflict_names_holder_and_expiry() {
        let h = Harness::new();
        h.coord.acquire_lock("a.ts:f", "s1", Some(5000)).unwrap();
        h.clock.advance(10);
        let err = h.coord.acquire_lock("./a.ts:f", "s2", None).unwrap_err();
        match err {
            CoordError::LockConflict {
                held_by,
                expires_at_ms,
                cycle,
            } => {
                assert_eq!(cycle, None);
                assert_eq!(held_by, "s1");
                assert_eq!(expires_at_ms, T0 + 5000);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn same_session_refresh_keeps_acquired_at() {
        let h = Harness::new();
        h.coord.acquire_lock("a.ts:f", "s1", Some(1000)).unwrap();
        h.clock.advance(500);
        let got = h.coord.acquire_lock("a.ts:f", "s1", Some(2000)).unwrap();
        assert_eq!(got.lock.acquired_at_ms, T0);
        assert_eq!(got.lock.expires_at_ms, T0 + 500 + 2000);
        // A shorter TTL shortens the lock: expiry is now + ttl.
        let got = h.coord.acquire_lock("a.ts:f", "s1", Some(1)).unwrap();
        assert_eq!(got.lock.expires_at_ms, T0 + 501);
    }

    #[test]
    fn expired_lock_is_taken_over_without_sweep() {
        let h = Harness::new();
        h.coord.acquire_lock("a.ts:f", "s1", Some(1000)).unwrap();
        // Exactly at the expiry the lock no longer exists.
        h.clock.advance(1000);
        let got = h.coord.acquire_lock("a.ts:f", "s2", Some(1000)).unwrap();
        assert_eq!(got.lock.session_id, "s2");
        assert_eq!(got.lock.acquired_at_ms, T0 + 1000);
        // The old holder is now refused.
        assert!(matches!(
            h.coord.acquire_lock("a.ts:f", "s1", None).unwrap_err(),
            CoordError::LockConflict { held_by, .. } if held_by == "s2"
        ));
    }

    #[test]
    fn expired_own_lock_is_a_new_acquisition() {
        let h = Harness::new();
        h.coord.acquire_lock("a.ts:f", "s1", Some(1000)).unwrap();
        h.clock.advance(1500);
        let got = h.coord.acquire_lock("a.ts:f", "s1", Some(1000)).unwrap();
        assert_eq!(got.lock.acquired_at_ms, T0 + 1500);
    }

    #[test]
    fn one_ms_before_expiry_is_still_live() {
        let h = Harness::new();
        h.coord.acquire_lock("a.ts:f", "s1", Some(1000)).unwrap();
        h.clock.advance(999);
        assert!(h.coord.acquire_lock("a.ts:f", "s2", None).is_err());
        let q = h.coord.query_locks(None).unwrap();
        assert_eq!(q[0].ttl_remaining_ms, 1);
    }

    #[test]
    fn release_errors_and_success() {
        let h = Harness::new();
        assert!(matches!(
            h.coord.release_lock("a.ts:f", "s1").unwrap_err(),
            CoordError::LockNotFound
        ));
        h.coord.acquire_lock("a.ts:f", "s1", Some(1000)).unwrap();
        assert!(matches!(
            h.coord.release_lock("a.ts:f", "s2").unwrap_err(),
            CoordError::LockNotHeld { held_by } if held_by == "s1"
        ));
        h.coord.release_lock("./a.ts:f", "s1").unwrap();
        assert!(matches!(
            h.coord.release_lock("a.ts:f", "s1").unwrap_err(),
            CoordError::LockNotFound
        ));
        assert!(h.coord.query_locks(None).unwrap().is_empty());
    }

    #[test]
    fn release_of_expired_lock_is_not_found_for_anyone() {
        let h = Harness::new();
        h.coord.acquire_lock("a.ts:f", "s1", Some(1000)).unwrap();
        h.clock.advance(1000);
        for session in ["s1", "s2"] {
            assert!(matches!(
                h.coord.release_lock("a.ts:f", session).unwrap_err(),
                CoordError::LockNotFound
            ));
        }
    }

    #[test]
    fn query_hides_expired_orders_and_filters() {
        let h = Harness::new();
        h.coord.acquire_lock("b.ts:f", "s1", Some(10_000)).unwrap();
        h.coord.acquire_lock("a.ts:f", "s2", Some(10_000)).unwrap();
        h.coord.acquire_lock("z.ts:short", "s1", Some(50)).unwrap();
        h.clock.advance(10);
        h.coord.acquire_lock("c.ts:f", "s1", Some(10_000)).unwrap();
        h.clock.advance(90);

        let all = h.coord.query_locks(None).unwrap();
        let paths: Vec<_> = all.iter().map(|l| l.lock.symbol_path.as_str()).collect();
        // Same acquisition time: by symbol path; the expired one is gone.
        assert_eq!(paths, ["a.ts:f", "b.ts:f", "c.ts:f"]);
        let ttl: Vec<_> = all.iter().map(|l| l.ttl_remaining_ms).collect();
        assert_eq!(ttl, [9900, 9900, 9910]);

        let s1 = h.coord.query_locks(Some("s1")).unwrap();
        let paths: Vec<_> = s1.iter().map(|l| l.lock.symbol_path.as_str()).collect();
        assert_eq!(paths, ["b.ts:f", "c.ts:f"]);
        assert!(h.coord.query_locks(Some("")).unwrap().is_empty());
        assert!(h.coord.query_locks(Some("nobody")).unwrap().is_empty());
    }

    #[test]
    fn sweep_deletes_only_expired() {
        let h = Harness::new();
        h.coord.acquire_lock("a.ts:f", "s1", Some(100)).unwrap();
        h.coord.acquire_lock("a.ts:g", "s1", Some(1000)).unwrap();
        h.clock.advance(100);
        assert_eq!(h.coord.sweep_expired_locks().unwrap(), 1);
        assert_eq!(h.coord.sweep_expired_locks().unwrap(), 0);
        assert_eq!(h.coord.store().read(|r| r.lock("a.ts:f")).unwrap(), None);
        assert!(h
            .coord
            .store()
            .read(|r| r.lock("a.ts:g"))
            .unwrap()
            .is_some());
    }

    #[test]
    fn caller_warnings_for_callers_locked_by_others() {
        let h = Harness::new();
        h.index
            .add_call("src/api.ts:handler", "src/auth.ts:validate");
        h.index.add_call("src/cli.ts:main", "src/auth.ts:validate");
        h.index.add_call("src/own.ts:mine", "src/auth.ts:validate");
        h.index.add_call("src/old.ts:stale", "src/auth.ts:validate");
        h.coord
            .acquire_lock("src/api.ts:handler", "s2", None)
            .unwrap();
        h.coord.acquire_lock("src/own.ts:mine", "s1", None).unwrap();
        h.coord
            .acquire_lock("src/old.ts:stale", "s3", Some(5))
            .unwrap();
        h.clock.advance(5);
        let got = h
            .coord
            .acquire_lock("src/auth.ts:validate", "s1", None)
            .unwrap();
        assert_eq!(
            got.warnings,
            vec![CallerWarning {
                locked_symbol: "src/api.ts:handler".into(),
                held_by: "s2".into(),
                chain: ["src/api.ts:handler".into(), "src/auth.ts:validate".into()],
            }]
        );
    }

    #[test]
    fn hundreds_of_racing_threads_one_winner() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db")).unwrap();
        let coord = Arc::new(crate::coord::Coord::new(
            store,
            Arc::new(SystemClock),
            Arc::new(FakeIndex::default()),
        ));
        for round in 0..3 {
            let threads = 200;
            let barrier = Arc::new(Barrier::new(threads));
            let path = format!("src/a.ts:f{round}");
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    let coord = Arc::clone(&coord);
                    let barrier = Arc::clone(&barrier);
                    let path = path.clone();
                    std::thread::spawn(move || {
                        barrier.wait();
                        (
                            format!("s{i}"),
                            coord.acquire_lock(&path, &format!("s{i}"), None),
                        )
                    })
                })
                .collect();
            let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let winners: Vec<_> = results.iter().filter(|(_, r)| r.is_ok()).collect();
            assert_eq!(winners.len(), 1, "round {round}");
            let winner = &winners[0].0;
            for (_, r) in &results {
                match r {
                    Ok(_) => {}
                    Err(CoordError::LockConflict { held_by, .. }) => assert_eq!(held_by, winner),
                    Err(other) => panic!("{other:?}"),
                }
            }
        }
    }

    #[test]
    fn acquire_release_cycles_are_fast_enough() {
        // A smoke check of the per-cycle cost on a real WAL file (the benchmark proper runs
        // against the daemon in release mode); generous so a loaded debug build passes.
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db")).unwrap();
        let coord = crate::coord::Coord::new(
            store,
            Arc::new(ManualClock::new(T0)),
            Arc::new(FakeIndex::default()),
        );
        let start = std::time::Instant::now();
        for i in 0..500 {
            coord
                .acquire_lock("a.ts:f", &format!("s{}", i % 7), None)
                .unwrap();
            coord
                .release_lock("a.ts:f", &format!("s{}", i % 7))
                .unwrap();
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
    }

    /// A reply that lands in a std channel.
    struct TestReply(std::sync::mpsc::Sender<WaitOutcome>);
    impl WaitReply for TestReply {
        fn is_closed(&self) -> bool {
            false
        }
        fn send(self: Box<Self>, outcome: WaitOutcome) {
            let _ = self.0.send(outcome);
        }
    }

    fn wait_on(
        h: &Harness,
        path: &str,
        session: &str,
    ) -> (Acquire, std::sync::mpsc::Receiver<WaitOutcome>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let got = h
            .coord
            .acquire_or_wait(
                &h.coord.vantage(Some(session)),
                path,
                Some(1000),
                Some(Box::new(TestReply(tx))),
            )
            .unwrap();
        (got, rx)
    }

    fn granted(rx: &std::sync::mpsc::Receiver<WaitOutcome>) -> AcquiredLock {
        match rx.try_recv().expect("an answer") {
            WaitOutcome::Granted(lock) => lock,
            WaitOutcome::Refused(e) => panic!("refused: {e:?}"),
        }
    }

    #[test]
    fn lock_waits_lists_waiters_with_the_live_holder_or_none() {
        let h = Harness::new();
        h.coord
            .acquire_lock("b.ts:g", "hold-b", Some(1_000))
            .unwrap();
        h.coord.acquire_lock("a.ts:f", "hold-a", None).unwrap();
        let _b1 = wait_on(&h, "b.ts:g", "w1");
        h.clock.advance(10);
        let _b2 = wait_on(&h, "b.ts:g", "w2");
        let _a = wait_on(&h, "a.ts:f", "w3");
        let shown = |waits: Vec<LockWait>| -> Vec<(String, String, Option<String>)> {
            waits
                .into_iter()
                .map(|w| (w.symbol_path, w.session_id, w.holder))
                .collect()
        };
        let waits = h.coord.lock_waits().unwrap();
        assert!(waits[1].since_ms < waits[2].since_ms, "{waits:?}");
        let held = |s: &str| Some(s.to_string());
        assert_eq!(
            shown(waits),
            [
                ("a.ts:f".into(), "w3".into(), held("hold-a")),
                ("b.ts:g".into(), "w1".into(), held("hold-b")),
                ("b.ts:g".into(), "w2".into(), held("hold-b")),
            ]
        );
        // Expired and not yet handed over: nobody holds it.
        h.clock.advance(1_000);
        let waits = shown(h.coord.lock_waits().unwrap());
        assert_eq!(waits[1], ("b.ts:g".into(), "w1".into(), None));
    }

    #[test]
    fn waiters_are_served_in_arrival_order_and_nobody_slips_in() {
        let h = Harness::new();
        h.coord.acquire_lock("a.ts:f", "holder", None).unwrap();
        let (a, ra) = wait_on(&h, "a.ts:f", "w1");
        let (_, rb) = wait_on(&h, "a.ts:f", "w2");
        let (_, rc) = wait_on(&h, "a.ts:f", "w3");
        assert!(matches!(a, Acquire::Queued { .. }));
        assert_eq!(h.coord.waiting_requests(), 3);
        h.coord.release_lock("a.ts:f", "holder").unwrap();
        let first = granted(&ra);
        assert_eq!(first.lock.session_id, "w1");
        assert!(rb.try_recv().is_err() && rc.try_recv().is_err());
        // A newcomer without a wait meets the waiter's lock.
        assert!(matches!(
            h.coord.acquire_lock("a.ts:f", "late", None),
            Err(CoordError::LockConflict { held_by, .. }) if held_by == "w1"
        ));
        h.coord.release_lock("a.ts:f", "w1").unwrap();
        assert_eq!(granted(&rb).lock.session_id, "w2");
        h.coord.release_lock("a.ts:f", "w2").unwrap();
        let third = granted(&rc);
        assert_eq!(third.lock.session_id, "w3");
        assert!(
            third.lock.token > first.lock.token,
            "tokens grow with acquisitions"
        );
        assert_eq!(h.coord.waiting_requests(), 0);
    }

    #[test]
    fn expiry_and_reap_hand_over_too() {
        let h = Harness::new();
        h.coord.acquire_lock("a.ts:f", "holder", Some(100)).unwrap();
        let (_, rx) = wait_on(&h, "a.ts:f", "w1");
        assert_eq!(h.coord.next_wait_wakeup(), Some(T0 + 100));
        h.clock.advance(100);
        // Even before the timer, a newcomer finds the expired lock handed to the waiter.
        assert!(h.coord.acquire_lock("a.ts:f", "late", None).is_err());
        assert_eq!(granted(&rx).lock.session_id, "w1");

        h.processes.start(7, 1);
        h.coord
            .register_with_pulse("x", "mortal", Some(7), None)
            .unwrap();
        h.coord.acquire_lock("b.ts:f", "mortal", None).unwrap();
        let (_, rx) = wait_on(&h, "b.ts:f", "w2");
        h.processes.kill(7);
        h.coord.reap_dead_sessions().unwrap();
        assert_eq!(granted(&rx).lock.session_id, "w2");

        h.coord.acquire_lock("c.ts:f", "holder", Some(50)).unwrap();
        let (_, rx) = wait_on(&h, "c.ts:f", "w3");
        h.clock.advance(50);
        h.coord.hand_over_expired().unwrap();
        assert_eq!(granted(&rx).lock.session_id, "w3");
    }

    #[test]
    fn a_wait_that_closes_a_cycle_fails_at_once() {
        let h = Harness::new();
        h.coord.acquire_lock("x.ts:f", "a", None).unwrap();
        h.coord.acquire_lock("y.ts:f", "b", None).unwrap();
        let (queued, _rx) = wait_on(&h, "x.ts:f", "b");
        assert!(matches!(queued, Acquire::Queued { .. }));
        let (tx, _r) = std::sync::mpsc::channel();
        let err = h
            .coord
            .acquire_or_wait(
                &h.coord.vantage(Some("a")),
                "y.ts:f",
                None,
                Some(Box::new(TestReply(tx))),
            )
            .unwrap_err();
        match err {
            CoordError::LockConflict { held_by, cycle, .. } => {
                assert_eq!(held_by, "b");
                assert_eq!(cycle, Some(vec!["a".to_string(), "b".to_string()]));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            h.coord.waiting_requests(),
            1,
            "the refused wait was not queued"
        );
    }

    #[test]
    fn an_ended_session_is_never_handed_its_own_released_lock() {
        let h = Harness::new();
        h.coord.acquire_lock("x.ts:f", "holder", None).unwrap();
        let (_, first) = wait_on(&h, "x.ts:f", "s");
        let (_, second) = wait_on(&h, "x.ts:f", "s");
        h.coord.release_lock("x.ts:f", "holder").unwrap();
        assert_eq!(granted(&first).lock.session_id, "s");
        h.coord.end_session("s").unwrap();
        assert!(matches!(
            second.try_recv().unwrap(),
            WaitOutcome::Refused(_)
        ));
        assert!(h.coord.query_locks(None).unwrap().is_empty());
    }

    #[test]
    fn a_cancelled_waiter_leaves_and_ending_a_session_refuses_its_waits() {
        let h = Harness::new();
        h.coord.acquire_lock("a.ts:f", "holder", None).unwrap();
        let (Acquire::Queued { id, .. }, _rx) = wait_on(&h, "a.ts:f", "w1") else {
            panic!("queued")
        };
        let (_, r2) = wait_on(&h, "a.ts:f", "w2");
        assert!(
            matches!(h.coord.cancel_wait(id), Cancelled::Removed { held_by, .. } if held_by == "holder")
        );
        assert_eq!(h.coord.cancel_wait(id), Cancelled::AlreadyAnswered);
        h.coord.end_session("w2").unwrap();
        assert!(matches!(r2.try_recv().unwrap(), WaitOutcome::Refused(_)));
        h.coord.release_lock("a.ts:f", "holder").unwrap();
        assert!(
            h.coord.query_locks(None).unwrap().is_empty(),
            "nobody was left to hand to"
        );
        // A lock handed to a waiter that then left is given back by its token only.
        h.coord.acquire_lock("b.ts:f", "holder", None).unwrap();
        let (_, r3) = wait_on(&h, "b.ts:f", "w3");
        h.coord.release_lock("b.ts:f", "holder").unwrap();
        let got = granted(&r3);
        assert!(h
            .coord
            .release_lock_if("b.ts:f", "w3", Some(got.lock.token + 1))
            .is_err());
        h.coord
            .release_lock_if("b.ts:f", "w3", Some(got.lock.token))
            .unwrap();
    }
}
