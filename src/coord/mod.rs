//! Coordination logic: agents, symbol locks, intents with conflict detection, signature
//! contracts (docs/protocol.md 2–4). No JSON-RPC, no sockets, no async: [`Coord`] is plain
//! synchronous Rust over the [`Store`], a [`Clock`] and a [`CodeIndex`], and the `rpc` module
//! turns its results and [`CoordError`]s into wire types.
//!
//! Each operation first asks the code index what it needs (which may parse files), without
//! holding the database, then runs one [`Store::write`] or [`Store::read`] transaction in which
//! it reads the clock once, checks and writes. So a check and the write it decides on are one
//! atomic step, and a failure leaves nothing behind.
//!
//! Inputs are validated here (paths normalised, sizes bounded, `ttlMs` range, statuses) and
//! refused with [`CoordError::InvalidInput`] naming the protocol field.

mod agents;
pub mod conflicts;
mod contracts;
pub mod events;
pub mod hosts;
mod index;
mod intents;
mod locks;
pub mod owner_map;
pub mod ownership;
pub mod paths;
pub mod preflight;
pub mod regions;
pub mod sessions;
#[cfg(test)]
mod shared_tests;
#[cfg(test)]
pub(crate) mod testing;
pub mod time;
pub mod vantage;
pub mod waits;
mod workmap;
pub mod worktree_work;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use crate::platform::process::{Liveness, Lookup, ProcessTable};
use crate::store::Store;
pub use crate::store::{
    Contract, ContractStatus, Intent, IntentRange, IntentStatus, LineRegion, Lock, LockWait,
    StoreError,
};
pub use conflicts::{Related, Relation};
pub use contracts::{Violation, SYMBOL_NOT_IN_STAGED_CONTENT};
pub use index::{CodeIndex, IdSource, SignatureLookup, SymbolSpan, TextSymbols, UuidIds};
pub use intents::{Conflict, DeclaredIntent};
pub use locks::{
    Acquire, AcquiredLock, CallerWarning, Cancelled, LiveLock, DEFAULT_TTL_MS, MAX_TTL_MS,
    MAX_WAIT_MS, MIN_TTL_MS,
};
pub use sessions::{EndReason, EndedSession, Heartbeat, ReapedSession, SessionInfo};
pub use time::{iso_millis, Clock, ManualClock, SystemClock};
pub use vantage::Vantage;
pub use waits::{WaitOutcome, WaitReply, WaiterId};

/// Longest `sessionId` and agent `name`, in bytes (docs/protocol.md 1.6).
pub const MAX_SESSION_ID_BYTES: usize = 256;
/// Longest intent `description`, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 64 * 1024;
/// Longest file path or `symbolPath`, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;
/// Most items in `files` or `symbols`.
pub const MAX_LIST_ITEMS: usize = 1000;

/// A domain error. Each variant maps to exactly one protocol error.
#[derive(Debug, thiserror::Error)]
pub enum CoordError {
    /// The symbol is locked by another session (LOCK_CONFLICT).
    #[error("symbol is locked by session {held_by}")]
    LockConflict {
        /// The holder.
        held_by: String,
        /// When the holder's lock expires (unix ms; see [`iso_millis`]).
        expires_at_ms: i64,
        /// The sessions around the cycle a wait would have closed, the caller's first.
        cycle: Option<Vec<String>>,
    },
    /// `session.heartbeat` for a session the daemon never saw (SESSION_NOT_FOUND).
    #[error("no session {session_id}")]
    SessionNotFound {
        /// The session asked for.
        session_id: String,
    },
    /// No live lock on that symbol (LOCK_NOT_FOUND).
    #[error("no lock on that symbol")]
    LockNotFound,
    /// The lock belongs to another session (LOCK_NOT_HELD).
    #[error("lock is held by session {held_by}")]
    LockNotHeld {
        /// The holder.
        held_by: String,
    },
    /// No intent with that id (INTENT_NOT_FOUND).
    #[error("no intent with that id")]
    IntentNotFound,
    /// The intent belongs to another session (INTENT_NOT_OWNED).
    #[error("intent belongs to another session")]
    IntentNotOwned,
    /// A status change that is not forward (INVALID_TRANSITION).
    #[error("cannot change intent status from {current} to {requested}")]
    InvalidTransition {
        /// The intent's status.
        current: IntentStatus,
        /// The status asked for.
        requested: IntentStatus,
    },
    /// The symbol does not resolve to exactly one symbol (SYMBOL_NOT_FOUND).
    #[error("symbol {symbol_path} not found")]
    SymbolNotFound {
        /// The normalised symbol path.
        symbol_path: String,
        /// Qualified names when the name is ambiguous; empty when nothing matched.
        candidates: Vec<String>,
    },
    /// No contract with that id (CONTRACT_NOT_FOUND).
    #[error("no contract with that id")]
    ContractNotFound,
    /// The contract was already accepted or rejected (CONTRACT_ALREADY_RESOLVED).
    #[error("contract is already {status}")]
    ContractAlreadyResolved {
        /// Its status.
        status: ContractStatus,
    },
    /// The proposer tried to answer its own contract (SELF_ACCEPT_NOT_ALLOWED).
    #[error("a session cannot respond to its own contract")]
    SelfAcceptNotAllowed,
    /// A parameter is unacceptable (INVALID_REQUEST with a field error).
    #[error("invalid {field}: {message}")]
    InvalidInput {
        /// The protocol's parameter name (`ttlMs`, `symbolPath`, ...).
        field: &'static str,
        /// What is wrong, for the client.
        message: String,
    },
    /// The database failed (INTERNAL_ERROR); nothing was changed.
    #[error(transparent)]
    Storage(#[from] StoreError),
    /// The client went away before the answer was ready; the work stopped (nothing was
    /// written).
    #[error("the client has gone")]
    Abandoned,
}

impl CoordError {
    fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        CoordError::InvalidInput {
            field,
            message: message.into(),
        }
    }
}

