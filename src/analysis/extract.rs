//! One file's analysis: parse once, then read definitions (names, qualified names, ranges,
//! signatures) and imports out of the tree with the language's queries and table
//! ([`Syntax`]); the call sites are read and resolved in-file by `calls`. Nothing here names a
//! node kind of a particular language.
//!
//! Query conventions (`symbols.scm`): `@definition.<kind>` marks a definition, `@name` its
//! name, `@qualifier` a type that qualifies it from outside (a Go receiver), `@scope` with
//! `@scope.name` a node that qualifies what it contains without being a symbol (a Rust
//! `impl`), `@export.default` the name a default export refers to. `imports.scm`:
//! `@import.source` (or `@import.module`, `@import.package`) is the module; the binding is
//! `@import.namespace`, `@import.default`, `@import.named` (a node with `name`/`alias`
//! fields) or `@import.name` with an optional `@import.alias`.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

use super::calls;
use super::language::{Bound, Language, LanguageSpec, Queries, Syntax};
use super::matches::{self, MatchList};
use super::model::{Diagnostic, FileAnalysis, Import, ImportKind, Symbol, SymbolKind};
use super::nesting::Enclosing;
use super::signature::normalized_text;

/// How long one parse may take before it is abandoned (docs/protocol.md 2.6).
pub const PARSE_BUDGET: Duration = Duration::from_secs(5);

/// At most this many syntax errors are reported per file.
const MAX_SYNTAX_DIAGNOSTICS: usize = 20;

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
}

/// Parses `source` once and extracts its symbols, signatures, imports and calls. Broken code
/// yields what parses; a parse over the time budget yields nothing but a diagnostic.
pub fn analyze(language: Language, source: &str) -> FileAnalysis {
    analyze_with_budget(language, source, PARSE_BUDGET)
}

/// [`analyze`] with an explicit time budget for the parse.
pub fn analyze_with_budget(language: Language, source: &str, budget: Duration) -> FileAnalysis {
    let spec = language.spec();
    let queries = match spec.queries() {
        Ok(queries) => queries,
        Err(err) => return FileAnalysis::empty(Some(language), &err),
    };
    let Some(tree) = parse(spec, source, budget) else {
        return FileAnalysis::empty(Some(language), "parse exceeded the time budget");
    };
    let extractor = Extractor {
        spec,
        syntax: spec.syntax,
        source,
        queries,
    };
    extractor.run(&tree, language)
}

fn parse(spec: &LanguageSpec, source: &str, budget: Duration) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut parser = cell.borrow_mut();
        parser.set_language(&(spec.grammar)()).ok()?;
        let deadline = Instant::now() + budget;
        let mut check = |_: &ParseState| Instant::now() >= deadline;
        let bytes = source.as_bytes();
        let mut input = |offset: usize, _| bytes.get(offset..).unwrap_or(&[]);
        let options = ParseOptions::new().progress_callback(&mut check);
        let tree = parser.parse_with_options(&mut input, None, Some(options));
        if tree.is_none() {
            // A cancelled parse would otherwise resume on the next call.
            parser.reset();
        }
        tree
    })
}

/// A definition (or a scope) found by the symbols query, before merging overloads.
pub(crate) struct Raw<'t> {
    /// The definition node.
    pub node: Node<'t>,
    /// The function value of `const f = () => ..` and class fields: calls inside belong to
    /// `f`, and the signature is read from it.
    pub body_node: Option<Node<'t>>,
    name_node: Option<Node<'t>>,
    name: String,
    tag: String,
    /// A qualifier given from outside the node (a Go receiver's type).
    qualifier: Option<String>,
    /// A scope qualifies its contents but is no symbol.
    pub is_scope: bool,
    parent: Option<usize>,
    kind: SymbolKind,
    qualified_name: String,
    start: usize,
    end: usize,
    line: usize,
    signature: Option<String>,
    overload_only: bool,
}

struct Extractor<'a> {
    spec: &'static LanguageSpec,
    syntax: &'static Syntax,
    source: &'a str,
    queries: &'static Queries,
}

/// The source text of a node.
pub(crate) fn text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or("")
}

