//! `wit init`: `.wit/`, the session id, the daemon, the git hooks, and the wit section of
//! `AGENTS.md` and `CLAUDE.md`; with `--agent`, wit's MCP server and the edit gate in the
//! agent's configuration too (see [`super::agent_config`]). Idempotent: a second run changes
//! nothing.
//!
//! `--agent` is additive: the usual steps run as well, so `wit init --agent claude` is the one
//! command that sets a repository up for Claude Code. `--agent .. --remove` only takes wit's
//! entries out of the agent's configuration: git hooks, docs and the daemon stay.

use std::fs;
use std::path::Path;

use clap::Args;
use serde_json::json;

use super::agent_config::{self, Agent};
use super::context::{block_on, Context};
use super::doctor;
use super::output::{CliError, Report};
use super::session::ensure_session_file;
use crate::daemon::launcher;
use crate::daemon::lifecycle::ensure_state_dir;
use crate::hooks;

/// Start of wit's block in AGENTS.md / CLAUDE.md.
pub const BEGIN_MARKER: &str = "<!-- wit:begin -->";
/// End of wit's block.
pub const END_MARKER: &str = "<!-- wit:end -->";

/// The instructions for coding agents, between the markers.
pub const AGENT_SECTION: &str = "\
## Working alongside other agents: wit

Other agents edit this repository at the same time. Coordinate through `wit` (the daemon
starts by itself; add `--json` to any command for machine-readable output):

1. Use your own identity: `export WIT_SESSION=<unique-name>` once per shell (Claude Code's
   wit plugin does this for you). Never share a session with another agent.
2. Before editing, run `wit status`, then declare your plan:
   `wit declare -d \"what and why\" -f src/file.ts -s functionName`.
   Read the conflicts it prints; if another agent holds that code, coordinate or pick other work.
3. Lock each symbol while you change it: `wit lock src/file.ts:functionName --ttl 30m`.
   Exit code 1 (LOCK_CONFLICT) means another agent holds it: do not edit it, or wait your turn
   with `--wait 5m`. Heed caller warnings.
4. Before changing a function others call, agree its signature:
   `wit contract propose src/file.ts:functionName`; others run `wit contract accept <id>`.
   The pre-commit hook blocks commits that break an accepted contract.
5. Commit with `wit commit -m \"message\" [paths]`: it commits exactly your own changed lines
   and leaves other agents' uncommitted lines in the same files alone. Through wit's MCP
   server, the `commit` tool does the same. Never `git add -A`, `git add .`, `git commit -a`,
   `git stash`, `git checkout -- FILE`, `git restore`, `git reset --hard` or `git clean -f`
   in a shared tree: they take or throw away other agents' work (wit's gate refuses them when
   they would).
6. When done: `wit release src/file.ts:functionName` and `wit intent update <id> resolved`.

Symbols (`file:name`, `Class.method` for members) are understood in TypeScript, JavaScript,
Python, Go, Rust and Java; other files are coordinated as whole files.
";

/// `wit init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Do not install the git hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// Do not write the wit section into AGENTS.md and CLAUDE.md.
    #[arg(long)]
    pub no_docs: bool,
    /// Also wire wit (MCP server and edit gate) into these agents' project configuration:
    /// `claude` (.mcp.json, .claude/settings.json), `codex` (.codex/config.toml,
    /// .codex/hooks.json), `gemini` (.gemini/settings.json), `cursor` (.cursor/mcp.json,
    /// .cursor/hooks.json), `copilot` (.github/mcp.json, .github/hooks/wit.json) or `opencode`
    /// (opencode.json, .opencode/plugins/wit.js). A comma list or repeated.
    #[arg(long, value_enum, value_name = "AGENT", value_delimiter = ',')]
    pub agent: Vec<Agent>,
    /// With --agent: take wit's entries out of the agent's configuration (nothing else).
    #[arg(long, requires = "agent")]
    pub remove: bool,
}

