//! The repository index: every supported file's analysis plus the resolved call graph, with
//! reverse edges so "who calls X" is an indexed lookup. Files are re-parsed when their size or
//! mtime changed since they were indexed, so answers stay fresh without a file watcher.
//!
//! One store: the files' facts, their whole analyses and the call graph are rows of one
//! SQLite schema (`store`): `.wit/index.db` for the daemon ([`RepoIndex::with_index_db`]),
//! the same schema in memory otherwise (tests, tools). Memory holds per file only its facts
//! (size, mtime, content key); a file's whole analysis is read back when asked for and kept
//! in the byte-bounded parse cache (keyed by content, so equal contents are parsed once).
//!
//! The work is split three ways, each in its own module:
//! - `walk`: which files there are (a walk honouring `.gitignore`), where a path really
//!   leads, and freshness (size + mtime against what was indexed);
//! - `build`: a whole build (parse what changed in parallel, write rows, resolve the graph)
//!   and the re-resolution of what one change touches;
//! - `queries`: callers, callees, the freshness checks requests make, content analyses.
//!
//! This file holds the index itself: its state, its options, and one file's (re)load.
//!
//! Locking: one `RwLock` over the files' facts. Parsing never happens under it: a file is
//! read and parsed first, then installed under a short write lock, where its graph rows and
//! those of the files importing it are re-resolved (outlines read back, no parsing).

mod build;
mod queries;
mod tree_record;
mod walk;

use std::collections::HashMap;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, SystemTime};

use super::cache::{ContentCache, ContentKey, FileStamp};
use super::extract::{analyze_with_budget, PARSE_BUDGET};
use super::flights::Flights;
use super::language::Language;
use super::model::FileAnalysis;
use super::pool::ParsePool;
use super::progress::Progress;
use super::resolution::{outline, Prepared};
use super::store::{Donor, IndexDb, Row};
use super::worker::{ParseWorker, WorkerError};
use super::{AnalysisError, Result};

pub use super::resolution::SymbolRef;

/// Files larger than this are not parsed: they have no symbols (docs/protocol.md 2.6).
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The diagnostic of a source over [`MAX_FILE_BYTES`].
const TOO_LARGE: &str = "larger than 8 MiB: not parsed";

/// Memory the content cache may take for analyses (as `FileAnalysis::approx_heap_bytes`
/// counts it): a few versions of a 1.7 MB TypeScript file, or thousands of ordinary ones.
/// Content equal to a file's indexed version is found in the store whatever the cache
/// evicted (`analyze_content_of`); the cache decides which other contents (staged versions)
/// are kept for a repeat. One analysis heavier than this is kept beside it (a file of 128k
/// functions), so calls on it do not decode it again each time.
const CACHE_BYTES: usize = 16 * 1024 * 1024;

/// Files at least this large have their stored analysis read back into the cache once the
/// index is built ([`RepoIndex::warm_large_analyses`]).
const WARM_MIN_BYTES: u64 = 256 * 1024;

/// Long-lived parse workers: one per core of this 2-core target, each fed by one build thread.
const POOL_WORKERS: usize = 2;

/// What the index remembers of a file on disk, to tell whether it changed.
struct Entry {
    size: u64,
    mtime: Option<SystemTime>,
    /// The content key of what was parsed (`None` when the file was not parsed).
    key: Option<ContentKey>,
    /// The analysis of a file that was not parsed (a diagnostic): it has no row to read
    /// back from the store.
    pinned: Option<Arc<FileAnalysis>>,
}

#[derive(Default)]
struct State {
    files: HashMap<String, Entry>,
    /// The Go modules of the last walk (resolution reads them here).
    go_modules: Vec<(String, String)>,
}

/// A freshly read file, not yet installed.
struct Loaded {
    rel: String,
    size: u64,
    mtime: Option<SystemTime>,
    key: Option<ContentKey>,
    /// What resolution reads of it, while at hand (a file just parsed); `None` once only
    /// the store has it.
    node: Option<Prepared>,
    /// What the entry pins (see [`Entry::pinned`]).
    pinned: Option<Arc<FileAnalysis>>,
}

