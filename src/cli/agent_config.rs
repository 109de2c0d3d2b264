//! `wit init --agent claude,codex,gemini,cursor,copilot,opencode,cline,windsurf,kiro [--remove]`: wit's MCP
//! server and the edit gate (`wit hook pre-edit`) in each agent's project configuration,
//! added or taken out with real JSON and TOML editors.
//!
//! - Claude Code: `.mcp.json` at the root, `mcpServers.wit = {command, args: ["mcp"]}`, and
//!   `.claude/settings.json`, a `hooks.PreToolUse` group for [`CLAUDE_MATCHER`] (Claude Code 2.1
//!   has no `MultiEdit` tool any more) and a `hooks.PreSkillShellCommand` group for the shell
//!   commands of skills' and commands' inline `!` (PreToolUse never sees them);
//! - Codex: `.codex/config.toml`, `[mcp_servers.wit]` with `command` and `args` (toml_edit,
//!   which keeps the rest of the file byte for byte, comments included), and
//!   `.codex/hooks.json`, a `hooks.PreToolUse` group for `apply_patch|Edit|Write|Bash`;
//! - Gemini CLI: `.gemini/settings.json`, `mcpServers.wit` (`trust: true`, else Gemini asks
//!   before each wit tool and offers none without a person there) and a `hooks.BeforeTool` group
//!   for `replace|write_file|run_shell_command`, plus the same command on `hooks.AfterTool` (Gemini shows the
//!   model hook context only after the tool ran, see [`crate::hooks::gemini`]);
//! - Cursor: `.cursor/mcp.json` (`mcpServers.wit`) and `.cursor/hooks.json` (`version: 1`),
//!   a `hooks.preToolUse` entry (no matcher: the gate itself lets every tool that is not a
//!   file edit through at once) and the news hook on `hooks.postToolUse`;
//! - GitHub Copilot CLI: `.github/mcp.json` (`mcpServers.wit`) and `.github/hooks/wit.json`
//!   (`version: 1`), a `hooks.preToolUse` entry `{type: "command", bash, timeoutSec}` and the
//!   news hook on `hooks.postToolUse`;
//! - OpenCode: `opencode.json`, `mcp.wit = {type: "local", command: [wit, "mcp"]}`, and the
//!   plugin `.opencode/plugins/wit.js` (a file of wit's own, see [`crate::hooks::opencode`]);
//! - Cline: the executable hook files `.clinerules/hooks/PreToolUse` and `PostToolUse`, scripts
//!   of wit's own (Cline's MCP servers live in the editor's user settings, not the project);
//! - Windsurf: `.windsurf/hooks.json`, the gate on `hooks.pre_write_code` and
//!   `hooks.pre_run_command`, news on `post_write_code` and `post_run_command` (its MCP
//!   servers are per user too);
//! - Kiro CLI: the agent `.kiro/agents/wit.json` of wit's own: every built-in tool, wit's MCP
//!   server, the gate on `preToolUse`, news on `postToolUse` (`kiro-cli chat --agent wit`).
//!
//! JSON is edited with serde_json (`preserve_order`: every other entry keeps its place; the
//! file's indentation is kept). wit's hook entry is the one whose command runs
//! `hook pre-edit`. Every edit is idempotent: when the file already says what wit wants it is
//! not rewritten at all. An existing `wit` entry keeps its other keys (`env`, ..). Removing
//! takes out only wit's entry (and the groups and tables it leaves empty), and deletes the file
//! when nothing else is left in it.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Map, Value};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

use super::output::CliError;

/// The key of wit's server in the agents' configurations.
const SERVER: &str = "wit";
/// The arguments that start it.
const ARGS: [&str; 1] = ["mcp"];
/// What marks a hook entry as wit's edit gate.
pub const GATE_MARK: &str = "hook pre-edit";
/// What marks a hook entry as wit's news hook (`wit hook post-tool`: what changed for the
/// agent since its last tool call).
pub const NEWS_MARK: &str = "hook post-tool";
/// The first line of wit's OpenCode plugin (what marks the file as wit's).
const PLUGIN_MARK: &str = "// wit's edit gate for OpenCode";

/// A coding agent whose project configuration `wit init --agent` edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code: `.mcp.json` and `.claude/settings.json`.
    Claude,
    /// Codex: `.codex/config.toml` and `.codex/hooks.json`.
    Codex,
    /// Gemini CLI: `.gemini/settings.json`.
    Gemini,
    /// Cursor: `.cursor/mcp.json` and `.cursor/hooks.json`.
    Cursor,
    /// GitHub Copilot CLI: `.github/mcp.json` and `.github/hooks/wit.json`.
    Copilot,
    /// OpenCode: `opencode.json` and `.opencode/plugins/wit.js`.
    Opencode,
    /// Cline: `.clinerules/hooks/PreToolUse` and `PostToolUse`.
    Cline,
    /// Windsurf (Cascade): `.windsurf/hooks.json`.
    Windsurf,
    /// Kiro CLI: the agent `.kiro/agents/wit.json`.
    Kiro,
}

impl Agent {
    /// Every agent, in the order of `wit doctor`'s report.
    pub const ALL: [Agent; 9] = [
        Self::Claude,
        Self::Codex,
        Self::Gemini,
        Self::Cursor,
        Self::Copilot,
        Self::Opencode,
        Self::Cline,
        Self::Windsurf,
        Self::Kiro,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Cursor => "cursor",
            Self::Copilot => "copilot",
            Self::Opencode => "opencode",
            Self::Cline => "cline",
            Self::Windsurf => "windsurf",
            Self::Kiro => "kiro",
        }
    }

    /// The configuration files `wit init --agent` edits for this agent, in order (one file may
    /// come more than once, one entry each time).
    pub fn targets(self) -> &'static [Target] {
        match self {
            Self::Claude => &[
                Target::McpJson,
                Target::ClaudeSettings,
                Target::ClaudeSkillShell,
                Target::ClaudeNews,
            ],
            Self::Codex => &[Target::CodexToml, Target::CodexHooks, Target::CodexNews],
            Self::Gemini => &[
                Target::GeminiSettings,
                Target::GeminiAfterTool,
                Target::GeminiMcp,
                Target::GeminiNews,
            ],
            Self::Cursor => &[Target::CursorMcp, Target::CursorHooks, Target::CursorNews],
            Self::Copilot => &[
                Target::CopilotMcp,
                Target::CopilotHooks,
                Target::CopilotNews,
            ],
            Self::Opencode => &[Target::OpencodeMcp, Target::OpencodePlugin],
            Self::Cline => &[Target::ClineHook, Target::ClineNews],
            Self::Windsurf => &[
                Target::WindsurfWrite,
                Target::WindsurfRun,
                Target::WindsurfWriteNews,
                Target::WindsurfRunNews,
            ],
            Self::Kiro => &[Target::KiroAgent],
        }
    }
}

