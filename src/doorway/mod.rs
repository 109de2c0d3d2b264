//! One doorway to the daemon for every face of wit: the CLI, `wit mcp` and the harness hooks
//! (the edit gate, the news hook).
//!
//! A call goes through [`Doorway::call`]: sent first; when no daemon answers (no socket, or a
//! stale one) the daemon is started, race-free, and the call is sent once more — a refused
//! connection proves the request was never delivered, so the retry cannot run anything twice.
//! A doorway may have a deadline ([`Doorway::with_deadline`]): the call, the auto-start and
//! the retry all end by it. Failures are typed ([`Failure`]): the daemon's protocol errors
//! with their data read into [`Refusal`], and the ways the daemon can be out of reach
//! ([`Unavailable`]). What to tell a person or an agent about them lives in [`advice`]; which
//! session a face acts for, in [`session`].

pub mod advice;
pub mod clock;
mod failure;
pub mod session;

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::{Batch, BatchAnswers, ClientError, WitClient};
use crate::daemon::launcher;
use crate::daemon::paths::WitPaths;

pub use failure::{Failure, Refusal, Unavailable};

/// Environment variable that turns auto-start off (`1`): calls fail with
/// [`Unavailable::NotRunning`] instead of starting a daemon.
pub const NO_AUTOSTART_ENV: &str = "WIT_NO_AUTOSTART";

/// Whether calls may start a daemon: unless [`NO_AUTOSTART_ENV`] is set to something other
/// than empty or `0`.
pub fn autostart_from_env() -> bool {
    std::env::var_os(NO_AUTOSTART_ENV).is_none_or(|value| value.is_empty() || value == "0")
}

/// The daemon of one repository, as every face of wit reaches it.
#[derive(Debug, Clone)]
pub struct Doorway {
    paths: WitPaths,
    client: WitClient,
    autostart: bool,
    deadline: Option<(Instant, Duration)>,
}

impl Doorway {
    /// The daemon of `paths.root`; `autostart` says whether a call may start it.
    pub fn new(paths: WitPaths, autostart: bool) -> Self {
        let client = WitClient::new(&paths.socket);
        Self {
            paths,
            client,
            autostart,
            deadline: None,
        }
    }

    /// The daemon of `paths.root`, starting it unless [`NO_AUTOSTART_ENV`] says not to.
    pub fn from_env(paths: WitPaths) -> Self {
        Self::new(paths, autostart_from_env())
    }

    /// The same doorway with every call ending by `deadline`, auto-start included; `budget`
    /// is the whole allowance the deadline came from (what [`Unavailable::OutOfTime`] names).
    pub fn with_deadline(mut self, deadline: Instant, budget: Duration) -> Self {
        self.deadline = Some((deadline, budget));
        self
    }

    /// Whether a call may start the daemon.
    pub fn autostarts(&self) -> bool {
        self.autostart
    }

    /// The repository's wit files.
    pub fn paths(&self) -> &WitPaths {
        &self.paths
    }

    /// A client of the daemon (connects on first use; no auto-start, no deadline).
    pub fn client(&self) -> WitClient {
        self.client.clone()
    }

    /// Sends one call through `call`; when no daemon answers, starts it (unless auto-start is
    /// off) and sends the call once more.
    pub async fn call<T, F, Fut>(&self, call: F) -> Result<T, Failure>
    where
        F: Fn(WitClient) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let work = async {
            match call(self.client.clone()).await {
                Err(ClientError::Unreachable(source)) => {
                    if !self.autostart {
                        return Err(Failure::Unavailable(Unavailable::NotRunning {
                            socket: self.paths.socket.clone(),
                            cause: source.to_string(),
                            autostart_off: true,
                        }));
                    }
                    launcher::ensure_running(&self.paths, &launcher::LaunchOptions::default())
                        .await
                        .map_err(|error| Unavailable::StartFailed {
                            reason: error.to_string(),
                        })?;
                    call(self.client.clone()).await.map_err(Failure::from)
                }
                other => other.map_err(Failure::from),
            }
        };
        self.bounded(work).await
    }

    /// Calls `method` with untyped `params` (what `wit mcp` and `wit call` send).
    pub async fn call_raw(&self, method: &str, params: Value) -> Result<Value, Failure> {
        self.call(|client| {
            let params = params.clone();
            async move { client.call_raw(method, params).await }
        })
        .await
    }

    /// Sends every call of `batch` in one request (starting the daemon as [`Doorway::call`]
    /// does); each call's answer is taken from the result.
    pub async fn send(&self, batch: &Batch) -> Result<BatchAnswers, Failure> {
        self.call(|client| async move { client.send(batch).await })
            .await
    }

    /// Sends one call only if a daemon answers, within `limit` (and the deadline, if any);
    /// never starts one.
    pub async fn call_if_running<T, F, Fut>(&self, limit: Duration, call: F) -> Result<T, Failure>
    where
        F: FnOnce(WitClient) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let client = self.client.clone().with_timeout(limit);
        let work = async {
            call(client).await.map_err(|error| match error {
                ClientError::Unreachable(source) => Failure::Unavailable(Unavailable::NotRunning {
                    socket: self.paths.socket.clone(),
                    cause: source.to_string(),
                    autostart_off: false,
                }),
                other => Failure::from(other),
            })
        };
        self.bounded(work).await
    }

    /// `work`, ended at the deadline if there is one.
    async fn bounded<T>(
        &self,
        work: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        match self.deadline {
            None => work.await,
            Some((deadline, budget)) => {
                tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), work)
                    .await
                    .unwrap_or(Err(Failure::Unavailable(Unavailable::OutOfTime { budget })))
            }
        }
    }
}

/// Runs `future` on a fresh current-thread runtime (cheap to build, enough for one client).
///
/// The runtime is shut down without waiting for blocking work still running (a launcher
/// waiting for another process's lock, say): the caller's deadline, not that work, decides
/// when it returns. `Err` only when the runtime cannot be built.
pub fn block_on<F: Future>(future: F) -> std::io::Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(future);
    runtime.shutdown_background();
    Ok(outcome)
}
