//! `wit worktrees`: which worktrees of the repository will collide where, by symbol
//! (`worktree.forecast`).

use serde_json::json;

use super::context::Context;
use super::output::{CliError, Report};
use crate::protocol::WorktreePair;

/// Lists the pairs of worktrees whose merge would conflict, file by file with the symbols.
pub async fn forecast(ctx: &Context) -> Result<Report, CliError> {
    let result = ctx
        .call(|client| async move { client.worktree_forecast().await })
        .await?;
    Ok(Report::new(json!(result), forecast_text(&result.pairs)))
}

/// The human text: one block per pair, one row per colliding file.
fn forecast_text(pairs: &[WorktreePair]) -> String {
    if pairs.is_empty() {
        return "no worktrees collide".to_owned();
    }
    let mut text = String::new();
    for pair in pairs {
        let rows: Vec<Vec<String>> = pair
            .collisions
            .iter()
            .map(|c| {
                vec![
                    c.file.clone(),
                    if c.symbols.is_empty() {
                        "-".to_owned()
                    } else {
                        c.symbols.join(",")
                    },
                ]
            })
            .collect();
        text.push_str(&format!(
            "{} <-> {} will collide:\n{}\n",
            pair.a,
            pair.b,
            super::render::table(&["FILE", "SYMBOLS"], &rows)
        ));
    }
    text
}