/// One entry wit puts in one configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `.mcp.json`: Claude Code's MCP servers.
    McpJson,
    /// `.codex/config.toml`: Codex's MCP servers.
    CodexToml,
    /// `.claude/settings.json`: Claude Code's PreToolUse hook.
    ClaudeSettings,
    /// `.codex/hooks.json`: Codex's PreToolUse hook.
    CodexHooks,
    /// `.gemini/settings.json`: Gemini CLI's BeforeTool hook.
    GeminiSettings,
    /// `.gemini/settings.json`: Gemini CLI's AfterTool hook (warnings reach the model there).
    GeminiAfterTool,
    /// `.gemini/settings.json`: Gemini CLI's MCP servers.
    GeminiMcp,
    /// `.cursor/hooks.json`: Cursor's preToolUse hook.
    CursorHooks,
    /// `.cursor/mcp.json`: Cursor's MCP servers.
    CursorMcp,
    /// `.github/hooks/wit.json`: GitHub Copilot CLI's preToolUse hook.
    CopilotHooks,
    /// `.github/mcp.json`: GitHub Copilot CLI's project MCP servers.
    CopilotMcp,
    /// `opencode.json`: OpenCode's MCP servers.
    OpencodeMcp,
    /// `.opencode/plugins/wit.js`: wit's OpenCode plugin.
    OpencodePlugin,
    /// `.claude/settings.json`: the news hook on PostToolUse.
    ClaudeNews,
    /// `.codex/hooks.json`: the news hook on PostToolUse.
    CodexNews,
    /// `.gemini/settings.json`: the news hook on AfterTool.
    GeminiNews,
    /// `.claude/settings.json`: the shell gate on PreSkillShellCommand (a skill's `!`
    /// commands).
    ClaudeSkillShell,
    /// `.cursor/hooks.json`: the news hook on postToolUse.
    CursorNews,
    /// `.github/hooks/wit.json`: the news hook on postToolUse.
    CopilotNews,
    /// `.clinerules/hooks/PreToolUse`: Cline's gate, a script of wit's own.
    ClineHook,
    /// `.clinerules/hooks/PostToolUse`: Cline's news hook, a script of wit's own.
    ClineNews,
    /// `.windsurf/hooks.json`: the gate on pre_write_code.
    WindsurfWrite,
    /// `.windsurf/hooks.json`: the shell gate on pre_run_command.
    WindsurfRun,
    /// `.windsurf/hooks.json`: the news hook on post_write_code.
    WindsurfWriteNews,
    /// `.windsurf/hooks.json`: the news hook on post_run_command.
    WindsurfRunNews,
    /// `.kiro/agents/wit.json`: wit's Kiro agent (server, gate and news), a file of wit's own.
    KiroAgent,
}

