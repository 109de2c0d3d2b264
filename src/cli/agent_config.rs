//! `wit init --agent claude|codex|gemini|cursor [--remove]`: wit's MCP server and the edit
//! gate (`wit hook pre-edit`) in the agent's project configuration, added or taken out with
//! real JSON and TOML editors.
//!
//! - Claude Code: `.mcp.json` at the root, `mcpServers.wit = {command, args: ["mcp"]}`, and
//!   `.claude/settings.json`, a `hooks.PreToolUse` group for `Edit|MultiEdit|Write`;
//! - Codex: `.codex/config.toml`, `[mcp_servers.wit]` with `command` and `args` (toml_edit,
//!   which keeps the rest of the file byte for byte, comments included), and
//!   `.codex/hooks.json`, a `hooks.PreToolUse` group for `apply_patch|Edit|Write`;
//! - Gemini CLI: `.gemini/settings.json`, a `hooks.BeforeTool` group for `replace|write_file`;
//! - Cursor: `.cursor/hooks.json` (`version: 1`), a `hooks.preToolUse` entry (no matcher: the
//!   gate itself lets every tool that is not a file edit through at once).
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
const GATE_MARK: &str = "hook pre-edit";
/// What marks a hook entry as wit's news hook (`wit hook post-tool`).
const NEWS_MARK: &str = "hook post-tool";

/// A coding agent whose project configuration `wit init --agent` edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code: `.mcp.json` and `.claude/settings.json`.
    Claude,
    /// Codex: `.codex/config.toml` and `.codex/hooks.json`.
    Codex,
    /// Gemini CLI: `.gemini/settings.json`.
    Gemini,
    /// Cursor: `.cursor/hooks.json`.
    Cursor,
}

impl Agent {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Cursor => "cursor",
        }
    }

    /// The configuration files `wit init --agent` edits for this agent, in order.
    pub fn targets(self) -> &'static [Target] {
        match self {
            Self::Claude => &[Target::McpJson, Target::ClaudeSettings],
            Self::Codex => &[Target::CodexToml, Target::CodexHooks],
            Self::Gemini => &[Target::GeminiSettings],
            Self::Cursor => &[Target::CursorHooks],
        }
    }
}

/// One configuration file and what wit puts in it.
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
    /// `.cursor/hooks.json`: Cursor's preToolUse hook.
    CursorHooks,
}

impl Target {
    /// The file, relative to the repository root (also the label in `wit init`'s report).
    pub fn label(self) -> &'static str {
        match self {
            Self::McpJson => ".mcp.json",
            Self::CodexToml => ".codex/config.toml",
            Self::ClaudeSettings => ".claude/settings.json",
            Self::CodexHooks => ".codex/hooks.json",
            Self::GeminiSettings => ".gemini/settings.json",
            Self::CursorHooks => ".cursor/hooks.json",
        }
    }

    /// The configuration file under the repository root.
    pub fn config_path(self, root: &Path) -> PathBuf {
        root.join(self.label())
    }

    /// What wit puts in this file, for the report.
    fn what(self) -> &'static str {
        match self {
            Self::McpJson | Self::CodexToml => "wit server",
            _ => "wit edit gate",
        }
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
            (Self::McpJson, false) => add_json(existing, command),
            (Self::McpJson, true) => existing.map_or(Ok(Edit::Unchanged), remove_json),
            (Self::CodexToml, false) => add_toml(existing, command),
            (Self::CodexToml, true) => existing.map_or(Ok(Edit::Unchanged), remove_toml),
            // Claude Code also gets the news hook after every tool call.
            (Self::ClaudeSettings, false) => {
                then(add_hook(existing, &self.gate(command))?, existing, |text| {
                    add_hook(text, &news_gate(command))
                })
            }
            (Self::ClaudeSettings, true) => existing.map_or(Ok(Edit::Unchanged), |text| {
                then(
                    remove_hook(text, &self.gate(command))?,
                    Some(text),
                    |text| {
                        text.map_or(Ok(Edit::Unchanged), |text| {
                            remove_hook(text, &news_gate(command))
                        })
                    },
                )
            }),
            (hooks, false) => add_hook(existing, &hooks.gate(command)),
            (hooks, true) => existing.map_or(Ok(Edit::Unchanged), |text| {
                remove_hook(text, &hooks.gate(command))
            }),
        }
    }

    /// Where and how the edit gate is wired in this file.
    fn gate(self, command: &str) -> Gate {
        let agent = match self {
            Self::ClaudeSettings | Self::McpJson => Agent::Claude,
            Self::CodexHooks | Self::CodexToml => Agent::Codex,
            Self::GeminiSettings => Agent::Gemini,
            Self::CursorHooks => Agent::Cursor,
        };
        let program = if command
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
        {
            command.to_string()
        } else {
            super::hooks::shell_quote(command)
        };
        let line = format!("{program} {GATE_MARK} --agent {}", agent.name());
        match agent {
            Agent::Claude => Gate {
                event: "PreToolUse",
                matcher: Some("Edit|MultiEdit|Write"),
                hook: json!({"type": "command", "command": line, "timeout": 5}),
                version: false,
            },
            Agent::Codex => Gate {
                event: "PreToolUse",
                matcher: Some("apply_patch|Edit|Write"),
                hook: json!({"type": "command", "command": line, "timeout": 5}),
                version: false,
            },
            // Gemini CLI's timeouts are in milliseconds.
            Agent::Gemini => Gate {
                event: "BeforeTool",
                matcher: Some("replace|write_file"),
                hook: json!({"type": "command", "command": line, "name": "wit-edit-gate", "timeout": 5000}),
                version: false,
            },
            Agent::Cursor => Gate {
                event: "preToolUse",
                matcher: None,
                hook: json!({"command": line}),
                version: true,
            },
        }
    }
}