impl Loaded {
    /// The entry it becomes.
    fn entry(&self) -> Entry {
        Entry {
            size: self.size,
            mtime: self.mtime,
            key: self.key,
            pinned: self.pinned.clone(),
        }
    }
}

/// The repository-wide index. `Send + Sync`; every method takes `&self`.
pub struct RepoIndex {
    root: PathBuf,
    canonical_root: Mutex<Option<PathBuf>>,
    state: RwLock<State>,
    /// Shared by the indexes of one repository's worktrees ([`RepoIndex::sharing_cache_of`]).
    cache: Arc<ContentCache>,
    /// The analyses being made, by content (shared as the cache is).
    flights: Arc<Flights<ContentKey, Arc<FileAnalysis>>>,
    built: AtomicBool,
    build_gate: Mutex<()>,
    budget: Duration,
    /// Where large sources are parsed; `None`: everything in-process.
    worker: Option<ParseWorker>,
    /// Long-lived workers for large sources (made from `worker`).
    pool: Option<ParsePool>,
    /// The one store: on disk, or the same schema in memory; with the donor, another
    /// worktree's index whose analyses are reused by content (no parse, no copy).
    db: IndexDb,
    /// How far the current build is, published to `.wit/index.json`.
    progress: Progress,
    /// Parses run by this index (in-process or in a worker).
    parses: AtomicUsize,
}