impl Target {
    /// The file, relative to the repository root (also the label in `wit init`'s report).
    pub fn label(self) -> &'static str {
        match self {
            Self::McpJson => ".mcp.json",
            Self::CodexToml => ".codex/config.toml",
            Self::ClaudeSettings | Self::ClaudeNews | Self::ClaudeSkillShell => {
                ".claude/settings.json"
            }
            Self::CodexHooks | Self::CodexNews => ".codex/hooks.json",
            Self::GeminiSettings | Self::GeminiAfterTool | Self::GeminiMcp | Self::GeminiNews => {
                ".gemini/settings.json"
            }
            Self::CursorHooks | Self::CursorNews => ".cursor/hooks.json",
            Self::CursorMcp => ".cursor/mcp.json",
            Self::CopilotHooks | Self::CopilotNews => ".github/hooks/wit.json",
            Self::CopilotMcp => ".github/mcp.json",
            Self::OpencodeMcp => "opencode.json",
            Self::OpencodePlugin => ".opencode/plugins/wit.js",
            Self::ClineHook => ".clinerules/hooks/PreToolUse",
            Self::ClineNews => ".clinerules/hooks/PostToolUse",
            Self::WindsurfWrite
            | Self::WindsurfRun
            | Self::WindsurfWriteNews
            | Self::WindsurfRunNews => ".windsurf/hooks.json",
            Self::KiroAgent => ".kiro/agents/wit.json",
        }
    }

    /// The configuration file under the repository root.
    pub fn config_path(self, root: &Path) -> PathBuf {
        root.join(self.label())
    }

    /// What wit puts in this file, for the report.
    pub fn what(self) -> &'static str {
        match self {
            Self::McpJson
            | Self::CodexToml
            | Self::GeminiMcp
            | Self::CursorMcp
            | Self::CopilotMcp
            | Self::OpencodeMcp => "wit server",
            Self::GeminiAfterTool => "wit gate notes (AfterTool)",
            Self::ClaudeNews
            | Self::CodexNews
            | Self::GeminiNews
            | Self::CursorNews
            | Self::CopilotNews => "wit news hook",
            Self::ClaudeSkillShell => "wit shell gate (skills' ! commands)",
            Self::OpencodePlugin => "wit edit gate plugin",
            Self::ClineNews | Self::WindsurfWriteNews | Self::WindsurfRunNews => "wit news hook",
            Self::KiroAgent => "wit agent (server, edit gate, news)",
            _ => "wit edit gate",
        }
    }

    /// Whether this entry is an MCP server.
    pub fn is_server(self) -> bool {
        self.what() == "wit server"
    }

    /// Whether this entry is the news hook (wired only by a wit that has `wit hook
    /// post-tool`, see [`news_available`]).
    pub fn is_news(self) -> bool {
        matches!(
            self,
            Self::ClaudeNews
                | Self::CodexNews
                | Self::GeminiNews
                | Self::CursorNews
                | Self::CopilotNews
                | Self::ClineNews
                | Self::WindsurfWriteNews
                | Self::WindsurfRunNews
        )
    }

    /// The file's new text for `existing` (`None`: no file), adding wit's entry running
    /// `command` (the wit executable) or, with `remove`, taking it out.
    pub fn edit(
        self,
        existing: Option<&str>,
        command: &str,
        remove: bool,
    ) -> Result<Edit, EditError> {
        match (self, remove) {
            (Self::CodexToml, false) => add_toml(existing, command),
            (Self::CodexToml, true) => existing.map_or(Ok(Edit::Unchanged), remove_toml),
            (Self::OpencodePlugin | Self::ClineHook | Self::ClineNews | Self::KiroAgent, false) => {
                Ok(add_own_file(existing, own_file_text(self, command)))
            }
            (Self::OpencodePlugin | Self::ClineHook | Self::ClineNews | Self::KiroAgent, true) => {
                Ok(existing.map_or(Edit::Unchanged, |text| remove_own_file(self, text)))
            }
            (Self::OpencodeMcp, false) => add_json(
                existing,
                "mcp",
                &json!({"type": "local", "command": [command, ARGS[0]]}),
            ),
            (Self::OpencodeMcp, true) => {
                existing.map_or(Ok(Edit::Unchanged), |text| remove_json(text, "mcp"))
            }
            // Gemini CLI runs no MCP tool of an untrusted server without a confirmation, and
            // offers none of them at all without a person there (`gemini -p`): wit's tools
            // only coordinate (locks, intents, contracts), never touch files.
            (Self::GeminiMcp, false) => add_json(
                existing,
                "mcpServers",
                &json!({"command": command, "args": ARGS, "trust": true}),
            ),
            (server, false) if server.is_server() => add_json(
                existing,
                "mcpServers",
                &json!({"command": command, "args": ARGS}),
            ),
            (server, true) if server.is_server() => {
                existing.map_or(Ok(Edit::Unchanged), |text| remove_json(text, "mcpServers"))
            }
            (hooks, false) => add_hook(existing, &hooks.gate(command)),
            (hooks, true) => existing.map_or(Ok(Edit::Unchanged), |text| {
                remove_hook(text, &hooks.gate(command))
            }),
        }
    }

    /// The agent whose configuration this is.
    pub fn agent(self) -> Agent {
        match self {
            Self::ClaudeSettings | Self::McpJson | Self::ClaudeNews | Self::ClaudeSkillShell => {
                Agent::Claude
            }
            Self::CodexHooks | Self::CodexToml | Self::CodexNews => Agent::Codex,
            Self::GeminiSettings | Self::GeminiAfterTool | Self::GeminiMcp | Self::GeminiNews => {
                Agent::Gemini
            }
            Self::CursorHooks | Self::CursorMcp | Self::CursorNews => Agent::Cursor,
            Self::CopilotHooks | Self::CopilotMcp | Self::CopilotNews => Agent::Copilot,
            Self::OpencodeMcp | Self::OpencodePlugin => Agent::Opencode,
            Self::ClineHook | Self::ClineNews => Agent::Cline,
            Self::WindsurfWrite
            | Self::WindsurfRun
            | Self::WindsurfWriteNews
            | Self::WindsurfRunNews => Agent::Windsurf,
            Self::KiroAgent => Agent::Kiro,
        }
    }

    /// Where and how the edit gate is wired in this file.
    fn gate(self, command: &str) -> Gate {
        let agent = self.agent();
        let line = gate_command(command, agent);
        let news = news_command(command, agent);
        match self {
            // Every tool: news comes at the agent's next tool call, whatever it is.
            Self::ClaudeNews | Self::CodexNews => Gate {
                event: "PostToolUse",
                matcher: Some(""),
                hook: json!({"type": "command", "command": news, "timeout": 5}),
                version: false,
                mark: NEWS_MARK,
            },
            Self::ClaudeSkillShell => Gate {
                event: crate::hooks::claude::SKILL_SHELL_EVENT,
                matcher: Some(CLAUDE_SHELL_MATCHER),
                hook: json!({"type": "command", "command": line, "timeout": 5}),
                version: false,
                mark: GATE_MARK,
            },
            Self::CursorNews => Gate {
                event: "postToolUse",
                matcher: None,
                hook: json!({"command": news}),
                version: true,
                mark: NEWS_MARK,
            },
            Self::CopilotNews => Gate {
                event: "postToolUse",
                matcher: None,
                hook: json!({"type": "command", "bash": news, "timeoutSec": COPILOT_HOOK_TIMEOUT_SEC}),
                version: true,
                mark: NEWS_MARK,
            },
            Self::GeminiNews => Gate {
                event: "AfterTool",
                matcher: Some(""),
                hook: json!({"type": "command", "command": news, "name": "wit-news", "timeout": 5000}),
                version: false,
                mark: NEWS_MARK,
            },
            Self::CodexHooks | Self::CodexToml => Gate {
                event: "PreToolUse",
                matcher: Some("apply_patch|Edit|Write|Bash"),
                hook: json!({"type": "command", "command": line, "timeout": 5}),
                version: false,
                mark: GATE_MARK,
            },
            // Gemini CLI's timeouts are in milliseconds; the hook's name is what
            // `hooksConfig.disabled` lists.
            Self::GeminiSettings | Self::GeminiMcp => Gate {
                event: "BeforeTool",
                matcher: Some("replace|write_file|run_shell_command"),
                hook: json!({"type": "command", "command": line, "name": GEMINI_HOOK_NAME, "timeout": 5000}),
                version: false,
                mark: GATE_MARK,
            },
            Self::GeminiAfterTool => Gate {
                event: "AfterTool",
                matcher: Some("replace|write_file"),
                hook: json!({"type": "command", "command": line, "name": GEMINI_HOOK_NAME, "timeout": 5000}),
                version: false,
                mark: GATE_MARK,
            },
            Self::CursorHooks | Self::CursorMcp => Gate {
                event: "preToolUse",
                matcher: None,
                hook: json!({"command": line}),
                version: true,
                mark: GATE_MARK,
            },
            Self::CopilotHooks | Self::CopilotMcp => Gate {
                event: "preToolUse",
                matcher: None,
                hook: json!({"type": "command", "bash": line, "timeoutSec": COPILOT_HOOK_TIMEOUT_SEC}),
                version: true,
                mark: GATE_MARK,
            },
            Self::WindsurfWrite | Self::WindsurfRun => Gate {
                event: if self == Self::WindsurfWrite {
                    "pre_write_code"
                } else {
                    "pre_run_command"
                },
                matcher: None,
                hook: json!({"command": line, "show_output": false}),
                version: false,
                mark: GATE_MARK,
            },
            Self::WindsurfWriteNews | Self::WindsurfRunNews => Gate {
                event: if self == Self::WindsurfWriteNews {
                    "post_write_code"
                } else {
                    "post_run_command"
                },
                matcher: None,
                hook: json!({"command": news, "show_output": false}),
                version: false,
                mark: NEWS_MARK,
            },
            Self::ClaudeSettings
            | Self::McpJson
            | Self::OpencodeMcp
            | Self::OpencodePlugin
            | Self::ClineHook
            | Self::ClineNews
            | Self::KiroAgent => Gate {
                event: "PreToolUse",
                matcher: Some(CLAUDE_MATCHER),
                hook: json!({"type": "command", "command": line, "timeout": 5}),
                version: false,
                mark: GATE_MARK,
            },
        }
    }
}

