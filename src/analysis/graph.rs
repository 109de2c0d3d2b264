//! The repository's call graph as plain data: each file's analysis, its resolved outgoing
//! edges, the reverse edges ("who calls X" is a map lookup) and which files depend on which.
//! No I/O and no locking: the index (`index`) reads files and decides freshness, then calls
//! [`Graph::insert`] / [`Graph::remove`], which re-resolve exactly the files whose edges may
//! have changed. Cross-file targets are resolved by `resolve`, through the [`Repo`] view this
//! graph gives of its files.

use std::collections::{BTreeSet, HashMap};
#[cfg(test)]
use std::sync::Arc;

use super::model::{CallTarget, FileAnalysis};
use super::outline::Outline;
use super::resolve::{self, parent_dir, Exports, Found, Repo};
use super::symbols::{SymbolId, Symbols};

/// A symbol somewhere in the repository.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymbolRef {
    /// The file, relative to the root, normalised (`src/a.ts`).
    pub file: String,
    /// The qualified name within the file (`Shape.area`).
    pub qualified_name: String,
}

impl SymbolRef {
    /// The protocol's symbol path, `file:name`.
    pub fn to_symbol_path(&self) -> String {
        format!("{}:{}", self.file, self.qualified_name)
    }
}

struct Node {
    /// The file's outline and distinct resolvable calls.
    prepared: Prepared,
    /// Resolved outgoing edges: caller -> callees (interned ids, sorted).
    callees: HashMap<SymbolId, Box<[SymbolId]>>,
    /// Files this file's calls resolved through (their changes re-resolve this file).
    imported_files: BTreeSet<String>,
}

/// What the graph keeps of one file's analysis, prepared apart from the graph (on a build
/// thread, or row by row while the index database is read) so that whole analyses never
/// pile up: the outline and the distinct resolvable calls.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    outline: Outline,
    calls: Box<[(u32, u32)]>,
    targets: Box<[CallTarget]>,
    extra_callers: Box<[String]>,
}

impl Prepared {
    /// About how many bytes it holds.
    pub(crate) fn approx_heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.outline.approx_heap_bytes()
            + self.calls.len() * size_of::<(u32, u32)>()
            + self
                .targets
                .iter()
                .map(|t| size_of::<CallTarget>() + target_bytes(t))
                .sum::<usize>()
            + self
                .extra_callers
                .iter()
                .map(|c| size_of::<String>() + c.len())
                .sum::<usize>()
    }

    /// The outline: symbol names and kinds.
    pub(crate) fn outline(&self) -> &Outline {
        &self.outline
    }

    /// The qualified name of a caller index of `calls`.
    fn caller_name(&self, caller: u32) -> Option<&str> {
        let at = caller as usize;
        if at < self.outline.len() {
            Some(self.outline.qualified(caller))
        } else {
            self.extra_callers
                .get(at - self.outline.len())
                .map(String::as_str)
        }
    }

    /// The graph's part of an analysis (whole, or an outline as [`outline`] cuts it).
    pub(crate) fn of(analysis: &FileAnalysis) -> Prepared {
        let outline = Outline::of(analysis);
        let (calls, targets, extra_callers) = compact_calls(analysis, &outline);
        Prepared {
            outline,
            calls,
            targets,
            extra_callers,
        }
    }
}

/// The call graph. Cheap to build empty; see the module docs.
#[derive(Default)]
pub(crate) struct Graph {
    files: HashMap<String, Node>,
    /// The symbols the edges name.
    symbols: Symbols,
    /// Reverse edges: callee -> callers (sorted ids).
    callers: HashMap<SymbolId, Vec<SymbolId>>,
    /// File -> files whose calls resolved through it.
    importers: HashMap<String, BTreeSet<String>>,
    /// Files with a call that did not resolve but could once another file appears.
    unresolved_importers: BTreeSet<String>,
    /// Directory -> its files (Go and Java packages).
    dirs: HashMap<String, BTreeSet<String>>,
    /// File name -> files of that name (Java source roots).
    names: HashMap<String, BTreeSet<String>>,
    /// Go modules: the directory of each `go.mod` and its module path.
    go_modules: Vec<(String, String)>,
}

