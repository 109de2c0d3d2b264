//! `worktree.forecast` (PROTOCOL-NOTES 14.5): which worktrees of the repository will collide
//! where, by symbol. Git says where merging two worktrees' states would conflict
//! ([`crate::worktrees::forecast`]); this names the symbols the changed lines touch, in each
//! side's text, and adds what is related across two worktrees' observed work (14.4).

use std::collections::HashSet;
use std::path::PathBuf;

use super::convert::related_item;
use super::errors::task_failed;
use super::services::App;
use crate::analysis::{analyze, innermost_on_lines, symbols_on_lines, Language};
use crate::coord::conflicts::order_related;
use crate::coord::paths::join_symbol_path;
use crate::coord::worktree_work::WorktreeFile;
use crate::coord::{Coord, Related, Relation};
use crate::protocol::server::WorktreeMethods;
use crate::protocol::{
    LineRegion, ProtocolError, WorktreeCollision, WorktreeForecastParams, WorktreeForecastResult,
    WorktreePair,
};
use crate::worktrees::forecast::{conflicts, state_of, Conflict};
use crate::worktrees::{all_worktrees, repository_of};

impl WorktreeMethods for App {
    async fn worktree_forecast(
        &self,
        _params: WorktreeForecastParams,
    ) -> Result<WorktreeForecastResult, ProtocolError> {
        let root = self.main_root();
        let coord = self.coord();
        let pairs = tokio::task::spawn_blocking(move || forecast(root, &coord))
            .await
            .map_err(task_failed)?
            .map_err(ProtocolError::internal)?;
        Ok(WorktreeForecastResult { pairs })
    }
}

/// The pairs of worktrees of the repository at `root` whose changes meet: where merging
/// them would conflict (git), and what is related (13.5) across them.
fn forecast(root: Option<PathBuf>, coord: &Coord) -> Result<Vec<WorktreePair>, String> {
    let Some(repository) = root.as_deref().and_then(repository_of) else {
        return Ok(Vec::new());
    };
    let roots = all_worktrees(&repository);
    if roots.len() < 2 {
        return Ok(Vec::new());
    }
    let states = roots
        .iter()
        .map(|root| state_of(root))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let work: Vec<Vec<FileWork>> = roots
        .iter()
        .map(|root| {
            let files = coord
                .worktree_files(&root.display().to_string())
                .unwrap_or_default();
            files.iter().map(FileWork::of).collect()
        })
        .collect();
    let mut pairs = Vec::new();
    for (i, a) in states.iter().enumerate() {
        for (j, b) in states.iter().enumerate().skip(i + 1) {
            let found = conflicts(&repository.main_root, a, b).map_err(|e| e.to_string())?;
            let colliding: HashSet<&str> = found.iter().map(|c| c.file.as_str()).collect();
            let related = related_across(&work[i], &work[j], &colliding);
            if found.is_empty() && related.is_empty() {
                continue;
            }
            pairs.push(WorktreePair {
                a: a.root.display().to_string(),
                b: b.root.display().to_string(),
                collisions: found.iter().map(collision).collect(),
                related: related.iter().map(related_item).collect(),
            });
        }
    }
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
        let analysis = Language::for_path(&work.file).map(|language| analyze(language, &work.text));
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
            .into_iter()
            .filter_map(|call| Some((call.caller?, simple_name(&call.callee).to_owned())))
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

/// The symbols the changed `lines` of `text` touch (none without a text).
fn touched(file: &str, text: Option<&str>, lines: &[(i64, i64)]) -> Vec<String> {
    text.map(|text| symbols_on_lines(file, text, lines))
        .unwrap_or_default()
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