/// The tools Claude Code's gate group matches: the file tools (`NotebookEdit` too) and the
/// shells (`PowerShell` on Windows, or where it is switched on).
pub const CLAUDE_MATCHER: &str = "Edit|Write|NotebookEdit|Bash|PowerShell";

/// The shells Claude Code's PreSkillShellCommand group matches (its `tool_name`).
pub const CLAUDE_SHELL_MATCHER: &str = "Bash|PowerShell";

/// The `timeoutSec` of wit's hooks in Copilot CLI. Copilot CLI lets a tool call go ahead
/// when its hook times out (1.0.67 on): the gate's own budget (1 s, [`crate::hooks::hook_input`])
/// stays well below it, so a verdict always arrives first.
pub const COPILOT_HOOK_TIMEOUT_SEC: u64 = 5;

/// The name of wit's hook in Gemini CLI (what `hooksConfig.disabled` would list).
pub const GEMINI_HOOK_NAME: &str = "wit-edit-gate";

/// The command line of the news hook for `agent`, running `command` (the wit executable).
pub fn news_command(command: &str, agent: Agent) -> String {
    gate_command(command, agent).replace(GATE_MARK, NEWS_MARK)
}

/// Whether this wit has `wit hook post-tool` (the news hook): `wit init` wires it only then.
pub fn news_available() -> bool {
    use clap::CommandFactory;
    super::Cli::command()
        .find_subcommand("hook")
        .and_then(|hook| hook.find_subcommand("post-tool"))
        .is_some()
}

/// The command line of the gate for `agent`, running `command` (the wit executable).
pub fn gate_command(command: &str, agent: Agent) -> String {
    let program = if command
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        command.to_string()
    } else {
        crate::safegit::git::shell_quote(command)
    };
    format!("{program} {GATE_MARK} --agent {}", agent.name())
}

/// What an edit does to the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// The file already says what is wanted (or there is nothing to remove).
    Unchanged,
    /// Write this text.
    Write(String),
    /// Delete the file: nothing but wit's entry was in it.
    Delete,
}

/// Why a configuration file could not be edited.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The file is not valid JSON.
    #[error("not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The file is not valid TOML.
    #[error("not valid TOML: {0}")]
    Toml(#[from] toml_edit::TomlError),
    /// The file is valid but not shaped as the agent expects.
    #[error("{0}")]
    Shape(String),
}

/// Adds (or, with `remove`, takes out) wit's entry in `target` under `root`; returns what
/// happened, for the report.
pub fn apply(target: Target, root: &Path, command: &str, remove: bool) -> Result<String, CliError> {
    let path = target.config_path(root);
    let existing = match fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(error) if error.kind() == ErrorKind::NotFound => None,
        Err(error) => {
            return Err(CliError::Failed(format!(
                "cannot read {}: {error}",
                path.display()
            )))
        }
    };
    let edit = target
        .edit(existing.as_deref(), command, remove)
        .map_err(|error| CliError::Failed(format!("cannot edit {}: {error}", path.display())))?;
    let failed = |error: std::io::Error| {
        CliError::Failed(format!("cannot write {}: {error}", path.display()))
    };
    let what = target.what();
    Ok(match edit {
        Edit::Unchanged if remove => format!("no {what} to remove"),
        Edit::Unchanged => format!("{what} already there"),
        Edit::Delete => {
            fs::remove_file(&path).map_err(failed)?;
            "removed (file deleted: nothing else was in it)".to_string()
        }
        Edit::Write(text) => {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).map_err(failed)?;
            }
            fs::write(&path, text).map_err(failed)?;
            if matches!(target, Target::ClineHook | Target::ClineNews) {
                use std::os::unix::fs::PermissionsExt as _;
                fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).map_err(failed)?;
            }
            match (remove, existing.is_some()) {
                (true, _) => format!("{what} removed"),
                (false, true) => format!("{what} added"),
                (false, false) => format!("created with the {what}"),
            }
        }
    })
}

/// The command an agent should run: `wit` when the `wit` on `PATH` is this executable (so a
/// committed configuration works for everyone), else this executable's absolute path.
pub fn wit_command() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return SERVER.to_string();
    };
    let exe = fs::canonicalize(&exe).unwrap_or(exe);
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path)
            .filter_map(|dir| fs::canonicalize(dir.join(SERVER)).ok())
            .next()
            .is_some_and(|found| found == exe)
    });
    if on_path {
        SERVER.to_string()
    } else {
        exe.display().to_string()
    }
}

