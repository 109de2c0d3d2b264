//! Whose uncommitted work the risky calls of a line would take, drop or move: for each
//! work tree the calls act on, the work of other live sessions *in that worktree* (a
//! session's `worktree` in `session.list`; a `worktree:<root>` session's is its root) on the
//! files that differ there from `HEAD`, within the calls' pathspecs. Another checkout's files
//! are not at stake in this one.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::config::top_level;
use super::git::{Effect, Risk};
use super::scope::in_scope;
use crate::cli::gitio;
use crate::cli::output::CliError;
use crate::cli::owners::{AtStake, Work, WorkMap};

/// How many work trees one line's calls are checked in; calls on more are not checked.
const MAX_TREES: usize = 8;

/// What is at stake.
#[derive(Debug, Default)]
pub struct Found<'a> {
    /// Other live sessions' work the calls would take, drop or move.
    pub stake: AtStake,
    /// The calls that put it at stake.
    pub risks: Vec<&'a Risk>,
    /// Per work tree, the files a destroying call would touch (to snapshot first).
    pub destroying: Vec<(PathBuf, Vec<String>)>,
}

/// The canonical form of a path (itself when it cannot be resolved).
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The worktree root `work` is in, when the daemon knows it.
fn worktree_of(map: &WorkMap, work: &Work) -> Option<PathBuf> {
    if let Some(root) = crate::coord::worktree_work::worktree_of_session(&work.session_id) {
        return Some(PathBuf::from(root));
    }
    map.sessions
        .iter()
        .find(|s| s.session_id == work.session_id)
        .and_then(|s| s.worktree.as_deref())
        .map(PathBuf::from)
}

/// Finds what `risks` (by the acting `session`) put at stake.
pub fn at_stake<'a>(
    map: &WorkMap,
    session: &str,
    risks: &[&'a Risk],
) -> Result<Found<'a>, CliError> {
    let selves: HashSet<String> = map.selves(session);
    let others: Vec<(&Work, Option<PathBuf>)> = map
        .others(&selves)
        .map(|work| (work, worktree_of(map, work).map(|root| canonical(&root))))
        .collect();
    let mut found = Found::default();
    if others.is_empty() {
        return Ok(found);
    }
    // The risks by the work tree they act on.
    let mut trees: Vec<(PathBuf, Vec<&'a Risk>)> = Vec::new();
    for risk in risks {
        let Some(tree) = top_level(risk.work_tree.as_deref().unwrap_or(&risk.dir)) else {
            continue;
        };
        let tree = canonical(&tree);
        if let Some((_, list)) = trees.iter_mut().find(|(t, _)| *t == tree) {
            list.push(risk);
        } else if trees.len() < MAX_TREES {
            trees.push((tree, vec![risk]));
        }
    }
    for (tree, tree_risks) in trees {
        // Work of another worktree is not at stake here; work whose worktree the daemon
        // does not know might be anywhere.
        let here: Vec<&Work> = others
            .iter()
            .filter(|(_, root)| root.as_ref().is_none_or(|root| *root == tree))
            .map(|(work, _)| *work)
            .collect();
        if here.is_empty() {
            continue;
        }
        let mut files: Vec<&str> = here.iter().map(|w| w.file.as_str()).collect();
        files.sort_unstable();
        files.dedup();
        let dirty = dirty_files(&tree, &files)?;
        let mut destroying: Vec<String> = Vec::new();
        for risk in tree_risks {
            let mut risky = false;
            for work in &here {
                let Some(status) = dirty.get(work.file.as_str()) else {
                    continue;
                };
                if risk.command.starts_with("git clean") && status != "??" {
                    continue;
                }
                if !in_scope(&tree, risk, &work.file) {
                    continue;
                }
                risky = true;
                found.stake.add(work);
                if risk.effect.destroys() && !destroying.contains(&work.file) {
                    destroying.push(work.file.clone());
                }
            }
            if risky && !found.risks.contains(&risk) {
                found.risks.push(risk);
            }
        }
        if !destroying.is_empty() {
            found.destroying.push((tree, destroying));
        }
    }
    // A line the gate cannot fully read is named with the calls it could.
    if !found.stake.is_empty() {
        for risk in risks {
            if risk.effect == Effect::CannotTell && !found.risks.contains(risk) {
                found.risks.push(risk);
            }
        }
    }
    Ok(found)
}

/// The files of `files` that differ from `HEAD` or are untracked in the work tree at
/// `tree`, with their two-letter status.
fn dirty_files(tree: &Path, files: &[&str]) -> Result<HashMap<String, String>, CliError> {
    // No optional locks: the gate only reads, and must never hold `index.lock` while an
    // agent's own git command runs.
    let mut args = vec![
        "--no-optional-locks",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--",
    ];
    args.extend(files);
    let out = gitio::run(tree, &args)?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|item| item.len() > 3)
        .map(|item| {
            let text = String::from_utf8_lossy(item);
            (text[3..].to_string(), text[..2].to_string())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::super::git::Scope;
    use super::*;
    use crate::protocol::SessionRecord;

    fn git(dir: &Path, args: &[&str]) {
        crate::git::as_tester(dir).run(args).unwrap();
    }

    fn session(id: &str, worktree: &Path) -> SessionRecord {
        SessionRecord {
            agent_id: None,
            branch: None,
            intents: 1,
            last_seen_at: 0,
            live: true,
            pid_unknown: None,
            locks: 0,
            name: None,
            pid: None,
            session_id: id.into(),
            worktree: Some(worktree.display().to_string()),
        }
    }

    #[test]
    fn only_work_in_the_same_worktree_is_at_stake() {
        let base = std::env::temp_dir().join(format!("wit-stake-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let main = base.join("main");
        let linked = base.join("linked");
        std::fs::create_dir_all(&main).unwrap();
        git(&main, &["init", "-q", "-b", "main"]);
        std::fs::write(main.join("a.ts"), "a\n").unwrap();
        git(&main, &["add", "."]);
        git(&main, &["commit", "-qm", "c"]);
        git(
            &main,
            &["worktree", "add", "-q", "-b", "l", linked.to_str().unwrap()],
        );
        std::fs::write(main.join("a.ts"), "b's change\n").unwrap();
        std::fs::write(linked.join("a.ts"), "a's change\n").unwrap();
        let map = WorkMap {
            work: vec![Work {
                session_id: "b".into(),
                intent_id: "i".into(),
                file: "a.ts".into(),
                symbols: Vec::new(),
                regions: None,
            }],
            sessions: vec![session("a", &linked), session("b", &main)],
        };
        let stash = |dir: &Path| Risk {
            dir: dir.to_path_buf(),
            work_tree: None,
            command: "git stash".into(),
            effect: Effect::Drops,
            scope: Scope::All,
        };
        let in_linked = stash(&linked);
        assert!(at_stake(&map, "a", &[&in_linked]).unwrap().stake.is_empty());
        let in_main = stash(&main);
        let found = at_stake(&map, "a", &[&in_main]).unwrap();
        assert!(!found.stake.is_empty());
        assert_eq!(found.destroying.len(), 1);
        let _ = std::fs::remove_dir_all(&base);
    }
}
