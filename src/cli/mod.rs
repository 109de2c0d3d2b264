//! The `wit` command line: argument parsing and dispatch to one module per subcommand group.
//!
//! Every command returns a `output::Report` or a `output::CliError`; `output` is the one
//! place that prints. Exit codes: 0 success, 1 a protocol error (such as LOCK_CONFLICT) or a
//! failed check, 2 a usage error, 3 the daemon is unreachable.
//!
//! A call costs one process start, one current-thread runtime and one request on the socket:
//! the request is sent first and the daemon is only started (race-free, through
//! [`crate::daemon::launcher::ensure_running`]) when nothing answers.

pub(crate) mod agent_config;
pub mod agent_trace;
pub(crate) mod agents;
pub(crate) mod blame;
pub(crate) mod call;
pub(crate) mod claude;
pub mod commit;
pub mod commit_hooks;
pub mod commit_plan;
pub(crate) mod context;
pub(crate) mod contracts;
pub(crate) mod daemon_cmd;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod duration;
pub(crate) mod gitio;
pub(crate) mod hook_line;
pub(crate) mod hunks;
pub(crate) mod index_progress;
pub(crate) mod init;
pub(crate) mod intents;
pub(crate) mod locks;
pub(crate) mod log;
pub(crate) mod output;
pub(crate) mod owners;
pub(crate) mod render;
pub(crate) mod sessions;
pub(crate) mod snapshot_merge;
pub mod snapshots;
pub(crate) mod status;
pub(crate) mod ui;
pub(crate) mod worktrees;

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};

use crate::analysis::worker;

pub use crate::doorway::session::{
    resolve_session, session_from_flag_or_env, SessionSource, CLAUDE_SESSION_ENV, SESSION_ENV,
};
pub use crate::doorway::NO_AUTOSTART_ENV;
pub use duration::parse_duration;
pub use output::CliError;

use crate::doorway::session;

use crate::hooks;
use context::Context;
use output::Report;

/// Exit code of a successful command.
pub const EXIT_OK: u8 = 0;
/// Exit code when the daemon answered with a protocol error, or a check failed.
pub const EXIT_PROTOCOL: u8 = 1;
/// Exit code of a usage error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code when no daemon could be reached or started.
pub const EXIT_UNREACHABLE: u8 = 3;
/// Exit code of a parse worker (`wit __analyze`) that failed.
const WORKER_FAILURE: u8 = 1;

const EXAMPLES: &str = "\
Examples:
  wit demo [--ui]                            watch agents kept apart in a temp repo
  wit init                                   set wit up in this repository
  export WIT_SESSION=agent-1                 give this shell its own identity
  wit declare -d \"Rework auth\" -f src/auth.ts -s validateToken
  wit lock src/auth.ts:validateToken --ttl 20m
  wit lock src/auth.ts:validateToken --wait 5m   wait for another agent's lock
  wit status
  wit log -f                                 follow every change
  wit release src/auth.ts:validateToken
  wit contract propose src/auth.ts:validateToken
  wit call lock.query '{}'                    any RPC method with raw params

Exit codes: 0 ok, 1 protocol error (e.g. LOCK_CONFLICT) or blocked check, 2 usage, 3 daemon unreachable.";

/// Coordinate several AI coding agents editing one git repository.
///
/// One daemon per repository keeps locks on symbols, declared intents and agreed function
/// signatures (contracts); every command talks to it over `.wit/daemon.sock` and starts it
/// when none is running.
#[derive(Debug, Parser)]
#[command(name = "wit", version, about, after_help = EXAMPLES)]
pub struct Cli {
    /// The flags every command takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The flags every command takes.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct GlobalArgs {
    /// Repository root (default: $WIT_REPO_ROOT, else the enclosing git work tree, else the
    /// current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// This agent's session id (default: $WIT_SESSION, else $CLAUDE_SESSION_ID, else
    /// .wit/session.id).
    #[arg(long, global = true, value_name = "ID")]
    pub session: Option<String>,
    /// Print machine-readable JSON on stdout (errors too, as `{"error": {..}}`).
    #[arg(long, global = true)]
    pub json: bool,
}

/// `wit hook …` alone, for the harness hooks an agent's harness runs around every tool call
/// (`pre-edit`, `post-tool`): parsed without building the rest of the command line, whose
/// every subcommand's arguments clap would build first (issue 32.2: the hook process's own
/// start is most of its cost). The same flags and subcommands as [`Cli`], so the same
/// command line means the same thing; anything else takes the full parser.
#[derive(Debug, Parser)]
#[command(name = "wit")]
struct HookCli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: HookOnly,
}

