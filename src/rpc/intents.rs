//! `intent.declare`, `intent.update`, `intent.query`.

use super::convert;
use super::services::App;
use crate::coord::IntentStatus;
use crate::protocol::server::IntentMethods;
use crate::protocol::{
    ConflictReport, IntentDeclareParams, IntentDeclareResult, IntentQueryParams, IntentQueryResult,
    IntentUpdateParams, IntentUpdateParamsStatus, IntentUpdateResult, ProtocolError,
};

impl IntentMethods for App {
    async fn intent_declare(
        &self,
        params: IntentDeclareParams,
    ) -> Result<IntentDeclareResult, ProtocolError> {
        let files = params.files.clone();
        let at = self.vantage(Some(&params.session_id));
        let declared = self
            .inline_when_quick(
                |coord| coord.declare_is_quick(&files),
                move |coord| {
                    coord.declare_intent(
                        &at,
                        &params.description,
                        &params.files,
                        (!params.symbols.is_empty()).then_some(params.symbols.as_slice()),
                    )
                },
            )
            .await?;
        let items: Vec<_> = declared
            .conflicts
            .iter()
            .map(convert::conflict_item)
            .collect();
        Ok(IntentDeclareResult {
            intent_id: declared.intent.id,
            conflicts: ConflictReport {
                has_conflicts: !items.is_empty(),
                items,
            },
        })
    }

    async fn intent_update(
        &self,
        params: IntentUpdateParams,
    ) -> Result<IntentUpdateResult, ProtocolError> {
        let requested = match params.status {
            IntentUpdateParamsStatus::Active => IntentStatus::Active,
            IntentUpdateParamsStatus::Resolved => IntentStatus::Resolved,
            IntentUpdateParamsStatus::Abandoned => IntentStatus::Abandoned,
        };
        let intent = self
            .now(|coord| coord.update_intent(&params.intent_id, &params.session_id, requested))?;
        Ok(IntentUpdateResult {
            intent_id: intent.id,
            status: intent.status.as_str().to_owned(),
            updated_at: intent.updated_at_ms,
        })
    }

    async fn intent_query(
        &self,
        params: IntentQueryParams,
    ) -> Result<IntentQueryResult, ProtocolError> {
        let intents = self.now(|coord| {
            coord.query_intents(
                params.session_id.as_deref(),
                params.file.as_deref(),
                params.status.as_deref(),
            )
        })?;
        Ok(intents.iter().map(convert::intent_record).collect())
    }
}
