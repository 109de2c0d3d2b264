//! One file's analysis: parse once, then read symbols, signatures, imports and call sites out of
//! the tree with the language's queries. Calls are resolved as far as one file allows; the
//! repository index finishes the job across files.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, ParseOptions, ParseState, Parser, QueryCursor, StreamingIterator, Tree};

use super::language::{Language, LanguageSpec};
use super::signature::normalized_text;

/// How long one parse may take before it is abandoned (PROTOCOL-NOTES 2.6).
pub const PARSE_BUDGET: Duration = Duration::from_secs(5);

/// At most this many syntax errors are reported per file.
const MAX_SYNTAX_DIAGNOSTICS: usize = 20;

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
    /// A class.
    Class,
    /// A TypeScript interface.
    Interface,
    /// A TypeScript type alias.
    TypeAlias,
    /// A TypeScript enum.
    Enum,
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
        }
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

/// A named declaration in a file (PROTOCOL-NOTES 2.4).
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
    /// The normalised signature (PROTOCOL-NOTES 2.5); `None` when none could be read.
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
    by_qualified: HashMap<String, Vec<usize>>,
}

/// The answer to a symbol lookup (PROTOCOL-NOTES 2.2).
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
        let index: usize = self
            .by_qualified
            .iter()
            .map(|(name, at)| {
                size_of::<(String, Vec<usize>)>() + name.len() + at.len() * size_of::<usize>() + 8
            })
            .sum();
        size_of::<FileAnalysis>() + symbols + calls + imports + diagnostics + index
    }

    /// Rebuilds the name index from `symbols` (after deserialising).
    pub(crate) fn reindex(&mut self) {
        let mut by_qualified: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, s) in self.symbols.iter().enumerate() {
            by_qualified
                .entry(s.qualified_name.clone())
                .or_default()
                .push(i);
        }
        self.by_qualified = by_qualified;
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
            .get(qualified_name)
            .map(|ids| ids.iter().filter_map(|&i| self.symbols.get(i)).collect())
            .unwrap_or_default()
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
        self.by_qualified.contains_key(&name).then_some(name)
    }

    fn callable_symbol(&self, qualified_name: &str) -> bool {
        self.by_qualified(qualified_name)
            .iter()
            .any(|s| s.kind.is_callable() || s.kind == SymbolKind::Class)
    }
}

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
    let mut extractor = Extractor {
        spec,
        source,
        queries,
        symbols: Vec::new(),
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

/// A definition found by the symbols query, before merging overloads.
struct Raw<'t> {
    node: Node<'t>,
    /// The function node for `const f = () => ..` and class fields: calls inside belong to `f`.
    body_node: Option<Node<'t>>,
    name: String,
    tag: String,
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
    source: &'a str,
    queries: &'static super::language::Queries,
    symbols: Vec<Symbol>,
}

fn text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or("")
}

impl<'a> Extractor<'a> {
    fn run(&mut self, tree: &Tree, language: Language) -> FileAnalysis {
        let root = tree.root_node();
        let (raws, default_export) = self.definitions(root);
        let mut node_to_raw: HashMap<usize, usize> = HashMap::new();
        for (i, raw) in raws.iter().enumerate() {
            node_to_raw.insert(raw.node.id(), i);
            if let Some(body) = raw.body_node {
                node_to_raw.insert(body.id(), i);
            }
        }
        let (symbols, raw_to_symbol) = merge_overloads(&raws);
        self.symbols = symbols;
        let mut analysis = FileAnalysis {
            language: Some(language),
            symbols: std::mem::take(&mut self.symbols),
            calls: Vec::new(),
            imports: self.imports(root),
            default_export,
            diagnostics: syntax_diagnostics(root),
            by_qualified: HashMap::new(),
        };
        analysis.reindex();
        analysis.calls = self.calls(root, &raws, &node_to_raw, &raw_to_symbol, &analysis);
        analysis
    }

