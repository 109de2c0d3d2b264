//! Which files the index covers and whether they changed: the walk (honouring `.gitignore`),
//! the Go manifests, where a relative path really leads (confined to the root), and
//! freshness by size + mtime against what was indexed.

use std::fs::Metadata;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use super::RepoIndex;
use crate::analysis::language::Language;
use crate::analysis::resolution::go_module_path;
use crate::analysis::{AnalysisError, Result};

/// Directories never indexed even when not ignored: vendored packages are not the repository's
/// code and can be huge.
const SKIPPED_DIRS: [&str; 1] = ["node_modules"];

/// The name of the manifest that declares a Go module.
const GO_MOD: &str = "go.mod";

/// What a walk found: the supported files (relative, `/`-separated, with their language and
/// their metadata as the walk read it: a build compares it with what was indexed, without a
/// second `stat`) and the `go.mod` manifests; and, from a whole walk, its record (what a
/// later start checks instead of walking again).
#[derive(Debug, Default)]
pub(super) struct Walked {
    pub files: Vec<WalkedFile>,
    pub manifests: Vec<String>,
    pub record: Option<TreeRecord>,
}

/// A supported file a walk found.
#[derive(Debug)]
pub(super) struct WalkedFile {
    /// Relative, `/`-separated.
    pub rel: String,
    /// Its language, by its suffix.
    pub language: Language,
    /// Its size when it was found (the build's order and progress).
    pub size: u64,
    /// Its metadata as the walk read it; `None` from a [`TreeRecord`] (the build reads it).
    pub meta: Option<Metadata>,
}

/// What decides the result of a walk, as it was: every directory walked with its mtime (an
/// entry made, removed or renamed in a directory changes it), every file that decides what is
/// ignored or how Go imports resolve (`.gitignore` and `.ignore` of each directory,
/// `.git/info/exclude`, the `go.mod` manifests) with its mtime and size or its absence, and
/// the files found. While all of that is unchanged, a walk would find the same files: a warm
/// restart checks it with a `stat` a directory and a file instead of walking the tree again
/// (sympy: 12–13 ms of walking, the largest part of a warm restart; issue 32.3).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct TreeRecord {
    /// When the walk started (ns since the epoch): what changed within [`RACY_NS`] of it may
    /// not have moved an mtime the record could tell from.
    walked_at_ns: i64,
    dirs: Vec<(String, i64)>,
    deciding: Vec<(String, Option<(i64, u64)>)>,
    files: Vec<(String, u64)>,
    manifests: Vec<String>,
}

/// How close to a walk a recorded mtime must not be (file systems keep mtimes as coarse as a
/// second or two).
const RACY_NS: i64 = 2_000_000_000;

/// The files of a directory that decide what the walk ignores.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

fn mtime_ns(meta: &Metadata) -> Option<i64> {
    let since = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    i64::try_from(since.as_nanos()).ok()
}

/// A deciding file's mtime and size, `None` when it is absent (or unreadable).
fn deciding_state(path: &Path) -> Option<(i64, u64)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((mtime_ns(&meta)?, meta.len()))
}

impl TreeRecord {
    /// The walk this record stands for (each file's metadata is left to the build, which
    /// reads them on its threads); `None` when anything that decides it changed or is too
    /// close to the walk to tell (then the tree is walked).
    pub(super) fn unchanged(&self, root: &Path) -> Option<Walked> {
        let racy = self.walked_at_ns.saturating_sub(RACY_NS);
        for (dir, recorded) in &self.dirs {
            let now = mtime_ns(&std::fs::symlink_metadata(root.join(dir)).ok()?)?;
            if now != *recorded || now >= racy {
                return None;
            }
        }
        for (path, recorded) in &self.deciding {
            let now = deciding_state(&root.join(path));
            if now != *recorded || now.is_some_and(|(mtime, _)| mtime >= racy) {
                return None;
            }
        }
        let mut files = Vec::with_capacity(self.files.len());
        for (rel, size) in &self.files {
            files.push(WalkedFile {
                rel: rel.clone(),
                language: Language::for_path(rel)?,
                size: *size,
                meta: None,
            });
        }
        Some(Walked {
            files,
            manifests: self.manifests.clone(),
            record: None,
        })
    }

