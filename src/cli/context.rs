//! What every repository command shares: the root, the session, the runtime and the
//! [`Doorway`] to the daemon (call, auto-start, retry).

use std::future::Future;
use std::path::Path;

use super::output::{CliError, Report};
use super::session::{ensure_session_file, resolve_session, SessionSource};
use crate::client::{ClientError, WitClient};
use crate::daemon::paths::{discover_root, WitPaths};
use crate::doorway::Doorway;

/// The repository, session and daemon a command works with.
#[derive(Debug)]
pub struct Context {
    /// The repository's wit files.
    pub paths: WitPaths,
    /// Whether `--json` was given.
    pub json: bool,
    session_flag: Option<String>,
    doorway: Doorway,
}

impl Context {
    /// Finds the root; nothing is read or started yet.
    pub fn new(repo: Option<&Path>, session: Option<String>, json: bool) -> Result<Self, CliError> {
        let root = discover_root(repo)
            .map_err(|error| CliError::Usage(format!("cannot use the repository root: {error}")))?;
        let paths = WitPaths::for_root(&root);
        Ok(Self {
            doorway: Doorway::from_env(paths.clone()),
            paths,
            json,
            session_flag: session,
        })
    }

    /// Whether calls may start the daemon (unset by `WIT_NO_AUTOSTART=1`).
    pub fn autostart(&self) -> bool {
        self.doorway.autostarts()
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

    /// A client of this repository's daemon (connects on first use; never starts it).
    pub fn client(&self) -> WitClient {
        self.doorway.client()
    }

    /// The doorway to this repository's daemon.
    pub fn doorway(&self) -> &Doorway {
        &self.doorway
    }

    /// Sends one call through the doorway: the daemon is started when none answers, and the
    /// call sent once more.
    pub async fn call<T, F, Fut>(&self, call: F) -> Result<T, CliError>
    where
        F: Fn(WitClient) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        self.doorway.call(call).await.map_err(CliError::from)
    }
}

/// Runs `future` on a fresh current-thread runtime.
pub fn block_on<T>(future: impl Future<Output = Result<T, CliError>>) -> Result<T, CliError> {
    crate::doorway::block_on(future)
        .map_err(|error| CliError::Failed(format!("cannot start the async runtime: {error}")))?
}
