//! The data model of one file's analysis: symbols, call sites, imports, diagnostics, and the
//! name lookups of docs/protocol.md 2.2. Plain data, serialisable (the parse worker sends it in
//! `encoding`'s form); no tree-sitter types.
use serde::{Deserialize, Serialize};

use super::language::Language;

/// What kind of declaration a symbol is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SymbolKind {
    /// A function declaration, or a variable initialised with an arrow or function expression.
    Function,
    /// A method of a class (including a class field holding a function).
    Method,
    /// A class constructor.
    Constructor,
    /// A getter (`get x()`).
    Getter,
    /// A setter (`set x(v)`).
    Setter,
    /// A class (TS, Python, Java).
    Class,
    /// An interface (TS, Go, Java).
    Interface,
    /// A type alias (TS, Rust), or a Go type declaration that is neither a struct nor an
    /// interface.
    TypeAlias,
    /// An enum (TS, Rust, Java).
    Enum,
    /// A struct (Go, Rust).
    Struct,
    /// A Rust trait.
    Trait,
    /// A Java record.
    Record,
}

impl SymbolKind {
    /// A short lowercase name (`function`, `method`, `type-alias`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Constructor => "constructor",
            SymbolKind::Getter => "getter",
            SymbolKind::Setter => "setter",
            SymbolKind::Class => "class",
            SymbolKind::Interface => "interface",
            SymbolKind::TypeAlias => "type-alias",
            SymbolKind::Enum => "enum",
            SymbolKind::Struct => "struct",
            SymbolKind::Trait => "trait",
            SymbolKind::Record => "record",
        }
    }

    /// The kind a query tag names (`@definition.<tag>`), `None` for an unknown tag.
    pub(crate) fn from_tag(tag: &str) -> Option<SymbolKind> {
        Some(match tag {
            "function" => SymbolKind::Function,
            "method" => SymbolKind::Method,
            "constructor" => SymbolKind::Constructor,
            "class" => SymbolKind::Class,
            "interface" => SymbolKind::Interface,
            "type" => SymbolKind::TypeAlias,
            "enum" => SymbolKind::Enum,
            "struct" => SymbolKind::Struct,
            "trait" => SymbolKind::Trait,
            "record" => SymbolKind::Record,
            _ => return None,
        })
    }

    /// Whether it declares a type whose members are qualified by its name (`Shape.area`).
    pub fn is_type(self) -> bool {
        matches!(
            self,
            SymbolKind::Class
                | SymbolKind::Interface
                | SymbolKind::Enum
                | SymbolKind::Struct
                | SymbolKind::Trait
                | SymbolKind::Record
        )
    }

    /// Whether code runs inside it, so calls in its body belong to it.
    pub fn is_callable(self) -> bool {
        matches!(
            self,
            SymbolKind::Function
                | SymbolKind::Method
                | SymbolKind::Constructor
                | SymbolKind::Getter
                | SymbolKind::Setter
        )
    }
}

/// A named declaration in a file (docs/protocol.md 2.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    /// The declared name (`area`).
    pub name: String,
    /// The name qualified by the enclosing symbols (`Shape.area`, `outer.inner`).
    pub qualified_name: String,
    /// What kind of declaration it is.
    pub kind: SymbolKind,
    /// Start of the declaration in UTF-8 bytes, including `export` and decorators.
    pub start_byte: usize,
    /// End of the declaration in UTF-8 bytes, exclusive.
    pub end_byte: usize,
    /// The 1-based line where the declaration starts.
    pub line: usize,
    /// The normalised signature (docs/protocol.md 2.5); `None` when none could be read.
    pub signature: Option<String>,
}

