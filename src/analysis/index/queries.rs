//! What requests ask the index: callers and callees (from the store's graph, after checking
//! the files involved for changes), whether an answer is at hand without parsing, the files,
//! a file's text, and analyses of content that is not on disk (staged versions, previews),
//! shared with the files' by content hash.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::walk::check_relative;
use super::{RepoIndex, SymbolRef, MAX_FILE_BYTES};
use crate::analysis::cache::ContentKey;
use crate::analysis::language::Language;
use crate::analysis::model::FileAnalysis;
use crate::analysis::{AnalysisError, Result};
use crate::platform::at_rest::{self, DiskText};

impl RepoIndex {
    /// The text of a file inside the root, with the same confinement as [`RepoIndex::file`]:
    /// `None` for a missing file, anything that is not a regular file, a real path outside
    /// the root, a file over [`MAX_FILE_BYTES`] and text that is not UTF-8. Says whether the
    /// file was at rest while it was read ([`at_rest::was_at_rest`]).
    pub fn read_text(&self, rel_path: &str) -> Result<Option<DiskText>> {
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
        let after = std::fs::metadata(&real).ok();
        let at_rest = at_rest::was_at_rest(&meta, after.as_ref(), std::time::SystemTime::now());
        Ok(String::from_utf8(bytes)
            .ok()
            .map(|text| DiskText { text, at_rest }))
    }

    /// The symbols calling `name` in `rel_path` (a qualified name, or a bare name resolved by
    /// docs/protocol.md 2.2; every candidate of an ambiguous name counts), across the repository,
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

    /// The files the indexed `rel_path` imports from (empty when it is not indexed).
    fn imported_files(&self, rel_path: &str) -> Vec<String> {
        // A file the index does not know imports nothing: no query for it (intents on files
        // yet to be written are common).
        if !self.read().files.contains_key(rel_path) {
            return Vec::new();
        }
        self.db.imported_files(rel_path)
    }

