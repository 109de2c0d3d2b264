//! One walk of a file's tree for all of its language's queries ([`Queries::all`]): the
//! matches, split by the query they belong to, each as its captures (capture name, node).
//! Walking the tree with a query cursor costs about as much as parsing it, so the symbols,
//! imports and calls queries share one walk instead of three; each part keeps its matches in
//! the order the cursor found them, which is the order a walk with that query alone gives
//! (the patterns keep their relative order in the combined query).

use tree_sitter::{Node, QueryCursor, StreamingIterator};

use super::language::{Queries, QueryPart};

/// The matches of one query, flattened: captures in match order, with where each match ends.
#[derive(Default)]
pub(crate) struct MatchList<'t> {
    captures: Vec<(&'static str, Node<'t>)>,
    ends: Vec<usize>,
}

impl<'t> MatchList<'t> {
    /// Each match's captures, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[(&'static str, Node<'t>)]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(start, end)| self.captures.get(start..end).unwrap_or_default())
    }

    /// How many matches there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }
}

/// The matches of a file's queries, per query.
#[derive(Default)]
pub(crate) struct FileMatches<'t> {
    /// Of `symbols.scm`.
    pub symbols: MatchList<'t>,
    /// Of `imports.scm`.
    pub imports: MatchList<'t>,
    /// Of `calls.scm`.
    pub calls: MatchList<'t>,
}

/// Walks the tree under `root` once with `queries.all`.
pub(crate) fn collect<'t>(
    queries: &'static Queries,
    root: Node<'t>,
    source: &str,
) -> FileMatches<'t> {
    let names: &'static [&'static str] = queries.all.capture_names();
    let mut out = FileMatches::default();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&queries.all, root, source.as_bytes());
    while let Some(m) = matches.next() {
        let list = match queries.part(m.pattern_index) {
            QueryPart::Symbols => &mut out.symbols,
            QueryPart::Imports => &mut out.imports,
            QueryPart::Calls => &mut out.calls,
        };
        list.captures.extend(m.captures.iter().map(|cap| {
            (
                names.get(cap.index as usize).copied().unwrap_or(""),
                cap.node,
            )
        }));
        list.ends.push(list.captures.len());
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::analysis::Language;

    /// The combined walk finds, per query, the matches (and captures, in order) a walk with
    /// that query alone finds.
    #[test]
    fn one_walk_finds_what_each_query_finds_alone() {
        let cases = [
            (
                Language::Python,
                "import os\nfrom .m import f as g\nclass K:\n    def m(self):\n        return g(os.path.join(self.n()))\n",
            ),
            (
                Language::TypeScript,
                "import { a } from './a';\nconst r = require('x');\nexport class C { m() { return a(new C()); } }\nexport default function () { r.f(); }\n",
            ),
        ];
        for (language, source) in cases {
            let spec = language.spec();
            let queries = spec.queries().unwrap();
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&(spec.grammar)()).unwrap();
            let tree = parser.parse(source, None).unwrap();
            let combined = collect(queries, tree.root_node(), source);
            for (text, list) in [
                (spec.symbols_query, &combined.symbols),
                (spec.imports_query, &combined.imports),
                (spec.calls_query, &combined.calls),
            ] {
                let alone = tree_sitter::Query::new(&(spec.grammar)(), text).unwrap();
                let names = alone.capture_names();
                let mut cursor = QueryCursor::new();
                let mut matches = cursor.matches(&alone, tree.root_node(), source.as_bytes());
                let mut expected: Vec<Vec<(String, usize)>> = Vec::new();
                while let Some(m) = matches.next() {
                    expected.push(
                        m.captures
                            .iter()
                            .map(|c| (names[c.index as usize].to_owned(), c.node.id()))
                            .collect(),
                    );
                }
                let got: Vec<Vec<(String, usize)>> = list
                    .iter()
                    .map(|caps| {
                        caps.iter()
                            .map(|(n, node)| ((*n).to_owned(), node.id()))
                            .collect()
                    })
                    .collect();
                assert!(!expected.is_empty(), "{language:?}: {text}");
                assert_eq!(got, expected, "{language:?}");
                assert_eq!(list.len(), expected.len());
            }
        }
    }
}
