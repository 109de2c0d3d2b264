//! `wit daemon run|start|stop|status`.

use std::time::Duration;

use clap::Subcommand;
use serde_json::json;

use super::context::{block_on, Context};
use super::output::{CliError, Report};
use super::EXIT_UNREACHABLE;
use crate::analysis::worker::{self, ParseWorker};
use crate::daemon::launcher;
use crate::daemon::runner::{run as run_daemon, DaemonOptions};
use crate::daemon::server::ServeConfig;
use crate::daemon::store_choice;

/// The daemon subcommands.
#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Run the daemon in the foreground (what service managers and tests use).
    Run {
        /// Log filter (e.g. `info`, `debug`, `wit=trace`); default $RUST_LOG, else `info`.
        #[arg(long, value_name = "FILTER")]
        log_level: Option<String>,
        /// Largest accepted request body in bytes.
        #[arg(long, value_name = "BYTES", default_value_t = crate::protocol::params::MAX_BODY_BYTES)]
        max_body: usize,
        /// Most connections served at once.
        #[arg(long, value_name = "N", default_value_t = 1024)]
        max_connections: usize,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Start the daemon in the background; returns once it answers. Does nothing if it runs.
    Start {
        /// Log filter for the background daemon (written to .wit/daemon.log).
        #[arg(long, value_name = "FILTER")]
        log_level: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Stop the running daemon (SIGTERM) and wait until it is gone.
    Stop,
    /// Show pid, socket, uptime and version of the running daemon (exit 3 when none runs).
    Status,
}

/// Where the daemon keeps its state (docs/protocol.md 12.1).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StoreArgs {
    /// `sqlite` (default: .wit/state.db) or a `postgres://` URL shared by the daemons of
    /// several machines; default $WIT_STORE, else `[store] url` in .wit/config.toml.
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// The project the shared state belongs to; default $WIT_PROJECT, else `[store] project`
    /// in .wit/config.toml, else the id of the repository's first commit.
    #[arg(long, value_name = "NAME")]
    project: Option<String>,
}

/// Runs a daemon subcommand.
pub fn run(ctx: &Context, command: DaemonCommand) -> Result<Report, CliError> {
    let paths = &ctx.paths;
    let root = paths.root.display().to_string();
    match command {
        DaemonCommand::Run {
            log_level,
            max_body,
            max_connections,
            store,
        } => run_foreground(ctx, log_level.as_deref(), max_body, max_connections, &store),
        DaemonCommand::Start { log_level, store } => block_on(async {
            let options = launcher::LaunchOptions {
                log_level,
                store: store.store,
                project: store.project,
            };
            let started = launcher::ensure_running(paths, &options)
                .await
                .map_err(|error| CliError::Unreachable(error.to_string()))?;
            let mut human = if started {
                format!("wit daemon started for {root}")
            } else {
                format!("wit daemon already running for {root}")
            };
            let index = super::index_progress::follow(paths);
            if let Some(index) = &index {
                human.push_str(&format!("\nindex: {}", index.describe()));
            }
            Ok(Report::new(
                json!({"root": root, "started": started, "index": index}),
                human,
            ))
        }),
        DaemonCommand::Stop => block_on(async {
            let stopped = launcher::stop(paths, Duration::from_secs(10))
                .await
                .map_err(|error| CliError::Unreachable(error.to_string()))?;
            let human = if stopped {
                "wit daemon stopped".to_string()
            } else {
                format!("no wit daemon is running for {root}")
            };
            Ok(Report::new(
                json!({"root": root, "stopped": stopped}),
                human,
            ))
        }),
        DaemonCommand::Status => block_on(async {
            let status = launcher::status(paths).await;
            let socket = status.socket.display().to_string();
            match (&status.record, status.answering) {
                (Some(record), true) => {
                    let uptime_ms = (crate::doorway::clock::now_ms() as u64)
                        .saturating_sub(record.started_at_ms);
                    let index = super::index_progress::current(paths);
                    let human = format!(
                        "running\n  pid      {}\n  socket   {socket}\n  uptime   {}s\n  version  {}\n  store    {}\n  index    {}",
                        record.pid,
                        uptime_ms / 1000,
                        record.version,
                        record.store,
                        super::index_progress::line(paths)
                    );
                    let value = json!({
                        "running": true,
                        "pid": record.pid,
                        "socket": socket,
                        "uptimeMs": uptime_ms,
                        "version": record.version,
                        "store": record.store,
                        "index": index,
                    });
                    Ok(Report::new(value, human))
                }
                _ => Ok(Report::new(
                    json!({"running": false, "socket": socket}),
                    format!("not running (socket {socket})"),
                )
                .with_code(EXIT_UNREACHABLE)),
            }
        }),
    }
}

