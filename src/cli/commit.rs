//! `wit commit -m MSG [PATHS…]`: commits exactly the calling session's own uncommitted
//! changes, hunk by hunk, and nothing of other live sessions' lines in the same files.
//!
//! For every file of the session's observed work (PROTOCOL-NOTES 13), the working text is
//! compared with `HEAD`; each hunk is the session's when its regions meet it, another
//! session's when theirs do, nobody's otherwise (a person's edit: included only with
//! `--include-unowned`). A hunk two sessions share cannot be split: the command refuses,
//! naming both. The new content of each file is `HEAD`'s text with the chosen hunks applied;
//! the tree is built in a temporary index, committed with `git commit-tree` (with one
//! `Wit-Intent` trailer per intent committed) and `HEAD` moved with `git update-ref`. The
//! working tree is never touched; the repository's index is brought along for the committed
//! files only where it held `HEAD`'s version. Finally the committed intents are resolved.
//!
//! [`commit_own_changes`] does all of this and answers a typed [`Committed`] or
//! [`CommitError`]; the CLI prints them ([`run`]), `wit mcp`'s `commit` tool renders them
//! (`mcp::commit_tool`).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use clap::Args;
use serde::Serialize;

use super::context::Context;
use super::gitio::{self, TreeEntry};
use super::hunks::{self, Hunk};
use super::output::{CliError, Report};
use super::owners::{Work, WorkMap};
use crate::doorway::Doorway;
use crate::protocol::{IntentUpdateParams, IntentUpdateParamsStatus};

/// What to commit: `wit commit`'s arguments, and the `commit` MCP tool's.
#[derive(Debug, Clone, Default, Args)]
pub struct CommitArgs {
    /// The commit message.
    #[arg(short, long, value_name = "MSG")]
    pub message: String,
    /// Also commit changed lines no live session owns (a person's edits) in the files.
    #[arg(long)]
    pub include_unowned: bool,
    /// Only these files or directories (relative to the root).
    pub paths: Vec<String>,
}

/// A commit made by [`commit_own_changes`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Committed {
    /// The new commit's id (now `HEAD`).
    pub commit: String,
    /// The committed files, in path order.
    pub files: Vec<CommittedFile>,
    /// The intents resolved by the commit (named in its `Wit-Intent` trailers).
    pub intents_resolved: Vec<String>,
    /// The first line of the message.
    #[serde(skip)]
    pub subject: String,
}

/// One committed file.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommittedFile {
    /// The path, relative to the root.
    pub file: String,
    /// How many of its hunks were committed.
    pub hunks: usize,
    /// How many were left in the working tree (other sessions' or nobody's).
    pub left_uncommitted: usize,
}

/// Why [`commit_own_changes`] committed nothing.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The session has no observed edits in the paths asked for.
    #[error("nothing of this session to commit (no observed edits in these paths)")]
    NoObservedWork,
    /// The session's observed lines are all in `HEAD` already.
    #[error("nothing of this session to commit: its observed lines are already committed")]
    AlreadyCommitted,
    /// Hunks changed by this session and by others: one line each, `file lines: who`.
    #[error("wit commit refused: lines changed by two sessions cannot be split:\n  {}\nagree who commits them (or one of you undoes the overlap), then commit again", .0.join("\n  "))]
    Shared(Vec<String>),
    /// The daemon or git failed.
    #[error(transparent)]
    Failed(#[from] CliError),
}

impl From<CommitError> for CliError {
    fn from(error: CommitError) -> Self {
        match error {
            CommitError::NoObservedWork | CommitError::AlreadyCommitted => {
                Self::Usage(error.to_string())
            }
            CommitError::Shared(_) => Self::Failed(error.to_string()),
            CommitError::Failed(error) => error,
        }
    }
}