/// The one subcommand [`HookCli`] knows.
#[derive(Debug, Subcommand)]
enum HookOnly {
    /// `wit hook …`.
    #[command(subcommand)]
    Hook(hooks::HookCommand),
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Set wit up here: .wit/, a session id, the daemon, git hooks, AGENTS.md/CLAUDE.md.
    ///
    /// Running it again changes nothing; an existing session id is never replaced.
    /// `--agent claude` / `--agent codex` also add wit's MCP server (`wit mcp`) to .mcp.json /
    /// .codex/config.toml and the edit gate to .claude/settings.json / .codex/hooks.json;
    /// `--agent gemini,cursor,copilot,opencode` wire the others (a comma list or repeated; see
    /// `wit init --help`); `--agent .. --remove` takes them out again (and does nothing else).
    Init(init::InitArgs),
    /// Check each harness wired here: its configuration where the harness reads it, whether
    /// the harness will run it (Codex trust, Gemini hooksConfig and trusted folders, Claude's
    /// MCP approval) and a dry run of the gate with a payload of that harness.
    ///
    /// One line per finding with its fix; exit code 1 when something needs fixing.
    Doctor,
    /// Show intents, locks (with time left) and contracts.
    Status,
    /// Live view of `wit status` that redraws when something changes (Ctrl-C to quit).
    Watch(status::WatchArgs),
    /// Declare what you are about to change; prints conflicts with other agents' work.
    ///
    /// Example: wit declare -d "Rework token checks" -f src/auth.ts -s validateToken
    Declare(intents::DeclareArgs),
    /// List or update intents.
    #[command(subcommand)]
    Intent(intents::IntentCommand),
    /// Lock a symbol (`file:name`) for this session.
    ///
    /// Exit code 1 with LOCK_CONFLICT when another session holds it.
    /// Example: wit lock src/auth.ts:validateToken --ttl 20m
    Lock(locks::LockArgs),
    /// Release a lock this session holds.
    Release(locks::ReleaseArgs),
    /// List live locks.
    Locks(locks::LocksArgs),
    /// Propose, accept, reject or list signature contracts.
    #[command(subcommand)]
    Contract(contracts::ContractCommand),
    /// Register this session under a display name (optionally tied to a process or a lease).
    ///
    /// Example: wit register claude-backend --pid 4242
    Register(agents::RegisterArgs),
    /// List every session the daemon knows: live ones first, with their locks and intents.
    Sessions,
    /// Which worktrees of the repository will collide where when merged, by symbol.
    Worktrees,
    /// Who owns each uncommitted line of a file (sessions, or unowned).
    ///
    /// Example: wit blame src/lib.py
    Blame(blame::BlameArgs),
    /// End a session (release its locks, abandon its intents) or renew its lease.
    #[command(subcommand)]
    Session(sessions::SessionCommand),
    /// Print the log of changes (locks, intents, contracts, sessions); `-f` follows it.
    ///
    /// Example: wit log -f --type lock.released --type session.reaped
    Log(log::LogArgs),
    /// Serve every protocol method as an MCP tool on stdin/stdout (for coding agents).
    ///
    /// The session is --session, else $WIT_SESSION, else $CLAUDE_SESSION_ID, else a new id for
    /// this server; it is registered at `initialize` and ended when stdin closes.
    /// `wit init --agent claude|codex` adds this server to the agent's configuration.
    Mcp,
    /// Serve a live page of sessions, locks, waits, the work map, contracts and events.
    ///
    /// Listens on 127.0.0.1 only and prints the address with its access token; the page
    /// offers what a person may do: end a session, release a lock of an ended session,
    /// accept or reject a contract. The page acts as its own session: --session ID, else
    /// `ui:<user>:<pid>` (never $WIT_SESSION). Example: wit ui --port 8787 --no-open
    Ui(ui::UiArgs),
    /// Call any RPC method with raw JSON params (for scripts and debugging).
    ///
    /// Example: wit call lock.query '{"sessionId":"agent-1"}'
    Call(call::CallArgs),
    /// Play two agents through the whole protocol in a temporary repository.
    Demo(demo::DemoArgs),
    /// Run, start, stop or inspect the repository's daemon.
    #[command(subcommand)]
    Daemon(daemon_cmd::DaemonCommand),
    /// Install or remove wit's git hooks (pre-commit, prepare-commit-msg, post-commit); the
    /// agents' pre-edit gate (`wit hook pre-edit --agent ..`); the gate's policy.
    #[command(subcommand)]
    Hook(hooks::HookCommand),
    /// Commit exactly this session's own changes: its observed lines, hunk by hunk, never
    /// another live session's uncommitted lines in the same files (the working tree is not
    /// touched). The way for agents sharing one tree to commit.
    ///
    /// Example: wit commit -m "Validate tokens" src/auth.ts
    Commit(commit::CommitArgs),
    /// List the snapshots (each session's uncommitted work, kept as it changes, and what the
    /// shell gate saved before a destructive git command), or restore one (`wit snapshots
    /// restore ID [--session S]`); kept 7 days.
    Snapshots {
        /// `list` (the default) or `restore ID`.
        #[command(subcommand)]
        command: Option<snapshots::SnapshotCommand>,
    },
    /// Check staged changes (or the given files) against accepted contracts.
    ///
    /// What the pre-commit hook runs. Exit code 1 when a contract is broken.
    CheckContracts(contracts::CheckArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Parses the arguments, runs the command, prints its outcome and returns the exit code.
pub fn main() -> u8 {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|first| first == worker::SUBCOMMAND) {
        return analyze_worker(args.collect());
    }
    if let Some((global, hook)) = parse_harness_hook() {
        let json = global.json;
        let outcome = Ok(harness_hook(&global, hook));
        return output::finish(outcome, json);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() {
                EXIT_USAGE
            } else {
                EXIT_OK
            };
            let _ = error.print();
            return code;
        }
    };
    let json = cli.global.json;
    let outcome = run(cli);
    output::finish(outcome, json)
}

