//! One open transaction on a pooled connection, and the statement helpers the per-table
//! files use. Statements are prepared once per connection and reused; every failure is
//! turned into a [`StoreError`] naming the store, and remembered, so a transaction in which
//! any statement failed is never reported as committed.

use std::cell::{Cell, RefCell};
use std::str::FromStr;

use postgres::types::{FromSql, ToSql, Type};
use postgres::Row;

use super::errors::StoreName;
use super::pool::Conn;
use crate::store::{CommitNotes, Lock, Result, StoreError};

/// Statement parameters.
pub(super) type Params<'p> = [&'p (dyn ToSql + Sync)];

/// An open transaction: the per-table files implement the store interface on it.
pub(super) struct Tx<'a> {
    conn: RefCell<&'a mut Conn>,
    /// The project every statement is scoped to.
    pub(super) project: &'a str,
    /// What the commit tells the other daemons.
    pub(super) notes: &'a CommitNotes,
    /// The `seq` the next event gets (write transactions: read under the project row lock).
    pub(super) next_seq: Cell<i64>,
    writer: bool,
    failed: Cell<bool>,
    name: &'a StoreName,
    /// Whether the project's queue of lock waiters is empty (read with the project row lock,
    /// so it stays true until this transaction queues a waiter itself).
    queue_empty: Cell<bool>,
    /// Writes whose outcome nothing in the transaction reads back (a lock put or deleted, an
    /// event appended), as SQL literals: sent before the next statement, or with the commit,
    /// in one round trip instead of one each.
    deferred: RefCell<String>,
    /// Lock rows read with the `BEGIN` (by symbol path; `None`: no row), kept exact by this
    /// transaction's own lock writes, so reading them costs no round trip.
    prefetched: RefCell<std::collections::HashMap<String, Option<Lock>>>,
}