impl Committed {
    /// What `wit commit` prints.
    pub fn human(&self) -> String {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let hunks_total: usize = self.files.iter().map(|f| f.hunks).sum();
        let left_total: usize = self.files.iter().map(|f| f.left_uncommitted).sum();
        let mut human = format!(
            "committed {} ({hunks_total} hunk{} in {} file{}): {}\n",
            &self.commit[..12.min(self.commit.len())],
            plural(hunks_total),
            self.files.len(),
            plural(self.files.len()),
            self.subject
        );
        for file in &self.files {
            human.push_str(&format!(
                "  {} ({} hunk{})\n",
                file.file,
                file.hunks,
                plural(file.hunks)
            ));
        }
        if left_total > 0 {
            human.push_str(&format!(
                "left uncommitted: {left_total} hunk{} of other sessions or nobody (untouched in the working tree)\n",
                plural(left_total)
            ));
        }
        human
    }
}

/// What one file contributes.
#[derive(Debug)]
struct Planned {
    file: String,
    entry: TreeEntry,
    hunks: usize,
    left_to_others: usize,
}

/// Which hunks of one file a session commits.
#[derive(Debug, Default, PartialEq, Eq)]
struct Choice {
    /// The session's own hunks (and unowned ones when asked).
    chosen: Vec<Hunk>,
    /// Hunks left uncommitted: other sessions' or nobody's.
    left: usize,
    /// Hunks the session shares with other sessions: the hunk and those sessions.
    overlaps: Vec<(Hunk, Vec<String>)>,
}

/// Sorts the hunks of one file by owner: `work` is every live session's work on the file,
/// `selves` the committing session (and the agent's other sessions).
fn choose(all: &[Hunk], work: &[&Work], selves: &HashSet<String>, include_unowned: bool) -> Choice {
    let mut choice = Choice::default();
    for hunk in all {
        let owners: BTreeSet<&str> = work
            .iter()
            .filter(|w| w.owns(hunk))
            .map(|w| w.session_id.as_str())
            .collect();
        let mine = owners.iter().any(|o| selves.contains(*o));
        let foreign: Vec<String> = owners
            .iter()
            .filter(|o| !selves.contains(**o))
            .map(|o| (*o).to_string())
            .collect();
        if mine && !foreign.is_empty() {
            choice.overlaps.push((*hunk, foreign));
        } else if mine || (owners.is_empty() && include_unowned) {
            choice.chosen.push(*hunk);
        } else {
            choice.left += 1;
        }
    }
    choice
}

/// Runs `wit commit`.
pub async fn run(ctx: &Context, args: CommitArgs) -> Result<Report, CliError> {
    let session = ctx.session()?;
    let done = commit_own_changes(ctx.doorway(), &ctx.paths.root, &session, &args).await?;
    let value = serde_json::to_value(&done)
        .map_err(|error| CliError::Failed(format!("cannot write the result: {error}")))?;
    let human = done.human();
    Ok(Report::new(value, human))
}