/// Sets `top[key].wit` to `wanted` (an existing entry keeps its other keys).
fn add_json(existing: Option<&str>, key: &str, wanted: &Value) -> Result<Edit, EditError> {
    let mut root = match existing {
        Some(text) if !text.trim().is_empty() => serde_json::from_str(text)?,
        _ => json!({}),
    };
    let before = root.clone();
    let Value::Object(top) = &mut root else {
        return Err(EditError::Shape(
            "the top level is not a JSON object".into(),
        ));
    };
    let servers = top.entry(key).or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(EditError::Shape(format!("`{key}` is not an object")));
    };
    let entry = servers
        .entry(SERVER)
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        return Err(EditError::Shape(format!("`{key}.wit` is not an object")));
    }
    merge_into(entry, wanted)?;
    if existing.is_some() && root == before {
        return Ok(Edit::Unchanged);
    }
    Ok(Edit::Write(print_json(&root, existing)?))
}

/// Takes `top[key].wit` out; deletes the file when nothing else was in it.
fn remove_json(existing: &str, key: &str) -> Result<Edit, EditError> {
    if existing.trim().is_empty() {
        return Ok(Edit::Unchanged);
    }
    let mut root: Value = serde_json::from_str(existing)?;
    let Some(servers) = root.get_mut(key).and_then(Value::as_object_mut) else {
        return Ok(Edit::Unchanged);
    };
    if servers.shift_remove(SERVER).is_none() {
        return Ok(Edit::Unchanged);
    }
    // The table wit's entry leaves empty goes too, and the file when nothing else is left.
    if servers.is_empty() {
        if let Some(top) = root.as_object_mut() {
            top.shift_remove(key);
        }
    }
    if root.as_object().is_some_and(Map::is_empty) {
        return Ok(Edit::Delete);
    }
    Ok(Edit::Write(print_json(&root, Some(existing))?))
}

/// wit's OpenCode plugin running `command`.
pub fn plugin_text(command: &str) -> String {
    crate::hooks::opencode::PLUGIN.replace("{{WIT}}", &json!(command).to_string())
}

/// The whole text of a file of wit's own (OpenCode's plugin, Cline's hook scripts, the Kiro
/// agent) running `command`.
fn own_file_text(target: Target, command: &str) -> String {
    let quoted = |agent: Agent, news: bool| {
        let line = if news {
            news_command(command, agent)
        } else {
            gate_command(command, agent)
        };
        json!(line).to_string()
    };
    match target {
        Target::ClineHook | Target::ClineNews => crate::hooks::cline::HOOK_SCRIPT.replace(
            "{{WIT}}",
            &if target == Target::ClineNews {
                news_command(command, Agent::Cline)
            } else {
                gate_command(command, Agent::Cline)
            },
        ),
        Target::KiroAgent => crate::hooks::kiro::AGENT
            .replace("{{WIT}}", &json!(command).to_string())
            .replace("{{GATE}}", &quoted(Agent::Kiro, false))
            .replace("{{NEWS}}", &quoted(Agent::Kiro, true)),
        _ => plugin_text(command),
    }
}

fn add_own_file(existing: Option<&str>, wanted: String) -> Edit {
    if existing == Some(wanted.as_str()) {
        return Edit::Unchanged;
    }
    Edit::Write(wanted)
}

/// Deletes the file when it is wit's (someone else's file of the same name stays).
fn remove_own_file(target: Target, existing: &str) -> Edit {
    let ours = match target {
        Target::ClineHook | Target::ClineNews => {
            existing.starts_with(crate::hooks::cline::SCRIPT_MARK)
        }
        Target::KiroAgent => existing.contains(crate::hooks::kiro::AGENT_MARK),
        _ => existing.starts_with(PLUGIN_MARK),
    };
    if ours {
        Edit::Delete
    } else {
        Edit::Unchanged
    }
}

/// Pretty JSON with the indentation of `existing` (two spaces when it has none) and a final
/// newline unless `existing` had none.
fn print_json(value: &Value, existing: Option<&str>) -> Result<String, EditError> {
    let indent = existing
        .and_then(|text| {
            text.lines()
                .skip(1)
                .map(|line| &line[..line.len() - line.trim_start().len()])
                .find(|ws| !ws.is_empty())
        })
        .unwrap_or("  ");
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out, formatter,
    ))?;
    if existing.is_none_or(|text| text.ends_with('\n')) {
        out.push(b'\n');
    }
    String::from_utf8(out).map_err(|e| EditError::Shape(e.to_string()))
}

fn add_toml(existing: Option<&str>, command: &str) -> Result<Edit, EditError> {
    let mut doc: DocumentMut = existing.unwrap_or("").parse()?;
    if !doc.contains_key("mcp_servers") {
        let mut servers = Table::new();
        servers.set_implicit(true);
        doc.insert("mcp_servers", Item::Table(servers));
    }
    let args = Array::from_iter(ARGS);
    let changed = match doc.get_mut("mcp_servers") {
        Some(Item::Table(servers)) => match servers.get_mut(SERVER) {
            None => {
                let mut wit = Table::new();
                wit.insert("command", toml_edit::value(command));
                wit.insert("args", toml_edit::value(args));
                servers.insert(SERVER, Item::Table(wit));
                true
            }
            Some(item) => set_server(item, command, args)?,
        },
        Some(Item::Value(toml_edit::Value::InlineTable(servers))) => {
            match servers.get_mut(SERVER) {
                None => {
                    let mut wit = InlineTable::new();
                    wit.insert("command", command.into());
                    wit.insert("args", args.into());
                    servers.insert(SERVER, wit.into());
                    true
                }
                Some(value) => {
                    let mut item = Item::Value(value.clone());
                    let changed = set_server(&mut item, command, args)?;
                    if let Item::Value(new) = item {
                        *value = new;
                    }
                    changed
                }
            }
        }
        _ => return Err(EditError::Shape("`mcp_servers` is not a table".into())),
    };
    if !changed && existing.is_some() {
        return Ok(Edit::Unchanged);
    }
    Ok(Edit::Write(doc.to_string()))
}

/// Sets `command` and `args` of an existing `wit` entry; returns whether anything changed.
fn set_server(item: &mut Item, command: &str, args: Array) -> Result<bool, EditError> {
    let Some(entry) = item.as_table_like_mut() else {
        return Err(EditError::Shape("`mcp_servers.wit` is not a table".into()));
    };
    let same_command = entry.get("command").and_then(Item::as_str) == Some(command);
    let same_args = entry
        .get("args")
        .and_then(Item::as_array)
        .is_some_and(|have| {
            have.iter()
                .map(toml_edit::Value::as_str)
                .eq(ARGS.iter().map(|a| Some(*a)))
        });
    if !same_command {
        entry.insert("command", toml_edit::value(command));
    }
    if !same_args {
        entry.insert("args", toml_edit::value(args));
    }
    Ok(!(same_command && same_args))
}

