//! What every repository command shares: the root, the session, the runtime and the client
//! with auto-start.

use std::future::Future;
use std::path::Path;

use super::output::{CliError, Report};
use super::session::{ensure_session_file, resolve_session, SessionSource};
use super::NO_AUTOSTART_ENV;
use crate::client::{ClientError, WitClient};
use crate::daemon::launcher;
use crate::daemon::paths::{discover_root, WitPaths};

/// The repository, session and daemon a command works with.
#[derive(Debug)]
pub struct Context {
    /// The repository's wit files.
    pub paths: WitPaths,
    /// Whether `--json` was given.
    pub json: bool,
    session_flag: Option<String>,
    autostart: bool,
}

impl Context {
    /// Finds the root; nothing is read or started yet.
    pub fn new(repo: Option<&Path>, session: Option<String>, json: bool) -> Result<Self, CliError> {
        let root = discover_root(repo)
            .map_err(|error| CliError::Usage(format!("cannot use the repository root: {error}")))?;
        let autostart =
            std::env::var_os(NO_AUTOSTART_ENV).is_none_or(|value| value.is_empty() || value == "0");
        Ok(Self {
            paths: WitPaths::for_root(&root),
            json,
            session_flag: session,
            autostart,
        })
    }

    /// Whether calls may start the daemon (unset by `WIT_NO_AUTOSTART=1`).
    pub fn autostart(&self) -> bool {
        self.autostart
    }

    /// Runs `future` on a current-thread runtime (cheap to build, enough for one client).
    pub fn block_on(
        &self,
        future: impl Future<Output = Result<Report, CliError>>,
    ) -> Result<Report, CliError> {
        block_on(future)
    }

    /// The session, if one is configured; creates nothing.
    pub fn session_if_any(&self) -> Result<Option<(String, SessionSource)>, CliError> {
        resolve_session(
            self.session_flag.as_deref(),
            |name| std::env::var(name).ok(),
            &self.paths.session_id,
        )
        .map_err(CliError::Usage)
    }

    /// The session this command acts for; creates `.wit/session.id` when nothing else names
    /// one (once: an existing id is never replaced).
    pub fn session(&self) -> Result<String, CliError> {
        if let Some((id, _)) = self.session_if_any()? {
            return Ok(id);
        }
        crate::daemon::lifecycle::ensure_state_dir(&self.paths)
            .map_err(|error| CliError::Failed(error.to_string()))?;
        ensure_session_file(&self.paths.session_id)
            .map(|(id, _)| id)
            .map_err(|error| {
                CliError::Failed(format!(
                    "cannot create {}: {error}",
                    self.paths.session_id.display()
                ))
            })
    }

    /// A client of this repository's daemon (connects on first use).
    pub fn client(&self) -> WitClient {
        WitClient::new(&self.paths.socket)
    }

    /// Sends one call; when no daemon answers (no socket, or a stale one), starts the daemon
    /// and sends it once more. A refused connection proves the request was never delivered,
    /// so the retry cannot run anything twice.
    pub async fn call<T, F, Fut>(&self, call: F) -> Result<T, CliError>
    where
        F: Fn(WitClient) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let client = self.client();
        match call(client.clone()).await {
            Err(ClientError::Unreachable(source)) => {
                if !self.autostart {
                    return Err(CliError::Unreachable(format!(
                        "no wit daemon answers on {} ({source}) and {NO_AUTOSTART_ENV} is set",
                        self.paths.socket.display()
                    )));
                }
                launcher::ensure_running(&self.paths, &launcher::LaunchOptions::default())
                    .await
                    .map_err(|error| {
                        CliError::Unreachable(format!("cannot start the wit daemon: {error}"))
                    })?;
                call(client).await.map_err(CliError::from)
            }
            other => other.map_err(CliError::from),
        }
    }
}

/// Runs `future` on a fresh current-thread runtime.
pub fn block_on<T>(future: impl Future<Output = Result<T, CliError>>) -> Result<T, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| CliError::Failed(format!("cannot start the async runtime: {error}")))?
        .block_on(future)
}
