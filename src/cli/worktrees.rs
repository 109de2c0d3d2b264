//! `wit worktrees`: which worktrees of the repository will collide where, by symbol
//! (`worktree.forecast`).

use serde_json::json;

use super::context::Context;
use super::output::{CliError, Report};
use crate::protocol::{RelatedItem, WorktreePair};

/// Lists the pairs of worktrees whose changes meet: where their merge would conflict, file
/// by file with the symbols, and what is related.
pub async fn forecast(ctx: &Context) -> Result<Report, CliError> {
    let result = ctx
        .call(|client| async move { client.worktree_forecast().await })
        .await?;
    Ok(Report::new(json!(result), forecast_text(&result.pairs)))
}

/// The human text: one block per pair, one row per colliding file, then one line per
/// related item (context: the two merge cleanly there).
fn forecast_text(pairs: &[WorktreePair]) -> String {
    if pairs.is_empty() {
        return "no worktrees collide or relate".to_owned();
    }
    let mut text = String::new();
    for pair in pairs {
        if !pair.collisions.is_empty() {
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
        if !pair.related.is_empty() {
            text.push_str(&format!(
                "{} <-> {} related (they merge cleanly there):\n",
                pair.a, pair.b
            ));
            for item in &pair.related {
                text.push_str(&format!("  {}\n", related_text(item)));
            }
        }
    }
    text
}

/// One related item across two worktrees: what the second worktree's change touches that
/// the first's also works in (13.5).
fn related_text(item: &RelatedItem) -> String {
    match item {
        RelatedItem::SameSymbol { symbol_path, .. } => {
            format!("SAME_SYMBOL  {symbol_path}: both change it, in lines apart")
        }
        RelatedItem::Coupled {
            symbol_path,
            other_symbol,
            relation,
            ..
        } => format!("COUPLED      {symbol_path} {relation} {other_symbol}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{RelatedItemRelation, WorktreeCollision};

    #[test]
    fn collisions_and_related_items_are_shown() {
        let pair = WorktreePair {
            a: "/r/a".into(),
            b: "/r/b".into(),
            collisions: vec![WorktreeCollision {
                file: "x.py".into(),
                symbols: vec!["f".into()],
                lines_a: Vec::new(),
                lines_b: Vec::new(),
            }],
            related: vec![RelatedItem::Coupled {
                symbol_path: "y.py:g".into(),
                other_symbol: "x.py:f".into(),
                relation: RelatedItemRelation::Calls,
                session_id: "worktree:/r/a".into(),
                intent_id: "i".into(),
            }],
        };
        let text = forecast_text(&[pair]);
        assert!(text.contains("/r/a <-> /r/b will collide:"), "{text}");
        assert!(text.contains("x.py"), "{text}");
        assert!(text.contains("COUPLED      y.py:g calls x.py:f"), "{text}");
        assert_eq!(forecast_text(&[]), "no worktrees collide or relate");
    }
}
