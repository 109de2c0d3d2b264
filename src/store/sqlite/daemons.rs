//! The `daemons` table: who serves this state, from which host, and their heartbeats
//! (docs/protocol.md 12.3).

use rusqlite::params;

use super::{DaemonBeat, Result, Tx};
use crate::store::{DaemonsRead, DaemonsWrite};

impl DaemonsRead for Tx<'_> {
    fn live_hosts(&self, since_ms: i64) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT host_id FROM daemons WHERE last_beat_ms >= ?1 ORDER BY host_id",
        )?;
        let rows = stmt.query_map([since_ms], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

impl DaemonsWrite for Tx<'_> {
    fn beat_daemon(&self, beat: &DaemonBeat<'_>) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO daemons (daemon_id, host_id, pid, started_at_ms, last_beat_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (daemon_id) DO UPDATE SET last_beat_ms = excluded.last_beat_ms",
        )?;
        stmt.execute(params![
            beat.daemon_id,
            beat.host_id,
            beat.pid,
            beat.started_at_ms,
            beat.now_ms
        ])?;
        Ok(())
    }

    fn delete_daemon(&self, daemon_id: &str) -> Result<bool> {
        let mut stmt = self
            .conn
            .prepare_cached("DELETE FROM daemons WHERE daemon_id = ?1")?;
        Ok(stmt.execute([daemon_id])? > 0)
    }

    fn delete_stale_daemons(&self, before_ms: i64) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("DELETE FROM daemons WHERE last_beat_ms < ?1 RETURNING daemon_id")?;
        let rows = stmt.query_map([before_ms], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}
