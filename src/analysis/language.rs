//! The language registry: which file suffixes map to which tree-sitter grammar, and what each
//! language contributes: its `.scm` queries and one table of facts (`Syntax`) that the
//! generic extraction in `extract` and `calls` reads. No algorithm here names a node kind; the
//! tables in `languages/<lang>.rs` do. Adding a language is a grammar crate, a directory of
//! queries, a table, and one [`Language`] variant with its entry in `SPECS`; a module
//! system unlike the existing ones also needs a resolver in `resolve`.

use std::sync::OnceLock;

use tree_sitter::Query;

use super::languages;
use super::model::SymbolKind;

/// A language wit understands. Each file suffix maps to exactly one (docs/protocol.md 2.3, 11.1).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Language {
    /// `.ts .mts .cts`, parsed with the TypeScript grammar.
    TypeScript,
    /// `.tsx .js .jsx .mjs .cjs`, parsed with the TSX grammar (JavaScript with JSX and types).
    Tsx,
    /// `.py .pyi`.
    Python,
    /// `.go`.
    Go,
    /// `.rs`.
    Rust,
    /// `.java`.
    Java,
}

/// How a language names the modules it imports, which decides how imports are resolved
/// (one resolver per style in `resolve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModuleStyle {
    /// Relative specifiers (`./x`, `../x/index`) with or without an extension.
    EcmaScript,
    /// Dotted module names, relative (`.m`, `..pkg.m`) or from the repository root.
    Python,
    /// Import paths inside the module named by the nearest `go.mod`; a package is a directory.
    Go,
    /// `crate::`/`super::`/`self::` paths and child modules, mapped to `a.rs` or `a/mod.rs`.
    Rust,
    /// Fully qualified class names (`a.b.C` is `a/b/C.java` under any source root); a package
    /// is a directory.
    Java,
}

/// Where a signature's text starts or ends, relative to the declaration node.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bound {
    /// The start of the child in this field.
    FieldStart(&'static str),
    /// The end of the child in this field.
    FieldEnd(&'static str),
    /// The start of the first child of this kind.
    ChildStart(&'static str),
    /// The end of the first child of this kind.
    ChildEnd(&'static str),
    /// The end of the declaration's name.
    NameEnd,
    /// The start of the declaration.
    NodeStart,
    /// The end of the declaration.
    NodeEnd,
}

/// How a signature is read (docs/protocol.md 2.5, 11.3): the normalised tokens from the first
/// bound of `from` the declaration has to the first bound of `to` it has; none when either is
/// missing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SignatureSpec {
    /// Candidates for the start, in order.
    pub from: &'static [Bound],
    /// Candidates for the end, in order.
    pub to: &'static [Bound],
    /// Kinds of direct children left out (`fn`, annotations); the name is always left out.
    pub skip: &'static [&'static str],
    /// A final token dropped (Python's `:` after a class header, Rust's `;` of a unit struct).
    pub drop_trailing: Option<&'static str>,
}

/// The per-language table: every language-specific fact the generic extraction needs.
pub(crate) struct Syntax {
    /// Node kinds that wrap a definition and belong to its range (`export`,
    /// `decorated_definition`).
    pub wrapper_kinds: &'static [&'static str],
    /// Node kinds of a declarator that can be a definition (`const f = () => {}`)...
    pub declarator_kinds: &'static [&'static str],
    /// ... and of the declaration holding it, which belongs to the range when it declares one
    /// variable only.
    pub declaration_kinds: &'static [&'static str],
    /// Node kinds of preceding siblings that belong to a definition's range (decorators,
    /// attributes). Comments between them and the definition are passed over.
    pub attribute_kinds: &'static [&'static str],
    /// Node kinds of comments, dropped from signatures.
    pub comment_kinds: &'static [&'static str],
    /// The field of a definition holding a function value and the kinds such a value has: the
    /// value is the body calls belong to and the source of the signature.
    pub function_value: Option<(&'static str, &'static [&'static str])>,
    /// Node kinds that only declare (TS overload signatures): folded into the declaration of
    /// the same name that follows.
    pub overload_kinds: &'static [&'static str],
    /// Method names that make a method the constructor (`constructor`).
    pub constructor_names: &'static [&'static str],
    /// Keywords before a method's name that make it an accessor (`get`, `set`).
    pub accessors: &'static [(&'static str, SymbolKind)],
    /// The name of a definition that has none (TS `export default function () {}`); such a
    /// definition is the file's default export.
    pub anonymous_name: Option<&'static str>,
    /// How callables' signatures are read.
    pub callable_signature: SignatureSpec,
    /// How other kinds' signatures are read; a kind not listed has none.
    pub type_signatures: &'static [(SymbolKind, SignatureSpec)],
    /// Receivers that mean "the current instance or type" (`this`, `self`, `Self`).
    pub self_receivers: &'static [&'static str],
    /// Node kinds of receivers whose text is followed (others are written `(..)`).
    pub receiver_kinds: &'static [&'static str],
    /// What separates a path receiver from its callee (`::` in Rust).
    pub path_separator: &'static str,
    /// First segments of a path that name a module relative to the file (`crate`, `super`).
    pub path_roots: &'static [&'static str],
    /// Whether a bare call reaches the members of the enclosing types (Java: `m()` in a class
    /// means `this.m()` or the static `C.m()`).
    pub bare_calls_reach_members: bool,
    /// Whether bare names not defined in the file are looked up in its package (Go, Java).
    pub package_scope: bool,
    /// Whether `T.m()` with a `T` not defined in the file may name a type of the package
    /// (Java's static calls; Go has none, and `x.m()` on a value is never bound).
    pub package_types: bool,
    /// Whether `new T(..)` calls a constructor named after its class (`T.T`, Java).
    pub constructors_named_after_type: bool,
}

