//! Queries on the `locks` table. Liveness (`expires_at_ms > now`) is the caller's business
//! except where a query takes `now` explicitly.

use rusqlite::{params, OptionalExtension, Row};

use super::{Lock, Result, Tx};
use crate::store::{LocksRead, LocksWrite};

fn lock_from_row(row: &Row<'_>) -> rusqlite::Result<Lock> {
    Ok(Lock {
        symbol_path: row.get(0)?,
        session_id: row.get(1)?,
        acquired_at_ms: row.get(2)?,
        expires_at_ms: row.get(3)?,
        token: row.get(4)?,
    })
}

impl LocksRead for Tx<'_> {
    /// The lock row on `symbol_path`, live or expired (primary-key lookup).
    fn lock(&self, symbol_path: &str) -> Result<Option<Lock>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT symbol_path, session_id, acquired_at_ms, expires_at_ms, token
             FROM locks WHERE symbol_path = ?1",
        )?;
        Ok(stmt.query_row([symbol_path], lock_from_row).optional()?)
    }

    /// Locks live at `now_ms`, optionally only those of `session_id` (compared literally),
    /// ordered by acquisition time, then symbol path.
    fn live_locks(&self, now_ms: i64, session_id: Option<&str>) -> Result<Vec<Lock>> {
        let rows = match session_id {
            Some(session) => {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT symbol_path, session_id, acquired_at_ms, expires_at_ms, token FROM locks
                     WHERE session_id = ?1 AND expires_at_ms > ?2
                     ORDER BY acquired_at_ms, symbol_path",
                )?;
                let rows = stmt.query_map(params![session, now_ms], lock_from_row)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            }
            None => {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT symbol_path, session_id, acquired_at_ms, expires_at_ms, token FROM locks
                     WHERE expires_at_ms > ?1
                     ORDER BY acquired_at_ms, symbol_path",
                )?;
                let rows = stmt.query_map([now_ms], lock_from_row)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            }
        };
        Ok(rows)
    }

    /// Locks expired at `now_ms` whose rows are still there (a scan; see
    /// [`LocksWrite::delete_expired_locks`]).
    fn expired_locks(&self, now_ms: i64) -> Result<Vec<Lock>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT symbol_path, session_id, acquired_at_ms, expires_at_ms, token FROM locks
             WHERE expires_at_ms <= ?1",
        )?;
        let rows = stmt.query_map([now_ms], lock_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

impl LocksWrite for Tx<'_> {
    /// Inserts or replaces the lock on `lock.symbol_path`.
    fn put_lock(&self, lock: &Lock) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO locks (symbol_path, session_id, acquired_at_ms, expires_at_ms, token)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (symbol_path) DO UPDATE SET session_id = excluded.session_id,
                 acquired_at_ms = excluded.acquired_at_ms, expires_at_ms = excluded.expires_at_ms,
                 token = excluded.token",
        )?;
        stmt.execute(params![
            lock.symbol_path,
            lock.session_id,
            lock.acquired_at_ms,
            lock.expires_at_ms,
            lock.token
        ])?;
        Ok(())
    }

    /// Deletes the lock row on `symbol_path`.
    fn delete_lock(&self, symbol_path: &str) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached("DELETE FROM locks WHERE symbol_path = ?1")?;
        stmt.execute([symbol_path])?;
        Ok(())
    }

    /// Deletes every lock expired at `now_ms` (a scan: an expiry index cost every lock write
    /// more than it saves this once-a-minute sweep); how many.
    fn delete_expired_locks(&self, now_ms: i64) -> Result<usize> {
        let mut stmt = self
            .conn
            .prepare_cached("DELETE FROM locks WHERE expires_at_ms <= ?1")?;
        Ok(stmt.execute([now_ms])?)
    }
}
