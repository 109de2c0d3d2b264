//! `wit commit -m MSG [PATHS…]`: commits exactly the calling session's own uncommitted
//! changes, hunk by hunk, and nothing of other live sessions' lines in the same files.
//!
//! For every file of the session's observed work (docs/protocol.md 13), the working text is
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

use super::agent_trace;
use super::commit_hooks::{CommitHookError, HookRefusal, Hooks};
use super::commit_plan::{committed_lines, owner_of, plan_file, FilePlan, HunkOwner};
use super::context::Context;
use super::gitio::{self, TreeEntry};
use super::output::{CliError, Report};
use super::owners::{has_regions, Names};
use crate::coord::ownership::is_unowned_session;
use crate::doorway::Doorway;
use crate::protocol::{
    FileChanges, IntentQueryParams, IntentUpdateParams, IntentUpdateParamsStatus, OwnedHunk,
    WorkChangesParams,
};

/// What to commit: `wit commit`'s arguments, and the `commit` MCP tool's.
#[derive(Debug, Clone, Default, Args)]
pub struct CommitArgs {
    /// The commit message.
    #[arg(short, long, value_name = "MSG")]
    pub message: String,
    /// Also commit changed lines no live session owns (a person's edits) in the files.
    #[arg(long)]
    pub include_unowned: bool,
    /// Skip the repository's pre-commit and commit-msg hooks, as `git commit --no-verify`.
    #[arg(short = 'n', long)]
    pub no_verify: bool,
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
    /// Whether its Agent Trace record was written (`refs/notes/agent-trace`).
    pub agent_trace: bool,
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
    /// A hook of the repository refused it.
    #[error("wit commit refused: {0}")]
    Hook(#[from] HookRefusal),
    /// The daemon or git failed.
    #[error(transparent)]
    Failed(#[from] CliError),
}

impl From<CommitHookError> for CommitError {
    fn from(error: CommitHookError) -> Self {
        match error {
            CommitHookError::Refused(refusal) => Self::Hook(refusal),
            CommitHookError::Failed(error) => Self::Failed(error),
        }
    }
}

impl From<CommitError> for CliError {
    fn from(error: CommitError) -> Self {
        match error {
            CommitError::NoObservedWork | CommitError::AlreadyCommitted => {
                Self::Usage(error.to_string())
            }
            CommitError::Shared(_) | CommitError::Hook(_) => Self::Failed(error.to_string()),
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
    // The owner map's hunks of every changed file, seen from the session (the daemon reads
    // the disk first), and the sessions' names for messages.
    let (changes, sessions) = daemon
        .call(|client| async move {
            let params = WorkChangesParams {
                session_id: Some(session.to_owned()),
                files: Vec::new(),
            };
            tokio::try_join!(client.work_changes(params), client.session_list())
        })
        .await
        .map_err(CliError::from)?;
    let names = Names { sessions };
    let wanted = |file: &str| {
        args.paths.is_empty()
            || args.paths.iter().any(|p| {
                let p = p.trim_end_matches('/').trim_start_matches("./");
                p.is_empty() || p == "." || file == p || file.starts_with(&format!("{p}/"))
            })
    };
    let files: Vec<&FileChanges> = changes
        .files
        .iter()
        .filter(|f| wanted(&f.file))
        .filter(|f| {
            f.hunks.iter().any(|h| match owner_of(h) {
                HunkOwner::Mine | HunkOwner::Shared => true,
                HunkOwner::Nobody => args.include_unowned,
                HunkOwner::Others => false,
            })
        })
        .collect();
    if files.is_empty() {
        return Err(CommitError::NoObservedWork);
    }
    let head = gitio::head(root);
    let paths: Vec<&str> = files.iter().map(|f| f.file.as_str()).collect();
    let committed = match &head {
        Some(head) => gitio::blobs(root, head, &paths)?,
        None => Default::default(),
    };
    let mut plans = Vec::new();
    let mut refusals = Vec::new();
    let mut owners: BTreeSet<String> = BTreeSet::new();
    let mut traced = Vec::new();
    for changed in &files {
        let file = &changed.file;
        for hunk in changed
            .hunks
            .iter()
            .filter(|h| owner_of(h) == HunkOwner::Shared)
        {
            let others: Vec<String> = hunk
                .others
                .iter()
                .filter(|o| !is_unowned_session(o))
                .map(|o| names.who(o))
                .collect();
            refusals.push(format!(
                "{file} {}: changed by this session ({}) and by {}",
                describe(hunk),
                names.who(session),
                others.join(", ")
            ));
        }
        let working = gitio::working_bytes(&root.join(file));
        let plan = plan_file(
            file,
            committed.get(file).map_or(&[][..], |b| b.bytes.as_slice()),
            working.as_deref(),
            changed.binary,
            &changed.hunks,
            args.include_unowned,
        )
        .map_err(|e| CliError::Failed(e.to_string()))?;
        let FilePlan::Commit { bytes, taken, left } = plan else {
            continue;
        };
        traced.push((
            file.clone(),
            committed_lines(&changed.hunks, args.include_unowned),
        ));
        for hunk in changed
            .hunks
            .iter()
            .filter(|h| owner_of(h) == HunkOwner::Mine)
        {
            owners.extend(
                hunk.session_ids
                    .iter()
                    .filter(|s| !hunk.others.contains(s))
                    .cloned(),
            );
        }
        let entry = match bytes {
            None => TreeEntry::Removed,
            Some(bytes) => {
                // The mode the file has now, as `git add` would take it (an exec bit set,
                // a file made a symlink); HEAD's when the file is gone.
                let path = root.join(file);
                let mode = if std::fs::symlink_metadata(&path).is_ok() {
                    gitio::file_mode(&path)
                } else {
                    committed
                        .get(file)
                        .map_or_else(|| gitio::file_mode(&path), |b| b.mode.clone())
                };
                TreeEntry::Text { mode, bytes }
            }
        };
        plans.push(Planned {
            file: file.clone(),
            entry,
            hunks: taken,
            left_to_others: left,
        });
    }
    let committed_files: Vec<String> = plans.iter().map(|p| p.file.clone()).collect();
    let whole: Vec<&str> = files
        .iter()
        .filter(|f| f.binary)
        .map(|f| f.file.as_str())
        .collect();
    let intents = observed_intents_of(daemon, &owners, &committed_files, &whole).await;
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
    // The tree is built in a temporary index the hooks then read: the content committed.
    let index = gitio::TempIndex::new(root)?;
    let tree = gitio::write_tree_in(root, &index, head.as_deref(), &entries)?;
    // The repository's hooks, as `git commit` runs them.
    let hooks = Hooks::of(root)?;
    if !args.no_verify {
        hooks.run("pre-commit", &[], Some(index.path()))?;
    }
    let message = hooks.message(
        &with_trailers(&args.message, &intents),
        index.path(),
        args.no_verify,
    )?;
    let commit = gitio::commit_tree(root, &tree, &message, head.as_deref())?;
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
    // Who wrote which committed line, as an Agent Trace record (the commit stands without it).
    let now = crate::coord::time::iso_millis(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0)),
    );
    let trace = agent_trace::record(&commit, &traced, &names.sessions, &now);
    let traced = agent_trace::attach(root, &commit, &trace).is_ok();
    // As in git, post-commit runs last and cannot undo the commit.
    let _ = hooks.run("post-commit", &[], Some(index.path()));
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
        agent_trace: traced,
        subject: args.message.lines().next().unwrap_or_default().to_string(),
    })
}

