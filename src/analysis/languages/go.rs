//! Go: functions, methods qualified by their receiver's type (`Type.Method`, pointer receiver
//! or not), type declarations; a package is the `.go` files of one directory.

use std::sync::OnceLock;

use crate::analysis::language::{
    Bound, Language, LanguageSpec, ModuleStyle, Queries, SignatureSpec, Syntax,
};
use crate::analysis::model::SymbolKind;

/// A type's header and member list: everything after the name (`[T any] struct { .. }`).
const TYPE: SignatureSpec = SignatureSpec {
    from: &[Bound::NameEnd],
    to: &[Bound::NodeEnd],
    skip: &[],
    drop_trailing: None,
};

static SYNTAX: Syntax = Syntax {
    wrapper_kinds: &[],
    // `type T struct {..}`: the `type` keyword belongs to the range of its only spec.
    declarator_kinds: &["type_spec", "type_alias"],
    declaration_kinds: &["type_declaration"],
    attribute_kinds: &[],
    comment_kinds: &["comment"],
    function_value: None,
    overload_kinds: &[],
    constructor_names: &[],
    accessors: &[],
    anonymous_name: None,
    // Type parameters, parameters and results; the receiver comes before the name.
    callable_signature: SignatureSpec {
        from: &[
            Bound::FieldStart("type_parameters"),
            Bound::FieldStart("parameters"),
        ],
        to: &[Bound::FieldEnd("result"), Bound::FieldEnd("parameters")],
        skip: &[],
        drop_trailing: None,
    },
    type_signatures: &[
        (SymbolKind::Struct, TYPE),
        (SymbolKind::Interface, TYPE),
        (SymbolKind::TypeAlias, TYPE),
    ],
    self_receivers: &[],
    receiver_kinds: &["identifier"],
    path_separator: ".",
    path_roots: &[],
    bare_calls_reach_members: false,
    package_scope: true,
    package_types: false,
    constructors_named_after_type: false,
};

static QUERIES: OnceLock<Result<Queries, String>> = OnceLock::new();

fn grammar() -> tree_sitter::Language {
    tree_sitter_go::LANGUAGE.into()
}

/// `.go`.
pub(crate) static GO: LanguageSpec = LanguageSpec {
    language: Language::Go,
    name: "go",
    extensions: &["go"],
    grammar,
    symbols_query: include_str!("go/symbols.scm"),
    calls_query: include_str!("go/calls.scm"),
    imports_query: include_str!("go/imports.scm"),
    syntax: &SYNTAX,
    module_style: ModuleStyle::Go,
    queries: &QUERIES,
};
