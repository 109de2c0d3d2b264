//! The `events` table: the log of changes (docs/protocol.md 9). Every write that changes state
//! appends its events through [`EventsWrite::append_event`](crate::store::EventsWrite::append_event) inside its own transaction, so an
//! acknowledged change always has its event. After a commit that appended events the store
//! tells its [`CommitListener`] the newest `seq` (what wakes `events.poll`; the table stays
//! the only source of truth).

use rusqlite::{params, OptionalExtension, Row};

use super::{Event, EventPage, NewEvent, Result, Tx};
use crate::store::{EventsRead, EventsWrite};

fn event_from_row(row: &Row<'_>) -> rusqlite::Result<Event> {
    Ok(Event {
        seq: row.get(0)?,
        at_ms: row.get(1)?,
        kind: row.get(2)?,
        session_id: row.get(3)?,
        subject: row.get(4)?,
        data: row.get(5)?,
    })
}

impl EventsRead for Tx<'_> {
    /// The newest event `seq` (0 when no event was ever written and none is kept).
    fn newest_event_seq(&self) -> Result<i64> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT coalesce(max(seq), 0) FROM events")?;
        Ok(stmt.query_row([], |r| r.get(0))?)
    }

    /// Up to `limit` events with `seq > since`, oldest first, of the given `kinds` (all when
    /// `None`), with the table's newest and oldest `seq` from the same snapshot.
    fn events_after(&self, since: i64, limit: usize, kinds: Option<&[&str]>) -> Result<EventPage> {
        let limit = crate::store::to_i64(limit);
        let events = match kinds {
            None => {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT seq, at_ms, type, session_id, subject, data FROM events
                     WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                )?;
                let rows = stmt.query_map(params![since, limit], event_from_row)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            }
            Some(kinds) => {
                // The type list is short and bounded by the protocol's enum; a JSON array
                // binds it as one parameter, so the statement is prepared once.
                let list = serde_json::to_string(kinds).unwrap_or_else(|_| "[]".to_owned());
                let mut stmt = self.conn.prepare_cached(
                    "SELECT seq, at_ms, type, session_id, subject, data FROM events
                     WHERE seq > ?1 AND type IN (SELECT value FROM json_each(?3))
                     ORDER BY seq LIMIT ?2",
                )?;
                let rows = stmt.query_map(params![since, limit, list], event_from_row)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            }
        };
        let mut stmt = self
            .conn
            .prepare_cached("SELECT max(seq), min(seq) FROM events")?;
        let (newest, oldest): (Option<i64>, Option<i64>) =
            stmt.query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(EventPage {
            events,
            newest_seq: newest.unwrap_or(0),
            oldest_seq: oldest,
        })
    }
}

impl EventsWrite for Tx<'_> {
    /// The `seq` the next appended event will get (inside a write transaction nobody else
    /// can append first): a lock's fencing token is the `seq` of its `lock.acquired` event,
    /// which records the token too. (The largest `seq` is never pruned, see the migration.)
    fn next_event_seq(&self) -> Result<i64> {
        Ok(self.newest_event_seq()? + 1)
    }

    /// Appends one event at `at_ms`; its `seq`. The store tells its commit listener about
    /// the newest `seq` once the transaction commits.
    fn append_event(&self, at_ms: i64, event: &NewEvent<'_>) -> Result<i64> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO events (at_ms, type, session_id, subject, data)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        stmt.execute(params![
            at_ms,
            event.kind,
            event.session_id,
            event.subject,
            event.data.to_string()
        ])?;
        let seq = self.conn.last_insert_rowid();
        debug_assert!(seq > 0);
        self.notes.appended(seq);
        Ok(seq)
    }

    /// Deletes events that are both older than `older_than_ms` and not among the newest
    /// `keep_newest`; how many.
    fn prune_events(&self, older_than_ms: i64, keep_newest: i64) -> Result<usize> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT seq FROM events ORDER BY seq DESC LIMIT 1 OFFSET ?1")?;
        let Some(boundary): Option<i64> = stmt
            .query_row([keep_newest.saturating_sub(1).max(0)], |r| r.get(0))
            .optional()?
        else {
            return Ok(0);
        };
        let mut stmt = self
            .conn
            .prepare_cached("DELETE FROM events WHERE seq < ?1 AND at_ms < ?2")?;
        Ok(stmt.execute(params![boundary, older_than_ms])?)
    }
}
