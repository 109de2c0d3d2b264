//! The embedded backend: one SQLite database file (`.wit/state.db`), WAL mode.
//!
//! [`SqliteStore`] owns one connection behind a mutex, used for reads and writes alike, so
//! writes are serialised in one place. Write transactions are `IMMEDIATE`, so even a second
//! process on the same file waits on `busy_timeout` instead of failing half-way. Statements
//! are prepared once and cached. The per-table files hold the SQL as methods of [`Tx`]; this
//! file exposes them as the store interface.

mod agents;
mod contracts;
mod daemons;
mod events;
mod intents;
mod locks;
mod migrations;
mod sessions;
#[cfg(test)]
mod tests;
mod waiters;

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

pub use migrations::LATEST_VERSION;

use super::{
    CommitNotes, Contract, ContractStatus, DaemonBeat, Event, EventPage, Intent, IntentFilter,
    IntentRange, IntentStatus, Lock, NewEvent, NewWaiter, RangeHit, Reader, Result, SessionRow,
    SessionSummary, StoreError, StoreRead, StoreWrite, WaiterRow, Writer,
};

/// How long a statement waits for a lock held by another connection before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Room for every distinct statement the store prepares, so none is ever re-prepared.
const STATEMENT_CACHE_CAPACITY: usize = 64;