/// The hunk as a person reads it: `lines 12-18`.
fn describe(hunk: &OwnedHunk) -> String {
    let (first, count) = (hunk.new_start, hunk.new_lines);
    match count {
        0 => format!("lines deleted after line {first}"),
        1 => format!("line {first}"),
        _ => format!("lines {first}-{}", first + count - 1),
    }
}

/// The open observed intents of `sessions` on `files`: what the commit resolves and names in
/// its trailers. Observed work is what the daemon records with regions (13.1); on a file
/// whose change is file-level (`whole`: binary), a session's file-level intent there (no
/// regions, no byte range) is its observed work too.
async fn observed_intents_of(
    daemon: &Doorway,
    sessions: &BTreeSet<String>,
    files: &[String],
    whole: &[&str],
) -> BTreeSet<String> {
    let mut intents = BTreeSet::new();
    for session in sessions {
        let found = daemon
            .call(|client| {
                let params = IntentQueryParams {
                    session_id: Some(session.clone()),
                    file: None,
                    status: None,
                };
                async move { client.intent_query(params).await }
            })
            .await
            .unwrap_or_default();
        intents.extend(
            found
                .into_iter()
                .filter(|i| {
                    let on = |f: &str| files.iter().any(|c| c == f);
                    let mut listed = i.files.split(',').filter(|f| !f.is_empty());
                    if has_regions(i) {
                        listed.any(on)
                    } else {
                        i.start_byte.is_none() && listed.any(|f| on(f) && whole.contains(&f))
                    }
                })
                .map(|i| i.intent_id),
        );
    }
    intents
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