impl Extractor<'_> {
    fn run(&self, tree: &Tree, language: Language) -> FileAnalysis {
        let root = tree.root_node();
        let found = matches::collect(self.queries, root, self.source);
        let (raws, default_export) = self.definitions(&found.symbols);
        let (symbols, raw_to_symbol) = merge_overloads(&raws);
        let mut analysis = FileAnalysis {
            language: Some(language),
            symbols,
            calls: Vec::new(),
            imports: self.imports(&found.imports),
            default_export,
            diagnostics: syntax_diagnostics(root),
            by_qualified: Default::default(),
        };
        analysis.reindex();
        analysis.calls = calls::extract(
            &calls::Context {
                syntax: self.syntax,
                source: self.source,
                matches: &found.calls,
            },
            &raws,
            &raw_to_symbol,
            &analysis,
        );
        analysis
    }

    fn definitions<'t>(&self, matches: &MatchList<'t>) -> (Vec<Raw<'t>>, Option<String>) {
        let mut raws: Vec<Raw<'t>> = Vec::new();
        let mut seen: HashSet<usize> = HashSet::new();
        let mut default_export = None;
        for captures in matches.iter() {
            let mut def: Option<(Node<'t>, &str)> = None;
            let mut name: Option<Node<'t>> = None;
            let mut qualifier: Option<Node<'t>> = None;
            let mut is_scope = false;
            for &(cap_name, node) in captures {
                if let Some(tag) = cap_name.strip_prefix("definition.") {
                    def = Some((node, tag));
                } else if cap_name == "scope" {
                    def = Some((node, "scope"));
                    is_scope = true;
                } else if cap_name == "name" || cap_name == "scope.name" {
                    name = Some(node);
                } else if cap_name == "qualifier" {
                    qualifier = Some(node);
                } else if cap_name == "export.default" {
                    default_export = Some(text(node, self.source).to_owned());
                }
            }
            let Some((node, tag)) = def else { continue };
            if !seen.insert(node.id()) {
                continue;
            }
            let name_text = match (name, self.syntax.anonymous_name) {
                (Some(n), _) => text(n, self.source).to_owned(),
                (None, Some(anonymous)) if !is_scope => {
                    default_export = Some(anonymous.to_owned());
                    anonymous.to_owned()
                }
                (None, _) => continue,
            };
            let body_node = self.syntax.function_value.and_then(|(field, kinds)| {
                node.child_by_field_name(field)
                    .filter(|v| kinds.contains(&v.kind()))
            });
            raws.push(Raw {
                node,
                body_node,
                name_node: name,
                name: name_text,
                tag: tag.to_owned(),
                qualifier: qualifier.map(|q| text(q, self.source).to_owned()),
                is_scope,
                parent: None,
                kind: SymbolKind::Function,
                qualified_name: String::new(),
                start: 0,
                end: 0,
                line: 0,
                signature: None,
                overload_only: self.syntax.overload_kinds.contains(&node.kind()),
            });
        }
        raws.sort_by_key(|r| (r.node.start_byte(), std::cmp::Reverse(r.node.end_byte())));
        // The nearest definition above each one, by ranges (`nesting`).
        let mut enclosing = Enclosing::new(raws.iter().enumerate().map(|(i, r)| (r.node, i)));
        for i in 0..raws.len() {
            raws[i].parent = enclosing.of(raws[i].node);
            let parent = raws[i].parent.map(|p| (raws[p].kind, raws[p].is_scope));
            raws[i].kind = self.kind_of(&raws[i], parent);
            raws[i].qualified_name = match (&raws[i].qualifier, raws[i].parent) {
                (Some(q), _) => format!("{q}.{}", raws[i].name),
                (None, Some(p)) => format!("{}.{}", raws[p].qualified_name, raws[i].name),
                (None, None) => raws[i].name.clone(),
            };
            if raws[i].is_scope {
                continue;
            }
            let (start, end, line) = self.range(raws[i].node);
            raws[i].start = start;
            raws[i].end = end;
            raws[i].line = line;
            raws[i].signature = self.signature(&raws[i]);
        }
        (raws, default_export)
    }

    /// The symbol kind: the query's tag, refined by the table (constructors and accessors by
    /// name or keyword; functions directly inside a type or scope are methods).
    fn kind_of(&self, raw: &Raw<'_>, parent: Option<(SymbolKind, bool)>) -> SymbolKind {
        let tagged = SymbolKind::from_tag(&raw.tag).unwrap_or(SymbolKind::Function);
        match tagged {
            SymbolKind::Method => {
                if self.syntax.constructor_names.contains(&raw.name.as_str()) {
                    return SymbolKind::Constructor;
                }
                let name_start = raw.name_node.map_or(usize::MAX, |n| n.start_byte());
                let mut cursor = raw.node.walk();
                let accessor = raw
                    .node
                    .children(&mut cursor)
                    .take_while(|c| c.start_byte() < name_start)
                    .find_map(|c| {
                        self.syntax
                            .accessors
                            .iter()
                            .find(|(keyword, _)| *keyword == c.kind())
                            .map(|(_, kind)| *kind)
                    });
                accessor.unwrap_or(SymbolKind::Method)
            }
            SymbolKind::Function
                if parent.is_some_and(|(kind, is_scope)| is_scope || kind.is_type()) =>
            {
                SymbolKind::Method
            }
            other => other,
        }
    }

    /// The declaration's range: a single-variable declaration, wrappers (`export`) and
    /// preceding attributes (decorators, `#[..]`) belong to it.
    fn range(&self, node: Node<'_>) -> (usize, usize, usize) {
        let syntax = self.syntax;
        let mut outer = node;
        if syntax.declarator_kinds.contains(&node.kind()) {
            if let Some(decl) = node.parent() {
                if syntax.declaration_kinds.contains(&decl.kind()) && decl.named_child_count() == 1
                {
                    outer = decl;
                }
            }
        }
        while let Some(parent) = outer.parent() {
            if syntax.wrapper_kinds.contains(&parent.kind()) {
                outer = parent;
            } else {
                break;
            }
        }
        let mut first = outer;
        let mut prev = outer.prev_named_sibling();
        while let Some(p) = prev {
            if syntax.attribute_kinds.contains(&p.kind()) {
                first = p;
            } else if !syntax.comment_kinds.contains(&p.kind()) || syntax.attribute_kinds.is_empty()
            {
                break;
            }
            prev = p.prev_named_sibling();
        }
        (
            first.start_byte(),
            outer.end_byte(),
            first.start_position().row + 1,
        )
    }

    fn signature(&self, raw: &Raw<'_>) -> Option<String> {
        let spec = self.spec.signature_spec(raw.kind)?;
        let node = if raw.kind.is_callable() {
            raw.body_node.unwrap_or(raw.node)
        } else {
            raw.node
        };
        let bound = |b: &Bound| -> Option<usize> {
            match *b {
                Bound::FieldStart(f) => node.child_by_field_name(f).map(|n| n.start_byte()),
                Bound::FieldEnd(f) => node.child_by_field_name(f).map(|n| n.end_byte()),
                Bound::ChildStart(k) => child_of_kind(node, k).map(|n| n.start_byte()),
                Bound::ChildEnd(k) => child_of_kind(node, k).map(|n| n.end_byte()),
                Bound::NameEnd => raw.name_node.map(|n| n.end_byte()),
                Bound::NodeStart => Some(node.start_byte()),
                Bound::NodeEnd => Some(node.end_byte()),
            }
        };
        let start = spec.from.iter().find_map(bound)?;
        let end = spec.to.iter().find_map(bound)?;
        let mut skip: Vec<(usize, usize)> = Vec::new();
        if let Some(name) = raw.name_node {
            skip.push((name.start_byte(), name.end_byte()));
        }
        if !spec.skip.is_empty() {
            let mut cursor = node.walk();
            skip.extend(
                node.children(&mut cursor)
                    .filter(|c| spec.skip.contains(&c.kind()))
                    .map(|c| (c.start_byte(), c.end_byte())),
            );
        }
        Some(normalized_text(
            node,
            start,
            end,
            self.source,
            self.syntax.comment_kinds,
            &skip,
            spec.drop_trailing,
        ))
    }

    fn imports(&self, matches: &MatchList<'_>) -> Vec<Import> {
        let mut out = Vec::new();
        for captures in matches.iter() {
            let mut get: HashMap<&str, Node<'_>> = HashMap::new();
            for &(name, node) in captures {
                get.insert(name, node);
            }
            let t = |n: Node<'_>| text(n, self.source).to_owned();
            let Some(module) = get
                .get("import.source")
                .or_else(|| get.get("import.module"))
                .or_else(|| get.get("import.package"))
            else {
                continue;
            };
            let module: String = t(*module).split_whitespace().collect();
            let import = if let Some(ns) = get.get("import.namespace") {
                Import {
                    local: t(*ns),
                    module,
                    kind: ImportKind::Namespace,
                }
            } else if get.contains_key("import.module") {
                Import {
                    local: module.clone(),
                    module,
                    kind: ImportKind::Namespace,
                }
            } else if get.contains_key("import.package") {
                Import {
                    local: module.rsplit('/').next().unwrap_or(&module).to_owned(),
                    module,
                    kind: ImportKind::Namespace,
                }
            } else if let Some(d) = get.get("import.default") {
                Import {
                    local: t(*d),
                    module,
                    kind: ImportKind::Default,
                }
            } else if let Some(named) = get.get("import.named") {
                let (imported, local) = match named.child_by_field_name("name") {
                    Some(name) => {
                        let imported = t(name);
                        let local = named
                            .child_by_field_name("alias")
                            .map(t)
                            .unwrap_or_else(|| imported.clone());
                        (imported, local)
                    }
                    None => (t(*named), t(*named)),
                };
                Import {
                    local,
                    module,
                    kind: ImportKind::Named(imported),
                }
            } else if let Some(name) = get.get("import.name") {
                let imported = t(*name);
                let local = get
                    .get("import.alias")
                    .map(|a| t(*a))
                    .unwrap_or_else(|| imported.clone());
                Import {
                    local,
                    module,
                    kind: ImportKind::Named(imported),
                }
            } else {
                continue;
            };
            out.push(import);
        }
        out
    }
}

