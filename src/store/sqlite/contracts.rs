//! Queries on the `contracts` table.

use rusqlite::{params, OptionalExtension, Row, ToSql};

use super::{Contract, ContractStatus, Result, Tx};
use crate::store::{ContractsRead, ContractsWrite};

const CONTRACT_COLUMNS: &str = "id, proposer, symbol_path, file, name, signature, status, \
     responder, proposed_at, responded_at";

fn contract_from_row(row: &Row<'_>) -> rusqlite::Result<Contract> {
    Ok(Contract {
        id: row.get(0)?,
        proposer_session_id: row.get(1)?,
        symbol_path: row.get(2)?,
        file: row.get(3)?,
        name: row.get(4)?,
        signature: row.get(5)?,
        status: row.get(6)?,
        responder_session_id: row.get(7)?,
        proposed_at_ms: row.get(8)?,
        responded_at_ms: row.get(9)?,
    })
}

impl ContractsRead for Tx<'_> {
    /// The contract with UUID `id`.
    fn contract(&self, id: &str) -> Result<Option<Contract>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {CONTRACT_COLUMNS} FROM contracts WHERE id = ?1"
        ))?;
        Ok(stmt.query_row([id], contract_from_row).optional()?)
    }

    /// Contracts with exactly this symbol path and/or status (each filter optional), ordered by
    /// proposal time, then creation order.
    fn contracts(
        &self,
        symbol_path: Option<&str>,
        status: Option<ContractStatus>,
    ) -> Result<Vec<Contract>> {
        let mut sql = format!("SELECT {CONTRACT_COLUMNS} FROM contracts WHERE 1");
        let mut args: Vec<&dyn ToSql> = Vec::new();
        if let Some(path) = &symbol_path {
            sql.push_str(" AND symbol_path = ?");
            args.push(path);
        }
        if let Some(status) = &status {
            sql.push_str(" AND status = ?");
            args.push(status);
        }
        sql.push_str(" ORDER BY proposed_at, seq");
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(args.as_slice(), contract_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The accepted contracts on symbols of `file` (through the `(file, status)` index),
    /// ordered by proposal.
    fn accepted_contracts_in_file(&self, file: &str) -> Result<Vec<Contract>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {CONTRACT_COLUMNS} FROM contracts WHERE file = ?1 AND status = 'accepted'
             ORDER BY proposed_at, seq"
        ))?;
        let rows = stmt.query_map([file], contract_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

impl ContractsWrite for Tx<'_> {
    /// Stores a new contract.
    fn insert_contract(&self, contract: &Contract) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "INSERT INTO contracts ({CONTRACT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        ))?;
        stmt.execute(params![
            contract.id,
            contract.proposer_session_id,
            contract.symbol_path,
            contract.file,
            contract.name,
            contract.signature,
            contract.status,
            contract.responder_session_id,
            contract.proposed_at_ms,
            contract.responded_at_ms,
        ])?;
        Ok(())
    }

    /// Records the answer to contract `id`; whether it exists.
    fn set_contract_response(
        &self,
        id: &str,
        status: ContractStatus,
        responder: &str,
        now_ms: i64,
    ) -> Result<bool> {
        let mut stmt = self.conn.prepare_cached(
            "UPDATE contracts SET status = ?2, responder = ?3, responded_at = ?4 WHERE id = ?1",
        )?;
        Ok(stmt.execute(params![id, status, responder, now_ms])? > 0)
    }
}
