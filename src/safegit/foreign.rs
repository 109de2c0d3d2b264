//! The pre-commit hook (`wit hook pre-commit`: contracts, then foreign lines, one budget, one
//! line) and its foreign-lines check (`wit hook check-foreign`, any committer, any
//! tool): when the staged content holds lines another live session changed and the
//! committer's session did not, the commit is blocked (policy `[gate] git`: deny and ask
//! block, warn lets it through with the warning, off says nothing), naming the sessions,
//! files and lines. `WIT_ALLOW_FOREIGN=1` lets a person commit them on purpose.
//!
//! Silent and fast when nothing is at stake (docs/protocol.md 6): no file of a supported
//! language staged, no daemon socket, or no other live session with work in a staged file costs no diff. It fails open:
//! no daemon answer within 2 s, or any error, lets the commit through.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::cli::context::Context;
use crate::cli::contracts::{self, is_supported_path};
use crate::cli::gitio;
use crate::cli::hunks;
use crate::cli::output::{self, CliError, Report};
use crate::cli::owners::{covered_lines, AtStake, Names, OwnerView, Theirs};
use crate::hooks::policy::{self, Action};

/// The variable that lets a commit of foreign lines through.
pub const ALLOW_ENV: &str = "WIT_ALLOW_FOREIGN";

/// How long the check waits for the daemon.
const BUDGET: Duration = Duration::from_secs(2);

/// What the `pre-commit` hook runs (`wit hook pre-commit`): the contracts check, then the
/// foreign-lines check, sharing one budget ([`contracts::hook_budget`], 2 s) and at most one
/// warning line (docs/protocol.md 6). Exit 1 (a broken contract, or `Err`: foreign lines)
/// blocks the commit; running out of time or any failure to check lets it through.
pub async fn pre_commit(ctx: &Context) -> Result<Report, CliError> {
    let budget = contracts::hook_budget();
    let started = Instant::now();
    let not_done = |reason: &str| {
        Ok(
            Report::quiet(json!({"checked": false, "reason": reason})).with_note(format!(
                "wit: pre-commit checks not done ({reason}); commit allowed"
            )),
        )
    };
    match tokio::time::timeout(budget, contracts::check_staged_for_hook(ctx)).await {
        Ok(Ok(report)) if report.code() != 0 => return Ok(report),
        Ok(Ok(_)) => {}
        Ok(Err(error)) => {
            let text = output::error_text(&error);
            let first = text
                .trim_start_matches("wit: ")
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            return not_done(&first);
        }
        Err(_) => return not_done(&format!("no answer within {} ms", budget.as_millis())),
    }
    let left = budget.saturating_sub(started.elapsed());
    if left.is_zero() {
        return not_done(&format!("no answer within {} ms", budget.as_millis()));
    }
    check_within(ctx, left).await
}

/// Runs the check with its own 2 s budget (`wit hook check-foreign`, called by hooks that
/// older `wit hook install`s wrote); `Err` (exit 1) blocks the commit.
pub async fn check(ctx: &Context) -> Result<Report, CliError> {
    check_within(ctx, BUDGET).await
}