    /// The record as stored.
    pub(super) fn encode(&self) -> Vec<u8> {
        postcard::to_stdvec(self).unwrap_or_default()
    }

    /// A stored record; `None` when it does not decode (then the tree is walked).
    pub(super) fn decode(bytes: &[u8]) -> Option<TreeRecord> {
        postcard::from_bytes(bytes).ok()
    }
}

/// Supported files under the root, honouring `.gitignore`, `.ignore` and
/// `.git/info/exclude`, skipping hidden entries, symlinks and [`SKIPPED_DIRS`]; and the
/// `go.mod` manifests among them.
pub(super) fn walk(root: &Path) -> Walked {
    let walked_at_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_nanos()).ok());
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
    let mut walked = Walked::default();
    // Recorded only where every directory's mtime could be read, and in a main worktree
    // (a linked one's exclude file is in the common directory).
    let mut record = walked_at_ns
        .filter(|_| root.join(".git").is_dir())
        .map(|walked_at_ns| TreeRecord {
            walked_at_ns,
            ..TreeRecord::default()
        });
    for entry in builder.build().flatten() {
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            record = record.and_then(|record| record_dir(root, &entry, record));
            continue;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(rel) = rel.to_str() else { continue };
        if let Some(language) = Language::for_path(rel) {
            // A file that cannot be read now is left out, as the build would leave it.
            if let Ok(meta) = entry.metadata() {
                walked.files.push(WalkedFile {
                    rel: rel.to_owned(),
                    language,
                    size: meta.len(),
                    meta: Some(meta),
                });
            }
        } else if entry.file_name() == GO_MOD {
            walked.manifests.push(rel.to_owned());
        }
    }
    walked.record = record.map(|mut record| {
        let exclude = ".git/info/exclude";
        record
            .deciding
            .push((exclude.to_owned(), deciding_state(&root.join(exclude))));
        for manifest in &walked.manifests {
            record
                .deciding
                .push((manifest.clone(), deciding_state(&root.join(manifest))));
        }
        record.files = walked
            .files
            .iter()
            .map(|f| (f.rel.clone(), f.size))
            .collect();
        record.manifests.clone_from(&walked.manifests);
        record
    });
    walked
}

/// `record` with the directory `entry` and its ignore files; `None` when its mtime cannot be
/// read (the walk is then not recorded).
fn record_dir(root: &Path, entry: &ignore::DirEntry, mut record: TreeRecord) -> Option<TreeRecord> {
    let rel = entry.path().strip_prefix(root).ok()?.to_str()?.to_owned();
    let mtime = mtime_ns(&entry.metadata().ok()?)?;
    for name in IGNORE_FILES {
        let path = if rel.is_empty() {
            name.to_owned()
        } else {
            format!("{rel}/{name}")
        };
        if let Some(state) = deciding_state(&root.join(&path)) {
            record.deciding.push((path, Some(state)));
        }
    }
    record.dirs.push((rel, mtime));
    Some(record)
}

