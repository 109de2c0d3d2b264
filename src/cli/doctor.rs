//! `wit doctor`: for each harness wired in this repository (see [`super::agent_config`]),
//! whether its configuration is where the harness reads it, whether the harness will run it,
//! and a dry run of the configured gate command with a payload of that harness. One line per
//! finding, each with its fix; exit code 1 when something needs fixing.
//!
//! What "will run it" means per harness:
//! - Claude Code: `.mcp.json` servers need approval: `enabledMcpjsonServers` (or
//!   `enableAllProjectMcpServers`) in `.claude/settings.local.json`, `.claude/settings.json`
//!   or the project's entry in `~/.claude.json`, and not `disabledMcpjsonServers`;
//! - Codex: the project must be trusted (`[projects."<root>"] trust_level = "trusted"` in
//!   `$CODEX_HOME/config.toml`, default `~/.codex`), else Codex ignores `.codex/`; and the
//!   hook itself must be trusted in Codex's `/hooks` screen (`[hooks.state."…"]
//!   trusted_hash`), else Codex lists it as untrusted and does not run it;
//! - Gemini CLI: the folder must be trusted (`~/.gemini/trustedFolders.json`), else project
//!   hooks are disabled; hooks must not be off (`hooksConfig.enabled: false`) nor wit's hook
//!   listed in `hooksConfig.disabled`, in the user's or the project's settings;
//! - Cursor, Copilot CLI, OpenCode: the files only (they have no trust step of their own).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::agent_config::{
    self, gate_command, Agent, Target, COPILOT_HOOK_TIMEOUT_SEC, GATE_MARK, GEMINI_HOOK_NAME,
    NEWS_MARK,
};
use super::context::Context;
use super::output::{CliError, Report};
use crate::protocol::SessionRecord;

mod codex_hooks;

/// One thing `wit doctor` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The harness.
    pub agent: Agent,
    /// Whether all is well.
    pub ok: bool,
    /// What was found.
    pub what: String,
    /// How to fix it (for a problem).
    pub fix: Option<String>,
}

impl Finding {
    fn ok(agent: Agent, what: impl Into<String>) -> Self {
        Self {
            agent,
            ok: true,
            what: what.into(),
            fix: None,
        }
    }

    fn problem(agent: Agent, what: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            agent,
            ok: false,
            what: what.into(),
            fix: Some(fix.into()),
        }
    }

    /// The finding as one line.
    pub fn line(&self) -> String {
        match &self.fix {
            Some(fix) => format!("{:<9} ✗ {}: {fix}", self.agent.name(), self.what),
            None => format!("{:<9} ✓ {}", self.agent.name(), self.what),
        }
    }

    fn to_json(&self) -> Value {
        json!({"agent": self.agent.name(), "ok": self.ok, "what": self.what, "fix": self.fix})
    }
}

/// `wit doctor`.
pub fn run(ctx: &Context) -> Result<Report, CliError> {
    let root = &ctx.paths.root;
    let wired: Vec<Agent> = Agent::ALL
        .into_iter()
        .filter(|&agent| is_wired(root, agent))
        .collect();
    let findings = check(root, &wired, &Homes::from_env());
    let mut human = String::new();
    if wired.is_empty() {
        human.push_str(
            "no harness is wired here: `wit init --agent claude,codex,gemini,cursor,copilot,opencode,cline,windsurf,kiro` (any of them)\n",
        );
    }
    for finding in &findings {
        human.push_str(&finding.line());
        human.push('\n');
    }
    // The daemon's sessions, when one answers (doctor never starts it).
    let sessions = super::context::block_on(async {
        ctx.client().session_list().await.map_err(CliError::from)
    })
    .unwrap_or_default();
    let unchecked = pid_unknown_sessions(&sessions);
    if let Some(line) = pid_unknown_line(&unchecked) {
        human.push_str(&line);
        human.push('\n');
    }
    let problems = findings.iter().filter(|f| !f.ok).count();
    let value = json!({
        "agents": wired.iter().map(|a| a.name()).collect::<Vec<_>>(),
        "findings": findings.iter().map(Finding::to_json).collect::<Vec<_>>(),
        "problems": problems,
        "pidUnknown": unchecked
            .iter()
            .map(|(session, pid)| json!({"sessionId": session, "pid": pid}))
            .collect::<Vec<_>>(),
    });
    let report = Report::new(value, human);
    Ok(if problems > 0 {
        report.with_code(1)
    } else {
        report
    })
}

