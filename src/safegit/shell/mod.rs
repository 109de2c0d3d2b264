//! The shell gate: what an agent's pre-tool hook runs for a shell command (Claude Code and
//! Codex `Bash`, Gemini CLI `run_shell_command`, Cursor `Shell` / `beforeShellExecution`,
//! Copilot CLI `bash`). It reads the command line ([`words`]), finds the git calls that would
//! take or drop uncommitted work ([`git`]) and asks the daemon whose uncommitted lines those
//! are ([`crate::cli::owners`]).
//!
//! It denies (policy `[gate] git`, default deny) only when a call would take or drop lines
//! another live session changed and has not committed, naming the sessions, files and
//! lines and what to do instead. Everything else passes untouched; a line it cannot read
//! passes with a note. When the policy lets a destructive call through (warn, off), the
//! affected files are saved first as a snapshot ([`crate::cli::snapshots`]). Like the edit
//! gate it fails open: no `.wit/`, no daemon answer within the budget, any error.

pub mod at_stake;
pub mod classify;
pub mod config;
pub mod git;
pub mod grammar;
pub mod line;
pub mod scope;
pub mod words;

#[cfg(test)]
mod table_tests;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use self::config::GitConfig;
use self::git::{Effect, Risk};
use crate::cli::agent_config::Agent;
use crate::cli::output::{self, Report};
use crate::cli::owners::{AtStake, Names, OwnerView};
use crate::cli::snapshots;
use crate::daemon::paths::WitPaths;
use crate::doorway;
use crate::hooks::claude::string_field;
use crate::hooks::hook_input::{find_root, gated_paths, hook_session, working_dir, Deadline};
use crate::hooks::policy::{self, Action};
use crate::hooks::pre_edit::{self, Decision, Verdict};

/// A shell command a harness is about to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRequest {
    /// The harness's session id, when the payload has one.
    pub session: Option<String>,
    /// The directory it runs in, when the payload says.
    pub cwd: Option<PathBuf>,
    /// The command line.
    pub command: String,
    /// Cursor's `beforeShellExecution` (its own answer shape) rather than a pre-tool hook.
    pub cursor_shell_event: bool,
    /// The payload's hook event when the harness answers it in a shape of its own (Claude
    /// Code's `PreSkillShellCommand`).
    pub event: Option<String>,
    /// Why the command line cannot be read (a PowerShell line whose arguments are computed
    /// at run time): the gate then says it cannot tell.
    pub unreadable: Option<String>,
}

/// The shell tools of the harnesses (pre-tool hooks name them so).
const SHELL_TOOLS: &[&str] = &[
    "Bash",
    "bash",
    "shell",
    "Shell",
    "exec",
    "exec_command",
    "local_shell",
    "run_shell_command",
    "container.exec",
    "PowerShell",
];

/// The shell command in a harness's hook payload; `None` when the payload is not one.
pub fn shell_request(payload: &Value) -> Option<ShellRequest> {
    let session = ["session_id", "conversation_id", "sessionId"]
        .iter()
        .find_map(|key| string_field(payload, key));
    let cwd = crate::hooks::hook_input::payload_cwd(payload).map(PathBuf::from);
    if payload.get("hook_event_name").and_then(Value::as_str) == Some("beforeShellExecution") {
        return Some(ShellRequest {
            session,
            cwd,
            command: string_field(payload, "command")?,
            cursor_shell_event: true,
            event: None,
            unreadable: None,
        });
    }
    let tool = ["tool_name", "toolName"]
        .iter()
        .find_map(|key| payload.get(*key).and_then(Value::as_str))?;
    if !SHELL_TOOLS.contains(&tool) {
        return None;
    }
    // Copilot CLI sends its arguments as a JSON string.
    let input = match payload
        .get("tool_input")
        .or_else(|| payload.get("toolArgs"))?
    {
        Value::String(text) => serde_json::from_str(text).ok()?,
        other => other.clone(),
    };
    let command = match input.get("command").or_else(|| input.get("cmd"))? {
        Value::String(text) => text.clone(),
        // Codex's exec: `["bash", "-lc", "git …"]`, or plain argv.
        Value::Array(items) => {
            let argv: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            match argv.as_slice() {
                [shell, flag, script]
                    if ["bash", "sh", "zsh"].contains(&shell.rsplit('/').next().unwrap_or(""))
                        && flag.starts_with('-')
                        && flag.contains('c') =>
                {
                    (*script).to_string()
                }
                _ => argv
                    .iter()
                    .map(|a| crate::safegit::git::shell_quote(a))
                    .collect::<Vec<_>>()
                    .join(" "),
            }
        }
        _ => return None,
    };
    let cwd = cwd.or_else(|| string_field(&input, "workdir").map(PathBuf::from));
    let event = payload
        .get("hook_event_name")
        .and_then(Value::as_str)
        .filter(|event| *event == crate::hooks::claude::SKILL_SHELL_EVENT)
        .map(str::to_string);
    // PowerShell: read as the POSIX line that runs the same programs, when it is one.
    let (command, unreadable) = if tool == "PowerShell" {
        match crate::hooks::powershell::as_posix(&command) {
            Ok(posix) => (posix, None),
            Err(why) => (command, Some(why.to_string())),
        }
    } else {
        (command, None)
    };
    Some(ShellRequest {
        session,
        cwd,
        command,
        cursor_shell_event: false,
        event,
        unreadable,
    })
}

