//! The shell gate: what an agent's pre-tool hook runs for a shell command (Claude Code and
//! Codex `Bash`, Gemini CLI `run_shell_command`, Cursor `Shell` / `beforeShellExecution`,
//! Copilot CLI `bash`). It reads the command line ([`words`]), finds the git calls that would
//! take or drop uncommitted work ([`git`]) and asks the daemon whose uncommitted lines those
//! are ([`crate::cli::owners`]).
//!
//! It denies (policy `[gate] git`, default deny) only when a call would take or drop lines
//! another live session changed and has not committed, naming the sessions, files and
//! symbols and what to do instead. Everything else passes untouched; a line it cannot read
//! passes with a note. When the policy lets a destructive call through (warn, off), the
//! affected files are saved first as a snapshot ([`crate::cli::snapshots`]). Like the edit
//! gate it fails open: no `.wit/`, no daemon answer within the budget, any error.

pub mod git;
pub mod words;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use self::git::{Effect, Risk, Scope};
use super::super::agent_config::Agent;
use super::super::output::{self, CliError, Report};
use super::super::owners::{AtStake, WorkMap};
use super::super::{gitio, snapshots};
use super::claude::string_field;
use super::hook_input::{find_root, hook_session, working_dir, Deadline};
use super::policy::{self, Action};
use super::pre_edit::{self, Decision, Verdict};
use crate::daemon::paths::WitPaths;
use crate::doorway;

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
    let cwd = super::hook_input::payload_cwd(payload).map(PathBuf::from);
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
                    .map(|a| super::shell_quote(a))
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
        .filter(|event| *event == super::claude::SKILL_SHELL_EVENT)
        .map(str::to_string);
    // PowerShell: read as the POSIX line that runs the same programs, when it is one.
    let (command, unreadable) = if tool == "PowerShell" {
        match super::powershell::as_posix(&command) {
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
    let answer = match (&request.event, agent) {
        _ if request.cursor_shell_event => cursor_shell_answer(&verdict),
        (Some(event), Agent::Claude) => super::claude::answer_to(event, &verdict),
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
    // The common case costs no parse: a line that never says "git".
    if !git::may_hold_git(&request.command) {
        return Verdict::allow();
    }
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
    let analysis = git::analyse(&request.command, &cwd, &git::GitConfigAliases);
    notes.extend(analysis.notes.iter().map(|note| passed(note)));
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
    let paths = WitPaths::for_root(&root);
    if !paths.dir.is_dir() {
        return Verdict::allow();
    }
    let action = match policy::load(&root) {
        Ok((policy, _)) => policy.git,
        Err(error) => {
            notes.push(passed(&format!("gate policy ignored ({error})")));
            return Verdict::allow();
        }
    };
    let Some(session) = hook_session(session_flag, request.session.as_deref(), &paths) else {
        notes.push(passed("no session id"));
        return Verdict::allow();
    };
    let doorway = deadline.doorway(paths.clone(), doorway::autostart_from_env());
    let loaded =
        doorway::block_on(doorway.call(|client| async move { WorkMap::load(&client).await }));
    let map = match loaded {
        Ok(Ok(map)) => map,
        Ok(Err(error)) => {
            let text = error.to_string();
            let first = text.lines().next().unwrap_or_default();
            notes.push(passed(&format!("command not checked ({first})")));
            return Verdict::allow();
        }
        Err(error) => {
            notes.push(passed(&format!("command not checked ({error})")));
            return Verdict::allow();
        }
    };
    let risks: Vec<&Risk> = analysis.risks.iter().collect();
    let (stake, destroying) = match at_stake(&root, &map, &session, &risks) {
        Ok(found) => found,
        Err(error) => {
            notes.push(passed(&format!("command not checked ({error})")));
            return Verdict::allow();
        }
    };
    if stake.is_empty() {
        return Verdict::allow();
    }
    let reason = reason(&map, &stake, &risks);
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
            let mut context = (action == Action::Warn).then_some(reason);
            if !destroying.is_empty() {
                let what = risks
                    .iter()
                    .find(|r| r.effect.destroys())
                    .map(|r| r.command.clone())
                    .unwrap_or_default();
                match snapshots::save(&root, &destroying, &what, &stake.names(&map)) {
                    Ok(id) => {
                        let line = format!(
                            "wit: saved the uncommitted work of {} first as snapshot {id} (`wit snapshots restore {id}`)",
                            stake.names(&map)
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

/// Other live sessions' uncommitted work the risky calls would take or drop, and the files a
/// destroying call would touch (to snapshot).
fn at_stake(
    root: &Path,
    map: &WorkMap,
    session: &str,
    risks: &[&Risk],
) -> Result<(AtStake, Vec<String>), CliError> {
    let selves: HashSet<String> = map.selves(session);
    let others: Vec<_> = map.others(&selves).collect();
    let mut stake = AtStake::default();
    let mut destroying: Vec<String> = Vec::new();
    if others.is_empty() {
        return Ok((stake, destroying));
    }
    let mut files: Vec<&str> = others.iter().map(|w| w.file.as_str()).collect();
    files.sort_unstable();
    files.dedup();
    let dirty = dirty_files(root, &files)?;
    for risk in risks {
        for work in &others {
            let Some(status) = dirty.iter().find(|(f, _)| *f == work.file).map(|(_, s)| s) else {
                continue;
            };
            if risk.command.starts_with("git clean") && status != "??" {
                continue;
            }
            if !in_scope(root, risk, &work.file) {
                continue;
            }
            stake.add(work);
            if risk.effect.destroys() && !destroying.contains(&work.file) {
                destroying.push(work.file.clone());
            }
        }
    }
    Ok((stake, destroying))
}

/// The files of `files` that differ from `HEAD` or are untracked, with their two-letter
/// status.
fn dirty_files(root: &Path, files: &[&str]) -> Result<Vec<(String, String)>, CliError> {
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
    let out = gitio::run(root, &args)?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|item| item.len() > 3)
        .map(|item| {
            let text = String::from_utf8_lossy(item);
            (text[3..].to_string(), text[..2].to_string())
        })
        .collect())
}

/// Whether `file` (relative to `root`) is within the risk's pathspecs.
fn in_scope(root: &Path, risk: &Risk, file: &str) -> bool {
    let Scope::Paths(specs) = &risk.scope else {
        return true;
    };
    let base = risk.work_tree.clone().unwrap_or_else(|| risk.dir.clone());
    specs.iter().any(|spec| {
        if spec.dynamic {
            return true;
        }
        let text = spec.text.as_str();
        let (relative_to_root, pattern) = if let Some(rest) = text.strip_prefix(":/") {
            (true, rest.to_string())
        } else if text.starts_with(':') {
            // Other pathspec magic: assume it may match.
            return true;
        } else {
            (false, text.to_string())
        };
        let full = if relative_to_root {
            root.join(&pattern)
        } else {
            base.join(&pattern)
        };
        let Some(relative) = relative_to(root, &full) else {
            return false;
        };
        if spec.glob || pattern.contains(['*', '?', '[']) {
            return glob_match(&relative, file);
        }
        relative.is_empty() || file == relative || file.starts_with(&format!("{relative}/"))
    })
}

/// `path` relative to `root`, `.`/`..` folded; `None` outside it.
fn relative_to(root: &Path, path: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut root_parts: Vec<String> = Vec::new();
    for (target, source) in [(&mut root_parts, root), (&mut parts, path)] {
        for component in source.components() {
            match component {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    target.pop();
                }
                other => target.push(other.as_os_str().to_string_lossy().into_owned()),
            }
        }
    }
    if parts.len() < root_parts.len() || parts[..root_parts.len()] != root_parts[..] {
        return None;
    }
    Some(parts[root_parts.len()..].join("/"))
}

/// A git pathspec glob: `*` and `?` match any characters (`/` too), `[…]` a class.
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '[' {
            let close = p[pi..].iter().position(|c| *c == ']').map(|at| pi + at);
            match close {
                Some(end) if p[pi + 1..end].contains(&t[ti]) => {
                    pi = end + 1;
                    ti += 1;
                }
                _ => match star {
                    Some(at) => {
                        pi = at + 1;
                        mark += 1;
                        ti = mark;
                    }
                    None => return false,
                },
            }
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(at) = star {
            pi = at + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The reason: what would happen to whose work, and what to do instead.
fn reason(map: &WorkMap, stake: &AtStake, risks: &[&Risk]) -> String {
    let takes = risks.iter().any(|r| r.effect == Effect::Takes);
    let commands: Vec<String> = risks.iter().map(|r| format!("`{}`", r.command)).collect();
    let verb = if risks.iter().any(|r| r.effect.destroys()) {
        if takes {
            "would take or throw away"
        } else {
            "would throw away or move"
        }
    } else {
        "would take"
    };
    let mut text = format!(
        "{} {verb} uncommitted work of other live sessions:\n",
        commands.join(", ")
    );
    for line in stake.lines(map) {
        text.push_str(&format!("  {line}\n"));
    }
    if takes {
        text.push_str(
            "Commit only your own changes with `wit commit -m \"MSG\"` (it leaves others' lines out), ",
        );
    } else {
        text.push_str("Leave their files out of the command (name only your own paths), ");
    }
    text.push_str(&format!("or ask {} to commit first.", stake.names(map)));
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

    #[test]
    fn pathspecs_and_globs() {
        let root = Path::new("/repo");
        let risk = |dir: &str, specs: &[&str]| Risk {
            dir: PathBuf::from(dir),
            work_tree: None,
            command: "git add".into(),
            effect: Effect::Takes,
            scope: Scope::Paths(specs.iter().map(|s| words::Word::plain(s)).collect()),
        };
        assert!(in_scope(root, &risk("/repo", &["."]), "src/a.ts"));
        assert!(in_scope(root, &risk("/repo/src", &["."]), "src/a.ts"));
        assert!(!in_scope(root, &risk("/repo/lib", &["."]), "src/a.ts"));
        assert!(in_scope(
            root,
            &risk("/repo/lib", &["../src/a.ts"]),
            "src/a.ts"
        ));
        assert!(in_scope(root, &risk("/repo/lib", &[":/src"]), "src/a.ts"));
        assert!(in_scope(root, &risk("/repo", &["*.ts"]), "src/a.ts"));
        assert!(!in_scope(root, &risk("/repo", &["*.py"]), "src/a.ts"));
        assert!(!in_scope(root, &risk("/repo", &["src/ab.ts"]), "src/a.ts"));
        assert!(glob_match("src/[ab].ts", "src/a.ts") && !glob_match("src/[bc].ts", "src/a.ts"));
    }
}