/// The live sessions (id, pid) whose process the daemon cannot check (`pidUnknown`).
fn pid_unknown_sessions(sessions: &[SessionRecord]) -> Vec<(String, i64)> {
    sessions
        .iter()
        .filter(|s| s.live && s.pid_unknown == Some(true))
        .filter_map(|s| Some((s.session_id.clone(), s.pid?)))
        .collect()
}

/// The one line that says which live sessions' processes the daemon cannot check, if any.
fn pid_unknown_line(unchecked: &[(String, i64)]) -> Option<String> {
    if unchecked.is_empty() {
        return None;
    }
    let listed: Vec<String> = unchecked
        .iter()
        .map(|(session, pid)| format!("{session} (pid {pid})"))
        .collect();
    Some(format!(
        "{:<9} ? the daemon's host cannot tell whether the process of {} still runs: each lives on its lease, or until it ends",
        "sessions",
        listed.join(", ")
    ))
}

/// Whether any of `agent`'s files holds a wit entry.
pub fn is_wired(root: &Path, agent: Agent) -> bool {
    agent
        .targets()
        .iter()
        .any(|&target| entry_of(root, target).is_some())
}

/// Where the harnesses keep their per-user state.
#[derive(Debug, Clone)]
pub struct Homes {
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$CODEX_HOME`, else `~/.codex`.
    pub codex: Option<PathBuf>,
}

impl Homes {
    /// From the environment.
    pub fn from_env() -> Self {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let codex = std::env::var_os("CODEX_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".codex")));
        Self { home, codex }
    }
}

/// Every finding for `agents` in the repository at `root`.
pub fn check(root: &Path, agents: &[Agent], homes: &Homes) -> Vec<Finding> {
    let mut findings = Vec::new();
    let news = agent_config::news_available();
    for &agent in agents {
        for &target in agent.targets().iter().filter(|t| news || !t.is_news()) {
            findings.push(match entry_of(root, target) {
                Some(_) => Finding::ok(agent, format!("{} in {}", target.what(), target.label())),
                None => Finding::problem(
                    agent,
                    format!("no {} in {}", target.what(), target.label()),
                    format!("run `wit init --agent {}`", agent.name()),
                ),
            });
        }
        match agent {
            Agent::Claude => findings.extend(claude_approval(root, homes)),
            Agent::Codex => findings.extend(codex_trust(root, homes)),
            Agent::Gemini => findings.extend(gemini_trust(root, homes)),
            Agent::Copilot => findings.push(copilot_timeout(root)),
            Agent::Cursor | Agent::Opencode | Agent::Cline | Agent::Windsurf | Agent::Kiro => {}
        }
        findings.push(dry_run(root, agent));
    }
    findings
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&fs::read_to_string(path).ok()?).ok()
}

/// wit's entry in `target`'s file: the gate's command line, or the server's entry.
fn entry_of(root: &Path, target: Target) -> Option<String> {
    let path = target.config_path(root);
    let text = fs::read_to_string(&path).ok()?;
    match target {
        Target::OpencodePlugin => text
            .lines()
            .find(|line| line.starts_with("const WIT = "))
            .map(|line| {
                let quoted = line
                    .trim_start_matches("const WIT = ")
                    .trim_end_matches(';');
                serde_json::from_str::<String>(quoted).unwrap_or_default()
            })
            .map(|command| gate_command(&command, Agent::Opencode)),
        Target::ClineHook | Target::ClineNews => text
            .lines()
            .find_map(|line| line.strip_prefix("exec "))
            .map(str::to_string),
        Target::KiroAgent => {
            let value: Value = serde_json::from_str(&text).ok()?;
            hook_line(value.get("hooks")?.get("preToolUse")?, GATE_MARK)
        }
        Target::CodexToml => {
            let doc: toml_edit::DocumentMut = text.parse().ok()?;
            doc.get("mcp_servers")?
                .get("wit")?
                .get("command")?
                .as_str()
                .map(str::to_string)
        }
        Target::OpencodeMcp => {
            let value: Value = serde_json::from_str(&text).ok()?;
            Some(value.get("mcp")?.get("wit")?.to_string())
        }
        server if server.is_server() => {
            let value: Value = serde_json::from_str(&text).ok()?;
            Some(value.get("mcpServers")?.get("wit")?.to_string())
        }
        hooks => {
            let value: Value = serde_json::from_str(&text).ok()?;
            let (event, mark) = match hooks {
                Target::GeminiSettings => ("BeforeTool", GATE_MARK),
                Target::GeminiAfterTool => ("AfterTool", GATE_MARK),
                Target::GeminiNews => ("AfterTool", NEWS_MARK),
                Target::ClaudeNews | Target::CodexNews => ("PostToolUse", NEWS_MARK),
                Target::CursorHooks | Target::CopilotHooks => ("preToolUse", GATE_MARK),
                Target::CursorNews | Target::CopilotNews => ("postToolUse", NEWS_MARK),
                Target::ClaudeSkillShell => (crate::hooks::claude::SKILL_SHELL_EVENT, GATE_MARK),
                Target::WindsurfWrite => ("pre_write_code", GATE_MARK),
                Target::WindsurfRun => ("pre_run_command", GATE_MARK),
                Target::WindsurfWriteNews => ("post_write_code", NEWS_MARK),
                Target::WindsurfRunNews => ("post_run_command", NEWS_MARK),
                _ => ("PreToolUse", GATE_MARK),
            };
            hook_line(value.get("hooks")?.get(event)?, mark)
        }
    }
}

/// The command line of wit's hook marked `mark` in a hooks list (grouped under matchers or
/// not).
fn hook_line(list: &Value, mark: &str) -> Option<String> {
    let entries = list.as_array()?;
    entries
        .iter()
        .flat_map(|entry| {
            let mut found = vec![entry.clone()];
            if let Some(inner) = entry.get("hooks").and_then(Value::as_array) {
                found.extend(inner.iter().cloned());
            }
            found
        })
        .filter_map(|entry| {
            ["command", "bash"]
                .iter()
                .find_map(|key| entry.get(*key).and_then(Value::as_str).map(str::to_string))
        })
        .find(|command| command.contains(mark))
}

fn claude_approval(root: &Path, homes: &Homes) -> Vec<Finding> {
    let mut sources: Vec<Value> = [".claude/settings.local.json", ".claude/settings.json"]
        .iter()
        .filter_map(|file| read_json(&root.join(file)))
        .collect();
    if let Some(project) = homes
        .home
        .as_ref()
        .and_then(|home| read_json(&home.join(".claude.json")))
        .and_then(|user| {
            let key = root.display().to_string();
            user.get("projects")?.get(&key).cloned()
        })
    {
        sources.push(project);
    }
    let lists = |key: &str| {
        sources.iter().any(|source| {
            source
                .get(key)
                .and_then(Value::as_array)
                .is_some_and(|names| names.iter().any(|n| n == "wit"))
        })
    };
    let all = sources
        .iter()
        .any(|s| s.get("enableAllProjectMcpServers") == Some(&json!(true)));
    vec![if lists("disabledMcpjsonServers") {
        Finding::problem(
            Agent::Claude,
            "the wit server of .mcp.json is disabled (disabledMcpjsonServers)",
            "take \"wit\" out of disabledMcpjsonServers (or enable it with /mcp in Claude Code)",
        )
    } else if all || lists("enabledMcpjsonServers") {
        Finding::ok(Agent::Claude, "the wit server of .mcp.json is approved")
    } else {
        Finding::problem(
            Agent::Claude,
            "the wit server of .mcp.json is not approved yet (Claude Code asks once)",
            "approve it when Claude Code asks, or add \"enabledMcpjsonServers\": [\"wit\"] to .claude/settings.local.json",
        )
    }]
}

/// Whether `root` or one of its ancestors is a key of `projects` with `trusted`.
fn codex_trust(root: &Path, homes: &Homes) -> Vec<Finding> {
    let Some(dir) = &homes.codex else {
        return vec![Finding::problem(
            Agent::Codex,
            "no $HOME or $CODEX_HOME: cannot see Codex's trust settings",
            "set HOME",
        )];
    };
    let config_path = dir.join("config.toml");
    let doc: Option<toml_edit::DocumentMut> = fs::read_to_string(&config_path)
        .ok()
        .and_then(|text| text.parse().ok());
    let trusted = doc.as_ref().is_some_and(|doc| {
        root.ancestors().any(|dir| {
            doc.get("projects")
                .and_then(|projects| projects.get(dir.display().to_string()))
                .and_then(|project| project.get("trust_level"))
                .and_then(|level| level.as_str())
                == Some("trusted")
        })
    });
    let mut findings = vec![if trusted {
        Finding::ok(Agent::Codex, "the project is trusted (Codex reads .codex/)")
    } else {
        Finding::problem(
            Agent::Codex,
            "the project is not trusted: Codex ignores .codex/ (no gate, no wit server)",
            format!(
                "trust it when Codex asks, or add [projects.\"{}\"] trust_level = \"trusted\" to {}",
                root.display(),
                config_path.display()
            ),
        )
    }];
    // Codex records a trusted hook as `[hooks.state."<root>/.codex/hooks.json:<event>:<group>:
    // <handler>"] trusted_hash = "sha256:…"` (what its app-server's `hooks/list` calls the
    // hook's key), and runs it only while that hash is the hook's current one. Codex itself
    // says whether it is (`trustStatus`); without a `codex` to ask, a recorded hash is all
    // there is to see.
    let hooks_file = root.join(".codex/hooks.json").display().to_string();
    let recorded = |event: &str| {
        let prefix = format!("{hooks_file}:{event}:");
        doc.as_ref().is_some_and(|doc| {
            doc.get("hooks")
                .and_then(|hooks| hooks.get("state"))
                .and_then(|state| state.as_table_like())
                .is_some_and(|state| {
                    state.iter().any(|(key, value)| {
                        key.starts_with(&prefix) && value.get("trusted_hash").is_some()
                    })
                })
        })
    };
    let listed = codex_hooks::list(root, homes.codex.as_deref());
    let mut hooks = vec![("pre_tool_use", GATE_MARK, "wit hook pre-edit --agent codex")];
    if agent_config::news_available() && entry_of(root, Target::CodexNews).is_some() {
        hooks.push((
            "post_tool_use",
            NEWS_MARK,
            "wit hook post-tool --agent codex",
        ));
    }
    let fix = |command: &str| {
        format!(
            "start `codex` in this repository, open /hooks and trust `{command}` (or run `codex app-server` and write the hook's currentHash from `hooks/list` to hooks.state.\"<key>\".trusted_hash in {})",
            config_path.display()
        )
    };
    for (event, mark, command) in hooks {
        let status = listed.as_ref().ok().map(|hooks| {
            hooks
                .iter()
                .find(|hook| {
                    hook.key.starts_with(&format!("{hooks_file}:{event}:"))
                        && hook.command.contains(mark)
                })
                .map(|hook| hook.trust_status.clone())
        });
        findings.push(match status {
            Some(Some(status)) if status == "trusted" => Finding::ok(
                Agent::Codex,
                format!("`{command}` is trusted in Codex (its trusted hash is the hook's current one)"),
            ),
            Some(Some(status)) => Finding::problem(
                Agent::Codex,
                format!("Codex gate inactive: `{command}` is {status} in Codex (a hook changed since it was trusted counts as untrusted), so Codex does not run it"),
                fix(command),
            ),
            Some(None) => Finding::problem(
                Agent::Codex,
                format!("Codex gate inactive: Codex lists no `{command}` for this project (is the project trusted?)"),
                format!("trust the project, then {}", fix(command)),
            ),
            None if recorded(event) => Finding::ok(
                Agent::Codex,
                format!(
                    "`{command}` has a trusted hash in Codex (not compared with the current hook: {})",
                    listed.as_ref().err().map(String::as_str).unwrap_or_default()
                ),
            ),
            None => Finding::problem(
                Agent::Codex,
                format!("Codex gate inactive: `{command}` is not trusted yet, so Codex does not run it"),
                fix(command),
            ),
        });
    }
    findings
}

/// Copilot CLI lets a tool call go ahead when a hook times out (1.0.67 on): the gate's own
/// budget must end well before the `timeoutSec` of wit's entry, so its verdict always arrives.
fn copilot_timeout(root: &Path) -> Finding {
    let timeout = read_json(&Target::CopilotHooks.config_path(root)).and_then(|value| {
        value
            .get("hooks")?
            .get("preToolUse")?
            .as_array()?
            .iter()
            .find(|entry| {
                entry
                    .get("bash")
                    .and_then(Value::as_str)
                    .is_some_and(|bash| bash.contains(GATE_MARK))
            })?
            .get("timeoutSec")?
            .as_f64()
    });
    let budget = crate::hooks::hook_input::Deadline::from_env(std::time::Instant::now())
        .budget
        .as_secs_f64();
    match timeout {
        Some(seconds) if seconds >= 2.0 * budget => Finding::ok(
            Agent::Copilot,
            format!("the gate answers within {budget} s, well inside the hook's timeoutSec of {seconds} s (Copilot CLI lets a call go ahead when its hook times out)"),
        ),
        Some(seconds) => Finding::problem(
            Agent::Copilot,
            format!("the hook's timeoutSec ({seconds} s) leaves the gate's {budget} s budget no margin: Copilot CLI lets a call go ahead when its hook times out, so a slow gate is no gate"),
            format!(
                "set timeoutSec to at least {} in {}",
                (2.0 * budget).ceil().max(COPILOT_HOOK_TIMEOUT_SEC as f64),
                Target::CopilotHooks.label()
            ),
        ),
        None => Finding::problem(
            Agent::Copilot,
            "wit's preToolUse entry has no timeoutSec: Copilot CLI's default applies, and a call goes ahead when its hook times out",
            format!("run `wit init --agent copilot` (it sets timeoutSec = {COPILOT_HOOK_TIMEOUT_SEC})"),
        ),
    }
}

fn gemini_trust(root: &Path, homes: &Homes) -> Vec<Finding> {
    let Some(home) = &homes.home else {
        return vec![Finding::problem(
            Agent::Gemini,
            "no $HOME: cannot see Gemini CLI's trust settings",
            "set HOME",
        )];
    };
    let folders = read_json(&home.join(".gemini/trustedFolders.json"));
    let rule = |dir: &Path| {
        folders
            .as_ref()
            .and_then(|f| f.get(dir.display().to_string()))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let trusted = rule(root).as_deref() == Some("TRUST_FOLDER")
        || root
            .ancestors()
            .skip(1)
            .any(|dir| matches!(rule(dir).as_deref(), Some("TRUST_FOLDER" | "TRUST_PARENT")))
        || rule(root).as_deref() == Some("TRUST_PARENT");
    let mut findings = vec![if trusted {
        Finding::ok(Agent::Gemini, "the folder is trusted (project hooks run)")
    } else {
        Finding::problem(
            Agent::Gemini,
            "the folder is not trusted: Gemini CLI disables project hooks",
            format!(
                "trust it when Gemini CLI asks (or /permissions), or add \"{}\": \"TRUST_FOLDER\" to {}",
                root.display(),
                home.join(".gemini/trustedFolders.json").display()
            ),
        )
    }];
    let settings = [
        home.join(".gemini/settings.json"),
        root.join(".gemini/settings.json"),
    ];
    let mut off = None;
    let mut disabled = None;
    for path in &settings {
        let Some(value) = read_json(path) else {
            continue;
        };
        let config = value.get("hooksConfig");
        if config.and_then(|c| c.get("enabled")) == Some(&json!(false)) {
            off = Some(path.display().to_string());
        }
        let lists_wit = config
            .and_then(|c| c.get("disabled"))
            .and_then(Value::as_array)
            .is_some_and(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|name| name == GEMINI_HOOK_NAME || name.contains(GATE_MARK))
            });
        if lists_wit {
            disabled = Some(path.display().to_string());
        }
    }
    findings.push(match (off, disabled) {
        (Some(file), _) => Finding::problem(
            Agent::Gemini,
            format!("hooks are turned off (hooksConfig.enabled: false in {file})"),
            "remove hooksConfig.enabled: false",
        ),
        (None, Some(file)) => Finding::problem(
            Agent::Gemini,
            format!("wit's hook is disabled (hooksConfig.disabled in {file})"),
            format!("take \"{GEMINI_HOOK_NAME}\" out of hooksConfig.disabled (or /hooks enable)"),
        ),
        (None, None) => Finding::ok(Agent::Gemini, "hooks are enabled (hooksConfig)"),
    });
    findings
}