impl Graph {
    /// A graph of `files`, all resolved at once (a full build; tests build from analyses,
    /// the index from [`Prepared`] files).
    #[cfg(test)]
    pub(crate) fn build(
        files: Vec<(String, Arc<FileAnalysis>)>,
        go_modules: Vec<(String, String)>,
    ) -> Graph {
        let prepared = files
            .into_iter()
            .map(|(rel, analysis)| (rel, Prepared::of(&analysis)))
            .collect();
        Graph::build_prepared(prepared, go_modules)
    }

    /// A graph of prepared files, all resolved at once (a full build).
    pub(crate) fn build_prepared(
        files: Vec<(String, Prepared)>,
        go_modules: Vec<(String, String)>,
    ) -> Graph {
        let mut graph = Graph {
            go_modules,
            ..Graph::default()
        };
        let rels: Vec<String> = files.iter().map(|(rel, _)| rel.clone()).collect();
        for (rel, prepared) in files {
            graph.add_node(rel, prepared);
        }
        for rel in &rels {
            graph.resolve_file(rel);
        }
        graph
    }

    /// The symbols `name` could mean in an indexed file (as [`FileAnalysis::matching`]
    /// finds them); `None` when the file is not in the graph.
    pub(crate) fn matching(&self, rel: &str, name: &str) -> Option<Vec<SymbolRef>> {
        let node = self.files.get(rel)?;
        Some(
            node.prepared
                .outline
                .matching(name)
                .into_iter()
                .map(|qualified| SymbolRef {
                    file: rel.to_owned(),
                    qualified_name: qualified.to_owned(),
                })
                .collect(),
        )
    }

    /// A copy of what the graph keeps of a file (to build again).
    pub(crate) fn prepared_of(&self, rel: &str) -> Option<Prepared> {
        Some(self.files.get(rel)?.prepared.clone())
    }