/// Commits `session`'s own changes in the repository at `root` (the daemon reached through
/// `daemon`) as `args` asks; the working tree is not touched. What `wit commit` and the
/// `commit` MCP tool both run.
pub async fn commit_own_changes(
    daemon: &Doorway,
    root: &Path,
    session: &str,
    args: &CommitArgs,
) -> Result<Committed, CommitError> {
    let map = daemon
        .call(|client| async move { WorkMap::load(&client).await })
        .await
        .map_err(CliError::from)?;
    let selves = map.selves(session);
    let wanted = |file: &str| {
        args.paths.is_empty()
            || args.paths.iter().any(|p| {
                let p = p.trim_end_matches('/').trim_start_matches("./");
                p.is_empty() || p == "." || file == p || file.starts_with(&format!("{p}/"))
            })
    };
    let mut files: BTreeSet<String> = map
        .work
        .iter()
        .filter(|w| selves.contains(&w.session_id) && wanted(&w.file))
        .map(|w| w.file.clone())
        .collect();
    if args.include_unowned {
        files.extend(changed_files(root)?.into_iter().filter(|f| wanted(f)));
    }
    if files.is_empty() {
        return Err(CommitError::NoObservedWork);
    }
    let head = gitio::head(root);
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    let committed = match &head {
        Some(head) => gitio::blobs(root, head, &names)?,
        None => Default::default(),
    };
    let mut plans = Vec::new();
    let mut refusals = Vec::new();
    let mut intents: BTreeSet<String> = BTreeSet::new();
    for file in &files {
        let work: Vec<&Work> = map.work.iter().filter(|w| &w.file == file).collect();
        let working = std::fs::read(root.join(file)).ok();
        let old = committed.get(file).map_or(&[][..], |b| b.bytes.as_slice());
        let new = working.as_deref().unwrap_or_default();
        let (old_lines, new_lines) = (hunks::lines(old), hunks::lines(new));
        let all = hunks::hunks(&old_lines, &new_lines);
        let choice = choose(&all, &work, &selves, args.include_unowned);
        for (hunk, others) in &choice.overlaps {
            let others: Vec<String> = others.iter().map(|o| map.who(o)).collect();
            refusals.push(format!(
                "{file} {}: changed by this session ({}) and by {}",
                hunk.describe(),
                map.who(session),
                others.join(", ")
            ));
        }
        let (chosen, left) = (choice.chosen, choice.left);
        if chosen.is_empty() {
            continue;
        }
        intents.extend(
            work.iter()
                .filter(|w| selves.contains(&w.session_id))
                .map(|w| w.intent_id.clone()),
        );
        let entry = if working.is_none() && chosen.len() == all.len() {
            TreeEntry::Removed
        } else {
            let mode = committed
                .get(file)
                .map(|b| b.mode.clone())
                .unwrap_or_else(|| gitio::file_mode(&root.join(file)));
            TreeEntry::Text {
                mode,
                bytes: hunks::apply(&old_lines, &new_lines, &chosen),
            }
        };
        plans.push(Planned {
            file: file.clone(),
            entry,
            hunks: chosen.len(),
            left_to_others: left,
        });
    }
    if !refusals.is_empty() {
        return Err(CommitError::Shared(refusals));
    }
    if plans.is_empty() {
        return Err(CommitError::AlreadyCommitted);
    }
    let entries: Vec<(String, TreeEntry)> = plans
        .iter()
        .map(|p| (p.file.clone(), p.entry.clone()))
        .collect();
    let tree = gitio::write_tree(root, head.as_deref(), &entries)?;
    let message = with_trailers(&args.message, &intents);
    let mut commit_args = vec!["commit-tree", tree.as_str(), "-m", message.as_str()];
    if let Some(head) = &head {
        commit_args.push("-p");
        commit_args.push(head);
    }
    let commit = gitio::run(root, &commit_args)?;
    let commit = String::from_utf8_lossy(&commit).trim().to_string();
    let reflog = format!(
        "wit commit: {}",
        args.message.lines().next().unwrap_or_default()
    );
    let old = head.clone().unwrap_or_else(|| "0".repeat(40));
    gitio::run(root, &["update-ref", "-m", &reflog, "HEAD", &commit, &old])?;
    sync_index(root, head.as_deref(), &commit, &plans);
    let mut resolved = Vec::new();
    for intent in &intents {
        let update = daemon
            .call(|client| {
                let params = IntentUpdateParams {
                    intent_id: intent.clone(),
                    session_id: session.to_string(),
                    status: IntentUpdateParamsStatus::Resolved,
                };
                async move { client.intent_update(params).await }
            })
            .await;
        if update.is_ok() {
            resolved.push(intent.clone());
        }
    }
    Ok(Committed {
        commit,
        files: plans
            .iter()
            .map(|p| CommittedFile {
                file: p.file.clone(),
                hunks: p.hunks,
                left_uncommitted: p.left_to_others,
            })
            .collect(),
        intents_resolved: resolved,
        subject: args.message.lines().next().unwrap_or_default().to_string(),
    })
}

/// The files that differ from `HEAD` in the working tree, untracked ones too.
fn changed_files(root: &std::path::Path) -> Result<Vec<String>, CliError> {
    let out = gitio::run(
        root,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    )?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|item| item.len() > 3)
        .map(|item| String::from_utf8_lossy(&item[3..]).into_owned())
        .collect())
}

/// `message` with one `Wit-Intent: <id>` trailer per intent (in a trailer block of its own).
fn with_trailers(message: &str, intents: &BTreeSet<String>) -> String {
    let mut text = message.trim_end().to_string();
    if intents.is_empty() {
        text.push('\n');
        return text;
    }
    text.push_str("\n\n");
    for id in intents {
        text.push_str(&format!("Wit-Intent: {id}\n"));
    }
    text
}

