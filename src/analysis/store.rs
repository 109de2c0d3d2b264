//! The index's one store: `.wit/index.db`, a SQLite file of its own (WAL, mode 0600), apart
//! from the coordination state so it can be deleted at any time and is rebuilt from the
//! sources; or the same schema in an in-memory SQLite database ([`IndexDb::in_memory`]) for
//! an index without a file (tests, tools). Either way it holds the files' facts, their
//! analyses and the call graph: there is no second graph.
//!
//! ```text
//! meta(key TEXT PRIMARY KEY, value TEXT)           -- 'version': see `version_key`
//! files(path     TEXT PRIMARY KEY,                 -- relative, '/'-separated
//!       size     INTEGER NOT NULL,                 -- bytes on disk when indexed
//!       mtime_ns INTEGER,                          -- mtime when indexed (NULL: unknown)
//!       language TEXT NOT NULL,
//!       hash     BLOB,                             -- XXH3-128 of the content (NULL: not parsed)
//!       outline  BLOB NOT NULL,                    -- JSON: what the call graph needs
//!       analysis BLOB NOT NULL)                    -- JSON: the whole FileAnalysis; both
//!                                                  -- empty: the donor's, by hash (below)
//! links(callee_file TEXT, caller_file TEXT,         -- the call graph: one row per pair of
//!       pairs BLOB NOT NULL,                       -- files, the (caller, callee) names
//!       PRIMARY KEY (callee_file, caller_file))    -- (`links::encode_pairs`); indexed
//!                                                  -- both ways (callers, callees)
//! deps(imported TEXT, file TEXT,                   -- `file`'s calls resolved through
//!      PRIMARY KEY (imported, file))               -- `imported` (indexed both ways)
//! waiting(file TEXT PRIMARY KEY)                   -- files with a call a new file could
//!                                                  -- resolve
//! ```
//!
//! `meta` also holds `graph = complete` once `links`, `deps` and `waiting` describe every file
//! of `files`; a build that finds it missing resolves every file again (`links`).
//!
//! The *outline* is a file's analysis cut to what cross-file resolution reads: symbol names,
//! qualified names and kinds, the default export and the distinct resolvable call targets per
//! caller (`resolution::outline`), read back when a file's calls are resolved again. A warm start
//! reads only the files' facts; a file's whole analysis (ranges, signatures, diagnostics) is
//! read when a request asks about that file.
//!
//! A linked worktree's index has a *donor*, the main worktree's index ([`Donor`]): a row whose
//! content the donor has keeps only the file's facts (empty outline and analysis, read from
//! the donor by hash), and a first build starts from the donor's call graph, resolving again
//! only what its differences touch; so each further worktree costs its facts, its graph and
//! its differences, not a second copy of every analysis (docs/protocol.md 14.2). Content the
//! donor no longer has (the main worktree changed since) is parsed again from the worktree's
//! own file when it is asked for.
//!
//! There are no migrations: when the version key differs (schema, extractor, grammars,
//! queries) the tables are emptied and the index is rebuilt. A file SQLite cannot read is
//! deleted and created again, with one warning; no failure here ever fails a request.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension};

use super::answers::Answers;
use super::language::Language;
use super::links::{decode_pairs, FileLinks};
use super::model::FileAnalysis;
use super::resolution::SymbolRef;

/// The kept answers of the graph tables, one cache per kind.
#[derive(Debug, Default)]
struct GraphAnswers {
    callers: Answers<SymbolRef>,
    callees: Answers<SymbolRef>,
    imports: Answers<String>,
}
/// The layout of the tables above; bump on any change.
const SCHEMA_VERSION: u32 = 6;

/// The meaning of the stored analyses; bump whenever extraction changes what it stores for
/// the same source and grammar (queries and grammars are in the key already).
pub const EXTRACTOR_VERSION: u32 = 1;

/// Why the index database could not be used (the index then keeps it in memory).
#[derive(Debug, thiserror::Error)]
pub enum IndexDbError {
    /// SQLite failed.
    #[error("index database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The file could not be created or its mode set.
    #[error("index database file: {0}")]
    File(#[from] std::io::Error),
}

/// One file's row.
#[derive(Debug, Clone)]
pub(crate) struct StoredFile {
    /// Relative path.
    pub path: String,
    /// Size on disk when indexed.
    pub size: u64,
    /// Modification time when indexed.
    pub mtime: Option<SystemTime>,
    /// The language it was indexed as.
    pub language: Language,
    /// Content length and hash (`None`: not parsed, too large or not UTF-8).
    pub hash: Option<u128>,
    /// Whether its outline and analysis are the donor's (an empty row).
    pub borrowed: bool,
}

/// A row to write: the file's facts, its outline and its whole analysis, encoded (both empty:
/// the donor's, see [`Row::borrowed`]).
pub(crate) struct Row {
    pub path: String,
    pub size: u64,
    pub mtime: Option<SystemTime>,
    pub language: Language,
    pub hash: Option<u128>,
    pub outline: Vec<u8>,
    pub analysis: Vec<u8>,
}

impl Row {
    /// Encodes a file's outline and analysis.
    pub(crate) fn new(
        path: &str,
        size: u64,
        mtime: Option<SystemTime>,
        hash: Option<u128>,
        outline: &FileAnalysis,
        analysis: &FileAnalysis,
    ) -> Option<Row> {
        Some(Row {
            path: path.to_owned(),
            size,
            mtime,
            language: analysis.language.or(outline.language)?,
            hash,
            outline: serde_json::to_vec(outline).ok()?,
            analysis: super::encoding::encode(analysis),
        })
    }

