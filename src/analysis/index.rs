//! The repository index: every supported file's analysis plus the resolved call graph, with
//! reverse edges so "who calls X" is a map lookup. Files are re-parsed when their size or mtime
//! changed since they were indexed, so answers stay fresh without a file watcher.
//!
//! Locking: one `RwLock` over the graph. Parsing never happens under it: a file is read and
//! parsed first, then installed under a short write lock, where its edges and those of the files
//! importing it are re-resolved (hash lookups, no parsing). The graph itself, and how edges are
//! re-resolved, is `graph`; this module owns the disk: walking, reading, freshness, the parse
//! cache and the parse worker.
//!
//! Memory: with an index database (`store`, [`RepoIndex::with_index_db`]) the call graph is
//! its `links`/`deps`/`waiting` tables (`links`): callers and callees are indexed lookups,
//! re-resolution reads outlines back on demand, and memory holds per file only its facts; a
//! file's whole analysis is read from disk when asked for (and kept in the byte-bounded parse
//! cache); a start reads the stored facts and parses only the files whose size or mtime
//! changed. Without one (tests, tools) the graph (`graph`, outlines) and whole analyses stay
//! in memory, as before.

use std::collections::{BTreeSet, HashMap};
use std::fs::Metadata;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, SystemTime};

use super::cache::{ContentCache, ContentKey};
use super::extract::{analyze_with_budget, PARSE_BUDGET};
use super::graph::{go_module_path, Graph};
use super::graph::{outline, Prepared};
use super::language::Language;
use super::links::{FileLinks, Paths, View};
use super::model::FileAnalysis;
use super::pool::ParsePool;
use super::progress::Progress;
use super::store::{IndexDb, OutlineReader, Row, StoredFile};
use super::worker::{ParseWorker, WorkerError};
use super::{AnalysisError, Result};

/// Files larger than this are not parsed: they have no symbols (PROTOCOL-NOTES 2.6).
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Files at least this large have their stored analysis read back into the cache once the
/// index is built ([`RepoIndex::warm_large_analyses`]).
const WARM_MIN_BYTES: u64 = 64 * 1024;

/// The diagnostic of a source over [`MAX_FILE_BYTES`].
const TOO_LARGE: &str = "larger than 8 MiB: not parsed";

/// Memory the content cache may take for analyses (as `FileAnalysis::approx_heap_bytes`
/// counts it): a few versions of a 1.7 MB TypeScript file, or thousands of ordinary ones.
/// Analyses of the working tree are also held by the index, and content equal to a file's
/// indexed version is found there whatever the cache evicted (`analyze_content_of`); the
/// cache decides which other contents (staged versions) are kept for a repeat.
const CACHE_BYTES: usize = 16 * 1024 * 1024;

/// Directories never indexed even when not ignored: vendored packages are not the repository's
/// code and can be huge.
const SKIPPED_DIRS: [&str; 1] = ["node_modules"];

pub use super::graph::SymbolRef;

/// Long-lived parse workers: one per core of this 2-core target, each fed by one build thread.
const POOL_WORKERS: usize = 2;

/// Rows written to the index database per transaction during a build.
const WRITE_BATCH: usize = 512;

/// Outlines a full resolution on disk keeps read at a time (about, in bytes).
const VIEW_BYTES: usize = 8 * 1024 * 1024;

/// The name of the manifest that declares a Go module.
const GO_MOD: &str = "go.mod";

/// What the index remembers of a file on disk, to tell whether it changed.
struct Entry {
    size: u64,
    mtime: Option<SystemTime>,
    /// The content key of what was parsed (`None` when the file was not parsed).
    key: Option<ContentKey>,
    /// The whole analysis, held when there is no index database to read it back from (and
    /// for files that were not parsed, whose analysis is a diagnostic).
    pinned: Option<Arc<FileAnalysis>>,
}

#[derive(Default)]
struct State {
    files: HashMap<String, Entry>,
    /// The call graph in memory; empty when the index database holds it (`links`).
    graph: Graph,
    /// The Go modules of the last walk (resolution on disk reads them here).
    go_modules: Vec<(String, String)>,
}

/// A freshly read file, not yet installed.
struct Loaded {
    rel: String,
    size: u64,
    mtime: Option<SystemTime>,
    key: Option<ContentKey>,
    /// What the graph keeps of it: `None` once written to the index database, which then
    /// holds the graph.
    node: Option<Prepared>,
    /// What the entry pins (see [`Entry::pinned`]).
    pinned: Option<Arc<FileAnalysis>>,
}

/// The repository-wide index. `Send + Sync`; every method takes `&self`.
pub struct RepoIndex {
    root: PathBuf,
    canonical_root: Mutex<Option<PathBuf>>,
    state: RwLock<State>,
    cache: ContentCache,
    built: AtomicBool,
    build_gate: Mutex<()>,
    budget: Duration,
    /// Where large sources are parsed; `None`: everything in-process.
    worker: Option<ParseWorker>,
    /// Long-lived workers for large sources (made from `worker`).
    pool: Option<ParsePool>,
    /// The index on disk, when there is one.
    db: Option<IndexDb>,
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
    /// An empty index of the repository at `root`. Nothing is read until a build or a query.
    pub fn new(root: PathBuf) -> RepoIndex {
        let canonical = std::fs::canonicalize(&root).ok();
        RepoIndex {
            root,
            canonical_root: Mutex::new(canonical),
            state: RwLock::new(State::default()),
            cache: ContentCache::new(CACHE_BYTES),
            built: AtomicBool::new(false),
            build_gate: Mutex::new(()),
            budget: PARSE_BUDGET,
            worker: None,
            pool: None,
            db: None,
            progress: Progress::default(),
            parses: AtomicUsize::new(0),
        }
    }

