//! The embedded backend: one SQLite database file (`.wit/state.db`), WAL mode.
//!
//! [`SqliteStore`] owns one connection behind a mutex, used for reads and writes alike, so
//! writes are serialised in one place. Write transactions are `IMMEDIATE`, so even a second
//! process on the same file waits on `busy_timeout` instead of failing half-way. Statements
//! are prepared once and cached. The per-table files implement the store interface's traits
//! of their table on `Tx`, the SQL in the methods.

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
mod transaction;
mod waiters;

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::Connection;
use transaction::{Begin, Open};

pub use migrations::LATEST_VERSION;

use super::{
    CommitNotes, Contract, ContractStatus, DaemonBeat, Event, EventPage, Intent, IntentFilter,
    IntentRange, IntentStatus, LineRegion, Lock, LockWait, NewEvent, NewWaiter, RangeHit, Reader,
    Result, SessionRow, SessionSummary, StoreError, WaiterRow, Writer,
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
        // One plan per statement, whatever is bound to it: without the query planner
        // stability guarantee, binding a new value marks a statement for a new plan and
        // SQLite parses it again at its next step (the cached statements would save nothing).
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
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
        self.transaction(Begin::Immediate, |tx| f(tx))
    }

    /// Runs `f` in one read transaction: it sees one consistent snapshot.
    pub fn read<T, E>(&self, f: impl FnOnce(&Reader<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        self.transaction(Begin::Deferred, |tx| f(tx))
            .map(|(out, _)| out)
    }

    /// Runs `f` in one transaction begun `how`, committed when `f` returns `Ok` and rolled back
    /// otherwise; what it noted for after the commit.
    fn transaction<T, E>(
        &self,
        how: Begin,
        f: impl FnOnce(&Tx<'_>) -> Result<T, E>,
    ) -> Result<(T, CommitNotes), E>
    where
        E: From<StoreError>,
    {
        // A panic while the mutex was held cannot leave a half-done transaction behind (the
        // dropped transaction rolled back), so the connection is still sound.
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let tx = Open::begin(&conn, how)?;
        let notes = CommitNotes::default();
        let out = f(&Tx {
            conn: tx.conn(),
            notes: &notes,
        })?;
        tx.commit()?;
        Ok((out, notes))
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

/// One open transaction: the per-table files implement the store interface on it.
struct Tx<'a> {
    conn: &'a Connection,
    notes: &'a CommitNotes,
}

impl super::StoreRead for Tx<'_> {}

impl super::StoreWrite for Tx<'_> {
    fn notes(&self) -> &CommitNotes {
        self.notes
    }
}