    /// The symbols `name` could mean in the indexed `rel_path`: `None` when it is not
    /// indexed, `Some(None)` when its analysis is not at hand without a parse.
    #[allow(
        clippy::option_option,
        reason = "three outcomes read once by callers_are_fresh"
    )]
    fn matching(&self, rel_path: &str, name: &str) -> Option<Option<Vec<SymbolRef>>> {
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
        for target in &targets {
            out.extend(self.db.callees(rel_path, &target.qualified_name));
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
        self.indexed_analysis(rel_path, key)
            .unwrap_or_else(|| self.analyze_keyed(key, language, content))
    }

    /// The analysis of `content` as the file `rel_path` when it is already made (indexed for
    /// that file, or in the cache); `None` rather than a parse.
    pub fn known_analysis_of(
        &self,
        rel_path: &str,
        language: Language,
        content: &str,
    ) -> Option<Arc<FileAnalysis>> {
        let key = ContentKey::new(language, content);
        self.indexed_analysis(rel_path, key)
            .or_else(|| self.cached_analysis(&key))
    }

    /// The indexed analysis of `rel_path` when the index parsed it from the content `key`.
    fn indexed_analysis(&self, rel_path: &str, key: ContentKey) -> Option<Arc<FileAnalysis>> {
        let pinned = {
            let state = self.read();
            state
                .files
                .get(rel_path)
                .filter(|entry| entry.key == Some(key))
                .map(|entry| entry.pinned.clone())
        }?;
        pinned.or_else(|| self.stored_analysis(rel_path, key))
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
        for target in targets {
            out.extend(self.db.callers(&target.file, &target.qualified_name));
        }
        out.into_iter().collect()
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use std::path::Path;

    use super::*;

    use super::super::testing::write;

    fn paths(refs: &[SymbolRef]) -> Vec<String> {
        refs.iter().map(SymbolRef::to_symbol_path).collect()
    }

    /// Rewrites a file with a new mtime even within the file system's timestamp resolution.
    fn rewrite(root: &Path, rel: &str, text: &str) {
        write(root, rel, text);
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(root.join(rel))
            .unwrap()
            .set_modified(later)
            .unwrap();
    }

    #[test]
    fn edges_go_both_ways_and_follow_edits() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "a.ts",
            "import { b } from './b';\nexport function a() { b(); }\n",
        );
        write(root, "b.ts", "export function b() {}\n");
        let index = RepoIndex::new(root.to_path_buf());
        index.build_now();
        assert_eq!(paths(&index.callers("b.ts", "b")), ["a.ts:a"]);
        assert_eq!(paths(&index.callees("a.ts", "a")), ["b.ts:b"]);
        // The callee is renamed: the importer is re-resolved and the edge goes.
        rewrite(root, "b.ts", "export function c() {}\n");
        assert!(index.callers("b.ts", "b").is_empty());
        assert!(index.callees("a.ts", "a").is_empty());
        // Back again; then removing the caller drops its edges.
        rewrite(root, "b.ts", "export function b() {}\n");
        assert_eq!(paths(&index.callers("b.ts", "b")), ["a.ts:a"]);
        std::fs::remove_file(root.join("a.ts")).unwrap();
        assert!(index.callers("b.ts", "b").is_empty());
    }

    #[test]
    fn a_new_file_satisfies_waiting_imports() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "a.ts",
            "import { e } from './e';\nexport function a() { e(); }\n",
        );
        let index = RepoIndex::new(root.to_path_buf());
        index.build_now();
        assert!(index.callees("a.ts", "a").is_empty());
        write(root, "e.ts", "export function e() {}\n");
        assert_eq!(paths(&index.callers("e.ts", "e")), ["a.ts:a"]);
    }

    #[test]
    fn go_packages_and_module_imports() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "m/go.mod", "module example.com/m\n");
        write(
            root,
            "m/geom/a.go",
            "package geom\nfunc Area() int { return sq() }\n",
        );
        write(
            root,
            "m/geom/b.go",
            "package geom\nfunc sq() int { return 1 }\n",
        );
        write(
            root,
            "m/main.go",
            "package main\nimport \"example.com/m/geom\"\nfunc main() { geom.Area(); geom.Later() }\n",
        );
        write(root, "x/b.go", "package x\nfunc sq() int { return 2 }\n");
        let index = RepoIndex::new(root.to_path_buf());
        index.build_now();
        assert_eq!(
            paths(&index.callers("m/geom/b.go", "sq")),
            ["m/geom/a.go:Area"]
        );
        assert_eq!(
            paths(&index.callers("m/geom/a.go", "Area")),
            ["m/main.go:main"]
        );
        assert!(index.callers("x/b.go", "sq").is_empty());
        // A file added to the package later is found by the calls waiting for it.
        write(root, "m/geom/c.go", "package geom\nfunc Later() {}\n");
        assert_eq!(
            paths(&index.callers("m/geom/c.go", "Later")),
            ["m/main.go:main"]
        );
    }

    #[test]
    fn freshness_checks_answer_without_parsing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "a.py", "from b import g\ndef f():\n    g()\n");
        write(root, "b.py", "def g(): pass\n");
        let index = RepoIndex::new(root.to_path_buf());
        assert!(!index.callers_are_fresh("b.py", "g"), "not built yet");
        index.build_now();
        assert!(index.callers_are_fresh("b.py", "g"));
        assert!(index.file_and_imports_are_fresh("a.py"));
        assert!(index.callers_are_fresh("notes.txt", "x"), "never analysed");
        rewrite(root, "a.py", "from b import g\ndef f():\n    pass\n");
        assert!(!index.callers_are_fresh("b.py", "g"), "a caller changed");
        assert!(index.callers("b.py", "g").is_empty());
        assert!(index.callers_are_fresh("b.py", "g"));
    }

    #[test]
    fn content_equal_to_an_indexed_file_costs_no_parse() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let text = "def f(): pass\n";
        write(root, "a.py", text);
        let index = RepoIndex::new(root.to_path_buf()).with_cache_bytes(0);
        index.build_now();
        let parses = index.parse_count();
        let same = index.analyze_content_of("a.py", Language::Python, text);
        assert_eq!(same.symbols[0].qualified_name, "f");
        assert_eq!(index.parse_count(), parses);
        let other = index.analyze_content(Language::Python, "def g(): pass\n");
        assert_eq!(other.symbols[0].qualified_name, "g");
        assert_eq!(index.parse_count(), parses + 1);
        assert_eq!(index.read_text("a.py").unwrap().unwrap().text, text);
        assert!(index.read_text("../a.py").is_err());
    }
}