/// The Go modules the manifests declare: (directory, module path). An unreadable manifest
/// declares none (its imports stay unresolved).
pub(super) fn read_go_modules(root: &Path, manifests: &[String]) -> Vec<(String, String)> {
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

/// Whether a file's metadata is what was indexed (`size` and `mtime`).
pub(super) fn unchanged(size: u64, mtime: Option<SystemTime>, meta: &Metadata) -> bool {
    size == meta.len() && mtime == meta.modified().ok()
}

/// The real path and metadata of `rel_path` under the canonical `root`, or `None` when it is
/// missing, not a regular file, or resolves (through symlinks) outside the root.
pub(super) fn locate_in(root: &Path, rel_path: &str) -> Result<Option<(PathBuf, Metadata)>> {
    let io = |source| AnalysisError::Io {
        path: rel_path.to_owned(),
        source,
    };
    let real = match std::fs::canonicalize(root.join(rel_path)) {
        Ok(real) => real,
        Err(err) if is_absent(&err) => return Ok(None),
        Err(source) => return Err(io(source)),
    };
    if !real.starts_with(root) {
        return Ok(None);
    }
    match std::fs::metadata(&real) {
        Ok(meta) if meta.is_file() => Ok(Some((real, meta))),
        Ok(_) => Ok(None),
        Err(err) if is_absent(&err) => Ok(None),
        Err(source) => Err(io(source)),
    }
}

fn is_absent(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// Rejects paths that are not plain relative paths inside the root. Callers normalise paths
/// (docs/protocol.md 2.1); this is the index's own guard.
pub(super) fn check_relative(path: &str) -> Result<()> {
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

impl RepoIndex {
    /// The root, canonical (resolved once it exists).
    pub(super) fn canonical_root(&self) -> Option<PathBuf> {
        let mut root = self
            .canonical_root
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if root.is_none() {
            *root = std::fs::canonicalize(&self.root).ok();
        }
        root.clone()
    }

    /// As [`locate_in`] under this index's root.
    pub(super) fn locate(&self, rel_path: &str) -> Result<Option<(PathBuf, Metadata)>> {
        match self.canonical_root() {
            Some(root) => locate_in(&root, rel_path),
            None => Ok(None),
        }
    }

    /// Whether an indexed file's size or mtime differ from what was indexed, or a file the
    /// index does not know exists (one `stat`).
    pub(super) fn is_stale(&self, rel_path: &str) -> bool {
        let Some(root) = self.canonical_root() else {
            return true;
        };
        let meta = std::fs::metadata(root.join(rel_path)).ok();
        let state = self.read();
        match (state.files.get(rel_path), meta) {
            (Some(entry), Some(meta)) => !unchanged(entry.size, entry.mtime, &meta),
            (None, None) => false,
            _ => true,
        }
    }

    /// Re-reads each of `files` whose size or mtime changed; whether any was re-read.
    pub(super) fn refresh_stale<'f>(&self, files: impl IntoIterator<Item = &'f str>) -> bool {
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

    /// Whether the index is built and knows `rel_path` as it is on disk (one `stat`).
    pub(super) fn indexed_as_on_disk(&self, rel_path: &str) -> bool {
        self.is_built() && check_relative(rel_path).is_ok() && !self.is_stale(rel_path)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    use super::super::testing::write;

    #[test]
    fn only_plain_relative_paths_pass() {
        assert!(check_relative("src/a.ts").is_ok());
        assert!(check_relative("./a.py").is_ok());
        for bad in [
            "",
            "/etc/passwd",
            "../x.ts",
            "a/../../x.ts",
            "a\\b.ts",
            "a\0.ts",
        ] {
            assert!(check_relative(bad).is_err(), "{bad:?} passed");
        }
    }

    #[test]
    fn the_walk_honours_ignores_and_skips_vendored_and_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", "gen/\n");
        write(root, "src/a.ts", "export const a = 1;\n");
        write(root, "gen/b.ts", "export const b = 1;\n");
        write(root, "node_modules/p/c.ts", "export const c = 1;\n");
        write(root, ".hidden/d.ts", "export const d = 1;\n");
        write(root, "notes.txt", "not code\n");
        write(root, "m/go.mod", "module example.com/m\n");
        let walked = walk(root);
        let files: Vec<&str> = walked.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(files, ["src/a.ts"]);
        assert_eq!(walked.files[0].size, 20);
        assert_eq!(walked.manifests, ["m/go.mod"]);
        assert_eq!(
            read_go_modules(root, &walked.manifests),
            [("m".to_owned(), "example.com/m".to_owned())]
        );
    }

    #[test]
    fn locate_stays_inside_the_root() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "secret.ts", "export const s = 1;\n");
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        write(&root, "a.ts", "export const a = 1;\n");
        std::fs::create_dir(root.join("dir.ts")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.ts"), root.join("link.ts")).unwrap();
        assert!(locate_in(&root, "a.ts").unwrap().is_some());
        assert!(locate_in(&root, "missing.ts").unwrap().is_none());
        assert!(locate_in(&root, "dir.ts").unwrap().is_none());
        assert!(locate_in(&root, "link.ts").unwrap().is_none());
    }

    #[test]
    fn freshness_follows_size_and_mtime() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "a.py", "def f(): pass\n");
        let index = RepoIndex::new(root.to_path_buf());
        assert!(index.is_stale("a.py"), "unknown but present");
        assert!(!index.is_stale("gone.py"), "unknown and absent");
        index.file("a.py").unwrap().unwrap();
        assert!(!index.is_stale("a.py"));
        write(root, "a.py", "def f(): return 1\n");
        assert!(index.is_stale("a.py"));
        assert!(index.refresh_stale(["a.py"]));
        assert!(!index.refresh_stale(["a.py"]));
        std::fs::remove_file(root.join("a.py")).unwrap();
        assert!(index.is_stale("a.py"), "known but gone");
    }

    /// An mtime long before any walk of the test; [`MOVED`] is another one, as long before.
    const AGED: u64 = 1_000_000_000;
    const MOVED: u64 = AGED + 10;

    /// Sets the mtime of `path` (a file or a directory) to `secs` after the epoch: out of the
    /// racy window of a walk made now, and the same each time.
    fn set_mtime(path: &Path, secs: u64) {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        std::fs::File::open(path).unwrap().set_modified(at).unwrap();
    }

    fn age_all(root: &Path, paths: &[&str]) {
        for path in paths {
            set_mtime(&root.join(path), AGED);
        }
    }

    fn names(walked: &Walked) -> Vec<&str> {
        walked.files.iter().map(|f| f.rel.as_str()).collect()
    }

    /// A record of a walk stands for it while nothing that decides it moved: an edit inside
    /// a file does not (its fresh metadata comes back); a new file, a changed `.gitignore` or
    /// `go.mod`, a new `exclude` each send the build back to walking, told by the mtime or
    /// presence of what they moved alone (set to another old time, out of the racy window);
    /// and a tree too fresh to tell does too.
    #[test]
    fn a_walk_record_stands_for_the_walk_until_the_tree_moves() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        write(root, "src/a.ts", "export const a = 1;\n");
        write(root, "src/b.py", "b = 1\n");
        write(root, ".gitignore", "gen/\n");
        write(root, "gen/c.ts", "export const c = 1;\n");
        write(root, "m/go.mod", "module example.com/m\n");
        write(root, "m/d.go", "package m\n");
        let tree = [".", "src", "gen", "m", ".gitignore", "m/go.mod"];
        let fresh = walk(root).record.unwrap();
        assert!(
            fresh.unchanged(root).is_none(),
            "walked right after the tree moved"
        );

        age_all(root, &tree);
        let walked = walk(root);
        let record = TreeRecord::decode(&walked.record.as_ref().unwrap().encode()).unwrap();
        let again = record.unchanged(root).unwrap();
        assert_eq!(names(&again), names(&walked));
        assert_eq!(again.manifests, walked.manifests);

        write(root, "src/a.ts", "export const a = 22;\n");
        assert!(record.unchanged(root).is_some(), "an edit inside a file");

        // Each change, and what it moved (set to MOVED, an old time of its own).
        let changes: [(&str, &dyn Fn(), &str); 4] = [
            ("a new file", &|| write(root, "src/new.ts", "x\n"), "src"),
            (
                "an edited .gitignore",
                &|| write(root, ".gitignore", "gen/\n"),
                ".gitignore",
            ),
            (
                "an edited go.mod",
                &|| write(root, "m/go.mod", "module example.com/n\n"),
                "m/go.mod",
            ),
            (
                "a new exclude",
                &|| write(root, ".git/info/exclude", "*.py\n"),
                ".git/info/exclude",
            ),
        ];
        for (what, change, moved) in changes {
            age_all(root, &tree);
            let record = walk(root).record.unwrap();
            assert!(record.unchanged(root).is_some(), "before {what}");
            change();
            set_mtime(&root.join(moved), MOVED);
            assert!(record.unchanged(root).is_none(), "{what} went unseen");
        }
    }
}
