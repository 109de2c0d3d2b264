//! Which files the index covers and whether they changed: the walk (honouring `.gitignore`),
//! the Go manifests, where a relative path really leads (confined to the root), and
//! freshness by size + mtime against what was indexed.

use std::fs::Metadata;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use super::tree_record::TreeRecord;
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

/// Supported files under the root, honouring `.gitignore`, `.ignore` and
/// `.git/info/exclude`, skipping hidden entries, symlinks and [`SKIPPED_DIRS`]; and the
/// `go.mod` manifests among them.
pub(super) fn walk(root: &Path) -> Walked {
    walk_with(root, None)
}

/// [`walk`], with the record of the walk a later start checks instead (a `stat` of each
/// directory's ignore files more).
pub(super) fn recorded_walk(root: &Path) -> Walked {
    walk_with(root, TreeRecord::start(root))
}

fn walk_with(root: &Path, mut record: Option<TreeRecord>) -> Walked {
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
    for entry in builder.build().flatten() {
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            record = record.and_then(|record| record.with_dir(root, &entry));
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
    walked.record = record.map(|record| record.finish(root, &walked));
    walked
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
///
/// The root is canonical already, so only the path's own components are looked at: one
/// `lstat` each, the last one giving the file's metadata. A path with no symlink under the
/// root is its own real path (a request's file usually is, and `canonicalize` would read
/// every component of the root too, then `stat` the result); one with a symlink, or with a
/// `..`, is resolved whole.
pub(super) fn locate_in(root: &Path, rel_path: &str) -> Result<Option<(PathBuf, Metadata)>> {
    let mut components = Path::new(rel_path)
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .peekable();
    let mut path = root.to_path_buf();
    while let Some(component) = components.next() {
        let Component::Normal(name) = component else {
            return resolved_in(root, rel_path);
        };
        path.push(name);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(err) if is_absent(&err) => return Ok(None),
            Err(source) => return Err(io_error(rel_path, source)),
        };
        if meta.file_type().is_symlink() {
            return resolved_in(root, rel_path);
        }
        if components.peek().is_none() {
            return Ok(meta.is_file().then_some((path, meta)));
        }
        if !meta.is_dir() {
            return Ok(None);
        }
    }
    Ok(None)
}

/// [`locate_in`] for a path through symlinks: resolved whole, then kept only inside the root.
fn resolved_in(root: &Path, rel_path: &str) -> Result<Option<(PathBuf, Metadata)>> {
    let io = |source| io_error(rel_path, source);
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

/// A failure to look at `rel_path` other than its absence.
fn io_error(rel_path: &str, source: std::io::Error) -> AnalysisError {
    AnalysisError::Io {
        path: rel_path.to_owned(),
        source,
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

    /// The size of `rel_path` when the index is built and knows the file as it is on disk
    /// (one `stat`); `None` for a file it does not know or that changed since.
    pub fn size_as_on_disk(&self, rel_path: &str) -> Option<u64> {
        if !self.indexed_as_on_disk(rel_path) {
            return None;
        }
        self.read().files.get(rel_path).map(|entry| entry.size)
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

    /// A directory outside the root with `rel` in it, and an empty canonical root (each kept
    /// alive by its guard).
    fn outside_and_root(rel: &str) -> (tempfile::TempDir, tempfile::TempDir, PathBuf) {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), rel, "export const s = 1;\n");
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        (outside, dir, root)
    }

    #[test]
    fn locate_stays_inside_the_root() {
        let (outside, _dir, root) = outside_and_root("secret.ts");
        write(&root, "a.ts", "export const a = 1;\n");
        std::fs::create_dir(root.join("dir.ts")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.ts"), root.join("link.ts")).unwrap();
        assert!(locate_in(&root, "a.ts").unwrap().is_some());
        assert!(locate_in(&root, "missing.ts").unwrap().is_none());
        assert!(locate_in(&root, "dir.ts").unwrap().is_none());
        assert!(locate_in(&root, "link.ts").unwrap().is_none());
    }

    /// Every way a path can lead, each where `canonicalize` takes it: plain paths, `.`,
    /// symlinked files and directories inside the root (their real paths), ones leading out,
    /// `..`, a file used as a directory, dangling links.
    #[test]
    fn locate_finds_what_canonicalize_finds() {
        let (outside, _dir, root) = outside_and_root("o/secret.ts");
        write(&root, "src/deep/a.ts", "export const a = 1;\n");
        write(&root, "b.ts", "export const b = 1;\n");
        let link =
            |target: &Path, at: &str| std::os::unix::fs::symlink(target, root.join(at)).unwrap();
        link(&root.join("src"), "src-link");
        link(Path::new("deep/a.ts"), "src/rel-link.ts");
        link(&outside.path().join("o"), "out-dir");
        link(&root.join("nowhere.ts"), "dangling.ts");
        let cases = [
            ("src/deep/a.ts", Some("src/deep/a.ts")),
            ("./src/./deep/a.ts", Some("src/deep/a.ts")),
            ("src-link/deep/a.ts", Some("src/deep/a.ts")),
            ("src/rel-link.ts", Some("src/deep/a.ts")),
            ("src/deep/../../b.ts", Some("b.ts")),
            ("out-dir/secret.ts", None),
            ("src/deep/../../../x.ts", None),
            ("b.ts/a.ts", None),
            ("src/deep", None),
            ("dangling.ts", None),
            ("src/missing/a.ts", None),
        ];
        for (path, expected) in cases {
            let found = locate_in(&root, path).unwrap().map(|(real, meta)| {
                assert!(meta.is_file(), "{path}");
                real
            });
            assert_eq!(found, expected.map(|e| root.join(e)), "{path}");
        }
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
}