/// Sets wit up in the repository.
pub fn run(ctx: &Context, args: &InitArgs) -> Result<Report, CliError> {
    if args.remove {
        return remove_agents(ctx, &args.agent);
    }
    let paths = &ctx.paths;
    let mut human = format!("wit init in {}\n", paths.root.display());
    ensure_state_dir(paths).map_err(|error| CliError::Failed(error.to_string()))?;

    let (session, created) = ensure_session_file(&paths.session_id).map_err(|error| {
        CliError::Failed(format!(
            "cannot create {}: {error}",
            paths.session_id.display()
        ))
    })?;
    human.push_str(&if created {
        format!("  session      created .wit/session.id ({session})\n")
    } else {
        format!("  session      kept .wit/session.id ({session})\n")
    });

    let started = block_on(async {
        launcher::ensure_running(paths, &launcher::LaunchOptions::default())
            .await
            .map_err(|error| CliError::Unreachable(format!("cannot start the daemon: {error}")))
    })?;
    human.push_str(if started {
        "  daemon       started\n"
    } else {
        "  daemon       already running\n"
    });
    if let Some(index) = super::index_progress::follow(paths) {
        human.push_str(&format!("  index        {}\n", index.describe()));
    }

    let hooks_value = if args.no_hooks {
        human.push_str("  hooks        skipped (--no-hooks)\n");
        json!(null)
    } else {
        let exe = std::env::current_exe()
            .map_err(|error| CliError::Failed(format!("cannot find the wit binary: {error}")))?;
        let changes = hooks::install(&paths.root, &exe)?;
        for (hook, action) in &changes.actions {
            human.push_str(&format!("  {hook:<12} {action}\n"));
        }
        json!(changes
            .actions
            .iter()
            .map(|(hook, action)| (hook.clone(), action.clone()))
            .collect::<std::collections::BTreeMap<_, _>>())
    };

    let mut docs = serde_json::Map::new();
    if args.no_docs {
        human.push_str("  docs         skipped (--no-docs)\n");
    } else {
        for name in ["AGENTS.md", "CLAUDE.md"] {
            let action = write_section(&paths.root.join(name))?;
            human.push_str(&format!("  {name:<12} {action}\n"));
            docs.insert(name.to_string(), json!(action));
        }
    }
    let mut agents = serde_json::Map::new();
    let mut needed = Vec::new();
    if !args.agent.is_empty() {
        let command = agent_config::wit_command();
        let wanted = dedup(&args.agent);
        let news = agent_config::news_available();
        for &agent in &wanted {
            for &target in agent.targets().iter().filter(|t| news || !t.is_news()) {
                let action = agent_config::apply(target, &paths.root, &command, false)?;
                human.push_str(&format!("  {:<12} {action}\n", target.label()));
                add_action(&mut agents, target.label(), &action);
            }
        }
        // What the harnesses still need before they run what was just wired (`wit doctor`).
        needed = doctor::check(&paths.root, &wanted, &doctor::Homes::from_env())
            .into_iter()
            .filter(|finding| !finding.ok)
            .collect();
    }
    if !needed.is_empty() {
        human.push_str("Still needed (`wit doctor` checks again):\n");
        for finding in &needed {
            human.push_str(&format!("  {}\n", finding.line()));
        }
    }
    human.push_str(
        "Next: give each agent its own WIT_SESSION, then `wit status`. Try `wit demo` to see the workflow.\n",
    );
    let value = json!({
        "root": paths.root.display().to_string(),
        "session": session,
        "sessionCreated": created,
        "daemonStarted": started,
        "hooks": hooks_value,
        "docs": docs,
        "agents": agents,
        "stillNeeded": needed.iter().map(doctor::Finding::line).collect::<Vec<_>>(),
    });
    Ok(Report::new(value, human))
}

/// Records `action` for `label` (several entries in one file: their actions, joined).
fn add_action(actions: &mut serde_json::Map<String, serde_json::Value>, label: &str, action: &str) {
    match actions.get_mut(label) {
        Some(serde_json::Value::String(before)) => {
            before.push_str("; ");
            before.push_str(action);
        }
        _ => {
            actions.insert(label.to_string(), json!(action));
        }
    }
}

/// `wit init --agent .. --remove`: wit's MCP server out of each agent's configuration.
fn remove_agents(ctx: &Context, agents: &[Agent]) -> Result<Report, CliError> {
    let root = &ctx.paths.root;
    let mut human = format!("wit init --remove in {}\n", root.display());
    let mut actions = serde_json::Map::new();
    for agent in dedup(agents) {
        for &target in agent.targets() {
            let action = agent_config::apply(target, root, "", true)?;
            human.push_str(&format!("  {:<21} {action}\n", target.label()));
            add_action(&mut actions, target.label(), &action);
        }
    }
    let value = json!({ "root": root.display().to_string(), "agents": actions });
    Ok(Report::new(value, human))
}

/// The agents in the order given, each once.
fn dedup(agents: &[Agent]) -> Vec<Agent> {
    let mut seen = Vec::new();
    for agent in agents {
        if !seen.contains(agent) {
            seen.push(*agent);
        }
    }
    seen
}

/// The file's text with wit's block added or replaced; the rest is kept byte for byte.
pub fn with_section(existing: Option<&str>) -> String {
    let block = format!("{BEGIN_MARKER}\n{AGENT_SECTION}{END_MARKER}\n");
    let Some(text) = existing else {
        return block;
    };
    if let (Some(begin), Some(end)) = (text.find(BEGIN_MARKER), text.find(END_MARKER)) {
        if begin < end {
            let mut after = &text[end + END_MARKER.len()..];
            if let Some(rest) = after.strip_prefix('\n') {
                after = rest;
            }
            return format!("{}{block}{after}", &text[..begin]);
        }
    }
    let separator = if text.is_empty() || text.ends_with("\n\n") {
        ""
    } else if text.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!("{text}{separator}{block}")
}

/// Writes wit's block into `path`; returns what happened.
fn write_section(path: &Path) -> Result<&'static str, CliError> {
    let existing = match fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => {
            return Err(CliError::Failed(format!(
                "cannot read {}: {error}",
                path.display()
            )))
        }
    };
    let wanted = with_section(existing.as_deref());
    if existing.as_deref() == Some(wanted.as_str()) {
        return Ok("unchanged");
    }
    fs::write(path, &wanted)
        .map_err(|error| CliError::Failed(format!("cannot write {}: {error}", path.display())))?;
    Ok(match existing {
        None => "created with the wit section",
        Some(text) if text.contains(BEGIN_MARKER) => "wit section updated",
        Some(_) => "wit section added",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_added_once_and_replaced_in_place() {
        let fresh = with_section(None);
        assert!(fresh.starts_with(BEGIN_MARKER));
        assert_eq!(with_section(Some(&fresh)), fresh);

        let mine = "# Project\n\nOur rules.\n";
        let added = with_section(Some(mine));
        assert!(added.starts_with("# Project\n\nOur rules.\n\n<!-- wit:begin -->"));
        assert_eq!(with_section(Some(&added)), added);

        let stale = "top\n<!-- wit:begin -->\nold text\n<!-- wit:end -->\nbottom\n";
        let replaced = with_section(Some(stale));
        assert!(replaced.starts_with("top\n<!-- wit:begin -->\n## Working"));
        assert!(replaced.ends_with("<!-- wit:end -->\nbottom\n"));
        assert!(!replaced.contains("old text"));
    }
}
