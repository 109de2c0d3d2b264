//! The shared backend: one PostgreSQL database for the daemons of many machines
//! (docs/protocol.md 12), each project (repository) in its own rows.
//!
//! - **Client**: the synchronous `postgres` crate. The store is synchronous and runs on
//!   blocking threads, so the blocking client fits it directly; it also gives `LISTEN`
//!   notifications without a runtime of our own. On an async worker thread every call steps
//!   out of the runtime first (`outside_runtime`).
//! - **Serialisation**: every write transaction (READ COMMITTED) begins by locking its
//!   project's row, `SELECT next_seq FROM wit_projects WHERE project = $1 FOR UPDATE`, in the
//!   same round trip as `BEGIN`. So the check-and-write of acquire, respond, update and
//!   declare, made by any number of daemons, run one after the other exactly like SQLite's
//!   single writer (no serialization failures or deadlocks to retry: nothing else is locked
//!   first), while different projects stay independent (their rows are different). The lock
//!   also numbers events: `next_seq` is read under it and written back with the commit, so
//!   `seq` (and the fencing `token`, the `seq` of a `lock.acquired`) is contiguous per
//!   project and commit order is `seq` order, which `events.poll` relies on.
//! - **Round trips**: a write transaction holds the project row from `BEGIN` to `COMMIT`, so
//!   each round trip in between is time no other daemon can write. Only one write of this
//!   daemon runs at a time (a local gate: the others wait on a futex, not inside the server);
//!   the `BEGIN` also says whether anybody waits for a lock (else no hand-over looks); writes
//!   nothing reads back in the transaction (a lock put or deleted, an event appended) are
//!   deferred and sent with the next statement or with the `COMMIT`; the lock rows a request
//!   will read are read in the `BEGIN`'s round trip ([`PgStore::write_prefetching`]). A lock
//!   cycle costs 4 round trips (acquire 2, release 2).
//! - **Reads**: `REPEATABLE READ, READ ONLY`, so a closure that reads several times sees one
//!   snapshot.
//! - **After-commit notes**: the commit sends `pg_notify` on the project's channel (`e:<seq>`
//!   for events, `g:<daemon id>` for a granted waiter) in the same round trip as `COMMIT`;
//!   PostgreSQL delivers them only if the transaction commits. The LISTEN thread (`listen`)
//!   of every daemon passes them on to its listener.
//! - **Outages**: connections come from a small pool (`pool`) with a 2 s connect timeout,
//!   TCP keepalives and 5 s statement and lock timeouts; a broken one is dropped and replaced
//!   on the next call, and a pooled connection found dead when a transaction begins is
//!   replaced transparently (before the closure ran, so nothing can be done twice). Failures
//!   are [`StoreError::Unavailable`] naming the store by its redacted URL (`errors`).

mod agents;
mod contracts;
mod daemons;
mod errors;
mod events;
mod intents;
mod listen;
mod locks;
mod migrations;
mod pool;
mod sessions;
#[cfg(test)]
mod tests;
mod tx;
mod waiters;

use std::fmt::Write as _;

use postgres::SimpleQueryMessage;

pub use migrations::LATEST_VERSION;

use self::errors::{is_retryable_at_begin, StoreName};
use self::listen::{ListenSpec, ListenThread};
use self::pool::{Connector, Lease, Pool};
use self::tx::{quote, Tx};
use std::collections::HashMap;

use super::{CommitNotes, ListenerSlot, Lock, Reader, Result, StoreError, StoreUrl, Writer};

/// Most lock rows a write `BEGIN` reads ahead.
const MAX_PREFETCH: usize = 256;

/// How many connections one store keeps at most.
const POOL_SIZE: usize = 8;

/// How many dead pooled connections a call replaces before it gives up (each attempt after
/// the first opens a fresh connection, so this is only reached while the server is down).
const BEGIN_ATTEMPTS: usize = POOL_SIZE + 1;

/// The PostgreSQL store of one project.
pub struct PgStore {
    /// Boxed: the connection settings are large, and `Store` holds this next to SQLite.
    pool: Box<Pool>,
    project: String,
    /// `BEGIN` and the project row lock, one simple query.
    begin_write: String,
    /// The project as an SQL literal.
    project_literal: String,
    /// The project's notification channel.
    channel: String,
    /// One write transaction of this daemon at a time: they queue on the project's row lock
    /// anyway, and a queue here (a futex) is far cheaper than one inside the server, where
    /// every waiter holds a connection and the holder of the row lock competes with them for
    /// the CPU between its round trips (measured: two daemons at 8 connections each went
    /// from 171 to 627 cycles/s summed).
    write_gate: std::sync::Mutex<()>,
    _listen: ListenThread,
}

