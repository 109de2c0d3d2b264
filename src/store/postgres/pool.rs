//! A small pool of connections reused across calls, each with its own cache of prepared
//! statements. A connection found broken is dropped and a fresh one is opened on the next
//! call, which is how the store reconnects by itself after an outage.
//!
//! Hand-written (a `Mutex<Vec<_>>` and a `Condvar`) rather than `r2d2`: the store needs
//! exactly "take one, give it back unless broken, wait a bounded time when all are busy",
//! and owning the connection type keeps the statement cache next to the client it belongs to.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use postgres::{Client, Config, NoTls, Statement};

use super::errors::StoreName;
use crate::store::{Result, StoreError};

/// How long a connect may take before the call fails as unavailable.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest a statement (or a wait for a row lock) may take on the server.
const STATEMENT_TIMEOUT_MS: u64 = 5_000;

/// How long a call waits for a free connection when every one is busy.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(5);

/// One pooled connection and the statements prepared on it.
pub(super) struct Conn {
    /// The client.
    pub(super) client: Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    /// The prepared statement for `sql`, preparing it on first use.
    pub(super) fn statement(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(stmt) = self.statements.get(sql) {
            return Ok(stmt.clone());
        }
        let stmt = self.client.prepare(sql)?;
        self.statements.insert(sql.to_owned(), stmt.clone());
        Ok(stmt)
    }
}

/// Opens connections with the store's settings.
pub(super) struct Connector {
    config: Config,
    /// Names the store in errors.
    pub(super) name: StoreName,
}

impl Connector {
    /// A connector for the URL `url` (credentials included), named `name` in errors.
    pub(super) fn new(url: &str, name: StoreName) -> Result<Connector> {
        let mut config: Config = url
            .parse()
            .map_err(|e: postgres::Error| name.refused(&format!("invalid store URL: {e}")))?;
        // Every session of the store fails a stuck statement or lock wait within the
        // request's time instead of hanging; strings are standard so literals built by
        // `quote` mean what they say.
        let ours = format!(
            "-c statement_timeout={STATEMENT_TIMEOUT_MS} -c lock_timeout={STATEMENT_TIMEOUT_MS} \
             -c idle_in_transaction_session_timeout=60000 -c standard_conforming_strings=on"
        );
        let options = match config.get_options() {
            Some(given) if !given.is_empty() => format!("{given} {ours}"),
            _ => ours,
        };
        config
            .options(&options)
            .connect_timeout(CONNECT_TIMEOUT)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(10))
            .keepalives_interval(Duration::from_secs(2))
            .keepalives_retries(3);
        #[cfg(target_os = "linux")]
        config.tcp_user_timeout(Duration::from_secs(10));
        if config.get_application_name().is_none() {
            config.application_name("wit");
        }
        Ok(Connector { config, name })
    }

    /// Opens one client.
    pub(super) fn connect(&self) -> Result<Client> {
        self.config.connect(NoTls).map_err(|e| self.name.error(&e))
    }
}

struct Slots {
    idle: Vec<Conn>,
    /// Connections open, idle or lent.
    open: usize,
}

/// The pool: up to `max` connections.
pub(super) struct Pool {
    connector: Connector,
    slots: Mutex<Slots>,
    freed: Condvar,
    max: usize,
}

impl Pool {
    /// A pool of at most `max` connections opened by `connector` (none is opened yet).
    pub(super) fn new(connector: Connector, max: usize) -> Pool {
        Pool {
            connector,
            slots: Mutex::new(Slots {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
            max: max.max(1),
        }
    }

    /// Names the store in errors.
    pub(super) fn name(&self) -> &StoreName {
        &self.connector.name
    }

    /// Lends a connection: an idle one, a new one while fewer than `max` are open, or the
    /// first one given back within [`CHECKOUT_TIMEOUT`].
    pub(super) fn get(&self) -> Result<Lease<'_>> {
        let deadline = Instant::now() + CHECKOUT_TIMEOUT;
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(conn) = slots.idle.pop() {
                return Ok(self.lease(conn));
            }
            if slots.open < self.max {
                slots.open += 1;
                drop(slots);
                return match self.connector.connect() {
                    Ok(client) => Ok(self.lease(Conn {
                        client,
                        statements: HashMap::new(),
                    })),
                    Err(e) => {
                        self.release_slot();
                        Err(e)
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self
                    .name()
                    .unavailable("every connection stayed busy for 5 s"));
            }
            slots = self
                .freed
                .wait_timeout(slots, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Drops every idle connection (when the store closes).
    pub(super) fn close_idle(&self) {
        let idle = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            let idle = std::mem::take(&mut slots.idle);
            slots.open -= idle.len();
            idle
        };
        drop(idle);
    }

    fn lease(&self, conn: Conn) -> Lease<'_> {
        Lease {
            pool: self,
            conn: Some(conn),
            broken: false,
            in_transaction: false,
        }
    }

    fn release_slot(&self) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.open = slots.open.saturating_sub(1);
        self.freed.notify_one();
    }

    #[cfg(test)]
    /// How many connections are open (idle or lent).
    pub(super) fn open_count(&self) -> usize {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .open
    }
}

/// A lent connection; it goes back to the pool when dropped, unless it is broken.
pub(super) struct Lease<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
    broken: bool,
    in_transaction: bool,
}

impl Lease<'_> {
    /// The connection.
    pub(super) fn conn(&mut self) -> Result<&mut Conn> {
        self.conn.as_mut().ok_or_else(|| StoreError::Postgres {
            store: self.pool.name().shown.clone(),
            message: "connection already given back".into(),
        })
    }

    /// Marks the connection unusable: it is closed instead of being given back.
    pub(super) fn discard(&mut self) {
        self.broken = true;
    }

    /// Records whether a transaction is open on the connection. One still open when the
    /// lease ends (the closure panicked) closes the connection, which rolls it back, rather
    /// than handing a half-done transaction to the next caller.
    pub(super) fn set_in_transaction(&mut self, open: bool) {
        self.in_transaction = open;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        if self.broken || self.in_transaction || conn.client.is_closed() {
            drop(conn);
            self.pool.release_slot();
            return;
        }
        let mut slots = self
            .pool
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        slots.idle.push(conn);
        self.pool.freed.notify_one();
    }
}
