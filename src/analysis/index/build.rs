//! Building the index: a whole build (walk, parse what changed in parallel, write the rows,
//! resolve the call graph) and the re-resolution of what one change touches. Everything goes
//! into the one store; only the files' facts stay in memory.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::Metadata;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::tree_record::TreeRecord;
use super::walk::{read_go_modules, recorded_walk, unchanged, walk, WalkedFile};
use super::{Entry, Loaded, RepoIndex, State, MAX_FILE_BYTES};
use crate::analysis::cache::ContentKey;
use crate::analysis::extract::analyze_with_budget;
use crate::analysis::extract::PARSE_BUDGET;
use crate::analysis::language::Language;
use crate::analysis::links::{FileLinks, Paths, View};
use crate::analysis::model::FileAnalysis;
use crate::analysis::pool::ParsePool;
use crate::analysis::resolution::{outline, Prepared};
use crate::analysis::store::{DonorGraph, IndexDb, OutlineReader, Row, StoredFile};
use crate::analysis::worker::WorkerError;

/// Rows written to the store per transaction during a build.
const WRITE_BATCH: usize = 512;

/// Outlines a full resolution keeps read at a time (about, in bytes).
const VIEW_BYTES: usize = 8 * 1024 * 1024;

/// A file a build may reuse, taken out when it is.
type Known = Mutex<Option<Loaded>>;

/// A file whose graph rows are to be resolved again: its path, its outline when at hand,
/// and whether it is new to the index.
pub(super) type Changed = (String, Option<Prepared>, bool);

/// How a build got a file.
enum Load {
    /// Size and mtime as known: nothing read.
    Reused,
    /// Parsed in the daemon (or by a one-shot child): the whole analysis at hand.
    Parsed(Arc<FileAnalysis>),
    /// Parsed straight into its row (by a worker, or on the build thread): nothing decoded.
    Encoded(Row),
}

/// What the parsing threads of a build found.
#[derive(Default)]
struct Parsed {
    /// Every file present, reused or (re)parsed.
    loaded: Vec<Loaded>,
    /// The files (re)parsed.
    changed: Vec<String>,
}

/// Most rounds one build makes while the tree keeps changing under it (issue 35: a worktree
/// indexed while `git worktree add` is still checking it out). Past this the last round's
/// files are installed and the watcher's updates bring in the rest.
const MAX_BUILD_ROUNDS: usize = 8;

impl RepoIndex {
    /// A whole build: walk, parse what changed, resolve, install, and again while the tree
    /// changed under the round (a round that parsed files ends with a second walk compared
    /// with what it installed); only then is the build complete. See
    /// [`RepoIndex::build_now`].
    pub(super) fn rebuild(&self) {
        for round in 1..=MAX_BUILD_ROUNDS {
            let Some(root) = self.canonical_root() else {
                *self.write() = State::default();
                break;
            };
            let parsed_any = self.build_round(&root);
            if !parsed_any || self.matches_tree(&root) {
                break;
            }
            tracing::info!(
                round,
                "the tree changed during the index build; building again"
            );
        }
        self.progress
            .finish(self.parse_count(), self.resident_bytes());
    }

    /// Whether the installed files are exactly the tree's supported files as they are now,
    /// each with the size and mtime it was read with.
    fn matches_tree(&self, root: &Path) -> bool {
        let walked = walk(root);
        let state = self.read();
        walked.files.len() == state.files.len()
            && walked.files.iter().all(|WalkedFile { rel, .. }| {
                state.files.get(rel).is_some_and(|entry| {
                    std::fs::metadata(root.join(rel))
                        .is_ok_and(|meta| unchanged(entry.size, entry.mtime, &meta))
                })
            })
    }

