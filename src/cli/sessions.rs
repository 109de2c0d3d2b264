//! `wit sessions`, `wit session end|heartbeat`.

use clap::{Args, Subcommand};
use serde_json::json;

use super::context::Context;
use super::duration::format_left;
use super::output::{CliError, Report};
use super::render;
use crate::coord::ownership::is_unowned_session;
use crate::protocol::{SessionEndParams, SessionHeartbeatParams, SessionRecord};

/// The name `wit sessions` gives a worktree's unowned work (docs/protocol.md 15.3).
const UNOWNED_NAME: &str = "(unowned work)";

/// What unowned work is, under the table that lists it.
const UNOWNED_NOTE: &str = "unowned: changes on disk no session made (a person's editor, a \
                            formatter, an unhooked agent); `wit blame FILE` shows their lines";

/// `wit session …`.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// End a session cleanly: release its locks and abandon its open intents.
    End(SessionTarget),
    /// A sign of life for this session (renews its lease).
    Heartbeat,
}

/// Which session `wit session end` ends.
#[derive(Debug, Args)]
pub struct SessionTarget {
    /// The session (default: this one).
    pub session_id: Option<String>,
}

/// Runs a `wit session` subcommand.
pub async fn run(ctx: &Context, command: SessionCommand) -> Result<Report, CliError> {
    match command {
        SessionCommand::End(target) => end(ctx, target).await,
        SessionCommand::Heartbeat => heartbeat(ctx).await,
    }
}

async fn end(ctx: &Context, target: SessionTarget) -> Result<Report, CliError> {
    let session_id = match target.session_id {
        Some(id) => id,
        None => ctx.session()?,
    };
    let params = SessionEndParams {
        session_id: session_id.clone(),
    };
    let result = ctx
        .call(|client| {
            let params = params.clone();
            async move { client.session_end(params).await }
        })
        .await?;
    let human = format!(
        "ended {session_id}: {} lock(s) released, {} intent(s) abandoned",
        result.locks_released, result.intents_abandoned
    );
    Ok(Report::new(json!(result), human))
}

async fn heartbeat(ctx: &Context) -> Result<Report, CliError> {
    let params = SessionHeartbeatParams {
        session_id: ctx.session()?,
    };
    let result = ctx
        .call(|client| {
            let params = params.clone();
            async move { client.session_heartbeat(params).await }
        })
        .await?;
    let human = match &result.lease_expires_at {
        Some(at) => format!("{} is live; its lease runs until {at}", result.session_id),
        None => format!("{} is live (no lease)", result.session_id),
    };
    Ok(Report::new(json!(result), human))
}

/// Lists every session the daemon knows, live ones first.
pub async fn list(ctx: &Context) -> Result<Report, CliError> {
    let sessions = ctx
        .call(|client| async move { client.session_list().await })
        .await?;
    let me = ctx.session_if_any()?.map(|(id, _)| id);
    Ok(Report::new(
        json!(sessions),
        sessions_table(&sessions, me.as_deref()),
    ))
}

/// The human table of `wit sessions`.
fn sessions_table(sessions: &[SessionRecord], me: Option<&str>) -> String {
    if sessions.is_empty() {
        return "no sessions".to_string();
    }
    let now = crate::doorway::clock::now_ms();
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            let marker = if Some(s.session_id.as_str()) == me {
                " (you)"
            } else {
                ""
            };
            let unowned = is_unowned_session(&s.session_id);
            let state = match (unowned, s.live) {
                (true, _) => "unowned",
                (false, true) => "live",
                (false, false) => "ended",
            };
            let name = if unowned {
                UNOWNED_NAME.to_owned()
            } else {
                s.name.clone().unwrap_or_else(|| "-".into())
            };
            vec![
                format!("{}{marker}", s.session_id),
                name,
                s.pid.map_or_else(|| "-".into(), |p| p.to_string()),
                state.to_string(),
                format!("{} ago", format_left((now - s.last_seen_at).max(1))),
                s.locks.to_string(),
                s.intents.to_string(),
                worktree_label(s.worktree.as_deref()),
                s.branch.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let table = render::table(
        &[
            "SESSION",
            "NAME",
            "PID",
            "STATE",
            "LAST SEEN",
            "LOCKS",
            "INTENTS",
            "WORKTREE",
            "BRANCH",
        ],
        &rows,
    );
    if sessions.iter().any(|s| is_unowned_session(&s.session_id)) {
        format!("{table}{UNOWNED_NOTE}\n")
    } else {
        table
    }
}

/// A worktree as tables show it: its directory's name (`-` when unknown); JSON has the path.
pub(super) fn worktree_label(root: Option<&str>) -> String {
    root.map_or_else(
        || "-".into(),
        |root| {
            std::path::Path::new(root)
                .file_name()
                .map_or_else(|| root.to_owned(), |n| n.to_string_lossy().into_owned())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_marks_this_session_and_dead_ones() {
        let record = |id: &str, live: bool| SessionRecord {
            session_id: id.into(),
            name: Some("claude".into()),
            agent_id: Some(1),
            pid: Some(42),
            live,
            pid_unknown: None,
            last_seen_at: crate::doorway::clock::now_ms(),
            locks: 2,
            intents: 1,
            worktree: live.then(|| "/tmp/repo-w1".into()),
            branch: live.then(|| "feature".into()),
        };
        let text = sessions_table(&[record("a", true), record("b", false)], Some("a"));
        assert!(text.contains("a (you)"), "{text}");
        assert!(text.contains("ended"), "{text}");
        assert!(text.contains("SESSION"), "{text}");
        assert!(text.contains("repo-w1"), "{text}");
        assert!(text.contains("feature"), "{text}");
        assert_eq!(sessions_table(&[], None), "no sessions");
        let plain = sessions_table(&[record("a", true)], None);
        assert!(!plain.contains("unowned"), "{plain}");
        let mut work = record("unowned:/tmp/repo", true);
        work.name = None;
        let text = sessions_table(&[record("a", true), work], None);
        let row = text
            .lines()
            .find(|l| l.contains("unowned:/tmp/repo"))
            .unwrap_or_default();
        assert!(
            row.contains("(unowned work)") && row.contains("unowned") && !row.contains("live"),
            "{text}"
        );
        assert!(text.contains("a person's editor"), "{text}");
    }
}