/// A harness hook's command line (`wit … hook pre-edit|post-tool …`) read by
/// [`hook_line::read`] or, for a form it leaves alone, by [`HookCli`]; `None` for every other
/// command line, and for one neither reads (the full parser then says what is wrong).
fn parse_harness_hook() -> Option<(GlobalArgs, HarnessHook)> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let named = args
        .windows(2)
        .any(|pair| pair[0] == "hook" && (pair[1] == "pre-edit" || pair[1] == "post-tool"));
    if !named {
        return None;
    }
    if let Some(read) = args.get(1..).and_then(hook_line::read) {
        return Some(read);
    }
    by_hook_cli(args)
}

/// A harness hook's command line as [`HookCli`] reads it (`None`: an error, or another `wit
/// hook` subcommand).
fn by_hook_cli<I, T>(args: I) -> Option<(GlobalArgs, HarnessHook)>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let HookCli { global, command } = HookCli::try_parse_from(args).ok()?;
    let HookOnly::Hook(command) = command;
    let hook = match command {
        hooks::HookCommand::PreEdit { agent } => HarnessHook::PreEdit(agent),
        hooks::HookCommand::PostTool { agent } => HarnessHook::PostTool(agent),
        _ => return None,
    };
    Some((global, hook))
}

/// The hooks a harness runs around each tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HarnessHook {
    /// `wit hook pre-edit --agent ..`: the edit gate.
    PreEdit(agent_config::Agent),
    /// `wit hook post-tool --agent ..`: the news hook.
    PostTool(agent_config::Agent),
}

/// Runs a harness hook. They find their repository from the harness's payload and fail open
/// on anything, so they run before (and without) the usual repository context.
fn harness_hook(global: &GlobalArgs, hook: HarnessHook) -> Report {
    let (repo, session) = (global.repo.as_deref(), global.session.as_deref());
    match hook {
        HarnessHook::PreEdit(agent) => hooks::pre_edit::run(agent, repo, session),
        HarnessHook::PostTool(agent) => hooks::post_tool::run(agent, repo, session),
    }
}