/// Result alias of the coordination layer.
pub type Result<T, E = CoordError> = std::result::Result<T, E>;

/// The coordination service: the store plus the injected clock, code index and id source.
/// `Send + Sync`; share it behind an `Arc` and call it from blocking threads.
///
/// One core serves each worktree of the repository ([`Coord::for_worktree`]): every core
/// shares the store and the in-memory state (waiters, sightings, work map texts, owner
/// maps), and each resolves symbols in its own worktree's files with its own index.
pub struct Coord {
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
    /// The code index of the worktree this core serves.
    index: Arc<dyn CodeIndex>,
    /// The root of that worktree (`None`: none on disk), as the index reads it.
    worktree_root: Option<String>,
    ids: Arc<dyn IdSource>,
    processes: Arc<dyn ProcessTable>,
    /// Lock waiters; taken before the database, never the other way round.
    waits: Arc<Mutex<waits::LocalWaiters>>,
    /// Signs of life not yet flushed; never held while waiting for `waits`.
    sightings: Arc<Mutex<sessions::Sightings>>,
    /// The host this daemon runs on (docs/protocol.md 12.3).
    host_id: String,
    /// Hosts with a live daemon, as of the last beat.
    live_hosts: Arc<Mutex<hosts::LiveHosts>>,
    /// When this coordination core was made (its daemon's start).
    started_at_ms: i64,
    /// Per file with observed regions: the text they are lines of (docs/protocol.md 13.3).
    /// The one lock held across a store write besides `waits` (ARCHITECTURE.md's
    /// invariants): a file's text and its stored regions change together.
    region_texts: Arc<Mutex<workmap::RegionTexts>>,
    /// The worktrees served and the texts of their changed files (docs/protocol.md 14.4).
    worktrees: Arc<Mutex<worktree_work::Worktrees>>,
    /// Tool-call windows and the owner maps of the trees served (docs/protocol.md 15).
    ownership: Arc<Mutex<ownership::Ownership>>,
    /// Held while a change is taken in, by a recorded edit (`edit.preflight` with `record`)
    /// or by the tree observer (`attribute_change`): each reads the text it starts from and
    /// writes the regions that follow from it as one step. Taken before any other lock.
    /// Without it the observer's change, read from the text before a recorded edit, moved
    /// that edit's fresh region onto the older text and back out over the whole file.
    recording: Arc<Mutex<()>>,
}

impl Coord {
    /// A service over `store`, reading time from `clock` and source facts from `index`,
    /// with UUID v4 ids.
    pub fn new(store: Store, clock: Arc<dyn Clock>, index: Arc<dyn CodeIndex>) -> Self {
        let started_at_ms = clock.now_ms();
        Coord {
            store: Arc::new(store),
            clock,
            worktree_root: index.worktree_root(),
            index,
            ids: Arc::new(UuidIds),
            processes: crate::platform::process::table(),
            waits: Arc::default(),
            sightings: Arc::default(),
            host_id: crate::platform::host::host_id(),
            live_hosts: Arc::default(),
            started_at_ms,
            region_texts: Arc::default(),
            worktrees: Arc::default(),
            ownership: Arc::default(),
            recording: Arc::default(),
        }
    }

