//! The language registry: which file suffixes map to which tree-sitter grammar, and the
//! queries and small facts each language contributes. Adding a language is one more
//! [`LanguageSpec`] entry plus its `.scm` files; the algorithms in `extract` do not change.

use std::sync::OnceLock;

use tree_sitter::Query;

/// A language wit understands. Each file suffix maps to exactly one (PROTOCOL-NOTES 2.3).
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
}

/// How a language names the modules it imports, which decides how imports are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModuleStyle {
    /// Relative specifiers (`./x`, `../x/index`) with or without an extension.
    EcmaScript,
    /// Dotted module names, relative (`.m`, `..pkg.m`) or from the repository root.
    Python,
}

/// Everything the analysis needs to know about one language.
pub(crate) struct LanguageSpec {
    /// The language this entry describes.
    pub language: Language,
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
    /// Node kinds that wrap a definition and belong to its range (`export`, decorators).
    pub wrapper_kinds: &'static [&'static str],
    /// Node kinds that hold a single-variable declaration (`const f = () => {}`), which then
    /// belongs to the range of the function it declares.
    pub declaration_kinds: &'static [&'static str],
    /// Node kinds of comments, dropped from signatures.
    pub comment_kinds: &'static [&'static str],
    /// Receivers that mean "the current instance or class" (`this`, `self`, `cls`).
    pub self_receivers: &'static [&'static str],
    /// How imported modules are named.
    pub module_style: ModuleStyle,
    /// The compiled queries, built on first use.
    queries: &'static OnceLock<Result<Queries, String>>,
}

/// The compiled queries of one language.
pub(crate) struct Queries {
    /// Definitions.
    pub symbols: Query,
    /// Call sites.
    pub calls: Query,
    /// Imports.
    pub imports: Query,
}

static TS_QUERIES: OnceLock<Result<Queries, String>> = OnceLock::new();
static TSX_QUERIES: OnceLock<Result<Queries, String>> = OnceLock::new();
static PY_QUERIES: OnceLock<Result<Queries, String>> = OnceLock::new();

const TS_SYMBOLS: &str = include_str!("queries/typescript/symbols.scm");
const TS_CALLS: &str = include_str!("queries/typescript/calls.scm");
const TS_IMPORTS: &str = include_str!("queries/typescript/imports.scm");
const TSX_CALLS: &str = concat!(
    include_str!("queries/typescript/calls.scm"),
    include_str!("queries/tsx/calls.scm")
);
const PY_SYMBOLS: &str = include_str!("queries/python/symbols.scm");
const PY_CALLS: &str = include_str!("queries/python/calls.scm");
const PY_IMPORTS: &str = include_str!("queries/python/imports.scm");

fn typescript_grammar() -> tree_sitter::Language {
    tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
}

fn tsx_grammar() -> tree_sitter::Language {
    tree_sitter_typescript::LANGUAGE_TSX.into()
}

fn python_grammar() -> tree_sitter::Language {
    tree_sitter_python::LANGUAGE.into()
}

/// The registry. Order does not matter; suffixes must not repeat.
static SPECS: [LanguageSpec; 3] = [
    LanguageSpec {
        language: Language::TypeScript,
        extensions: &["ts", "mts", "cts"],
        grammar: typescript_grammar,
        symbols_query: TS_SYMBOLS,
        calls_query: TS_CALLS,
        imports_query: TS_IMPORTS,
        wrapper_kinds: &["export_statement"],
        declaration_kinds: &["lexical_declaration", "variable_declaration"],
        comment_kinds: &["comment"],
        self_receivers: &["this"],
        module_style: ModuleStyle::EcmaScript,
        queries: &TS_QUERIES,
    },
    LanguageSpec {
        language: Language::Tsx,
        extensions: &["tsx", "js", "jsx", "mjs", "cjs"],
        grammar: tsx_grammar,
        symbols_query: TS_SYMBOLS,
        calls_query: TSX_CALLS,
        imports_query: TS_IMPORTS,
        wrapper_kinds: &["export_statement"],
        declaration_kinds: &["lexical_declaration", "variable_declaration"],
        comment_kinds: &["comment", "html_comment"],
        self_receivers: &["this"],
        module_style: ModuleStyle::EcmaScript,
        queries: &TSX_QUERIES,
    },
    LanguageSpec {
        language: Language::Python,
        extensions: &["py", "pyi"],
        grammar: python_grammar,
        symbols_query: PY_SYMBOLS,
        calls_query: PY_CALLS,
        imports_query: PY_IMPORTS,
        wrapper_kinds: &["decorated_definition"],
        declaration_kinds: &[],
        comment_kinds: &["comment"],
        self_receivers: &["self", "cls"],
        module_style: ModuleStyle::Python,
        queries: &PY_QUERIES,
    },
];

impl Language {
    /// Every supported language.
    pub const ALL: [Language; 3] = [Language::TypeScript, Language::Tsx, Language::Python];

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

    /// A short lowercase name (`typescript`, `tsx`, `python`).
    pub fn name(self) -> &'static str {
        match self {
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Python => "python",
        }
    }

    /// The language called [`Language::name`] `name`.
    pub fn from_name(name: &str) -> Option<Language> {
        [Language::TypeScript, Language::Tsx, Language::Python]
            .into_iter()
            .find(|language| language.name() == name)
    }

    /// The file suffixes of this language, without the dot.
    pub fn extensions(self) -> &'static [&'static str] {
        self.spec().extensions
    }

    pub(crate) fn spec(self) -> &'static LanguageSpec {
        match self {
            Language::TypeScript => &SPECS[0],
            Language::Tsx => &SPECS[1],
            Language::Python => &SPECS[2],
        }
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
}

fn compile_queries(spec: &LanguageSpec) -> Result<Queries, String> {
    let grammar = (spec.grammar)();
    let compile = |what: &str, text: &str| {
        Query::new(&grammar, text)
            .map_err(|err| format!("{} {what} query: {err}", spec.language.name()))
    };
    Ok(Queries {
        symbols: compile("symbols", spec.symbols_query)?,
        calls: compile("calls", spec.calls_query)?,
        imports: compile("imports", spec.imports_query)?,
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
            ("a.rs", None),
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