    /// One round of a build; whether it parsed any file.
    fn build_round(&self, root: &Path) -> bool {
        let root = root.to_path_buf();
        let started = Instant::now();
        let mut walked = self
            .db
            .tree()
            .and_then(|bytes| TreeRecord::decode(&bytes))
            .and_then(|record| record.unchanged(&root))
            .unwrap_or_else(|| recorded_walk(&root));
        if let Some(record) = walked.record.take() {
            self.db.set_tree(&record.encode());
        }
        // Largest first: the build ends on small files, both cores busy to the end.
        walked
            .files
            .sort_by_key(|file| std::cmp::Reverse(file.size));
        let go_modules = read_go_modules(&root, &walked.manifests);
        let known = self.known_files();
        let walk_time = started.elapsed();
        // The graph tables are complete until this build changes a row: the mark is cleared
        // first, so a build cut short resolves everything next time.
        let graph_was_complete = self.db.graph_complete();
        if graph_was_complete {
            self.db.write_with_graph(&[], &[], &[], Some(false));
        }
        let total_bytes = walked.files.iter().map(|file| file.size).sum();
        self.progress.start(walked.files.len(), total_bytes);
        let parsed = self.parse_all(&root, &walked.files, &known);
        let parse_time = started.elapsed();
        let removed = removed_files(&known, &parsed.loaded);
        let changed: Vec<Changed> = parsed
            .changed
            .into_iter()
            .map(|rel| {
                let is_new = !known.contains_key(&rel);
                (rel, None, is_new)
            })
            .collect();
        drop(known);
        let state = State {
            files: parsed
                .loaded
                .iter()
                .map(|l| (l.rel.clone(), l.entry()))
                .collect(),
            go_modules,
        };
        let donated = if graph_was_complete {
            None
        } else {
            self.db.donor().and_then(|donor| donor.graph())
        };
        let parsed_any = !changed.is_empty();
        let from_donor = donated.is_some_and(|graph| self.resolve_from_donor(&root, &state, graph));
        if !from_donor {
            self.resolve_build(&root, &state, changed, &removed, graph_was_complete);
        }
        *self.write() = state;
        tracing::info!(
            files = walked.files.len(),
            parses = self.parse_count(),
            walk_ms = walk_time.as_millis(),
            parse_ms = (parse_time - walk_time).as_millis(),
            resolve_ms = (started.elapsed() - parse_time).as_millis(),
            "index built"
        );
        parsed_any
    }

    /// Resolves the graph after a build: few changes re-resolve what they touch; many (or no
    /// complete graph in the store) resolve everything again. Marks the graph complete.
    fn resolve_build(
        &self,
        root: &Path,
        state: &State,
        changed: Vec<Changed>,
        removed: &[String],
        graph_was_complete: bool,
    ) {
        let touched = changed.len() + removed.len();
        if graph_was_complete && touched * 4 <= state.files.len() {
            self.update_links(state, changed, &[], removed);
            self.db.write_with_graph(&[], &[], &[], Some(true));
        } else {
            self.db.write(&[], removed);
            resolve_all(root, &self.db, &state.files, &state.go_modules);
        }
    }

    /// A first graph from the donor's (another worktree's index, see
    /// [`RepoIndex::with_donor`]): its rows copied, then what this worktree's differences
    /// touch resolved again, as after a change. `false` (nothing done) when the differences
    /// are more than a quarter of the files: everything is resolved then.
    fn resolve_from_donor(&self, root: &Path, state: &State, graph: DonorGraph) -> bool {
        let changed: Vec<Changed> = state
            .files
            .iter()
            .filter(|(rel, entry)| {
                graph
                    .files
                    .get(*rel)
                    .is_none_or(|hash| *hash != entry.key.map(|k| k.hash()))
            })
            .map(|(rel, _)| (rel.clone(), None, !graph.files.contains_key(rel)))
            .collect();
        let removed: Vec<String> = graph
            .files
            .keys()
            .filter(|rel| !state.files.contains_key(*rel))
            .cloned()
            .collect();
        if (changed.len() + removed.len()) * 4 > state.files.len() {
            return false;
        }
        self.db.copy_graph(&graph);
        drop(graph);
        tracing::debug!(
            root = %root.display(),
            changed = changed.len(),
            removed = removed.len(),
            "call graph from the donor"
        );
        self.update_links(state, changed, &[], &removed);
        self.db.write_with_graph(&[], &[], &[], Some(true));
        true
    }