impl PgStore {
    /// Connects, migrates (under an advisory lock, so daemons starting together do not race),
    /// adds the project's row if it is missing and starts listening for the other daemons'
    /// commits.
    pub fn open(
        url: &StoreUrl,
        project: &str,
        daemon_id: &str,
        listener: ListenerSlot,
    ) -> Result<PgStore> {
        let StoreUrl::Postgres { url: full } = url else {
            return Err(StoreError::Postgres {
                store: url.to_string(),
                message: "not a PostgreSQL URL".into(),
            });
        };
        let name = StoreName::new(format!("{url} (project {project})"), secrets(full));
        outside_runtime(|| Self::connect(full, name, project, daemon_id, listener))
    }

    fn connect(
        full: &str,
        name: StoreName,
        project: &str,
        daemon_id: &str,
        listener: ListenerSlot,
    ) -> Result<PgStore> {
        let connector = Connector::new(full, name.clone())?;
        let mut first = connector.connect()?;
        migrations::migrate(&mut first, &name)?;
        let channel = channel(project);
        first
            .execute(
                "INSERT INTO wit_projects (project) VALUES ($1) ON CONFLICT DO NOTHING",
                &[&project],
            )
            .map_err(|e| name.error(&e))?;
        // Listening before `open` returns: no commit made after it can go unheard.
        first
            .batch_execute(&format!("LISTEN {channel}"))
            .map_err(|e| name.error(&e))?;
        let spec = ListenSpec {
            connector: Connector::new(full, name.clone())?,
            channel: channel.clone(),
            project: project.to_owned(),
            daemon_id: daemon_id.to_owned(),
            listener,
        };
        let listen = ListenThread::start(spec, first)
            .map_err(|e| name.refused(&format!("cannot start the listener thread: {e}")))?;
        let project_literal = quote(project);
        Ok(PgStore {
            pool: Box::new(Pool::new(connector, POOL_SIZE)),
            project: project.to_owned(),
            // With the counter, whether anybody waits for a lock in the project: when nobody
            // does, no hand-over needs to look (stable until this transaction commits).
            begin_write: format!(
                "BEGIN; SELECT next_seq, EXISTS (SELECT 1 FROM wit_lock_waiters w \
                 WHERE w.project = {project_literal} AND w.granted IS NULL) \
                 FROM wit_projects WHERE project = {project_literal} FOR UPDATE"
            ),
            project_literal,
            channel,
            write_gate: std::sync::Mutex::new(()),
            _listen: listen,
        })
    }

    /// The store for people: the URL without its password, and the project.
    pub fn describe(&self) -> String {
        self.pool.name().shown.clone()
    }

