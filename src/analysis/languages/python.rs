//! Python: functions and classes; decorators belong to the range through the
//! `decorated_definition` wrapper.

use std::sync::OnceLock;

use crate::analysis::language::{
    Bound, Language, LanguageSpec, ModuleStyle, Queries, SignatureSpec, Syntax,
};
use crate::analysis::model::SymbolKind;

static SYNTAX: Syntax = Syntax {
    wrapper_kinds: &["decorated_definition"],
    declarator_kinds: &[],
    declaration_kinds: &[],
    attribute_kinds: &[],
    comment_kinds: &["comment"],
    function_value: None,
    overload_kinds: &[],
    constructor_names: &[],
    accessors: &[],
    anonymous_name: None,
    callable_signature: SignatureSpec {
        from: &[
            Bound::FieldStart("type_parameters"),
            Bound::FieldStart("parameters"),
        ],
        to: &[
            Bound::FieldEnd("return_type"),
            Bound::FieldEnd("parameters"),
        ],
        skip: &[],
        drop_trailing: None,
    },
    type_signatures: &[(
        SymbolKind::Class,
        SignatureSpec {
            from: &[Bound::NameEnd, Bound::NodeStart],
            to: &[Bound::FieldStart("body")],
            skip: &[],
            drop_trailing: Some(":"),
        },
    )],
    self_receivers: &["self", "cls"],
    receiver_kinds: &["identifier", "this", "member_expression", "attribute"],
    path_separator: ".",
    path_roots: &[],
    bare_calls_reach_members: false,
    package_scope: false,
    package_types: false,
    constructors_named_after_type: false,
};

static QUERIES: OnceLock<Result<Queries, String>> = OnceLock::new();

fn grammar() -> tree_sitter::Language {
    tree_sitter_python::LANGUAGE.into()
}

/// `.py .pyi`.
pub(crate) static PYTHON: LanguageSpec = LanguageSpec {
    language: Language::Python,
    name: "python",
    extensions: &["py", "pyi"],
    grammar,
    symbols_query: include_str!("python/symbols.scm"),
    calls_query: include_str!("python/calls.scm"),
    imports_query: include_str!("python/imports.scm"),
    syntax: &SYNTAX,
    module_style: ModuleStyle::Python,
    queries: &QUERIES,
};