    /// Loads every file of `files` on one thread per core (reusing what `known` has as on
    /// disk), while this thread writes the parsed rows and publishes progress.
    fn parse_all(
        &self,
        root: &Path,
        files: &[WalkedFile],
        known: &HashMap<String, Known>,
    ) -> Parsed {
        let next = AtomicUsize::new(0);
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, 8);
        let (rows_tx, rows_rx) = std::sync::mpsc::sync_channel::<Row>(64);
        let mut parsed = Parsed {
            loaded: Vec::with_capacity(files.len()),
            changed: Vec::new(),
        };
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    let rows_tx = rows_tx.clone();
                    let next = &next;
                    scope.spawn(move || {
                        let mut part = Parsed::default();
                        while let Some(file) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                            // The walk's metadata, or (from the record of a walk) read now.
                            let meta = file
                                .meta
                                .clone()
                                .or_else(|| std::fs::symlink_metadata(root.join(&file.rel)).ok());
                            let found = meta.and_then(|meta| {
                                self.load_for_build(root, &file.rel, file.language, &meta, known)
                            });
                            self.progress.file_done(file.size);
                            let Some((mut l, how)) = found else {
                                continue;
                            };
                            let reused = matches!(how, Load::Reused);
                            let row = match how {
                                Load::Reused => None,
                                Load::Encoded(row) => Some(row),
                                Load::Parsed(analysis) => self.row_of(&l, &analysis),
                            };
                            if !reused {
                                part.changed.push(l.rel.clone());
                            }
                            if let Some(row) = row {
                                // The writer is gone only if the build is unwinding.
                                let _ = rows_tx.send(row);
                            }
                            // Resolution reads the outline back from the store.
                            l.node = None;
                            part.loaded.push(l);
                        }
                        part
                    })
                })
                .collect();
            drop(rows_tx);
            self.write_rows(rows_rx);
            for handle in handles {
                match handle.join() {
                    Ok(part) => {
                        parsed.loaded.extend(part.loaded);
                        parsed.changed.extend(part.changed);
                    }
                    Err(_) => tracing::warn!("an index worker panicked; its files are missing"),
                }
            }
        });
        parsed
    }

    /// What a build may reuse without parsing: the files in memory, or on a fresh start the
    /// files stored in the store (read row by row: the stored outlines never pile up).
    fn known_files(&self) -> HashMap<String, Known> {
        let state = self.read();
        if state.files.is_empty() {
            drop(state);
            let mut known = HashMap::new();
            let donor = self.db.donor();
            self.db.load(|stored| {
                // A borrowed row whose content the donor no longer has is read again.
                let lent = |hash| donor.is_some_and(|d| d.has(stored.language, hash));
                if stored.borrowed && !stored.hash.is_some_and(lent) {
                    return;
                }
                if let Some(loaded) = reused(stored) {
                    known.insert(loaded.rel.clone(), Mutex::new(Some(loaded)));
                }
            });
            return known;
        }
        state
            .files
            .iter()
            .map(|(rel, e)| {
                let known = Loaded {
                    rel: rel.clone(),
                    size: e.size,
                    mtime: e.mtime,
                    key: e.key,
                    node: None,
                    pinned: e.pinned.clone(),
                };
                (rel.clone(), Mutex::new(Some(known)))
            })
            .collect()
    }

    /// Writes `rows` and deletes `removed` in the store, with the call graph rows they
    /// change: those of each of `changed` (files just (re)parsed, with their outline when at
    /// hand), of the files that resolved through one of them or through a removed file, and,
    /// when a file is new, of the files waiting for one; all resolved against `state`'s
    /// files, in one transaction.
    pub(super) fn update_links(
        &self,
        state: &State,
        changed: Vec<Changed>,
        rows: &[Row],
        removed: &[String],
    ) {
        let db = &self.db;
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
        let load = |file: &str| outline_of(&self.root, db, None, &state.files, file);
        let links: Vec<FileLinks> = redo
            .iter()
            .filter(|file| state.files.contains_key(*file))
            .map(|file| view.resolve(file, &load).unwrap_or_else(|| no_links(file)))
            .collect();
        db.write_with_graph(rows, removed, &links, None);
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
                        self.db.write(&batch, &[]);
                        batch.clear();
                        batch_bytes = 0;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
            self.progress.publish_if_due(self.parse_count());
        }
        self.db.write(&batch, &[]);
    }

    /// A file for the build: reused when its size and mtime are as known, else read and
    /// parsed (straight into a row: see [`RepoIndex::load_encoded`]); and how.
    fn load_for_build(
        &self,
        root: &Path,
        rel: &str,
        language: Language,
        meta: &Metadata,
        known: &HashMap<String, Known>,
    ) -> Option<(Loaded, Load)> {
        let real = root.join(rel);
        if !meta.is_file() {
            return None;
        }
        if let Some(slot) = known.get(rel) {
            let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
            if slot
                .as_ref()
                .is_some_and(|k| unchanged(k.size, k.mtime, meta))
            {
                return slot.take().map(|known| (known, Load::Reused));
            }
        }
        if let Some(encoded) = self.load_encoded(rel, language, &real, meta) {
            return Some(encoded);
        }
        let (loaded, analysis) = self.load(rel, language, &real, meta).ok()?;
        Some((loaded, Load::Parsed(analysis)))
    }

    /// A new or changed file straight into its row: copied from the donor when it has the
    /// same content; else parsed, a large source (see
    /// [`crate::analysis::worker::ParseWorker::takes`]) by a worker, whose encoded answer
    /// becomes the row as it came (the daemon decodes only the outline); a small one on this
    /// build thread, where a round trip to a worker would cost about what its parse costs,
    /// and whose parse tree is small. `None` when the content is in the parse cache, is not
    /// UTF-8 or too large, or no worker can be started for a large source: then
    /// [`RepoIndex::load`] does it.
    fn load_encoded(
        &self,
        rel: &str,
        language: Language,
        real: &Path,
        meta: &Metadata,
    ) -> Option<(Loaded, Load)> {
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
        let borrowed = self
            .db
            .donor()
            .is_some_and(|donor| donor.has(language, key.hash()));
        let row = if borrowed {
            Row::borrowed(rel, size, mtime, language, key.hash())
        } else {
            let (outline_bytes, analysis_bytes) = match pool {
                Some(pool) => self.parse_in_worker(pool, rel, language, &text)?,
                None => {
                    self.parses.fetch_add(1, Ordering::Relaxed);
                    let analysis = analyze_with_budget(language, &text, self.budget);
                    drop(text);
                    (
                        serde_json::to_vec(&outline(&analysis)).ok()?,
                        crate::analysis::encoding::encode(&analysis),
                    )
                }
            };
            Row {
                path: rel.to_owned(),
                size,
                mtime,
                language,
                hash: Some(key.hash()),
                outline: outline_bytes,
                analysis: analysis_bytes,
            }
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
                    crate::analysis::encoding::encode(&empty),
                ))
            }
        }
    }
}

