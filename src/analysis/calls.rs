//! Call sites of one file and their in-file resolution: which symbol of the file a call goes
//! to, which import it goes through, or that the file's package must answer it. The
//! repository index finishes the job across files (`graph`, `resolve`).
//!
//! Query conventions (`calls.scm`): `@call` is the whole call, `@callee` the called name
//! (`@callee.new` for an instantiation, `new C(..)`), `@receiver` the value a method is called
//! on (`this`, `self`, a namespace import, a class) and `@receiver.path` a path before the
//! callee (`crate::a` in `crate::a::f()`).

use std::collections::HashMap;

use super::extract::{text, Raw};
use super::language::Syntax;
use super::matches::MatchList;
use super::model::{CallSite, CallTarget, FileAnalysis, Import, ImportKind};
use super::nesting::Enclosing;

/// What the call extraction reads besides the tree.
pub(crate) struct Context<'a> {
    /// The language's table.
    pub syntax: &'static Syntax,
    /// The source text.
    pub source: &'a str,
    /// The matches of the calls query.
    pub matches: &'a MatchList<'a>,
}

/// What a callee is called on.
struct Receiver {
    text: String,
    /// A path (`a::b`) rather than a value (`a.b`).
    is_path: bool,
}

/// A call as the query saw it, before resolution.
struct Call<'a> {
    callee: &'a str,
    receiver: Option<&'a Receiver>,
    /// `new T(..)`.
    is_new: bool,
    caller: Option<&'a str>,
}

