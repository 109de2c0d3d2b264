//! The `lock_waiters` table: the shared queue of waiting lock requests (docs/protocol.md 8).

use rusqlite::{params, OptionalExtension, Row};

use super::{LockWait, NewWaiter, Result, Tx, WaiterRow};
use crate::store::{WaitersRead, WaitersWrite};

const WAITER_COLUMNS: &str =
    "id, symbol_path, session_id, ttl_ms, daemon_id, callers, queued_at_ms, granted";

fn waiter_from_row(row: &Row<'_>) -> rusqlite::Result<WaiterRow> {
    Ok(WaiterRow {
        id: row.get(0)?,
        symbol_path: row.get(1)?,
        session_id: row.get(2)?,
        ttl_ms: row.get(3)?,
        daemon_id: row.get(4)?,
        callers: row.get(5)?,
        queued_at_ms: row.get(6)?,
        granted: row.get(7)?,
    })
}

impl WaitersRead for Tx<'_> {
    fn waiters(&self) -> Result<Vec<WaiterRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {WAITER_COLUMNS} FROM lock_waiters WHERE granted IS NULL
             ORDER BY symbol_path, id"
        ))?;
        let rows = stmt.query_map([], waiter_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn lock_waits(&self, now_ms: i64) -> Result<Vec<LockWait>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT w.symbol_path, w.session_id, w.queued_at_ms, l.session_id
             FROM lock_waiters w
             LEFT JOIN locks l ON l.symbol_path = w.symbol_path AND l.expires_at_ms > ?1
             WHERE w.granted IS NULL ORDER BY w.symbol_path, w.id",
        )?;
        let rows = stmt.query_map([now_ms], |row| {
            Ok(LockWait {
                symbol_path: row.get(0)?,
                session_id: row.get(1)?,
                since_ms: row.get(2)?,
                holder: row.get(3)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    fn first_waiter(&self, symbol_path: &str) -> Result<Option<WaiterRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {WAITER_COLUMNS} FROM lock_waiters
             WHERE symbol_path = ?1 AND granted IS NULL ORDER BY id LIMIT 1"
        ))?;
        Ok(stmt.query_row([symbol_path], waiter_from_row).optional()?)
    }

    fn waiter(&self, id: i64) -> Result<Option<WaiterRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {WAITER_COLUMNS} FROM lock_waiters WHERE id = ?1"
        ))?;
        Ok(stmt.query_row([id], waiter_from_row).optional()?)
    }

    fn granted_waiters(&self, daemon_id: &str) -> Result<Vec<WaiterRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {WAITER_COLUMNS} FROM lock_waiters
             WHERE daemon_id = ?1 AND granted IS NOT NULL ORDER BY id"
        ))?;
        let rows = stmt.query_map([daemon_id], waiter_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

impl WaitersWrite for Tx<'_> {
    fn insert_waiter(&self, waiter: &NewWaiter<'_>) -> Result<i64> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO lock_waiters
                 (symbol_path, session_id, ttl_ms, daemon_id, callers, queued_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        stmt.execute(params![
            waiter.symbol_path,
            waiter.session_id,
            waiter.ttl_ms,
            waiter.daemon_id,
            waiter.callers,
            waiter.queued_at_ms
        ])?;
        Ok(self.conn.last_insert_rowid())
    }

    fn grant_waiter(&self, id: i64, daemon_id: &str, answer: &str) -> Result<bool> {
        let mut stmt = self.conn.prepare_cached(
            "UPDATE lock_waiters SET granted = ?2 WHERE id = ?1 AND granted IS NULL",
        )?;
        let granted = stmt.execute(params![id, answer])? > 0;
        if granted {
            self.notes.granted(daemon_id);
        }
        Ok(granted)
    }

    fn delete_waiter(&self, id: i64) -> Result<bool> {
        let mut stmt = self
            .conn
            .prepare_cached("DELETE FROM lock_waiters WHERE id = ?1")?;
        Ok(stmt.execute([id])? > 0)
    }

    fn delete_daemon_waiters(&self, daemon_id: &str) -> Result<usize> {
        let mut stmt = self
            .conn
            .prepare_cached("DELETE FROM lock_waiters WHERE daemon_id = ?1")?;
        Ok(stmt.execute([daemon_id])?)
    }
}
