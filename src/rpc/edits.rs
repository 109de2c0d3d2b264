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
        // Parsing the changed regions may take a while on a large file: off the serving threads
        // unless the file and the edit are small. When the client goes away this future is
        // dropped, and the work on the blocking pool stops (issue 20.3).
        let interest = Interest::default();
        let _abandon_on_drop = AbandonOnDrop(interest.clone());
        let at = self.vantage(Some(&params.session_id));
        let file = params.file.clone();
        let written = written_bytes(&params);
        let preflight = self
            .inline_when_quick(
                |coord| coord.preflight_is_quick(&file, written),
                move |coord| {
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
                },
            )
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

/// The bytes the edit writes (its new texts, or the new content); `None` when `replaceAll`
/// makes that unbounded by the params alone.
fn written_bytes(params: &EditPreflightParams) -> Option<usize> {
    match &params.content {
        Some(content) => Some(content.len()),
        None if params.edits.iter().any(|e| e.replace_all == Some(true)) => None,
        None => Some(params.edits.iter().map(|e| e.new_text.len()).sum()),
    }
}
