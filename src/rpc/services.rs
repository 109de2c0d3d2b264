//! Opening the daemon's state and building its method table.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::Methods;
use jsonrpsee::RpcModule;

use super::code_index::AnalysisIndex;
use super::errors::{task_failed, to_protocol};
use super::memory_upkeep::MemoryUpkeep;
use super::waiting::EventBell;
use crate::analysis::worker::ParseWorker;
use crate::analysis::RepoIndex;
use crate::coord::{CodeIndex, Coord, CoordError, ReapedSession, SystemClock, Vantage};
use crate::platform::at_rest::OpenWriters;
use crate::protocol::server::{
    register_contract_methods, register_discover, register_edit_methods, register_events_methods,
    register_intent_methods, register_lock_methods, register_session_methods, register_wit_methods,
    register_work_methods, register_worktree_methods,
};
use crate::protocol::ProtocolError;
use crate::store::{Store, StoreError};
use crate::worktrees::forecast::ForecastMemory;

/// How often the pulse runs: dead sessions reaped, sightings flushed, expired locks swept
/// (each with its `lock.expired` event). Dead sessions are reaped within 5 s of dying.
pub const PULSE_INTERVAL: Duration = Duration::from_secs(1);

/// How often events past their retention are dropped.
pub const PRUNE_INTERVAL: Duration = Duration::from_secs(60);