/// Runs the shell gate on `request` and answers as `agent` (or Cursor's shell event) would
/// expect; always exit code 0.
pub fn run(
    agent: Agent,
    request: ShellRequest,
    repo: Option<&Path>,
    session_flag: Option<&str>,
    deadline: Deadline,
) -> Report {
    let mut notes = Vec::new();
    let verdict = gate(&request, repo, session_flag, deadline, &mut notes);
    if verdict.decision == Decision::Allow {
        open_window(&request, repo, session_flag, deadline);
    }
    let answer = match (&request.event, agent) {
        _ if request.cursor_shell_event => cursor_shell_answer(&verdict),
        (Some(event), Agent::Claude) => crate::hooks::claude::answer_to(event, &verdict),
        // Harnesses that answer by exit code.
        (_, Agent::Windsurf | Agent::Kiro) => {
            let mut report = pre_edit::report(agent, &verdict);
            for note in notes {
                report = report.with_note(note);
            }
            return report;
        }
        _ => pre_edit::answer(agent, &verdict),
    };
    let mut report = match answer {
        Some(value) => {
            let mut bytes = value.to_string().into_bytes();
            bytes.push(b'\n');
            Report::raw(bytes)
        }
        None => Report::nothing(),
    };
    for note in notes {
        report = report.with_note(note);
    }
    report
}

/// Opens the tool-call window of a command the gate lets through (15.2), when the
/// repository's daemon is running (a window needs its observer); silent on any failure.
fn open_window(
    request: &ShellRequest,
    repo: Option<&Path>,
    session_flag: Option<&str>,
    deadline: Deadline,
) {
    let Some(cwd) = working_dir(request.cwd.clone()) else {
        return;
    };
    let Some(root) = find_root(repo, &cwd) else {
        return;
    };
    let paths = WitPaths::for_root(&root);
    if !paths.socket.exists() {
        return;
    }
    let Some(session) = hook_session(session_flag, request.session.as_deref(), &paths) else {
        return;
    };
    let doorway = deadline.doorway(paths.clone(), false);
    let _ = doorway::block_on(crate::hooks::windows::open(
        &doorway,
        &paths,
        &session,
        "shell",
        &[],
    ));
}

/// Cursor's `beforeShellExecution` answer.
fn cursor_shell_answer(verdict: &Verdict) -> Option<Value> {
    match verdict.decision {
        Decision::Allow => verdict
            .context
            .as_ref()
            .map(|context| json!({"permission": "allow", "agentMessage": context})),
        Decision::Ask => Some(json!({
            "permission": "ask",
            "userMessage": verdict.reason,
            "agentMessage": verdict.reason,
        })),
        Decision::Deny => Some(json!({
            "permission": "deny",
            "userMessage": verdict.reason,
            "agentMessage": verdict.reason,
        })),
    }
}

fn passed(note: &str) -> String {
    format!("wit: {note}; command allowed")
}