/// Runs the check within `budget`; `Err` (exit 1) blocks the commit.
async fn check_within(ctx: &Context, budget: Duration) -> Result<Report, CliError> {
    let root = &ctx.paths.root;
    if std::env::var(ALLOW_ENV).is_ok_and(|v| !v.is_empty() && v != "0") {
        return Ok(Report::nothing());
    }
    // Observed work is only ever on files of a supported language (the edit gate records
    // nothing else): a commit of other files asks no daemon (docs/protocol.md 6).
    let staged_all = staged_files(root);
    if !staged_all.iter().any(|path| is_supported_path(path)) || !ctx.paths.socket.exists() {
        return Ok(Report::nothing());
    }
    let action = match policy::load(root) {
        Ok((policy, _)) => policy.git,
        Err(_) => return Ok(Report::nothing()),
    };
    if action == Action::Off {
        return Ok(Report::nothing());
    }
    let client = ctx.client().with_timeout(budget);
    let me = ctx.session_if_any().ok().flatten().map(|(id, _)| id);
    // Whose lines the staged files hold, seen from the committer (the daemon's rule): every
    // staged file, not only the supported ones, now that the tree is watched (15.3).
    let asked = async {
        let view = OwnerView::load(&client, me.as_deref(), &staged_all).await?;
        if view.theirs().is_empty() {
            return Ok((view, Names::default()));
        }
        let names = Names::load(&client).await.unwrap_or_default();
        Ok::<_, crate::client::ClientError>((view, names))
    };
    let Ok(Ok((view, names))) = tokio::time::timeout(budget, asked).await else {
        return Ok(Report::nothing().with_note(
            "wit: no daemon answer; staged lines of other sessions not checked, commit allowed"
                .to_string(),
        ));
    };
    let stake = foreign_lines(root, &view);
    if stake.is_empty() {
        return Ok(Report::nothing());
    }
    let mut text =
        String::from("the staged changes hold uncommitted lines of other live sessions:\n");
    for line in stake.lines(&names) {
        text.push_str(&format!("  {line}\n"));
    }
    text.push_str(&format!(
        "Unstage them (`git restore --staged FILE`) and commit only your own lines with `wit commit -m \"MSG\"`, or ask {} to commit first; {ALLOW_ENV}=1 commits them anyway.",
        stake.names(&names)
    ));
    match action {
        Action::Warn => Ok(Report::nothing().with_note(format!("wit: warning: {text}"))),
        Action::Off => Ok(Report::nothing()),
        Action::Ask | Action::Deny => Err(CliError::Failed(format!("commit blocked: {text}"))),
    }
}

/// The staged lines of `view`'s files that hold other agents' live work and none of the
/// committer's: per hunk of theirs, the staged changes (HEAD to the index) located in the
/// working text, where the daemon's hunks are.
fn foreign_lines(root: &std::path::Path, view: &OwnerView) -> AtStake {
    let mut stake = AtStake::default();
    let theirs = view.theirs();
    let mut files: Vec<&str> = theirs.iter().map(|t| t.file).collect();
    files.sort_unstable();
    files.dedup();
    let head = gitio::head(root);
    let committed = match &head {
        Some(head) => gitio::blobs(root, head, &files).unwrap_or_default(),
        None => Default::default(),
    };
    for file in files {
        let Some(index_text) = gitio::staged(root, file) else {
            continue;
        };
        let old = committed.get(file).map_or(&[][..], |b| b.bytes.as_slice());
        let mine_too = |t: &&Theirs<'_>| t.hunk.mine == Some(true);
        let here: Vec<_> = theirs.iter().filter(|t| t.file == file).collect();
        if here.iter().any(|t| t.binary) {
            // A binary file's work is the whole file: staging any change of it takes it.
            for work in here.iter().filter(|t| !mine_too(t)) {
                stake.add(work);
            }
            continue;
        }
        let working = std::fs::read(root.join(file)).unwrap_or_default();
        let (old_l, index_l, work_l) = (
            hunks::lines(old),
            hunks::lines(&index_text),
            hunks::lines(&working),
        );
        // Staged lines, located in the working text where the hunks are.
        let to_working = hunks::line_map(&index_l, &work_l);
        let staged_lines: Vec<usize> = hunks::hunks(&old_l, &index_l)
            .iter()
            .flat_map(|hunk| {
                let (first, last) = hunk.new_lines();
                first..=last
            })
            .filter_map(|line| to_working.get(line.wrapping_sub(1)).copied().flatten())
            .collect();
        for work in here.iter().filter(|t| !mine_too(t)) {
            let Some((first, last)) = covered_lines(work.span()) else {
                continue;
            };
            if staged_lines.iter().any(|l| first <= *l && *l <= last) {
                stake.add(work);
            }
        }
    }
    stake
}

/// The files the index changes against `HEAD` (all of them without a `HEAD`).
fn staged_files(root: &std::path::Path) -> Vec<String> {
    let out = match gitio::head(root) {
        Some(_) => gitio::run(
            root,
            &["diff", "--cached", "--name-only", "-z", "--no-renames"],
        ),
        None => gitio::run(root, &["ls-files", "-z"]),
    };
    out.map(|bytes| {
        bytes
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
    })
    .unwrap_or_default()
}