/// Claude Code's news hook (`wit hook post-tool`), after every tool.
fn news_gate(command: &str) -> Gate {
    let mut gate = Target::ClaudeSettings.gate(command);
    let line = gate.hook["command"]
        .as_str()
        .unwrap_or_default()
        .replace(GATE_MARK, NEWS_MARK);
    gate.event = "PostToolUse";
    gate.matcher = Some("*");
    gate.hook["command"] = json!(line);
    gate
}

/// `second` applied to the text `first` left of `existing`.
fn then(
    first: Edit,
    existing: Option<&str>,
    second: impl FnOnce(Option<&str>) -> Result<Edit, EditError>,
) -> Result<Edit, EditError> {
    let text = match &first {
        Edit::Unchanged => existing.map(str::to_string),
        Edit::Write(text) => Some(text.clone()),
        Edit::Delete => None,
    };
    Ok(match second(text.as_deref())? {
        Edit::Unchanged => first,
        other => other,
    })
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

fn add_json(existing: Option<&str>, command: &str) -> Result<Edit, EditError> {
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
    let servers = top
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(EditError::Shape("`mcpServers` is not an object".into()));
    };
    let entry = servers
        .entry(SERVER)
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(entry) = entry else {
        return Err(EditError::Shape("`mcpServers.wit` is not an object".into()));
    };
    entry.insert("command".into(), json!(command));
    entry.insert("args".into(), json!(ARGS));
    if existing.is_some() && root == before {
        return Ok(Edit::Unchanged);
    }
    Ok(Edit::Write(print_json(&root, existing)?))
}

fn remove_json(existing: &str) -> Result<Edit, EditError> {
    if existing.trim().is_empty() {
        return Ok(Edit::Unchanged);
    }
    let mut root: Value = serde_json::from_str(existing)?;
    let Some(servers) = root.get_mut("mcpServers").and_then(Value::as_object_mut) else {
        return Ok(Edit::Unchanged);
    };
    if servers.shift_remove(SERVER).is_none() {
        return Ok(Edit::Unchanged);
    }
    let only_empty_servers = root.as_object().is_some_and(|top| {
        top.iter()
            .all(|(key, value)| key == "mcpServers" && value.as_object().is_some_and(Map::is_empty))
    });
    if only_empty_servers {
        return Ok(Edit::Delete);
    }
    Ok(Edit::Write(print_json(&root, Some(existing))?))
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
}

/// Whether `entry` is wit's (the gate or the news hook: each lives under its own event).
fn is_gate(entry: &Value) -> bool {
    entry
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|command| command.contains(GATE_MARK) || command.contains(NEWS_MARK))
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
        None => match list.iter_mut().find(|entry| is_gate(entry)) {
            Some(entry) => merge_into(entry, &gate.hook)?,
            None => list.push(gate.hook.clone()),
        },
        Some(matcher) => {
            let group = list.iter_mut().find(|group| {
                group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .is_some_and(|entries| entries.iter().any(is_gate))
            });
            match group {
                Some(group) => {
                    if let Value::Object(fields) = group {
                        fields.insert("matcher".into(), json!(matcher));
                    }
                    if let Some(entry) = group
                        .get_mut("hooks")
                        .and_then(Value::as_array_mut)
                        .and_then(|entries| entries.iter_mut().find(|entry| is_gate(entry)))
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
        None => list.retain(|entry| !is_gate(entry)),
        Some(_) => {
            for group in list.iter_mut() {
                if let Some(entries) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                    let count = entries.len();
                    entries.retain(|entry| !is_gate(entry));
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
            json!({"matcher": "Edit|MultiEdit|Write", "hooks": [
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
                Some("Edit|MultiEdit|Write"),
            ),
            (
                Target::CodexHooks,
                "PreToolUse",
                Some("apply_patch|Edit|Write"),
            ),
            (
                Target::GeminiSettings,
                "BeforeTool",
                Some("replace|write_file"),
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
}
