//! Queries on `wit_intents` and `wit_intent_ranges`.

use postgres::types::ToSql;
use postgres::Row;

use super::tx::{Parsed, Tx};
use crate::store::{
    decode_regions, encode_regions, Intent, IntentFilter, IntentKind, IntentRange, IntentStatus,
    IntentsRead, IntentsWrite, LineRegion, RangeHit, Result,
};

const INTENT_COLUMNS: &str = "i.id, i.session_id, i.description, i.files, i.symbols, \
     i.start_byte, i.end_byte, i.status, i.declared_at, i.updated_at, i.regions, i.kind";

fn intent_from_row(row: &Row) -> Result<Intent, postgres::Error> {
    Ok(Intent {
        id: row.try_get(0)?,
        session_id: row.try_get(1)?,
        description: row.try_get(2)?,
        files: row.try_get(3)?,
        symbols: row.try_get(4)?,
        start_byte: row.try_get(5)?,
        end_byte: row.try_get(6)?,
        status: row.try_get::<_, Parsed<IntentStatus>>(7)?.0,
        declared_at_ms: row.try_get(8)?,
        updated_at_ms: row.try_get(9)?,
        regions: decode_regions(row.try_get::<_, Option<&str>>(10)?),
        kind: row.try_get::<_, Parsed<IntentKind>>(11)?.0,
    })
}

fn range_hit_from_row(row: &Row) -> Result<RangeHit, postgres::Error> {
    let start: Option<i64> = row.try_get(5)?;
    let end: Option<i64> = row.try_get(6)?;
    Ok(RangeHit {
        intent_seq: row.try_get(0)?,
        intent_id: row.try_get(1)?,
        session_id: row.try_get(2)?,
        description: row.try_get(3)?,
        declared_at_ms: row.try_get(4)?,
        range: start.zip(end),
        regions: decode_regions(row.try_get::<_, Option<&str>>(7)?),
    })
}

impl IntentsRead for Tx<'_> {
    /// The intent with UUID `id`.
    fn intent(&self, id: &str) -> Result<Option<Intent>> {
        self.row(
            "SELECT i.id, i.session_id, i.description, i.files, i.symbols, i.start_byte,
                    i.end_byte, i.status, i.declared_at, i.updated_at, i.regions, i.kind
             FROM wit_intents i WHERE i.project = $1 AND i.id = $2",
            &[&self.project, &id],
            intent_from_row,
        )
    }

    /// The live ranges in `file` of intents of sessions other than `other_than_session`
    /// (through the `(project, file, live)` index), in declaration order.
    fn live_ranges_in_file(&self, file: &str, other_than_session: &str) -> Result<Vec<RangeHit>> {
        self.rows(
            "SELECT i.seq, i.id, i.session_id, i.description, i.declared_at, r.start_byte,
                    r.end_byte, i.regions
             FROM wit_intent_ranges r JOIN wit_intents i ON i.seq = r.intent_seq
             WHERE r.project = $1 AND r.file = $2 AND r.live AND i.session_id <> $3
             ORDER BY r.intent_seq, r.n",
            &[&self.project, &file, &other_than_session],
            range_hit_from_row,
        )
    }

    /// The live ranges in `file` of `session_id`'s own intents, in declaration order.
    fn own_live_ranges_in_file(&self, file: &str, session_id: &str) -> Result<Vec<RangeHit>> {
        self.rows(
            "SELECT i.seq, i.id, i.session_id, i.description, i.declared_at, r.start_byte,
                    r.end_byte, i.regions
             FROM wit_intent_ranges r JOIN wit_intents i ON i.seq = r.intent_seq
             WHERE r.project = $1 AND r.file = $2 AND r.live AND i.session_id = $3
             ORDER BY r.intent_seq, r.n",
            &[&self.project, &file, &session_id],
            range_hit_from_row,
        )
    }

    /// The live rows in `file` of every session's intents that have regions, in declaration
    /// order.
    fn live_regions_in_file(&self, file: &str) -> Result<Vec<RangeHit>> {
        self.rows(
            "SELECT i.seq, i.id, i.session_id, i.description, i.declared_at, r.start_byte,
                    r.end_byte, i.regions
             FROM wit_intent_ranges r JOIN wit_intents i ON i.seq = r.intent_seq
             WHERE r.project = $1 AND r.file = $2 AND r.live AND i.regions IS NOT NULL
             ORDER BY i.declared_at, i.seq, r.n",
            &[&self.project, &file],
            range_hit_from_row,
        )
    }

    /// Intents matching `filter`, ordered by declaration time, then creation order.
    fn intents(&self, filter: &IntentFilter<'_>) -> Result<Vec<Intent>> {
        let (sql, args) = intents_query(&self.project, filter);
        self.rows(&sql, &args, intent_from_row)
    }
}