/// Where a call goes, as far as the calling file alone can tell.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CallTarget {
    /// A symbol of the same file, by qualified name.
    Local(String),
    /// Something imported: the module specifier as written (`./util`, `.m`, `pkg.m`) and the
    /// names after it (`["f"]` for `f()` or `ns.f()`, `["default"]` for a default import,
    /// `["C", "m"]` for `C.m()` on an imported `C`).
    Import {
        /// The module specifier as written in the import.
        module: String,
        /// The names looked up in that module.
        path: Vec<String>,
    },
    /// Not defined in this file, but visible from the rest of its package (Go: the other
    /// files of the directory; Java: the other classes of the package): the names looked up
    /// there (`["F"]`, `["Helper", "util"]`).
    Package(Vec<String>),
    /// Not resolvable: a builtin, a method on an arbitrary object, a missing name.
    Unresolved,
}

/// A call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSite {
    /// Qualified name of the innermost named function-like symbol containing the call; `None`
    /// at module or class-body level.
    pub caller: Option<String>,
    /// The callee as written, receiver included (`helper`, `this.run`, `ns.f`).
    pub callee: String,
    /// Where the call goes.
    pub target: CallTarget,
    /// 1-based line of the call.
    pub line: usize,
    /// Byte offset of the call.
    pub start_byte: usize,
}

/// How an import binds its local name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ImportKind {
    /// `import { f } from "./m"`, `from .m import f`: the exported name.
    Named(String),
    /// `import f from "./m"`.
    Default,
    /// `import * as m from "./m"`, `import pkg.m as m`, `const m = require("./m")`.
    Namespace,
}

/// One imported binding.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Import {
    /// The name bound in this file (`m`, `f`, `pkg.m`).
    pub local: String,
    /// The module specifier as written.
    pub module: String,
    /// What the name is bound to.
    pub kind: ImportKind,
}

/// Something worth knowing about a file that is not an error: broken code still has symbols.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// 1-based line, 0 when it concerns the whole file.
    pub line: usize,
    /// What was found.
    pub message: String,
}

/// Everything one parse of a file yields.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FileAnalysis {
    /// The language the file was parsed as; `None` when it was not parsed.
    pub language: Option<Language>,
    /// Symbols in document order.
    pub symbols: Vec<Symbol>,
    /// Call sites in document order.
    pub calls: Vec<CallSite>,
    /// Imported bindings.
    pub imports: Vec<Import>,
    /// The qualified name of the default export, when there is one (TS/JS).
    pub default_export: Option<String>,
    /// Syntax errors, a parse that ran out of time, a file too large to parse.
    pub diagnostics: Vec<Diagnostic>,
    /// Qualified name -> positions in `symbols`; rebuilt by [`FileAnalysis::reindex`] after
    /// deserialising, never sent.
    #[serde(skip)]
    pub(crate) by_qualified: NameIndex,
}

/// The positions of symbols by qualified name, holding no copy of any name: each symbol's
/// position under the 64-bit XXH3 of its qualified name, the symbols of equal digests chained
/// in document order (a lookup compares the names it finds). About 30 bytes a symbol and no
/// allocation of its own; a map of names to position lists was two allocations and about
/// 130 bytes a symbol, a fifth of a large file's analysis in memory (issue 32.7).
#[derive(Debug, Clone, Default)]
pub(crate) struct NameIndex {
    /// Digest -> first and last position of the symbols with it.
    ends: rustc_hash::FxHashMap<u64, (u32, u32)>,
    /// The next position with the same digest ([`NameIndex::END`] for none).
    next: Vec<u32>,
}

impl NameIndex {
    const END: u32 = u32::MAX;

    fn digest(name: &str) -> u64 {
        xxhash_rust::xxh3::xxh3_64(name.as_bytes())
    }

    /// The index of `symbols` (positions past `u32::MAX - 1` are left out).
    fn of(symbols: &[Symbol]) -> NameIndex {
        let mut index = NameIndex {
            ends: rustc_hash::FxHashMap::default(),
            next: vec![Self::END; symbols.len()],
        };
        index.ends.reserve(symbols.len());
        for (at, symbol) in symbols.iter().enumerate() {
            let Ok(at) = u32::try_from(at) else { break };
            if at == Self::END {
                break;
            }
            let digest = Self::digest(&symbol.qualified_name);
            match index.ends.get_mut(&digest) {
                Some((_, last)) => {
                    index.next[*last as usize] = at;
                    *last = at;
                }
                None => {
                    index.ends.insert(digest, (at, at));
                }
            }
        }
        index
    }

