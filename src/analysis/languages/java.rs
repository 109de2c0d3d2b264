//! Java: classes, interfaces, enums, records, methods and constructors (`Class.method`,
//! `Class.Class`, nested `Outer.Inner.method`); annotations are inside the declaration's
//! `modifiers`, so they belong to the range by themselves.

use std::sync::OnceLock;

use crate::analysis::language::{
    Bound, Language, LanguageSpec, ModuleStyle, Queries, SignatureSpec, Syntax,
};
use crate::analysis::model::SymbolKind;

/// A type's header and member list.
const MEMBERS: SignatureSpec = SignatureSpec {
    from: &[Bound::NameEnd],
    to: &[Bound::FieldEnd("body")],
    skip: &[],
    drop_trailing: None,
};

static SYNTAX: Syntax = Syntax {
    wrapper_kinds: &[],
    declarator_kinds: &[],
    declaration_kinds: &[],
    attribute_kinds: &[],
    comment_kinds: &["line_comment", "block_comment"],
    function_value: None,
    overload_kinds: &[],
    constructor_names: &[],
    accessors: &[],
    anonymous_name: None,
    // Type parameters, return type, parameters, `throws`; modifiers and annotations come
    // before, the name is left out.
    callable_signature: SignatureSpec {
        from: &[
            Bound::FieldStart("type_parameters"),
            Bound::FieldStart("type"),
            Bound::FieldStart("parameters"),
        ],
        to: &[
            Bound::ChildEnd("throws"),
            Bound::FieldEnd("dimensions"),
            Bound::FieldEnd("parameters"),
        ],
        skip: &["annotation", "marker_annotation"],
        drop_trailing: None,
    },
    type_signatures: &[
        (
            SymbolKind::Class,
            SignatureSpec {
                from: &[Bound::NameEnd],
                to: &[Bound::FieldStart("body")],
                skip: &[],
                drop_trailing: None,
            },
        ),
        (SymbolKind::Interface, MEMBERS),
        (SymbolKind::Enum, MEMBERS),
        (SymbolKind::Record, MEMBERS),
    ],
    self_receivers: &["this"],
    receiver_kinds: &["identifier", "this"],
    path_separator: ".",
    path_roots: &[],
    bare_calls_reach_members: true,
    package_scope: true,
    package_types: true,
    constructors_named_after_type: true,
};

static QUERIES: OnceLock<Result<Queries, String>> = OnceLock::new();

fn grammar() -> tree_sitter::Language {
    tree_sitter_java::LANGUAGE.into()
}

/// `.java`.
pub(crate) static JAVA: LanguageSpec = LanguageSpec {
    language: Language::Java,
    name: "java",
    extensions: &["java"],
    grammar,
    symbols_query: include_str!("java/symbols.scm"),
    calls_query: include_str!("java/calls.scm"),
    imports_query: include_str!("java/imports.scm"),
    syntax: &SYNTAX,
    module_style: ModuleStyle::Java,
    queries: &QUERIES,
};