/// The call sites under `root`, in document order, resolved as far as the file allows.
/// `raws` are the definitions (and scopes) the calls may sit in; `raw_to_symbol` maps them to
/// `analysis.symbols`.
pub(crate) fn extract(
    cx: &Context<'_>,
    raws: &[Raw<'_>],
    raw_to_symbol: &[usize],
    analysis: &FileAnalysis,
) -> Vec<CallSite> {
    // The definition (or function value) most tightly around each call.
    let mut enclosing = Enclosing::new(raws.iter().enumerate().flat_map(|(i, raw)| {
        std::iter::once((raw.node, i)).chain(raw.body_node.map(|body| (body, i)))
    }));
    let imports: HashMap<&str, &Import> = analysis
        .imports
        .iter()
        .map(|i| (i.local.as_str(), i))
        .collect();
    let mut out = Vec::new();
    for captures in cx.matches.iter() {
        let (mut call, mut callee, mut receiver) = (None, None, None);
        let mut is_new = false;
        for &(name, node) in captures {
            match name {
                "call" => call = Some(node),
                "callee" => callee = Some(node),
                "callee.new" => {
                    callee = Some(node);
                    is_new = true;
                }
                "receiver" => receiver = Some((node, false)),
                "receiver.path" => receiver = Some((node, true)),
                _ => {}
            }
        }
        let (Some(call), Some(callee)) = (call, callee) else {
            continue;
        };
        let callee_name = text(callee, cx.source);
        // Only plain names and dotted chains are receivers we can follow.
        let receiver = receiver.map(|(r, is_path)| Receiver {
            text: if cx.syntax.receiver_kinds.contains(&r.kind()) {
                text(r, cx.source).split_whitespace().collect::<String>()
            } else {
                String::from("(..)")
            },
            is_path,
        });
        let caller = enclosing.of(call).and_then(|i| {
            let symbol = analysis.symbols.get(*raw_to_symbol.get(i)?)?;
            symbol
                .kind
                .is_callable()
                .then(|| symbol.qualified_name.clone())
        });
        let target = resolve(
            cx.syntax,
            &Call {
                callee: callee_name,
                receiver: receiver.as_ref(),
                is_new,
                caller: caller.as_deref(),
            },
            &imports,
            analysis,
        );
        let written = match &receiver {
            Some(r) if r.is_path => format!("{}{}{callee_name}", r.text, cx.syntax.path_separator),
            Some(r) => format!("{}.{callee_name}", r.text),
            None => callee_name.to_owned(),
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

/// The enclosing qualified names of `name`, innermost first (`A.b.c` -> `A.b`, `A`).
fn prefixes(name: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(name.rsplit_once('.').map(|(head, _)| head), |s| {
        s.rsplit_once('.').map(|(head, _)| head)
    })
}

/// The target of an import with the names after it (`ns.f` -> `f` in `ns`'s module).
fn imported(import: &Import, rest: &[&str]) -> CallTarget {
    let mut path = match &import.kind {
        ImportKind::Namespace => Vec::new(),
        ImportKind::Default => vec!["default".to_owned()],
        ImportKind::Named(name) => vec![name.clone()],
    };
    path.extend(rest.iter().map(|s| (*s).to_owned()));
    if path.is_empty() {
        CallTarget::Unresolved
    } else {
        CallTarget::Import {
            module: import.module.clone(),
            path,
        }
    }
}

/// The names a call looks up: `[callee]`, or `[T, T]` for `new T(..)` in a language whose
/// constructors are named after their type (resolvers fall back to `[T]`).
fn wanted<'a>(syntax: &Syntax, call: &Call<'a>) -> Vec<&'a str> {
    if call.is_new && syntax.constructors_named_after_type {
        vec![call.callee, call.callee]
    } else {
        vec![call.callee]
    }
}

/// The local symbol `prefix.callee` (or `prefix.T.T`, then `prefix.T`, for `new T(..)`).
fn local_member(
    syntax: &Syntax,
    call: &Call<'_>,
    prefix: Option<&str>,
    analysis: &FileAnalysis,
) -> Option<String> {
    let base = match prefix {
        Some(p) => format!("{p}.{}", call.callee),
        None => call.callee.to_owned(),
    };
    if call.is_new && syntax.constructors_named_after_type {
        let constructor = format!("{base}.{}", call.callee);
        if analysis.callable_symbol(&constructor) {
            return Some(constructor);
        }
    }
    analysis.callable_symbol(&base).then_some(base)
}

fn resolve(
    syntax: &Syntax,
    call: &Call<'_>,
    imports: &HashMap<&str, &Import>,
    analysis: &FileAnalysis,
) -> CallTarget {
    let callee = call.callee;
    let Some(receiver) = call.receiver else {
        // Functions nested in the enclosing functions, innermost first; in some languages the
        // members of the enclosing types too.
        let mut scope = call.caller;
        while let Some(s) = scope {
            let found = analysis.by_qualified(s);
            let is_function = found.iter().any(|x| x.kind.is_callable());
            let is_type = found.iter().any(|x| x.kind.is_type());
            if is_function || (is_type && syntax.bare_calls_reach_members) {
                if let Some(local) = local_member(syntax, call, Some(s), analysis) {
                    return CallTarget::Local(local);
                }
            }
            scope = s.rsplit_once('.').map(|(head, _)| head);
        }
        if let Some(import) = imports.get(callee) {
            let wanted = wanted(syntax, call);
            return imported(import, &wanted[1..]);
        }
        if let Some(local) = local_member(syntax, call, None, analysis) {
            return CallTarget::Local(local);
        }
        if syntax.package_scope {
            return CallTarget::Package(
                wanted(syntax, call)
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            );
        }
        return CallTarget::Unresolved;
    };
    let r = receiver.text.as_str();
    if syntax.self_receivers.contains(&r) {
        // The innermost type (or scope) around the caller.
        let Some(caller) = call.caller else {
            return CallTarget::Unresolved;
        };
        for s in prefixes(caller) {
            if analysis
                .by_qualified(s)
                .iter()
                .any(|x| x.kind.is_callable())
            {
                continue;
            }
            let candidate = format!("{s}.{callee}");
            if analysis.callable_symbol(&candidate) {
                return CallTarget::Local(candidate);
            }
            return CallTarget::Unresolved;
        }
        return CallTarget::Unresolved;
    }
    if receiver.is_path {
        return resolve_path(syntax, call, r, imports, analysis);
    }
    if let Some(import) = imports.get(r) {
        return imported(import, &[callee]);
    }
    let candidate = format!("{r}.{callee}");
    if analysis.by_qualified(r).iter().any(|x| x.kind.is_type()) {
        if analysis.callable_symbol(&candidate) {
            return CallTarget::Local(candidate);
        }
        return CallTarget::Unresolved;
    }
    if syntax.package_types && is_identifier(r) {
        return CallTarget::Package(vec![r.to_owned(), callee.to_owned()]);
    }
    CallTarget::Unresolved
}

/// A call through a path (`crate::a::f()`, `geom::area()`, `Circle::new()`).
fn resolve_path(
    syntax: &Syntax,
    call: &Call<'_>,
    path: &str,
    imports: &HashMap<&str, &Import>,
    analysis: &FileAnalysis,
) -> CallTarget {
    let segments: Vec<&str> = path.split(syntax.path_separator).collect();
    let Some(&head) = segments.first() else {
        return CallTarget::Unresolved;
    };
    if syntax.path_roots.contains(&head) {
        return CallTarget::Import {
            module: path.to_owned(),
            path: vec![call.callee.to_owned()],
        };
    }
    if let Some(import) = imports.get(head) {
        let mut rest: Vec<&str> = segments[1..].to_vec();
        rest.push(call.callee);
        return imported(import, &rest);
    }
    if segments.len() == 1 {
        // A type defined, or given an `impl`, in this file.
        let candidate = format!("{head}.{}", call.callee);
        if analysis.callable_symbol(&candidate) {
            return CallTarget::Local(candidate);
        }
    }
    CallTarget::Unresolved
}

fn is_identifier(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}