impl std::fmt::Debug for RepoIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RepoIndex")
            .field("root", &self.root)
            .field("built", &self.built.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl RepoIndex {
    /// An empty index of the repository at `root`, its store in memory. Nothing is read
    /// until a build or a query.
    ///
    /// # Panics
    /// Only if SQLite cannot open an in-memory database (out of memory at start).
    #[allow(
        clippy::expect_used,
        reason = "an in-memory SQLite database fails to open only without memory"
    )]
    pub fn new(root: PathBuf) -> RepoIndex {
        let db = IndexDb::in_memory().expect("an in-memory index database");
        RepoIndex::with_store(root, db)
    }

    fn with_store(root: PathBuf, db: IndexDb) -> RepoIndex {
        let canonical = std::fs::canonicalize(&root).ok();
        RepoIndex {
            root,
            canonical_root: Mutex::new(canonical),
            state: RwLock::new(State::default()),
            cache: Arc::new(ContentCache::new(CACHE_BYTES)),
            flights: Arc::default(),
            built: AtomicBool::new(false),
            build_gate: Mutex::new(()),
            budget: PARSE_BUDGET,
            worker: None,
            pool: None,
            db,
            progress: Progress::default(),
            parses: AtomicUsize::new(0),
        }
    }

    /// Keeps the index in the SQLite file `path` (`.wit/index.db`): a start parses only what
    /// changed since. When the file cannot be opened even after deleting it, the store stays
    /// in memory (with a warning).
    pub fn with_index_db(mut self, path: &Path) -> RepoIndex {
        match IndexDb::open(path) {
            Ok(mut db) => {
                db.set_donor(self.db.take_donor());
                self.db = db;
            }
            Err(error) => tracing::warn!(%error, "the index stays in memory"),
        }
        self
    }

    /// The same index with a parse cache of `capacity` bytes (tests: an oversize analysis
    /// without a file of tens of MB).
    #[cfg(test)]
    pub(super) fn with_cache_capacity(mut self, capacity: usize) -> RepoIndex {
        self.cache = Arc::new(ContentCache::new(capacity));
        self
    }

    /// Reuses the analyses and the call graph of the index database at `path` (another
    /// worktree's index of the same repository): content it parsed is neither parsed nor
    /// stored again (the row borrows the donor's by hash), and a first build starts from its
    /// graph, resolving again only what the differences touch; so N worktrees cost about one
    /// index plus their differences (docs/protocol.md 14.2). Without a readable database of
    /// this version, nothing is reused.
    pub fn with_donor(mut self, path: &Path) -> RepoIndex {
        self.db.set_donor(Donor::open(path));
        self
    }

    /// Publishes the build's progress to the JSON file `path` (`.wit/index.json`,
    /// [`super::progress::IndexStatus`]), about every 250 ms during a build and at its end.
    pub fn with_status_file(mut self, path: PathBuf) -> RepoIndex {
        self.progress = Progress::to_file(path);
        self
    }

    /// How many sources this index has parsed (cache hits and files reused from the index
    /// database are not parses).
    pub fn parse_count(&self) -> usize {
        self.parses.load(Ordering::Relaxed)
    }

    /// About how many bytes of memory the index holds: the files' facts, the analyses of
    /// files that were not parsed, and the parse cache (bounded by its capacity, plus the one
    /// analysis heavier than that). The call
    /// graph and the analyses are in the store (in memory too when the store is).
    pub fn resident_bytes(&self) -> usize {
        let state = self.read();
        let facts: usize = state
            .files
            .iter()
            .map(|(rel, entry)| {
                std::mem::size_of::<Entry>()
                    + rel.len()
                    + entry.pinned.as_ref().map_or(0, |a| a.approx_heap_bytes())
            })
            .sum();
        facts + self.cache.bytes() + self.cache.oversize_bytes()
    }

    /// The build's progress now.
    pub fn status(&self) -> super::progress::IndexStatus {
        self.progress.snapshot()
    }

    /// Bounds the content cache at `bytes` of analyses (default 16 MB).
    pub fn with_cache_bytes(mut self, bytes: usize) -> RepoIndex {
        self.cache = Arc::new(ContentCache::new(bytes));
        self
    }

    /// Shares `other`'s content cache (another worktree's index of the same repository):
    /// one memory bound for all of them, and a content analysed for one is a hit for all.
    pub fn sharing_cache_of(mut self, other: &RepoIndex) -> RepoIndex {
        self.cache = Arc::clone(&other.cache);
        self.flights = Arc::clone(&other.flights);
        self
    }

    /// Parses large sources in child processes of `worker` (see [`super::worker`]).
    /// Large sources go to a pool of two long-lived workers ([`super::pool`]); the one-shot
    /// child is the fallback when no worker can be started.
    pub fn with_parse_worker(mut self, worker: ParseWorker) -> RepoIndex {
        self.pool = Some(ParsePool::new(worker.program().to_owned(), POOL_WORKERS));
        self.worker = Some(worker);
        self
    }

    /// The root as given to [`RepoIndex::new`].
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether a full build has completed.
    pub fn is_built(&self) -> bool {
        self.built.load(Ordering::Acquire)
    }

    /// Builds the index on a background thread. Queries that need the whole graph (callers,
    /// callees) wait for it; single-file queries do not.
    pub fn start_background_build(self: &Arc<Self>) {
        let index = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("wit-index".to_owned())
            .spawn(move || {
                index.ensure_built();
                index.warm_large_analyses();
            });
        if let Err(err) = spawned {
            tracing::warn!("cannot start the index thread ({err}); building on first query");
        }
    }

    /// As [`RepoIndex::start_background_build`], once `first` is built (another worktree's
    /// index that this one reuses analyses of: see [`RepoIndex::with_donor`]). Such builds
    /// run one at a time (each is short, and together they would only add their peaks).
    pub fn start_background_build_after(self: &Arc<Self>, first: Arc<RepoIndex>) {
        /// One build after another among the indexes that follow a first one.
        static FOLLOWERS: Mutex<()> = Mutex::new(());
        let index = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("wit-index".to_owned())
            .spawn(move || {
                first.ensure_built();
                let _turn = FOLLOWERS.lock().unwrap_or_else(|e| e.into_inner());
                index.ensure_built();
                index.warm_large_analyses();
            });
        if let Err(err) = spawned {
            tracing::warn!("cannot start the index thread ({err}); building on first query");
        }
    }

    /// Walks the repository now (honouring `.gitignore`), parses new and changed files in
    /// parallel, drops removed ones and re-resolves the call graph. Unchanged files are not
    /// parsed again, so this is also the way to refresh everything at once.
    pub fn build_now(&self) {
        {
            let _gate = self.build_gate.lock().unwrap_or_else(|e| e.into_inner());
            self.rebuild();
            self.built.store(true, Ordering::Release);
        }
        self.warm_large_analyses();
    }

    fn ensure_built(&self) {
        if self.is_built() {
            return;
        }
        let _gate = self.build_gate.lock().unwrap_or_else(|e| e.into_inner());
        if !self.is_built() {
            self.rebuild();
            self.built.store(true, Ordering::Release);
        }
    }

    /// Reads the stored analyses of the largest files back into the cache, largest first,
    /// up to half the cache: reading one back (decoding it) is what made the first call on a
    /// large file after a restart cost 50–90 ms instead of the steady state's 1 ms (issue 20
    /// item 11, measured with perf: serde_json decoding the stored analysis). Files under
    /// [`WARM_MIN_BYTES`] read back in well under a millisecond and are left. It runs on the
    /// index's own thread after the build, holding nothing a request waits for: the first
    /// caller-aware request after a restart answers once the build is done (issue 32.3).
    fn warm_large_analyses(&self) {
        let started = std::time::Instant::now();
        let mut large: Vec<(u64, String, ContentKey)> = self
            .read()
            .files
            .iter()
            .filter(|(_, entry)| entry.size >= WARM_MIN_BYTES && entry.pinned.is_none())
            .filter_map(|(path, entry)| entry.key.map(|key| (entry.size, path.clone(), key)))
            .collect();
        large.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut read = 0;
        let mut largest = None;
        for (_, path, key) in large {
            if self.cache.bytes() >= self.cache.capacity() / 2 {
                break;
            }
            if let Some(analysis) = self.stored_analysis(&path, key) {
                read += 1;
                largest.get_or_insert((path, analysis));
            }
        }
        if let Some((path, analysis)) = largest {
            self.rehearse_call_graph(&path, &analysis);
        }
        tracing::debug!(
            read,
            ms = started.elapsed().as_millis(),
            "large analyses read back"
        );
    }

    /// Asks the call graph once about the first symbol of `rel_path` (the largest file), as a
    /// `lock.acquire` does: the index database's statements are prepared and its pages read
    /// before an agent's first call waits for them (issue 32.3). Read-only.
    fn rehearse_call_graph(&self, rel_path: &str, analysis: &FileAnalysis) {
        if let Some(symbol) = analysis.symbols.first() {
            let fresh = self.callers_are_fresh(rel_path, &symbol.qualified_name);
            let callers = self.callers(rel_path, &symbol.qualified_name).len();
            tracing::debug!(fresh, callers, "rehearsed the call graph");
        }
    }

    /// The analysis of one file, re-parsed only when its size or mtime changed. `None` for
    /// unsupported suffixes, missing files, anything that is not a regular file, and files
    /// whose real path is outside the root. A file over [`MAX_FILE_BYTES`] has no symbols.
    pub fn file(&self, rel_path: &str) -> Result<Option<Arc<FileAnalysis>>> {
        walk::check_relative(rel_path)?;
        let Some(language) = Language::for_path(rel_path) else {
            return Ok(None);
        };
        let Some((real, meta)) = self.locate(rel_path)? else {
            self.forget(rel_path);
            return Ok(None);
        };
        let known = {
            let state = self.read();
            state
                .files
                .get(rel_path)
                .filter(|entry| walk::unchanged(entry.size, entry.mtime, &meta))
                .map(|entry| (entry.key, entry.pinned.clone()))
        };
        if let Some((key, pinned)) = known {
            if let Some(analysis) = pinned.or_else(|| self.stored_analysis(rel_path, key?)) {
                return Ok(Some(analysis));
            }
        }
        let (mut loaded, analysis) = self.load(rel_path, language, &real, &meta)?;
        let rows: Vec<Row> = self.row_of(&loaded, &analysis).into_iter().collect();
        let node = loaded.node.take();
        let key = loaded.key;
        {
            let mut state = self.write();
            let is_new = !state.files.contains_key(rel_path);
            state.files.insert(loaded.rel.clone(), loaded.entry());
            if self.is_built() {
                self.update_links(
                    &state,
                    vec![(rel_path.to_owned(), node, is_new)],
                    &rows,
                    &[],
                );
            } else {
                // The build resolves every file it installs.
                self.db.write(&rows, &[]);
            }
        }
        if let Some(key) = key {
            self.vouch(rel_path, key);
        }
        Ok(Some(analysis))
    }

    /// The whole analysis of an indexed, unpinned file whose content key is `key`: from the
    /// parse cache, else from the store (then cached).
    fn stored_analysis(&self, rel_path: &str, key: ContentKey) -> Option<Arc<FileAnalysis>> {
        let analysis = match self.cache.get(&key) {
            Some(hit) => hit,
            None => {
                let analysis = Arc::new(self.db.analysis(rel_path, key.hash())?);
                self.cache.insert(key, Arc::clone(&analysis));
                analysis
            }
        };
        self.vouch(rel_path, key);
        Some(analysis)
    }

    /// Tells the cache that its oversize analysis (when `key`'s is the one there) stands for
    /// `rel_path` as the index knows it, so the pulse keeps it while that file is unchanged.
    fn vouch(&self, rel_path: &str, key: ContentKey) {
        if !self.cache.is_oversize(&key) {
            return;
        }
        let stamp = self
            .read()
            .files
            .get(rel_path)
            .filter(|entry| entry.key == Some(key))
            .map(|entry| FileStamp {
                path: self.root.join(rel_path),
                size: entry.size,
                mtime: entry.mtime,
            });
        if let Some(stamp) = stamp {
            self.cache.vouch(&key, stamp);
        }
    }

    /// Drops what the index keeps in memory beyond its bound for a file no longer as it was
    /// (the oversize analysis: [`ContentCache::release_stale_oversize`]); the bytes dropped.
    /// The daemon's pulse runs it; it reads one `stat` per file the analysis was read for.
    pub fn release_stale_analyses(&self) -> Option<usize> {
        self.cache.release_stale_oversize()
    }

    /// Reads and analyses a file (through the content cache), with its whole analysis. No
    /// lock is held.
    fn load(
        &self,
        rel: &str,
        language: Language,
        real: &Path,
        meta: &Metadata,
    ) -> Result<(Loaded, Arc<FileAnalysis>)> {
        let size = meta.len();
        let mtime = meta.modified().ok();
        let (key, analysis) = if size > MAX_FILE_BYTES {
            let analysis = FileAnalysis::empty(Some(language), TOO_LARGE);
            (None, Arc::new(analysis))
        } else {
            let bytes = std::fs::read(real).map_err(|source| AnalysisError::Io {
                path: rel.to_owned(),
                source,
            })?;
            match String::from_utf8(bytes) {
                Ok(text) => {
                    let key = ContentKey::new(language, &text);
                    (Some(key), self.analyze_keyed(key, language, &text))
                }
                Err(_) => {
                    let analysis = FileAnalysis::empty(Some(language), "not UTF-8: not parsed");
                    (None, Arc::new(analysis))
                }
            }
        };
        let pinned = key.is_none().then(|| Arc::clone(&analysis));
        let loaded = Loaded {
            rel: rel.to_owned(),
            size,
            mtime,
            key,
            node: Some(Prepared::of(&analysis)),
            pinned,
        };
        Ok((loaded, analysis))
    }

    /// Drops a file that no longer exists.
    fn forget(&self, rel_path: &str) {
        if !self.read().files.contains_key(rel_path) {
            return;
        }
        let mut state = self.write();
        state.files.remove(rel_path);
        if self.is_built() {
            self.update_links(&state, Vec::new(), &[], &[rel_path.to_owned()]);
        } else {
            self.db.write(&[], &[rel_path.to_owned()]);
        }
    }

    /// The analysis of the content `key` if the cache holds it.
    fn cached_analysis(&self, key: &ContentKey) -> Option<Arc<FileAnalysis>> {
        self.cache.get(key)
    }

    fn analyze_keyed(
        &self,
        key: ContentKey,
        language: Language,
        content: &str,
    ) -> Arc<FileAnalysis> {
        if let Some(hit) = self.cache.get(&key) {
            return hit;
        }
        // A text is held to the rule of files: its analysis (every symbol's names and
        // signature) could be many times its size.
        if content.len() as u64 > MAX_FILE_BYTES {
            return Arc::new(FileAnalysis::empty(Some(language), TOO_LARGE));
        }
        // One analysis of a text at a time: a second asker waits for the first's.
        self.flights.make(&key, || {
            if let Some(hit) = self.cache.get(&key) {
                return hit;
            }
            let donated = self
                .donated(language, key)
                .and_then(|(_, analysis)| crate::analysis::encoding::decode(&analysis).ok());
            let analysis =
                Arc::new(donated.unwrap_or_else(|| self.analyze_uncached(language, content)));
            self.cache.insert(key, Arc::clone(&analysis));
            analysis
        })
    }

    /// Sends large sources to the parse worker when there is one; parses in-process otherwise,
    /// and when no child process can be started.
    fn analyze_uncached(&self, language: Language, content: &str) -> FileAnalysis {
        self.parses.fetch_add(1, Ordering::Relaxed);
        if let Some(worker) = self.worker.as_ref().filter(|w| w.takes(content)) {
            let pooled = self
                .pool
                .as_ref()
                .map(|pool| pool.analyze(language, content, self.budget));
            match pooled {
                Some(Ok(analysis)) => return analysis,
                Some(Err(error @ WorkerError::Failed(_))) => {
                    tracing::warn!(%error, bytes = content.len(), "source not analysed");
                    return FileAnalysis::empty(Some(language), &error.to_string());
                }
                Some(Err(WorkerError::Spawn(error))) => {
                    tracing::warn!(%error, "no parse worker; one child per source instead");
                }
                None => {}
            }
            match worker.analyze(language, content, self.budget) {
                Ok(analysis) => return analysis,
                Err(WorkerError::Spawn(error)) => {
                    tracing::warn!(%error, "parsing in-process instead");
                }
                Err(error @ WorkerError::Failed(_)) => {
                    tracing::warn!(%error, bytes = content.len(), "source not analysed");
                    return FileAnalysis::empty(Some(language), &error.to_string());
                }
            }
        }
        analyze_with_budget(language, content, self.budget)
    }

    /// The donor's encoded outline and analysis of content `key`, if it has them.
    fn donated(&self, language: Language, key: ContentKey) -> Option<(Vec<u8>, Vec<u8>)> {
        self.db.donor()?.encoded(language, key.hash())
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl RepoIndex {
    /// The row of a (re)loaded file: borrowed when the donor has its content, else with its
    /// outline and whole analysis; `None` for a file that was not parsed (it is looked at
    /// again on the next start: no parse either).
    fn row_of(&self, loaded: &Loaded, analysis: &FileAnalysis) -> Option<Row> {
        let key = loaded.key?;
        let (language, hash) = (key.language(), key.hash());
        if self
            .db
            .donor()
            .is_some_and(|donor| donor.has(language, hash))
        {
            return Some(Row::borrowed(
                &loaded.rel,
                loaded.size,
                loaded.mtime,
                language,
                hash,
            ));
        }
        full_row(loaded, analysis)
    }
}

/// The row of a (re)loaded file with its outline and whole analysis (see
/// [`RepoIndex::row_of`]).
fn full_row(loaded: &Loaded, analysis: &FileAnalysis) -> Option<Row> {
    let key = loaded.key?;
    Row::new(
        &loaded.rel,
        loaded.size,
        loaded.mtime,
        Some(key.hash()),
        &outline(analysis),
        analysis,
    )
}

/// What the index's unit tests share.
#[cfg(test)]
mod testing {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::path::Path;

    /// Writes `text` to `root/rel`, creating its directories.
    pub(super) fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}
