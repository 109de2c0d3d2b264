//! Whose uncommitted work the risky calls of a line would take, drop or move: for each
//! work tree the calls act on, that tree's daemon answers whose live work its dirty files
//! hold, seen from the acting session (`work.changes`, [`crate::cli::owners`]); the hunks of
//! other agents' live sessions within the calls' pathspecs are at stake. Each worktree is
//! asked on its own socket, so another checkout's files are never at stake in this one.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::config::top_level;
use super::git::{Effect, Risk, Scope};
use super::scope::{in_scope, relative_to};
use crate::cli::gitio;
use crate::cli::owners::{AtStake, OwnerView, Theirs};

/// How many work trees one line's calls are checked in; calls on more are not checked.
const MAX_TREES: usize = 8;

/// What is at stake.
#[derive(Debug, Default)]
pub struct Found<'a> {
    /// Other live sessions' work the calls would take, drop or move.
    pub stake: AtStake,
    /// Unowned work (nobody's session, docs/protocol.md 15.3) they would take, drop or move:
    /// judged under `[gate] unowned`, apart from the sessions' work.
    pub unowned: AtStake,
    /// The calls that put it at stake.
    pub risks: Vec<&'a Risk>,
    /// Per work tree, the files a destroying call would touch (to snapshot first).
    pub destroying: Vec<(PathBuf, Vec<String>)>,
}

/// Asks the daemon serving the work tree at the given root for its owner view, limited to
/// the given files (`None`: every dirty file); `Ok(None)`: no daemon serves that tree.
pub type Ask<'x> = dyn FnMut(&Path, Option<&[String]>) -> Result<Option<OwnerView>, String> + 'x;

/// The canonical form of a path (itself when it cannot be resolved).
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The files (relative to `tree`) that `risks` name, when every one of them names only
/// existing files by plain paths; `None` when any may reach further (the whole tree, a
/// directory, a glob, a word only known when the line runs, pathspec magic, a path that is
/// not there): then every dirty file counts.
fn named_files(tree: &Path, risks: &[&Risk]) -> Option<Vec<String>> {
    let mut files = Vec::new();
    for risk in risks {
        let Scope::Paths(specs) = &risk.scope else {
            return None;
        };
        let base = risk.work_tree.clone().unwrap_or_else(|| risk.dir.clone());
        for spec in specs {
            let text = spec.text.as_str();
            if spec.dynamic || spec.glob || text.starts_with(':') || text.contains(['*', '?', '['])
            {
                return None;
            }
            let full = base.join(text);
            let meta = std::fs::symlink_metadata(&full).ok()?;
            if meta.is_dir() {
                return None;
            }
            let relative = relative_to(tree, &canonical_parent(&full))?;
            if relative.is_empty() {
                return None;
            }
            files.push(relative);
        }
    }
    files.sort();
    files.dedup();
    (!files.is_empty()).then_some(files)
}

/// `path` with its directory resolved (the file itself may be a symlink, kept as it is).
fn canonical_parent(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => canonical(dir).join(name),
        _ => path.to_path_buf(),
    }
}

