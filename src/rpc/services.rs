//! Opening the daemon's state and building its method table.

use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::Methods;
use jsonrpsee::RpcModule;

use super::code_index::AnalysisIndex;
use super::errors::{task_failed, to_protocol};
use crate::analysis::worker::ParseWorker;
use crate::analysis::RepoIndex;
use crate::coord::{Coord, CoordError, SystemClock};
use crate::daemon::paths::WitPaths;
use crate::protocol::server::{
    register_contract_methods, register_discover, register_intent_methods, register_lock_methods,
    register_wit_methods,
};
use crate::protocol::ProtocolError;
use crate::store::{Store, StoreError};

/// How often expired locks are deleted (they are invisible from the moment they expire; the
/// sweep only reclaims space).
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// Why the daemon's state could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The database could not be opened or migrated.
    #[error("database: {0}")]
    Store(#[from] StoreError),
    /// The method table could not be built (a duplicate method name).
    #[error("method table: {0}")]
    Methods(#[from] jsonrpsee::core::RegisterMethodError),
}

/// The state every handler shares: the coordination core over the store and the code index.
#[derive(Clone)]
pub struct App {
    coord: Arc<Coord>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").finish_non_exhaustive()
    }
}

impl App {
    /// An app over an opened coordination core.
    pub fn new(coord: Coord) -> Self {
        Self {
            coord: Arc::new(coord),
        }
    }

    /// Runs quick database-only work inline on the request task.
    pub(super) fn now<T>(
        &self,
        work: impl FnOnce(&Coord) -> Result<T, CoordError>,
    ) -> Result<T, ProtocolError> {
        work(&self.coord).map_err(to_protocol)
    }

    /// Runs `work` inline when `is_quick` says it will not parse (a hand-off to the blocking
    /// pool costs two thread switches, more than most requests), else on the blocking pool.
    pub(super) async fn inline_when_quick<T: Send + 'static>(
        &self,
        is_quick: impl FnOnce(&Coord) -> bool,
        work: impl FnOnce(&Coord) -> Result<T, CoordError> + Send + 'static,
    ) -> Result<T, ProtocolError> {
        if is_quick(&self.coord) {
            self.now(work)
        } else {
            self.blocking(work).await
        }
    }

    /// Runs work that may parse source files on the blocking pool, so that no parse ever
    /// stalls the request-serving threads.
    pub(super) async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Coord) -> Result<T, CoordError> + Send + 'static,
    ) -> Result<T, ProtocolError> {
        let coord = Arc::clone(&self.coord);
        tokio::task::spawn_blocking(move || work(&coord))
            .await
            .map_err(task_failed)?
            .map_err(to_protocol)
    }
}

/// The opened state of a daemon and its background tasks.
#[derive(Debug)]
pub struct Services {
    app: App,
    sweeper: tokio::task::JoinHandle<()>,
}

impl Services {
    /// Opens the database and the code index of `paths.root`; starts the index build and the
    /// lock sweep in the background (the daemon answers before the index is complete).
    /// With `parse_worker`, large sources are parsed in its child processes.
    pub fn open(paths: &WitPaths, parse_worker: Option<ParseWorker>) -> Result<Self, OpenError> {
        let store = Store::open(&paths.database)?;
        let mut index = RepoIndex::new(paths.root.clone());
        if let Some(worker) = parse_worker {
            index = index.with_parse_worker(worker);
        }
        let index = Arc::new(index);
        index.start_background_build();
        let coord = Coord::new(
            store,
            Arc::new(SystemClock),
            Arc::new(AnalysisIndex::new(index)),
        );
        let app = App::new(coord);
        let sweeper = tokio::spawn(sweep_periodically(app.clone()));
        Ok(Self { app, sweeper })
    }

    /// The method table: every protocol method plus `rpc.discover`.
    pub fn methods(&self) -> Result<Methods, OpenError> {
        build_methods(self.app.clone())
    }

    /// Stops the background tasks.
    pub fn shutdown(self) {
        self.sweeper.abort();
    }
}

/// Registers every namespace of the protocol for `app`.
pub fn build_methods(app: App) -> Result<Methods, OpenError> {
    let mut module = RpcModule::new(app);
    register_wit_methods(&mut module)?;
    register_lock_methods(&mut module)?;
    register_intent_methods(&mut module)?;
    register_contract_methods(&mut module)?;
    register_discover(&mut module)?;
    Ok(module.into())
}

async fn sweep_periodically(app: App) {
    let mut ticker = tokio::time::interval(SWEEP_INTERVAL);
    loop {
        ticker.tick().await;
        match app.blocking(|coord| coord.sweep_expired_locks()).await {
            Ok(0) => {}
            Ok(swept) => tracing::debug!(swept, "swept expired locks"),
            Err(error) => tracing::warn!(message = %error.message, "lock sweep failed"),
        }
    }
}