/// The known files the build did not find again.
fn removed_files(known: &HashMap<String, Known>, loaded: &[Loaded]) -> Vec<String> {
    let present: HashSet<&str> = loaded.iter().map(|l| l.rel.as_str()).collect();
    known
        .keys()
        .filter(|rel| !present.contains(rel.as_str()))
        .cloned()
        .collect()
}

/// Resolves every file of `files` again into the store's graph tables (a cold build, or one
/// that found the tables incomplete), reading the outlines back a bounded window at a time,
/// and marks the graph complete. The sorted files are split in one contiguous run per core,
/// each resolved on its own thread with its own window (neighbours in the sorted list consult
/// the same outlines).
fn resolve_all(
    root: &Path,
    db: &IndexDb,
    files: &HashMap<String, Entry>,
    go_modules: &[(String, String)],
) {
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
        let load = |file: &str| outline_of(root, db, reader.as_ref(), files, file);
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

/// A file from the store as the build reuses it; `None` for a row without a hash.
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

/// The outline of an indexed file for resolution: from its pinned analysis (a file that was
/// not parsed), else read from the store; a row borrowed from a donor that no longer has its
/// content is parsed again from the file under `root`.
fn outline_of(
    root: &Path,
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
    match outline {
        Some(outline) => Some(Prepared::of(&outline)),
        None => outline_from_file(root, file, entry),
    }
}

/// The outline of `file` parsed from its text under `root`, when that text is still the
/// content `entry` indexed.
fn outline_from_file(root: &Path, file: &str, entry: &Entry) -> Option<Prepared> {
    let key = entry.key?;
    let text = std::fs::read_to_string(root.join(file)).ok()?;
    (ContentKey::new(key.language(), &text) == key).then(|| {
        Prepared::of(&outline(&analyze_with_budget(
            key.language(),
            &text,
            PARSE_BUDGET,
        )))
    })
}

/// The graph rows of a file whose calls resolve to nothing (they replace its old ones).
fn no_links(file: &str) -> FileLinks {
    FileLinks {
        file: file.to_owned(),
        ..FileLinks::default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    use super::super::testing::write;

    #[test]
    fn a_second_build_parses_only_what_changed_and_drops_what_went() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "a.py", "from b import g\ndef f():\n    g()\n");
        write(root, "b.py", "def g(): pass\n");
        write(root, "c.py", "def h(): pass\n");
        let index = RepoIndex::new(root.to_path_buf());
        index.build_now();
        assert_eq!(index.parse_count(), 3);
        assert_eq!(index.files(), ["a.py", "b.py", "c.py"]);
        index.build_now();
        assert_eq!(index.parse_count(), 3, "nothing changed: nothing parsed");
        write(root, "c.py", "def h2(): pass\n");
        std::fs::remove_file(root.join("b.py")).unwrap();
        index.build_now();
        assert_eq!(index.parse_count(), 4);
        assert_eq!(index.files(), ["a.py", "c.py"]);
        assert!(index.callees("a.py", "f").is_empty(), "its callee went");
    }

    /// The analysis outside the cache's bound is kept while its file is as it was, and
    /// dropped by the upkeep once the file has gone, whether or not anyone asks about it.
    #[test]
    fn the_analysis_of_a_deleted_large_file_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "big.py", "def f(a):\n    return a\ndef g(): pass\n");
        write(root, "small.py", "def h(): pass\n");
        let index = RepoIndex::new(root.to_path_buf()).with_cache_capacity(1);
        index.build_now();
        assert!(index.file("big.py").unwrap().is_some());
        assert_eq!(
            index.release_stale_analyses(),
            None,
            "its file is as it was"
        );
        std::fs::remove_file(root.join("big.py")).unwrap();
        assert!(
            index.release_stale_analyses().is_some(),
            "its file has gone: dropped"
        );
        assert_eq!(index.release_stale_analyses(), None);
        assert!(index.file("small.py").unwrap().is_some());
        std::fs::write(root.join("small.py"), "def h(): return 1\n").unwrap();
        assert!(
            index.release_stale_analyses().is_some(),
            "its file changed: dropped"
        );
    }

    #[test]
    fn a_store_on_disk_is_reused_by_the_next_index() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        write(&root, "a.py", "from b import g\ndef f():\n    g()\n");
        write(&root, "b.py", "def g(): pass\n");
        let db = dir.path().join("index.db");
        let first = RepoIndex::new(root.clone()).with_index_db(&db);
        first.build_now();
        assert_eq!(first.parse_count(), 2);
        drop(first);
        let second = RepoIndex::new(root).with_index_db(&db);
        second.build_now();
        assert_eq!(second.parse_count(), 0);
        let callers = second.callers("b.py", "g");
        assert_eq!(callers.len(), 1);
        assert_eq!(callers[0].to_symbol_path(), "a.py:f");
    }

    #[test]
    fn a_second_worktree_parses_only_its_differences() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let linked = dir.path().join("linked");
        for root in [&main, &linked] {
            write(root, "a.py", "from b import g\ndef f():\n    g()\n");
            write(root, "b.py", "def g(): pass\n");
            write(root, "c.py", "def h(): pass\n");
        }
        write(&linked, "c.py", "def h2(): pass\n");
        let main_db = dir.path().join("main.db");
        let first = RepoIndex::new(main).with_index_db(&main_db);
        first.build_now();
        assert_eq!(first.parse_count(), 3);
        let second = RepoIndex::new(linked)
            .with_index_db(&dir.path().join("linked.db"))
            .with_donor(&main_db);
        second.build_now();
        assert_eq!(second.parse_count(), 1, "only the file that differs");
        assert_eq!(second.callers("b.py", "g")[0].to_symbol_path(), "a.py:f");
        let c = second.file("c.py").unwrap().unwrap();
        assert_eq!(c.symbols[0].qualified_name, "h2");
        // Content the donor has, written later: not parsed either.
        write(dir.path(), "linked/d.py", "def h(): pass\n");
        assert_eq!(second.file("d.py").unwrap().unwrap().symbols[0].name, "h");
        assert_eq!(second.parse_count(), 1);
    }

    /// (rows, rows with their own analysis) of the index database at `path`.
    fn rows_in(path: &Path) -> (i64, i64) {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row(
            "SELECT count(*), coalesce(sum(length(analysis) > 0), 0) FROM files",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    }

    #[test]
    fn a_second_worktree_stores_only_its_differences_and_starts_from_the_donor_graph() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let linked = dir.path().join("linked");
        for root in [&main, &linked] {
            write(root, "a.py", "from b import g\ndef f():\n    g()\n");
            write(root, "b.py", "def g(): pass\n");
            write(root, "c.py", "from b import g\ndef h():\n    pass\n");
            write(root, "d.py", "def k(): pass\n");
        }
        // The linked worktree's c.py now calls g too.
        write(&linked, "c.py", "from b import g\ndef h():\n    g()\n");
        let main_db = dir.path().join("main.db");
        let first = RepoIndex::new(main).with_index_db(&main_db);
        first.build_now();
        let linked_db = dir.path().join("linked.db");
        let second = RepoIndex::new(linked.clone())
            .with_donor(&main_db)
            .with_index_db(&linked_db);
        second.build_now();
        assert_eq!(second.parse_count(), 1, "only the file that differs");
        assert_eq!(
            rows_in(&linked_db),
            (4, 1),
            "one row of its own, three borrowed"
        );
        let mut callers: Vec<String> = second
            .callers("b.py", "g")
            .iter()
            .map(|c| c.to_symbol_path())
            .collect();
        callers.sort();
        assert_eq!(
            callers,
            ["a.py:f", "c.py:h"],
            "the donor's graph plus its change"
        );
        assert_eq!(
            first.callers("b.py", "g").len(),
            1,
            "the donor is unchanged"
        );
        let a = second.file("a.py").unwrap().unwrap();
        assert_eq!(a.symbols[0].qualified_name, "f", "read from the donor");
        // The main worktree changes a.py: the linked worktree's borrowed row loses its
        // content, and the next start parses that file again from its own text.
        write(dir.path(), "main/a.py", "def other(): pass\n");
        first.build_now();
        drop(second);
        let again = RepoIndex::new(linked)
            .with_donor(&main_db)
            .with_index_db(&linked_db);
        again.build_now();
        assert_eq!(again.parse_count(), 1, "a.py, no longer lent");
        assert_eq!(rows_in(&linked_db), (4, 2));
        assert_eq!(again.callers("b.py", "g").len(), 2);
        assert_eq!(again.file("a.py").unwrap().unwrap().symbols[0].name, "f");
    }

    #[test]
    fn a_borrowed_outline_the_donor_lost_is_parsed_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let linked = dir.path().join("linked");
        for root in [&main, &linked] {
            write(root, "a.py", "from b import g\ndef f():\n    g()\n");
            write(root, "b.py", "def g(): pass\n");
        }
        let main_db = dir.path().join("main.db");
        let first = RepoIndex::new(main).with_index_db(&main_db);
        first.build_now();
        let second = RepoIndex::new(linked.clone())
            .with_donor(&main_db)
            .with_index_db(&dir.path().join("linked.db"));
        second.build_now();
        // While both run, the main worktree's b.py changes (the donor drops its content),
        // then the linked worktree's a.py changes: resolving it reads b.py's outline.
        write(dir.path(), "main/b.py", "def other(): pass\n");
        first.build_now();
        write(&linked, "a.py", "from b import g\ndef f2():\n    g()\n");
        second.file("a.py").unwrap();
        let callers = second.callers("b.py", "g");
        assert_eq!(callers.len(), 1);
        assert_eq!(callers[0].to_symbol_path(), "a.py:f2");
    }

    #[test]
    fn unparsable_files_are_indexed_without_a_row() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("bad.py"), [0xff, 0xfe, 0x00]).unwrap();
        write(root, "ok.py", "def f(): pass\n");
        let index = RepoIndex::new(root.to_path_buf());
        index.build_now();
        assert_eq!(index.files(), ["bad.py", "ok.py"]);
        let bad = index.file("bad.py").unwrap().unwrap();
        assert!(bad.symbols.is_empty());
        assert!(!bad.diagnostics.is_empty());
    }
}