/// A payload of `agent` for an edit of a file the gate never checks (under `.wit/`), so the
/// dry run records nothing and needs no daemon.
fn dry_run_payload(root: &Path, agent: Agent) -> Value {
    let cwd = root.display().to_string();
    let file = root.join(".wit/doctor-dry-run.ts").display().to_string();
    match agent {
        Agent::Claude | Agent::Codex => json!({
            "session_id": "wit-doctor", "cwd": cwd, "hook_event_name": "PreToolUse",
            "tool_name": "Write", "tool_input": {"file_path": file, "content": ""},
        }),
        Agent::Gemini => json!({
            "session_id": "wit-doctor", "cwd": cwd, "hook_event_name": "BeforeTool",
            "tool_name": "write_file", "tool_input": {"file_path": file, "content": ""},
        }),
        Agent::Cursor => json!({
            "conversation_id": "wit-doctor", "hook_event_name": "preToolUse",
            "workspace_roots": [cwd], "tool_name": "Write",
            "tool_input": {"file_path": file, "content": ""},
        }),
        Agent::Copilot => json!({
            "sessionId": "wit-doctor", "timestamp": 0, "cwd": cwd, "toolName": "create",
            "toolArgs": json!({"path": file, "file_text": ""}).to_string(),
        }),
        Agent::Cline => json!({
            "clineVersion": "0", "hookName": "PreToolUse", "timestamp": "0", "taskId": "wit-doctor",
            "workspaceRoots": [cwd], "userId": "wit-doctor",
            "preToolUse": {"toolName": "write_to_file", "parameters": {"path": file, "content": ""}},
        }),
        Agent::Windsurf => json!({
            "agent_action_name": "pre_write_code", "trajectory_id": "wit-doctor",
            "execution_id": "wit-doctor", "timestamp": "1970-01-01T00:00:00Z",
            "tool_info": {"file_path": file, "edits": [{"old_string": "", "new_string": ""}]},
        }),
        Agent::Kiro => json!({
            "hook_event_name": "preToolUse", "cwd": cwd, "tool_name": "fs_write",
            "tool_input": {"command": "create", "path": file, "file_text": ""},
        }),
        Agent::Opencode => json!({
            "hook_event_name": "tool.execute.before", "session_id": "wit-doctor", "cwd": cwd,
            "tool_name": "write", "tool_input": {"filePath": file, "content": ""},
        }),
    }
}