/// Everything the analysis needs to know about one language.
pub(crate) struct LanguageSpec {
    /// The language this entry describes.
    pub language: Language,
    /// A short lowercase name (`typescript`), also the worker's argument.
    pub name: &'static str,
    /// File suffixes, without the dot.
    pub extensions: &'static [&'static str],
    /// The tree-sitter grammar.
    pub grammar: fn() -> tree_sitter::Language,
    /// Query text for definitions (`symbols.scm`).
    pub symbols_query: &'static str,
    /// Query text for call sites (`calls.scm`).
    pub calls_query: &'static str,
    /// Query text for imports (`imports.scm`).
    pub imports_query: &'static str,
    /// The table of language facts.
    pub syntax: &'static Syntax,
    /// How imported modules are named.
    pub module_style: ModuleStyle,
    /// The compiled queries, built on first use.
    pub queries: &'static OnceLock<Result<Queries, String>>,
}

/// The compiled queries of one language: the three `.scm` files as one query, so a file's
/// tree is walked once for all of them (a query cursor's walk costs about as much as the
/// parse). Patterns keep their files' order: symbols, then imports, then calls.
pub(crate) struct Queries {
    /// Definitions, imports and call sites, in that order.
    pub all: Query,
    /// The first pattern of the imports query in [`Queries::all`].
    pub imports_from: usize,
    /// The first pattern of the calls query in [`Queries::all`].
    pub calls_from: usize,
}

/// Which of a language's queries a pattern of [`Queries::all`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueryPart {
    /// `symbols.scm`.
    Symbols,
    /// `imports.scm`.
    Imports,
    /// `calls.scm`.
    Calls,
}

impl Queries {
    /// The query the pattern `pattern` of [`Queries::all`] belongs to.
    pub(crate) fn part(&self, pattern: usize) -> QueryPart {
        if pattern >= self.calls_from {
            QueryPart::Calls
        } else if pattern >= self.imports_from {
            QueryPart::Imports
        } else {
            QueryPart::Symbols
        }
    }
}

/// The registry, in [`Language`] order; suffixes must not repeat.
static SPECS: [&LanguageSpec; 6] = [
    &languages::typescript::TYPESCRIPT,
    &languages::typescript::TSX,
    &languages::python::PYTHON,
    &languages::go::GO,
    &languages::rust::RUST,
    &languages::java::JAVA,
];

impl Language {
    /// Every supported language.
    pub const ALL: [Language; 6] = [
        Language::TypeScript,
        Language::Tsx,
        Language::Python,
        Language::Go,
        Language::Rust,
        Language::Java,
    ];

    /// The language of a file, by its suffix (`src/a.ts` -> TypeScript); `None` when the
    /// suffix is not supported.
    pub fn for_path(path: &str) -> Option<Language> {
        let file_name = path.rsplit('/').next().unwrap_or(path);
        let (stem, ext) = file_name.rsplit_once('.')?;
        if stem.is_empty() {
            return None;
        }
        SPECS
            .iter()
            .find(|spec| spec.extensions.contains(&ext))
            .map(|spec| spec.language)
    }

