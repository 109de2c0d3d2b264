//! Queries on `wit_events`: the log of changes (docs/protocol.md 9), `seq` per project.
//!
//! The next `seq` is the project's counter `wit_projects.next_seq`, read under the project
//! row lock when the write transaction begins and written back with its commit (see
//! `PgStore::write`): events are numbered without gaps and, since the writers of a project
//! are serialised by that lock, commit order is `seq` order, so a reader that saw `seq` n
//! never later finds a new event below n.

use postgres::Row;

use super::tx::{quote, quote_opt, Tx};
use crate::store::{Event, EventPage, EventsRead, EventsWrite, NewEvent, Result};

/// A page row: the table's newest and oldest `seq`, then the event's columns (NULL when the
/// page is empty).
type PageRow = (Option<i64>, Option<i64>, Option<Event>);

fn page_row(row: &Row) -> Result<PageRow, postgres::Error> {
    let newest: Option<i64> = row.try_get(0)?;
    let oldest: Option<i64> = row.try_get(1)?;
    let seq: Option<i64> = row.try_get(2)?;
    let event = match seq {
        Some(seq) => Some(Event {
            seq,
            at_ms: row.try_get(3)?,
            kind: row.try_get(4)?,
            session_id: row.try_get(5)?,
            subject: row.try_get(6)?,
            data: row.try_get(7)?,
        }),
        None => None,
    };
    Ok((newest, oldest, event))
}

impl EventsRead for Tx<'_> {
    /// The newest event `seq` (0 when none was ever written).
    fn newest_event_seq(&self) -> Result<i64> {
        if self.is_writer() {
            return Ok(self.next_seq.get() - 1);
        }
        let row = self
            .query_opt(
                "SELECT next_seq - 1 FROM wit_projects WHERE project = $1",
                &[&self.project],
            )?
            .ok_or_else(|| self.missing_project())?;
        row.try_get(0).map_err(|e| self.refused(&e))
    }

    /// Up to `limit` events with `seq > since`, oldest first, of the given `kinds` (all when
    /// `None`), with the table's newest and oldest `seq`: one statement, so one snapshot.
    fn events_after(&self, since: i64, limit: usize, kinds: Option<&[&str]>) -> Result<EventPage> {
        let limit = crate::store::to_i64(limit);
        let rows = match kinds {
            None => self.rows(
                "WITH page AS (
                     SELECT seq, at_ms, type, session_id, subject, data FROM wit_events
                     WHERE project = $1 AND seq > $2 ORDER BY seq LIMIT $3
                 )
                 SELECT b.newest, b.oldest, page.* FROM
                     (SELECT max(seq) AS newest, min(seq) AS oldest
                      FROM wit_events WHERE project = $1) b
                 LEFT JOIN page ON true ORDER BY page.seq",
                &[&self.project, &since, &limit],
                page_row,
            )?,
            Some(kinds) => self.rows(
                "WITH page AS (
                     SELECT seq, at_ms, type, session_id, subject, data FROM wit_events
                     WHERE project = $1 AND seq > $2 AND type = ANY($4) ORDER BY seq LIMIT $3
                 )
                 SELECT b.newest, b.oldest, page.* FROM
                     (SELECT max(seq) AS newest, min(seq) AS oldest
                      FROM wit_events WHERE project = $1) b
                 LEFT JOIN page ON true ORDER BY page.seq",
                &[&self.project, &since, &limit, &kinds],
                page_row,
            )?,
        };
        let (newest, oldest) = rows.first().map_or((None, None), |r| (r.0, r.1));
        Ok(EventPage {
            events: rows.into_iter().filter_map(|r| r.2).collect(),
            newest_seq: newest.unwrap_or(0),
            oldest_seq: oldest,
        })
    }
}

impl EventsWrite for Tx<'_> {
    /// The `seq` the next appended event will get (nobody else can append first: the
    /// project row is locked).
    fn next_event_seq(&self) -> Result<i64> {
        Ok(self.next_seq.get())
    }

    /// Appends one event at `at_ms`; its `seq`. The counter goes back to `wit_projects` with
    /// the commit.
    fn append_event(&self, at_ms: i64, event: &NewEvent<'_>) -> Result<i64> {
        let seq = self.next_seq.get();
        // Deferred: the seq is known here, and readers of events see them after the commit.
        self.defer(&format!(
            "INSERT INTO wit_events (project, seq, at_ms, type, session_id, subject, data)
             VALUES ({}, {seq}, {at_ms}, {}, {}, {}, {})",
            quote(self.project),
            quote(event.kind),
            quote_opt(event.session_id),
            quote(event.subject),
            quote(&event.data.to_string()),
        ));
        self.next_seq.set(seq + 1);
        self.notes.appended(seq);
        Ok(seq)
    }

    /// Deletes events that are both older than `older_than_ms` and not among the newest
    /// `keep_newest`; how many.
    fn prune_events(&self, older_than_ms: i64, keep_newest: i64) -> Result<usize> {
        let boundary: Option<i64> = self.row(
            "SELECT seq FROM wit_events WHERE project = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2",
            &[&self.project, &keep_newest.saturating_sub(1).max(0)],
            |row| row.try_get(0),
        )?;
        let Some(boundary) = boundary else {
            return Ok(0);
        };
        self.execute(
            "DELETE FROM wit_events WHERE project = $1 AND seq < $2 AND at_ms < $3",
            &[&self.project, &boundary, &older_than_ms],
        )
    }
}