fn run_foreground(
    ctx: &Context,
    log_level: Option<&str>,
    max_body: usize,
    max_connections: usize,
    store: &StoreArgs,
) -> Result<Report, CliError> {
    reexecute_once();
    crate::platform::heap::tune_allocator();
    init_logging(log_level);
    let store = store_choice::resolve(
        &ctx.paths.root,
        &ctx.paths.dir,
        store.store.as_deref(),
        store.project.as_deref(),
    )
    .map_err(|error| CliError::Usage(error.to_string()))?;
    let options = DaemonOptions {
        store,
        root: ctx.paths.root.clone(),
        serve: ServeConfig {
            max_body_bytes: max_body,
            max_connections,
            ..ServeConfig::default()
        },
        // Large files are parsed by this same executable in a child process.
        parse_worker: std::env::current_exe()
            .ok()
            .map(|exe| ParseWorker::new(exe, worker::DEFAULT_THRESHOLD)),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            CliError::Unreachable(format!("cannot start the async runtime: {error}"))
        })?;
    match runtime.block_on(run_daemon(options)) {
        Ok(()) => Ok(Report::nothing()),
        Err(error) => {
            tracing::error!(%error, "daemon failed");
            Err(CliError::Unreachable(error.to_string()))
        }
    }
}

/// The daemon re-executes itself once, before anything else, only when `--store URL` was
/// given: the URL's password would show in `ps` for the daemon's whole life, so the value moves
/// into `WIT_STORE` (which the flag beat, so the choice is the same) and the flag leaves the
/// command line, as `wit daemon start` does for its child. The process id and open descriptors
/// stay the same. (glibc's malloc settings, set this way until 2026-12-05, are set in the
/// process itself: [`crate::platform::heap::tune_allocator`].)
fn reexecute_once() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let (kept, store) = without_store_flag(&args);
    let Some(store) = store else {
        return;
    };
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(exe);
    command.args(kept);
    command.env(store_choice::STORE_ENV, store);
    // `exec` returns only when it failed; the daemon then runs as it is.
    let error = command.exec();
    eprintln!("wit: could not re-execute the daemon ({error}); continuing");
}

/// `args` without `--store VALUE` / `--store=VALUE`, and that value (the last one given).
fn without_store_flag(
    args: &[std::ffi::OsString],
) -> (Vec<std::ffi::OsString>, Option<std::ffi::OsString>) {
    let mut kept = Vec::with_capacity(args.len());
    let mut store = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            kept.push(arg.clone());
            kept.extend(rest.cloned());
            break;
        }
        if arg == "--store" {
            store = rest.next().cloned();
            continue;
        }
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(arg.as_os_str());
        if let Some(value) = bytes.strip_prefix(b"--store=") {
            store = Some(
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(value).to_owned(),
            );
            continue;
        }
        kept.push(arg.clone());
    }
    (kept, store)
}

fn init_logging(level: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    let filter = match level {
        Some(level) => EnvFilter::try_new(level),
        None => EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new("info")),
    }
    .unwrap_or_else(|_| EnvFilter::new("info"));
    // notify warns each time a watched directory is deleted (its watch is gone with it):
    // normal in a worktree, and noise in the log. Its errors still show.
    let filter = match "notify=error".parse() {
        Ok(quiet) => filter.add_directive(quiet),
        Err(_) => filter,
    };
    // Colour only on a terminal: `.wit/daemon.log` and captured stderr stay plain text.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_flag_leaves_the_command_line() {
        let args = |list: &[&str]| -> Vec<std::ffi::OsString> {
            list.iter().map(std::ffi::OsString::from).collect()
        };
        let (kept, store) = without_store_flag(&args(&[
            "daemon",
            "run",
            "--store",
            "postgres://u:p@h/d",
            "--max-body",
            "9",
        ]));
        assert_eq!(kept, args(&["daemon", "run", "--max-body", "9"]));
        assert_eq!(
            store.as_deref(),
            Some(std::ffi::OsStr::new("postgres://u:p@h/d"))
        );
        let (kept, store) = without_store_flag(&args(&["daemon", "run", "--store=sqlite"]));
        assert_eq!(kept, args(&["daemon", "run"]));
        assert_eq!(store.as_deref(), Some(std::ffi::OsStr::new("sqlite")));
        let (kept, store) = without_store_flag(&args(&["daemon", "run"]));
        assert_eq!((kept.len(), store), (2, None));
    }
}
