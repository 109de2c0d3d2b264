//! The repository's daemon serving its linked worktrees (docs/protocol.md 14.1): each on its
//! own socket (`<worktree>/.wit/daemon.sock`) with its own method table, so a request's
//! worktree is the socket it came in on, all of them over the one state.
//!
//! Worktrees come and go while the daemon runs: every [`RESCAN`] the list is read again from
//! git's files (`<common>/worktrees/*`, a directory of a few entries: no walk of any tree);
//! a new worktree gets its socket, a removed one's server stops and its socket goes.
//! `wit` in a new worktree does not wait for the rescan alone: its launcher finds the
//! repository's daemon running and waits for the worktree's socket to answer.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

use super::lifecycle::{bind_socket, make_wit_dir, record_socket};
use super::paths::WitPaths;
use super::server::{serve, ServeConfig};
use crate::rpc::Services;
use crate::worktrees::{linked_worktrees, Repository};

/// How often the list of worktrees is read again.
pub const RESCAN: Duration = Duration::from_millis(250);
/// How long a worktree that could not be served waits before it is tried again (a failure
/// is logged once per attempt, never every rescan).
pub const RETRY: Duration = Duration::from_secs(30);

/// A worktree being served: how to stop its server, and its socket.
struct Served {
    stop: oneshot::Sender<()>,
    socket: PathBuf,
}

/// Serves every linked worktree of `repository` until `stopping` turns true; then stops
/// their servers (each drains as the main one does) and removes their sockets.
pub async fn serve_worktrees(
    repository: Option<Repository>,
    services: &Services,
    config: ServeConfig,
    mut stopping: watch::Receiver<bool>,
) {
    let Some(repository) = repository else {
        let _ = stopping.wait_for(|stop| *stop).await;
        return;
    };
    let mut served: HashMap<PathBuf, Served> = HashMap::new();
    // Worktrees that could not be served, and when they were last tried.
    let mut failed: HashMap<PathBuf, Instant> = HashMap::new();
    let mut servers = JoinSet::new();
    loop {
        let now = linked_worktrees(&repository);
        failed.retain(|root, at| now.contains(root) && at.elapsed() < RETRY);
        served.retain(|root, worktree| {
            let keep = now.contains(root);
            if !keep {
                tracing::info!(worktree = %root.display(), "worktree removed; no longer served");
                let _ = std::fs::remove_file(&worktree.socket);
            }
            keep
        });
        for root in now {
            if served.contains_key(&root) || failed.contains_key(&root) {
                continue;
            }
            match start(&root, services, &config, &mut servers) {
                Ok(worktree) => {
                    tracing::info!(worktree = %root.display(), "serving worktree");
                    served.insert(root, worktree);
                }
                Err(error) => {
                    tracing::warn!(worktree = %root.display(), %error,
                        "cannot serve worktree; trying again in {} s", RETRY.as_secs());
                    failed.insert(root, Instant::now());
                }
            }
        }
        tokio::select! {
            _ = stopping.wait_for(|stop| *stop) => break,
            () = tokio::time::sleep(RESCAN) => {}
            Some(_) = servers.join_next(), if !servers.is_empty() => {}
        }
    }
    for (_, worktree) in served.drain() {
        let _ = worktree.stop.send(());
        let _ = std::fs::remove_file(&worktree.socket);
    }
    while servers.join_next().await.is_some() {}
}

/// Binds the socket of the worktree at `root` (first: a socket that cannot be bound costs no
/// index) and starts its server.
fn start(
    root: &std::path::Path,
    services: &Services,
    config: &ServeConfig,
    servers: &mut JoinSet<()>,
) -> Result<Served, String> {
    let paths = WitPaths::for_root(root);
    make_wit_dir(&paths.worktree_dir).map_err(|e| e.to_string())?;
    let listener = bind_socket(&paths.socket).map_err(|e| e.to_string())?;
    record_socket(&paths).map_err(|e| e.to_string())?;
    let socket = paths.socket;
    let methods = match services.worktree_methods(root) {
        Ok(methods) => methods,
        Err(error) => {
            drop(listener);
            let _ = std::fs::remove_file(&socket);
            return Err(error.to_string());
        }
    };
    let (stop, stopped) = oneshot::channel::<()>();
    servers.spawn(serve(listener, methods, config.clone(), async move {
        // A dropped sender stops the server too.
        let _ = stopped.await;
    }));
    Ok(Served { stop, socket })
}