    /// Runs `f` in one write transaction serialised with every other write of the project
    /// (the project row lock) and commits when it returns `Ok`; an `Err` rolls everything
    /// back. Returns what the transaction noted (already sent to the other daemons with the
    /// commit).
    pub fn write<T, E>(
        &self,
        f: impl FnOnce(&Writer<'_>) -> Result<T, E>,
    ) -> Result<(T, CommitNotes), E>
    where
        E: From<StoreError>,
    {
        self.write_prefetching(&[], f)
    }

    /// [`PgStore::write`], with the lock rows of `locks` read in the `BEGIN`'s round trip
    /// (after the project row lock, so they are what the transaction would read): a
    /// `lock` of one of them inside `f` costs no round trip.
    pub fn write_prefetching<T, E>(
        &self,
        locks: &[&str],
        f: impl FnOnce(&Writer<'_>) -> Result<T, E>,
    ) -> Result<(T, CommitNotes), E>
    where
        E: From<StoreError>,
    {
        outside_runtime(|| {
            let _gate = self
                .write_gate
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (mut lease, begun) = self.begin(Some(locks))?;
            let first_seq = begun.as_ref().map(|b| b.next_seq);
            let notes = CommitNotes::default();
            let outcome = {
                let conn = lease.conn()?;
                let tx = Tx::new(conn, &self.project, &notes, first_seq, self.pool.name());
                if let Some(begun) = begun {
                    tx.set_queue_empty(!begun.anybody_waits);
                    let mut rows = begun.locks;
                    for path in locks.iter().take(MAX_PREFETCH) {
                        // Asked for and not found: known to have no row.
                        rows.entry((*path).to_owned()).or_insert(None);
                    }
                    tx.set_prefetched(rows);
                }
                let out = f(&tx);
                (out, tx.failed(), tx.next_seq.get(), tx.take_deferred())
            };
            match outcome {
                (Err(e), _, _, _) => {
                    rollback(&mut lease);
                    Err(e)
                }
                (Ok(_), true, _, _) => {
                    rollback(&mut lease);
                    Err(self.incomplete().into())
                }
                (Ok(out), false, next_seq, deferred) => {
                    self.commit(&mut lease, first_seq, next_seq, &notes, deferred)?;
                    Ok((out, notes))
                }
            }
        })
    }

    /// Runs `f` in one read transaction (`REPEATABLE READ, READ ONLY`): one snapshot.
    pub fn read<T, E>(&self, f: impl FnOnce(&Reader<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<StoreError>,
    {
        outside_runtime(|| {
            let (mut lease, _) = self.begin(None)?;
            let notes = CommitNotes::default();
            let outcome = {
                let conn = lease.conn()?;
                let tx = Tx::new(conn, &self.project, &notes, None, self.pool.name());
                let out = f(&tx);
                (out, tx.failed())
            };
            // Nothing to keep: end the snapshot either way.
            rollback(&mut lease);
            match outcome {
                (Err(e), _) => Err(e),
                (Ok(_), true) => Err(self.incomplete().into()),
                (Ok(out), false) => Ok(out),
            }
        })
    }

    /// The schema version of the database (`wit_schema`).
    pub fn schema_version(&self) -> Result<i64> {
        outside_runtime(|| {
            let mut lease = self.pool.get()?;
            let conn = lease.conn()?;
            let version = migrations::version(&mut conn.client);
            version.map_err(|e| {
                if errors::is_unavailable(&e) {
                    lease.discard();
                }
                self.pool.name().error(&e)
            })
        })
    }

    /// Takes a connection and begins a transaction on it: for a write, with the project row
    /// locked, returning its `next_seq`. A pooled connection that turns out dead is replaced
    /// (nothing has run on it yet, so this is safe).
    fn begin(&self, write: Option<&[&str]>) -> Result<(Lease<'_>, Option<Begun>)> {
        let name = self.pool.name();
        let mut attempt = 0;
        let begin_write = write.map(|locks| self.begin_write_sql(locks));
        loop {
            attempt += 1;
            let mut lease = self.pool.get()?;
            let conn = lease.conn()?;
            let begun = if let Some(sql) = &begin_write {
                conn.client
                    .simple_query(sql)
                    .map(|messages| Some(Begun::read(&messages)))
            } else {
                conn.client
                    .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    .map(|()| None)
            };
            let closed = conn.client.is_closed();
            if begun.is_ok() {
                lease.set_in_transaction(true);
            }
            match begun {
                Ok(None) => return Ok((lease, None)),
                Ok(Some(Some(begun))) => return Ok((lease, Some(begun))),
                Ok(Some(None)) => {
                    rollback(&mut lease);
                    return Err(name.refused(&format!(
                        "project {:?} has no row in wit_projects",
                        self.project
                    )));
                }
                Err(e) => {
                    if closed || errors::is_unavailable(&e) {
                        lease.discard();
                    } else {
                        rollback(&mut lease);
                    }
                    if is_retryable_at_begin(&e, closed) && attempt < BEGIN_ATTEMPTS {
                        continue;
                    }
                    return Err(name.error(&e));
                }
            }
        }
    }

    /// The write `BEGIN`: the project row lock, whether anybody waits, and the lock rows of
    /// `locks`.
    fn begin_write_sql(&self, locks: &[&str]) -> String {
        if locks.is_empty() {
            return self.begin_write.clone();
        }
        // A hot symbol may have thousands of callers: the rest are read when asked for.
        let list: Vec<String> = locks.iter().take(MAX_PREFETCH).map(|l| quote(l)).collect();
        format!(
            "{}; SELECT symbol_path, session_id, acquired_at_ms, expires_at_ms, token \
             FROM wit_locks WHERE project = {} AND symbol_path IN ({})",
            self.begin_write,
            self.project_literal,
            list.join(", ")
        )
    }

    /// Writes the event counter back, sends the notifications and commits, in one round
    /// trip. A failure leaves nothing behind (the server rolls the transaction back; a
    /// connection lost during `COMMIT` is reported as unavailable, and the caller does not
    /// take the write as acknowledged).
    fn commit(
        &self,
        lease: &mut Lease<'_>,
        first_seq: Option<i64>,
        next_seq: i64,
        notes: &CommitNotes,
        deferred: String,
    ) -> Result<()> {
        // The writes whose outcome the transaction did not need to see go in this round trip.
        let mut sql = deferred;
        if first_seq.is_some_and(|first| first != next_seq) {
            let _ = write!(
                sql,
                "UPDATE wit_projects SET next_seq = {next_seq} WHERE project = {}; ",
                self.project_literal
            );
        }
        if let Some(seq) = notes.newest_seq() {
            let _ = write!(sql, "SELECT pg_notify('{}', 'e:{seq}'); ", self.channel);
        }
        for daemon in notes.granted_daemons() {
            let _ = write!(
                sql,
                "SELECT pg_notify('{}', {}); ",
                self.channel,
                quote(&format!("g:{daemon}"))
            );
        }
        sql.push_str("COMMIT");
        let conn = lease.conn()?;
        match conn.client.batch_execute(&sql) {
            Ok(()) => {
                lease.set_in_transaction(false);
                Ok(())
            }
            Err(e) => {
                if conn.client.is_closed() || errors::is_unavailable(&e) {
                    lease.discard();
                } else {
                    rollback(lease);
                }
                Err(self.pool.name().error(&e))
            }
        }
    }

    fn incomplete(&self) -> StoreError {
        self.pool
            .name()
            .refused("a statement of the transaction failed, so nothing was committed")
    }

    /// The backend pids of the idle pooled connections (for tests that kill them).
    #[cfg(test)]
    fn idle_backend_pids(&self) -> Vec<i32> {
        let mut leases = Vec::new();
        let mut pids = Vec::new();
        while pids.len() < self.pool.open_count() {
            let Ok(mut lease) = self.pool.get() else {
                break;
            };
            if let Ok(conn) = lease.conn() {
                if let Ok(row) = conn.client.query_one("SELECT pg_backend_pid()", &[]) {
                    pids.push(row.get(0));
                }
            }
            leases.push(lease);
        }
        pids
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Closing a client runs the driver's own runtime: step out of an async worker first.
        outside_runtime(|| self.pool.close_idle());
    }
}

/// Ends the transaction on `lease` with `ROLLBACK`; a connection that cannot is dropped.
fn rollback(lease: &mut Lease<'_>) {
    let ok = match lease.conn() {
        Ok(conn) => conn.client.batch_execute("ROLLBACK").is_ok(),
        Err(_) => false,
    };
    if ok {
        lease.set_in_transaction(false);
    } else {
        lease.discard();
    }
}

/// The first column of the first row of a simple query's answer, as an integer.
/// What the write `BEGIN` read under the project row lock.
struct Begun {
    /// The project's `next_seq`.
    next_seq: i64,
    /// Whether any lock request waits in the project.
    anybody_waits: bool,
    /// The prefetched lock rows, by symbol path (`None`: no row).
    locks: HashMap<String, Option<Lock>>,
}

impl Begun {
    /// Reads the answer of [`PgStore::begin_write_sql`]: the project row (two columns), then
    /// the lock rows (five). `None` when the project row is missing.
    fn read(messages: &[SimpleQueryMessage]) -> Option<Begun> {
        let mut begun: Option<Begun> = None;
        let mut locks = Vec::new();
        for message in messages {
            let SimpleQueryMessage::Row(row) = message else {
                continue;
            };
            if row.len() == 2 && begun.is_none() {
                begun = Some(Begun {
                    next_seq: row.get(0).and_then(|v| v.parse().ok())?,
                    anybody_waits: row.get(1) == Some("t"),
                    locks: HashMap::new(),
                });
            } else if row.len() == 5 {
                let number = |i: usize| row.get(i).and_then(|v| v.parse::<i64>().ok());
                locks.push(Lock {
                    symbol_path: row.get(0)?.to_owned(),
                    session_id: row.get(1)?.to_owned(),
                    acquired_at_ms: number(2)?,
                    expires_at_ms: number(3)?,
                    token: number(4)?,
                });
            }
        }
        begun.map(|mut begun| {
            for lock in locks {
                begun.locks.insert(lock.symbol_path.clone(), Some(lock));
            }
            begun
        })
    }
}

/// The project's notification channel: `wit_` and a 128-bit hash of the name in hex (a
/// valid identifier of 36 bytes whatever the name, well under PostgreSQL's 63).
fn channel(project: &str) -> String {
    format!(
        "wit_{:032x}",
        xxhash_rust::xxh3::xxh3_128(project.as_bytes())
    )
}

/// The password of `url` as written and decoded, to scrub from every message.
fn secrets(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(config) = url.parse::<postgres::Config>() {
        if let Some(password) = config.get_password() {
            found.push(String::from_utf8_lossy(password).into_owned());
        }
    }
    if let Some(span) = crate::store::url::password_span(url) {
        let password = &url[span];
        found.push(password.to_owned());
        found.push(percent_decode(password));
    }
    if let Some(at) = url.find("password=") {
        let value = &url[at + "password=".len()..];
        found.push(value[..value.find('&').unwrap_or(value.len())].to_owned());
    }
    found.retain(|s| !s.is_empty());
    found
}

/// `text` with its `%XX` escapes decoded (invalid ones kept as written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs `f` where the blocking client may block: on a worker thread of a multi-thread
/// runtime through `block_in_place` (which leaves the runtime's context, so the driver's own
/// runtime can run); elsewhere (plain and blocking threads) directly. The daemon runs a
/// multi-thread runtime; on a current-thread runtime's own thread the store must not be
/// called (use `spawn_blocking`).
fn outside_runtime<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
