//! `edit.preflight`.

use super::convert;
use super::services::App;
use crate::coord::preflight::spans::Edit;
use crate::coord::preflight::{Interest, NewText};
use crate::coord::CoordError;
use crate::protocol::server::EditMethods;
use crate::protocol::{EditPreflightParams, EditPreflightResult, ProtocolError};

impl EditMethods for App {
    async fn edit_preflight(
        &self,
        params: EditPreflightParams,
    ) -> Result<EditPreflightResult, ProtocolError> {
        // Parsing the changed regions may take a while on a large file: off the serving threads.
        // When the client goes away this future is dropped, and the work stops (issue 20.3).
        let interest = Interest::default();
        let _abandon_on_drop = AbandonOnDrop(interest.clone());
        let at = self.vantage(Some(&params.session_id));
        let preflight = self
            .blocking(move |coord| {
                let edits: Vec<Edit> = params
                    .edits
                    .into_iter()
                    .map(|e| Edit {
                        old_text: e.old_text,
                        new_text: e.new_text,
                        replace_all: e.replace_all.unwrap_or(false),
                    })
                    .collect();
                // The decoder refuses an empty `edits`, so empty means absent here.
                let new = match (edits.is_empty(), params.content.as_deref()) {
                    (false, None) => NewText::Edits(&edits),
                    (true, Some(content)) => NewText::Content(content),
                    _ => {
                        return Err(CoordError::InvalidInput {
                            field: "edits",
                            message: "give exactly one of edits and content".into(),
                        })
                    }
                };
                coord.preflight_while(
                    &at,
                    &params.file,
                    new,
                    params.record.unwrap_or(false),
                    &interest,
                )
            })
            .await?;
        Ok(EditPreflightResult {
            applies: preflight.applies,
            reason: preflight.reason,
            symbols: preflight.symbols,
            conflicts: preflight
                .conflicts
                .iter()
                .map(convert::conflict_item)
                .collect(),
            violations: preflight
                .violations
                .into_iter()
                .map(convert::violation)
                .collect(),
            related: preflight
                .related
                .iter()
                .map(convert::related_item)
                .collect(),
        })
    }
}

/// Marks the request's work abandoned when its future is dropped before it finished.
struct AbandonOnDrop(Interest);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.abandon();
    }
}
