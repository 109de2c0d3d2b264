//! `work.begin`, `work.end`, `work.owners`, `work.changes` (docs/protocol.md 15.2, 15.7).

use super::services::App;
use crate::coord::iso_millis;
use crate::coord::ownership::SeenHunk;
use crate::protocol::server::WorkMethods;
use crate::protocol::{
    FileChanges, LineRegion, OwnedHunk, OwnedLines, ProtocolError, WindowChange, WorkBeginParams,
    WorkBeginResult, WorkChangesParams, WorkChangesResult, WorkEndParams, WorkEndResult,
    WorkOwnersParams, WorkOwnersResult,
};

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn wire_hunk(seen: SeenHunk) -> OwnedHunk {
    OwnedHunk {
        old_start: to_i64(seen.hunk.old_start),
        old_lines: to_i64(seen.hunk.old_lines),
        new_start: to_i64(seen.hunk.new_start),
        new_lines: to_i64(seen.hunk.new_lines),
        session_ids: seen.hunk.mark.owners,
        mine: seen.mine,
        others: seen.others,
    }
}

impl WorkMethods for App {
    async fn work_begin(&self, params: WorkBeginParams) -> Result<WorkBeginResult, ProtocolError> {
        let window_id = self.now(|coord| {
            coord.open_window(
                &coord.vantage(Some(&params.session_id)),
                &params.tool,
                params.file.as_deref(),
                params.edits.iter().map(|e| e.new_text.clone()).collect(),
                params.ttl_ms,
            )
        })?;
        Ok(WorkBeginResult { window_id })
    }

    async fn work_end(&self, params: WorkEndParams) -> Result<WorkEndResult, ProtocolError> {
        // A flush not answered in time leaves the window open to what the observer reads
        // up to that flush (the change is the session's, though this answer misses it).
        let unread = self.tree_flush().flush().await;
        let changed = self
            .now(|coord| Ok(coord.close_window(&params.session_id, &params.window_id, unread)))?;
        Ok(WorkEndResult {
            changed: changed
                .into_iter()
                .map(|(file, regions)| WindowChange {
                    file,
                    regions: regions
                        .into_iter()
                        .map(|r| LineRegion {
                            start_line: r.start_line,
                            end_line: r.end_line,
                        })
                        .collect(),
                })
                .collect(),
        })
    }

    async fn work_owners(
        &self,
        params: WorkOwnersParams,
    ) -> Result<WorkOwnersResult, ProtocolError> {
        let _ = self.tree_flush().flush().await;
        let view = self.now(|coord| coord.file_owners(&coord.vantage(None), &params.file))?;
        Ok(WorkOwnersResult {
            file: view.file,
            binary: view.binary,
            lines: view
                .lines
                .into_iter()
                .map(|l| OwnedLines {
                    start_line: to_i64(l.start_line),
                    end_line: to_i64(l.end_line),
                    session_ids: l.mark.owners,
                    since: iso_millis(l.mark.at_ms),
                })
                .collect(),
        })
    }

    async fn work_changes(
        &self,
        params: WorkChangesParams,
    ) -> Result<WorkChangesResult, ProtocolError> {
        let _ = self.tree_flush().flush().await;
        let at = self.vantage(params.session_id.as_deref());
        let files = self.blocking(move |coord| coord.owned_changes(&at, &params.files));
        let files = files.await?;
        Ok(WorkChangesResult {
            files: files
                .into_iter()
                .map(|f| FileChanges {
                    file: f.file,
                    binary: f.binary,
                    hunks: f.hunks.into_iter().map(wire_hunk).collect(),
                })
                .collect(),
        })
    }
}
