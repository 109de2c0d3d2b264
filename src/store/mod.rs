//! Persistent state of the daemon, behind one interface with two backends:
//! [`sqlite`] (the embedded default, `.wit/state.db`) and [`postgres`] (one database shared by
//! the daemons of many machines, docs/protocol.md 12).
//!
//! [`Store`] is synchronous: callers on an async runtime run it on a blocking thread (the
//! PostgreSQL backend also steps out of a runtime worker by itself) and never hold it across
//! an `.await`. Every access goes through [`Store::write`] or [`Store::read`], which run the
//! closure inside one transaction, so every domain operation is atomic (a check and the write
//! it decides on cannot interleave with another operation, whichever daemon runs it).
//!
//! The closures see [`Reader`] and [`Writer`], trait objects of [`StoreRead`] and
//! [`StoreWrite`] (`interface.rs`: one pair of read and write traits per table, declared once
//! and implemented directly by both backends): their methods are the only SQL of the coordination state
//! (the code index has its own file, `analysis::store`). The rows are returned as the plain
//! records of [`records`], which the `coord` module uses as its domain types. Lookups that
//! conflict detection needs on every request go through indexes (locks by symbol path, intent
//! ranges by file, contracts by file and status), so their cost does not grow with the number
//! of unrelated rows. A transaction that appended events or granted another daemon's waiter
//! tells the [`CommitListener`] after it commits (with PostgreSQL, the other daemons hear of
//! it through `LISTEN`/`NOTIFY`).

mod interface;
pub mod postgres;
pub mod records;
mod rehearsal;
pub mod sqlite;
mod url;

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::sync::{Arc, OnceLock};

pub use interface::{
    AgentsRead, AgentsWrite, ContractsRead, ContractsWrite, DaemonsRead, DaemonsWrite, EventsRead,
    EventsWrite, IntentsRead, IntentsWrite, LocksRead, LocksWrite, SessionsRead, SessionsWrite,
    StoreRead, StoreWrite, WaitersRead, WaitersWrite,
};
pub use records::{
    decode_regions, encode_regions, Contract, ContractStatus, DaemonBeat, Event, EventPage, Intent,
    IntentFilter, IntentKind, IntentRange, IntentStatus, LineRegion, Lock, LockWait, NewEvent,
    NewWaiter, RangeHit, SessionRow, SessionSummary, UnknownStatus, WaiterRow,
};
pub use sqlite::LATEST_VERSION;
pub use url::{StoreUrl, StoreUrlError};

/// Read access inside a transaction opened by [`Store::read`] or [`Store::write`].
pub type Reader<'a> = dyn StoreRead + 'a;

/// Write access inside a transaction opened by [`Store::write`]; it reads as well.
pub type Writer<'a> = dyn StoreWrite + 'a;

/// Told after commits: of events (it wakes the waiters of `events.poll`) and of lock requests
/// of this daemon that another daemon granted. Called with no store lock held; with
/// PostgreSQL also for commits made by other daemons.
pub trait CommitListener: Send + Sync {
    /// Events up to `newest_seq` are committed.
    fn events_committed(&self, newest_seq: i64);
    /// Another daemon granted lock requests of this daemon ([`WaitersRead::granted_waiters`]).
    fn waiters_granted(&self) {}
}

/// The listener of a store, set once by its owner; shared with a backend's own threads.
pub type ListenerSlot = Arc<OnceLock<Box<dyn CommitListener>>>;

/// What a write transaction tells others once it commits.
#[derive(Debug, Default)]
pub struct CommitNotes {
    newest_seq: Cell<Option<i64>>,
    granted_daemons: RefCell<Vec<String>>,
}

impl CommitNotes {
    /// The transaction appended the event `seq`.
    pub fn appended(&self, seq: i64) {
        self.newest_seq.set(Some(seq));
    }

    /// The transaction granted a lock request held by `daemon_id`.
    pub fn granted(&self, daemon_id: &str) {
        let mut daemons = self.granted_daemons.borrow_mut();
        if !daemons.iter().any(|d| d == daemon_id) {
            daemons.push(daemon_id.to_owned());
        }
    }

    /// The newest event `seq` the transaction appended, if any.
    pub fn newest_seq(&self) -> Option<i64> {
        self.newest_seq.get()
    }

    /// The daemons whose requests the transaction granted.
    pub fn granted_daemons(&self) -> Vec<String> {
        self.granted_daemons.borrow().clone()
    }
}

