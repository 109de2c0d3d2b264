//! The one interface of the coordination state: what `coord` may ask of a store inside a
//! transaction, declared once here and implemented directly by each backend (`sqlite/`,
//! `postgres/`), whose per-table files implement the traits of their table.
//!
//! The interface is one pair of traits per table (its reads and its writes), so that each
//! backend keeps one file per table; [`StoreRead`] is every read and [`StoreWrite`] every
//! read and write. `coord` sees only their trait objects ([`super::Reader`],
//! [`super::Writer`]), so the rules are written once.
//!
//! Every method runs inside the transaction the closure of [`super::Store::read`] or
//! [`super::Store::write`] was given. A write transaction of either backend is serialised with
//! every other write transaction on the same state (one project in PostgreSQL), so a check and
//! the write it decides on are one atomic step whichever daemon runs them.

use super::{
    CommitNotes, Contract, ContractStatus, DaemonBeat, EventPage, Intent, IntentFilter,
    IntentRange, IntentStatus, LineRegion, Lock, LockWait, NewEvent, NewWaiter, RangeHit, Result,
    SessionRow, SessionSummary, WaiterRow,
};

/// Reads, inside a read or write transaction: the reads of every table.
pub trait StoreRead:
    AgentsRead
    + LocksRead
    + IntentsRead
    + ContractsRead
    + EventsRead
    + SessionsRead
    + WaitersRead
    + DaemonsRead
{
}

/// Writes (and reads), inside a write transaction: the writes of every table.
pub trait StoreWrite:
    StoreRead
    + AgentsWrite
    + LocksWrite
    + IntentsWrite
    + ContractsWrite
    + EventsWrite
    + SessionsWrite
    + WaitersWrite
    + DaemonsWrite
{
    /// What this transaction tells the other side once it commits.
    fn notes(&self) -> &CommitNotes;
}

/// Reads of the `agents` table (names of registered sessions).
pub trait AgentsRead {
    /// The agent registered under `session_id`: its numeric id and name.
    fn agent(&self, session_id: &str) -> Result<Option<(i64, String)>>;
}

/// Writes to the `agents` table (names of registered sessions).
pub trait AgentsWrite {
    /// Registers `session_id` as `name` (or renames it); the agent's numeric id.
    fn upsert_agent(&self, session_id: &str, name: &str, now_ms: i64) -> Result<i64>;
}

/// Reads of the `locks` table.
pub trait LocksRead {
    /// The lock row on `symbol_path`, live or expired.
    fn lock(&self, symbol_path: &str) -> Result<Option<Lock>>;
    /// Locks live at `now_ms`, optionally only those of `session_id` (compared literally),
    /// ordered by acquisition time, then symbol path.
    fn live_locks(&self, now_ms: i64, session_id: Option<&str>) -> Result<Vec<Lock>>;
    /// Locks expired at `now_ms` whose rows are still there.
    fn expired_locks(&self, now_ms: i64) -> Result<Vec<Lock>>;
}

/// Writes to the `locks` table.
pub trait LocksWrite {
    /// Inserts or replaces the lock on `lock.symbol_path`.
    fn put_lock(&self, lock: &Lock) -> Result<()>;
    /// Deletes the lock row on `symbol_path` (callers delete a row they have read in the same
    /// transaction, so a backend may send the delete with the commit).
    fn delete_lock(&self, symbol_path: &str) -> Result<()>;
    /// Deletes every lock expired at `now_ms`; how many.
    fn delete_expired_locks(&self, now_ms: i64) -> Result<usize>;
}

