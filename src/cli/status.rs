//! `wit status` and `wit watch`.

use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};

use super::context::Context;
use super::duration::parse_duration;
use super::output::{self, CliError, Report};
use super::render;
use crate::client::{ClientError, WitClient};
use crate::coord::ownership::is_unowned_session;
use crate::protocol::{
    ContractQueryParams, ContractRecord, ContractRecordStatus, EventsPollParams, IntentQueryParams,
    IntentRecord, LineRegion, LockQueryParams, LockRecord, SessionRecord,
};

/// The longest wait `events.poll` accepts.
const MAX_POLL_WAIT_MS: i64 = 60_000;

/// `wit watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Redraw at least this often, to count down the locks' time left (every change redraws
    /// at once): 10s, 1m …
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub interval: Duration,
}

/// What `status` shows.
struct Snapshot {
    /// Every open intent, the unowned work's too (as `--json` has always listed them).
    intents: Vec<IntentRecord>,
    locks: Vec<LockRecord>,
    contracts: Vec<ContractRecord>,
    /// Live sessions, with the worktree and branch each acts from (unowned work is none).
    sessions: Vec<SessionRecord>,
}

impl Snapshot {
    /// Open intents (the query's default: declared and active), live locks, and contracts
    /// that are proposed or accepted.
    async fn fetch(client: &WitClient) -> Result<Self, ClientError> {
        let intents = client.intent_query(IntentQueryParams::default()).await?;
        let (locks, contracts, sessions) = tokio::join!(
            client.lock_query(LockQueryParams::default()),
            client.contract_query(ContractQueryParams::default()),
            client.session_list(),
        );
        Ok(Self {
            intents,
            locks: locks?,
            sessions: sessions?
                .into_iter()
                .filter(|s| s.live && !is_unowned_session(&s.session_id))
                .collect(),
            contracts: contracts?
                .into_iter()
                .filter(|c| {
                    matches!(
                        c.status,
                        ContractRecordStatus::Proposed | ContractRecordStatus::Accepted
                    )
                })
                .collect(),
        })
    }

    /// The data without the time left, to notice changes.
    fn key(&self) -> Value {
        let locks: Vec<Value> = self
            .locks
            .iter()
            .map(|l| json!([l.symbol_path, l.session_id, l.expires_at]))
            .collect();
        let sessions: Vec<Value> = self
            .sessions
            .iter()
            .map(|s| json!([s.session_id, s.worktree, s.branch]))
            .collect();
        json!({"intents": self.intents, "locks": locks, "contracts": self.contracts,
               "sessions": sessions})
    }
}

fn session_json(ctx: &Context) -> Result<(Value, String), CliError> {
    Ok(match ctx.session_if_any()? {
        Some((id, source)) => (
            json!({"id": id, "source": source.label()}),
            format!("session: {id} (from {})", source.label()),
        ),
        None => (
            Value::Null,
            "session: none yet (set WIT_SESSION, or run `wit init`)".to_string(),
        ),
    })
}

fn render(ctx: &Context, snapshot: &Snapshot) -> Result<(Value, String), CliError> {
    let (session, session_line) = session_json(ctx)?;
    let (unowned, agents): (Vec<IntentRecord>, Vec<IntentRecord>) = snapshot
        .intents
        .iter()
        .cloned()
        .partition(|intent| is_unowned_session(&intent.session_id));
    let value = json!({
        "root": ctx.paths.root.display().to_string(),
        "session": session,
        "intents": snapshot.intents,
        "locks": snapshot.locks,
        "contracts": snapshot.contracts,
        "sessions": snapshot.sessions,
        "unowned": unowned,
        "index": super::index_progress::current(&ctx.paths),
        "watch": super::index_progress::watch_status(&ctx.paths),
    });
    let human = format!(
        "wit status for {}\n{session_line}\nindex: {}\nwatch: {}\n\n{}\n{}{}\n{}\n{}",
        ctx.paths.root.display(),
        super::index_progress::current(&ctx.paths)
            .map_or_else(|| "not published yet".to_owned(), |s| s.summary()),
        super::index_progress::watch_status(&ctx.paths)
            .map_or_else(|| "file-system notification".to_owned(), |s| s.summary()),
        render::intents_section(&agents),
        unowned_section(&unowned).map_or_else(String::new, |text| format!("{text}\n")),
        render::locks_section(&snapshot.locks),
        render::contracts_section(&snapshot.contracts),
        sessions_section(&snapshot.sessions),
    );
    Ok((value, human))
}