/// Runs the gate command configured for `agent` with a payload of that harness.
fn dry_run(root: &Path, agent: Agent) -> Finding {
    let gate = agent
        .targets()
        .iter()
        .find(|target| !target.is_server() && !target.is_news())
        .and_then(|&target| entry_of(root, target));
    let Some(command) = gate else {
        return Finding::problem(
            agent,
            "dry run skipped: no gate command configured",
            format!("run `wit init --agent {}`", agent.name()),
        );
    };
    let payload = dry_run_payload(root, agent).to_string();
    let outcome = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(payload.as_bytes());
            }
            child.wait_with_output()
        });
    let fix = format!(
        "check that `{command}` runs from this repository, then run `wit init --agent {}` again",
        agent.name()
    );
    match outcome {
        Err(error) => Finding::problem(
            agent,
            format!("dry run: cannot run the gate ({error})"),
            fix,
        ),
        Ok(output) if !output.status.success() => Finding::problem(
            agent,
            format!(
                "dry run: `{command}` failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            fix,
        ),
        Ok(output) => {
            let stdout = String::from_utf8_lossy(&output.stdout);
            let answer = stdout.trim();
            if answer.is_empty() || serde_json::from_str::<Value>(answer).is_ok() {
                Finding::ok(agent, format!("dry run: `{command}` answers"))
            } else {
                Finding::problem(
                    agent,
                    format!("dry run: `{command}` printed something that is not JSON: {answer}"),
                    fix,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn record(id: &str, live: bool, pid: Option<i64>, unknown: Option<bool>) -> SessionRecord {
        SessionRecord {
            session_id: id.into(),
            name: None,
            agent_id: None,
            pid,
            live,
            pid_unknown: unknown,
            last_seen_at: 0,
            locks: 0,
            intents: 0,
            worktree: None,
            branch: None,
        }
    }

    #[test]
    fn sessions_whose_process_cannot_be_checked_get_one_line() {
        let sessions = [
            record("a", true, Some(10), Some(true)),
            record("b", true, Some(11), None),
            record("c", false, Some(12), Some(true)),
            record("d", true, Some(13), Some(true)),
        ];
        let unchecked = pid_unknown_sessions(&sessions);
        assert_eq!(unchecked, [("a".to_owned(), 10), ("d".to_owned(), 13)]);
        let line = pid_unknown_line(&unchecked).unwrap();
        assert!(line.contains("a (pid 10), d (pid 13)"), "{line}");
        assert!(!line.contains('\n'));
        assert_eq!(pid_unknown_line(&[]), None);
    }
}
