//! `contract.propose`, `contract.respond`, `contract.query`.

use super::convert;
use super::services::App;
use crate::coord::ContractStatus;
use crate::protocol::server::ContractMethods;
use crate::protocol::{
    ContractProposeParams, ContractProposeResult, ContractQueryParams, ContractQueryResult,
    ContractRespondParams, ContractRespondResult, ContractRespondResultStatus, ProtocolError,
};

impl ContractMethods for App {
    async fn contract_propose(
        &self,
        params: ContractProposeParams,
    ) -> Result<ContractProposeResult, ProtocolError> {
        let contract = self
            .blocking(move |coord| coord.propose_contract(&params.session_id, &params.symbol_path))
            .await?;
        Ok(ContractProposeResult {
            contract_id: contract.id,
            symbol_path: contract.symbol_path,
            signature: contract.signature,
        })
    }

    async fn contract_respond(
        &self,
        params: ContractRespondParams,
    ) -> Result<ContractRespondResult, ProtocolError> {
        let contract = self.now(|coord| {
            coord.respond_contract(&params.contract_id, &params.session_id, params.accept)
        })?;
        let status = match contract.status {
            ContractStatus::Accepted => ContractRespondResultStatus::Accepted,
            _ => ContractRespondResultStatus::Rejected,
        };
        Ok(ContractRespondResult {
            contract_id: contract.id,
            status,
        })
    }

    async fn contract_query(
        &self,
        params: ContractQueryParams,
    ) -> Result<ContractQueryResult, ProtocolError> {
        let contracts = self.now(|coord| {
            coord.query_contracts(params.symbol_path.as_deref(), params.status.as_deref())
        })?;
        Ok(contracts.iter().map(convert::contract_record).collect())
    }
}