    /// The row of content the donor has: the file's facts alone.
    pub(crate) fn borrowed(
        path: &str,
        size: u64,
        mtime: Option<SystemTime>,
        language: Language,
        hash: u128,
    ) -> Row {
        Row {
            path: path.to_owned(),
            size,
            mtime,
            language,
            hash: Some(hash),
            outline: Vec::new(),
            analysis: Vec::new(),
        }
    }
}

/// The open index database. Every method takes `&self`; one connection behind a mutex.
pub(crate) struct IndexDb {
    conn: Mutex<Connection>,
    /// The file; `None` for an in-memory database.
    path: Option<PathBuf>,
    /// Bumped after every write (see `answers`).
    generation: AtomicU64,
    /// Answers of the current generation: callers, callees, imported files.
    answers: Mutex<GraphAnswers>,
    /// The index whose rows an empty row borrows (see the module docs).
    donor: Option<Donor>,
}

impl std::fmt::Debug for IndexDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexDb")
            .field("path", &self.shown())
            .finish()
    }
}

impl IndexDb {
    /// Opens (or creates) the index at `path`. A file of another version is emptied; a file
    /// SQLite cannot read is replaced, with a warning.
    pub(crate) fn open(path: &Path) -> Result<IndexDb, IndexDbError> {
        match Self::open_checked(path) {
            Ok(db) => Ok(db),
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "index database unreadable; rebuilding it");
                remove_files(path);
                Self::open_checked(path)
            }
        }
    }

    /// The same schema in memory: nothing survives the process, nothing touches the disk.
    pub(crate) fn in_memory() -> Result<IndexDb, IndexDbError> {
        let conn = Connection::open_in_memory()?;
        Self::with_schema(conn, None)
    }

    fn open_checked(path: &Path) -> Result<IndexDb, IndexDbError> {
        prepare_file(path)?;
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        Self::with_schema(conn, Some(path.to_owned()))
    }

    /// Creates the tables on `conn` when missing and empties them when the stored version
    /// differs from this build's.
    fn with_schema(conn: Connection, path: Option<PathBuf>) -> Result<IndexDb, IndexDbError> {
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
        )?;
        let want = version_key();
        let have: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'version'", [], |r| {
                r.get(0)
            })
            .optional()?;
        let rebuild = have.as_deref() != Some(want.as_str());
        if rebuild {
            if have.is_some() {
                tracing::info!("index version changed; rebuilding the index");
            }
            // Dropped, not emptied: a layout change (issue 32.4: `files` was a WITHOUT ROWID
            // table) needs the tables made again.
            conn.execute_batch(
                "BEGIN; DROP TABLE IF EXISTS files; DELETE FROM meta; DROP TABLE IF EXISTS links;
                 DROP TABLE IF EXISTS deps; DROP TABLE IF EXISTS waiting; COMMIT;",
            )?;
        }
        // `files` is a rowid table: its rows carry blobs of up to megabytes, and a WITHOUT
        // ROWID table keeps them in the primary key's b-tree, where every key comparison of a
        // lookup or an insert read a neighbouring row's whole payload, overflow pages and all
        // (perf: 40 % of a cold build in `sqlite3BtreeIndexMoveto` → `accessPayload`).
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS files (
                 path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER,
                 language TEXT NOT NULL, hash BLOB, outline BLOB NOT NULL,
                 analysis BLOB NOT NULL);
             CREATE INDEX IF NOT EXISTS files_by_hash ON files (hash);
             CREATE TABLE IF NOT EXISTS links (
                 callee_file TEXT NOT NULL, caller_file TEXT NOT NULL, pairs BLOB NOT NULL,
                 PRIMARY KEY (callee_file, caller_file)) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS links_by_caller ON links (caller_file);
             CREATE TABLE IF NOT EXISTS deps (
                 imported TEXT NOT NULL, file TEXT NOT NULL,
                 PRIMARY KEY (imported, file)) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS deps_by_file ON deps (file);
             CREATE TABLE IF NOT EXISTS waiting (file TEXT PRIMARY KEY) WITHOUT ROWID;",
        )?;
        if rebuild {
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('version', ?1)",
                params![want],
            )?;
        }
        Ok(IndexDb {
            conn: Mutex::new(conn),
            path,
            generation: AtomicU64::new(0),
            answers: Mutex::new(GraphAnswers::default()),
            donor: None,
        })
    }

    /// Borrows rows from `donor` from now on (see the module docs).
    pub(crate) fn set_donor(&mut self, donor: Option<Donor>) {
        self.donor = donor;
    }

    /// Gives up the donor (to hand it to the store replacing this one).
    pub(crate) fn take_donor(&mut self) -> Option<Donor> {
        self.donor.take()
    }

    /// The donor, if any.
    pub(crate) fn donor(&self) -> Option<&Donor> {
        self.donor.as_ref()
    }

    /// Hands every stored file's facts to `each`, row by row. A read failure (a file corrupted since it was opened) empties
    /// the index, with a warning: everything is parsed again (rows handed over before the
    /// failure are still true files).
    pub(crate) fn load(&self, mut each: impl FnMut(StoredFile)) {
        if let Err(error) = self.try_load(&mut each) {
            tracing::warn!(path = %self.shown(), %error, "index database unreadable; rebuilding it");
            self.reset();
        }
    }

    fn try_load(&self, each: &mut impl FnMut(StoredFile)) -> rusqlite::Result<()> {
        let conn = self.conn();
        let mut statement = conn.prepare(
            "SELECT path, size, mtime_ns, language, hash, length(outline) = 0 FROM files",
        )?;
        let rows = statement.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<Vec<u8>>>(4)?,
                r.get::<_, bool>(5)?,
            ))
        })?;
        for row in rows {
            let (path, size, mtime, language, hash, borrowed) = row?;
            // A row that does not decode is dropped: its file is parsed again.
            let Some(language) = Language::from_name(&language) else {
                continue;
            };
            each(StoredFile {
                path,
                size: u64::try_from(size).unwrap_or(0),
                mtime: mtime.and_then(from_nanos),
                language,
                hash: hash.as_deref().and_then(hash_from_bytes),
                borrowed,
            });
        }
        Ok(())
    }

    /// The whole stored analysis of `path` when its stored content hash is `hash` (a
    /// borrowed row's from the donor; `None` when the donor no longer has it).
    pub(crate) fn analysis(&self, path: &str, hash: u128) -> Option<FileAnalysis> {
        let row: Option<(Vec<u8>, String)> = self
            .conn()
            .query_row(
                "SELECT analysis, language FROM files WHERE path = ?1 AND hash = ?2",
                params![path, hash.to_le_bytes().as_slice()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .unwrap_or_else(|error| {
                tracing::debug!(path, %error, "index row not read");
                None
            });
        let (mut bytes, language) = row?;
        if bytes.is_empty() {
            let language = Language::from_name(&language)?;
            bytes = self
                .donor
                .as_ref()?
                .column(Column::Analysis, language, hash)?;
        }
        super::encoding::decode(&bytes).ok()
    }

    /// The stored outline of `path` (what resolution reads), decoded.
    pub(crate) fn outline(&self, path: &str) -> Option<FileAnalysis> {
        read_outline(&self.conn(), self.donor.as_ref(), path)
    }

    /// A read-only connection of its own for reading outlines (and one to the donor):
    /// resolution threads read without waiting for each other or for the writer (WAL).
    /// `None` in memory or when it cannot be opened (then [`IndexDb::outline`] serves).
    pub(crate) fn reader(&self) -> Option<OutlineReader> {
        use rusqlite::OpenFlags;
        let conn = Connection::open_with_flags(
            self.path.as_ref()?,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .and_then(|conn| conn.busy_timeout(Duration::from_secs(5)).map(|()| conn));
        match conn {
            Ok(conn) => Some(OutlineReader {
                conn,
                donor: self.donor.as_ref().and_then(Donor::reopen),
            }),
            Err(error) => {
                tracing::debug!(%error, "no second connection to the index database");
                None
            }
        }
    }

    /// Whether the call graph tables describe every stored file (see the module docs).
    pub(crate) fn graph_complete(&self) -> bool {
        self.conn()
            .query_row("SELECT 1 FROM meta WHERE key = 'graph'", [], |_| Ok(()))
            .optional()
            .ok()
            .flatten()
            .is_some()
    }

    /// The record of the last walk of the tree (`index::walk::TreeRecord`, encoded), if any.
    pub(crate) fn tree(&self) -> Option<Vec<u8>> {
        self.conn()
            .query_row("SELECT value FROM meta WHERE key = 'tree'", [], |r| {
                r.get::<_, Vec<u8>>(0)
            })
            .optional()
            .ok()
            .flatten()
    }

    /// Keeps `record` as the record of the last walk of the tree (a failure is logged: the
    /// next start walks the tree).
    pub(crate) fn set_tree(&self, record: &[u8]) {
        let written = self.conn().execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('tree', ?1)",
            params![record],
        );
        if let Err(error) = written {
            tracing::debug!(path = %self.shown(), %error, "walk of the tree not recorded");
        }
    }

    /// The callers of `name` in `file`, from `links` (unsorted, possibly repeated), or as
    /// answered since the last write (`answers`).
    pub(crate) fn callers(&self, file: &str, name: &str) -> Vec<SymbolRef> {
        // Read before the query: a write meanwhile makes the answer stale on arrival.
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(kept) = self.answers().callers.get(generation, file, name) {
            return kept;
        }
        let callers = self.linked(
            "SELECT caller_file, pairs FROM links WHERE callee_file = ?1",
            file,
            name,
            Side::Callers,
        );
        self.answers().callers.put(generation, file, name, &callers);
        callers
    }

    /// Starts a new generation: answers read before are no longer served. Called after
    /// every write, whether or not it succeeded.
    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    fn answers(&self) -> MutexGuard<'_, GraphAnswers> {
        self.answers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What `name` in `file` calls, from `links` (unsorted, possibly repeated).
    pub(crate) fn callees(&self, file: &str, name: &str) -> Vec<SymbolRef> {
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(kept) = self.answers().callees.get(generation, file, name) {
            return kept;
        }
        let callees = self.linked(
            "SELECT callee_file, pairs FROM links WHERE caller_file = ?1",
            file,
            name,
            Side::Callees,
        );
        self.answers().callees.put(generation, file, name, &callees);
        callees
    }

    /// The symbols on the `side` of `name` in the rows `sql` selects for `file` ((other
    /// file, pairs)). A read failure answers nothing (logged).
    fn linked(&self, sql: &str, file: &str, name: &str, side: Side) -> Vec<SymbolRef> {
        let read = || -> rusqlite::Result<Vec<(String, Vec<u8>)>> {
            let conn = self.conn();
            let mut statement = conn.prepare_cached(sql)?;
            let rows = statement.query_map(params![file], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        };
        let rows = read().unwrap_or_else(|error| {
            tracing::warn!(file, %error, "call graph not read");
            Vec::new()
        });
        let mut out = Vec::new();
        for (other, pairs) in &rows {
            for (caller, callee) in decode_pairs(pairs) {
                let found = match side {
                    Side::Callers => (callee == name).then_some(caller),
                    Side::Callees => (caller == name).then_some(callee),
                };
                if let Some(found) = found {
                    out.push(SymbolRef {
                        file: other.clone(),
                        qualified_name: found.to_owned(),
                    });
                }
            }
        }
        out
    }

    /// The files `file`'s calls resolved through, sorted.
    pub(crate) fn imported_files(&self, file: &str) -> Vec<String> {
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(kept) = self.answers().imports.get(generation, file, "") {
            return kept;
        }
        let imported = self.strings(
            "SELECT imported FROM deps WHERE file = ?1 ORDER BY imported",
            file,
        );
        self.answers().imports.put(generation, file, "", &imported);
        imported
    }

    /// The files whose calls resolved through `file`, sorted.
    pub(crate) fn importers(&self, file: &str) -> Vec<String> {
        self.strings(
            "SELECT file FROM deps WHERE imported = ?1 ORDER BY file",
            file,
        )
    }

    /// The files with a call a new file could resolve, sorted.
    pub(crate) fn waiting(&self) -> Vec<String> {
        self.strings("SELECT file FROM waiting WHERE ?1 = ?1 ORDER BY file", "")
    }

    fn strings(&self, sql: &str, arg: &str) -> Vec<String> {
        let read = || -> rusqlite::Result<Vec<String>> {
            let conn = self.conn();
            let mut statement = conn.prepare_cached(sql)?;
            let rows = statement.query_map(params![arg], |r| r.get(0))?;
            rows.collect()
        };
        read().unwrap_or_else(|error| {
            tracing::warn!(%error, "call graph not read");
            Vec::new()
        })
    }

    /// Writes `rows` and deletes `removed` in one transaction. A failure is logged and the
    /// index goes on in memory (the next start parses those files again).
    pub(crate) fn write(&self, rows: &[Row], removed: &[String]) {
        self.write_with_graph(rows, removed, &[], None);
    }

    /// As [`IndexDb::write`], in the same transaction replacing the call graph rows of each
    /// of `links`' files (a removed file's go too), and setting (`Some(true)`) or clearing
    /// (`Some(false)`) the `graph = complete` mark.
    pub(crate) fn write_with_graph(
        &self,
        rows: &[Row],
        removed: &[String],
        links: &[FileLinks],
        complete: Option<bool>,
    ) {
        if rows.is_empty() && removed.is_empty() && links.is_empty() && complete.is_none() {
            return;
        }
        let written = self.try_write_graph(rows, removed, links, complete, true);
        self.changed();
        if let Err(error) = written {
            tracing::warn!(path = %self.shown(), %error, "index database not updated");
        }
    }

    /// Adds the call graph rows of `links`, whose files have none yet (the tables were just
    /// emptied by [`IndexDb::clear_graph`]): as [`IndexDb::write_with_graph`] without first
    /// deleting each file's old rows.
    pub(crate) fn insert_graph(&self, links: &[FileLinks]) {
        if links.is_empty() {
            return;
        }
        let written = self.try_write_graph(&[], &[], links, None, false);
        self.changed();
        if let Err(error) = written {
            tracing::warn!(path = %self.shown(), %error, "index database not updated");
        }
    }

    /// Replaces the call graph tables with `graph` (the donor's), in one transaction. The
    /// `graph = complete` mark stays unset: the caller sets it once the rows of its own
    /// differences are resolved (a build cut short in between resolves everything next time).
    pub(crate) fn copy_graph(&self, graph: &DonorGraph) {
        let copied = self.try_copy_graph(graph);
        self.changed();
        if let Err(error) = copied {
            tracing::warn!(path = %self.shown(), %error, "the donor's call graph not copied");
            self.clear_graph();
        }
    }

    /// The transaction of [`IndexDb::copy_graph`].
    fn try_copy_graph(&self, graph: &DonorGraph) -> rusqlite::Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute_batch("DELETE FROM links; DELETE FROM deps; DELETE FROM waiting;")?;
        {
            let mut link = tx.prepare_cached(
                "INSERT INTO links (callee_file, caller_file, pairs) VALUES (?1, ?2, ?3)",
            )?;
            for (callee, caller, pairs) in &graph.links {
                link.execute(params![callee, caller, pairs])?;
            }
            let mut dep = tx.prepare_cached("INSERT INTO deps (imported, file) VALUES (?1, ?2)")?;
            for (imported, file) in &graph.deps {
                dep.execute(params![imported, file])?;
            }
            let mut wait = tx.prepare_cached("INSERT INTO waiting (file) VALUES (?1)")?;
            for file in &graph.waiting {
                wait.execute(params![file])?;
            }
        }
        tx.commit()
    }

    /// Empties the call graph tables and clears the mark (a full resolution follows).
    pub(crate) fn clear_graph(&self) {
        let cleared = self.conn().execute_batch(
            "BEGIN; DELETE FROM links; DELETE FROM deps; DELETE FROM waiting;
             DELETE FROM meta WHERE key = 'graph'; COMMIT;",
        );
        self.changed();
        if let Err(error) = cleared {
            tracing::warn!(path = %self.shown(), %error, "call graph not cleared");
        }
    }

    /// The transaction of [`IndexDb::write_with_graph`]; `clear`: delete the old graph rows
    /// of `links`' files first.
    fn try_write_graph(
        &self,
        rows: &[Row],
        removed: &[String],
        links: &[FileLinks],
        complete: Option<bool>,
        clear: bool,
    ) -> rusqlite::Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR REPLACE INTO files (path, size, mtime_ns, language, hash, outline, analysis)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for row in rows {
                insert.execute(params![
                    row.path,
                    i64::try_from(row.size).unwrap_or(i64::MAX),
                    row.mtime.and_then(to_nanos),
                    row.language.name(),
                    row.hash.map(|h| h.to_le_bytes().to_vec()),
                    row.outline,
                    row.analysis,
                ])?;
            }
            let mut delete = tx.prepare_cached("DELETE FROM files WHERE path = ?1")?;
            for path in removed {
                delete.execute(params![path])?;
            }
            let mut clearing = [
                tx.prepare_cached("DELETE FROM links WHERE caller_file = ?1")?,
                tx.prepare_cached("DELETE FROM deps WHERE file = ?1")?,
                tx.prepare_cached("DELETE FROM waiting WHERE file = ?1")?,
            ];
            let cleared = links.iter().map(|l| &l.file).filter(|_| clear);
            for file in removed.iter().chain(cleared) {
                for statement in &mut clearing {
                    statement.execute(params![file])?;
                }
            }
            let mut link = tx.prepare_cached(
                "INSERT OR REPLACE INTO links (callee_file, caller_file, pairs) VALUES (?1, ?2, ?3)",
            )?;
            let mut dep =
                tx.prepare_cached("INSERT OR IGNORE INTO deps (imported, file) VALUES (?1, ?2)")?;
            let mut wait = tx.prepare_cached("INSERT OR IGNORE INTO waiting (file) VALUES (?1)")?;
            for file in links {
                for (callee_file, pairs) in &file.links {
                    link.execute(params![callee_file, file.file, pairs])?;
                }
                for imported in &file.imported {
                    dep.execute(params![imported, file.file])?;
                }
                if file.waiting {
                    wait.execute(params![file.file])?;
                }
            }
        }
        match complete {
            Some(true) => {
                tx.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('graph', 'complete')",
                    [],
                )?;
            }
            Some(false) => {
                tx.execute("DELETE FROM meta WHERE key = 'graph'", [])?;
            }
            None => {}
        }
        tx.commit()
    }

    /// Empties the index (after a read failure); a file that cannot even be emptied is
    /// deleted and created again.
    fn reset(&self) {
        let mut conn = self.conn();
        self.changed();
        let emptied = conn.execute_batch(
            "DELETE FROM files; DELETE FROM links; DELETE FROM deps; DELETE FROM waiting;
             DELETE FROM meta WHERE key = 'graph';",
        );
        let Some(path) = self.path.as_deref().filter(|_| emptied.is_err()) else {
            return;
        };
        if let Ok(placeholder) = Connection::open_in_memory() {
            // Closes the broken file before it is deleted.
            drop(std::mem::replace(&mut *conn, placeholder));
        }
        remove_files(path);
        match Self::open_checked(path) {
            Ok(db) => *conn = db.conn.into_inner().unwrap_or_else(|e| e.into_inner()),
            Err(error) => tracing::warn!(%error, "index database cannot be recreated"),
        }
    }

    /// The file as logs name it.
    fn shown(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string())
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Another worktree's index database, read for analyses by content (docs/protocol.md 14.2):
/// content that index parsed is not parsed again, its row is copied as it is.
pub(crate) struct Donor {
    conn: Mutex<Connection>,
    path: PathBuf,
}

