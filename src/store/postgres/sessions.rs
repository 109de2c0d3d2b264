//! Queries on `wit_sessions` (docs/protocol.md 7): every session seen, its pulse (pid with the
//! process start time, or a lease), when it was last seen and when it ended.

use postgres::Row;

use super::tx::Tx;
use crate::store::{Result, SessionRow, SessionSummary, SessionsRead, SessionsWrite};

fn session_from_row(row: &Row) -> Result<SessionRow, postgres::Error> {
    Ok(SessionRow {
        session_id: row.try_get(0)?,
        pid: row.try_get(1)?,
        pid_start: row.try_get(2)?,
        lease_ms: row.try_get(3)?,
        first_seen_ms: row.try_get(4)?,
        last_seen_ms: row.try_get(5)?,
        ended_at_ms: row.try_get(6)?,
        host_id: row.try_get(7)?,
        worktree: row.try_get(8)?,
    })
}

fn summary_from_row(row: &Row) -> Result<SessionSummary, postgres::Error> {
    let first_seen_ms: i64 = row.try_get(10)?;
    let registered_ms: i64 = row.try_get(11)?;
    let last_seen: Option<i64> = row.try_get(6)?;
    Ok(SessionSummary {
        session_id: row.try_get(0)?,
        name: row.try_get(1)?,
        agent_id: row.try_get(2)?,
        pid: row.try_get(3)?,
        pid_start: row.try_get(4)?,
        lease_ms: row.try_get(5)?,
        last_seen_ms: last_seen.unwrap_or(registered_ms.max(first_seen_ms)),
        ended_at_ms: row.try_get(7)?,
        locks: row.try_get(8)?,
        intents: row.try_get(9)?,
        first_seen_ms,
        host_id: row.try_get(12)?,
        worktree: row.try_get(13)?,
    })
}

impl SessionsRead for Tx<'_> {
    /// The session's row, if it was ever seen.
    fn session(&self, session_id: &str) -> Result<Option<SessionRow>> {
        self.row(
            "SELECT session_id, pid, pid_start, lease_ms, first_seen_ms, last_seen_ms,
                    ended_at_ms, host_id, worktree
             FROM wit_sessions WHERE project = $1 AND session_id = $2",
            &[&self.project, &session_id],
            session_from_row,
        )
    }

    /// Sessions that have a pulse (a pid or a lease) and have not ended.
    fn sessions_with_pulse(&self) -> Result<Vec<SessionRow>> {
        self.rows(
            "SELECT session_id, pid, pid_start, lease_ms, first_seen_ms, last_seen_ms,
                    ended_at_ms, host_id, worktree
             FROM wit_sessions
             WHERE project = $1 AND ended_at_ms IS NULL
               AND (pid IS NOT NULL OR lease_ms IS NOT NULL)",
            &[&self.project],
            session_from_row,
        )
    }

    /// Every session that is registered, or holds a lock live at `now_ms` or a
    /// declared/active intent (docs/protocol.md 7.6), with its counts, in order of first
    /// appearance (then session id). One statement, so one snapshot.
    fn session_summaries(&self, now_ms: i64) -> Result<Vec<SessionSummary>> {
        self.rows(
            "WITH held AS (
                 SELECT session_id, count(*) AS n, min(acquired_at_ms) AS first
                 FROM wit_locks WHERE project = $1 AND expires_at_ms > $2 GROUP BY session_id
             ),
             open AS (
                 SELECT session_id, count(*) AS n, min(declared_at) AS first
                 FROM wit_intents WHERE project = $1 AND status IN ('declared', 'active')
                 GROUP BY session_id
             ),
             ids AS (
                 SELECT session_id FROM wit_agents WHERE project = $1
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
             LEFT JOIN wit_sessions s ON s.project = $1 AND s.session_id = ids.session_id
             LEFT JOIN wit_agents a ON a.project = $1 AND a.session_id = ids.session_id
             LEFT JOIN held ON held.session_id = ids.session_id
             LEFT JOIN open ON open.session_id = ids.session_id
             ORDER BY first_seen, ids.session_id",
            &[&self.project, &now_ms],
            summary_from_row,
        )
    }
}

