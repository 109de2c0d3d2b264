//! `edit.preflight`.

use super::convert;
use super::services::App;
use crate::coord::preflight::spans::Edit;
use crate::coord::preflight::{Interest, NewText};
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
        let record = params.record.unwrap_or(false);
        let (file, content) = (params.file, params.content);
        let edits: Vec<Edit> = params
            .edits
            .into_iter()
            .map(|e| Edit {
                old_text: e.old_text,
                new_text: e.new_text,
                replace_all: e.replace_all.unwrap_or(false),
            })
            .collect();
        let quick = NewText::of(&edits, content.as_deref())
            .is_ok_and(|new| self.coord().preflight_is_quick(&file, new));
        let preflight = self
            .inline_when_quick(
                |_| quick,
                move |coord| {
                    let new = NewText::of(&edits, content.as_deref())?;
                    coord.preflight_while(&at, &file, new, record, &interest)
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
