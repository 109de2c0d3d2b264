//! Transactions begun and ended by cached statements.
//!
//! rusqlite's `Transaction` sends `BEGIN …` and `COMMIT` through `execute_batch`, which
//! compiles them anew each time: two SQL compilations per transaction, and a request makes
//! several (a recorded `edit.preflight` reads the locks and intents, then writes its work). Here
//! they are prepared once and kept in the connection's statement cache.

use rusqlite::Connection;

use super::Result;

/// How a transaction takes its locks.
#[derive(Debug, Clone, Copy)]
pub(super) enum Begin {
    /// A read transaction: its snapshot is taken at its first read.
    Deferred,
    /// A write transaction: the write lock is taken at once (waiting up to the busy timeout).
    Immediate,
}

/// An open transaction on a connection: committed by [`Open::commit`], rolled back when
/// dropped otherwise (an error, or a panic unwinding through it).
pub(super) struct Open<'c> {
    conn: &'c Connection,
    done: bool,
}

impl<'c> Open<'c> {
    /// Begins a transaction on `conn`.
    pub(super) fn begin(conn: &'c Connection, how: Begin) -> Result<Open<'c>> {
        let sql = match how {
            Begin::Deferred => "BEGIN DEFERRED",
            Begin::Immediate => "BEGIN IMMEDIATE",
        };
        conn.prepare_cached(sql)?.execute([])?;
        Ok(Open { conn, done: false })
    }

    /// The connection the transaction runs on.
    pub(super) fn conn(&self) -> &'c Connection {
        self.conn
    }

    /// Commits the transaction (on failure it is rolled back when dropped).
    pub(super) fn commit(mut self) -> Result<()> {
        self.conn.prepare_cached("COMMIT")?.execute([])?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.done && !self.conn.is_autocommit() {
            let _ = self
                .conn
                .prepare_cached("ROLLBACK")
                .and_then(|mut rollback| rollback.execute([]));
        }
    }
}
