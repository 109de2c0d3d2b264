//! `worktree.forecast` (PROTOCOL-NOTES 14.5): which worktrees of the repository will collide
//! where, by symbol. Git says where merging two worktrees' states would conflict
//! ([`crate::worktrees::forecast`]); this names the symbols the changed lines touch, in each
//! side's text, and adds what is related across two worktrees' observed work (14.4).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, PoisonError};

use super::convert::related_item;
use super::errors::task_failed;
use super::services::App;
use crate::analysis::cache::{ContentCache, ContentKey};
use crate::analysis::{analyze, innermost_on_lines, FileAnalysis, Language};
use crate::coord::conflicts::order_related;
use crate::coord::paths::join_symbol_path;
use crate::coord::worktree_work::WorktreeFile;
use crate::coord::{Coord, Related, Relation};
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
            let files = coord
                .worktree_files(&root.display().to_string())
                .unwrap_or_default();
            files.iter().map(FileWork::of).collect()
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
                            collisions: conflicts.iter().map(collision).collect(),
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

/// One file of a worktree's observed work: the symbols its changed lines touch, and the
/// calls made in it (caller, callee's simple name).
struct FileWork {
    file: String,
    session_id: String,
    intent_id: String,
    touched: Vec<String>,
    calls: HashSet<(String, String)>,
}

impl FileWork {
    fn of(work: &WorktreeFile) -> FileWork {
        let lines: Vec<(i64, i64)> = work
            .regions
            .iter()
            .flatten()
            .map(|r| (r.start_line, r.end_line))
            .collect();
        let analysis =
            Language::for_path(&work.file).map(|language| analysis_of(language, &work.text));
        let Some(analysis) = analysis else {
            return FileWork {
                touched: Vec::new(),
                calls: HashSet::new(),
                file: work.file.clone(),
                session_id: work.session_id.clone(),
                intent_id: work.intent_id.clone(),
            };
        };
        let touched = innermost_on_lines(&analysis, &work.text, &lines);
        let calls = analysis
            .calls
            .iter()
            .filter_map(|call| {
                let caller = call.caller.clone()?;
                Some((caller, simple_name(&call.callee).to_owned()))
            })
            .collect();
        FileWork {
            touched,
            file: work.file.clone(),
            session_id: work.session_id.clone(),
            intent_id: work.intent_id.clone(),
            calls,
        }
    }
}

/// The last segment of a dotted or `::` name (`this.run` -> `run`, `Store.open` -> `open`).
fn simple_name(name: &str) -> &str {
    name.rsplit(['.', ':']).next().unwrap_or(name)
}

/// What is related (13.5) between the work of worktree `a` and that of `b`, seen from `b`:
/// a symbol both change in separate lines (SAME_SYMBOL, files that do not collide), and a
/// symbol of `b`'s that calls, or is called by, one of `a`'s (COUPLED, by the callee's
/// name), each naming `a`'s intent.
fn related_across(a: &[FileWork], b: &[FileWork], colliding: &HashSet<&str>) -> Vec<Related> {
    let mut items = Vec::new();
    for mine in b {
        for theirs in a {
            for name in &mine.touched {
                let same_file = mine.file == theirs.file;
                if same_file
                    && !colliding.contains(mine.file.as_str())
                    && theirs.touched.contains(name)
                {
                    items.push(Related::SameSymbol {
                        symbol_path: join_symbol_path(&mine.file, name),
                        session_id: theirs.session_id.clone(),
                        intent_id: theirs.intent_id.clone(),
                    });
                }
                for other in &theirs.touched {
                    if same_file && other == name {
                        continue;
                    }
                    let relation = if mine
                        .calls
                        .contains(&(name.clone(), simple_name(other).to_owned()))
                    {
                        Relation::Calls
                    } else if theirs
                        .calls
                        .contains(&(other.clone(), simple_name(name).to_owned()))
                    {
                        Relation::CalledBy
                    } else {
                        continue;
                    };
                    items.push(Related::Coupled {
                        symbol_path: join_symbol_path(&mine.file, name),
                        other_symbol: join_symbol_path(&theirs.file, other),
                        relation,
                        session_id: theirs.session_id.clone(),
                        intent_id: theirs.intent_id.clone(),
                    });
                }
            }
        }
    }
    order_related(items)
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
/// Analyses of the texts forecasts read (colliding files' versions, observed work's files), by
/// content: the same versions of the same files come back call after call, so each is
/// parsed once (bounded by
/// [`ANALYSES_BYTES`] of analyses, least recently used out).
static ANALYSES: OnceLock<ContentCache> = OnceLock::new();

/// What [`ANALYSES`] may hold.
const ANALYSES_BYTES: usize = 8 * 1024 * 1024;

/// The symbols the changed `lines` of `text` touch (none without a text, or in a file of no
/// supported language).
fn touched(file: &str, text: Option<&str>, lines: &[(i64, i64)]) -> Vec<String> {
    let (Some(text), Some(language)) = (text, Language::for_path(file)) else {
        return Vec::new();
    };
    innermost_on_lines(&analysis_of(language, text), text, lines)
}

/// The analysis of `text` as `language`, through [`ANALYSES`].
fn analysis_of(language: Language, text: &str) -> Arc<FileAnalysis> {
    let analyses = ANALYSES.get_or_init(|| ContentCache::new(ANALYSES_BYTES));
    let key = ContentKey::new(language, text);
    analyses.get(&key).unwrap_or_else(|| {
        let analysis = Arc::new(analyze(language, text));
        analyses.insert(key, Arc::clone(&analysis));
        analysis
    })
}
