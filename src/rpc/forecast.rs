//! `worktree.forecast` (PROTOCOL-NOTES 14.5): which worktrees of the repository will collide
//! where, by symbol. Git says where merging two worktrees' states would conflict
//! ([`crate::worktrees::forecast`]); this names the symbols the changed lines touch, in each
//! side's text.

use std::path::PathBuf;

use super::errors::task_failed;
use super::services::App;
use crate::analysis::{analyze, Language};
use crate::protocol::server::WorktreeMethods;
use crate::protocol::{
    LineRegion, ProtocolError, WorktreeCollision, WorktreeForecastParams, WorktreeForecastResult,
    WorktreePair,
};
use crate::worktrees::forecast::{conflicts_of_all, states_of, Conflict};
use crate::worktrees::{all_worktrees, repository_of};

impl WorktreeMethods for App {
    async fn worktree_forecast(
        &self,
        _params: WorktreeForecastParams,
    ) -> Result<WorktreeForecastResult, ProtocolError> {
        let root = self.main_root();
        let pairs = tokio::task::spawn_blocking(move || forecast(root))
            .await
            .map_err(task_failed)?
            .map_err(ProtocolError::internal)?;
        Ok(WorktreeForecastResult { pairs })
    }
}

/// The pairs of worktrees of the repository at `root` whose merge would conflict.
fn forecast(root: Option<PathBuf>) -> Result<Vec<WorktreePair>, String> {
    let Some(repository) = root.as_deref().and_then(repository_of) else {
        return Ok(Vec::new());
    };
    let roots = all_worktrees(&repository);
    if roots.len() < 2 {
        return Ok(Vec::new());
    }
    let states = states_of(&roots).map_err(|e| e.to_string())?;
    let found = conflicts_of_all(&repository.main_root, &states).map_err(|e| e.to_string())?;
    let pairs = found
        .into_iter()
        .map(|(i, j, conflicts)| WorktreePair {
            a: states[i].root.display().to_string(),
            b: states[j].root.display().to_string(),
            collisions: conflicts.iter().map(collision).collect(),
            related: Vec::new(),
        })
        .collect();
    Ok(pairs)
}

fn collision(conflict: &Conflict) -> WorktreeCollision {
    let mut symbols = touched(
        &conflict.file,
        conflict.text_a.as_deref(),
        &conflict.lines_a,
    );
    symbols.extend(touched(
        &conflict.file,
        conflict.text_b.as_deref(),
        &conflict.lines_b,
    ));
    symbols.sort();
    symbols.dedup();
    let regions = |lines: &[(i64, i64)]| -> Vec<LineRegion> {
        lines
            .iter()
            .map(|&(start_line, end_line)| LineRegion {
                start_line,
                end_line,
            })
            .collect()
    };
    WorktreeCollision {
        file: conflict.file.clone(),
        symbols,
        lines_a: regions(&conflict.lines_a),
        lines_b: regions(&conflict.lines_b),
    }
}

/// The innermost symbols of `text` (as `file`'s language) whose lines meet `lines`.
fn touched(file: &str, text: Option<&str>, lines: &[(i64, i64)]) -> Vec<String> {
    let (Some(text), Some(language)) = (text, Language::for_path(file)) else {
        return Vec::new();
    };
    let analysis = analyze(language, text);
    let line_of = |byte: usize| -> i64 {
        let before = text.get(..byte).unwrap_or(text);
        i64::try_from(before.matches('\n').count()).unwrap_or(i64::MAX) + 1
    };
    let spans: Vec<(&str, i64, i64)> = analysis
        .symbols
        .iter()
        .map(|s| {
            let end = s.end_byte.saturating_sub(1).max(s.start_byte);
            (
                s.qualified_name.as_str(),
                line_of(s.start_byte),
                line_of(end),
            )
        })
        .filter(|(_, first, last)| lines.iter().any(|&(a, b)| a <= *last && *first <= b))
        .collect();
    // Innermost: a symbol containing another touched one gives way to it.
    spans
        .iter()
        .filter(|(name, first, last)| {
            !spans.iter().any(|(other, f, l)| {
                other != name && *first <= *f && *l <= *last && (f, l) != (first, last)
            })
        })
        .map(|(name, _, _)| (*name).to_owned())
        .collect()
}
