//! The `sessions` table (docs/protocol.md 7): every session seen, its pulse (pid with the
//! process start time, or a lease), when it was last seen and when it ended.

use rusqlite::{params, OptionalExtension, Row};
use rustc_hash::FxHashMap;

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
        // Each table is read plainly and joined here. As one statement (a union of three
        // sets, two grouped subqueries, automatic indexes, a sort) SQLite built five
        // temporary B-trees: for 200 sessions the sqlite3 shell took 820 µs for it, 65 µs
        // for the plain reads.
        let mut found: FxHashMap<String, Gathered> = FxHashMap::default();
        let mut stmt = self
            .conn
            .prepare_cached("SELECT session_id, name, id, registered_at, updated_at FROM agents")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            gathered(&mut found, row)?.agent =
                Some((row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?));
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT session_id, acquired_at_ms FROM locks WHERE expires_at_ms > ?1",
        )?;
        let mut rows = stmt.query([now_ms])?;
        while let Some(row) = rows.next()? {
            gathered(&mut found, row)?.locks.add(row.get(1)?);
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT session_id, declared_at FROM intents WHERE status IN ('declared', 'active')",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            gathered(&mut found, row)?.intents.add(row.get(1)?);
        }
        self.read_session_rows(&mut found)?;
        let mut summaries: Vec<SessionSummary> = found
            .into_iter()
            .map(|(session_id, gathered)| {
                let row = gathered.row;
                let (name, agent_id, registered_at, updated_at) = match gathered.agent {
                    Some((name, id, registered, updated)) => {
                        (Some(name), Some(id), Some(registered), updated)
                    }
                    None => (None, None, None, 0),
                };
                let first_seen_ms = row
                    .as_ref()
                    .map(|r| r.first_seen_ms)
                    .or(registered_at)
                    .or(gathered.locks.first)
                    .or(gathered.intents.first)
                    .unwrap_or(0);
                let last_seen_ms = row
                    .as_ref()
                    .map_or(updated_at.max(first_seen_ms), |r| r.last_seen_ms);
                let (pid, pid_start, lease_ms, ended_at_ms, host_id, worktree) = match row {
                    Some(r) => (
                        r.pid,
                        r.pid_start,
                        r.lease_ms,
                        r.ended_at_ms,
                        r.host_id,
                        r.worktree,
                    ),
                    None => (None, None, None, None, None, None),
                };
                SessionSummary {
                    name,
                    agent_id,
                    pid,
                    pid_start,
                    lease_ms,
                    last_seen_ms,
                    ended_at_ms,
                    locks: gathered.locks.count,
                    intents: gathered.intents.count,
                    first_seen_ms,
                    host_id,
                    worktree,
                    session_id,
                }
            })
            .collect();
        summaries.sort_by(|a, b| {
            (a.first_seen_ms, &a.session_id).cmp(&(b.first_seen_ms, &b.session_id))
        });
        Ok(summaries)
    }
}

/// What `session_summaries` gathers of one session besides its `sessions` row.
#[derive(Default)]
struct Gathered {
    /// Its `sessions` row, if it has one.
    row: Option<SessionRow>,
    /// Registered: name, agent id, registered at, updated at.
    agent: Option<(String, i64, i64, i64)>,
    locks: Counted,
    intents: Counted,
}

/// How many rows, and the earliest time among them.
#[derive(Default)]
struct Counted {
    count: i64,
    first: Option<i64>,
}

/// The entry of the session whose id is `row`'s first column (made on its first row).
fn gathered<'f>(
    found: &'f mut FxHashMap<String, Gathered>,
    row: &Row<'_>,
) -> rusqlite::Result<&'f mut Gathered> {
    let id = row.get_ref(0)?.as_str()?;
    if !found.contains_key(id) {
        found.insert(id.to_owned(), Gathered::default());
    }
    found
        .get_mut(id)
        .ok_or(rusqlite::Error::QueryReturnedNoRows)
}

impl Counted {
    fn add(&mut self, at: i64) {
        self.count += 1;
        self.first = Some(self.first.map_or(at, |first| first.min(at)));
    }
}

impl Tx<'_> {
    /// The `sessions` row of each gathered session that has one: the whole table read once
    /// when it is not much larger than the list (its id span bounds its size), else one
    /// indexed lookup each.
    fn read_session_rows(&self, found: &mut FxHashMap<String, Gathered>) -> Result<()> {
        let span: i64 = self
            .conn
            .prepare_cached("SELECT coalesce(max(id) - min(id) + 1, 0) FROM sessions")?
            .query_row([], |row| row.get(0))?;
        if usize::try_from(span).unwrap_or(usize::MAX) > 2 * found.len() + 256 {
            for (session_id, gathered) in found.iter_mut() {
                gathered.row = self.session(session_id)?;
            }
            return Ok(());
        }
        let mut stmt = self
            .conn
            .prepare_cached(&format!("SELECT {SESSION_COLUMNS} FROM sessions"))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let id = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
            if let Some(gathered) = found.get_mut(id) {
                gathered.row = Some(session_from_row(row)?);
            }
        }
        Ok(())
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