/// Reads of the `intents` and `intent_ranges` tables.
pub trait IntentsRead {
    /// The intent with UUID `id`.
    fn intent(&self, id: &str) -> Result<Option<Intent>>;
    /// Live ranges in `file` of intents of sessions other than `other_than_session`, in
    /// declaration order.
    fn live_ranges_in_file(&self, file: &str, other_than_session: &str) -> Result<Vec<RangeHit>>;
    /// Live ranges in `file` of `session_id`'s own intents, in declaration order.
    fn own_live_ranges_in_file(&self, file: &str, session_id: &str) -> Result<Vec<RangeHit>>;
    /// Intents matching `filter`, in declaration order.
    fn intents(&self, filter: &IntentFilter<'_>) -> Result<Vec<Intent>>;
    /// Live rows in `file` of every session's intents that have regions (observed work), in
    /// declaration order: what must follow when the file's text changes.
    fn live_regions_in_file(&self, file: &str) -> Result<Vec<RangeHit>>;
}

/// Writes to the `intents` and `intent_ranges` tables.
pub trait IntentsWrite {
    /// Stores a new intent and its ranges.
    fn insert_intent(&self, intent: &Intent, ranges: &[IntentRange]) -> Result<()>;
    /// Sets an intent's status (and its ranges' liveness); whether the intent exists.
    fn set_intent_status(&self, id: &str, status: IntentStatus, now_ms: i64) -> Result<bool>;
    /// Replaces an intent's regions (`None`: file-level); whether the intent exists.
    fn set_intent_regions(&self, id: &str, regions: Option<&[LineRegion]>) -> Result<bool>;
    /// Replaces an intent's symbols (their JSON array, as stored); whether the intent exists.
    fn set_intent_symbols(&self, id: &str, symbols: &str) -> Result<bool>;
    /// Replaces an intent's description; whether the intent exists.
    fn set_intent_description(&self, id: &str, description: &str) -> Result<bool>;
}

/// Reads of the `contracts` table.
pub trait ContractsRead {
    /// The contract with UUID `id`.
    fn contract(&self, id: &str) -> Result<Option<Contract>>;
    /// Contracts, optionally of one symbol path and/or one status, in proposal order.
    fn contracts(
        &self,
        symbol_path: Option<&str>,
        status: Option<ContractStatus>,
    ) -> Result<Vec<Contract>>;
    /// Accepted contracts on symbols of `file`, in proposal order.
    fn accepted_contracts_in_file(&self, file: &str) -> Result<Vec<Contract>>;
}

/// Writes to the `contracts` table.
pub trait ContractsWrite {
    /// Stores a new contract.
    fn insert_contract(&self, contract: &Contract) -> Result<()>;
    /// Records the answer to a proposed contract; whether it was still proposed.
    fn set_contract_response(
        &self,
        id: &str,
        status: ContractStatus,
        responder: &str,
        now_ms: i64,
    ) -> Result<bool>;
}

/// Reads of the `events` log.
pub trait EventsRead {
    /// The newest event `seq` (0 when none was ever written).
    fn newest_event_seq(&self) -> Result<i64>;
    /// Up to `limit` events with `seq > since`, oldest first, of the given `kinds` (all when
    /// `None`), with the newest and oldest `seq` kept, from the same snapshot.
    fn events_after(&self, since: i64, limit: usize, kinds: Option<&[&str]>) -> Result<EventPage>;
}

/// Writes to the `events` log.
pub trait EventsWrite {
    /// The `seq` the next appended event will get (nobody else can append first inside a
    /// write transaction): a lock's fencing token is the `seq` of its `lock.acquired` event.
    fn next_event_seq(&self) -> Result<i64>;
    /// Appends one event at `at_ms`; its `seq` (and notes it for the commit).
    fn append_event(&self, at_ms: i64, event: &NewEvent<'_>) -> Result<i64>;
    /// Deletes events older than `older_than_ms` that are not among the newest
    /// `keep_newest`; how many.
    fn prune_events(&self, older_than_ms: i64, keep_newest: i64) -> Result<usize>;
}

/// Reads of the `sessions` table (sightings and pulses).
pub trait SessionsRead {
    /// The session's row, if it was ever seen.
    fn session(&self, session_id: &str) -> Result<Option<SessionRow>>;
    /// Sessions that have a pulse (a pid or a lease) and have not ended.
    fn sessions_with_pulse(&self) -> Result<Vec<SessionRow>>;
    /// Every session that is registered, holds a lock live at `now_ms` or a declared/active
    /// intent, with its counts, in order of first appearance (then session id).
    fn session_summaries(&self, now_ms: i64) -> Result<Vec<SessionSummary>>;
}

/// Writes to the `sessions` table (sightings and pulses).
pub trait SessionsWrite {
    /// Forgets sessions last seen before `cutoff_ms` that are not registered and hold
    /// nothing; how many.
    fn prune_sessions(&self, cutoff_ms: i64) -> Result<usize>;
    /// Creates the session's row or moves its last sighting forward, reviving an ended one.
    fn touch_session(&self, session_id: &str, now_ms: i64) -> Result<()>;
    /// Moves the last sighting of an existing session forward; never creates or revives.
    fn record_last_seen(&self, session_id: &str, seen_ms: i64) -> Result<()>;
    /// Records the root of the worktree the session acts from. The row must exist.
    fn set_session_worktree(&self, session_id: &str, worktree: &str) -> Result<()>;
    /// Replaces the session's pulse: its pid with the process start time and the host the
    /// pid lives on, and its lease. The row must exist.
    fn set_session_pulse(
        &self,
        session_id: &str,
        pid: Option<(i64, i64)>,
        host_id: &str,
        lease_ms: Option<i64>,
    ) -> Result<()>;
    /// Marks the session ended at `now_ms` and clears its pulse; whether it was live.
    fn end_session(&self, session_id: &str, now_ms: i64) -> Result<bool>;
}

/// Reads of the `lock_waiters` queue.
pub trait WaitersRead {
    /// Every queued lock request not yet granted, by symbol path, then arrival order.
    fn waiters(&self) -> Result<Vec<WaiterRow>>;
    /// Every queued request not yet granted with the holder of the symbol's lock live at
    /// `now_ms`, by symbol path (byte order), then arrival order: what `lock.waits` shows.
    fn lock_waits(&self, now_ms: i64) -> Result<Vec<LockWait>>;
    /// The first queued, not yet granted request for `symbol_path`.
    fn first_waiter(&self, symbol_path: &str) -> Result<Option<WaiterRow>>;
    /// The queued request `id`, granted or not.
    fn waiter(&self, id: i64) -> Result<Option<WaiterRow>>;
    /// The requests of `daemon_id` that another daemon granted and that wait to be answered.
    fn granted_waiters(&self, daemon_id: &str) -> Result<Vec<WaiterRow>>;
}

/// Writes to the `lock_waiters` queue.
pub trait WaitersWrite {
    /// Queues a lock request; its id (ids grow with arrival).
    fn insert_waiter(&self, waiter: &NewWaiter<'_>) -> Result<i64>;
    /// Marks request `id` granted with `answer` (the serialised grant its daemon sends);
    /// whether it was still queued. Notes the grant for its daemon.
    fn grant_waiter(&self, id: i64, daemon_id: &str, answer: &str) -> Result<bool>;
    /// Removes request `id` (answered, cancelled or gone); whether it was there.
    fn delete_waiter(&self, id: i64) -> Result<bool>;
    /// Removes every request of `daemon_id` (a daemon that stopped or died); how many.
    fn delete_daemon_waiters(&self, daemon_id: &str) -> Result<usize>;
}

/// Reads of the `daemons` table (heartbeats).
pub trait DaemonsRead {
    /// Hosts with a daemon whose last heartbeat is at or after `since_ms`.
    fn live_hosts(&self, since_ms: i64) -> Result<Vec<String>>;
}

/// Writes to the `daemons` table (heartbeats).
pub trait DaemonsWrite {
    /// Records a daemon's heartbeat (creating its row).
    fn beat_daemon(&self, beat: &DaemonBeat<'_>) -> Result<()>;
    /// Removes the row of a daemon that stops; whether it was there.
    fn delete_daemon(&self, daemon_id: &str) -> Result<bool>;
    /// Removes daemons whose last heartbeat is before `before_ms`; their ids.
    fn delete_stale_daemons(&self, before_ms: i64) -> Result<Vec<String>>;
}