fn gate(
    request: &ShellRequest,
    repo: Option<&Path>,
    session_flag: Option<&str>,
    deadline: Deadline,
    notes: &mut Vec<String>,
) -> Verdict {
    if let Some(why) = &request.unreadable {
        notes.push(passed(&format!("cannot read this PowerShell line: {why}")));
        return Verdict {
            decision: Decision::Allow,
            reason: None,
            context: Some(format!(
                "wit cannot tell whether this PowerShell command's git calls take other sessions' uncommitted work ({why}); run git with plain arguments, or through Bash, to have it checked"
            )),
        };
    }
    let Some(cwd) = working_dir(request.cwd.clone()) else {
        return Verdict::allow();
    };
    // Every line is read (quote removal first): `gi''t stash` is `git stash`. Reading costs
    // microseconds; only a line with a risky git call goes further.
    let config = GitConfig::default();
    let analysis = line::analyse(&request.command, &cwd, &config);
    // What the parse could not follow: a note beside whatever the verdict is.
    notes.extend(analysis.notes.iter().map(|note| format!("wit: {note}")));
    if analysis.risks.is_empty() {
        return Verdict::allow();
    }
    let Some(root) = analysis
        .risks
        .iter()
        .find_map(|risk| find_root(repo, risk.work_tree.as_deref().unwrap_or(&risk.dir)))
    else {
        return Verdict::allow();
    };
    let Some(paths) = gated_paths(&root) else {
        return Verdict::allow();
    };
    let policy = match policy::load(&root) {
        Ok((policy, _)) => policy,
        Err(error) => {
            notes.push(passed(&format!("gate policy ignored ({error})")));
            return Verdict::allow();
        }
    };
    let Some(session) = hook_session(session_flag, request.session.as_deref(), &paths) else {
        notes.push(passed("no session id"));
        return Verdict::allow();
    };
    let risks: Vec<&Risk> = analysis.risks.iter().collect();
    let home = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
    let mut ask =
        |tree: &Path, files: Option<&[String]>| owner_view(tree, &home, &session, files, deadline);
    let found = match at_stake::at_stake(&risks, &mut ask) {
        Ok(found) => found,
        Err(error) => {
            notes.push(passed(&format!("command not checked ({error})")));
            return Verdict::allow();
        }
    };
    if found.stake.is_empty() && found.unowned.is_empty() {
        return Verdict::allow();
    }
    // Names for the message (only now: a line with nothing at stake never asks).
    let map = names(&paths, deadline);
    // Sessions' work under `[gate] git`, unowned work under `[gate] unowned`
    // (docs/protocol.md 15.3); the stricter of the two that apply decides.
    let sessions_action = (!found.stake.is_empty()).then_some(policy.git);
    let unowned_action = (!found.unowned.is_empty()).then_some(policy.unowned);
    let action = sessions_action
        .into_iter()
        .chain(unowned_action)
        .max()
        .unwrap_or(Action::Off);
    let mut parts = Vec::new();
    if sessions_action.is_some_and(|a| a != Action::Off) {
        parts.push(reason(&map, &found.stake, &found.risks));
    }
    if unowned_action.is_some_and(|a| a != Action::Off) {
        parts.push(unowned_reason(&map, &found.unowned, &found.risks));
    }
    let reason = parts.join("\n");
    match action {
        Action::Deny => Verdict {
            decision: Decision::Deny,
            reason: Some(reason),
            context: None,
        },
        Action::Ask => Verdict {
            decision: Decision::Ask,
            reason: Some(reason),
            context: None,
        },
        Action::Warn | Action::Off => {
            let mut context = (action == Action::Warn && !reason.is_empty()).then_some(reason);
            // Whose work the snapshot keeps: the sessions' and the unowned lines alike.
            let mut whose = found.stake.clone();
            whose.by_session.extend(found.unowned.by_session.clone());
            let what = found
                .risks
                .iter()
                .find(|r| r.effect.destroys())
                .map(|r| r.command.clone())
                .unwrap_or_default();
            for (tree, files) in &found.destroying {
                match snapshots::save(tree, files, &what, &whose.names(&map)) {
                    Ok(id) => {
                        let line = format!(
                            "wit: saved the uncommitted work of {} first as snapshot {id} (`wit snapshots restore {id}`)",
                            whose.names(&map)
                        );
                        notes.push(line.clone());
                        if let Some(context) = &mut context {
                            context.push('\n');
                            context.push_str(&line);
                        }
                    }
                    Err(error) => notes.push(format!(
                        "wit: could not save a snapshot before `{what}`: {}",
                        output::error_text(&error)
                    )),
                }
            }
            Verdict {
                decision: Decision::Allow,
                reason: None,
                context,
            }
        }
    }
}

/// The owner view of the work tree at `tree` seen from `session`: `work.changes` on the
/// socket of that tree's daemon, asked within the gate's deadline (the repository's own tree
/// may start its daemon; another tree no daemon serves has no work known: `None`).
fn owner_view(
    tree: &Path,
    home: &Path,
    session: &str,
    files: Option<&[String]>,
    deadline: Deadline,
) -> Result<Option<OwnerView>, String> {
    let paths = WitPaths::for_root(tree);
    let autostart = tree == home && doorway::autostart_from_env();
    if !autostart && !paths.socket.exists() {
        return Ok(None);
    }
    let doorway = deadline.doorway(paths, autostart);
    let files = files.unwrap_or_default();
    let loaded = doorway::block_on(
        doorway.call(|client| async move { OwnerView::load(&client, Some(session), files).await }),
    );
    match loaded {
        Ok(Ok(view)) => Ok(Some(view)),
        Ok(Err(error)) => {
            let text = error.to_string();
            Err(text.lines().next().unwrap_or_default().to_string())
        }
        Err(error) => Err(error.to_string()),
    }
}

