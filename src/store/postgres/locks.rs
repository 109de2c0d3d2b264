//! Queries on `wit_locks`. Liveness (`expires_at_ms > now`) is the caller's business except
//! where a query takes `now` explicitly.

use postgres::Row;

use super::tx::{quote, Tx};
use crate::store::{Lock, LocksRead, LocksWrite, Result};

fn lock_from_row(row: &Row) -> Result<Lock, postgres::Error> {
    Ok(Lock {
        symbol_path: row.try_get(0)?,
        session_id: row.try_get(1)?,
        acquired_at_ms: row.try_get(2)?,
        expires_at_ms: row.try_get(3)?,
        token: row.try_get(4)?,
    })
}

impl LocksRead for Tx<'_> {
    /// The lock row on `symbol_path`, live or expired (primary-key lookup).
    fn lock(&self, symbol_path: &str) -> Result<Option<Lock>> {
        if let Some(prefetched) = self.prefetched_lock(symbol_path) {
            return Ok(prefetched);
        }
        self.row(
            "SELECT symbol_path, session_id, acquired_at_ms, expires_at_ms, token
             FROM wit_locks WHERE project = $1 AND symbol_path = $2",
            &[&self.project, &symbol_path],
            lock_from_row,
        )
    }

    /// Locks live at `now_ms`, optionally only those of `session_id` (compared literally),
    /// ordered by acquisition time, then symbol path.
    fn live_locks(&self, now_ms: i64, session_id: Option<&str>) -> Result<Vec<Lock>> {
        match session_id {
            Some(session) => self.rows(
                "SELECT symbol_path, session_id, acquired_at_ms, expires_at_ms, token
                 FROM wit_locks WHERE project = $1 AND session_id = $2 AND expires_at_ms > $3
                 ORDER BY acquired_at_ms, symbol_path",
                &[&self.project, &session, &now_ms],
                lock_from_row,
            ),
            None => self.rows(
                "SELECT symbol_path, session_id, acquired_at_ms, expires_at_ms, token
                 FROM wit_locks WHERE project = $1 AND expires_at_ms > $2
                 ORDER BY acquired_at_ms, symbol_path",
                &[&self.project, &now_ms],
                lock_from_row,
            ),
        }
    }

    /// Locks expired at `now_ms` whose rows are still there.
    fn expired_locks(&self, now_ms: i64) -> Result<Vec<Lock>> {
        self.rows(
            "SELECT symbol_path, session_id, acquired_at_ms, expires_at_ms, token
             FROM wit_locks WHERE project = $1 AND expires_at_ms <= $2",
            &[&self.project, &now_ms],
            lock_from_row,
        )
    }
}

impl LocksWrite for Tx<'_> {
    /// Inserts or replaces the lock on `lock.symbol_path`.
    fn put_lock(&self, lock: &Lock) -> Result<()> {
        // Deferred: nothing in a transaction reads a lock back after writing it before the
        // next statement, which sends it first.
        self.defer(&format!(
            "INSERT INTO wit_locks
                 (project, symbol_path, session_id, acquired_at_ms, expires_at_ms, token)
             VALUES ({}, {}, {}, {}, {}, {})
             ON CONFLICT (project, symbol_path) DO UPDATE SET session_id = excluded.session_id,
                 acquired_at_ms = excluded.acquired_at_ms, expires_at_ms = excluded.expires_at_ms,
                 token = excluded.token",
            quote(self.project),
            quote(&lock.symbol_path),
            quote(&lock.session_id),
            lock.acquired_at_ms,
            lock.expires_at_ms,
            lock.token,
        ));
        self.note_lock_write(&lock.symbol_path, Some(lock.clone()), false);
        Ok(())
    }

    fn delete_lock(&self, symbol_path: &str) -> Result<()> {
        // Deferred like `put_lock`; callers delete only a row they have just read, so it is
        // there (the project row lock keeps it so until the commit).
        self.defer(&format!(
            "DELETE FROM wit_locks WHERE project = {} AND symbol_path = {}",
            quote(self.project),
            quote(symbol_path),
        ));
        self.note_lock_write(symbol_path, None, false);
        Ok(())
    }

    fn delete_expired_locks(&self, now_ms: i64) -> Result<usize> {
        self.note_lock_write("", None, true);
        self.execute(
            "DELETE FROM wit_locks WHERE project = $1 AND expires_at_ms <= $2",
            &[&self.project, &now_ms],
        )
    }
}