/// Why the daemon's state could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The database could not be opened or migrated.
    #[error("database: {0}")]
    Store(#[from] StoreError),
    /// This daemon could not record itself in the store.
    #[error("{0}")]
    Join(#[from] CoordError),
    /// The method table could not be built (a duplicate method name).
    #[error("method table: {0}")]
    Methods(#[from] jsonrpsee::core::RegisterMethodError),
}

/// The state every handler shares: the coordination core over the store and the code index,
/// and the bell that wakes `events.poll`.
#[derive(Clone)]
pub struct App {
    coord: Arc<Coord>,
    bell: EventBell,
    /// Cleared when the daemon starts to stop: lock requests no longer wait.
    accepting_waits: Arc<AtomicBool>,
    /// Wakes the pulse early when the earliest waited-for lock expiry may have moved.
    pulse: Arc<tokio::sync::Notify>,
    /// The main worktree's root (the repository's), when the app serves one on disk.
    main_root: Option<Arc<std::path::PathBuf>>,
    /// What `worktree.forecast` keeps between calls, for every worktree's app.
    forecast: Arc<std::sync::Mutex<ForecastMemory>>,
    /// How handlers ask the tree observer to read what is on disk (15.2).
    tree_flush: Arc<super::tree_flush::TreeFlush>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").finish_non_exhaustive()
    }
}

impl App {
    /// An app over an opened coordination core; its store rings the app's event bell.
    pub fn new(coord: Coord) -> Self {
        let bell = EventBell::new();
        let coord = Arc::new(coord);
        coord
            .store()
            .set_commit_listener(bell.listener(Arc::downgrade(&coord)));
        Self {
            coord,
            bell,
            accepting_waits: Arc::new(AtomicBool::new(true)),
            pulse: Arc::new(tokio::sync::Notify::new()),
            main_root: None,
            forecast: Arc::default(),
            tree_flush: Arc::default(),
        }
    }

    /// The handle through which handlers ask the tree observer to read the disk.
    pub fn tree_flush(&self) -> Arc<super::tree_flush::TreeFlush> {
        Arc::clone(&self.tree_flush)
    }

    /// The app of the repository whose main worktree is at `root`.
    pub fn with_main_root(mut self, root: &Path) -> Self {
        self.main_root = Some(Arc::new(root.to_path_buf()));
        self
    }

    /// The main worktree's root, when known.
    pub(super) fn main_root(&self) -> Option<std::path::PathBuf> {
        self.main_root.as_deref().cloned()
    }

    /// The same app serving a linked worktree: the same state, its requests resolved in the
    /// worktree's own files (`index`) by that worktree's coordination core.
    pub fn for_worktree(&self, index: Arc<dyn CodeIndex>) -> Self {
        Self {
            coord: Arc::new(self.coord.for_worktree(index)),
            ..self.clone()
        }
    }

    /// Where a request of `session` (if it names one) to this app stands: the session and
    /// the worktree this app serves. Built once per request and passed down to `coord`.
    pub(super) fn vantage(&self, session: Option<&str>) -> Vantage {
        self.coord.vantage(session)
    }

    /// What `worktree.forecast` keeps between calls.
    pub(super) fn forecast_memory(&self) -> Arc<std::sync::Mutex<ForecastMemory>> {
        Arc::clone(&self.forecast)
    }

    /// The coordination core.
    pub(super) fn coord(&self) -> Arc<Coord> {
        Arc::clone(&self.coord)
    }

    /// The bell rung by every commit that appended events.
    pub(super) fn bell(&self) -> &EventBell {
        &self.bell
    }

    /// Whether lock requests may still wait (not while the daemon stops).
    pub(super) fn accepts_waits(&self) -> bool {
        self.accepting_waits.load(Ordering::Acquire)
    }

    /// Wakes the pulse to recompute when the next waited-for lock expires.
    pub(super) fn nudge_pulse(&self) {
        self.pulse.notify_one();
    }

    /// The daemon is stopping: answers every waiting request now (LOCK_CONFLICT for lock
    /// waits, what there is for `events.poll`), so that none holds up the shutdown.
    pub fn stop_waiting(&self) {
        self.accepting_waits.store(false, Ordering::Release);
        self.coord.refuse_all_waiters();
        self.bell.close();
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

/// The index database under `.wit/` (rebuilt from the sources whenever it is missing).
pub const INDEX_DB: &str = "index.db";

/// The index's progress under `.wit/` ([`crate::analysis::progress::IndexStatus`]).
pub const INDEX_STATUS: &str = "index.json";

/// Where a linked worktree's index lives under the repository's state directory.
const WORKTREES_DIR: &str = "worktrees";

/// The id of the daemon serving this root under `.wit/`: the next daemon of the root knows
/// from it which daemon's waiting requests died with it.
pub const DAEMON_ID: &str = "daemon.id";

/// Writes `text` to `path` (mode 0600); a failure is only logged: the next daemon then
/// drops this one's waiting requests after the usual silence.
fn write_private(path: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let written = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()));
    if let Err(error) = written {
        tracing::warn!(%error, path = %path.display(), "could not record the daemon id");
    }
}

/// The opened state of a daemon and its background tasks.
#[derive(Debug)]
pub struct Services {
    app: App,
    pulse: tokio::task::JoinHandle<()>,
    /// The repository's state directory (`<main>/.wit`).
    state_dir: std::path::PathBuf,
    /// Where large sources are parsed, for the indexes of linked worktrees too.
    parse_worker: Option<ParseWorker>,
    /// The main worktree's index: linked worktrees share its parse cache.
    main_index: Arc<RepoIndex>,
    /// The files the tree observer sees being written, in every worktree.
    open_writers: Arc<OpenWriters>,
}

impl Services {
    /// Serves the opened `store` and the code index of `root` (kept under `state_dir`);
    /// records this daemon in the store and starts the index build and the pulse in the
    /// background (the daemon answers before the index is complete). With `parse_worker`,
    /// large sources are parsed in its child processes.
    pub fn open(
        store: Store,
        root: &Path,
        state_dir: &Path,
        parse_worker: Option<ParseWorker>,
    ) -> Result<Self, OpenError> {
        let main_index = Arc::new(open_index(
            RepoIndex::new(root.to_path_buf()),
            state_dir,
            &parse_worker,
        ));
        main_index.start_background_build();
        let open_writers = Arc::new(OpenWriters::default());
        let coord = Coord::new(
            store,
            Arc::new(SystemClock),
            Arc::new(AnalysisIndex::new(
                Arc::clone(&main_index),
                Arc::clone(&open_writers),
            )),
        );
        // The previous daemon of this root (one at a time serves it) is known dead.
        let id_file = state_dir.join(DAEMON_ID);
        let previous = std::fs::read_to_string(&id_file).ok();
        coord.join(previous.as_deref().map(str::trim))?;
        write_private(&id_file, coord.store_daemon_id());
        let app = App::new(coord).with_main_root(root);
        let upkeep = Arc::new(MemoryUpkeep::new(Arc::clone(&main_index)));
        let pulse = tokio::spawn(pulse(app.clone(), upkeep));
        Ok(Self {
            app,
            pulse,
            state_dir: state_dir.to_path_buf(),
            parse_worker,
            main_index,
            open_writers,
        })
    }

    /// The method table of the linked worktree at `root`: the same state, its own code index
    /// (kept under `<state dir>/worktrees/<hash of root>/`, built in the background).
    pub fn worktree_methods(&self, root: &Path) -> Result<Methods, OpenError> {
        let key = xxhash_rust::xxh3::xxh3_64(root.as_os_str().as_encoded_bytes());
        let dir = self
            .state_dir
            .join(WORKTREES_DIR)
            .join(format!("{key:016x}"));
        if let Err(error) = std::fs::create_dir_all(&dir) {
            tracing::warn!(dir = %dir.display(), %error, "the worktree's index stays in memory");
        }
        let index = RepoIndex::new(root.to_path_buf())
            .with_donor(&self.state_dir.join(INDEX_DB))
            .sharing_cache_of(&self.main_index);
        let index = Arc::new(open_index(index, &dir, &self.parse_worker));
        // Built once the main worktree's index is: most of its content is found there.
        index.start_background_build_after(Arc::clone(&self.main_index));
        let index = AnalysisIndex::new(index, Arc::clone(&self.open_writers));
        build_methods(self.app.for_worktree(Arc::new(index)))
    }

    /// The files the tree observer sees being written (it keeps them; the indexes' reads ask).
    pub fn open_writers(&self) -> Arc<OpenWriters> {
        Arc::clone(&self.open_writers)
    }

    /// The coordination core all worktrees share.
    pub fn coord(&self) -> Arc<Coord> {
        self.app.coord()
    }

    /// The main worktree's code index.
    pub fn main_index(&self) -> &Arc<RepoIndex> {
        &self.main_index
    }

    /// The shared handler state.
    pub fn app(&self) -> &App {
        &self.app
    }

    /// The method table: every protocol method plus `rpc.discover`.
    pub fn methods(&self) -> Result<Methods, OpenError> {
        build_methods(self.app.clone())
    }

    /// Stops the background tasks and flushes the last sightings.
    pub fn shutdown(self) {
        self.pulse.abort();
        if let Err(error) = self.app.coord.flush_sightings() {
            tracing::warn!(%error, "could not flush the last session sightings");
        }
        if let Err(error) = self.app.coord.leave() {
            tracing::warn!(%error, "could not take this daemon's waiters out of the store");
        }
    }
}

/// `index` with its files under `state_dir` and large sources parsed by `parse_worker`.
fn open_index(index: RepoIndex, state_dir: &Path, parse_worker: &Option<ParseWorker>) -> RepoIndex {
    let mut index = index
        .with_index_db(&state_dir.join(INDEX_DB))
        .with_status_file(state_dir.join(INDEX_STATUS));
    if let Some(worker) = parse_worker {
        index = index.with_parse_worker(worker.clone());
    }
    index
}

/// Registers every namespace of the protocol for `app`.
pub fn build_methods(app: App) -> Result<Methods, OpenError> {
    let mut module = RpcModule::new(app);
    register_wit_methods(&mut module)?;
    register_lock_methods(&mut module)?;
    register_intent_methods(&mut module)?;
    register_contract_methods(&mut module)?;
    register_session_methods(&mut module)?;
    register_events_methods(&mut module)?;
    register_edit_methods(&mut module)?;
    register_worktree_methods(&mut module)?;
    register_work_methods(&mut module)?;
    register_discover(&mut module)?;
    Ok(module.into())
}

/// The pulse's steps in the store: the daemon's heartbeat, hand-overs, reaping, sightings,
/// expired locks and (when `prune`) old events; the sessions reaped and the locks and events
/// dropped.
fn store_steps(
    coord: &Coord,
    prune: bool,
) -> Result<(Vec<ReapedSession>, usize, usize), CoordError> {
    for daemon in coord.beat_daemon()? {
        tracing::info!(%daemon, "dropped a daemon silent for 30 s, and its waiters");
    }
    coord.hand_over_expired()?;
    let reaped = coord.reap_dead_sessions()?;
    coord.flush_sightings()?;
    let swept = coord.sweep_expired_locks()?;
    let pruned = if prune { coord.prune_events()? } else { 0 };
    Ok((reaped, swept, pruned))
}

/// The daemon's pulse: about once a second it reaps dead sessions, flushes sightings and
/// sweeps expired locks; it also wakes exactly when the earliest lock that somebody waits for
/// expires, to hand it over on time; once a minute it prunes old events. Each pulse ends
/// with the memory step ([`MemoryUpkeep`]).
async fn pulse(app: App, upkeep: Arc<MemoryUpkeep>) {
    // The first pulse prunes: a daemon that was down for a week starts within retention.
    let mut last_prune: Option<tokio::time::Instant> = None;
    // Whether the last pulse failed (its failures are logged once per outage).
    let mut failing = false;
    loop {
        let mut next = tokio::time::Instant::now() + PULSE_INTERVAL;
        if let Some(at_ms) = app.coord.next_wait_wakeup() {
            let in_ms = at_ms.saturating_sub(app.coord.now_ms()).max(0);
            let at = tokio::time::Instant::now()
                + Duration::from_millis(u64::try_from(in_ms).unwrap_or(0));
            next = next.min(at);
        }
        tokio::select! {
            () = tokio::time::sleep_until(next) => {}
            () = app.pulse.notified() => continue,
        }
        let prune = last_prune.is_none_or(|at| at.elapsed() >= PRUNE_INTERVAL);
        if prune {
            last_prune = Some(tokio::time::Instant::now());
        }
        let upkeep = Arc::clone(&upkeep);
        let outcome = app
            .blocking(move |coord| {
                let steps = store_steps(coord, prune);
                // After the store's steps, and whether or not they failed.
                upkeep.run();
                steps
            })
            .await;
        match outcome {
            Ok((reaped, swept, pruned)) => {
                for session in reaped {
                    tracing::info!(
                        session = %session.session_id,
                        reason = session.reason.as_str(),
                        locks_released = session.ended.locks_released,
                        intents_abandoned = session.ended.intents_abandoned,
                        "reaped a dead session"
                    );
                }
                if swept > 0 {
                    tracing::debug!(swept, "swept expired locks");
                }
                if pruned > 0 {
                    tracing::debug!(pruned, "pruned old events");
                }
            }
            Err(error) => {
                // Once per outage at warn (the store may stay down for a while), then quieter.
                let detail = error
                    .data
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                if failing {
                    tracing::debug!(message = %error.message, %detail, "pulse failed again");
                } else {
                    tracing::warn!(message = %error.message, %detail, "pulse failed");
                }
                failing = true;
                continue;
            }
        }
        if failing {
            tracing::info!("pulse recovered");
            failing = false;
        }
    }
}
