//! The `wit` command line: argument parsing and dispatch to one module per subcommand.
//!
//! Exit codes: 0 success, 1 a protocol error (such as LOCK_CONFLICT), 2 a usage error,
//! 3 the daemon is unreachable.

mod daemon_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code of a successful command.
pub const EXIT_OK: u8 = 0;
/// Exit code when the daemon answered with a protocol error.
pub const EXIT_PROTOCOL: u8 = 1;
/// Exit code of a usage error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code when no daemon could be reached or started.
pub const EXIT_UNREACHABLE: u8 = 3;

/// Coordinate several AI coding agents editing one git repository.
#[derive(Debug, Parser)]
#[command(name = "wit", version, about, long_about = None)]
pub struct Cli {
    /// Repository root (default: $WIT_REPO_ROOT, else the enclosing git work tree, else the
    /// current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run, start, stop or inspect the repository's daemon.
    #[command(subcommand)]
    Daemon(daemon_cmd::DaemonCommand),
}

/// Parses the arguments, runs the command and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    let code = match cli.command {
        Command::Daemon(command) => daemon_cmd::run(cli.repo.as_deref(), command),
    };
    ExitCode::from(code)
}