/// The donor's call graph as it was when read, with the content hash of each of its files.
#[derive(Debug, Default)]
pub(crate) struct DonorGraph {
    /// Each file's content hash (`None`: not parsed) by path.
    pub files: std::collections::HashMap<String, Option<u128>>,
    /// `(callee_file, caller_file, pairs)`.
    pub links: Vec<(String, String, Vec<u8>)>,
    /// `(imported, file)`.
    pub deps: Vec<(String, String)>,
    /// Waiting files.
    pub waiting: Vec<String>,
}

impl std::fmt::Debug for Donor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Donor").finish_non_exhaustive()
    }
}

impl Donor {
    /// A read-only connection to the index database at `path`; `None` when there is none
    /// of this version (then everything is parsed).
    pub(crate) fn open(path: &Path) -> Option<Donor> {
        use rusqlite::OpenFlags;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .ok()?;
        conn.busy_timeout(Duration::from_secs(5)).ok()?;
        let version: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'version'", [], |r| {
                r.get(0)
            })
            .optional()
            .ok()?;
        (version? == version_key()).then(|| Donor {
            conn: Mutex::new(conn),
            path: path.to_owned(),
        })
    }

    /// Another connection to the same database (for a thread of its own).
    pub(crate) fn reopen(&self) -> Option<Donor> {
        Donor::open(&self.path)
    }

    /// One encoded column of the donor's row of content hashed `hash` as `language`.
    pub(crate) fn column(&self, column: Column, language: Language, hash: u128) -> Option<Vec<u8>> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let sql = match column {
            Column::Outline => {
                "SELECT outline FROM files
                 WHERE hash = ?1 AND language = ?2 AND length(outline) > 0 LIMIT 1"
            }
            Column::Analysis => {
                "SELECT analysis FROM files
                 WHERE hash = ?1 AND language = ?2 AND length(outline) > 0 LIMIT 1"
            }
        };
        let read = || -> rusqlite::Result<Option<Vec<u8>>> {
            conn.prepare_cached(sql)?
                .query_row(
                    params![hash.to_le_bytes().as_slice(), language.name()],
                    |r| r.get(0),
                )
                .optional()
        };
        read().unwrap_or_else(|error| {
            tracing::debug!(%error, "donor index not read");
            None
        })
    }

    /// Whether the donor has a row of content hashed `hash` as `language`.
    pub(crate) fn has(&self, language: Language, hash: u128) -> bool {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let read = || -> rusqlite::Result<bool> {
            conn.prepare_cached(
                "SELECT 1 FROM files WHERE hash = ?1 AND language = ?2 AND length(outline) > 0 LIMIT 1",
            )?
            .exists(params![hash.to_le_bytes().as_slice(), language.name()])
        };
        read().unwrap_or(false)
    }

    /// The donor's call graph with its files' hashes, read in one transaction; `None` when
    /// it is not complete (or cannot be read).
    pub(crate) fn graph(&self) -> Option<DonorGraph> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut read = || -> rusqlite::Result<Option<DonorGraph>> {
            let tx = conn.transaction()?;
            let complete = tx
                .query_row("SELECT 1 FROM meta WHERE key = 'graph'", [], |_| Ok(()))
                .optional()?
                .is_some();
            if !complete {
                return Ok(None);
            }
            let mut graph = DonorGraph::default();
            {
                let mut files = tx.prepare("SELECT path, hash FROM files")?;
                let rows = files.query_map([], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, Option<Vec<u8>>>(1)?))
                })?;
                for row in rows {
                    let (path, hash) = row?;
                    graph
                        .files
                        .insert(path, hash.as_deref().and_then(hash_from_bytes));
                }
                let mut links = tx.prepare("SELECT callee_file, caller_file, pairs FROM links")?;
                graph.links = links
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                let mut deps = tx.prepare("SELECT imported, file FROM deps")?;
                graph.deps = deps
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                let mut waiting = tx.prepare("SELECT file FROM waiting")?;
                graph.waiting = waiting
                    .query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
            }
            tx.commit()?;
            Ok(Some(graph))
        };
        read().unwrap_or_else(|error| {
            tracing::debug!(%error, "donor's call graph not read");
            None
        })
    }

    /// The encoded outline and analysis of content hashed `hash` as `language`, when the
    /// donor has parsed such content (under any path).
    pub(crate) fn encoded(&self, language: Language, hash: u128) -> Option<(Vec<u8>, Vec<u8>)> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let read = || -> rusqlite::Result<Option<(Vec<u8>, Vec<u8>)>> {
            conn.prepare_cached(
                "SELECT outline, analysis FROM files
                 WHERE hash = ?1 AND language = ?2 AND length(outline) > 0 LIMIT 1",
            )?
            .query_row(
                params![hash.to_le_bytes().as_slice(), language.name()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        };
        read().unwrap_or_else(|error| {
            tracing::debug!(%error, "donor index not read");
            None
        })
    }
}