    /// The core of another worktree of the same repository (docs/protocol.md 14.2): the same
    /// state, symbols resolved with `index`, the index of that worktree's files.
    pub fn for_worktree(&self, index: Arc<dyn CodeIndex>) -> Coord {
        Coord {
            store: Arc::clone(&self.store),
            clock: Arc::clone(&self.clock),
            worktree_root: index.worktree_root(),
            index,
            ids: Arc::clone(&self.ids),
            processes: Arc::clone(&self.processes),
            waits: Arc::clone(&self.waits),
            sightings: Arc::clone(&self.sightings),
            host_id: self.host_id.clone(),
            live_hosts: Arc::clone(&self.live_hosts),
            started_at_ms: self.started_at_ms,
            region_texts: Arc::clone(&self.region_texts),
            worktrees: Arc::clone(&self.worktrees),
            ownership: Arc::clone(&self.ownership),
            recording: Arc::clone(&self.recording),
        }
    }

    /// Takes the lock of taking in changes ([`Coord::recording`]'s field doc).
    pub(crate) fn recording(&self) -> std::sync::MutexGuard<'_, ()> {
        self.recording
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The vantage of a request of `session` (if it names one) to this core: the worktree
    /// it serves. The rpc layer builds it once per request and passes it down.
    pub fn vantage(&self, session: Option<&str>) -> Vantage {
        Vantage::new(session, self.worktree_root.as_deref())
    }

    /// Replaces the host id (tests play several hosts).
    pub fn with_host_id(mut self, host_id: impl Into<String>) -> Self {
        self.host_id = host_id.into();
        self
    }

    /// Replaces the process table (tests fake which pids are alive).
    pub fn with_processes(mut self, processes: Arc<dyn ProcessTable>) -> Self {
        self.processes = processes;
        self
    }

    fn waits(&self) -> MutexGuard<'_, waits::LocalWaiters> {
        self.waits.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces the id source (tests use deterministic ids).
    pub fn with_ids(mut self, ids: Arc<dyn IdSource>) -> Self {
        self.ids = ids;
        self
    }

    /// The underlying store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The root of the worktree the code index reads, if it reads one.
    pub fn index_root(&self) -> Option<String> {
        self.index.worktree_root()
    }

    /// Has the code index analyse `files` as they are on disk now (what the tree observer
    /// does after a pass, off every request's path).
    pub fn warm_analyses(&self, files: &[String]) {
        for file in files {
            let _ = self.index.file_symbols(file);
        }
    }

    /// The current time according to the injected clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }
}

impl Coord {
    /// Refuses text the store cannot keep: PostgreSQL's `text` holds no NUL character, so with
    /// a shared store a `sessionId`, `name` or `description` containing one is INVALID_REQUEST
    /// (the embedded store keeps it, as it always did).
    pub(crate) fn check_storable(&self, field: &'static str, value: &str) -> Result<()> {
        if self.store.is_shared() && value.contains('\0') {
            return Err(CoordError::invalid(
                field,
                "must not contain NUL characters (the shared store cannot keep them)",
            ));
        }
        Ok(())
    }
}

/// Checks a required session id: non-empty, at most [`MAX_SESSION_ID_BYTES`].
fn check_session(field: &'static str, session_id: &str) -> Result<()> {
    if session_id.is_empty() {
        return Err(CoordError::invalid(field, "must not be empty"));
    }
    check_len(field, session_id, MAX_SESSION_ID_BYTES)
}

/// Converts a count to the protocol's integer type, saturating.
fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Checks a string's length in bytes.
fn check_len(field: &'static str, value: &str, max: usize) -> Result<()> {
    if value.len() > max {
        return Err(CoordError::invalid(
            field,
            format!("must be at most {max} bytes"),
        ));
    }
    Ok(())
}

/// Normalises a symbol path parameter into `(file, name, "file:name")`.
fn parse_symbol_path(field: &'static str, symbol_path: &str) -> Result<(String, String, String)> {
    check_len(field, symbol_path, MAX_PATH_BYTES)?;
    let (file, name) = paths::split_symbol_path(symbol_path)
        .map_err(|e| CoordError::invalid(field, e.to_string()))?;
    let joined = paths::join_symbol_path(&file, &name);
    Ok((file, name, joined))
}