    /// About how many bytes the graph holds: the outlines, the edges both ways and the
    /// dependency maps (strings and records; allocator overhead aside).
    pub(crate) fn approx_heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let names = |set: &BTreeSet<String>| -> usize {
            set.iter().map(|f| size_of::<String>() + f.len()).sum()
        };
        let nodes: usize = self
            .files
            .iter()
            .map(|(rel, node)| {
                size_of::<Node>()
                    + rel.len()
                    + node.prepared.approx_heap_bytes()
                    + node
                        .callees
                        .values()
                        .map(|set| size_of::<(SymbolId, Box<[SymbolId]>)>() + 8 + set.len() * 4)
                        .sum::<usize>()
                    + names(&node.imported_files)
            })
            .sum();
        let callers: usize = self
            .callers
            .values()
            .map(|set| size_of::<(SymbolId, Vec<SymbolId>)>() + 8 + set.capacity() * 4)
            .sum::<usize>()
            + self.symbols.approx_heap_bytes();
        let maps: usize = [&self.importers, &self.dirs, &self.names]
            .iter()
            .flat_map(|map| map.iter())
            .map(|(key, set)| key.len() + names(set))
            .sum();
        nodes + callers + maps + names(&self.unresolved_importers)
    }

    /// The callers of `target`, sorted.
    pub(crate) fn callers_of(&self, target: &SymbolRef) -> impl Iterator<Item = &SymbolRef> {
        let ids = self
            .symbols
            .lookup(&target.file, &target.qualified_name)
            .and_then(|id| self.callers.get(&id));
        self.resolved(ids.map(Vec::as_slice))
    }

    /// The symbols of `ids`, sorted.
    fn resolved(&self, ids: Option<&[SymbolId]>) -> std::vec::IntoIter<&SymbolRef> {
        let mut out: Vec<&SymbolRef> = ids
            .unwrap_or_default()
            .iter()
            .map(|id| self.symbols.get(*id))
            .collect();
        out.sort_unstable();
        out.into_iter()
    }

    /// What `qualified_name` in `rel` calls.
    pub(crate) fn callees_of(
        &self,
        rel: &str,
        qualified_name: &str,
    ) -> impl Iterator<Item = &SymbolRef> {
        let ids = self.files.get(rel).and_then(|n| {
            let id = self.symbols.lookup(rel, qualified_name)?;
            n.callees.get(&id)
        });
        self.resolved(ids.map(|ids| &ids[..]))
    }

    /// The files `rel`'s calls resolved through.
    pub(crate) fn imported_files(&self, rel: &str) -> Vec<String> {
        self.files
            .get(rel)
            .map(|n| n.imported_files.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Installs a (re)analysed file and re-resolves the edges that may depend on it: its own,
    /// its importers', and, for a new file, those of files waiting for one.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, rel: &str, analysis: Arc<FileAnalysis>) {
        self.insert_prepared(rel, Prepared::of(&analysis));
    }

    /// As [`Graph::insert`], prepared.
    pub(crate) fn insert_prepared(&mut self, rel: &str, prepared: Prepared) {
        let is_new = !self.files.contains_key(rel);
        self.remove_edges(rel);
        self.add_node(rel.to_owned(), prepared);
        let mut redo: BTreeSet<String> = self.importers.get(rel).cloned().unwrap_or_default();
        if is_new {
            redo.extend(self.unresolved_importers.iter().cloned());
        }
        redo.insert(rel.to_owned());
        for file in &redo {
            self.remove_edges(file);
            self.resolve_file(file);
        }
    }

    /// Drops a file and its edges, and re-resolves the files that called into it.
    pub(crate) fn remove(&mut self, rel: &str) {
        self.remove_edges(rel);
        if self.files.remove(rel).is_some() {
            if let Some(set) = self.dirs.get_mut(parent_dir(rel)) {
                set.remove(rel);
            }
            if let Some(set) = self.names.get_mut(file_name(rel)) {
                set.remove(rel);
            }
        }
        let dependents = self.importers.remove(rel).unwrap_or_default();
        for file in &dependents {
            self.remove_edges(file);
            self.resolve_file(file);
        }
    }

    fn add_node(&mut self, rel: String, prepared: Prepared) {
        self.dirs
            .entry(parent_dir(&rel).to_owned())
            .or_default()
            .insert(rel.clone());
        self.names
            .entry(file_name(&rel).to_owned())
            .or_default()
            .insert(rel.clone());
        self.files.insert(
            rel,
            Node {
                prepared,
                callees: HashMap::new(),
                imported_files: BTreeSet::new(),
            },
        );
    }

    fn remove_edges(&mut self, rel: &str) {
        self.unresolved_importers.remove(rel);
        let Some(node) = self.files.get_mut(rel) else {
            return;
        };
        let callees = std::mem::take(&mut node.callees);
        let imported = std::mem::take(&mut node.imported_files);
        for (caller, targets) in callees {
            for target in targets.iter().copied() {
                if let Some(set) = self.callers.get_mut(&target) {
                    if let Ok(at) = set.binary_search(&caller) {
                        set.remove(at);
                    }
                    if set.is_empty() {
                        self.callers.remove(&target);
                    }
                }
                self.symbols.release(target);
                self.symbols.release(caller);
            }
        }
        for file in imported {
            if let Some(set) = self.importers.get_mut(&file) {
                set.remove(rel);
                if set.is_empty() {
                    self.importers.remove(&file);
                }
            }
        }
    }

    /// Resolves a file's calls into edges and records them in both directions.
    fn resolve_file(&mut self, rel: &str) {
        let Some((callees, imported_files, unresolved)) = self.edges_of(rel) else {
            return;
        };
        let mut edges: HashMap<SymbolId, Box<[SymbolId]>> = HashMap::with_capacity(callees.len());
        for (caller, targets) in &callees {
            let mut ids = Vec::with_capacity(targets.len());
            for target in targets {
                let from = self.symbols.acquire(rel, caller);
                let to = self.symbols.acquire(&target.file, &target.qualified_name);
                let set = self.callers.entry(to).or_default();
                if let Err(at) = set.binary_search(&from) {
                    set.insert(at, from);
                }
                ids.push(to);
            }
            if let Some(from) = self.symbols.lookup(rel, caller) {
                edges.insert(from, ids.into_boxed_slice());
            }
        }
        for file in &imported_files {
            self.importers
                .entry(file.clone())
                .or_default()
                .insert(rel.to_owned());
        }
        if unresolved {
            self.unresolved_importers.insert(rel.to_owned());
        }
        if let Some(node) = self.files.get_mut(rel) {
            node.callees = edges;
            node.imported_files = imported_files;
        }
    }

    /// The edges of `rel`'s calls (see [`resolve_calls`]).
    #[allow(
        clippy::type_complexity,
        reason = "a private triple read once by resolve_file"
    )]
    fn edges_of(
        &self,
        rel: &str,
    ) -> Option<(HashMap<String, BTreeSet<SymbolRef>>, BTreeSet<String>, bool)> {
        let node = self.files.get(rel)?;
        let resolved = resolve_calls(self, rel, &node.prepared)?;
        Some((
            resolved.callees,
            resolved.imported_files,
            resolved.unresolved,
        ))
    }
}