fn remove_toml(existing: &str) -> Result<Edit, EditError> {
    let mut doc: DocumentMut = existing.parse()?;
    let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut) else {
        return Ok(Edit::Unchanged);
    };
    if servers.remove(SERVER).is_none() {
        return Ok(Edit::Unchanged);
    }
    let drop_servers = servers.is_empty()
        && doc
            .get("mcp_servers")
            .and_then(Item::as_table)
            .is_some_and(Table::is_implicit);
    if drop_servers {
        doc.remove("mcp_servers");
    }
    let text = doc.to_string();
    if text.trim().is_empty() {
        return Ok(Edit::Delete);
    }
    Ok(Edit::Write(text))
}

/// Where the edit gate goes in a hooks file, and its entry.
struct Gate {
    /// The key under `hooks`.
    event: &'static str,
    /// The tool matcher of wit's group; `None`: the entries sit directly in the event's list
    /// (Cursor).
    matcher: Option<&'static str>,
    /// wit's hook entry.
    hook: Value,
    /// Whether the file carries `"version": 1` (Cursor).
    version: bool,
    /// What marks wit's entry (its command contains it).
    mark: &'static str,
}

/// Whether a hook entry's command contains `mark` (Copilot CLI names its command `bash`).
fn is_marked(entry: &Value, mark: &str) -> bool {
    ["command", "bash"].iter().any(|key| {
        entry
            .get(*key)
            .and_then(Value::as_str)
            .is_some_and(|command| command.contains(mark))
    })
}

/// Sets every key of `wanted` in `entry`, keeping its other keys.
fn merge_into(entry: &mut Value, wanted: &Value) -> Result<(), EditError> {
    let (Value::Object(entry), Value::Object(wanted)) = (entry, wanted) else {
        return Err(EditError::Shape("a hook entry is not an object".into()));
    };
    for (key, value) in wanted {
        entry.insert(key.clone(), value.clone());
    }
    Ok(())
}

fn add_hook(existing: Option<&str>, gate: &Gate) -> Result<Edit, EditError> {
    let mut root = match existing {
        Some(text) if !text.trim().is_empty() => serde_json::from_str(text)?,
        _ => json!({}),
    };
    let before = root.clone();
    let Value::Object(top) = &mut root else {
        return Err(EditError::Shape(
            "the top level is not a JSON object".into(),
        ));
    };
    if gate.version && !top.contains_key("version") {
        top.insert("version".into(), json!(1));
    }
    let hooks = top
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err(EditError::Shape("`hooks` is not an object".into()));
    };
    let list = hooks
        .entry(gate.event)
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(list) = list else {
        return Err(EditError::Shape(format!(
            "`hooks.{}` is not a list",
            gate.event
        )));
    };
    match gate.matcher {
        None => match list.iter_mut().find(|entry| is_marked(entry, gate.mark)) {
            Some(entry) => merge_into(entry, &gate.hook)?,
            None => list.push(gate.hook.clone()),
        },
        Some(matcher) => {
            let group = list.iter_mut().find(|group| {
                group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .is_some_and(|entries| entries.iter().any(|entry| is_marked(entry, gate.mark)))
            });
            match group {
                Some(group) => {
                    if let Value::Object(fields) = group {
                        fields.insert("matcher".into(), json!(matcher));
                    }
                    if let Some(entry) = group
                        .get_mut("hooks")
                        .and_then(Value::as_array_mut)
                        .and_then(|entries| {
                            entries.iter_mut().find(|entry| is_marked(entry, gate.mark))
                        })
                    {
                        merge_into(entry, &gate.hook)?;
                    }
                }
                None => list.push(json!({"matcher": matcher, "hooks": [gate.hook.clone()]})),
            }
        }
    }
    if existing.is_some() && root == before {
        return Ok(Edit::Unchanged);
    }
    Ok(Edit::Write(print_json(&root, existing)?))
}