fn child_of_kind<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    let found = node.children(&mut cursor).find(|c| c.kind() == kind);
    found
}

/// Turns raw definitions into symbols, folding overload signatures into the declaration that
/// follows them: one symbol whose range starts at the first overload and whose signature lists
/// every overload, then the implementation, separated by `; `. Scopes are no symbols; they map
/// to `usize::MAX`.
fn merge_overloads(raws: &[Raw<'_>]) -> (Vec<Symbol>, Vec<usize>) {
    let mut symbols: Vec<Symbol> = Vec::with_capacity(raws.len());
    let mut raw_to_symbol = vec![usize::MAX; raws.len()];
    let mut pending: Option<(usize, Vec<String>, usize)> = None; // (start, signatures, line)
    for (i, raw) in raws.iter().enumerate() {
        if raw.is_scope {
            continue;
        }
        let continues = raws.get(i + 1).is_some_and(|next| {
            next.qualified_name == raw.qualified_name && next.parent == raw.parent
        });
        let (start, line, mut signatures) = match pending.take() {
            Some((start, sigs, line)) => (start, line, sigs),
            None => (raw.start, raw.line, Vec::new()),
        };
        signatures.extend(raw.signature.clone());
        if raw.overload_only && continues {
            pending = Some((start, signatures, line));
            raw_to_symbol[i] = symbols.len();
            continue;
        }
        raw_to_symbol[i] = symbols.len();
        let signature = if signatures.is_empty() {
            None
        } else {
            Some(signatures.join("; "))
        };
        symbols.push(Symbol {
            name: raw.name.clone(),
            qualified_name: raw.qualified_name.clone(),
            kind: raw.kind,
            start_byte: start,
            end_byte: raw.end,
            line,
            signature,
        });
    }
    (symbols, raw_to_symbol)
}

fn syntax_diagnostics(root: Node<'_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if !root.has_error() {
        return out;
    }
    let mut stack = vec![root];
    let mut cursor = root.walk();
    while let Some(n) = stack.pop() {
        if out.len() >= MAX_SYNTAX_DIAGNOSTICS {
            break;
        }
        if n.is_error() {
            out.push(Diagnostic {
                line: n.start_position().row + 1,
                message: "syntax error".to_owned(),
            });
            continue;
        }
        if n.is_missing() {
            out.push(Diagnostic {
                line: n.start_position().row + 1,
                message: format!("missing `{}`", n.kind()),
            });
            continue;
        }
        if n.has_error() {
            let children: Vec<Node<'_>> = n.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
    }
    out
}
