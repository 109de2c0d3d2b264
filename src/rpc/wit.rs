//! `ping`, `register` and `check-contracts`.

use super::convert;
use super::services::App;
use crate::protocol::server::WitMethods;
use crate::protocol::{
    CheckContractsParams, CheckContractsResult, PingParams, PingResult, ProtocolError,
    RegisterParams, RegisterResult,
};

impl WitMethods for App {
    async fn ping(&self, _params: PingParams) -> Result<PingResult, ProtocolError> {
        Ok(PingResult::Pong)
    }

    async fn register(&self, params: RegisterParams) -> Result<RegisterResult, ProtocolError> {
        let agent_id = self.now(|coord| {
            coord.register_with_pulse(
                &params.name,
                &params.session_id,
                params.pid,
                params.lease_ms,
            )
        })?;
        Ok(RegisterResult { agent_id })
    }

    async fn check_contracts(
        &self,
        params: CheckContractsParams,
    ) -> Result<CheckContractsResult, ProtocolError> {
        let violations = self
            .blocking(move |coord| {
                let files: Vec<(&str, &str)> = params
                    .files
                    .iter()
                    .map(|file| (file.path.as_str(), file.content.as_str()))
                    .collect();
                coord.check_contracts(&files)
            })
            .await?;
        Ok(CheckContractsResult {
            violations: violations.into_iter().map(convert::violation).collect(),
        })
    }
}