/// The SQLite database: one connection behind a mutex.
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`, applies the connection settings
    /// (WAL, `synchronous=NORMAL`, foreign keys, busy timeout) and migrates the schema to
    /// [`LATEST_VERSION`]. A new file is created with mode 0600 before SQLite opens it, and an
    /// existing one is set to 0600; SQLite gives its `-wal` and `-shm` files the same mode.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        prepare_file(path)?;
        let conn = Connection::open(path)?;
        Self::from_connection(conn)
    }

    /// Opens a private in-memory database with the full schema (for tests).
    pub fn open_in_memory() -> Result<SqliteStore> {
        Self::from_connection(Connection::open_in_memory()?)
    }

    fn from_connection(mut conn: Connection) -> Result<SqliteStore> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // In-memory databases answer "memory" here and keep that mode, which is what we want.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
        migrations::migrate(&mut conn)?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
        })
    }

    /// Runs `f` in one `IMMEDIATE` write transaction and commits when it returns `Ok`; an
    /// `Err` rolls everything back. Returns what the transaction noted for after the commit.
    pub fn write<T, E>(
        &self,
        f: impl FnOnce(&Writer<'_>) -> Result<T, E>,
    ) -> Result<(T, CommitNotes), E>
    where
        E: From<StoreError>,
    {
        // A panic while the mutex was held cannot leave a half-done transaction behind (the
        // dropped transaction rolled back), so the connection is still sound.
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::from)?;
        let notes = CommitNotes::default();
        let out = f(&Tx {
            conn: &tx,
            notes: &notes,
        })?;
        tx.commit().map_err(StoreError::from)?;
        Ok((out, notes))
    }

    /// Runs `f` in one read transaction: it sees one consistent snapshot.
    pub fn read<T, E>(&self, f: impl FnOnce(&Reader<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Deferred)
            .map_err(StoreError::from)?;
        let notes = CommitNotes::default();
        let out = f(&Tx {
            conn: &tx,
            notes: &notes,
        })?;
        tx.commit().map_err(StoreError::from)?;
        Ok(out)
    }

    /// The schema version recorded in the database (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
    }
}

/// Creates the database file with mode 0600 if it is missing, and restricts an existing one.
fn prepare_file(path: &Path) -> Result<()> {
    let file_error = |source| StoreError::File {
        path: path.display().to_string(),
        source,
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(file_error)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(file_error)?;
    }
    #[cfg(not(unix))]
    {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(file_error)?;
    }
    Ok(())
}

/// One open transaction: the SQL of every table, as methods (see the per-table files).
struct Tx<'a> {
    conn: &'a Connection,
    notes: &'a CommitNotes,
}

/// Implements a trait's methods by calling the [`Tx`] method of the same name.
macro_rules! forward {
    ($( fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty; )*) => {
        $( fn $name(&self $(, $arg: $ty)*) -> $ret { Tx::$name(self $(, $arg)*) } )*
    };
}

impl StoreRead for Tx<'_> {
    forward! {
        fn agent(&self, session_id: &str) -> Result<Option<(i64, String)>>;
        fn lock(&self, symbol_path: &str) -> Result<Option<Lock>>;
        fn live_locks(&self, now_ms: i64, session_id: Option<&str>) -> Result<Vec<Lock>>;
        fn expired_locks(&self, now_ms: i64) -> Result<Vec<Lock>>;
        fn intent(&self, id: &str) -> Result<Option<Intent>>;
        fn live_ranges_in_file(&self, file: &str, other_than_session: &str)
            -> Result<Vec<RangeHit>>;
        fn own_live_ranges_in_file(&self, file: &str, session_id: &str) -> Result<Vec<RangeHit>>;
        fn intents(&self, filter: &IntentFilter<'_>) -> Result<Vec<Intent>>;
        fn contract(&self, id: &str) -> Result<Option<Contract>>;
        fn contracts(&self, symbol_path: Option<&str>, status: Option<ContractStatus>)
            -> Result<Vec<Contract>>;
        fn accepted_contracts_in_file(&self, file: &str) -> Result<Vec<Contract>>;
        fn newest_event_seq(&self) -> Result<i64>;
        fn events_after(&self, since: i64, limit: usize, kinds: Option<&[&str]>)
            -> Result<EventPage>;
        fn session(&self, session_id: &str) -> Result<Option<SessionRow>>;
        fn sessions_with_pulse(&self) -> Result<Vec<SessionRow>>;
        fn session_summaries(&self, now_ms: i64) -> Result<Vec<SessionSummary>>;
        fn waiters(&self) -> Result<Vec<WaiterRow>>;
        fn first_waiter(&self, symbol_path: &str) -> Result<Option<WaiterRow>>;
        fn waiter(&self, id: i64) -> Result<Option<WaiterRow>>;
        fn granted_waiters(&self, daemon_id: &str) -> Result<Vec<WaiterRow>>;
        fn live_hosts(&self, since_ms: i64) -> Result<Vec<String>>;
    }
}

impl StoreWrite for Tx<'_> {
    fn notes(&self) -> &CommitNotes {
        self.notes
    }

    forward! {
        fn upsert_agent(&self, session_id: &str, name: &str, now_ms: i64) -> Result<i64>;
        fn put_lock(&self, lock: &Lock) -> Result<()>;
        fn delete_lock(&self, symbol_path: &str) -> Result<()>;
        fn delete_expired_locks(&self, now_ms: i64) -> Result<usize>;
        fn insert_intent(&self, intent: &Intent, ranges: &[IntentRange]) -> Result<()>;
        fn set_intent_status(&self, id: &str, status: IntentStatus, now_ms: i64) -> Result<bool>;
        fn insert_contract(&self, contract: &Contract) -> Result<()>;
        fn set_contract_response(&self, id: &str, status: ContractStatus, responder: &str,
            now_ms: i64) -> Result<bool>;
        fn next_event_seq(&self) -> Result<i64>;
        fn append_event(&self, at_ms: i64, event: &NewEvent<'_>) -> Result<i64>;
        fn prune_events(&self, older_than_ms: i64, keep_newest: i64) -> Result<usize>;
        fn prune_sessions(&self, cutoff_ms: i64) -> Result<usize>;
        fn touch_session(&self, session_id: &str, now_ms: i64) -> Result<()>;
        fn record_last_seen(&self, session_id: &str, seen_ms: i64) -> Result<()>;
        fn set_session_pulse(&self, session_id: &str, pid: Option<(i64, i64)>, host_id: &str,
            lease_ms: Option<i64>) -> Result<()>;
        fn end_session(&self, session_id: &str, now_ms: i64) -> Result<bool>;
        fn insert_waiter(&self, waiter: &NewWaiter<'_>) -> Result<i64>;
        fn grant_waiter(&self, id: i64, daemon_id: &str, answer: &str) -> Result<bool>;
        fn delete_waiter(&self, id: i64) -> Result<bool>;
        fn delete_daemon_waiters(&self, daemon_id: &str) -> Result<usize>;
        fn beat_daemon(&self, beat: &DaemonBeat<'_>) -> Result<()>;
        fn delete_daemon(&self, daemon_id: &str) -> Result<bool>;
        fn delete_stale_daemons(&self, before_ms: i64) -> Result<Vec<String>>;
    }
}