/// The resolved edges of one file's calls.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    /// Callees per caller (qualified name in the file).
    pub callees: HashMap<String, BTreeSet<SymbolRef>>,
    /// The other files the resolution consulted (their changes re-resolve this file).
    pub imported_files: BTreeSet<String>,
    /// Whether some target could appear with a new file.
    pub unresolved: bool,
}

/// The edges of `rel`'s calls (`node`) against the files of `repo`: callees per caller, the
/// files consulted, and whether some target could appear with a new file. `None` for a file
/// without a language.
pub(crate) fn resolve_calls(repo: &dyn Repo, rel: &str, node: &Prepared) -> Option<Resolved> {
    let style = node.outline.language?.spec().module_style;
    let mut callees: HashMap<String, BTreeSet<SymbolRef>> = HashMap::new();
    let mut imported_files = BTreeSet::new();
    let mut unresolved = false;
    let mut memo: HashMap<u32, Found> = HashMap::new();
    for (caller, t) in node.calls.iter() {
        let Some(caller) = node.caller_name(*caller) else {
            continue;
        };
        if t & LOCAL != 0 {
            // A call to a symbol of the same file, by its position.
            callees
                .entry(caller.to_owned())
                .or_default()
                .insert(SymbolRef {
                    file: rel.to_owned(),
                    qualified_name: node.outline.qualified(t & !LOCAL).to_owned(),
                });
            continue;
        }
        let Some(target) = node.targets.get(*t as usize) else {
            continue;
        };
        let found = match target {
            CallTarget::Local(name) => {
                callees
                    .entry(caller.to_owned())
                    .or_default()
                    .insert(SymbolRef {
                        file: rel.to_owned(),
                        qualified_name: name.clone(),
                    });
                continue;
            }
            CallTarget::Unresolved => continue,
            CallTarget::Import { module, path } => memo
                .entry(*t)
                .or_insert_with(|| resolve::import(style, repo, rel, module, path)),
            CallTarget::Package(path) => memo
                .entry(*t)
                .or_insert_with(|| resolve::package(style, repo, rel, path)),
        };
        imported_files.extend(found.consulted.iter().filter(|f| *f != rel).cloned());
        if found.targets.is_empty() {
            unresolved |= found.may_appear;
        }
        for (file, qualified_name) in &found.targets {
            callees
                .entry(caller.to_owned())
                .or_default()
                .insert(SymbolRef {
                    file: file.clone(),
                    qualified_name: qualified_name.clone(),
                });
        }
    }
    Some(Resolved {
        callees,
        imported_files,
        unresolved,
    })
}

/// Bytes a call target's strings take.
fn target_bytes(target: &CallTarget) -> usize {
    let path = |p: &[String]| -> usize {
        p.iter()
            .map(|s| std::mem::size_of::<String>() + s.len())
            .sum()
    };
    match target {
        CallTarget::Local(name) => name.len(),
        CallTarget::Import { module, path: p } => module.len() + path(p),
        CallTarget::Package(p) => path(p),
        CallTarget::Unresolved => 0,
    }
}

/// The bit of a call's target index that marks a symbol of the same file (the rest is the
/// symbol's position in the outline) rather than a place in the target table.
const LOCAL: u32 = 1 << 31;

