//! Rust: free functions, `impl` items qualified by their type (`Type.method`, also for
//! `impl Trait for Type`, through the `@scope` of the `impl` block), traits and their methods,
//! structs, enums, type aliases; attributes belong to the range.

use std::sync::OnceLock;

use crate::analysis::language::{
    Bound, Language, LanguageSpec, ModuleStyle, Queries, SignatureSpec, Syntax,
};
use crate::analysis::model::SymbolKind;

/// A type's header and member list: everything after the name.
const TYPE: SignatureSpec = SignatureSpec {
    from: &[Bound::NameEnd],
    to: &[Bound::FieldEnd("body")],
    skip: &[],
    drop_trailing: None,
};

static SYNTAX: Syntax = Syntax {
    wrapper_kinds: &[],
    declarator_kinds: &[],
    declaration_kinds: &[],
    attribute_kinds: &["attribute_item"],
    comment_kinds: &["line_comment", "block_comment"],
    function_value: None,
    overload_kinds: &[],
    constructor_names: &[],
    accessors: &[],
    anonymous_name: None,
    // `async`/`unsafe`/`const` in front, generics, parameters, return type, `where`; no
    // visibility, no `fn`, no name.
    callable_signature: SignatureSpec {
        from: &[
            Bound::ChildStart("function_modifiers"),
            Bound::FieldStart("type_parameters"),
            Bound::FieldStart("parameters"),
        ],
        to: &[
            Bound::ChildEnd("where_clause"),
            Bound::FieldEnd("return_type"),
            Bound::FieldEnd("parameters"),
        ],
        skip: &["fn"],
        drop_trailing: None,
    },
    type_signatures: &[
        (
            SymbolKind::Struct,
            SignatureSpec {
                from: &[Bound::NameEnd],
                to: &[Bound::FieldEnd("body"), Bound::NodeEnd],
                skip: &[],
                drop_trailing: Some(";"),
            },
        ),
        (SymbolKind::Enum, TYPE),
        (SymbolKind::Trait, TYPE),
        (
            SymbolKind::TypeAlias,
            SignatureSpec {
                from: &[Bound::NameEnd],
                to: &[Bound::FieldEnd("type")],
                skip: &[],
                drop_trailing: None,
            },
        ),
    ],
    self_receivers: &["self", "Self"],
    receiver_kinds: &["identifier", "self", "scoped_identifier", "crate", "super"],
    path_separator: "::",
    path_roots: &["crate", "super", "self"],
    bare_calls_reach_members: false,
    package_scope: false,
    package_types: false,
    constructors_named_after_type: false,
};

static QUERIES: OnceLock<Result<Queries, String>> = OnceLock::new();

fn grammar() -> tree_sitter::Language {
    tree_sitter_rust::LANGUAGE.into()
}

/// `.rs`.
pub(crate) static RUST: LanguageSpec = LanguageSpec {
    language: Language::Rust,
    name: "rust",
    extensions: &["rs"],
    grammar,
    symbols_query: include_str!("rust/symbols.scm"),
    calls_query: include_str!("rust/calls.scm"),
    imports_query: include_str!("rust/imports.scm"),
    syntax: &SYNTAX,
    module_style: ModuleStyle::Rust,
    queries: &QUERIES,
};
