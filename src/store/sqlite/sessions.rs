//! The `sessions` table (docs/protocol.md 7): every session seen, its pulse (pid with the
//! process start time, or a lease), when it was last seen and when it ended.

use rusqlite::{params, OptionalExtension, Row};

use super::{Result, SessionRow, SessionSummary, Tx};
use crate::store::{SessionsRead, SessionsWrite};

const SESSION_COLUMNS: &str =
    "session_id, pid, pid_start, lease_ms, first_seen_ms, last_seen_ms, ended_at_ms, host_id, worktree";

fn session_from_row(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        session_id: row.get(0)?,
        pid: row.get(1)?,
        pid_start: row.get(2)?,
        lease_ms: row.get(3)?,
        first_seen_ms: row.get(4)?,
        last_seen_ms: row.get(5)?,
        ended_at_ms: row.get(6)?,
        host_id: row.get(7)?,
        worktree: row.get(8)?,
    })
}

impl SessionsRead for Tx<'_> {
    /// The session's row, if it was ever seen.
    fn session(&self, session_id: &str) -> Result<Option<SessionRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = ?1"
        ))?;
        Ok(stmt.query_row([session_id], session_from_row).optional()?)
    }

    /// Sessions that have a pulse (a pid or a lease) and have not ended: the ones the reaper
    /// watches.
    fn sessions_with_pulse(&self) -> Result<Vec<SessionRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions
             WHERE ended_at_ms IS NULL AND (pid IS NOT NULL OR lease_ms IS NOT NULL)"
        ))?;
        let rows = stmt.query_map([], session_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Every session that is registered, or holds a lock live at `now_ms` or a declared/active
    /// intent (docs/protocol.md 7.6), with its counts, in order of first appearance (then
    /// session id).
    fn session_summaries(&self, now_ms: i64) -> Result<Vec<SessionSummary>> {
        let mut stmt = self.conn.prepare_cached(
            "WITH held AS (
                 SELECT session_id, count(*) AS n, min(acquired_at_ms) AS first
                 FROM locks WHERE expires_at_ms > ?1 GROUP BY session_id
             ),
             open AS (
                 SELECT session_id, count(*) AS n, min(declared_at) AS first
                 FROM intents WHERE status IN ('declared', 'active') GROUP BY session_id
             ),
             ids AS (
                 SELECT session_id FROM agents
                 UNION SELECT session_id FROM held
                 UNION SELECT session_id FROM open
             )
             SELECT ids.session_id, a.name, a.id, s.pid, s.pid_start, s.lease_ms,
                    s.last_seen_ms, s.ended_at_ms,
                    coalesce(held.n, 0), coalesce(open.n, 0),
                    coalesce(s.first_seen_ms, a.registered_at, held.first, open.first, 0)
                        AS first_seen,
                    coalesce(a.updated_at, 0), s.host_id, s.worktree
             FROM ids
             LEFT JOIN sessions s ON s.session_id = ids.session_id
             LEFT JOIN agents a ON a.session_id = ids.session_id
             LEFT JOIN held ON held.session_id = ids.session_id
             LEFT JOIN open ON open.session_id = ids.session_id
             ORDER BY first_seen, ids.session_id",
        )?;
        let rows = stmt.query_map([now_ms], |row| {
            let first_seen_ms: i64 = row.get(10)?;
            let registered_ms: i64 = row.get(11)?;
            let last_seen: Option<i64> = row.get(6)?;
            Ok(SessionSummary {
                session_id: row.get(0)?,
                name: row.get(1)?,
                agent_id: row.get(2)?,
                pid: row.get(3)?,
                pid_start: row.get(4)?,
                lease_ms: row.get(5)?,
                last_seen_ms: last_seen.unwrap_or(registered_ms.max(first_seen_ms)),
                ended_at_ms: row.get(7)?,
                locks: row.get(8)?,
                intents: row.get(9)?,
                first_seen_ms,
                host_id: row.get(12)?,
                worktree: row.get(13)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

impl SessionsWrite for Tx<'_> {
    /// Forgets sessions last seen before `cutoff_ms` that are not registered and hold no lock
    /// and no declared/active intent (what a stream of one-off session ids leaves behind);
    /// how many.
    fn prune_sessions(&self, cutoff_ms: i64) -> Result<usize> {
        let mut stmt = self.conn.prepare_cached(
            "DELETE FROM sessions WHERE last_seen_ms < ?1
               AND session_id NOT IN (SELECT session_id FROM agents)
               AND session_id NOT IN (SELECT session_id FROM locks)
               AND session_id NOT IN
                   (SELECT session_id FROM intents WHERE status IN ('declared', 'active'))",
        )?;
        Ok(stmt.execute([cutoff_ms])?)
    }

    /// Records that `session_id` was seen at `now_ms`: creates its row (first appearance) or
    /// moves its last sighting forward, and makes an ended session a session again (it keeps
    /// no pulse: what a reap cleared stays cleared).
    fn touch_session(&self, session_id: &str, now_ms: i64) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO sessions (session_id, first_seen_ms, last_seen_ms) VALUES (?1, ?2, ?2)
             ON CONFLICT (session_id) DO UPDATE
                 SET last_seen_ms = max(last_seen_ms, excluded.last_seen_ms), ended_at_ms = NULL",
        )?;
        stmt.execute(params![session_id, now_ms])?;
        Ok(())
    }

    /// Moves the last sighting of an existing session forward (flushing the in-memory
    /// sightings); never creates a row, never revives an ended session.
    fn record_last_seen(&self, session_id: &str, seen_ms: i64) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "UPDATE sessions SET last_seen_ms = max(last_seen_ms, ?2) WHERE session_id = ?1",
        )?;
        stmt.execute(params![session_id, seen_ms])?;
        Ok(())
    }

    /// Records the worktree the session acts from. The row must exist.
    fn set_session_worktree(&self, session_id: &str, worktree: &str) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached("UPDATE sessions SET worktree = ?2 WHERE session_id = ?1")?;
        stmt.execute(params![session_id, worktree])?;
        Ok(())
    }

    /// Replaces the session's pulse (register): its pid with the process start time, and its
    /// lease. The row must exist ([`SessionsWrite::touch_session`](crate::store::SessionsWrite::touch_session) first).
    fn set_session_pulse(
        &self,
        session_id: &str,
        pid: Option<(i64, i64)>,
        host_id: &str,
        lease_ms: Option<i64>,
    ) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "UPDATE sessions SET pid = ?2, pid_start = ?3, lease_ms = ?4, host_id = ?5
             WHERE session_id = ?1",
        )?;
        stmt.execute(params![
            session_id,
            pid.map(|p| p.0),
            pid.map(|p| p.1),
            lease_ms,
            pid.map(|_| host_id)
        ])?;
        Ok(())
    }

    /// Marks the session ended at `now_ms` and clears its pulse; whether it was live before
    /// (a row that had not ended).
    fn end_session(&self, session_id: &str, now_ms: i64) -> Result<bool> {
        let mut stmt = self.conn.prepare_cached(
            "UPDATE sessions SET ended_at_ms = ?2, pid = NULL, pid_start = NULL, lease_ms = NULL
             WHERE session_id = ?1 AND ended_at_ms IS NULL",
        )?;
        Ok(stmt.execute(params![session_id, now_ms])? > 0)
    }
}
