//! `worktree.forecast` (docs/protocol.md 14.5): which worktrees of the repository will collide
//! where, by symbol. Git says where merging two worktrees' states would conflict
//! ([`crate::worktrees::forecast`]); `coord` names the symbols the changed lines touch, in
//! each side's text, and says what is related across two worktrees' observed work (14.4,
//! `coord::conflicts::related_across`). This file only runs them and shapes the answer.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::PoisonError;

use super::convert::related_item;
use super::errors::task_failed;
use super::services::App;
use crate::coord::conflicts::{related_across, FileWork};
use crate::coord::Coord;
use crate::protocol::server::WorktreeMethods;
use crate::protocol::{
    LineRegion, ProtocolError, WorktreeCollision, WorktreeForecastParams, WorktreeForecastResult,
    WorktreePair,
};
use crate::worktrees::forecast::{Conflict, ForecastMemory};
use crate::worktrees::{all_worktrees, repository_of};

impl WorktreeMethods for App {
    async fn worktree_forecast(
        &self,
        _params: WorktreeForecastParams,
    ) -> Result<WorktreeForecastResult, ProtocolError> {
        let root = self.main_root();
        let coord = self.coord();
        let memory = self.forecast_memory();
        let pairs = tokio::task::spawn_blocking(move || {
            let mut memory = memory.lock().unwrap_or_else(PoisonError::into_inner);
            forecast(root, &coord, &mut memory)
        })
        .await
        .map_err(task_failed)?
        .map_err(ProtocolError::internal)?;
        Ok(WorktreeForecastResult { pairs })
    }
}

/// The pairs of worktrees of the repository at `root` whose changes meet: where merging
/// them would conflict (git), and what is related (13.5) across them.
fn forecast(
    root: Option<PathBuf>,
    coord: &Coord,
    memory: &mut ForecastMemory,
) -> Result<Vec<WorktreePair>, String> {
    let Some(repository) = root.as_deref().and_then(repository_of) else {
        return Ok(Vec::new());
    };
    let roots = all_worktrees(&repository);
    if roots.len() < 2 {
        return Ok(Vec::new());
    }
    let started = std::time::Instant::now();
    let generations: Vec<Option<u64>> = roots
        .iter()
        .map(|root| coord.worktree_generation(&root.to_string_lossy()))
        .collect();
    let states = memory
        .states(&roots, &generations)
        .map_err(|e| e.to_string())?;
    let stated = started.elapsed();
    let mut found: HashMap<(usize, usize), Vec<Conflict>> = memory
        .conflicts(&repository.main_root, &states)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|(i, j, conflicts)| ((i, j), conflicts))
        .collect();
    let merged = started.elapsed();
    let work: Vec<Vec<FileWork>> = roots
        .iter()
        .map(|root| {
            coord
                .worktree_work(&root.display().to_string())
                .unwrap_or_default()
        })
        .collect();
    let mut meeting = Vec::new();
    for i in 0..states.len() {
        for j in i + 1..states.len() {
            let conflicts = found.remove(&(i, j)).unwrap_or_default();
            let colliding: HashSet<&str> = conflicts.iter().map(|c| c.file.as_str()).collect();
            let related = related_across(&work[i], &work[j], &colliding);
            if conflicts.is_empty() && related.is_empty() {
                continue;
            }
            meeting.push((i, j, conflicts, related));
        }
    }
    let worked = started.elapsed();
    // The colliding files' symbols are found on a few threads (each text is parsed once:
    // `ANALYSES`).
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4));
    let chunk = meeting.len().div_ceil(threads).max(1);
    let pairs: Vec<WorktreePair> = std::thread::scope(|scope| {
        let naming: Vec<_> = meeting
            .chunks(chunk)
            .map(|part| {
                let states = &states;
                scope.spawn(move || {
                    part.iter()
                        .map(|(i, j, conflicts, related)| WorktreePair {
                            a: states[*i].root.display().to_string(),
                            b: states[*j].root.display().to_string(),
                            collisions: conflicts.iter().map(|c| collision(coord, c)).collect(),
                            related: related.iter().map(related_item).collect(),
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        naming
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .map_err(|_| "a forecast thread panicked".to_owned())
            })
            .collect::<Result<Vec<_>, String>>()
    })?
    .into_iter()
    .flatten()
    .collect();
    tracing::debug!(
        worktrees = roots.len(),
        states_ms = stated.as_millis(),
        merges_ms = (merged - stated).as_millis(),
        work_ms = (worked - merged).as_millis(),
        symbols_ms = (started.elapsed() - worked).as_millis(),
        "worktree.forecast"
    );
    Ok(pairs)
}

/// A conflict git found, with the symbols its lines touch on either side (named by `coord`).
fn collision(coord: &Coord, conflict: &Conflict) -> WorktreeCollision {
    let touched = |text: Option<&str>, lines: &[(i64, i64)]| {
        text.map(|text| coord.symbols_on_lines(&conflict.file, text, lines))
            .unwrap_or_default()
    };
    let mut symbols = touched(conflict.text_a.as_deref(), &conflict.lines_a);
    symbols.extend(touched(conflict.text_b.as_deref(), &conflict.lines_b));
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