fn remove_hook(existing: &str, gate: &Gate) -> Result<Edit, EditError> {
    if existing.trim().is_empty() {
        return Ok(Edit::Unchanged);
    }
    let mut root: Value = serde_json::from_str(existing)?;
    let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
        return Ok(Edit::Unchanged);
    };
    let Some(list) = hooks.get_mut(gate.event).and_then(Value::as_array_mut) else {
        return Ok(Edit::Unchanged);
    };
    let before = list.len();
    let mut removed = false;
    match gate.matcher {
        None => list.retain(|entry| !is_marked(entry, gate.mark)),
        Some(_) => {
            for group in list.iter_mut() {
                if let Some(entries) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                    let count = entries.len();
                    entries.retain(|entry| !is_marked(entry, gate.mark));
                    removed |= entries.len() != count;
                }
            }
            list.retain(|group| {
                group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|entries| !entries.is_empty())
            });
        }
    }
    removed |= list.len() != before;
    if !removed {
        return Ok(Edit::Unchanged);
    }
    if list.is_empty() {
        hooks.shift_remove(gate.event);
    }
    if hooks.is_empty() {
        if let Some(top) = root.as_object_mut() {
            top.shift_remove("hooks");
        }
    }
    let nothing_left = root.as_object().is_some_and(|top| {
        top.iter()
            .all(|(key, value)| gate.version && key == "version" && value == &json!(1))
    });
    if nothing_left {
        return Ok(Edit::Delete);
    }
    Ok(Edit::Write(print_json(&root, Some(existing))?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    /// Applies `edit` to `text` the way `apply` does to a file.
    fn run(target: Target, text: Option<&str>, remove: bool) -> Option<String> {
        match target.edit(text, "wit", remove).unwrap() {
            Edit::Unchanged => text.map(str::to_string),
            Edit::Write(new) => Some(new),
            Edit::Delete => None,
        }
    }

    const CLAUDE: &str = r#"{
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"Z_LAST": "1", "A_FIRST": "2"}
        },
        "another": {"type": "http", "url": "https://example.com/mcp"}
    },
    "zExtra": true,
    "aExtra": false
}
"#;

    #[test]
    fn claude_keeps_the_other_servers_is_idempotent_and_removes_cleanly() {
        let added = run(Target::McpJson, Some(CLAUDE), false).unwrap();
        let value: Value = serde_json::from_str(&added).unwrap();
        assert_eq!(
            value["mcpServers"]["wit"],
            json!({"command": "wit", "args": ["mcp"]})
        );
        let original: Value = serde_json::from_str(CLAUDE).unwrap();
        assert_eq!(
            value["mcpServers"]["github"],
            original["mcpServers"]["github"]
        );
        // Order kept: the other servers first, wit last; top-level keys as they were; the
        // file's four-space indentation too.
        let keys: Vec<&String> = value["mcpServers"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["github", "another", "wit"]);
        assert!(added.find("zExtra").unwrap() < added.find("aExtra").unwrap());
        assert!(added.find("Z_LAST").unwrap() < added.find("A_FIRST").unwrap());
        assert!(
            added.contains("\n    \"mcpServers\": {\n        \"github\""),
            "{added}"
        );
        assert!(added.ends_with("}\n"));

        // Twice: byte for byte the same, and the file is not even rewritten.
        assert_eq!(
            Target::McpJson.edit(Some(&added), "wit", false).unwrap(),
            Edit::Unchanged
        );
        assert_eq!(run(Target::McpJson, Some(&added), false).unwrap(), added);

        let removed = run(Target::McpJson, Some(&added), true).unwrap();
        let value: Value = serde_json::from_str(&removed).unwrap();
        assert_eq!(value, original, "every other entry is back");
        assert_eq!(
            Target::McpJson.edit(Some(&removed), "wit", true).unwrap(),
            Edit::Unchanged
        );
    }

    #[test]
    fn claude_creates_and_deletes_its_own_file_and_updates_a_stale_entry() {
        let created = run(Target::McpJson, None, false).unwrap();
        assert_eq!(
            created,
            "{\n  \"mcpServers\": {\n    \"wit\": {\n      \"command\": \"wit\",\n      \"args\": [\n        \"mcp\"\n      ]\n    }\n  }\n}\n"
        );
        assert_eq!(
            run(Target::McpJson, Some(&created), true),
            None,
            "file deleted"
        );

        let stale =
            r#"{"mcpServers": {"wit": {"command": "/old/wit", "args": [], "env": {"A": "1"}}}}"#;
        let updated = run(Target::McpJson, Some(stale), false).unwrap();
        let value: Value = serde_json::from_str(&updated).unwrap();
        assert_eq!(
            value["mcpServers"]["wit"],
            json!({"command": "wit", "args": ["mcp"], "env": {"A": "1"}})
        );
        assert!(Target::McpJson.edit(Some("[1]"), "wit", false).is_err());
        assert!(Target::McpJson
            .edit(Some("{not json"), "wit", false)
            .is_err());
    }

    const CODEX: &str = r#"# My Codex settings
model = "o4"   # the model

[mcp_servers.docs]
# Docs server, keep me
command = "docs-mcp"
args = ["--port", "0"]
env = { TOKEN = "x" }