/// A read-only connection to the index database for one resolution thread
/// ([`IndexDb::reader`]).
pub(crate) struct OutlineReader {
    conn: Connection,
    donor: Option<Donor>,
}

impl OutlineReader {
    /// As [`IndexDb::outline`].
    pub(crate) fn outline(&self, path: &str) -> Option<FileAnalysis> {
        read_outline(&self.conn, self.donor.as_ref(), path)
    }
}

/// The stored outline of `path` through `conn` (a borrowed row's from `donor`), decoded; a
/// read failure is logged.
fn read_outline(conn: &Connection, donor: Option<&Donor>, path: &str) -> Option<FileAnalysis> {
    /// The outline, the content hash and the language of a row.
    type OutlineRow = (Vec<u8>, Option<Vec<u8>>, String);
    let read = || -> rusqlite::Result<Option<OutlineRow>> {
        conn.prepare_cached("SELECT outline, hash, language FROM files WHERE path = ?1")?
            .query_row(params![path], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
    };
    let (mut bytes, hash, language) = read().unwrap_or_else(|error| {
        tracing::debug!(path, %error, "index row not read");
        None
    })?;
    if bytes.is_empty() {
        let hash = hash.as_deref().and_then(hash_from_bytes)?;
        let language = Language::from_name(&language)?;
        bytes = donor?.column(Column::Outline, language, hash)?;
    }
    serde_json::from_slice(&bytes).ok()
}

/// One of the encoded columns of a row.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Column {
    /// What resolution reads.
    Outline,
    /// The whole analysis.
    Analysis,
}