    /// Keeps the index in the SQLite file `path` (`.wit/index.db`): a start parses only what
    /// changed since. When the file cannot be opened even after deleting it, the index runs
    /// in memory (with a warning).
    pub fn with_index_db(mut self, path: &Path) -> RepoIndex {
        match IndexDb::open(path) {
            Ok(db) => self.db = Some(db),
            Err(error) => tracing::warn!(%error, "the index stays in memory"),
        }
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

    /// About how many bytes of memory the index holds: the graph (outlines and edges), the
    /// analyses pinned without an index database, and the parse cache (bounded by its
    /// capacity). With an index database this grows with the symbols and call edges, not with
    /// the analyses.
    pub fn resident_bytes(&self) -> usize {
        let state = self.read();
        let pinned: usize = state
            .files
            .iter()
            .map(|(rel, entry)| {
                std::mem::size_of::<Entry>()
                    + rel.len()
                    + entry.pinned.as_ref().map_or(0, |a| a.approx_heap_bytes())
            })
            .sum();
        state.graph.approx_heap_bytes() + pinned + self.cache.bytes()
    }

    /// The build's progress now.
    pub fn status(&self) -> super::progress::IndexStatus {
        self.progress.snapshot()
    }

    /// Bounds the content cache at `bytes` of analyses (default 16 MB).
    pub fn with_cache_bytes(mut self, bytes: usize) -> RepoIndex {
        self.cache = ContentCache::new(bytes);
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
            .spawn(move || index.ensure_built());
        if let Err(err) = spawned {
            tracing::warn!("cannot start the index thread ({err}); building on first query");
        }
    }

    /// Walks the repository now (honouring `.gitignore`), parses new and changed files in
    /// parallel, drops removed ones and re-resolves the whole call graph. Unchanged files are
    /// not parsed again, so this is also the way to refresh everything at once.
    pub fn build_now(&self) {
        let _gate = self.build_gate.lock().unwrap_or_else(|e| e.into_inner());
        self.rebuild();
        self.built.store(true, Ordering::Release);
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
            self.warm_large_analyses();
        }
    }

    /// Reads the stored analyses of the largest files back into the cache, largest first,
    /// up to half the cache: reading one back (decoding its JSON) is what made the first call
    /// on a large file after a restart cost 50–90 ms instead of the steady state's 1 ms
    /// (issue 20 item 11, measured with perf: serde_json decoding the stored analysis).
    /// Files under [`WARM_MIN_BYTES`] read back in well under a millisecond and are left.
    fn warm_large_analyses(&self) {
        if self.db.is_none() {
            return;
        }
        let mut large: Vec<(u64, String, ContentKey)> = self
            .read()
            .files
            .iter()
            .filter(|(_, entry)| entry.size >= WARM_MIN_BYTES && entry.pinned.is_none())
            .filter_map(|(path, entry)| entry.key.map(|key| (entry.size, path.clone(), key)))
            .collect();
        large.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (_, path, key) in large {
            if self.cache.bytes() >= self.cache.capacity() / 2 {
                break;
            }
            let _ = self.stored_analysis(&path, key);
        }
    }

    /// The analysis of one file, re-parsed only when its size or mtime changed. `None` for
    /// unsupported suffixes, missing files, anything that is not a regular file, and files
    /// whose real path is outside the root. A file over [`MAX_FILE_BYTES`] has no symbols.
    pub fn file(&self, rel_path: &str) -> Result<Option<Arc<FileAnalysis>>> {
        check_relative(rel_path)?;
        let Some(language) = Language::for_path(rel_path) else {
            return Ok(None);
        };
        let Some((real, meta)) = self.locate(rel_path)? else {
            self.forget(rel_path);
            return Ok(None);
        };
        let mtime = meta.modified().ok();
        let known = {
            let state = self.read();
            state
                .files
                .get(rel_path)
                .filter(|entry| entry.size == meta.len() && entry.mtime == mtime)
                .map(|entry| (entry.key, entry.pinned.clone()))
        };
        if let Some((key, pinned)) = known {
            if let Some(analysis) = pinned.or_else(|| self.stored_analysis(rel_path, key?)) {
                return Ok(Some(analysis));
            }
        }
        let (mut loaded, analysis) = self.load(rel_path, language, &real, &meta)?;
        if self.db.is_some() {
            let rows: Vec<Row> = row_of(&loaded, &analysis).into_iter().collect();
            let node = loaded.node.take();
            let mut state = self.write();
            let is_new = !state.files.contains_key(rel_path);
            install(&mut state, loaded);
            if self.is_built() {
                self.update_links(
                    &state,
                    vec![(rel_path.to_owned(), node, is_new)],
                    &rows,
                    &[],
                );
            } else if let Some(db) = &self.db {
                // The build resolves every file it installs.
                db.write(&rows, &[]);
            }
        } else {
            let mut state = self.write();
            install(&mut state, loaded);
        }
        Ok(Some(analysis))
    }