    /// A short lowercase name (`typescript`, `tsx`, `python`, `go`, `rust`, `java`).
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The language called [`Language::name`] `name`.
    pub fn from_name(name: &str) -> Option<Language> {
        Language::ALL
            .into_iter()
            .find(|language| language.name() == name)
    }

    /// The file suffixes of this language, without the dot.
    pub fn extensions(self) -> &'static [&'static str] {
        self.spec().extensions
    }

    /// The tree-sitter grammar of this language (what a bare parse, the floor of an
    /// analysis, needs).
    pub fn grammar(self) -> tree_sitter::Language {
        (self.spec().grammar)()
    }

    pub(crate) fn spec(self) -> &'static LanguageSpec {
        let index = match self {
            Language::TypeScript => 0,
            Language::Tsx => 1,
            Language::Python => 2,
            Language::Go => 3,
            Language::Rust => 4,
            Language::Java => 5,
        };
        SPECS[index]
    }
}

impl LanguageSpec {
    /// The compiled queries; an error names the query that does not compile (a bug in a bundled
    /// `.scm` file, caught by the query test).
    pub(crate) fn queries(&self) -> Result<&Queries, String> {
        self.queries
            .get_or_init(|| compile_queries(self))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The signature rule for a symbol kind.
    pub(crate) fn signature_spec(&self, kind: SymbolKind) -> Option<&SignatureSpec> {
        if kind.is_callable() {
            return Some(&self.syntax.callable_signature);
        }
        self.syntax
            .type_signatures
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, spec)| spec)
    }
}

fn compile_queries(spec: &LanguageSpec) -> Result<Queries, String> {
    let grammar = (spec.grammar)();
    let compile = |what: &str, text: &str| {
        Query::new(&grammar, text).map_err(|err| format!("{} {what} query: {err}", spec.name))
    };
    // Each file alone first: an error names the file, and the counts place its patterns.
    let symbols = compile("symbols", spec.symbols_query)?.pattern_count();
    let imports = compile("imports", spec.imports_query)?.pattern_count();
    compile("calls", spec.calls_query)?;
    let text = format!(
        "{}\n{}\n{}\n",
        spec.symbols_query, spec.imports_query, spec.calls_query
    );
    Ok(Queries {
        all: compile("combined", &text)?,
        imports_from: symbols,
        calls_from: symbols + imports,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn every_bundled_query_compiles() {
        for language in Language::ALL {
            if let Err(err) = language.spec().queries() {
                panic!("{err}");
            }
        }
    }

    #[test]
    fn every_grammar_loads_with_a_compatible_abi() {
        for language in Language::ALL {
            let grammar = (language.spec().grammar)();
            let abi = grammar.abi_version();
            assert!(
                (tree_sitter::MIN_COMPATIBLE_LANGUAGE_VERSION..=tree_sitter::LANGUAGE_VERSION)
                    .contains(&abi),
                "{}: ABI {abi}",
                language.name()
            );
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&grammar).unwrap();
        }
    }

    #[test]
    fn registry_is_in_language_order() {
        for language in Language::ALL {
            assert_eq!(language.spec().language, language);
            assert_eq!(Language::from_name(language.name()), Some(language));
        }
    }

    #[test]
    fn suffixes_map_to_languages() {
        for (path, expected) in [
            ("a.ts", Some(Language::TypeScript)),
            ("src/a.mts", Some(Language::TypeScript)),
            ("a.cts", Some(Language::TypeScript)),
            ("a.tsx", Some(Language::Tsx)),
            ("a.js", Some(Language::Tsx)),
            ("a.jsx", Some(Language::Tsx)),
            ("a.mjs", Some(Language::Tsx)),
            ("a.cjs", Some(Language::Tsx)),
            ("pkg/a.py", Some(Language::Python)),
            ("a.pyi", Some(Language::Python)),
            ("cmd/main.go", Some(Language::Go)),
            ("src/lib.rs", Some(Language::Rust)),
            ("src/main/java/a/B.java", Some(Language::Java)),
            ("a.kt", None),
            ("ts", None),
            (".ts", None),
            ("dir.ts/file", None),
        ] {
            assert_eq!(Language::for_path(path), expected, "{path}");
        }
    }

    #[test]
    fn suffixes_do_not_repeat() {
        let mut all: Vec<&str> = SPECS
            .iter()
            .flat_map(|s| s.extensions.iter().copied())
            .collect();
        let before = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), before);
    }
}
