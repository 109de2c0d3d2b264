//! Queries on the `agents` table.

use rusqlite::{params, OptionalExtension};

use super::{Result, Tx};
use crate::store::{AgentsRead, AgentsWrite};

impl AgentsRead for Tx<'_> {
    /// The agent id and name registered for `session_id`.
    fn agent(&self, session_id: &str) -> Result<Option<(i64, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, name FROM agents WHERE session_id = ?1")?;
        Ok(stmt
            .query_row([session_id], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?)
    }
}

impl AgentsWrite for Tx<'_> {
    /// Registers `session_id` under `name`, or renames the existing registration; returns the
    /// agent id, which stays the same for a session.
    fn upsert_agent(&self, session_id: &str, name: &str, now_ms: i64) -> Result<i64> {
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO agents (session_id, name, registered_at, updated_at) VALUES (?1, ?2, ?3, ?3)
             ON CONFLICT (session_id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at
             RETURNING id",
        )?;
        Ok(stmt.query_row(params![session_id, name, now_ms], |row| row.get(0))?)
    }
}