    /// The whole analysis of an indexed, unpinned file whose content key is `key`: from the
    /// parse cache, else from the index database (then cached).
    fn stored_analysis(&self, rel_path: &str, key: ContentKey) -> Option<Arc<FileAnalysis>> {
        if let Some(hit) = self.cache.get(&key) {
            return Some(hit);
        }
        let analysis = Arc::new(self.db.as_ref()?.analysis(rel_path, key.hash())?);
        self.cache.insert(key, Arc::clone(&analysis));
        Some(analysis)
    }

    /// Writes `rows` and deletes `removed` in the index database, with the call graph rows
    /// they change: those of each of `changed` (files just (re)parsed, with their outline
    /// when at hand; `true`: new), of the files that resolved through one of them or through
    /// a removed file, and, when a file is new, of the files waiting for one; all resolved
    /// against `state`'s files, in one transaction.
    fn update_links(
        &self,
        state: &State,
        changed: Vec<(String, Option<Prepared>, bool)>,
        rows: &[Row],
        removed: &[String],
    ) {
        let Some(db) = &self.db else { return };
        let mut redo: BTreeSet<String> = BTreeSet::new();
        let mut any_new = false;
        for (rel, _, is_new) in &changed {
            redo.extend(db.importers(rel));
            redo.insert(rel.clone());
            any_new |= *is_new;
        }
        if any_new {
            redo.extend(db.waiting());
        }
        for rel in removed {
            redo.extend(db.importers(rel));
        }
        let paths = Paths::new(state.files.keys().map(String::as_str), &state.go_modules);
        let mut view = View::new(&paths);
        for (rel, node, _) in changed {
            if let Some(node) = node {
                view.put(&rel, Some(node));
            }
        }
        let load = |file: &str| outline_of(db, None, &state.files, file);
        let links: Vec<FileLinks> = redo
            .iter()
            .filter(|file| state.files.contains_key(*file))
            .map(|file| view.resolve(file, &load).unwrap_or_else(|| no_links(file)))
            .collect();
        db.write_with_graph(rows, removed, &links, None);
    }

