//! Call resolution as pure functions: what the call graph keeps of a file ([`Prepared`], cut
//! from its [`outline`]), and a file's calls resolved into edges ([`resolve_calls`]) against
//! a [`Repo`] view of the other files (`links::View`, over the index's one store). No I/O
//! and no locking; the edges themselves are rows of the index's store (`store`, `links`).

use std::collections::{BTreeSet, HashMap};

use super::model::{CallTarget, FileAnalysis};
use super::outline::Outline;
use super::resolve::{self, Found, Repo};

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

/// What resolution reads of one file's analysis, prepared on a build thread or from an
/// outline read back from the store, so that whole analyses never pile up: the outline and
/// the distinct resolvable calls.
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

    /// Resolution's part of an analysis (whole, or an outline as [`outline`] cuts it).
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
/// targets, and callers missing from the symbols. See [`Prepared`].
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

/// What of an analysis resolution reads ("outline"): each symbol's name, qualified name and
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
        by_qualified: Default::default(),
    };
    out.reindex();
    out.symbols.shrink_to_fit();
    out
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
    use super::*;

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
