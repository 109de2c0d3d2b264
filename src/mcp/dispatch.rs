//! Sends a tool's call to the daemon through the generated client, starting the daemon like
//! the CLI does when none answers.

use std::time::Duration;

use serde_json::Value;

use crate::client::{ClientError, WitClient};
use crate::daemon::launcher;
use crate::daemon::paths::WitPaths;
use crate::protocol::ProtocolError;

/// Why a call produced no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The daemon answered with a protocol error.
    #[error("{0}")]
    Rpc(ProtocolError),
    /// No daemon answers and none could be started, or the daemon stopped answering
    /// mid-call; `delivered` says whether the request may have reached it (and run).
    #[error("{detail}")]
    Unavailable {
        /// What went wrong, for the agent.
        detail: String,
        /// Whether the request may have taken effect.
        delivered: bool,
    },
}

impl From<ClientError> for CallError {
    fn from(error: ClientError) -> Self {
        match error {
            ClientError::Rpc(error) => Self::Rpc(error),
            ClientError::Unreachable(source) => Self::Unavailable {
                detail: format!("no wit daemon answers ({source})"),
                delivered: false,
            },
            ClientError::Transport(detail) | ClientError::Decode(detail) => Self::Unavailable {
                detail: format!("the wit daemon stopped answering mid-call ({detail})"),
                delivered: true,
            },
        }
    }
}

/// The daemon of one repository.
#[derive(Debug, Clone)]
pub struct Daemon {
    paths: WitPaths,
    client: WitClient,
    autostart: bool,
}

impl Daemon {
    /// The daemon of `paths.root`; `autostart` says whether a call may start it.
    pub fn new(paths: WitPaths, autostart: bool) -> Self {
        let client = WitClient::new(&paths.socket);
        Self {
            paths,
            client,
            autostart,
        }
    }

    /// Calls `method` with `params`. When no daemon answers (no socket, or a stale one), starts
    /// the daemon and sends the call once more: a refused connection proves the request was
    /// never delivered, so the retry cannot run anything twice.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, CallError> {
        match self.client.call_raw(method, params.clone()).await {
            Err(ClientError::Unreachable(source)) => {
                if !self.autostart {
                    return Err(CallError::Unavailable {
                        detail: format!(
                            "no wit daemon answers on {} ({source}) and {} is set",
                            self.paths.socket.display(),
                            crate::cli::NO_AUTOSTART_ENV
                        ),
                        delivered: false,
                    });
                }
                launcher::ensure_running(&self.paths, &launcher::LaunchOptions::default())
                    .await
                    .map_err(|error| CallError::Unavailable {
                        detail: format!("cannot start the wit daemon: {error}"),
                        delivered: false,
                    })?;
                Ok(self.client.call_raw(method, params).await?)
            }
            other => Ok(other?),
        }
    }

    /// Calls `method` only if a daemon answers, within `limit`; never starts one.
    pub async fn call_if_running(
        &self,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, CallError> {
        let client = self.client.clone().with_timeout(limit);
        Ok(client.call_raw(method, params).await?)
    }
}