/// The worktrees' unowned work (docs/protocol.md 15.3): changed lines no session made, one
/// row per file, with the worktree they are in; `None` when there is none (no section then).
fn unowned_section(intents: &[IntentRecord]) -> Option<String> {
    if intents.is_empty() {
        return None;
    }
    let rows: Vec<Vec<String>> = intents
        .iter()
        .map(|intent| {
            let root = intent
                .session_id
                .split_once(':')
                .map_or("", |(_, root)| root);
            vec![
                render::intent_files(&intent.files).join(","),
                lines_text(&intent.regions),
                super::sessions::worktree_label(Some(root)),
            ]
        })
        .collect();
    let body = format!(
        "  changes on disk no session made (a person's editor, a formatter, an unhooked agent); \
         `wit blame FILE` shows whose each line is\n{}",
        render::table(&["FILE", "LINES", "WORKTREE"], &rows)
    );
    Some(render::section("UNOWNED WORK", intents.len(), body))
}

/// Observed lines as `2-4,9`; `whole file` when the work has no regions (file-level).
fn lines_text(regions: &[LineRegion]) -> String {
    if regions.is_empty() {
        return "whole file".to_owned();
    }
    regions
        .iter()
        .map(|r| {
            if r.start_line == r.end_line {
                r.start_line.to_string()
            } else {
                format!("{}-{}", r.start_line, r.end_line)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The live sessions as a table, each with the worktree and branch it acts from.
fn sessions_section(sessions: &[SessionRecord]) -> String {
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            vec![
                s.session_id.clone(),
                s.name.clone().unwrap_or_else(|| "-".into()),
                super::sessions::worktree_label(s.worktree.as_deref()),
                s.branch.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    render::section(
        "SESSIONS",
        sessions.len(),
        render::table(&["SESSION", "NAME", "WORKTREE", "BRANCH"], &rows),
    )
}

/// Shows intents, locks and contracts.
pub async fn status(ctx: &Context) -> Result<Report, CliError> {
    let snapshot = ctx
        .call(|client| async move { Snapshot::fetch(&client).await })
        .await?;
    let (value, human) = render(ctx, &snapshot)?;
    Ok(Report::new(value, human))
}

/// Redraws the status whenever something changes (the daemon's events wake it), and at
/// least every `--interval`, until Ctrl-C.
pub async fn watch(ctx: &Context, args: &WatchArgs) -> Result<Report, CliError> {
    let mut since = ctx
        .call(|client| async move { client.events_poll(EventsPollParams::default()).await })
        .await?
        .next;
    let client = ctx.client();
    let wait_ms = i64::try_from(args.interval.as_millis())
        .unwrap_or(i64::MAX)
        .clamp(1, MAX_POLL_WAIT_MS);
    let mut last_key = Value::Null;
    let mut last_text = String::new();
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        match Snapshot::fetch(&client).await {
            Ok(snapshot) => {
                let (value, human) = render(ctx, &snapshot)?;
                let key = snapshot.key();
                if ctx.json {
                    if key != last_key {
                        output::out_text(&value.to_string());
                    }
                } else if human != last_text {
                    output::redraw(&format!(
                        "{human}\n(live: redraws on every change; Ctrl-C to quit)"
                    ));
                }
                last_key = key;
                last_text = human;
            }
            Err(error) => {
                let text = output::error_text(&CliError::from(error));
                if text != last_text {
                    if ctx.json {
                        output::out_text(&json!({"error": text}).to_string());
                    } else {
                        output::redraw(&format!("{text}\n(retrying; Ctrl-C to quit)"));
                    }
                    last_key = Value::Null;
                    last_text = text;
                }
            }
        }
        let next_change = client.events_poll(EventsPollParams {
            since: Some(since),
            wait_ms: Some(wait_ms),
            limit: Some(1000),
            types: Vec::new(),
        });
        tokio::select! {
            _ = &mut interrupted => break,
            answer = next_change => match answer {
                Ok(page) => since = page.next,
                // The daemon is gone: look again in a second (the snapshot shows the error).
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            },
        }
    }
    Ok(Report::nothing())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unowned_work_is_listed_by_file_lines_and_worktree() {
        let intent: IntentRecord = serde_json::from_value(json!({
            "intentId": "i1", "sessionId": "unowned:/tmp/repo-w1", "description": "observed edit",
            "files": ",src/a.py,", "symbols": "[]", "status": "active", "declaredAt": 1,
            "updatedAt": 1, "startByte": null, "endByte": null, "regions": [{"startLine": 2, "endLine": 4}, {"startLine": 9, "endLine": 9}],
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let text = unowned_section(&[intent]).unwrap_or_default();
        assert!(text.starts_with("UNOWNED WORK (1)\n"), "{text}");
        assert!(text.contains("a person's editor"), "{text}");
        let row = text
            .lines()
            .find(|l| l.contains("src/a.py"))
            .unwrap_or_default();
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["src/a.py", "2-4,9", "repo-w1"]
        );
        assert_eq!(lines_text(&[]), "whole file");
        assert_eq!(unowned_section(&[]), None);
    }
}
