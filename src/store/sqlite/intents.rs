//! Queries on the `intents` and `intent_ranges` tables.

use rusqlite::{params, OptionalExtension, Row, ToSql};

use super::{Intent, IntentFilter, IntentRange, IntentStatus, LineRegion, RangeHit, Result, Tx};
use crate::store::{decode_regions, encode_regions, IntentsRead, IntentsWrite};

const INTENT_COLUMNS: &str = "i.id, i.session_id, i.description, i.files, i.symbols, \
     i.start_byte, i.end_byte, i.status, i.declared_at, i.updated_at, i.regions, i.kind";

fn intent_from_row(row: &Row<'_>) -> rusqlite::Result<Intent> {
    Ok(Intent {
        id: row.get(0)?,
        session_id: row.get(1)?,
        description: row.get(2)?,
        files: row.get(3)?,
        symbols: row.get(4)?,
        start_byte: row.get(5)?,
        end_byte: row.get(6)?,
        status: row.get(7)?,
        declared_at_ms: row.get(8)?,
        updated_at_ms: row.get(9)?,
        regions: decode_regions(row.get::<_, Option<String>>(10)?.as_deref()),
        kind: row.get(11)?,
    })
}

fn range_hit_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RangeHit> {
    let start: Option<i64> = row.get(5)?;
    let end: Option<i64> = row.get(6)?;
    Ok(RangeHit {
        intent_seq: row.get(0)?,
        intent_id: row.get(1)?,
        session_id: row.get(2)?,
        description: row.get(3)?,
        declared_at_ms: row.get(4)?,
        range: start.zip(end),
        regions: decode_regions(row.get::<_, Option<String>>(7)?.as_deref()),
    })
}