/// Finds what `risks` put at stake, asking each work tree's daemon through `ask`.
pub fn at_stake<'a>(risks: &[&'a Risk], ask: &mut Ask<'_>) -> Result<Found<'a>, String> {
    let mut found = Found::default();
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
        let files = named_files(&tree, &tree_risks);
        let Some(view) = ask(&tree, files.as_deref())? else {
            continue;
        };
        // Each hunk at stake, with whether it is unowned work rather than a session's.
        let theirs: Vec<(Theirs<'_>, bool)> = view
            .theirs()
            .into_iter()
            .map(|t| (t, false))
            .chain(view.unowned().into_iter().map(|t| (t, true)))
            .collect();
        if theirs.is_empty() {
            continue;
        }
        // `git clean` removes untracked files only: which of theirs are.
        let untracked: HashSet<String> = if tree_risks
            .iter()
            .any(|r| r.command.starts_with("git clean"))
        {
            let mut paths: Vec<&str> = theirs.iter().map(|(t, _)| t.file).collect();
            paths.sort_unstable();
            paths.dedup();
            untracked_files(&tree, &paths)?
        } else {
            HashSet::new()
        };
        let mut destroying: Vec<String> = Vec::new();
        for risk in tree_risks {
            let mut risky = false;
            for (work, unowned) in &theirs {
                if risk.command.starts_with("git clean") && !untracked.contains(work.file) {
                    continue;
                }
                if !in_scope(&tree, risk, work.file) {
                    continue;
                }
                risky = true;
                if *unowned {
                    found.unowned.add_unowned(work);
                } else {
                    found.stake.add(work);
                }
                if risk.effect.destroys() && !destroying.iter().any(|f| f == work.file) {
                    destroying.push(work.file.to_owned());
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
    if !found.stake.is_empty() || !found.unowned.is_empty() {
        for risk in risks {
            if risk.effect == Effect::CannotTell && !found.risks.contains(risk) {
                found.risks.push(risk);
            }
        }
    }
    Ok(found)
}

/// The files of `files` that are untracked in the work tree at `tree`.
fn untracked_files(tree: &Path, files: &[&str]) -> Result<HashSet<String>, String> {
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
    let out = gitio::run(tree, &args).map_err(|e| e.to_string())?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|item| item.len() > 3 && item.starts_with(b"??"))
        .map(|item| String::from_utf8_lossy(&item[3..]).into_owned())
        .collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::super::words::Word;
    use super::*;
    use crate::protocol::{FileChanges, OwnedHunk};

    fn git(dir: &Path, args: &[&str]) {
        crate::git::as_tester(dir).run(args).unwrap();
    }

    /// Bob's live work on `a.ts`, seen from alice.
    fn bobs() -> OwnerView {
        OwnerView {
            files: vec![FileChanges {
                file: "a.ts".into(),
                binary: false,
                hunks: vec![OwnedHunk {
                    old_start: 1,
                    old_lines: 1,
                    new_start: 1,
                    new_lines: 1,
                    session_ids: vec!["b".into()],
                    mine: Some(false),
                    others: vec!["b".into()],
                }],
            }],
            anonymous: false,
        }
    }

    #[test]
    fn each_tree_is_asked_on_its_own_and_named_files_limit_the_question() {
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
        let main_root = canonical(&main);
        let mut asked: Vec<(PathBuf, Option<Vec<String>>)> = Vec::new();
        let mut ask = |tree: &Path, files: Option<&[String]>| {
            asked.push((tree.to_path_buf(), files.map(<[String]>::to_vec)));
            // Only the main worktree holds bob's work.
            Ok::<_, String>(Some(if tree == main_root {
                bobs()
            } else {
                OwnerView::default()
            }))
        };
        let risk = |dir: &Path, command: &str, scope: Scope| Risk {
            dir: dir.to_path_buf(),
            work_tree: None,
            command: command.into(),
            effect: Effect::Drops,
            scope,
        };
        let in_linked = risk(&linked, "git stash", Scope::All);
        assert!(at_stake(&[&in_linked], &mut ask).unwrap().stake.is_empty());
        let in_main = risk(&main, "git stash", Scope::All);
        let found = at_stake(&[&in_main], &mut ask).unwrap();
        assert!(!found.stake.is_empty());
        assert_eq!(found.destroying.len(), 1);
        let checkout = risk(
            &main,
            "git checkout",
            Scope::Paths(vec![Word::plain("a.ts")]),
        );
        let found = at_stake(&[&checkout], &mut ask).unwrap();
        assert!(!found.stake.is_empty());
        let elsewhere = risk(&main, "git checkout", Scope::Paths(vec![Word::plain(".")]));
        at_stake(&[&elsewhere], &mut ask).unwrap();
        assert_eq!(asked[0].0, canonical(&linked));
        assert_eq!(asked[1], (main_root.clone(), None), "the whole tree");
        assert_eq!(asked[2], (main_root.clone(), Some(vec!["a.ts".to_owned()])));
        assert_eq!(asked[3], (main_root, None), "a directory: every dirty file");
        let _ = std::fs::remove_dir_all(&base);
    }
}
