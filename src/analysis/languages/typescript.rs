//! TypeScript and JavaScript (the TSX grammar parses JavaScript with JSX): one table, two
//! grammars; TSX adds JSX elements as calls and HTML comments.

use std::sync::OnceLock;

use crate::analysis::language::{
    Bound, Language, LanguageSpec, ModuleStyle, Queries, SignatureSpec, Syntax,
};
use crate::analysis::model::SymbolKind;

const SYMBOLS: &str = include_str!("typescript/symbols.scm");
const CALLS: &str = include_str!("typescript/calls.scm");
const IMPORTS: &str = include_str!("typescript/imports.scm");
const TSX_CALLS: &str = concat!(
    include_str!("typescript/calls.scm"),
    include_str!("tsx/calls.scm")
);

/// A function's signature: type parameters, parameters, return type (docs/protocol.md 2.5).
const CALLABLE: SignatureSpec = SignatureSpec {
    from: &[
        Bound::FieldStart("type_parameters"),
        Bound::FieldStart("parameters"),
        Bound::FieldStart("parameter"),
    ],
    to: &[
        Bound::FieldEnd("return_type"),
        Bound::FieldEnd("parameters"),
        Bound::FieldEnd("parameter"),
    ],
    skip: &[],
    drop_trailing: None,
};

const TYPES: &[(SymbolKind, SignatureSpec)] = &[
    (
        SymbolKind::Class,
        SignatureSpec {
            from: &[Bound::NameEnd, Bound::NodeStart],
            to: &[Bound::FieldStart("body")],
            skip: &[],
            drop_trailing: None,
        },
    ),
    (
        SymbolKind::Interface,
        SignatureSpec {
            from: &[Bound::NameEnd],
            to: &[Bound::FieldEnd("body")],
            skip: &[],
            drop_trailing: None,
        },
    ),
    (
        SymbolKind::TypeAlias,
        SignatureSpec {
            from: &[Bound::NameEnd],
            to: &[Bound::FieldEnd("value")],
            skip: &[],
            drop_trailing: None,
        },
    ),
    (
        SymbolKind::Enum,
        SignatureSpec {
            from: &[Bound::FieldStart("body")],
            to: &[Bound::FieldEnd("body")],
            skip: &[],
            drop_trailing: None,
        },
    ),
];

const fn syntax(comment_kinds: &'static [&'static str]) -> Syntax {
    Syntax {
        wrapper_kinds: &["export_statement"],
        declarator_kinds: &["variable_declarator"],
        declaration_kinds: &["lexical_declaration", "variable_declaration"],
        attribute_kinds: &["decorator"],
        comment_kinds,
        function_value: Some((
            "value",
            &[
                "arrow_function",
                "function_expression",
                "generator_function",
            ],
        )),
        overload_kinds: &["function_signature", "method_signature"],
        constructor_names: &["constructor"],
        accessors: &[("get", SymbolKind::Getter), ("set", SymbolKind::Setter)],
        anonymous_name: Some("default"),
        callable_signature: CALLABLE,
        type_signatures: TYPES,
        self_receivers: &["this"],
        receiver_kinds: &["identifier", "this", "member_expression", "attribute"],
        path_separator: ".",
        path_roots: &[],
        bare_calls_reach_members: false,
        package_scope: false,
        package_types: false,
        constructors_named_after_type: false,
    }
}

static TS_SYNTAX: Syntax = syntax(&["comment"]);
static TSX_SYNTAX: Syntax = syntax(&["comment", "html_comment"]);
static TS_QUERIES: OnceLock<Result<Queries, String>> = OnceLock::new();
static TSX_QUERIES: OnceLock<Result<Queries, String>> = OnceLock::new();

fn typescript_grammar() -> tree_sitter::Language {
    tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
}

fn tsx_grammar() -> tree_sitter::Language {
    tree_sitter_typescript::LANGUAGE_TSX.into()
}

/// `.ts .mts .cts`.
pub(crate) static TYPESCRIPT: LanguageSpec = LanguageSpec {
    language: Language::TypeScript,
    name: "typescript",
    extensions: &["ts", "mts", "cts"],
    grammar: typescript_grammar,
    symbols_query: SYMBOLS,
    calls_query: CALLS,
    imports_query: IMPORTS,
    syntax: &TS_SYNTAX,
    module_style: ModuleStyle::EcmaScript,
    queries: &TS_QUERIES,
};

/// `.tsx .js .jsx .mjs .cjs`.
pub(crate) static TSX: LanguageSpec = LanguageSpec {
    language: Language::Tsx,
    name: "tsx",
    extensions: &["tsx", "js", "jsx", "mjs", "cjs"],
    grammar: tsx_grammar,
    symbols_query: SYMBOLS,
    calls_query: TSX_CALLS,
    imports_query: IMPORTS,
    syntax: &TSX_SYNTAX,
    module_style: ModuleStyle::EcmaScript,
    queries: &TSX_QUERIES,
};