impl SessionsWrite for Tx<'_> {
    /// Forgets sessions last seen before `cutoff_ms` that are not registered and hold no
    /// lock and no declared/active intent; how many.
    fn prune_sessions(&self, cutoff_ms: i64) -> Result<usize> {
        self.execute(
            "DELETE FROM wit_sessions s WHERE s.project = $1 AND s.last_seen_ms < $2
               AND NOT EXISTS (SELECT 1 FROM wit_agents a
                               WHERE a.project = $1 AND a.session_id = s.session_id)
               AND NOT EXISTS (SELECT 1 FROM wit_locks l
                               WHERE l.project = $1 AND l.session_id = s.session_id)
               AND NOT EXISTS (SELECT 1 FROM wit_intents i
                               WHERE i.project = $1 AND i.session_id = s.session_id
                                 AND i.status IN ('declared', 'active'))",
            &[&self.project, &cutoff_ms],
        )
    }

    /// Records that `session_id` was seen at `now_ms`: creates its row or moves its last
    /// sighting forward, and makes an ended session a session again (without a pulse).
    fn touch_session(&self, session_id: &str, now_ms: i64) -> Result<()> {
        self.execute(
            "INSERT INTO wit_sessions (project, session_id, first_seen_ms, last_seen_ms)
             VALUES ($1, $2, $3, $3)
             ON CONFLICT (project, session_id) DO UPDATE
                 SET last_seen_ms = greatest(wit_sessions.last_seen_ms, excluded.last_seen_ms),
                     ended_at_ms = NULL",
            &[&self.project, &session_id, &now_ms],
        )?;
        Ok(())
    }

    /// Records the worktree the session acts from. The row must exist.
    fn set_session_worktree(&self, session_id: &str, worktree: &str) -> Result<()> {
        self.execute(
            "UPDATE wit_sessions SET worktree = $3 WHERE project = $1 AND session_id = $2",
            &[&self.project, &session_id, &worktree],
        )?;
        Ok(())
    }

    /// Moves the last sighting of an existing session forward; never creates a row, never
    /// revives an ended session.
    fn record_last_seen(&self, session_id: &str, seen_ms: i64) -> Result<()> {
        self.execute(
            "UPDATE wit_sessions SET last_seen_ms = greatest(last_seen_ms, $3)
             WHERE project = $1 AND session_id = $2",
            &[&self.project, &session_id, &seen_ms],
        )?;
        Ok(())
    }

    /// Replaces the session's pulse: its pid with the process start time and host, and its
    /// lease. The row must exist.
    fn set_session_pulse(
        &self,
        session_id: &str,
        pid: Option<(i64, i64)>,
        host_id: &str,
        lease_ms: Option<i64>,
    ) -> Result<()> {
        self.execute(
            "UPDATE wit_sessions SET pid = $3, pid_start = $4, lease_ms = $5, host_id = $6
             WHERE project = $1 AND session_id = $2",
            &[
                &self.project,
                &session_id,
                &pid.map(|p| p.0),
                &pid.map(|p| p.1),
                &lease_ms,
                &pid.map(|_| host_id),
            ],
        )?;
        Ok(())
    }

    /// Marks the session ended at `now_ms` and clears its pulse; whether it was live.
    fn end_session(&self, session_id: &str, now_ms: i64) -> Result<bool> {
        Ok(self.execute(
            "UPDATE wit_sessions SET ended_at_ms = $3, pid = NULL, pid_start = NULL,
                 lease_ms = NULL
             WHERE project = $1 AND session_id = $2 AND ended_at_ms IS NULL",
            &[&self.project, &session_id, &now_ms],
        )? > 0)
    }
}