impl IntentsRead for Tx<'_> {
    /// The intent with UUID `id`.
    fn intent(&self, id: &str) -> Result<Option<Intent>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {INTENT_COLUMNS} FROM intents i WHERE i.id = ?1"
        ))?;
        Ok(stmt.query_row([id], intent_from_row).optional()?)
    }

    /// The ranges in `file` of declared or active intents of sessions other than
    /// `other_than_session` (through the `(file, live)` index: the cost depends on the live
    /// intents of that file only).
    fn live_ranges_in_file(&self, file: &str, other_than_session: &str) -> Result<Vec<RangeHit>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT i.seq, i.id, i.session_id, i.description, i.declared_at, r.start_byte, r.end_byte,
                    i.regions
             FROM intent_ranges r JOIN intents i ON i.seq = r.intent_seq
             WHERE r.file = ?1 AND r.live = 1 AND i.session_id <> ?2",
        )?;
        let rows = stmt.query_map(params![file, other_than_session], range_hit_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The ranges in `file` of `session_id`'s own declared or active intents.
    fn own_live_ranges_in_file(&self, file: &str, session_id: &str) -> Result<Vec<RangeHit>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT i.seq, i.id, i.session_id, i.description, i.declared_at, r.start_byte, r.end_byte,
                    i.regions
             FROM intent_ranges r JOIN intents i ON i.seq = r.intent_seq
             WHERE r.file = ?1 AND r.live = 1 AND i.session_id = ?2",
        )?;
        let rows = stmt.query_map(params![file, session_id], range_hit_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The rows in `file` of every session's declared or active intents that have regions.
    fn live_regions_in_file(&self, file: &str) -> Result<Vec<RangeHit>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT i.seq, i.id, i.session_id, i.description, i.declared_at, r.start_byte, r.end_byte,
                    i.regions
             FROM intent_ranges r JOIN intents i ON i.seq = r.intent_seq
             WHERE r.file = ?1 AND r.live = 1 AND i.regions IS NOT NULL
             ORDER BY i.declared_at, i.seq",
        )?;
        let rows = stmt.query_map(params![file], range_hit_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Intents matching `filter`, ordered by declaration time, then creation order.
    fn intents(&self, filter: &IntentFilter<'_>) -> Result<Vec<Intent>> {
        let (sql, args) = intents_query(filter);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(args.as_slice(), intent_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

impl IntentsWrite for Tx<'_> {
    /// Stores a new intent and its ranges (every listed file has at least one row: its ranges,
    /// or one file-level row).
    fn insert_intent(&self, intent: &Intent, ranges: &[IntentRange]) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO intents (id, session_id, description, files, symbols, start_byte, end_byte,
                                  status, declared_at, updated_at, regions, kind)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?;
        stmt.execute(params![
            intent.id,
            intent.session_id,
            intent.description,
            intent.files,
            intent.symbols,
            intent.start_byte,
            intent.end_byte,
            intent.status,
            intent.declared_at_ms,
            intent.updated_at_ms,
            encode_regions(intent.regions.as_deref()),
            intent.kind,
        ])?;
        let seq = self.conn.last_insert_rowid();
        let live = intent.status.is_live();
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO intent_ranges (intent_seq, file, start_byte, end_byte, live)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for range in ranges {
            let (start, end) = range.range.unzip();
            stmt.execute(params![seq, range.file, start, end, live])?;
        }
        Ok(())
    }

    /// Sets the status of intent `id` and its update time, and whether its ranges take part
    /// in overlap detection; whether the intent exists.
    fn set_intent_status(&self, id: &str, status: IntentStatus, now_ms: i64) -> Result<bool> {
        let mut stmt = self.conn.prepare_cached(
            "UPDATE intents SET status = ?2, updated_at = ?3 WHERE id = ?1 RETURNING seq",
        )?;
        let Some(seq) = stmt
            .query_row(params![id, status, now_ms], |row| row.get::<_, i64>(0))
            .optional()?
        else {
            return Ok(false);
        };
        let mut stmt = self
            .conn
            .prepare_cached("UPDATE intent_ranges SET live = ?2 WHERE intent_seq = ?1")?;
        stmt.execute(params![seq, status.is_live()])?;
        Ok(true)
    }

    /// Replaces the regions of intent `id` (`None`: file-level); whether the intent exists.
    fn set_intent_regions(&self, id: &str, regions: Option<&[LineRegion]>) -> Result<bool> {
        let mut stmt = self
            .conn
            .prepare_cached("UPDATE intents SET regions = ?2 WHERE id = ?1")?;
        Ok(stmt.execute(params![id, encode_regions(regions)])? > 0)
    }

    fn set_intent_symbols(&self, id: &str, symbols: &str) -> Result<bool> {
        let mut stmt = self
            .conn
            .prepare_cached("UPDATE intents SET symbols = ?2 WHERE id = ?1")?;
        Ok(stmt.execute(params![id, symbols])? > 0)
    }

    fn set_intent_description(&self, id: &str, description: &str) -> Result<bool> {
        let mut stmt = self
            .conn
            .prepare_cached("UPDATE intents SET description = ?2 WHERE id = ?1")?;
        Ok(stmt.execute(params![id, description])? > 0)
    }
}

/// The SQL and arguments of [`IntentsRead::intents`](crate::store::IntentsRead::intents) for `filter`.
pub(super) fn intents_query<'f>(filter: &'f IntentFilter<'_>) -> (String, Vec<&'f dyn ToSql>) {
    // With a file or session filter, that filter's index is the selective one: the unary `+`
    // keeps SQLite from walking the status index over every live intent instead.
    let status_column = if filter.file.is_some() || filter.session_id.is_some() {
        "+i.status"
    } else {
        "i.status"
    };
    let mut sql = format!("SELECT {INTENT_COLUMNS} FROM intents i WHERE {status_column}");
    let mut args: Vec<&dyn ToSql> = Vec::new();
    match &filter.status {
        Some(status) => {
            sql.push_str(" = ?");
            args.push(status);
        }
        None => sql.push_str(" IN ('declared', 'active')"),
    }
    if let Some(session) = &filter.session_id {
        sql.push_str(" AND i.session_id = ?");
        args.push(session);
    }
    if let Some(file) = &filter.file {
        sql.push_str(" AND i.seq IN (SELECT intent_seq FROM intent_ranges WHERE file = ?)");
        args.push(file);
    }
    sql.push_str(" ORDER BY i.declared_at, i.seq");
    (sql, args)
}