/// Which end of a link a query wants.
#[derive(Clone, Copy)]
enum Side {
    Callers,
    Callees,
}

/// The version key: a stored index is used only when it matches. It names the schema, the
/// extractor, the crate, and per language its grammar's ABI and node-kind and field counts and
/// a hash of its queries, so a grammar upgrade or a query edit rebuilds the index.
pub(crate) fn version_key() -> String {
    let mut key = format!(
        "schema={SCHEMA_VERSION};extractor={EXTRACTOR_VERSION};wit={}",
        env!("CARGO_PKG_VERSION")
    );
    for language in Language::ALL {
        let spec = language.spec();
        let grammar = (spec.grammar)();
        let queries = format!(
            "{}\0{}\0{}",
            spec.symbols_query, spec.calls_query, spec.imports_query
        );
        key.push_str(&format!(
            ";{}=abi{}/kinds{}/fields{}/q{:x}",
            spec.name,
            grammar.abi_version(),
            grammar.node_kind_count(),
            grammar.field_count(),
            xxhash_rust::xxh3::xxh3_64(queries.as_bytes())
        ));
    }
    key
}

/// `time` in nanoseconds since the epoch (what the index stores of an mtime).
pub(crate) fn to_nanos(time: SystemTime) -> Option<i64> {
    let since = time.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(since.as_nanos()).ok()
}