impl IntentsWrite for Tx<'_> {
    /// Stores a new intent and its ranges.
    fn insert_intent(&self, intent: &Intent, ranges: &[IntentRange]) -> Result<()> {
        let row = self
            .query_opt(
                "INSERT INTO wit_intents (project, id, session_id, description, files, symbols,
                                          start_byte, end_byte, status, declared_at, updated_at,
                                          regions, kind)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING seq",
                &[
                    &self.project,
                    &intent.id,
                    &intent.session_id,
                    &intent.description,
                    &intent.files,
                    &intent.symbols,
                    &intent.start_byte,
                    &intent.end_byte,
                    &intent.status.as_str(),
                    &intent.declared_at_ms,
                    &intent.updated_at_ms,
                    &encode_regions(intent.regions.as_deref()),
                    &intent.kind.as_str(),
                ],
            )?
            .ok_or_else(|| self.missing_project())?;
        let seq: i64 = row.try_get(0).map_err(|e| self.refused(&e))?;
        if ranges.is_empty() {
            return Ok(());
        }
        // One statement for all ranges: the arrays are unnested in order.
        let files: Vec<&str> = ranges.iter().map(|r| r.file.as_str()).collect();
        let starts: Vec<Option<i64>> = ranges.iter().map(|r| r.range.map(|r| r.0)).collect();
        let ends: Vec<Option<i64>> = ranges.iter().map(|r| r.range.map(|r| r.1)).collect();
        self.execute(
            "INSERT INTO wit_intent_ranges (project, intent_seq, file, start_byte, end_byte, live)
             SELECT $1, $2, f, s, e, $6
             FROM unnest($3::text[], $4::bigint[], $5::bigint[]) WITH ORDINALITY AS u (f, s, e, o)
             ORDER BY o",
            &[
                &self.project,
                &seq,
                &files,
                &starts,
                &ends,
                &intent.status.is_live(),
            ],
        )?;
        Ok(())
    }

    /// Sets the status of intent `id`, its update time and its ranges' liveness; whether the
    /// intent exists.
    fn set_intent_status(&self, id: &str, status: IntentStatus, now_ms: i64) -> Result<bool> {
        let changed = self.query_opt(
            "WITH i AS (
                 UPDATE wit_intents SET status = $3, updated_at = $4
                 WHERE project = $1 AND id = $2 RETURNING seq
             ),
             r AS (
                 UPDATE wit_intent_ranges SET live = $5
                 WHERE intent_seq IN (SELECT seq FROM i)
             )
             SELECT count(*) FROM i",
            &[
                &self.project,
                &id,
                &status.as_str(),
                &now_ms,
                &status.is_live(),
            ],
        )?;
        let n: i64 = match changed {
            Some(row) => row.try_get(0).map_err(|e| self.refused(&e))?,
            None => 0,
        };
        Ok(n > 0)
    }

    /// Replaces the regions of intent `id` (`None`: file-level); whether the intent exists.
    fn set_intent_regions(&self, id: &str, regions: Option<&[LineRegion]>) -> Result<bool> {
        let n = self.execute(
            "UPDATE wit_intents SET regions = $3 WHERE project = $1 AND id = $2",
            &[&self.project, &id, &encode_regions(regions)],
        )?;
        Ok(n > 0)
    }

    fn set_intent_symbols(&self, id: &str, symbols: &str) -> Result<bool> {
        let n = self.execute(
            "UPDATE wit_intents SET symbols = $3 WHERE project = $1 AND id = $2",
            &[&self.project, &id, &symbols],
        )?;
        Ok(n > 0)
    }

    fn set_intent_description(&self, id: &str, description: &str) -> Result<bool> {
        let n = self.execute(
            "UPDATE wit_intents SET description = $3 WHERE project = $1 AND id = $2",
            &[&self.project, &id, &description],
        )?;
        Ok(n > 0)
    }
}

/// The SQL and arguments of [`Tx::intents`] for `filter` (one statement per combination of
/// filters, each prepared once, so each gets the plan of its index).
pub(super) fn intents_query<'f>(
    project: &'f &'f str,
    filter: &'f IntentFilter<'f>,
) -> (String, Vec<&'f (dyn ToSql + Sync)>) {
    let mut sql = format!("SELECT {INTENT_COLUMNS} FROM wit_intents i WHERE i.project = $1");
    let mut args: Vec<&(dyn ToSql + Sync)> = vec![project];
    let mut next = 2;
    let mut placeholder = || {
        let p = format!("${next}");
        next += 1;
        p
    };
    match &filter.status {
        Some(status) => {
            sql.push_str(&format!(" AND i.status = {}", placeholder()));
            args.push(status_str(status));
        }
        None => sql.push_str(" AND i.status IN ('declared', 'active')"),
    }
    if let Some(session) = &filter.session_id {
        sql.push_str(&format!(" AND i.session_id = {}", placeholder()));
        args.push(session);
    }
    if let Some(file) = &filter.file {
        sql.push_str(&format!(
            " AND i.seq IN (SELECT intent_seq FROM wit_intent_ranges
                            WHERE project = $1 AND file = {})",
            placeholder()
        ));
        args.push(file);
    }
    sql.push_str(" ORDER BY i.declared_at, i.seq");
    (sql, args)
}

/// The status's spelling, borrowed for as long as the status is.
fn status_str(status: &IntentStatus) -> &'static &'static str {
    match status {
        IntentStatus::Declared => &"declared",
        IntentStatus::Active => &"active",
        IntentStatus::Resolved => &"resolved",
        IntentStatus::Abandoned => &"abandoned",
    }
}