/// `wit __analyze LANGUAGE BUDGET_MS` (one source) or `wit __analyze --serve` (framed
/// requests until stdin closes): the daemon's parse workers (see [`crate::analysis::worker`]
/// and [`crate::analysis::pool`]); not for people, so not in `--help`.
fn analyze_worker(args: Vec<std::ffi::OsString>) -> u8 {
    let text: Vec<String> = args
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    if let [flag] = text.as_slice() {
        if flag == crate::analysis::pool::SERVE_FLAG {
            let outcome = crate::analysis::pool::serve_frames(
                &mut std::io::stdin().lock(),
                &mut std::io::BufWriter::new(std::io::stdout().lock()),
            );
            return match outcome {
                Ok(()) => EXIT_OK,
                Err(error) => {
                    eprintln!("wit {}: {error}", worker::SUBCOMMAND);
                    WORKER_FAILURE
                }
            };
        }
    }
    let [language, budget] = text.as_slice() else {
        eprintln!(
            "usage: wit {} LANGUAGE BUDGET_MS < source",
            worker::SUBCOMMAND
        );
        return EXIT_USAGE;
    };
    let outcome = worker::serve(
        language,
        budget,
        &mut std::io::stdin().lock(),
        &mut std::io::BufWriter::new(std::io::stdout().lock()),
    );
    match outcome {
        Ok(()) => EXIT_OK,
        Err(error) => {
            eprintln!("wit {}: {error}", worker::SUBCOMMAND);
            WORKER_FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<Report, CliError> {
    let Cli { global, command } = cli;
    match command {
        // Commands that need no repository or daemon.
        Command::Completions { shell } => {
            let mut buffer = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "wit", &mut buffer);
            Ok(Report::raw(buffer))
        }
        Command::Demo(args) => demo::run(&args, global.json),
        // Stdout is the MCP channel: nothing else may be printed there.
        Command::Mcp => {
            let autostart = crate::doorway::autostart_from_env();
            crate::mcp::serve(global.repo.as_deref(), global.session.as_deref(), autostart)
                .map(|()| Report::nothing())
                .map_err(|error| CliError::Failed(format!("wit mcp: {error}")))
        }
        Command::Hook(hooks::HookCommand::PreEdit { agent }) => {
            Ok(harness_hook(&global, HarnessHook::PreEdit(agent)))
        }
        Command::Hook(hooks::HookCommand::PostTool { agent }) => {
            Ok(harness_hook(&global, HarnessHook::PostTool(agent)))
        }
        // The page acts as the person's own session: only --session names it, never an
        // agent's identity inherited from the environment.
        Command::Ui(args) => {
            let ctx = Context::new(global.repo.as_deref(), None, global.json)?;
            ui::run(&ctx, &args, global.session)
        }
        command => {
            let ctx = Context::new(global.repo.as_deref(), global.session, global.json)?;
            dispatch(&ctx, command)
        }
    }
}

fn dispatch(ctx: &Context, command: Command) -> Result<Report, CliError> {
    match command {
        Command::Init(args) => init::run(ctx, &args),
        Command::Doctor => doctor::run(ctx),
        Command::Status => ctx.block_on(status::status(ctx)),
        Command::Watch(args) => ctx.block_on(status::watch(ctx, &args)),
        Command::Declare(args) => ctx.block_on(intents::declare(ctx, args)),
        Command::Intent(command) => ctx.block_on(intents::run(ctx, command)),
        Command::Lock(args) => ctx.block_on(locks::lock(ctx, args)),
        Command::Release(args) => ctx.block_on(locks::release(ctx, args)),
        Command::Locks(args) => ctx.block_on(locks::list(ctx, args)),
        Command::Contract(command) => ctx.block_on(contracts::run(ctx, command)),
        Command::Register(args) => ctx.block_on(agents::register(ctx, args)),
        Command::Sessions => ctx.block_on(sessions::list(ctx)),
        Command::Worktrees => ctx.block_on(worktrees::forecast(ctx)),
        Command::Blame(args) => ctx.block_on(blame::blame(ctx, &args)),
        Command::Session(command) => ctx.block_on(sessions::run(ctx, command)),
        Command::Log(args) => ctx.block_on(log::run(ctx, args)),
        Command::Call(args) => ctx.block_on(call::run(ctx, args)),
        Command::Daemon(command) => daemon_cmd::run(ctx, command),
        Command::Hook(command) => hooks::run(ctx, command),
        Command::CheckContracts(args) => ctx.block_on(contracts::check(ctx, &args)),
        Command::Commit(args) => ctx.block_on(commit::run(ctx, args)),
        Command::Snapshots { command } => snapshots::run(ctx, command),
        Command::Completions { .. } | Command::Demo(_) | Command::Mcp | Command::Ui(_) => Err(
            CliError::Failed("internal: command dispatched twice".into()),
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
        HookCli::command().debug_assert();
    }

    /// The hooks' own parser reads a hook's command line as the full one does, global flags
    /// anywhere, and leaves every other command line to it.
    #[test]
    fn the_hook_parser_reads_what_the_full_parser_reads() {
        let line = [
            "wit", "--repo", "/r", "hook", "pre-edit", "--agent", "codex", "--json",
        ];
        let HookCli { global, command } = HookCli::try_parse_from(line).unwrap();
        let full = Cli::try_parse_from(line).unwrap();
        assert_eq!(global.repo, full.global.repo);
        assert_eq!(global.json, full.global.json);
        assert!(global.json);
        let HookOnly::Hook(command) = command;
        assert!(matches!(
            (command, full.command),
            (
                hooks::HookCommand::PreEdit {
                    agent: agent_config::Agent::Codex
                },
                Command::Hook(hooks::HookCommand::PreEdit {
                    agent: agent_config::Agent::Codex
                })
            )
        ));
        assert!(HookCli::try_parse_from(["wit", "status"]).is_err());
    }
}
