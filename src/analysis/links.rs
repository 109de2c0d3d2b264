//! The call graph as rows of the index's store: what one file's resolved calls become
//! (`links`, `deps`, `waiting` of `store`), and the [`View`] of the repository that
//! resolution reads while the index holds no outlines: the file list in memory (paths only),
//! each outline read from the store when resolution first asks for it.
//!
//! Resolution (`resolution::resolve_calls`) asks a [`Repo`] for borrowed outlines. The view
//! answers from the outlines it has; an outline it lacks is noted as missing, read after the
//! pass, and the file is resolved again, until a pass misses nothing (usually one or two
//! passes: a file consults a few others). The answer is the same as with every outline at
//! hand, since each pass that misses nothing saw exactly what they would show.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::resolution::{resolve_calls, Prepared};
use super::resolve::{parent_dir, Exports, Repo};

/// One file's call graph rows: its links (callee file -> encoded (caller, callee) pairs), the
/// files its resolution consulted, and whether a new file could resolve one of its calls.
#[derive(Debug, Default, Clone)]
pub(crate) struct FileLinks {
    /// The calling file.
    pub file: String,
    /// Per callee file, the pairs ([`encode_pairs`]).
    pub links: Vec<(String, Vec<u8>)>,
    /// The other files its calls resolved through.
    pub imported: Vec<String>,
    /// Whether a call could resolve once another file appears.
    pub waiting: bool,
}

/// (caller, callee) pairs as stored: each name as a little-endian `u32` length and its bytes.
pub(crate) fn encode_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let mut out = Vec::new();
    for (caller, callee) in pairs {
        for name in [caller, callee] {
            let len = u32::try_from(name.len()).unwrap_or(u32::MAX);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(name.as_bytes().get(..len as usize).unwrap_or_default());
        }
    }
    out
}

/// The pairs of [`encode_pairs`]; decoding stops at the first malformed entry.
pub(crate) fn decode_pairs(bytes: &[u8]) -> Vec<(&str, &str)> {
    fn name<'b>(bytes: &mut &'b [u8]) -> Option<&'b str> {
        let (len, rest) = bytes.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        let text = rest.get(..len)?;
        *bytes = rest.get(len..)?;
        std::str::from_utf8(text).ok()
    }
    let mut rest = bytes;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (Some(caller), Some(callee)) = (name(&mut rest), name(&mut rest)) else {
            break;
        };
        out.push((caller, callee));
    }
    out
}

/// The repository's file list as resolution asks about it: which files exist, per directory
/// and per file name (sorted), and the Go modules.
pub(crate) struct Paths<'a> {
    set: HashSet<&'a str>,
    dirs: HashMap<&'a str, Vec<&'a str>>,
    names: HashMap<&'a str, Vec<&'a str>>,
    go_modules: &'a [(String, String)],
}

impl<'a> Paths<'a> {
    /// The list of `files`.
    pub(crate) fn new(
        files: impl IntoIterator<Item = &'a str>,
        go_modules: &'a [(String, String)],
    ) -> Paths<'a> {
        let mut paths = Paths {
            set: HashSet::new(),
            dirs: HashMap::new(),
            names: HashMap::new(),
            go_modules,
        };
        for file in files {
            paths.set.insert(file);
            paths.dirs.entry(parent_dir(file)).or_default().push(file);
            let name = file.rsplit('/').next().unwrap_or(file);
            paths.names.entry(name).or_default().push(file);
        }
        for list in paths.dirs.values_mut().chain(paths.names.values_mut()) {
            list.sort_unstable();
        }
        paths
    }
}

/// A [`Repo`] over [`Paths`] and the outlines read so far (see the module docs).
pub(crate) struct View<'a, 'p> {
    paths: &'p Paths<'a>,
    /// Outlines read (`None`: the file has none to read).
    outlines: HashMap<String, Option<Prepared>>,
    /// Bytes the outlines take (about).
    bytes: usize,
    missing: RefCell<BTreeSet<String>>,
}

impl<'a, 'p> View<'a, 'p> {
    /// An empty view of `paths`.
    pub(crate) fn new(paths: &'p Paths<'a>) -> View<'a, 'p> {
        View {
            paths,
            outlines: HashMap::new(),
            bytes: 0,
            missing: RefCell::default(),
        }
    }

    /// Sets the outline of `file` (a file just parsed, not read back).
    pub(crate) fn put(&mut self, file: &str, prepared: Option<Prepared>) {
        self.bytes += prepared.as_ref().map_or(0, Prepared::approx_heap_bytes);
        if let Some(Some(old)) = self.outlines.insert(file.to_owned(), prepared) {
            self.bytes = self.bytes.saturating_sub(old.approx_heap_bytes());
        }
    }

    /// Forgets the outlines read once they take more than `bytes` (between files: a full
    /// resolution keeps a bounded window of outlines, not all of them).
    pub(crate) fn trim(&mut self, bytes: usize) {
        if self.bytes > bytes {
            self.outlines.clear();
            self.bytes = 0;
        }
    }

