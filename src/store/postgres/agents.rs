//! Queries on `wit_agents`.

use super::tx::Tx;
use crate::store::{AgentsRead, AgentsWrite, Result};

impl AgentsRead for Tx<'_> {
    /// The agent id and name registered for `session_id`.
    fn agent(&self, session_id: &str) -> Result<Option<(i64, String)>> {
        self.row(
            "SELECT id, name FROM wit_agents WHERE project = $1 AND session_id = $2",
            &[&self.project, &session_id],
            |row| Ok((row.try_get(0)?, row.try_get(1)?)),
        )
    }
}

impl AgentsWrite for Tx<'_> {
    /// Registers `session_id` under `name`, or renames the existing registration; returns the
    /// agent id, which stays the same for a session. New ids come from the project's counter
    /// (under the project row lock), so they are never reused, like SQLite's AUTOINCREMENT.
    fn upsert_agent(&self, session_id: &str, name: &str, now_ms: i64) -> Result<i64> {
        let renamed = self.query_opt(
            "UPDATE wit_agents SET name = $3, updated_at = $4
             WHERE project = $1 AND session_id = $2 RETURNING id",
            &[&self.project, &session_id, &name, &now_ms],
        )?;
        let row = match renamed {
            Some(row) => row,
            None => self
                .query_opt(
                    "WITH n AS (
                         UPDATE wit_projects SET last_agent_id = last_agent_id + 1
                         WHERE project = $1 RETURNING last_agent_id
                     )
                     INSERT INTO wit_agents (project, session_id, id, name, registered_at, updated_at)
                     SELECT $1, $2, n.last_agent_id, $3, $4, $4 FROM n RETURNING id",
                    &[&self.project, &session_id, &name, &now_ms],
                )?
                .ok_or_else(|| self.missing_project())?,
        };
        row.try_get(0).map_err(|e| self.refused(&e))
    }
}