    fn definitions<'t>(&self, root: Node<'t>) -> (Vec<Raw<'t>>, Option<String>) {
        let query = &self.queries.symbols;
        let names = query.capture_names();
        let mut cursor = QueryCursor::new();
        let mut matches = cursor.matches(query, root, self.source.as_bytes());
        let mut raws: Vec<Raw<'t>> = Vec::new();
        let mut seen: HashSet<usize> = HashSet::new();
        let mut default_export = None;
        while let Some(m) = matches.next() {
            let mut def: Option<(Node<'t>, &str)> = None;
            let mut name: Option<Node<'t>> = None;
            for cap in m.captures {
                let cap_name = names.get(cap.index as usize).copied().unwrap_or("");
                if let Some(tag) = cap_name.strip_prefix("definition.") {
                    def = Some((cap.node, tag));
                } else if cap_name == "name" {
                    name = Some(cap.node);
                } else if cap_name == "export.default" {
                    default_export = Some(text(cap.node, self.source).to_owned());
                }
            }
            let Some((node, tag)) = def else { continue };
            if !seen.insert(node.id()) {
                continue;
            }
            let name = match name {
                Some(n) => text(n, self.source).to_owned(),
                None if tag == "default" => {
                    default_export = Some("default".to_owned());
                    "default".to_owned()
                }
                None => continue,
            };
            let body_node = node.child_by_field_name("value").filter(|v| {
                matches!(
                    v.kind(),
                    "arrow_function" | "function_expression" | "generator_function"
                )
            });
            raws.push(Raw {
                node,
                body_node,
                name,
                tag: tag.to_owned(),
                parent: None,
                kind: SymbolKind::Function,
                qualified_name: String::new(),
                start: 0,
                end: 0,
                line: 0,
                signature: None,
                overload_only: matches!(node.kind(), "function_signature" | "method_signature"),
            });
        }
        raws.sort_by_key(|r| (r.node.start_byte(), std::cmp::Reverse(r.node.end_byte())));
        let ids: HashMap<usize, usize> = raws
            .iter()
            .enumerate()
            .map(|(i, r)| (r.node.id(), i))
            .collect();
        for i in 0..raws.len() {
            let mut up = raws[i].node.parent();
            while let Some(n) = up {
                if let Some(&p) = ids.get(&n.id()) {
                    raws[i].parent = Some(p);
                    break;
                }
                up = n.parent();
            }
            let parent = raws[i].parent;
            let parent_kind = parent.map(|p| raws[p].kind);
            raws[i].kind = self.kind_of(&raws[i], parent_kind);
            raws[i].qualified_name = match parent {
                Some(p) => format!("{}.{}", raws[p].qualified_name, raws[i].name),
                None => raws[i].name.clone(),
            };
            let (start, end, line) = self.range(raws[i].node);
            raws[i].start = start;
            raws[i].end = end;
            raws[i].line = line;
            raws[i].signature = self.signature(&raws[i]);
        }
        (raws, default_export)
    }

    fn kind_of(&self, raw: &Raw<'_>, parent_kind: Option<SymbolKind>) -> SymbolKind {
        match raw.tag.as_str() {
            "class" => SymbolKind::Class,
            "interface" => SymbolKind::Interface,
            "type" => SymbolKind::TypeAlias,
            "enum" => SymbolKind::Enum,
            "default" if matches!(raw.node.kind(), "class" | "class_declaration") => {
                SymbolKind::Class
            }
            "method" => {
                if raw.name == "constructor" {
                    return SymbolKind::Constructor;
                }
                let mut cursor = raw.node.walk();
                let accessor = raw
                    .node
                    .children(&mut cursor)
                    .take_while(|c| c.kind() != "property_identifier")
                    .find(|c| matches!(c.kind(), "get" | "set"))
                    .map(|c| c.kind());
                match accessor {
                    Some("get") => SymbolKind::Getter,
                    Some("set") => SymbolKind::Setter,
                    _ => SymbolKind::Method,
                }
            }
            _ if parent_kind == Some(SymbolKind::Class) => SymbolKind::Method,
            _ => SymbolKind::Function,
        }
    }

    /// The declaration's range: a single-variable declaration, `export` and decorators belong
    /// to it.
    fn range(&self, node: Node<'_>) -> (usize, usize, usize) {
        let mut outer = node;
        if node.kind() == "variable_declarator" {
            if let Some(decl) = node.parent() {
                if self.spec.declaration_kinds.contains(&decl.kind())
                    && decl.named_child_count() == 1
                {
                    outer = decl;
                }
            }
        }
        while let Some(parent) = outer.parent() {
            if self.spec.wrapper_kinds.contains(&parent.kind()) {
                outer = parent;
            } else {
                break;
            }
        }
        let mut first = outer;
        let mut prev = outer.prev_named_sibling();
        while let Some(p) = prev {
            if p.kind() != "decorator" {
                break;
            }
            first = p;
            prev = p.prev_named_sibling();
        }
        (
            first.start_byte(),
            outer.end_byte(),
            first.start_position().row + 1,
        )
    }

    fn signature(&self, raw: &Raw<'_>) -> Option<String> {
        let comments = self.spec.comment_kinds;
        let node = raw.node;
        let name_end = node.child_by_field_name("name").map(|n| n.end_byte());
        match raw.kind {
            SymbolKind::Class => {
                let body = node.child_by_field_name("body")?;
                let start = name_end.unwrap_or(node.start_byte());
                Some(normalized_text(
                    node,
                    start,
                    body.start_byte(),
                    self.source,
                    comments,
                    Some(":"),
                ))
            }
            SymbolKind::Interface => {
                let body = node.child_by_field_name("body")?;
                Some(normalized_text(
                    node,
                    name_end?,
                    body.end_byte(),
                    self.source,
                    comments,
                    None,
                ))
            }
            SymbolKind::TypeAlias => {
                let value = node.child_by_field_name("value")?;
                Some(normalized_text(
                    node,
                    name_end?,
                    value.end_byte(),
                    self.source,
                    comments,
                    None,
                ))
            }
            SymbolKind::Enum => {
                let body = node.child_by_field_name("body")?;
                Some(normalized_text(
                    body,
                    body.start_byte(),
                    body.end_byte(),
                    self.source,
                    comments,
                    None,
                ))
            }
            _ => {
                let function = raw.body_node.unwrap_or(node);
                let field = |f: &str| function.child_by_field_name(f);
                let params = field("parameters").or_else(|| field("parameter"))?;
                let start = field("type_parameters").unwrap_or(params).start_byte();
                let end = field("return_type").unwrap_or(params).end_byte();
                Some(normalized_text(
                    function,
                    start,
                    end,
                    self.source,
                    comments,
                    None,
                ))
            }
        }
    }

    fn imports(&self, root: Node<'_>) -> Vec<Import> {
        let query = &self.queries.imports;
        let names = query.capture_names();
        let mut cursor = QueryCursor::new();
        let mut matches = cursor.matches(query, root, self.source.as_bytes());
        let mut out = Vec::new();
        while let Some(m) = matches.next() {
            let mut get: HashMap<&str, Node<'_>> = HashMap::new();
            for cap in m.captures {
                if let Some(n) = names.get(cap.index as usize) {
                    get.insert(n, cap.node);
                }
            }
            let t = |n: Node<'_>| text(n, self.source).to_owned();
            let Some(module) = get
                .get("import.source")
                .or_else(|| get.get("import.module"))
            else {
                continue;
            };
            let module = t(*module);
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
            } else {
                continue;
            };
            out.push(import);
        }
        out
    }

    fn calls(
        &self,
        root: Node<'_>,
        raws: &[Raw<'_>],
        node_to_raw: &HashMap<usize, usize>,
        raw_to_symbol: &[usize],
        analysis: &FileAnalysis,
    ) -> Vec<CallSite> {
        let query = &self.queries.calls;
        let names = query.capture_names();
        let imports: HashMap<&str, &Import> = analysis
            .imports
            .iter()
            .map(|i| (i.local.as_str(), i))
            .collect();
        let mut cursor = QueryCursor::new();
        let mut matches = cursor.matches(query, root, self.source.as_bytes());
        let mut out = Vec::new();
        while let Some(m) = matches.next() {
            let (mut call, mut callee, mut receiver) = (None, None, None);
            for cap in m.captures {
                match names.get(cap.index as usize).copied() {
                    Some("call") => call = Some(cap.node),
                    Some("callee") => callee = Some(cap.node),
                    Some("receiver") => receiver = Some(cap.node),
                    _ => {}
                }
            }
            let (Some(call), Some(callee)) = (call, callee) else {
                continue;
            };
            let callee_name = text(callee, self.source).to_owned();
            // Only plain names and dotted chains are receivers we can follow.
            let receiver_text = receiver.map(|r| {
                if matches!(
                    r.kind(),
                    "identifier" | "this" | "member_expression" | "attribute"
                ) {
                    text(r, self.source).split_whitespace().collect::<String>()
                } else {
                    String::from("(..)")
                }
            });
            let caller = enclosing(call, raws, node_to_raw).and_then(|i| {
                let symbol = analysis.symbols.get(*raw_to_symbol.get(i)?)?;
                symbol
                    .kind
                    .is_callable()
                    .then(|| symbol.qualified_name.clone())
            });
            let target = self.resolve(
                &callee_name,
                receiver_text.as_deref(),
                caller.as_deref(),
                &imports,
                analysis,
            );
            let written = match &receiver_text {
                Some(r) => format!("{r}.{callee_name}"),
                None => callee_name,
            };
            out.push(CallSite {
                caller,
                callee: written,
                target,
                line: call.start_position().row + 1,
                start_byte: call.start_byte(),
            });
        }
        out.sort_by_key(|c| c.start_byte);
        out
    }

    fn resolve(
        &self,
        callee: &str,
        receiver: Option<&str>,
        caller: Option<&str>,
        imports: &HashMap<&str, &Import>,
        analysis: &FileAnalysis,
    ) -> CallTarget {
        let imported = |import: &Import, rest: Option<&str>| {
            let mut path = match &import.kind {
                ImportKind::Namespace => Vec::new(),
                ImportKind::Default => vec!["default".to_owned()],
                ImportKind::Named(name) => vec![name.clone()],
            };
            path.extend(rest.map(str::to_owned));
            if path.is_empty() {
                CallTarget::Unresolved
            } else {
                CallTarget::Import {
                    module: import.module.clone(),
                    path,
                }
            }
        };
        match receiver {
            None => {
                // Functions nested in the enclosing functions, innermost first.
                let mut scope = caller;
                while let Some(s) = scope {
                    let is_function = analysis
                        .by_qualified(s)
                        .iter()
                        .any(|x| x.kind.is_callable());
                    if is_function {
                        let candidate = format!("{s}.{callee}");
                        if analysis.callable_symbol(&candidate) {
                            return CallTarget::Local(candidate);
                        }
                    }
                    scope = s.rsplit_once('.').map(|(head, _)| head);
                }
                if let Some(import) = imports.get(callee) {
                    return imported(import, None);
                }
                if analysis.callable_symbol(callee) {
                    return CallTarget::Local(callee.to_owned());
                }
                CallTarget::Unresolved
            }
            Some(r) if self.spec.self_receivers.contains(&r) => {
                // The innermost class around the caller.
                let mut scope = caller.and_then(|c| c.rsplit_once('.').map(|(head, _)| head));
                while let Some(s) = scope {
                    if analysis
                        .by_qualified(s)
                        .iter()
                        .any(|x| x.kind == SymbolKind::Class)
                    {
                        let candidate = format!("{s}.{callee}");
                        if analysis.callable_symbol(&candidate) {
                            return CallTarget::Local(candidate);
                        }
                        return CallTarget::Unresolved;
                    }
                    scope = s.rsplit_once('.').map(|(head, _)| head);
                }
                CallTarget::Unresolved
            }
            Some(r) => {
                if let Some(import) = imports.get(r) {
                    return imported(import, Some(callee));
                }
                let candidate = format!("{r}.{callee}");
                if analysis
                    .by_qualified(r)
                    .iter()
                    .any(|x| x.kind == SymbolKind::Class)
                    && analysis.callable_symbol(&candidate)
                {
                    return CallTarget::Local(candidate);
                }
                CallTarget::Unresolved
            }
        }
    }
}

/// The raw definition whose node (or function value) most tightly contains `node`.
fn enclosing(
    node: Node<'_>,
    raws: &[Raw<'_>],
    node_to_raw: &HashMap<usize, usize>,
) -> Option<usize> {
    let mut up = node.parent();
    while let Some(n) = up {
        if let Some(&i) = node_to_raw.get(&n.id()) {
            // A call in a class field initialiser or decorator is class-body level.
            return raws.get(i).map(|_| i);
        }
        up = n.parent();
    }
    None
}

/// Turns raw definitions into symbols, folding TypeScript overload signatures into the
/// declaration that follows them: one symbol whose range starts at the first overload and whose
/// signature lists every overload, then the implementation, separated by `; `.
fn merge_overloads(raws: &[Raw<'_>]) -> (Vec<Symbol>, Vec<usize>) {
    let mut symbols: Vec<Symbol> = Vec::with_capacity(raws.len());
    let mut raw_to_symbol = vec![usize::MAX; raws.len()];
    let mut pending: Option<(usize, Vec<String>, usize)> = None; // (start, signatures, line)
    for (i, raw) in raws.iter().enumerate() {
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
