//! The Agent Trace record of a `wit commit` (docs/protocol.md 15.6; the cursor/agent-trace
//! specification, v0.1.0): which session — agent name and harness — wrote which lines of the
//! commit, as a git note of the commit under `refs/notes/agent-trace` (`git log
//! --notes=agent-trace` shows it).
//!
//! The note is the specification's Trace Record (`version`, `id`, `timestamp`, `vcs`, `tool`,
//! `files[].conversations[].ranges`, one conversation per session, its url `wit://session/ID`)
//! with wit's own data under `metadata["dev.wit"]`, and, as the specification's extensibility
//! allows, a `ledger` section in the shape readers that keep their records as git notes
//! (`agent-trace-cli`'s `agent-trace blame`) take line attributions from.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use super::commit_plan::CommittedLines;
use super::gitio;
use super::output::CliError;
use crate::protocol::SessionRecord;

/// The notes ref the record is written to.
pub const NOTES_REF: &str = "agent-trace";

/// The specification version written.
const VERSION: &str = "0.1.0";

/// The url naming a session's conversation.
fn session_url(session: &str) -> String {
    let safe: String = session
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("wit://session/{safe}")
}

/// The record of commit `commit`: `files` are each committed file's attributed lines.
pub fn record(
    commit: &str,
    files: &[(String, Vec<CommittedLines>)],
    sessions: &[SessionRecord],
    now_iso: &str,
) -> Value {
    let mut seen: BTreeMap<String, Value> = BTreeMap::new();
    let mut trace_files = Vec::new();
    let mut ledger = serde_json::Map::new();
    for (path, lines) in files {
        let mut by_session: BTreeMap<String, Vec<(i64, i64)>> = BTreeMap::new();
        for run in lines {
            for session in &run.sessions {
                by_session
                    .entry(session.clone())
                    .or_default()
                    .push((run.start_line, run.end_line));
            }
        }
        if by_session.is_empty() {
            continue;
        }
        let conversations: Vec<Value> = by_session
            .iter()
            .map(|(session, ranges)| {
                let known = sessions.iter().find(|s| s.session_id == *session);
                seen.insert(
                    session.clone(),
                    json!({
                        "name": known.and_then(|s| s.name.clone()),
                        "agentId": known.and_then(|s| s.agent_id),
                        "pid": known.and_then(|s| s.pid),
                    }),
                );
                json!({
                    "url": session_url(session),
                    "contributor": {"type": "ai"},
                    "ranges": ranges
                        .iter()
                        .map(|(start, end)| json!({"start_line": start, "end_line": end}))
                        .collect::<Vec<_>>(),
                    "related": [{"type": "session", "url": session_url(session)}],
                })
            })
            .collect();
        trace_files.push(json!({"path": path, "conversations": conversations}));
        let attributions: Vec<Value> = by_session
            .iter()
            .flat_map(|(session, ranges)| {
                ranges.iter().map(move |(start, end)| {
                    json!({"start_line": start, "end_line": end, "type": "ai",
                           "conversation_id": session})
                })
            })
            .collect();
        ledger.insert(path.clone(), json!({"line_attributions": attributions}));
    }
    json!({
        "version": VERSION,
        "id": uuid::Uuid::new_v4().to_string(),
        "timestamp": now_iso,
        "vcs": {"type": "git", "revision": commit},
        "tool": {"name": "wit", "version": env!("CARGO_PKG_VERSION")},
        "files": trace_files,
        "metadata": {"dev.wit": {"sessions": seen}},
        "ledger": {"files": ledger},
    })
}

/// Attaches `record` to `commit` under [`NOTES_REF`].
pub fn attach(root: &Path, commit: &str, record: &Value) -> Result<(), CliError> {
    let text = serde_json::to_vec_pretty(record)
        .map_err(|e| CliError::Failed(format!("cannot write the Agent Trace record: {e}")))?;
    gitio::run_with(
        root,
        &["notes", "--ref", NOTES_REF, "add", "-f", "-F", "-", commit],
        &[],
        Some(&text),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_each_sessions_lines() {
        let lines = vec![
            CommittedLines {
                sessions: vec!["alice".into()],
                start_line: 2,
                end_line: 3,
            },
            CommittedLines {
                sessions: Vec::new(),
                start_line: 9,
                end_line: 9,
            },
        ];
        let value = record(
            "abc",
            &[("src/a.ts".into(), lines)],
            &[],
            "2026-12-02T00:00:00Z",
        );
        assert_eq!(value["version"], "0.1.0");
        assert_eq!(value["vcs"]["revision"], "abc");
        let conversation = &value["files"][0]["conversations"][0];
        assert_eq!(conversation["url"], "wit://session/alice");
        assert_eq!(
            conversation["ranges"],
            json!([{"start_line": 2, "end_line": 3}])
        );
        assert_eq!(
            value["ledger"]["files"]["src/a.ts"]["line_attributions"][0]["conversation_id"],
            "alice"
        );
        assert_eq!(session_url("unowned:/r"), "wit://session/unowned%3A%2Fr");
    }
}
