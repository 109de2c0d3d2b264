//! `wit hook …`: the git hooks ([`git`]) and the edit gate, the harness adapters that check
//! an agent's edit before it is written ([`pre_edit`], the shared flow; [`claude`], [`codex`]
//! with its `apply_patch` parser, [`gemini`], [`cursor`], [`copilot`], [`opencode`], [`cline`],
//! [`windsurf`], [`kiro`]: payload in, the harness's answer out; [`powershell`]: PowerShell
//! lines read for the shell gate; [`policy`]: the `[gate]` configuration), the shell gate for
//! git commands that would take or drop other sessions' work ([`shell`], reached through the
//! same `pre-edit` entry for shell tools), the pre-commit check for staged foreign lines
//! ([`foreign`]) and the news hook after each tool call ([`post_tool`], with [`news_queue`]:
//! when it tells what). What the harness hooks share: [`hook_input`] (one deadline, the
//! payload, the repository) and [`harness_session`] (the session's pulse and remembered
//! state).
//!
//! The adapters are clients of the daemon like the rest of the CLI: every rule lives in
//! `edit.preflight`; they only translate and weigh its findings.

pub mod claude;
pub mod cline;
pub mod codex;
pub mod copilot;
pub mod cursor;
pub mod gemini;
pub mod harness_session;
pub mod hook_input;
pub mod kiro;
pub mod news_queue;
pub mod opencode;
pub mod policy;
pub mod post_tool;
pub mod powershell;
pub mod pre_edit;
pub mod windows;
pub mod windsurf;

pub use crate::safegit::{foreign, git, shell};

#[cfg(test)]
mod fuzz_tests;

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::json;

use crate::cli::agent_config::Agent;
use crate::cli::context::{block_on, Context};
use crate::cli::output::{CliError, Report};

pub use git::{install, shell_quote, uninstall};

/// `wit hook ...`.
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Install the pre-commit, prepare-commit-msg and post-commit hooks (honours
    /// core.hooksPath; an existing hook is kept and called first).
    Install,
    /// Remove wit's hooks and restore the hooks they chained to.
    Uninstall,
    /// The edit gate: what an agent's pre-edit hook runs. Reads the harness's payload on
    /// stdin, checks the edit with the daemon (`edit.preflight`) and answers in the harness's
    /// format on stdout; lets the edit through when anything is wrong (always exit 0).
    ///
    /// Wired by `wit init --agent claude|codex|gemini|cursor|copilot|opencode`.
    PreEdit {
        /// The harness whose payload and answer format to use.
        #[arg(long, value_enum)]
        agent: Agent,
    },
    /// News at the next tool call: what an agent's post-tool hook runs (Claude Code and Codex
    /// PostToolUse, Gemini CLI AfterTool, Cursor postToolUse). Tells the agent, as context in
    /// the harness's answer format, what changed for it since its last tool call: its lock
    /// expires within a minute, another agent started work that meets its own, a contract on
    /// its code was proposed or rejected. Each piece of news once, at most one line per topic
    /// per five minutes, nothing when nothing changed; never starts a daemon (always exit 0).
    PostTool {
        /// The harness whose payload and answer format to use.
        #[arg(long, value_enum)]
        agent: Agent,
    },
    /// Print the edit gate's policy ([gate] in wit.toml, overridden by .wit/config.toml).
    ///
    /// Exit code 2 when a value is wrong (the gate then lets every edit through).
    Policy,
    /// What the prepare-commit-msg hook runs: adds a `Wit-Intent: <id>` trailer per declared
    /// or active intent of the committing session.
    #[command(hide = true)]
    PrepareCommitMsg {
        /// The commit message file.
        file: PathBuf,
        /// Where the message came from (message, template, merge, squash, commit).
        source: Option<String>,
        /// The commit id, for amends.
        sha: Option<String>,
    },
    /// What the pre-commit hook runs after the contracts: blocks (exit 1) a commit whose
    /// staged lines another live session changed and did not commit (WIT_ALLOW_FOREIGN=1
    /// overrides).
    #[command(hide = true)]
    CheckForeign,
    /// What the pre-commit hook runs: the contracts check and the foreign-lines check, one
    /// 2 s budget and at most one warning line for both (docs/protocol.md 6).
    #[command(hide = true)]
    PreCommit,
    /// What the post-commit hook runs: resolves the observed-edit intents on the committed
    /// files, whichever session recorded them.
    #[command(hide = true)]
    PostCommit,
    /// What the Claude Code plugin's SessionStart hook runs: exports the Claude session id
    /// for later `wit` calls (through $CLAUDE_ENV_FILE), registers the session with the
    /// Claude process's pid, and prints `wit status`.
    #[command(hide = true)]
    ClaudeSessionStart,
    /// What the Claude Code plugin's SessionEnd hook runs: ends the session (its locks are
    /// released, its open intents abandoned).
    #[command(hide = true)]
    ClaudeSessionEnd,
}

