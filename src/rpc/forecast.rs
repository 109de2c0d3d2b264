//! `worktree.forecast` (PROTOCOL-NOTES 14.5): which worktrees of the repository will collide
//! where, by symbol. Git says where merging two worktrees' states would conflict
//! ([`crate::worktrees::forecast`]); this names the symbols the changed lines touch, in each
//! side's text.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
    let started = std::time::Instant::now();
    let states = states_of(&roots).map_err(|e| e.to_string())?;
    let stated = started.elapsed();
    let found = conflicts_of_all(&repository.main_root, &states).map_err(|e| e.to_string())?;
    let merged = started.elapsed();
    // The files' symbols are found on a few threads (each text is parsed once: `SPANS`).
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4));
    let chunk = found.len().div_ceil(threads).max(1);
    let pairs: Vec<WorktreePair> = std::thread::scope(|scope| {
        let naming: Vec<_> = found
            .chunks(chunk)
            .map(|part| {
                let states = &states;
                scope.spawn(move || {
                    part.iter()
                        .map(|(i, j, conflicts)| WorktreePair {
                            a: states[*i].root.display().to_string(),
                            b: states[*j].root.display().to_string(),
                            collisions: conflicts.iter().map(collision).collect(),
                            related: Vec::new(),
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
        symbols_ms = (started.elapsed() - merged).as_millis(),
        "worktree.forecast"
    );
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

/// Each symbol of a text with its first and last line (1-based).
type Spans = Vec<(String, i64, i64)>;

/// The spans of texts forecasts have named symbols in, by language and content hash: the
/// same versions of the same files come back call after call, and a text is parsed once.
/// Emptied when it holds [`SPANS_KEPT`] texts.
static SPANS: Mutex<Option<KeptSpans>> = Mutex::new(None);

/// The spans of each text, by its language and content hash.
type KeptSpans = HashMap<(Language, u128), Arc<Spans>>;

/// How many texts [`SPANS`] keeps.
const SPANS_KEPT: usize = 1024;

/// The symbols of `text` as `language` with their lines, through [`SPANS`].
fn spans_of(language: Language, text: &str) -> Arc<Spans> {
    let key = (language, xxhash_rust::xxh3::xxh3_128(text.as_bytes()));
    let kept = |spans: &mut Option<KeptSpans>| spans.as_ref()?.get(&key).cloned();
    if let Some(spans) = kept(&mut SPANS.lock().unwrap_or_else(|e| e.into_inner())) {
        return spans;
    }
    let analysis = analyze(language, text);
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(at, _)| at + 1));
    let line_of = |byte: usize| -> i64 {
        i64::try_from(starts.partition_point(|start| *start <= byte)).unwrap_or(i64::MAX)
    };
    let spans: Arc<Spans> = Arc::new(
        analysis
            .symbols
            .iter()
            .map(|s| {
                let end = s.end_byte.saturating_sub(1).max(s.start_byte);
                (
                    s.qualified_name.clone(),
                    line_of(s.start_byte),
                    line_of(end),
                )
            })
            .collect(),
    );
    let mut kept = SPANS.lock().unwrap_or_else(|e| e.into_inner());
    let map = kept.get_or_insert_with(HashMap::new);
    if map.len() >= SPANS_KEPT {
        map.clear();
    }
    map.insert(key, Arc::clone(&spans));
    spans
}

/// The innermost symbols of `text` (as `file`'s language) whose lines meet `lines`.
fn touched(file: &str, text: Option<&str>, lines: &[(i64, i64)]) -> Vec<String> {
    let (Some(text), Some(language)) = (text, Language::for_path(file)) else {
        return Vec::new();
    };
    let all = spans_of(language, text);
    let spans: Vec<(&str, i64, i64)> = all
        .iter()
        .map(|(name, first, last)| (name.as_str(), *first, *last))
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