    /// How many bytes the outlines read take (about).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Resolves the calls of `file` with outlines from `load` (the rows of `store`), as
    /// graph rows. `None` when `file` has no outline.
    pub(crate) fn resolve(
        &mut self,
        file: &str,
        load: &dyn Fn(&str) -> Option<Prepared>,
    ) -> Option<FileLinks> {
        if !self.outlines.contains_key(file) {
            let prepared = load(file);
            self.put(file, prepared);
        }
        loop {
            let resolved = {
                let prepared = self.outlines.get(file)?.as_ref()?;
                resolve_calls(self, file, prepared)
            };
            let missing = std::mem::take(&mut *self.missing.borrow_mut());
            if missing.is_empty() {
                return Some(rows_of(file, resolved.unwrap_or_default()));
            }
            for other in missing {
                let prepared = load(&other);
                self.put(&other, prepared);
            }
        }
    }
}

/// The graph rows of one file's resolved calls.
fn rows_of(file: &str, resolved: super::resolution::Resolved) -> FileLinks {
    let mut by_file: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (caller, callees) in &resolved.callees {
        for callee in callees {
            by_file
                .entry(callee.file.as_str())
                .or_default()
                .push((caller.as_str(), callee.qualified_name.as_str()));
        }
    }
    FileLinks {
        file: file.to_owned(),
        links: by_file
            .into_iter()
            .map(|(to, mut pairs)| {
                pairs.sort_unstable();
                (to.to_owned(), encode_pairs(pairs))
            })
            .collect(),
        imported: resolved.imported_files.into_iter().collect(),
        waiting: resolved.unresolved,
    }
}

impl Repo for View<'_, '_> {
    fn exists(&self, file: &str) -> bool {
        self.paths.set.contains(file)
    }

    fn exports(&self, file: &str) -> Option<&dyn Exports> {
        match self.outlines.get(file) {
            Some(prepared) => prepared.as_ref().map(|p| p.outline() as &dyn Exports),
            None => {
                if self.paths.set.contains(file) {
                    self.missing.borrow_mut().insert(file.to_owned());
                }
                None
            }
        }
    }

    fn files_in_dir(&self, dir: &str) -> Vec<&str> {
        self.paths.dirs.get(dir).cloned().unwrap_or_default()
    }

    fn files_named(&self, name: &str) -> Vec<&str> {
        self.paths.names.get(name).cloned().unwrap_or_default()
    }

    fn go_module(&self, file: &str) -> Option<(&str, &str)> {
        self.paths
            .go_modules
            .iter()
            .filter(|(dir, _)| {
                dir.is_empty()
                    || file
                        .strip_prefix(dir.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
            .max_by_key(|(dir, _)| dir.len())
            .map(|(dir, module)| (dir.as_str(), module.as_str()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::analysis::{analyze, Language};
    use std::sync::Arc;

    #[test]
    fn pairs_round_trip_and_garbage_stops_decoding() {
        let bytes = encode_pairs([("a", "b"), ("K.m", ""), ("é", "x.y")]);
        assert_eq!(
            decode_pairs(&bytes),
            [("a", "b"), ("K.m", ""), ("é", "x.y")]
        );
        assert_eq!(decode_pairs(&bytes[..bytes.len() - 1]).len(), 2);
        assert!(decode_pairs(&[1, 2, 3]).is_empty());
    }

    /// Resolving through a view that reads outlines on demand gives the edges of the calls,
    /// and reads only the outlines resolution needs.
    #[test]
    fn a_view_resolves_reading_only_what_it_needs() {
        let sources = [
            (
                "a.ts",
                "import { b } from './b';\nimport { c } from './c';\nexport function a() { b(); c(); a(); }\n",
            ),
            ("b.ts", "export function b() {}\n"),
            ("c.ts", "export function c() {}\nexport function unused() {}\n"),
            ("d.ts", "export function d() {}\n"),
        ];
        let analyses: Vec<(String, Arc<crate::analysis::FileAnalysis>)> = sources
            .iter()
            .map(|(rel, text)| {
                let language = Language::for_path(rel).unwrap();
                (rel.to_string(), Arc::new(analyze(language, text)))
            })
            .collect();
        let paths = Paths::new(sources.iter().map(|(rel, _)| *rel), &[]);
        let mut view = View::new(&paths);
        let reads = RefCell::new(Vec::new());
        let load = |file: &str| {
            reads.borrow_mut().push(file.to_owned());
            analyses
                .iter()
                .find(|(rel, _)| rel == file)
                .map(|(_, a)| Prepared::of(a))
        };
        let rows = view.resolve("a.ts", &load).unwrap();
        let mut edges: Vec<(String, String, String)> = rows
            .links
            .iter()
            .flat_map(|(to, pairs)| {
                decode_pairs(pairs)
                    .into_iter()
                    .map(|(from, callee)| (from.to_owned(), to.clone(), callee.to_owned()))
                    .collect::<Vec<_>>()
            })
            .collect();
        edges.sort();
        let edge = |to: &str, callee: &str| ("a".to_owned(), to.to_owned(), callee.to_owned());
        assert_eq!(
            edges,
            [edge("a.ts", "a"), edge("b.ts", "b"), edge("c.ts", "c")]
        );
        assert_eq!(rows.imported, ["b.ts", "c.ts"]);
        let mut read = reads.borrow().clone();
        read.sort();
        assert_eq!(read, ["a.ts", "b.ts", "c.ts"], "d.ts is never read");
        assert!(view.bytes() > 0);
        view.trim(0);
        assert_eq!(view.bytes(), 0);
    }
}