/// Runs a hook subcommand.
pub fn run(ctx: &Context, command: HookCommand) -> Result<Report, CliError> {
    match command {
        HookCommand::Install => {
            let exe = std::env::current_exe().map_err(|error| {
                CliError::Failed(format!("cannot find the wit binary: {error}"))
            })?;
            Ok(install(&ctx.paths.root, &exe)?.report())
        }
        HookCommand::Uninstall => Ok(uninstall(&ctx.paths.root)?.report()),
        HookCommand::PreEdit { agent } => Ok(pre_edit::run(agent, Some(&ctx.paths.root), None)),
        HookCommand::PostTool { agent } => Ok(post_tool::run(agent, Some(&ctx.paths.root), None)),
        HookCommand::Policy => policy_report(ctx),
        HookCommand::PrepareCommitMsg { file, .. } => {
            // Never in the way of a commit: any failure leaves the message as it is.
            let added = block_on(git::add_trailers(ctx, &file)).unwrap_or_default();
            Ok(Report::quiet(json!({"trailers": added})))
        }
        HookCommand::CheckForeign => ctx.block_on(foreign::check(ctx)),
        HookCommand::PreCommit => ctx.block_on(foreign::pre_commit(ctx)),
        HookCommand::PostCommit => {
            // Silent whatever happens: the commit is already made.
            let resolved = block_on(git::resolve_observed(ctx)).unwrap_or_default();
            Ok(Report::quiet(json!({"resolved": resolved})))
        }
        HookCommand::ClaudeSessionStart => Ok(crate::cli::claude::session_start(ctx)),
        HookCommand::ClaudeSessionEnd => Ok(crate::cli::claude::session_end(ctx)),
    }
}

/// `wit hook policy`.
fn policy_report(ctx: &Context) -> Result<Report, CliError> {
    let (policy, sources) = policy::load(&ctx.paths.root).map_err(|error| {
        CliError::Usage(format!(
            "{error}\nthe edit gate lets every edit through until this is fixed"
        ))
    })?;
    let from = if sources.is_empty() {
        "defaults (no wit.toml, no .wit/config.toml)".to_string()
    } else {
        sources
            .iter()
            .map(|path| {
                path.strip_prefix(&ctx.paths.root)
                    .unwrap_or(path)
                    .display()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join(", then ")
    };
    let human = format!(
        "[gate] from {from}\n  locks     = {}\n  intents   = {}\n  contracts = {}\n  record    = {}\n  git       = {}\n  unowned   = {}\n",
        policy.locks, policy.intents, policy.contracts, policy.record, policy.git, policy.unowned
    );
    let value = json!({
        "locks": policy.locks.as_str(),
        "intents": policy.intents.as_str(),
        "contracts": policy.contracts.as_str(),
        "record": policy.record,
        "git": policy.git.as_str(),
        "unowned": policy.unowned.as_str(),
        "sources": sources.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
    });
    Ok(Report::new(value, human))
}