/// Everything that can go wrong in the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The database file could not be created or its permissions set.
    #[error("cannot prepare database file {path}: {source}")]
    File {
        /// The database path.
        path: String,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A schema migration failed; the database stays at the previous version.
    #[error("migration to schema version {version} failed: {source}")]
    Migration {
        /// The version the failed migration would have produced.
        version: usize,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// The PostgreSQL server cannot be reached or the connection broke; nothing was changed.
    #[error("store {store} is unavailable: {reason}")]
    Unavailable {
        /// The store, without credentials.
        store: String,
        /// Why, without credentials.
        reason: String,
    },
    /// The PostgreSQL server refused a statement; nothing was changed.
    #[error("store {store}: {message}")]
    Postgres {
        /// The store, without credentials.
        store: String,
        /// The server's message.
        message: String,
    },
    /// The store URL is not one this build knows.
    #[error(transparent)]
    Url(#[from] StoreUrlError),
    /// The database was written by a newer wit with a schema this build does not know.
    #[error("database schema version {found} is newer than this build supports ({supported})")]
    SchemaTooNew {
        /// The `user_version` found in the file.
        found: i64,
        /// The latest version this build knows.
        supported: usize,
    },
}

/// Result alias of the storage layer.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The coordination state: one of the two backends, and the listener told after commits.
pub struct Store {
    backend: Backend,
    listener: ListenerSlot,
    daemon_id: String,
    /// Whether other daemons may share the state (PostgreSQL; tests also share SQLite files).
    shared: bool,
}

enum Backend {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PgStore),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("store", &self.describe())
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating and migrating) the SQLite database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        Ok(Self::new(Backend::Sqlite(sqlite::SqliteStore::open(path)?)))
    }

    /// Opens a private in-memory SQLite database with the full schema (for tests).
    pub fn open_in_memory() -> Result<Store> {
        Ok(Self::new(Backend::Sqlite(
            sqlite::SqliteStore::open_in_memory()?,
        )))
    }

    /// Opens the store `url` names: the SQLite file at `sqlite_path`, or the PostgreSQL
    /// database (migrated, scoped to `project`, listening for the other daemons' commits).
    pub fn open_url(url: &StoreUrl, sqlite_path: &Path, project: &str) -> Result<Store> {
        match url {
            StoreUrl::Sqlite => Self::open(sqlite_path),
            StoreUrl::Postgres { .. } => {
                let listener = ListenerSlot::default();
                let daemon_id = uuid::Uuid::new_v4().to_string();
                let pg = postgres::PgStore::open(url, project, &daemon_id, Arc::clone(&listener))?;
                Ok(Store {
                    backend: Backend::Postgres(pg),
                    listener,
                    daemon_id,
                    shared: true,
                })
            }
        }
    }

    fn new(backend: Backend) -> Store {
        Store {
            backend,
            listener: ListenerSlot::default(),
            daemon_id: uuid::Uuid::new_v4().to_string(),
            shared: false,
        }
    }

    /// Treats this SQLite file as shared with other handles on it, as PostgreSQL is shared
    /// by daemons (tests play several daemons in one process this way).
    #[cfg(test)]
    pub(crate) fn shared_for_tests(mut self) -> Store {
        self.shared = true;
        self
    }

    /// This daemon's id in the store (random per opening): the owner of its lock waiters.
    pub fn daemon_id(&self) -> &str {
        &self.daemon_id
    }

    /// Whether other daemons may share this store (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// Whether a call may run on an async worker thread: the embedded store only (the
    /// PostgreSQL backend waits on the network).
    pub fn is_embedded(&self) -> bool {
        matches!(self.backend, Backend::Sqlite(_))
    }

    /// The store for people: `sqlite` or the URL without its password, with the project.
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Sqlite(_) => "sqlite".to_owned(),
            Backend::Postgres(pg) => pg.describe(),
        }
    }

    /// Sets the listener told about commits (once; a second call is ignored).
    pub fn set_commit_listener(&self, listener: Box<dyn CommitListener>) {
        let _ = self.listener.set(listener);
    }

    /// Runs `f` in one write transaction and commits when it returns `Ok`; an `Err` (the
    /// domain's or the store's) rolls everything back. Write transactions are serialised
    /// (per project across daemons, with PostgreSQL).
    pub fn write<T, E>(&self, f: impl FnOnce(&Writer<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        self.write_prefetching(&[], f)
    }

    /// Runs `f` like [`Store::write`], telling the store which lock rows `f` reads first: a
    /// backend across the network reads them in the round trip that opens the transaction
    /// (the embedded one needs no hint).
    pub fn write_prefetching<T, E>(
        &self,
        locks: &[&str],
        f: impl FnOnce(&Writer<'_>) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let (out, notes) = match &self.backend {
            Backend::Sqlite(db) => db.write(f)?,
            Backend::Postgres(db) => db.write_prefetching(locks, f)?,
        };
        if let (Some(seq), Some(listener)) = (notes.newest_seq(), self.listener.get()) {
            listener.events_committed(seq);
        }
        Ok(out)
    }

    /// Runs `f` in one read transaction: it sees one consistent snapshot.
    pub fn read<T, E>(&self, f: impl FnOnce(&Reader<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        match &self.backend {
            Backend::Sqlite(db) => db.read(f),
            Backend::Postgres(db) => db.read(f),
        }
    }

    /// The schema version of the database.
    pub fn schema_version(&self) -> Result<i64> {
        match &self.backend {
            Backend::Sqlite(db) => db.schema_version(),
            Backend::Postgres(db) => db.schema_version(),
        }
    }
}

/// Converts a count or position to SQLite's integer type, saturating (never reached in
/// practice: byte offsets come from files bounded far below `i64::MAX`).
pub(crate) fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