/// An analysis's distinct resolvable calls as (caller, target) index pairs, the distinct
/// targets, and callers missing from the symbols. See [`Node`].
#[allow(
    clippy::type_complexity,
    reason = "a private triple read once by add_node"
)]
fn compact_calls(
    analysis: &FileAnalysis,
    outline: &Outline,
) -> (Box<[(u32, u32)]>, Box<[CallTarget]>, Box<[String]>) {
    let mut symbol_at: HashMap<&str, u32> = HashMap::new();
    let base = u32::try_from(outline.len()).unwrap_or(u32::MAX);
    let mut extra: Vec<String> = Vec::new();
    let mut targets: Vec<CallTarget> = Vec::new();
    let mut target_at: HashMap<&CallTarget, u32> = HashMap::new();
    let mut seen: std::collections::HashSet<(u32, u32)> = Default::default();
    let mut calls = Vec::new();
    for call in &analysis.calls {
        let Some(caller) = call.caller.as_deref() else {
            continue;
        };
        if matches!(call.target, CallTarget::Unresolved) {
            continue;
        }
        let caller = match outline
            .position(caller)
            .or_else(|| symbol_at.get(caller).copied())
        {
            Some(at) => at,
            None => {
                extra.push(caller.to_owned());
                let at = base + u32::try_from(extra.len() - 1).unwrap_or(u32::MAX);
                symbol_at.insert(caller, at);
                at
            }
        };
        let local = match &call.target {
            CallTarget::Local(name) => outline.position(name).filter(|at| at & LOCAL == 0),
            _ => None,
        };
        let target = match local {
            Some(at) => at | LOCAL,
            None => {
                let next = u32::try_from(targets.len()).unwrap_or(u32::MAX);
                *target_at.entry(&call.target).or_insert_with(|| {
                    targets.push(call.target.clone());
                    next
                })
            }
        };
        if seen.insert((caller, target)) {
            calls.push((caller, target));
        }
    }
    (calls.into(), targets.into(), extra.into())
}

impl Repo for Graph {
    fn exists(&self, file: &str) -> bool {
        self.files.contains_key(file)
    }

    fn exports(&self, file: &str) -> Option<&dyn Exports> {
        self.files
            .get(file)
            .map(|n| &n.prepared.outline as &dyn Exports)
    }

