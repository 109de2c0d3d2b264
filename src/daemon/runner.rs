//! `wit daemon run`: take residence, open the state, serve until a signal, clean up.

use std::path::PathBuf;
use std::time::Instant;

use super::lifecycle::{take_residence, DaemonError, TerminationSignals};
use super::paths::WitPaths;
use super::server::{serve, ServeConfig};
use super::store_choice::StoreChoice;
use super::worktree_observer::observe_worktrees;
use super::worktree_server::serve_worktrees;
use crate::analysis::worker::ParseWorker;
use crate::rpc::{OpenError, Services};
use crate::store::{Store, StoreUrl};
use crate::worktrees::repository_of;

/// Options of a foreground daemon.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// The repository root it serves.
    pub root: PathBuf,
    /// Socket-server limits.
    pub serve: ServeConfig,
    /// Where large sources are parsed (`None`: in the daemon's own process).
    pub parse_worker: Option<ParseWorker>,
    /// The store and project.
    pub store: StoreChoice,
}

/// Runs the daemon in the foreground until SIGTERM, SIGINT or SIGHUP.
pub async fn run(options: DaemonOptions) -> Result<(), DaemonError> {
    let started = Instant::now();
    // What changed in the tree before this moment predates the observer (15.3).
    let serving_since = std::time::SystemTime::now();
    // One daemon per repository: it resides in the main worktree, whichever worktree it was
    // started for, and serves every worktree (docs/protocol.md 14.1).
    let paths = WitPaths::for_root(&options.root).main();
    let store_shown = options.store.describe();
    let signals = TerminationSignals::install()?;
    let (residence, listener) = take_residence(&paths, &store_shown)?;
    let choice = &options.store;
    let opened = Store::open_url(&choice.url, &paths.database, &choice.project)
        .map_err(OpenError::from)
        .and_then(|store| {
            Services::open(store, &paths.root, &paths.dir, options.parse_worker.clone())
        })
        .and_then(|services| {
            let methods = services.methods()?;
            Ok((services, methods))
        });
    let (services, methods) = match opened {
        Ok(opened) => opened,
        Err(error) => {
            residence.release();
            let store = match &choice.url {
                StoreUrl::Sqlite => paths.database.display().to_string(),
                shared => shared.to_string(),
            };
            return Err(DaemonError::State(format!("{store}: {error}")));
        }
    };
    tracing::info!(
        root = %paths.root.display(),
        socket = %paths.socket.display(),
        pid = std::process::id(),
        store = %store_shown,
        ready_in_us = started.elapsed().as_micros() as u64,
        "wit daemon serving"
    );
    let app = services.app().clone();
    let (stopping_tx, stopping) = tokio::sync::watch::channel(false);
    let signalled = async move {
        signals.received().await;
        // Waiting requests answer now instead of holding up the drain of in-flight ones.
        app.stop_waiting();
        let _ = stopping_tx.send(true);
    };
    let mut main_stopping = stopping.clone();
    let main_stop = async move {
        let _ = main_stopping.wait_for(|stop| *stop).await;
    };
    // The accept loop runs on a worker thread, as its connections do: a connection spawned
    // there starts on the same thread, with no wake-up of another (from the thread that
    // blocks on this future, every connection cost two cross-thread wake-ups; issue 32.1).
    let main_server = tokio::spawn(serve(listener, methods, options.serve.clone(), main_stop));
    tokio::spawn(super::warm_up::rehearse(
        paths.socket.clone(),
        std::sync::Arc::clone(services.main_index()),
        services.coord(),
    ));
    let main_served = async move {
        if let Err(error) = main_server.await {
            tracing::error!(%error, "the socket server failed");
        }
    };
    tokio::join!(
        signalled,
        main_served,
        serve_worktrees(
            repository_of(&paths.main_root),
            &services,
            options.serve,
            stopping.clone()
        ),
        observe_worktrees(
            repository_of(&paths.main_root),
            services.coord(),
            services.app().tree_flush(),
            services.open_writers(),
            serving_since,
            stopping,
        ),
    );
    services.shutdown();
    residence.release();
    tracing::info!("wit daemon stopped");
    Ok(())
}