/// Brings the repository's index along for the committed files: where it held the old
/// `HEAD`'s version (nothing staged), it now holds the new one, so `git status` shows the
/// other sessions' lines as unstaged changes and nothing as staged. A file someone had staged
/// is left as it was.
fn sync_index(root: &std::path::Path, old_head: Option<&str>, commit: &str, plans: &[Planned]) {
    let files: Vec<&str> = plans.iter().map(|p| p.file.as_str()).collect();
    let staged: HashSet<String> = match old_head {
        Some(head) => {
            let mut args = vec!["diff-index", "--cached", "--name-only", "-z", head, "--"];
            args.extend(&files);
            gitio::run(root, &args)
                .map(|out| {
                    out.split(|b| *b == 0)
                        .filter(|s| !s.is_empty())
                        .map(|s| String::from_utf8_lossy(s).into_owned())
                        .collect()
                })
                .unwrap_or_default()
        }
        None => HashSet::new(),
    };
    let mut info = String::new();
    let listing = {
        let mut args = vec!["ls-tree", "-z", commit, "--"];
        args.extend(&files);
        gitio::run(root, &args).unwrap_or_default()
    };
    let mut in_tree: BTreeMap<String, String> = BTreeMap::new();
    for item in listing.split(|b| *b == 0).filter(|i| !i.is_empty()) {
        let item = String::from_utf8_lossy(item);
        if let Some((meta, path)) = item.split_once('\t') {
            let fields: Vec<&str> = meta.split(' ').collect();
            if let [mode, _, id] = fields.as_slice() {
                in_tree.insert(path.to_string(), format!("{mode} {id}"));
            }
        }
    }
    for file in files.iter().filter(|f| !staged.contains(**f)) {
        match in_tree.get(*file) {
            Some(entry) => info.push_str(&format!("{entry}\t{file}\n")),
            None => info.push_str(&format!(
                "0 0000000000000000000000000000000000000000\t{file}\n"
            )),
        }
    }
    if !info.is_empty() {
        let _ = gitio::run_with(
            root,
            &["update-index", "--index-info"],
            &[],
            Some(info.as_bytes()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::hunks::Region;

    fn work(session: &str, start: usize, end: usize) -> Work {
        Work {
            session_id: session.into(),
            intent_id: format!("i-{session}"),
            file: "a.ts".into(),
            symbols: vec![],
            regions: Some(vec![Region { start, end }]),
        }
    }

    #[test]
    fn hunks_go_to_their_owners_and_shared_ones_refuse() {
        let old = hunks::lines("a\nb\nc\nd\ne\nf\ng\n");
        // Line 2 is alice's, lines 4-5 one hunk of bob (4) and carol (5), line 7 nobody's.
        let new = hunks::lines("a\nB\nc\nD\nE\nf\nG\n");
        let all = hunks::hunks(&old, &new);
        assert_eq!(all.len(), 3);
        let (alice, bob, carol) = (work("alice", 2, 2), work("bob", 4, 4), work("carol", 5, 5));
        let everyone = [&alice, &bob, &carol];
        let me = |s: &str| HashSet::from([s.to_string()]);
        let choice = choose(&all, &everyone, &me("alice"), false);
        assert_eq!((choice.chosen, choice.left), (vec![all[0]], 2));
        assert!(choice.overlaps.is_empty());
        let choice = choose(&all, &everyone, &me("alice"), true);
        assert_eq!(choice.chosen, vec![all[0], all[2]]);
        let choice = choose(&all, &everyone, &me("bob"), false);
        assert_eq!(choice.overlaps, vec![(all[1], vec!["carol".to_string()])]);
        assert!(choice.chosen.is_empty());
    }

    #[test]
    fn trailers_form_their_own_block() {
        let ids = BTreeSet::from(["i-1".to_string(), "i-2".to_string()]);
        assert_eq!(
            with_trailers("Fix parse\n", &ids),
            "Fix parse\n\nWit-Intent: i-1\nWit-Intent: i-2\n"
        );
        assert_eq!(with_trailers("x", &BTreeSet::new()), "x\n");
    }
}
