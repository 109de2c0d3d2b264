//! Queries on `wit_daemons`: who serves this project, from which host, and their heartbeats
//! (docs/protocol.md 12.3).

use super::tx::Tx;
use crate::store::{DaemonBeat, DaemonsRead, DaemonsWrite, Result};

impl DaemonsRead for Tx<'_> {
    /// Hosts with a daemon whose last heartbeat is at or after `since_ms`.
    fn live_hosts(&self, since_ms: i64) -> Result<Vec<String>> {
        self.rows(
            "SELECT DISTINCT host_id FROM wit_daemons
             WHERE project = $1 AND last_beat_ms >= $2 ORDER BY host_id",
            &[&self.project, &since_ms],
            |row| row.try_get(0),
        )
    }
}

impl DaemonsWrite for Tx<'_> {
    /// Records a daemon's heartbeat (creating its row).
    fn beat_daemon(&self, beat: &DaemonBeat<'_>) -> Result<()> {
        self.execute(
            "INSERT INTO wit_daemons (project, daemon_id, host_id, pid, started_at_ms, last_beat_ms)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (project, daemon_id) DO UPDATE SET last_beat_ms = excluded.last_beat_ms",
            &[
                &self.project,
                &beat.daemon_id,
                &beat.host_id,
                &beat.pid,
                &beat.started_at_ms,
                &beat.now_ms,
            ],
        )?;
        Ok(())
    }

    /// Removes the row of a daemon that stops; whether it was there.
    fn delete_daemon(&self, daemon_id: &str) -> Result<bool> {
        Ok(self.execute(
            "DELETE FROM wit_daemons WHERE project = $1 AND daemon_id = $2",
            &[&self.project, &daemon_id],
        )? > 0)
    }

    /// Removes daemons whose last heartbeat is before `before_ms`; their ids.
    fn delete_stale_daemons(&self, before_ms: i64) -> Result<Vec<String>> {
        self.rows(
            "DELETE FROM wit_daemons WHERE project = $1 AND last_beat_ms < $2
             RETURNING daemon_id",
            &[&self.project, &before_ms],
            |row| row.try_get(0),
        )
    }
}