    fn files_in_dir(&self, dir: &str) -> Vec<&str> {
        self.dirs
            .get(dir)
            .map(|set| set.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    fn files_named(&self, name: &str) -> Vec<&str> {
        self.names
            .get(name)
            .map(|set| set.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    fn go_module(&self, file: &str) -> Option<(&str, &str)> {
        self.go_modules
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

/// What of an analysis the graph keeps ("outline"): each symbol's name, qualified name and
/// kind (lookups and resolution), the default export, and each caller's distinct resolvable
/// call targets. Ranges, signatures, call positions, imports and diagnostics stay on disk
/// (or in the parse cache); an outline is a fraction of the analysis. Idempotent.
pub(crate) fn outline(analysis: &FileAnalysis) -> FileAnalysis {
    use super::model::CallSite;
    let mut seen: std::collections::HashSet<(&str, &CallTarget)> = Default::default();
    let calls = analysis
        .calls
        .iter()
        .filter(|c| !matches!(c.target, CallTarget::Unresolved))
        .filter_map(|c| {
            let caller = c.caller.as_deref()?;
            seen.insert((caller, &c.target)).then(|| CallSite {
                caller: Some(caller.to_owned()),
                callee: String::new(),
                target: c.target.clone(),
                line: 0,
                start_byte: 0,
            })
        })
        .collect();
    FileAnalysis {
        calls,
        ..skeleton(analysis)
    }
}

/// The symbols of an analysis (names and kinds only) and its default export: an outline
/// without calls.
fn skeleton(analysis: &FileAnalysis) -> FileAnalysis {
    use super::model::Symbol;
    let symbols = analysis
        .symbols
        .iter()
        .map(|s| Symbol {
            name: s.name.clone(),
            qualified_name: s.qualified_name.clone(),
            kind: s.kind,
            start_byte: 0,
            end_byte: 0,
            line: 0,
            signature: None,
        })
        .collect();
    let mut out = FileAnalysis {
        language: analysis.language,
        symbols,
        calls: Vec::new(),
        imports: Vec::new(),
        default_export: analysis.default_export.clone(),
        diagnostics: Vec::new(),
        by_qualified: HashMap::new(),
    };
    out.reindex();
    out.symbols.shrink_to_fit();
    out
}

fn file_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

/// The module path a `go.mod` declares (`module example.com/m`).
pub(crate) fn go_module_path(go_mod: &str) -> Option<String> {
    go_mod.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("module")?;
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        let path = rest.trim().trim_matches('"');
        (!path.is_empty()).then(|| path.to_owned())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::analysis::{analyze, Language};

    fn parsed(rel: &str, source: &str) -> (String, Arc<FileAnalysis>) {
        let language = Language::for_path(rel).unwrap();
        (rel.to_owned(), Arc::new(analyze(language, source)))
    }

    fn sym(file: &str, name: &str) -> SymbolRef {
        SymbolRef {
            file: file.to_owned(),
            qualified_name: name.to_owned(),
        }
    }

    fn callers(graph: &Graph, file: &str, name: &str) -> Vec<SymbolRef> {
        graph.callers_of(&sym(file, name)).cloned().collect()
    }

    #[test]
    fn edges_go_both_ways_and_follow_edits() {
        let mut graph = Graph::build(
            vec![
                parsed(
                    "a.ts",
                    "import { b } from './b';\nexport function a() { b(); }\n",
                ),
                parsed("b.ts", "export function b() {}\n"),
            ],
            Vec::new(),
        );
        assert_eq!(callers(&graph, "b.ts", "b"), [sym("a.ts", "a")]);
        assert_eq!(
            graph.callees_of("a.ts", "a").cloned().collect::<Vec<_>>(),
            [sym("b.ts", "b")]
        );
        // The callee is renamed: the importer is re-resolved and the edge goes.
        let (_, renamed) = parsed("b.ts", "export function c() {}\n");
        graph.insert("b.ts", renamed);
        assert!(callers(&graph, "b.ts", "b").is_empty());
        assert!(graph.callees_of("a.ts", "a").next().is_none());
        // Removing the caller drops its edges.
        let (_, back) = parsed("b.ts", "export function b() {}\n");
        graph.insert("b.ts", back);
        assert_eq!(callers(&graph, "b.ts", "b"), [sym("a.ts", "a")]);
        graph.remove("a.ts");
        assert!(callers(&graph, "b.ts", "b").is_empty());
    }

    #[test]
    fn a_new_file_satisfies_waiting_imports() {
        let mut graph = Graph::build(
            vec![parsed(
                "a.ts",
                "import { e } from './e';\nexport function a() { e(); }\n",
            )],
            Vec::new(),
        );
        assert!(graph.callees_of("a.ts", "a").next().is_none());
        let (_, e) = parsed("e.ts", "export function e() {}\n");
        graph.insert("e.ts", e);
        assert_eq!(callers(&graph, "e.ts", "e"), [sym("a.ts", "a")]);
    }

    #[test]
    fn go_packages_and_module_imports() {
        let mut graph =
            Graph::build(
                vec![
                parsed("m/geom/a.go", "package geom\nfunc Area() int { return sq() }\n"),
                parsed("m/geom/b.go", "package geom\nfunc sq() int { return 1 }\n"),
                parsed(
                    "m/main.go",
                    "package main\nimport \"example.com/m/geom\"\nfunc main() { geom.Area() }\n",
                ),
                parsed("x/b.go", "package x\nfunc sq() int { return 2 }\n"),
            ],
                vec![("m".to_owned(), "example.com/m".to_owned())],
            );
        assert_eq!(
            callers(&graph, "m/geom/b.go", "sq"),
            [sym("m/geom/a.go", "Area")]
        );
        assert_eq!(
            callers(&graph, "m/geom/a.go", "Area"),
            [sym("m/main.go", "main")]
        );
        assert!(callers(&graph, "x/b.go", "sq").is_empty());
        // A file added to the package later is found by the calls waiting for it.
        let (_, c) = parsed("m/geom/c.go", "package geom\nfunc Later() {}\n");
        let (_, main) = parsed(
            "m/main.go",
            "package main\nimport \"example.com/m/geom\"\nfunc main() { geom.Area(); geom.Later() }\n",
        );
        graph.insert("m/main.go", main);
        graph.insert("m/geom/c.go", c);
        assert_eq!(
            callers(&graph, "m/geom/c.go", "Later"),
            [sym("m/main.go", "main")]
        );
    }

    #[test]
    fn go_mod_module_lines() {
        assert_eq!(
            go_module_path("// c\nmodule example.com/m\n\ngo 1.22\n").as_deref(),
            Some("example.com/m")
        );
        assert_eq!(go_module_path("modules x\n"), None);
        assert_eq!(go_module_path("go 1.22\n"), None);
    }
}
