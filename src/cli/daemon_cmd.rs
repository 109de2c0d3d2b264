//! `wit daemon run|start|stop|status`.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Subcommand;

use super::{EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE};
use crate::daemon::launcher;
use crate::daemon::paths::{discover_root, WitPaths};
use crate::daemon::runner::{run as run_daemon, DaemonOptions};
use crate::daemon::server::ServeConfig;

/// The daemon subcommands.
#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Run the daemon in the foreground (what service managers and tests use).
    Run {
        /// Log filter (e.g. `info`, `debug`, `wit=trace`); default $RUST_LOG, else `info`.
        #[arg(long, value_name = "FILTER")]
        log_level: Option<String>,
        /// Largest accepted request body in bytes.
        #[arg(long, value_name = "BYTES", default_value_t = 32 * 1024 * 1024)]
        max_body: usize,
        /// Most connections served at once.
        #[arg(long, value_name = "N", default_value_t = 1024)]
        max_connections: usize,
    },
    /// Start the daemon in the background; returns once it answers. Does nothing if it runs.
    Start {
        /// Log filter for the background daemon (written to .wit/daemon.log).
        #[arg(long, value_name = "FILTER")]
        log_level: Option<String>,
    },
    /// Stop the running daemon (SIGTERM) and wait until it is gone.
    Stop,
    /// Show pid, socket, uptime and version of the running daemon.
    Status,
}

/// Runs a daemon subcommand and returns the exit code.
pub fn run(repo: Option<&Path>, command: DaemonCommand) -> u8 {
    let root = match discover_root(repo) {
        Ok(root) => root,
        Err(error) => {
            eprintln!("wit: cannot use the repository root: {error}");
            return EXIT_USAGE;
        }
    };
    let paths = WitPaths::for_root(&root);
    match command {
        DaemonCommand::Run {
            log_level,
            max_body,
            max_connections,
        } => run_foreground(&paths, log_level.as_deref(), max_body, max_connections),
        DaemonCommand::Start { log_level } => with_runtime(async {
            match launcher::ensure_running(&paths, log_level.as_deref()).await {
                Ok(true) => {
                    println!("wit daemon started for {}", paths.root.display());
                    EXIT_OK
                }
                Ok(false) => {
                    println!("wit daemon already running for {}", paths.root.display());
                    EXIT_OK
                }
                Err(error) => {
                    eprintln!("wit: {error}");
                    EXIT_UNREACHABLE
                }
            }
        }),
        DaemonCommand::Stop => with_runtime(async {
            match launcher::stop(&paths, Duration::from_secs(10)).await {
                Ok(true) => {
                    println!("wit daemon stopped");
                    EXIT_OK
                }
                Ok(false) => {
                    println!("no wit daemon is running for {}", paths.root.display());
                    EXIT_OK
                }
                Err(error) => {
                    eprintln!("wit: {error}");
                    EXIT_UNREACHABLE
                }
            }
        }),
        DaemonCommand::Status => with_runtime(async {
            let status = launcher::status(&paths).await;
            match (&status.record, status.answering) {
                (Some(record), true) => {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map(|d| d.as_millis() as u64)
                        .unwrap_or(0);
                    let uptime = Duration::from_millis(now.saturating_sub(record.started_at_ms));
                    println!("running");
                    println!("  pid      {}", record.pid);
                    println!("  socket   {}", status.socket.display());
                    println!("  uptime   {}s", uptime.as_secs());
                    println!("  version  {}", record.version);
                    EXIT_OK
                }
                _ => {
                    println!("not running (socket {})", status.socket.display());
                    EXIT_UNREACHABLE
                }
            }
        }),
    }
}

fn with_runtime(future: impl std::future::Future<Output = u8>) -> u8 {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(future),
        Err(error) => {
            eprintln!("wit: cannot start the async runtime: {error}");
            EXIT_UNREACHABLE
        }
    }
}

fn run_foreground(paths: &WitPaths, log_level: Option<&str>, max_body: usize, max_connections: usize) -> u8 {
    init_logging(log_level);
    let options = DaemonOptions {
        root: paths.root.clone(),
        serve: ServeConfig {
            max_body_bytes: max_body,
            max_connections,
            ..ServeConfig::default()
        },
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("wit: cannot start the async runtime: {error}");
            return EXIT_UNREACHABLE;
        }
    };
    match runtime.block_on(run_daemon(options)) {
        Ok(()) => EXIT_OK,
        Err(error) => {
            tracing::error!(%error, "daemon failed");
            eprintln!("wit: {error}");
            EXIT_UNREACHABLE
        }
    }
}

fn init_logging(level: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    let filter = match level {
        Some(level) => EnvFilter::try_new(level),
        None => EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new("info")),
    }
    .unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
