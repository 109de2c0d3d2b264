//! Persistent state of the daemon: one SQLite database (`.wit/state.db`).
//!
//! [`Store`] owns the connection. It is synchronous: callers on an async runtime run it on a
//! blocking thread and never hold it across an `.await`. Every access goes through
//! [`Store::write`] or [`Store::read`], which take the one connection behind a mutex and run the
//! closure inside one transaction, so every domain operation is atomic (a check and the write it
//! decides on cannot interleave with another operation) and writes are serialised in one place.
//! Write transactions are `IMMEDIATE`, so even a second process on the same file waits on
//! `busy_timeout` instead of failing half-way.
//!
//! The closures see typed handles, [`Reader`] and [`Writer`], whose methods are the only SQL of
//! the coordination state (see `agents.rs`, `locks.rs`, `intents.rs`, `contracts.rs`,
//! `sessions.rs`, `events.rs`; the code index has its own file, `analysis::store`); statements are
//! prepared once and cached. The rows are returned as the plain records of [`records`], which
//! the `coord` module uses as its domain types. Lookups that conflict detection needs on every
//! request go through indexes (locks by symbol path, intent ranges by file, contracts by file and
//! status), so their cost does not grow with the number of unrelated rows. A transaction that
//! appended events tells the [`CommitListener`] after it commits.

mod agents;
mod contracts;
mod events;
mod intents;
mod locks;
mod migrations;
pub mod records;
mod sessions;

use std::cell::Cell;
use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

pub use events::EventPage;
pub use intents::{IntentFilter, RangeHit};
pub use migrations::LATEST_VERSION;
pub use records::{
    Contract, ContractStatus, Event, Intent, IntentRange, IntentStatus, Lock, NewEvent, SessionRow,
    SessionSummary, UnknownStatus,
};

/// Told after every commit that appended events, with the newest `seq` committed (it wakes
/// the waiters of `events.poll`). Called with no store lock held.
pub trait CommitListener: Send + Sync {
    /// Events up to `newest_seq` are committed.
    fn events_committed(&self, newest_seq: i64);
}

/// How long a statement waits for a lock held by another connection before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Room for every distinct statement the store prepares, so none is ever re-prepared.
const STATEMENT_CACHE_CAPACITY: usize = 64;

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

/// The database: one connection behind a mutex, used for reads and writes alike.
pub struct Store {
    conn: Mutex<Connection>,
    listener: OnceLock<Box<dyn CommitListener>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed) the database file at `path`, applies the connection settings
    /// (WAL, `synchronous=NORMAL`, foreign keys, busy timeout) and migrates the schema to
    /// [`LATEST_VERSION`]. A new file is created with mode 0600 before SQLite opens it, and an
    /// existing one is set to 0600; SQLite gives its `-wal` and `-shm` files the same mode.
    pub fn open(path: &Path) -> Result<Store> {
        prepare_file(path)?;
        let conn = Connection::open(path)?;
        Self::from_connection(conn)
    }

    /// Opens a private in-memory database with the full schema (for tests).
    pub fn open_in_memory() -> Result<Store> {
        Self::from_connection(Connection::open_in_memory()?)
    }

    fn from_connection(mut conn: Connection) -> Result<Store> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // In-memory databases answer "memory" here and keep that mode, which is what we want.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
        migrations::migrate(&mut conn)?;
        Ok(Store {
            conn: Mutex::new(conn),
            listener: OnceLock::new(),
        })
    }

    /// Sets the listener told about committed events (once; a second call is ignored).
    pub fn set_commit_listener(&self, listener: Box<dyn CommitListener>) {
        let _ = self.listener.set(listener);
    }

    /// Runs `f` in one write transaction and commits when it returns `Ok`; an `Err` (the
    /// domain's or the store's) rolls everything back. Calls are serialised.
    pub fn write<T, E>(&self, f: impl FnOnce(&Writer<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        // A panic while the mutex was held cannot leave a half-done transaction behind (the
        // dropped transaction rolled back), so the connection is still sound.
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::from)?;
        let writer = Writer {
            reader: Reader { conn: &tx },
            appended_seq: Cell::new(None),
        };
        let out = f(&writer)?;
        let appended = writer.appended_seq.get();
        tx.commit().map_err(StoreError::from)?;
        drop(conn);
        if let (Some(seq), Some(listener)) = (appended, self.listener.get()) {
            listener.events_committed(seq);
        }
        Ok(out)
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
        let out = f(&Reader { conn: &tx })?;
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

/// Read access inside a transaction opened by [`Store::read`] or [`Store::write`].
pub struct Reader<'a> {
    conn: &'a Connection,
}

