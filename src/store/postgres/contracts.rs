//! Queries on `wit_contracts`.

use postgres::Row;

use super::tx::{Parsed, Tx};
use crate::store::{Contract, ContractStatus, ContractsRead, ContractsWrite, Result};

fn contract_from_row(row: &Row) -> Result<Contract, postgres::Error> {
    Ok(Contract {
        id: row.try_get(0)?,
        proposer_session_id: row.try_get(1)?,
        symbol_path: row.try_get(2)?,
        file: row.try_get(3)?,
        name: row.try_get(4)?,
        signature: row.try_get(5)?,
        status: row.try_get::<_, Parsed<ContractStatus>>(6)?.0,
        responder_session_id: row.try_get(7)?,
        proposed_at_ms: row.try_get(8)?,
        responded_at_ms: row.try_get(9)?,
    })
}

impl ContractsRead for Tx<'_> {
    /// The contract with UUID `id`.
    fn contract(&self, id: &str) -> Result<Option<Contract>> {
        self.row(
            "SELECT id, proposer, symbol_path, file, name, signature, status, responder,
                    proposed_at, responded_at
             FROM wit_contracts WHERE project = $1 AND id = $2",
            &[&self.project, &id],
            contract_from_row,
        )
    }

    /// Contracts with exactly this symbol path and/or status (each filter optional), ordered
    /// by proposal time, then creation order. One statement per combination of filters.
    fn contracts(
        &self,
        symbol_path: Option<&str>,
        status: Option<ContractStatus>,
    ) -> Result<Vec<Contract>> {
        const SELECT: &str = "SELECT id, proposer, symbol_path, file, name, signature, status, \
             responder, proposed_at, responded_at FROM wit_contracts WHERE project = $1";
        match (symbol_path, status.map(ContractStatus::as_str)) {
            (Some(path), Some(status)) => self.rows(
                &format!("{SELECT} AND symbol_path = $2 AND status = $3 ORDER BY proposed_at, seq"),
                &[&self.project, &path, &status],
                contract_from_row,
            ),
            (Some(path), None) => self.rows(
                &format!("{SELECT} AND symbol_path = $2 ORDER BY proposed_at, seq"),
                &[&self.project, &path],
                contract_from_row,
            ),
            (None, Some(status)) => self.rows(
                &format!("{SELECT} AND status = $2 ORDER BY proposed_at, seq"),
                &[&self.project, &status],
                contract_from_row,
            ),
            (None, None) => self.rows(
                &format!("{SELECT} ORDER BY proposed_at, seq"),
                &[&self.project],
                contract_from_row,
            ),
        }
    }

    /// The accepted contracts on symbols of `file` (through the `(project, file, status)`
    /// index), ordered by proposal.
    fn accepted_contracts_in_file(&self, file: &str) -> Result<Vec<Contract>> {
        self.rows(
            "SELECT id, proposer, symbol_path, file, name, signature, status, responder,
                    proposed_at, responded_at
             FROM wit_contracts WHERE project = $1 AND file = $2 AND status = 'accepted'
             ORDER BY proposed_at, seq",
            &[&self.project, &file],
            contract_from_row,
        )
    }
}

impl ContractsWrite for Tx<'_> {
    /// Stores a new contract.
    fn insert_contract(&self, contract: &Contract) -> Result<()> {
        self.execute(
            "INSERT INTO wit_contracts (project, id, proposer, symbol_path, file, name, signature,
                                        status, responder, proposed_at, responded_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            &[
                &self.project,
                &contract.id,
                &contract.proposer_session_id,
                &contract.symbol_path,
                &contract.file,
                &contract.name,
                &contract.signature,
                &contract.status.as_str(),
                &contract.responder_session_id,
                &contract.proposed_at_ms,
                &contract.responded_at_ms,
            ],
        )?;
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
        Ok(self.execute(
            "UPDATE wit_contracts SET status = $3, responder = $4, responded_at = $5
             WHERE project = $1 AND id = $2",
            &[&self.project, &id, &status.as_str(), &responder, &now_ms],
        )? > 0)
    }
}