fn from_nanos(nanos: i64) -> Option<SystemTime> {
    let nanos = u64::try_from(nanos).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_nanos(nanos))
}

fn hash_from_bytes(bytes: &[u8]) -> Option<u128> {
    Some(u128::from_le_bytes(bytes.try_into().ok()?))
}

/// Creates the file with mode 0600 before SQLite opens it (SQLite gives `-wal` and `-shm`
/// the same mode), and sets 0600 on an existing one.
fn prepare_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

/// Deletes the database and its WAL and shared-memory files.
fn remove_files(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::analysis::analyze;

    fn row(path: &str, source: &str) -> Row {
        let analysis = analyze(Language::Python, source);
        let outline = crate::analysis::resolution::outline(&analysis);
        Row::new(
            path,
            source.len() as u64,
            Some(SystemTime::now()),
            Some(7),
            &outline,
            &analysis,
        )
        .unwrap()
    }

    #[test]
    fn rows_round_trip_and_a_version_change_empties_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        let db = IndexDb::open(&path).unwrap();
        db.write(
            &[
                row("a.py", "def f():\n    g()\n"),
                row("b.py", "def g(): pass\n"),
            ],
            &[],
        );
        db.write(&[], &["b.py".to_owned()]);
        let mut loaded = Vec::new();
        db.load(|f| loaded.push(f));
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].path, "a.py");
        assert_eq!(loaded[0].hash, Some(7));
        assert_eq!(db.outline("a.py").unwrap().symbols.len(), 1);
        let full = db.analysis("a.py", 7).unwrap();
        assert_eq!(full.symbols[0].qualified_name, "f");
        assert!(db.analysis("a.py", 8).is_none());
        drop(db);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // Another version's file: emptied on open.
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE meta SET value = 'schema=0' WHERE key = 'version'",
            [],
        )
        .unwrap();
        drop(conn);
        let mut count = 0;
        IndexDb::open(&path).unwrap().load(|_| count += 1);
        assert_eq!(count, 0);
    }

    #[test]
    fn the_same_schema_lives_in_memory() {
        let db = IndexDb::in_memory().unwrap();
        db.write(&[row("a.py", "def f(): pass\n")], &[]);
        let mut loaded = Vec::new();
        db.load(|f| loaded.push(f));
        assert_eq!(loaded.len(), 1);
        assert_eq!(db.analysis("a.py", 7).unwrap().symbols.len(), 1);
        assert!(db.reader().is_none(), "no second connection to memory");
    }

    #[test]
    fn a_donor_gives_rows_by_content_whatever_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        let db = IndexDb::open(&path).unwrap();
        db.write(&[row("a.py", "def f(): pass\n")], &[]);
        let donor = Donor::open(&path).unwrap();
        let (outline, analysis) = donor.encoded(Language::Python, 7).unwrap();
        assert!(!outline.is_empty() && !analysis.is_empty());
        assert!(donor.encoded(Language::Python, 8).is_none());
        assert!(donor.encoded(Language::Go, 7).is_none());
        assert!(Donor::open(&dir.path().join("missing.db")).is_none());
    }

    #[test]
    fn a_borrowed_row_reads_the_donor_s_analysis_and_the_graph_copies_whole() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main.db");
        let db = IndexDb::open(&main).unwrap();
        let a = row("a.py", "def f():\n    g()\n");
        db.write(&[a], &[]);
        let links = FileLinks {
            file: "a.py".to_owned(),
            links: vec![(
                "b.py".to_owned(),
                crate::analysis::links::encode_pairs([("f", "g")]),
            )],
            imported: vec!["b.py".to_owned()],
            waiting: true,
        };
        db.write_with_graph(&[], &[], &[links], Some(true));
        let donor = Donor::open(&main).unwrap();
        assert!(donor.has(Language::Python, 7));
        assert!(!donor.has(Language::Python, 8));
        let graph = donor.graph().unwrap();
        assert_eq!(graph.files.get("a.py"), Some(&Some(7)));
        assert_eq!(
            (graph.links.len(), graph.deps.len(), graph.waiting.len()),
            (1, 1, 1)
        );

        let mut linked = IndexDb::open(&dir.path().join("linked.db")).unwrap();
        linked.set_donor(Donor::open(&main));
        linked.write(&[Row::borrowed("a.py", 20, None, Language::Python, 7)], &[]);
        let mut loaded = Vec::new();
        linked.load(|f| loaded.push(f));
        assert!(loaded[0].borrowed);
        assert_eq!(
            linked.analysis("a.py", 7).unwrap().symbols[0].qualified_name,
            "f"
        );
        assert_eq!(linked.outline("a.py").unwrap().symbols.len(), 1);
        assert_eq!(
            linked
                .reader()
                .unwrap()
                .outline("a.py")
                .unwrap()
                .symbols
                .len(),
            1
        );
        linked.copy_graph(&graph);
        assert!(
            !linked.graph_complete(),
            "marked by the caller, once it is true"
        );
        assert_eq!(linked.callers("b.py", "g")[0].qualified_name, "f");
        assert_eq!(linked.importers("b.py"), ["a.py"]);
        // A donor that no longer has the content: nothing to read (the index parses again).
        db.write(&[], &["a.py".to_owned()]);
        assert!(linked.analysis("a.py", 7).is_none());
        assert!(linked.outline("a.py").is_none());
        // Without a donor a borrowed row has nothing either.
        linked.set_donor(None);
        assert!(linked.analysis("a.py", 7).is_none());
    }

    #[test]
    fn a_garbage_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        std::fs::write(&path, vec![0x5a; 10_000]).unwrap();
        let db = IndexDb::open(&path).unwrap();
        let mut count = 0;
        db.load(|_| count += 1);
        assert_eq!(count, 0);
        db.write(&[row("a.py", "def f(): pass\n")], &[]);
        db.load(|_| count += 1);
        assert_eq!(count, 1);
    }
}