/// Write access inside a transaction opened by [`Store::write`]; it can read as well
/// (it dereferences to [`Reader`]).
pub struct Writer<'a> {
    reader: Reader<'a>,
    /// The `seq` of the last event this transaction appended.
    appended_seq: Cell<Option<i64>>,
}

impl<'a> std::ops::Deref for Writer<'a> {
    type Target = Reader<'a>;

    fn deref(&self) -> &Reader<'a> {
        &self.reader
    }
}

/// Converts a count or position to SQLite's integer type, saturating (never reached in
/// practice: byte offsets come from files bounded far below `i64::MAX`).
pub(crate) fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn open_creates_file_with_mode_0600_and_wal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), to_i64(LATEST_VERSION));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let conn = store.conn.lock().unwrap();
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = conn
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 1, "synchronous=NORMAL");
        let fk: i64 = conn
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1);
    }

    #[cfg(unix)]
    #[test]
    fn open_restricts_an_existing_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        Store::open(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn data_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let lock = Lock {
            symbol_path: "src/a.ts:f".into(),
            session_id: "s1".into(),
            acquired_at_ms: 10,
            expires_at_ms: 20,
            token: 0,
        };
        {
            let store = Store::open(&path).unwrap();
            store.write(|w| w.put_lock(&lock)).unwrap();
        }
        let store = Store::open(&path).unwrap();
        let got = store.read(|r| r.lock("src/a.ts:f")).unwrap();
        assert_eq!(got, Some(lock));
    }

    #[test]
    fn failed_write_rolls_back() {
        #[derive(Debug)]
        enum E {
            Store,
            Domain,
        }
        impl From<StoreError> for E {
            fn from(_: StoreError) -> Self {
                E::Store
            }
        }
        let store = Store::open_in_memory().unwrap();
        let lock = Lock {
            symbol_path: "a:f".into(),
            session_id: "s".into(),
            acquired_at_ms: 1,
            expires_at_ms: 2,
            token: 0,
        };
        let res: Result<(), E> = store.write(|w| {
            w.put_lock(&lock)?;
            Err(E::Domain)
        });
        assert!(matches!(res, Err(E::Domain)));
        assert_eq!(store.read(|r| r.lock("a:f")).unwrap(), None);
        let _ = E::Store;
    }

    #[test]
    fn two_handles_on_one_file_serialise_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let a = Store::open(&path).unwrap();
        let b = Store::open(&path).unwrap();
        let lock = Lock {
            symbol_path: "a:f".into(),
            session_id: "s".into(),
            acquired_at_ms: 1,
            expires_at_ms: 2,
            token: 0,
        };
        a.write(|w| w.put_lock(&lock)).unwrap();
        assert_eq!(b.read(|r| r.lock("a:f")).unwrap(), Some(lock));
    }

    fn plan(store: &Store, sql: &str) -> String {
        plan_with(store, sql, &[])
    }

    /// SQLite's query plan for `sql` with `args` bound, one step after the other.
    fn plan_with(store: &Store, sql: &str, args: &[&dyn rusqlite::ToSql]) -> String {
        let conn = store.conn.lock().unwrap();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = stmt
            .query_map(args, |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        rows.join("; ")
    }

    /// The lookups conflict detection runs on every request must go through an index, so that
    /// their cost does not grow with unrelated rows.
    #[test]
    fn hot_lookups_use_indexes() {
        let store = Store::open_in_memory().unwrap();
        let cases = [
            ("SELECT * FROM locks WHERE symbol_path = 'x'", "locks"),
            (
                "SELECT i.seq FROM intent_ranges r JOIN intents i ON i.seq = r.intent_seq \
                 WHERE r.file = 'x' AND r.live = 1 AND i.session_id <> 's'",
                "intent_ranges_file",
            ),
            (
                "SELECT * FROM contracts WHERE file = 'x' AND status = 'accepted'",
                "contracts_file_status",
            ),
            (
                "SELECT * FROM intents i WHERE +i.status IN ('declared', 'active') \
                 AND i.seq IN (SELECT intent_seq FROM intent_ranges WHERE file = 'x')",
                "intent_ranges_file",
            ),
            (
                "SELECT * FROM contracts WHERE symbol_path = 'x'",
                "contracts_symbol",
            ),
            (
                "UPDATE intent_ranges SET live = 0 WHERE intent_seq = 1",
                "intent_ranges_intent",
            ),
        ];
        for (sql, index) in cases {
            let plan = plan(&store, sql);
            assert!(
                plan.contains(index) || plan.contains("PRIMARY KEY"),
                "{sql}: {plan}"
            );
            assert!(
                !plan.contains("SCAN r")
                    && !plan.contains("SCAN locks")
                    && !plan.contains("SCAN contracts"),
                "{sql}: {plan}"
            );
        }
    }

    /// `intent.query` by file or session looks up that file's or session's rows, never walks
    /// every live intent through the status index.
    #[test]
    fn intent_queries_by_file_or_session_use_their_index() {
        let store = Store::open_in_memory().unwrap();
        let cases = [
            (
                IntentFilter {
                    file: Some("x"),
                    ..IntentFilter::default()
                },
                "INTEGER PRIMARY KEY",
            ),
            (
                IntentFilter {
                    session_id: Some("s"),
                    status: Some(IntentStatus::Active),
                    ..IntentFilter::default()
                },
                "intents_session",
            ),
            (IntentFilter::default(), "intents_status"),
        ];
        for (filter, index) in cases {
            let (sql, args) = intents::intents_query(&filter);
            let plan = plan_with(&store, &sql, &args);
            assert!(plan.contains(index), "{filter:?}: {plan}");
            if index != "intents_status" {
                assert!(!plan.contains("intents_status"), "{filter:?}: {plan}");
            }
        }
    }

    #[test]
    fn intent_lookups_stay_fast_with_many_unrelated_rows() {
        let store = Store::open_in_memory().unwrap();
        store
            .write(|w| {
                for i in 0..10_000 {
                    let intent = Intent {
                        id: format!("i{i}"),
                        session_id: format!("s{}", i % 50),
                        description: "d".into(),
                        files: format!(",f{i}.ts,"),
                        symbols: "[]".into(),
                        start_byte: None,
                        end_byte: None,
                        status: IntentStatus::Active,
                        declared_at_ms: i,
                        updated_at_ms: i,
                    };
                    let range = IntentRange {
                        file: format!("f{i}.ts"),
                        range: Some((0, 10)),
                    };
                    w.insert_intent(&intent, &[range])?;
                }
                Ok::<_, StoreError>(())
            })
            .unwrap();
        let hits = store
            .read(|r| r.live_ranges_in_file("f77.ts", "other"))
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].intent_id, "i77");
        assert_eq!(hits[0].range, Some((0, 10)));
        let start = std::time::Instant::now();
        for i in 0..1000 {
            let file = format!("f{i}.ts");
            store.read(|r| r.live_ranges_in_file(&file, "x")).unwrap();
        }
        // About 10 µs each in release; generous for a loaded debug build.
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        let all = store.read(|r| r.intents(&IntentFilter::default())).unwrap();
        assert_eq!(all.len(), 10_000);
        assert!(store
            .write(|w| w.set_intent_status("i77", IntentStatus::Resolved, 5))
            .unwrap());
        assert!(store
            .read(|r| r.live_ranges_in_file("f77.ts", "other"))
            .unwrap()
            .is_empty());
        assert!(!store
            .write(|w| w.set_intent_status("nope", IntentStatus::Resolved, 5))
            .unwrap());
    }
}