    /// Resolves every file of `files` again into the index database's graph tables (a cold
    /// build, or one that found the tables incomplete), reading the outlines back from it a
    /// bounded window at a time, and marks the graph complete. The sorted files are split in
    /// one contiguous run per core, each resolved on its own thread with its own window
    /// (neighbours in the sorted list consult the same outlines).
    fn resolve_all(db: &IndexDb, files: &HashMap<String, Entry>, go_modules: &[(String, String)]) {
        db.clear_graph();
        let mut sorted: Vec<&str> = files.keys().map(String::as_str).collect();
        sorted.sort_unstable();
        let paths = Paths::new(sorted.iter().copied(), go_modules);
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, 8);
        let run = sorted.len().div_ceil(threads).max(1);
        let resolve_run = |run: &[&str]| {
            let mut view = View::new(&paths);
            let reader = db.reader();
            let load = |file: &str| outline_of(db, reader.as_ref(), files, file);
            let mut batch = Vec::with_capacity(WRITE_BATCH);
            for file in run {
                view.trim(VIEW_BYTES / threads);
                batch.push(view.resolve(file, &load).unwrap_or_else(|| no_links(file)));
                if batch.len() >= WRITE_BATCH {
                    db.insert_graph(&batch);
                    batch.clear();
                }
            }
            db.insert_graph(&batch);
        };
        let complete = std::thread::scope(|scope| {
            let handles: Vec<_> = sorted
                .chunks(run)
                .map(|part| scope.spawn(|| resolve_run(part)))
                .collect();
            // A run that panicked leaves the graph incomplete: the next build resolves again.
            handles.into_iter().all(|h| h.join().is_ok())
        });
        if complete {
            db.write_with_graph(&[], &[], &[], Some(true));
        } else {
            tracing::warn!("a resolution thread panicked; the call graph is incomplete");
        }
    }

    /// The text of a file inside the root, with the same confinement as [`RepoIndex::file`]:
    /// `None` for a missing file, anything that is not a regular file, a real path outside
    /// the root, a file over [`MAX_FILE_BYTES`] and text that is not UTF-8.
    pub fn read_text(&self, rel_path: &str) -> Result<Option<String>> {
        check_relative(rel_path)?;
        let Some((real, meta)) = self.locate(rel_path)? else {
            return Ok(None);
        };
        if meta.len() > MAX_FILE_BYTES {
            return Ok(None);
        }
        let bytes = std::fs::read(&real).map_err(|source| AnalysisError::Io {
            path: rel_path.to_owned(),
            source,
        })?;
        Ok(String::from_utf8(bytes).ok())
    }

    /// The symbols calling `name` in `rel_path` (a qualified name, or a bare name resolved by
    /// PROTOCOL-NOTES 2.2; every candidate of an ambiguous name counts), across the repository,
    /// sorted. The file and the callers' files are checked for changes first.
    pub fn callers(&self, rel_path: &str, name: &str) -> Vec<SymbolRef> {
        self.ensure_built();
        let targets = self.targets(rel_path, name);
        let found = self.collect_callers(&targets);
        // Re-check the files of the callers found: an edit there may have removed the call.
        let files: BTreeSet<&str> = found
            .iter()
            .map(|r| r.file.as_str())
            .filter(|file| *file != rel_path)
            .collect();
        if self.refresh_stale(files) {
            self.collect_callers(&targets)
        } else {
            found
        }
    }

    /// Whether [`RepoIndex::callers`] of `name` in `rel_path` would answer from the index
    /// as it is, without building it or parsing any file: the index is built, and the file and
    /// the files of its known callers are unchanged on disk (a few `stat`s, no parse). Lets a
    /// caller answer on its own thread instead of handing the work to a blocking pool.
    pub fn callers_are_fresh(&self, rel_path: &str, name: &str) -> bool {
        if Language::for_path(rel_path).is_none() {
            // Never analysed: no symbols, so no callers.
            return true;
        }
        if !self.indexed_as_on_disk(rel_path) {
            return false;
        }
        let Some(targets) = self.matching(rel_path, name) else {
            // Not indexed and absent (not stale): no symbols, so no callers.
            return true;
        };
        let Some(targets) = targets else {
            // Indexed, but its analysis is not at hand: let the caller read it.
            return false;
        };
        let callers = self.collect_callers(&targets);
        let files: BTreeSet<String> = callers.into_iter().map(|r| r.file).collect();
        files.iter().all(|file| !self.is_stale(file))
    }

    /// Whether the symbols of `rel_path` and their callees ([`RepoIndex::callees`]) would
    /// answer from the index as it is, without building it or parsing any file: the index is
    /// built, and the file and the files it imports are unchanged on disk (a few `stat`s).
    pub fn file_and_imports_are_fresh(&self, rel_path: &str) -> bool {
        Language::for_path(rel_path).is_none()
            || (self.indexed_as_on_disk(rel_path)
                && self
                    .imported_files(rel_path)
                    .iter()
                    .all(|file| !self.is_stale(file)))
    }

    /// Whether the index is built and knows `rel_path` as it is on disk (one `stat`).
    fn indexed_as_on_disk(&self, rel_path: &str) -> bool {
        self.is_built() && check_relative(rel_path).is_ok() && !self.is_stale(rel_path)
    }

    /// The files the indexed `rel_path` imports from (empty when it is not indexed).
    fn imported_files(&self, rel_path: &str) -> Vec<String> {
        match &self.db {
            // A file the index does not know imports nothing: no query for it (intents on
            // files yet to be written are common).
            Some(_) if !self.read().files.contains_key(rel_path) => Vec::new(),
            Some(db) => db.imported_files(rel_path),
            None => self.read().graph.imported_files(rel_path),
        }
    }

    /// The symbols `name` could mean in the indexed `rel_path`: `None` when it is not
    /// indexed, `Some(None)` when its analysis is not at hand without a parse.
    #[allow(
        clippy::option_option,
        reason = "three outcomes read once by callers_are_fresh"
    )]
    fn matching(&self, rel_path: &str, name: &str) -> Option<Option<Vec<SymbolRef>>> {
        if self.db.is_none() {
            return self.read().graph.matching(rel_path, name).map(Some);
        }
        let (key, pinned) = {
            let state = self.read();
            let entry = state.files.get(rel_path)?;
            (entry.key, entry.pinned.clone())
        };
        let analysis = pinned.or_else(|| self.stored_analysis(rel_path, key?));
        Some(analysis.map(|analysis| symbol_refs(rel_path, &analysis, name)))
    }

    /// The symbols that `name` in `rel_path` calls (resolved calls only), sorted.
    pub fn callees(&self, rel_path: &str, name: &str) -> Vec<SymbolRef> {
        self.ensure_built();
        let targets = self.targets(rel_path, name);
        if targets.is_empty() {
            // No such symbol: it calls nothing.
            return Vec::new();
        }
        // Re-check the files this one imports: an edit there may have renamed, removed or
        // restored a callee (re-reading one re-resolves its importers, this file included).
        let imported = self.imported_files(rel_path);
        self.refresh_stale(imported.iter().map(String::as_str));
        let mut out = BTreeSet::new();
        if let Some(db) = &self.db {
            for target in &targets {
                out.extend(db.callees(rel_path, &target.qualified_name));
            }
            return out.into_iter().collect();
        }
        let state = self.read();
        for target in &targets {
            out.extend(
                state
                    .graph
                    .callees_of(rel_path, &target.qualified_name)
                    .cloned(),
            );
        }
        out.into_iter().collect()
    }

    /// The analysis of `content` as `language`, cached by content hash (shared with the parses
    /// of files on disk, so content equal to the working copy costs no parse).
    pub fn analyze_content(&self, language: Language, content: &str) -> Arc<FileAnalysis> {
        self.analyze_keyed(ContentKey::new(language, content), language, content)
    }

    /// The analysis of `content` as the file `rel_path` (staged content, say): the indexed
    /// analysis when the content is what the index parsed for that file, whatever the cache
    /// has evicted since; else as [`RepoIndex::analyze_content`].
    pub fn analyze_content_of(
        &self,
        rel_path: &str,
        language: Language,
        content: &str,
    ) -> Arc<FileAnalysis> {
        let key = ContentKey::new(language, content);
        let pinned = {
            let state = self.read();
            state
                .files
                .get(rel_path)
                .filter(|entry| entry.key == Some(key))
                .map(|entry| entry.pinned.clone())
        };
        if let Some(pinned) = pinned {
            if let Some(analysis) = pinned.or_else(|| self.stored_analysis(rel_path, key)) {
                return analysis;
            }
        }
        self.analyze_keyed(key, language, content)
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
        let analysis = Arc::new(self.analyze_uncached(language, content));
        self.cache.insert(key, Arc::clone(&analysis));
        analysis
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

    /// Every indexed file, sorted.
    pub fn files(&self) -> Vec<String> {
        let mut files: Vec<String> = self.read().files.keys().cloned().collect();
        files.sort_unstable();
        files
    }

    fn targets(&self, rel_path: &str, name: &str) -> Vec<SymbolRef> {
        match self.file(rel_path) {
            Ok(Some(analysis)) => symbol_refs(rel_path, &analysis, name),
            _ => Vec::new(),
        }
    }

    fn collect_callers(&self, targets: &[SymbolRef]) -> Vec<SymbolRef> {
        let mut out = BTreeSet::new();
        if let Some(db) = &self.db {
            for target in targets {
                out.extend(db.callers(&target.file, &target.qualified_name));
            }
            return out.into_iter().collect();
        }
        let state = self.read();
        for target in targets {
            out.extend(state.graph.callers_of(target).cloned());
        }
        out.into_iter().collect()
    }

    /// Re-reads each of `files` whose size or mtime changed; whether any was re-read.
    fn refresh_stale<'f>(&self, files: impl IntoIterator<Item = &'f str>) -> bool {
        let mut refreshed = false;
        for file in files {
            if self.is_stale(file) {
                // An error or a vanished file both mean the old edges go.
                let _ = self.file(file);
                refreshed = true;
            }
        }
        refreshed
    }

    /// Whether an indexed file's size or mtime differ from what was indexed (one `stat`).
    fn is_stale(&self, rel_path: &str) -> bool {
        let Some(root) = self.canonical_root() else {
            return true;
        };
        let meta = std::fs::metadata(root.join(rel_path)).ok();
        let state = self.read();
        match (state.files.get(rel_path), meta) {
            (Some(entry), Some(meta)) => {
                entry.size != meta.len() || entry.mtime != meta.modified().ok()
            }
            (None, None) => false,
            _ => true,
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn canonical_root(&self) -> Option<PathBuf> {
        let mut root = self
            .canonical_root
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if root.is_none() {
            *root = std::fs::canonicalize(&self.root).ok();
        }
        root.clone()
    }

    /// The real path and metadata of a file inside the root, or `None` when it is missing, not
    /// a regular file, or resolves (through symlinks) outside the root.
    fn locate(&self, rel_path: &str) -> Result<Option<(PathBuf, Metadata)>> {
        let Some(root) = self.canonical_root() else {
            return Ok(None);
        };
        let real = match std::fs::canonicalize(root.join(rel_path)) {
            Ok(real) => real,
            Err(err) if is_absent(&err) => return Ok(None),
            Err(source) => {
                return Err(AnalysisError::Io {
                    path: rel_path.to_owned(),
                    source,
                })
            }
        };
        if !real.starts_with(&root) {
            return Ok(None);
        }
        match std::fs::metadata(&real) {
            Ok(meta) if meta.is_file() => Ok(Some((real, meta))),
            Ok(_) => Ok(None),
            Err(err) if is_absent(&err) => Ok(None),
            Err(source) => Err(AnalysisError::Io {
                path: rel_path.to_owned(),
                source,
            }),
        }
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
        let pinned = (self.db.is_none() || key.is_none()).then(|| Arc::clone(&analysis));
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
        remove(&mut state, rel_path);
        if self.is_built() {
            self.update_links(&state, Vec::new(), &[], &[rel_path.to_owned()]);
        } else if let Some(db) = &self.db {
            db.write(&[], &[rel_path.to_owned()]);
        }
    }

    /// What a build may reuse without parsing: the files in memory, or on a fresh start the
    /// files stored in the index database (read row by row, each prepared for the graph at
    /// once: the stored outlines never pile up).
    fn known_files(&self) -> HashMap<String, Known> {
        let state = self.read();
        if state.files.is_empty() {
            drop(state);
            let mut known = HashMap::new();
            if let Some(db) = &self.db {
                db.load(|stored| {
                    if let Some(loaded) = reused(stored) {
                        known.insert(loaded.rel.clone(), Mutex::new(Some(loaded)));
                    }
                });
            }
            return known;
        }
        state
            .files
            .iter()
            .filter_map(|(rel, e)| {
                let node = match &self.db {
                    Some(_) => None,
                    None => Some(state.graph.prepared_of(rel)?),
                };
                let known = Loaded {
                    rel: rel.clone(),
                    size: e.size,
                    mtime: e.mtime,
                    key: e.key,
                    node,
                    pinned: e.pinned.clone(),
                };
                Some((rel.clone(), Mutex::new(Some(known))))
            })
            .collect()
    }

    fn rebuild(&self) {
        let Some(root) = self.canonical_root() else {
            *self.write() = State::default();
            return;
        };
        let started = std::time::Instant::now();
        let (mut paths, manifests) = walk(&root);
        // Largest first: the build ends on small files, both cores busy to the end.
        paths.sort_by_key(|(_, _, size)| std::cmp::Reverse(*size));
        let go_modules = read_go_modules(&root, &manifests);
        let known = self.known_files();
        let walked = started.elapsed();
        // The graph tables are complete until this build changes a row: cleared first, so a
        // build cut short resolves everything next time.
        let graph_was_complete = self.db.as_ref().is_some_and(|db| {
            let complete = db.graph_complete();
            if complete {
                db.write_with_graph(&[], &[], &[], Some(false));
            }
            complete
        });
        let total_bytes = paths.iter().map(|(_, _, size)| *size).sum();
        self.progress.start(paths.len(), total_bytes);
        let next = AtomicUsize::new(0);
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, 8);
        let (rows_tx, rows_rx) = std::sync::mpsc::sync_channel::<Row>(64);
        let mut loaded: Vec<Loaded> = Vec::with_capacity(paths.len());
        let mut changed: Vec<String> = Vec::new();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    let rows_tx = rows_tx.clone();
                    scope.spawn(|| {
                        let rows_tx = rows_tx;
                        let mut out = Vec::new();
                        let mut changed = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some((rel, language, size)) = paths.get(i) else {
                                break;
                            };
                            let found = self.load_for_build(&root, rel, *language, &known);
                            self.progress.file_done(*size);
                            let Some((mut l, loaded)) = found else {
                                continue;
                            };
                            if !matches!(loaded, Load::Reused) {
                                changed.push(l.rel.clone());
                            }
                            let row = match loaded {
                                Load::Reused => None,
                                Load::Encoded(row) => Some(row),
                                Load::Parsed(analysis) if self.db.is_some() => {
                                    row_of(&l, &analysis)
                                }
                                Load::Parsed(_) => None,
                            };
                            if let Some(row) = row {
                                // The writer is gone only if the build is unwinding.
                                let _ = rows_tx.send(row);
                            }
                            if self.db.is_some() {
                                // The graph reads it back from the index database.
                                l.node = None;
                            }
                            out.push(l);
                        }
                        (out, changed)
                    })
                })
                .collect();
            drop(rows_tx);
            self.write_rows(rows_rx);
            for handle in handles {
                match handle.join() {
                    Ok((part, part_changed)) => {
                        loaded.extend(part);
                        changed.extend(part_changed);
                    }
                    Err(_) => tracing::warn!("an index worker panicked; its files are missing"),
                }
            }
        });
        let present: std::collections::HashSet<&str> =
            loaded.iter().map(|l| l.rel.as_str()).collect();
        let removed: Vec<String> = known
            .keys()
            .filter(|rel| !present.contains(rel.as_str()))
            .cloned()
            .collect();
        drop(present);
        let parsed = started.elapsed();
        let changed: Vec<(String, Option<Prepared>, bool)> = changed
            .into_iter()
            .map(|rel| {
                let is_new = !known.contains_key(&rel);
                (rel, None, is_new)
            })
            .collect();
        drop(known);
        let mut files = HashMap::with_capacity(loaded.len());
        let mut nodes = Vec::with_capacity(loaded.len());
        for l in loaded {
            files.insert(
                l.rel.clone(),
                Entry {
                    size: l.size,
                    mtime: l.mtime,
                    key: l.key,
                    pinned: l.pinned,
                },
            );
            if let Some(node) = l.node {
                nodes.push((l.rel, node));
            }
        }
        let state = match &self.db {
            Some(db) => {
                let state = State {
                    files,
                    graph: Graph::default(),
                    go_modules,
                };
                // Few changes: re-resolve what they touch; many (or no complete graph on
                // disk): resolve everything again.
                let touched = changed.len() + removed.len();
                if graph_was_complete && touched * 4 <= state.files.len() {
                    self.update_links(&state, changed, &[], &removed);
                    db.write_with_graph(&[], &[], &[], Some(true));
                } else {
                    db.write(&[], &removed);
                    Self::resolve_all(db, &state.files, &state.go_modules);
                }
                state
            }
            None => {
                let graph = Graph::build_prepared(nodes, go_modules.clone());
                State {
                    files,
                    graph,
                    go_modules,
                }
            }
        };
        *self.write() = state;
        tracing::info!(
            files = paths.len(),
            parses = self.parse_count(),
            walk_ms = walked.as_millis(),
            parse_ms = (parsed - walked).as_millis(),
            resolve_ms = (started.elapsed() - parsed).as_millis(),
            "index built"
        );
        self.progress
            .finish(self.parse_count(), self.resident_bytes());
    }

    /// The build's writer: rows from the parsing threads, written in large transactions,
    /// publishing progress meanwhile. Returns when every parsing thread is done.
    fn write_rows(&self, rows: std::sync::mpsc::Receiver<Row>) {
        let tick = Duration::from_millis(250);
        let mut batch: Vec<Row> = Vec::new();
        let mut batch_bytes = 0usize;
        loop {
            match rows.recv_timeout(tick) {
                Ok(row) => {
                    batch_bytes += row.analysis.len() + row.outline.len();
                    batch.push(row);
                    if batch.len() >= WRITE_BATCH || batch_bytes >= 4 * 1024 * 1024 {
                        self.flush_rows(&mut batch);
                        batch_bytes = 0;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
            self.progress.publish_if_due(self.parse_count());
        }
        self.flush_rows(&mut batch);
    }

    fn flush_rows(&self, batch: &mut Vec<Row>) {
        if let Some(db) = &self.db {
            db.write(batch, &[]);
        }
        batch.clear();
    }

    /// A file for the build: reused when its size and mtime are as known, else read and
    /// parsed (straight into a row when there is an index database: see
    /// [`RepoIndex::load_encoded`]); and how.
    fn load_for_build(
        &self,
        root: &Path,
        rel: &str,
        language: Language,
        known: &HashMap<String, Known>,
    ) -> Option<(Loaded, Load)> {
        let real = root.join(rel);
        let meta = std::fs::symlink_metadata(&real).ok()?;
        if !meta.is_file() {
            return None;
        }
        let mtime = meta.modified().ok();
        if let Some(slot) = known.get(rel) {
            let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
            if slot
                .as_ref()
                .is_some_and(|k| k.size == meta.len() && k.mtime == mtime)
            {
                return slot.take().map(|known| (known, Load::Reused));
            }
        }
        if let Some(encoded) = self.load_encoded(rel, language, &real, &meta) {
            return Some(encoded);
        }
        let (loaded, analysis) = self.load(rel, language, &real, &meta).ok()?;
        Some((loaded, Load::Parsed(analysis)))
    }

    /// A new or changed file parsed straight into its row, when there is an index database:
    /// a large source (see [`ParseWorker::takes`]) by a worker, whose encoded answer becomes
    /// the row as it came (the daemon decodes only the outline); a small one on this build
    /// thread, where a round trip to a worker would cost about what its parse costs, and whose
    /// parse tree is small. `None` when there is no index database, the content is in the
    /// parse cache, is not UTF-8 or too large, or no worker can be started for a large
    /// source: then [`RepoIndex::load`] does it.
    fn load_encoded(
        &self,
        rel: &str,
        language: Language,
        real: &Path,
        meta: &Metadata,
    ) -> Option<(Loaded, Load)> {
        self.db.as_ref()?;
        if meta.len() > MAX_FILE_BYTES {
            return None;
        }
        let text = String::from_utf8(std::fs::read(real).ok()?).ok()?;
        let key = ContentKey::new(language, &text);
        if self.cache.get(&key).is_some() {
            return None;
        }
        let size = meta.len();
        let mtime = meta.modified().ok();
        let pool = self
            .pool
            .as_ref()
            .filter(|_| self.worker.as_ref().is_some_and(|w| w.takes(&text)));
        let (outline_bytes, analysis_bytes) = match pool {
            Some(pool) => self.parse_in_worker(pool, rel, language, &text)?,
            None => {
                self.parses.fetch_add(1, Ordering::Relaxed);
                let analysis = analyze_with_budget(language, &text, self.budget);
                drop(text);
                (
                    serde_json::to_vec(&outline(&analysis)).ok()?,
                    serde_json::to_vec(&analysis).ok()?,
                )
            }
        };
        let row = Row {
            path: rel.to_owned(),
            size,
            mtime,
            language,
            hash: Some(key.hash()),
            outline: outline_bytes,
            analysis: analysis_bytes,
        };
        let loaded = Loaded {
            rel: rel.to_owned(),
            size,
            mtime,
            key: Some(key),
            node: None,
            pinned: None,
        };
        Some((loaded, Load::Encoded(row)))
    }

    /// A source's outline and analysis as a pool worker encodes them; an empty analysis
    /// when the worker failed on it; `None` when no worker can be started.
    fn parse_in_worker(
        &self,
        pool: &ParsePool,
        rel: &str,
        language: Language,
        text: &str,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        let encoded = pool.analyze_encoded(language, text, self.budget);
        self.parses.fetch_add(1, Ordering::Relaxed);
        match encoded {
            Ok(encoded) => Some((encoded.outline, encoded.analysis)),
            Err(WorkerError::Spawn(error)) => {
                self.parses.fetch_sub(1, Ordering::Relaxed);
                tracing::warn!(%error, "no parse worker; parsing in the daemon");
                None
            }
            Err(error @ WorkerError::Failed(_)) => {
                tracing::warn!(%error, bytes = text.len(), file = rel, "source not analysed");
                let empty = FileAnalysis::empty(Some(language), &error.to_string());
                Some((
                    serde_json::to_vec(&outline(&empty)).ok()?,
                    serde_json::to_vec(&empty).ok()?,
                ))
            }
        }
    }
}

/// How a build got a file.
enum Load {
    /// Size and mtime as known: nothing read.
    Reused,
    /// Parsed in the daemon (or by a one-shot child): the whole analysis at hand.
    Parsed(Arc<FileAnalysis>),
    /// Parsed straight into its row (by a worker, or on the build thread): nothing decoded.
    Encoded(Row),
}

/// The row of a (re)loaded file, with its outline and whole analysis; `None` for a file that
/// was not parsed (it is looked at again on the next start: no parse either).
fn row_of(loaded: &Loaded, analysis: &FileAnalysis) -> Option<Row> {
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

/// A file a build may reuse, taken out when it is.
type Known = Mutex<Option<Loaded>>;

/// A file from the index database as the build reuses it; `None` for a row without a hash.
fn reused(stored: StoredFile) -> Option<Loaded> {
    let hash = stored.hash?;
    let len = usize::try_from(stored.size).ok()?;
    Some(Loaded {
        key: Some(ContentKey::from_parts(stored.language, len, hash)),
        rel: stored.path,
        size: stored.size,
        mtime: stored.mtime,
        node: None,
        pinned: None,
    })
}

/// The symbols `name` could mean in `rel_path`'s analysis, as references.
fn symbol_refs(rel_path: &str, analysis: &FileAnalysis, name: &str) -> Vec<SymbolRef> {
    analysis
        .matching(name)
        .into_iter()
        .map(|s| SymbolRef {
            file: rel_path.to_owned(),
            qualified_name: s.qualified_name.clone(),
        })
        .collect()
}

/// Supported files under the root, relative and `/`-separated, honouring `.gitignore`,
/// `.ignore` and `.git/info/exclude`, skipping hidden entries and symlinks; and the `go.mod`
/// manifests among them.
#[allow(
    clippy::type_complexity,
    reason = "a private pair read once by rebuild"
)]
fn walk(root: &Path) -> (Vec<(String, Language, u64)>, Vec<String>) {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(|e| !SKIPPED_DIRS.iter().any(|d| e.file_name() == *d));
    let mut out = Vec::new();
    let mut manifests = Vec::new();
    for entry in builder.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(rel) = rel.to_str() else { continue };
        if let Some(language) = Language::for_path(rel) {
            let size = entry.metadata().map_or(0, |m| m.len());
            out.push((rel.to_owned(), language, size));
        } else if entry.file_name() == GO_MOD {
            manifests.push(rel.to_owned());
        }
    }
    (out, manifests)
}