/// The sessions' names for a message (`session.list`); none when the daemon does not say.
fn names(paths: &WitPaths, deadline: Deadline) -> Names {
    let doorway = deadline.doorway(paths.clone(), false);
    doorway::block_on(doorway.call(|client| async move { Names::load(&client).await }))
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default()
}

/// The reason: what would happen to whose work, and what to do instead.
fn reason(map: &Names, stake: &AtStake, risks: &[&Risk]) -> String {
    let takes = risks.iter().any(|r| r.effect == Effect::Takes);
    let (unreadable, calls): (Vec<&&Risk>, Vec<&&Risk>) =
        risks.iter().partition(|r| r.effect == Effect::CannotTell);
    let commands: Vec<String> = calls.iter().map(|r| format!("`{}`", r.command)).collect();
    let verb = if calls.iter().any(|r| r.effect.destroys()) {
        if takes {
            "would take or throw away"
        } else {
            "would throw away or move"
        }
    } else {
        "would take"
    };
    let mut text = String::new();
    if !unreadable.is_empty() {
        let parts: Vec<String> = unreadable
            .iter()
            .map(|r| format!("`{}`", r.command))
            .collect();
        text.push_str(&format!(
            "wit cannot tell what {} does, on a line that runs git",
            parts.join(", ")
        ));
        if commands.is_empty() {
            text.push_str(
                ", and it could take or throw away uncommitted work of other live sessions:\n",
            );
        } else {
            text.push_str("; ");
        }
    }
    if !commands.is_empty() {
        text.push_str(&format!(
            "{} {verb} uncommitted work of other live sessions:\n",
            commands.join(", ")
        ));
    }
    for line in stake.lines(map) {
        text.push_str(&format!("  {line}\n"));
    }
    if !unreadable.is_empty() {
        text.push_str("Write the line so that every command is plain to read (no unclosed quotes, no command names in variables), ");
    } else if takes {
        text.push_str(
            "Commit only your own changes with `wit commit -m \"MSG\"` (it leaves others' lines out), ",
        );
    } else {
        text.push_str("Leave their files out of the command (name only your own paths), ");
    }
    text.push_str(&format!("or ask {} to commit first.", stake.names(map)));
    text
}

/// The part of the reason about unowned lines: what would happen to them, and that the
/// work snapshots keep them (docs/protocol.md 15.3, 15.5).
fn unowned_reason(map: &Names, unowned: &AtStake, risks: &[&Risk]) -> String {
    let calls: Vec<String> = risks
        .iter()
        .filter(|r| r.effect != Effect::CannotTell)
        .map(|r| format!("`{}`", r.command))
        .collect();
    let verb = if risks.iter().any(|r| r.effect.destroys()) {
        "would throw away or move"
    } else {
        "would take"
    };
    let subject = if calls.is_empty() {
        "The line".to_owned()
    } else {
        calls.join(", ")
    };
    let mut text = format!("{subject} {verb} uncommitted lines no session wrote:\n");
    for line in unowned.lines(map) {
        text.push_str(&format!("  {line}\n"));
    }
    text.push_str(
        "They may be a person's: leave those files out of the command unless they are yours to take; wit's work snapshots keep them (`wit snapshots`).",
    );
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn payloads_of_every_harness() {
        let claude = json!({"session_id": "s1", "cwd": "/r", "tool_name": "Bash", "tool_input": {"command": "git stash"}});
        let request = shell_request(&claude).unwrap();
        assert_eq!(
            (request.command.as_str(), request.session.as_deref()),
            ("git stash", Some("s1"))
        );
        let codex = json!({"session_id": "s", "tool_name": "exec", "tool_input": {"command": ["bash", "-lc", "git add -A"]}});
        assert_eq!(shell_request(&codex).unwrap().command, "git add -A");
        let argv = json!({"tool_name": "shell", "tool_input": {"command": ["git", "commit", "-m", "a b"]}});
        assert_eq!(
            shell_request(&argv).unwrap().command,
            "'git' 'commit' '-m' 'a b'"
        );
        let gemini = json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}});
        assert_eq!(shell_request(&gemini).unwrap().command, "ls");
        let cursor = json!({"hook_event_name": "beforeShellExecution", "conversation_id": "c", "command": "git status", "cwd": "/r"});
        let request = shell_request(&cursor).unwrap();
        assert!(request.cursor_shell_event);
        assert_eq!(request.session.as_deref(), Some("c"));
        let copilot = json!({"toolName": "bash", "toolArgs": "{\"command\":\"git reset --hard\"}", "cwd": "/r"});
        assert_eq!(shell_request(&copilot).unwrap().command, "git reset --hard");
        let edit = json!({"tool_name": "Edit", "tool_input": {"file_path": "a"}});
        assert!(shell_request(&edit).is_none());
    }
}