    /// The positions of the symbols named exactly `qualified_name`, in document order.
    fn positions<'a>(
        &'a self,
        symbols: &'a [Symbol],
        qualified_name: &'a str,
    ) -> impl Iterator<Item = usize> + 'a {
        let first = self
            .ends
            .get(&Self::digest(qualified_name))
            .map_or(Self::END, |&(first, _)| first);
        std::iter::successors((first != Self::END).then_some(first), |&at| {
            let next = self.next.get(at as usize).copied().unwrap_or(Self::END);
            (next != Self::END).then_some(next)
        })
        .map(|at| at as usize)
        .filter(move |&at| {
            symbols
                .get(at)
                .is_some_and(|s| s.qualified_name == qualified_name)
        })
    }

    /// About how many bytes it holds.
    fn approx_heap_bytes(&self) -> usize {
        self.ends.capacity() * (std::mem::size_of::<(u64, (u32, u32))>() + 1)
            + self.next.capacity() * std::mem::size_of::<u32>()
    }
}

/// The answer to a symbol lookup (docs/protocol.md 2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// Exactly one symbol matches.
    Unique(&'a Symbol),
    /// Several symbols match, in document order.
    Ambiguous(Vec<&'a Symbol>),
    /// Nothing matches.
    NotFound,
}

impl FileAnalysis {
    /// About how many bytes of memory the analysis holds: its records, their strings and its
    /// name index (allocator overhead aside). Bounds the content cache by what it costs.
    pub fn approx_heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let symbols: usize = self
            .symbols
            .iter()
            .map(|s| {
                size_of::<Symbol>()
                    + s.name.len()
                    + s.qualified_name.len()
                    + s.signature.as_ref().map_or(0, String::len)
            })
            .sum();
        let calls: usize = self
            .calls
            .iter()
            .map(|c| {
                let target = match &c.target {
                    CallTarget::Local(name) => name.len(),
                    CallTarget::Import { module, path } => {
                        module.len()
                            + path
                                .iter()
                                .map(|p| size_of::<String>() + p.len())
                                .sum::<usize>()
                    }
                    CallTarget::Package(path) => path
                        .iter()
                        .map(|p| size_of::<String>() + p.len())
                        .sum::<usize>(),
                    CallTarget::Unresolved => 0,
                };
                size_of::<CallSite>()
                    + c.caller.as_ref().map_or(0, String::len)
                    + c.callee.len()
                    + target
            })
            .sum();
        let imports: usize = self
            .imports
            .iter()
            .map(|i| size_of::<Import>() + i.local.len() + i.module.len())
            .sum();
        let diagnostics: usize = self
            .diagnostics
            .iter()
            .map(|d| size_of::<Diagnostic>() + d.message.len())
            .sum();
        let index = self.by_qualified.approx_heap_bytes();
        size_of::<FileAnalysis>() + symbols + calls + imports + diagnostics + index
    }

    /// Rebuilds the name index from `symbols` (after deserialising).
    pub(crate) fn reindex(&mut self) {
        self.by_qualified = NameIndex::of(&self.symbols);
    }

    /// An analysis with no symbols, saying why.
    pub(crate) fn empty(language: Option<Language>, message: &str) -> FileAnalysis {
        FileAnalysis {
            language,
            diagnostics: vec![Diagnostic {
                line: 0,
                message: message.to_owned(),
            }],
            ..FileAnalysis::default()
        }
    }

    /// Finds a symbol by name: a qualified name (`Class.method`) matches exactly; a bare name
    /// means the one top-level symbol of that name, else the one symbol of that name anywhere.
    pub fn lookup(&self, name: &str) -> Lookup<'_> {
        let exact = self.by_qualified(name);
        let found: Vec<&Symbol> = if !exact.is_empty() || name.contains('.') {
            exact
        } else {
            self.symbols.iter().filter(|s| s.name == name).collect()
        };
        match found.len() {
            0 => Lookup::NotFound,
            1 => Lookup::Unique(found[0]),
            _ => Lookup::Ambiguous(found),
        }
    }

    /// Every symbol the name could mean: the unique match, or all candidates when ambiguous.
    pub fn matching(&self, name: &str) -> Vec<&Symbol> {
        match self.lookup(name) {
            Lookup::Unique(symbol) => vec![symbol],
            Lookup::Ambiguous(symbols) => symbols,
            Lookup::NotFound => Vec::new(),
        }
    }

    /// The symbols with exactly this qualified name (several only for duplicate definitions).
    pub fn by_qualified(&self, qualified_name: &str) -> Vec<&Symbol> {
        self.by_qualified
            .positions(&self.symbols, qualified_name)
            .filter_map(|at| self.symbols.get(at))
            .collect()
    }

    /// The qualified names of call targets defined by this file for an imported `path`:
    /// `["f"]` -> top-level `f` (or the default export for `["default"]`), `["C", "m"]` -> `C.m`.
    pub(crate) fn export_target(&self, path: &[String]) -> Option<String> {
        let name = match path {
            [one] if one == "default" => return self.default_export.clone(),
            [one] => one.clone(),
            [first, second] => format!("{first}.{second}"),
            _ => return None,
        };
        let found = self
            .by_qualified
            .positions(&self.symbols, &name)
            .next()
            .is_some();
        found.then_some(name)
    }

    /// Whether a call can go to the symbol of this qualified name (a function-like symbol or a
    /// class, whose call constructs it).
    pub(crate) fn callable_symbol(&self, qualified_name: &str) -> bool {
        self.by_qualified(qualified_name).iter().any(|s| {
            s.kind.is_callable() || matches!(s.kind, SymbolKind::Class | SymbolKind::Record)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn symbol(qualified_name: &str, line: usize) -> Symbol {
        Symbol {
            name: qualified_name
                .rsplit('.')
                .next()
                .unwrap_or_default()
                .to_owned(),
            qualified_name: qualified_name.to_owned(),
            kind: SymbolKind::Function,
            start_byte: line * 10,
            end_byte: line * 10 + 5,
            line,
            signature: None,
        }
    }

    /// Duplicate definitions come back in document order, a prefix or a near name is not a
    /// match, and the index agrees with a scan of every symbol for every name.
    #[test]
    fn the_name_index_finds_exactly_the_symbols_of_a_name() {
        let names = ["f", "K", "K.m", "f", "K.m2", "g", "K.m", "f"];
        let mut analysis = FileAnalysis {
            symbols: names
                .iter()
                .enumerate()
                .map(|(line, name)| symbol(name, line + 1))
                .collect(),
            ..FileAnalysis::default()
        };
        analysis.reindex();
        let lines = |name: &str| -> Vec<usize> {
            analysis.by_qualified(name).iter().map(|s| s.line).collect()
        };
        assert_eq!(lines("f"), [1, 4, 8]);
        assert_eq!(lines("K.m"), [3, 7]);
        for missing in ["", "K.", "m", "F", "K.m22"] {
            assert!(lines(missing).is_empty(), "{missing:?}");
        }
        for name in names {
            let scanned: Vec<usize> = analysis
                .symbols
                .iter()
                .filter(|s| s.qualified_name == name)
                .map(|s| s.line)
                .collect();
            assert_eq!(lines(name), scanned, "{name}");
        }
        assert_eq!(
            analysis.export_target(&["K".into(), "m".into()]),
            Some("K.m".into())
        );
        assert_eq!(analysis.export_target(&["h".into()]), None);
    }
}