/// The Go modules the manifests declare: (directory, module path). An unreadable manifest
/// declares none (its imports stay unresolved).
fn read_go_modules(root: &Path, manifests: &[String]) -> Vec<(String, String)> {
    manifests
        .iter()
        .filter_map(|rel| {
            let text = std::fs::read_to_string(root.join(rel)).ok()?;
            let module = go_module_path(&text)?;
            let dir = rel.rsplit_once('/').map_or("", |(dir, _)| dir);
            Some((dir.to_owned(), module))
        })
        .collect()
}

/// The outline of an indexed file for resolution on disk: from its pinned analysis (a file
/// that was not parsed), else read from the index database.
fn outline_of(
    db: &IndexDb,
    reader: Option<&OutlineReader>,
    files: &HashMap<String, Entry>,
    file: &str,
) -> Option<Prepared> {
    let entry = files.get(file)?;
    if let Some(analysis) = &entry.pinned {
        return Some(Prepared::of(analysis));
    }
    let outline = match reader {
        Some(reader) => reader.outline(file),
        None => db.outline(file),
    };
    outline.map(|outline| Prepared::of(&outline))
}

/// The graph rows of a file whose calls resolve to nothing (they replace its old ones).
fn no_links(file: &str) -> FileLinks {
    FileLinks {
        file: file.to_owned(),
        ..FileLinks::default()
    }
}

