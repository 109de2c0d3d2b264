//! Queries on `wit_lock_waiters`: the shared queue of waiting lock requests
//! (docs/protocol.md 8).

use postgres::Row;

use super::tx::Tx;
use crate::store::{LockWait, NewWaiter, Result, WaiterRow, WaitersRead, WaitersWrite};

fn waiter_from_row(row: &Row) -> Result<WaiterRow, postgres::Error> {
    Ok(WaiterRow {
        id: row.try_get(0)?,
        symbol_path: row.try_get(1)?,
        session_id: row.try_get(2)?,
        ttl_ms: row.try_get(3)?,
        daemon_id: row.try_get(4)?,
        callers: row.try_get(5)?,
        queued_at_ms: row.try_get(6)?,
        granted: row.try_get(7)?,
    })
}

impl WaitersRead for Tx<'_> {
    /// Every queued request not yet granted, by symbol path, then arrival order.
    fn waiters(&self) -> Result<Vec<WaiterRow>> {
        self.rows(
            "SELECT id, symbol_path, session_id, ttl_ms, daemon_id, callers, queued_at_ms, granted
             FROM wit_lock_waiters WHERE project = $1 AND granted IS NULL
             ORDER BY symbol_path, id",
            &[&self.project],
            waiter_from_row,
        )
    }

    /// Every queued request not yet granted with the holder of the symbol's lock live at
    /// `now_ms`, by symbol path (byte order, as SQLite sorts), then arrival order.
    fn lock_waits(&self, now_ms: i64) -> Result<Vec<LockWait>> {
        if self.queue_is_empty() {
            return Ok(Vec::new());
        }
        self.rows(
            "SELECT w.symbol_path, w.session_id, w.queued_at_ms, l.session_id
             FROM wit_lock_waiters w
             LEFT JOIN wit_locks l ON l.project = w.project AND l.symbol_path = w.symbol_path
                 AND l.expires_at_ms > $2
             WHERE w.project = $1 AND w.granted IS NULL
             ORDER BY w.symbol_path COLLATE \"C\", w.id",
            &[&self.project, &now_ms],
            |row| {
                Ok(LockWait {
                    symbol_path: row.try_get(0)?,
                    session_id: row.try_get(1)?,
                    since_ms: row.try_get(2)?,
                    holder: row.try_get(3)?,
                })
            },
        )
    }

    /// The first queued, not yet granted request for `symbol_path`.
    fn first_waiter(&self, symbol_path: &str) -> Result<Option<WaiterRow>> {
        if self.queue_is_empty() {
            return Ok(None);
        }
        self.row(
            "SELECT id, symbol_path, session_id, ttl_ms, daemon_id, callers, queued_at_ms, granted
             FROM wit_lock_waiters
             WHERE project = $1 AND symbol_path = $2 AND granted IS NULL ORDER BY id LIMIT 1",
            &[&self.project, &symbol_path],
            waiter_from_row,
        )
    }

    /// The queued request `id`, granted or not.
    fn waiter(&self, id: i64) -> Result<Option<WaiterRow>> {
        self.row(
            "SELECT id, symbol_path, session_id, ttl_ms, daemon_id, callers, queued_at_ms, granted
             FROM wit_lock_waiters WHERE project = $1 AND id = $2",
            &[&self.project, &id],
            waiter_from_row,
        )
    }

    /// The requests of `daemon_id` that another daemon granted.
    fn granted_waiters(&self, daemon_id: &str) -> Result<Vec<WaiterRow>> {
        self.rows(
            "SELECT id, symbol_path, session_id, ttl_ms, daemon_id, callers, queued_at_ms, granted
             FROM wit_lock_waiters
             WHERE project = $1 AND daemon_id = $2 AND granted IS NOT NULL ORDER BY id",
            &[&self.project, &daemon_id],
            waiter_from_row,
        )
    }
}

impl WaitersWrite for Tx<'_> {
    /// Queues a lock request; its id (an identity: writers of a project are serialised, so
    /// ids grow with arrival).
    fn insert_waiter(&self, waiter: &NewWaiter<'_>) -> Result<i64> {
        self.set_queue_empty(false);
        let row = self
            .query_opt(
                "INSERT INTO wit_lock_waiters
                     (project, symbol_path, session_id, ttl_ms, daemon_id, callers, queued_at_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                &[
                    &self.project,
                    &waiter.symbol_path,
                    &waiter.session_id,
                    &waiter.ttl_ms,
                    &waiter.daemon_id,
                    &waiter.callers,
                    &waiter.queued_at_ms,
                ],
            )?
            .ok_or_else(|| self.missing_project())?;
        row.try_get(0).map_err(|e| self.refused(&e))
    }

    /// Marks request `id` granted with `answer`; whether it was still queued. Notes the
    /// grant for `daemon_id`.
    fn grant_waiter(&self, id: i64, daemon_id: &str, answer: &str) -> Result<bool> {
        let granted = self.execute(
            "UPDATE wit_lock_waiters SET granted = $3
             WHERE project = $1 AND id = $2 AND granted IS NULL",
            &[&self.project, &id, &answer],
        )? > 0;
        if granted {
            self.notes.granted(daemon_id);
        }
        Ok(granted)
    }

    /// Removes request `id`; whether it was there.
    fn delete_waiter(&self, id: i64) -> Result<bool> {
        Ok(self.execute(
            "DELETE FROM wit_lock_waiters WHERE project = $1 AND id = $2",
            &[&self.project, &id],
        )? > 0)
    }

    /// Removes every request of `daemon_id`; how many.
    fn delete_daemon_waiters(&self, daemon_id: &str) -> Result<usize> {
        self.execute(
            "DELETE FROM wit_lock_waiters WHERE project = $1 AND daemon_id = $2",
            &[&self.project, &daemon_id],
        )
    }
}