impl<'a> Tx<'a> {
    /// A transaction already begun on `conn`: a write transaction when the project row is
    /// locked and `next_seq` read, else a read transaction.
    pub(super) fn new(
        conn: &'a mut Conn,
        project: &'a str,
        notes: &'a CommitNotes,
        next_seq: Option<i64>,
        name: &'a StoreName,
    ) -> Tx<'a> {
        Tx {
            conn: RefCell::new(conn),
            project,
            notes,
            next_seq: Cell::new(next_seq.unwrap_or(0)),
            writer: next_seq.is_some(),
            failed: Cell::new(false),
            name,
            queue_empty: Cell::new(false),
            deferred: RefCell::new(String::new()),
            prefetched: RefCell::new(std::collections::HashMap::new()),
        }
    }

    /// Takes the lock rows read with the `BEGIN`.
    pub(super) fn set_prefetched(&self, rows: std::collections::HashMap<String, Option<Lock>>) {
        *self.prefetched.borrow_mut() = rows;
    }

    /// The prefetched row of `symbol_path`, if it was prefetched (`Some(None)`: no row).
    #[allow(
        clippy::option_option,
        reason = "prefetched or not, and then a row or none"
    )]
    pub(super) fn prefetched_lock(&self, symbol_path: &str) -> Option<Option<Lock>> {
        self.prefetched.borrow().get(symbol_path).cloned()
    }

    /// Keeps a prefetched row exact after this transaction wrote it (`None`: deleted);
    /// `forget_all`: after a bulk change, nothing prefetched is trusted any more.
    pub(super) fn note_lock_write(&self, symbol_path: &str, now: Option<Lock>, forget_all: bool) {
        let mut prefetched = self.prefetched.borrow_mut();
        if forget_all {
            prefetched.clear();
        } else if let Some(entry) = prefetched.get_mut(symbol_path) {
            *entry = now;
        }
    }

    /// Records whether the project's waiter queue was empty at `BEGIN`.
    pub(super) fn set_queue_empty(&self, empty: bool) {
        self.queue_empty.set(empty);
    }

    /// Whether the project's waiter queue is known to be empty.
    pub(super) fn queue_is_empty(&self) -> bool {
        self.queue_empty.get()
    }

    /// Adds `sql` (a complete statement of literals) to the writes sent later.
    pub(super) fn defer(&self, sql: &str) {
        let mut deferred = self.deferred.borrow_mut();
        deferred.push_str(sql);
        deferred.push_str("; ");
    }

    /// The deferred writes not yet sent (for the commit's round trip).
    pub(super) fn take_deferred(&self) -> String {
        std::mem::take(&mut *self.deferred.borrow_mut())
    }

    /// Sends the deferred writes before a statement that may read what they wrote.
    fn flush(&self) -> Result<()> {
        let deferred = self.take_deferred();
        if deferred.is_empty() {
            return Ok(());
        }
        let mut conn = self.conn.borrow_mut();
        conn.client
            .batch_execute(&deferred)
            .map_err(|e| self.fail(&e))
    }

    /// Whether this is a write transaction (holding the project row lock).
    pub(super) fn is_writer(&self) -> bool {
        self.writer
    }

    /// Whether a statement of this transaction failed (the server has aborted it).
    pub(super) fn failed(&self) -> bool {
        self.failed.get()
    }

    fn fail(&self, err: &postgres::Error) -> StoreError {
        self.failed.set(true);
        self.name.error(err)
    }

    /// A value the server sent that did not convert.
    pub(super) fn refused(&self, err: &postgres::Error) -> StoreError {
        self.name.refused(&err.to_string())
    }

    /// The project's row is gone (someone deleted it behind the daemon's back).
    pub(super) fn missing_project(&self) -> StoreError {
        self.name.refused(&format!(
            "project {:?} has no row in wit_projects",
            self.project
        ))
    }

    /// Runs `sql` (prepared once per connection); its rows.
    pub(super) fn query(&self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>> {
        self.flush()?;
        let mut conn = self.conn.borrow_mut();
        let stmt = conn.statement(sql).map_err(|e| self.fail(&e))?;
        conn.client.query(&stmt, params).map_err(|e| self.fail(&e))
    }

    /// Runs `sql`; its first row, if any.
    pub(super) fn query_opt(&self, sql: &str, params: &Params<'_>) -> Result<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Runs `sql`; how many rows it changed.
    pub(super) fn execute(&self, sql: &str, params: &Params<'_>) -> Result<usize> {
        self.flush()?;
        let mut conn = self.conn.borrow_mut();
        let stmt = conn.statement(sql).map_err(|e| self.fail(&e))?;
        let n = conn
            .client
            .execute(&stmt, params)
            .map_err(|e| self.fail(&e))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// Runs `sql` and converts every row with `convert`.
    pub(super) fn rows<T>(
        &self,
        sql: &str,
        params: &Params<'_>,
        convert: fn(&Row) -> Result<T, postgres::Error>,
    ) -> Result<Vec<T>> {
        self.query(sql, params)?
            .iter()
            .map(|row| convert(row).map_err(|e| self.name.refused(&e.to_string())))
            .collect()
    }

    /// Runs `sql` and converts its first row, if any, with `convert`.
    pub(super) fn row<T>(
        &self,
        sql: &str,
        params: &Params<'_>,
        convert: fn(&Row) -> Result<T, postgres::Error>,
    ) -> Result<Option<T>> {
        self.query_opt(sql, params)?
            .map(|row| convert(&row).map_err(|e| self.name.refused(&e.to_string())))
            .transpose()
    }
}

/// A text column parsed with [`FromStr`] (the statuses).
pub(super) struct Parsed<T>(pub(super) T);

impl<'r, T> FromSql<'r> for Parsed<T>
where
    T: FromStr,
    T::Err: std::error::Error + Sync + Send + 'static,
{
    fn from_sql(
        ty: &Type,
        raw: &'r [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let text = <&str as FromSql>::from_sql(ty, raw)?;
        Ok(Parsed(text.parse()?))
    }

    fn accepts(ty: &Type) -> bool {
        <&str as FromSql>::accepts(ty)
    }
}

/// `text` as an SQL string literal (for the few statements sent as simple queries; the
/// connection runs with `standard_conforming_strings=on`, so doubling quotes is enough).
pub(super) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// An optional text as an SQL literal (`NULL` when absent).
pub(super) fn quote_opt(text: Option<&str>) -> String {
    text.map_or_else(|| "NULL".to_owned(), quote)
}

impl crate::store::StoreRead for Tx<'_> {}

impl crate::store::StoreWrite for Tx<'_> {
    fn notes(&self) -> &CommitNotes {
        self.notes
    }
}