/// Installs a (re)loaded file; the graph in memory, if it holds the file's outline,
/// re-resolves the edges that may depend on it.
fn install(state: &mut State, loaded: Loaded) {
    state.files.insert(
        loaded.rel.clone(),
        Entry {
            size: loaded.size,
            mtime: loaded.mtime,
            key: loaded.key,
            pinned: loaded.pinned,
        },
    );
    if let Some(node) = loaded.node {
        state.graph.insert_prepared(&loaded.rel, node);
    }
}

/// Drops a file; the graph re-resolves the files that called into it.
fn remove(state: &mut State, rel: &str) {
    state.files.remove(rel);
    state.graph.remove(rel);
}

fn is_absent(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// Rejects paths that are not plain relative paths inside the root. Callers normalise paths
/// (PROTOCOL-NOTES 2.1); this is the index's own guard.
fn check_relative(path: &str) -> Result<()> {
    let invalid = |reason| {
        Err(AnalysisError::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if path.is_empty() {
        return invalid("empty");
    }
    if path.contains('\\') || path.contains('\0') {
        return invalid("contains a backslash or NUL");
    }
    for component in Path::new(path).components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return invalid("leaves the root"),
            Component::RootDir | Component::Prefix(_) => return invalid("absolute"),
        }
    }
    Ok(())
}