[profiles.fast]
model = "o4-mini"
"#;

    #[test]
    fn codex_keeps_comments_and_formatting_is_idempotent_and_removes_cleanly() {
        let added = run(Target::CodexToml, Some(CODEX), false).unwrap();
        assert!(added.starts_with(CODEX.trim_end_matches("[profiles.fast]\nmodel = \"o4-mini\"\n")));
        assert!(
            added.contains("[mcp_servers.wit]\ncommand = \"wit\"\nargs = [\"mcp\"]\n"),
            "{added}"
        );
        assert!(added.contains("# Docs server, keep me"));
        assert!(added.contains("model = \"o4\"   # the model"));
        let doc: DocumentMut = added.parse().unwrap();
        assert_eq!(
            doc["mcp_servers"]["docs"]["command"].as_str(),
            Some("docs-mcp")
        );

        assert_eq!(
            Target::CodexToml.edit(Some(&added), "wit", false).unwrap(),
            Edit::Unchanged
        );
        assert_eq!(run(Target::CodexToml, Some(&added), false).unwrap(), added);

        let removed = run(Target::CodexToml, Some(&added), true).unwrap();
        assert_eq!(removed, CODEX, "byte for byte what it was");
        assert_eq!(
            Target::CodexToml.edit(Some(&removed), "wit", true).unwrap(),
            Edit::Unchanged
        );
    }

    #[test]
    fn codex_creates_and_deletes_its_own_file_and_handles_inline_tables() {
        let created = run(Target::CodexToml, None, false).unwrap();
        assert_eq!(
            created,
            "[mcp_servers.wit]\ncommand = \"wit\"\nargs = [\"mcp\"]\n"
        );
        assert_eq!(
            run(Target::CodexToml, Some(&created), true),
            None,
            "file deleted"
        );

        let inline = "mcp_servers = { other = { command = \"o\" } }\n";
        let added = run(Target::CodexToml, Some(inline), false).unwrap();
        let doc: DocumentMut = added.parse().unwrap();
        assert_eq!(doc["mcp_servers"]["wit"]["command"].as_str(), Some("wit"));
        assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("o"));
        assert_eq!(run(Target::CodexToml, Some(&added), false).unwrap(), added);
        let removed = run(Target::CodexToml, Some(&added), true).unwrap();
        let doc: DocumentMut = removed.parse().unwrap();
        assert!(doc["mcp_servers"].get("wit").is_none());
        assert_eq!(doc["mcp_servers"]["other"]["command"].as_str(), Some("o"));

        let stale = "[mcp_servers.wit]\ncommand = \"/old/wit\" # mine\nenv = { A = \"1\" }\n";
        let updated = run(Target::CodexToml, Some(stale), false).unwrap();
        let doc: DocumentMut = updated.parse().unwrap();
        assert_eq!(doc["mcp_servers"]["wit"]["command"].as_str(), Some("wit"));
        assert_eq!(doc["mcp_servers"]["wit"]["env"]["A"].as_str(), Some("1"));
        assert!(Target::CodexToml
            .edit(Some("mcp_servers = 3\n"), "wit", false)
            .is_err());
        assert!(Target::CodexToml
            .edit(Some("[broken"), "wit", false)
            .is_err());
    }

    const CLAUDE_SETTINGS: &str = r#"{
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check-bash.sh"}]}
    ],
    "PostToolUse": [
      {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}
    ]
  }
}
"#;

    #[test]
    fn the_edit_gate_merges_into_claude_settings_idempotently_and_comes_out_cleanly() {
        let added = run(Target::ClaudeSettings, Some(CLAUDE_SETTINGS), false).unwrap();
        let value: Value = serde_json::from_str(&added).unwrap();
        let groups = value["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "the Bash group is kept: {added}");
        assert_eq!(groups[0]["matcher"], "Bash");
        assert_eq!(
            groups[1],
            json!({"matcher": "Edit|Write|NotebookEdit|Bash|PowerShell", "hooks": [
                {"type": "command", "command": "wit hook pre-edit --agent claude", "timeout": 5}
            ]})
        );
        assert_eq!(value["permissions"]["allow"][0], "Bash(npm test)");
        assert_eq!(
            run(Target::ClaudeSettings, Some(&added), false).unwrap(),
            added
        );
        assert_eq!(
            Target::ClaudeSettings
                .edit(Some(&added), "wit", false)
                .unwrap(),
            Edit::Unchanged
        );
        // A moved binary: the command is updated in place, nothing is duplicated.
        let moved = match Target::ClaudeSettings
            .edit(Some(&added), "/opt/wit bin/wit", false)
            .unwrap()
        {
            Edit::Write(text) => text,
            other => panic!("{other:?}"),
        };
        let value: Value = serde_json::from_str(&moved).unwrap();
        assert_eq!(value["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(
            value["hooks"]["PreToolUse"][1]["hooks"][0]["command"],
            "'/opt/wit bin/wit' hook pre-edit --agent claude"
        );

        let removed = run(Target::ClaudeSettings, Some(&added), true).unwrap();
        let original: Value = serde_json::from_str(CLAUDE_SETTINGS).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&removed).unwrap(), original);
        assert_eq!(
            Target::ClaudeSettings
                .edit(Some(&removed), "", true)
                .unwrap(),
            Edit::Unchanged
        );
    }

    #[test]
    fn each_harness_gets_its_own_shape_and_a_file_of_its_own_is_deleted_on_removal() {
        for (target, event, matcher) in [
            (
                Target::ClaudeSettings,
                "PreToolUse",
                Some("Edit|Write|NotebookEdit|Bash|PowerShell"),
            ),
            (
                Target::CodexHooks,
                "PreToolUse",
                Some("apply_patch|Edit|Write|Bash"),
            ),
            (
                Target::GeminiSettings,
                "BeforeTool",
                Some("replace|write_file|run_shell_command"),
            ),
            (Target::CursorHooks, "preToolUse", None),
        ] {
            let created = run(target, None, false).unwrap();
            let value: Value = serde_json::from_str(&created).unwrap();
            let entry = &value["hooks"][event][0];
            let hook = match matcher {
                Some(matcher) => {
                    assert_eq!(entry["matcher"], matcher, "{created}");
                    &entry["hooks"][0]
                }
                None => entry,
            };
            assert!(
                hook["command"]
                    .as_str()
                    .unwrap()
                    .starts_with("wit hook pre-edit --agent "),
                "{created}"
            );
            assert_eq!(
                value.get("version").is_some(),
                target == Target::CursorHooks
            );
            assert_eq!(run(target, Some(&created), false).unwrap(), created);
            assert_eq!(
                run(target, Some(&created), true),
                None,
                "{target:?}: file deleted"
            );
        }
        let cursor = r#"{"version": 1, "hooks": {"preToolUse": [{"command": "./audit.sh"}], "stop": [{"command": "./s.sh"}]}}"#;
        let added = run(Target::CursorHooks, Some(cursor), false).unwrap();
        let value: Value = serde_json::from_str(&added).unwrap();
        assert_eq!(value["hooks"]["preToolUse"].as_array().unwrap().len(), 2);
        let removed = run(Target::CursorHooks, Some(&added), true).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&removed).unwrap(),
            serde_json::from_str::<Value>(cursor).unwrap()
        );
        assert!(Target::GeminiSettings
            .edit(Some(r#"{"hooks": []}"#), "wit", false)
            .is_err());
    }

    #[test]
    fn every_agents_entries_share_their_files_and_come_out_cleanly() {
        for agent in Agent::ALL {
            // All of an agent's entries, one after another (several may share a file).
            let mut files: std::collections::BTreeMap<&str, Option<String>> = Default::default();
            for &target in agent.targets() {
                let text = files.get(target.label()).cloned().flatten();
                files.insert(target.label(), run(target, text.as_deref(), false));
            }
            for &target in agent.targets() {
                let text = files[target.label()].clone();
                assert_eq!(
                    target.edit(text.as_deref(), "wit", false).unwrap(),
                    Edit::Unchanged,
                    "{target:?} twice"
                );
            }
            for &target in agent.targets() {
                let text = files.get(target.label()).cloned().flatten();
                files.insert(target.label(), run(target, text.as_deref(), true));
            }
            assert!(
                files.values().all(Option::is_none),
                "{agent:?}: files holding only wit's entries are deleted: {files:?}"
            );
        }
        let plugin = plugin_text("/opt/wit bin/wit");
        assert!(
            plugin.contains("const WIT = \"/opt/wit bin/wit\";"),
            "{plugin}"
        );
        assert!(plugin.starts_with(PLUGIN_MARK));
        // Someone else's plugin of the same name is not removed.
        assert_eq!(
            Target::OpencodePlugin
                .edit(Some("export const X = 1;\n"), "wit", true)
                .unwrap(),
            Edit::Unchanged
        );
        let opencode = run(Target::OpencodeMcp, Some("{\"theme\": \"dark\"}"), false).unwrap();
        let value: Value = serde_json::from_str(&opencode).unwrap();
        assert_eq!(
            value["mcp"]["wit"],
            json!({"type": "local", "command": ["wit", "mcp"]})
        );
        assert_eq!(value["theme"], "dark");
    }
}
