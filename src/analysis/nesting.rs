//! Which definition a node sits in, by byte ranges instead of parent links.
//!
//! `Node::parent` descends from the root each time, so walking up from every call site cost
//! about a tenth of a file's analysis. The definitions' ranges are laminar (two ranges of a
//! syntax tree are nested or disjoint), so the nearest definition above a node is the
//! narrowest definition range that strictly contains the node's range: a range strictly
//! containing another belongs to an ancestor, never to a descendant or a sibling. Ties (a
//! definition whose range equals the node's or another definition's) cannot be told apart by
//! ranges; those, and files whose ranges are not laminar, take the walk up the parents.

use std::collections::HashMap;

use tree_sitter::Node;

/// One definition's range.
struct Span {
    start: usize,
    end: usize,
    /// The node's id.
    id: usize,
    /// The definition it stands for.
    value: usize,
    /// The nearest span containing this one (in `spans`).
    outer: Option<usize>,
    /// Another span has the same range.
    tied: bool,
}

/// The definitions of a file by range, answering "the definition around this node".
pub(crate) struct Enclosing {
    /// Sorted by start, then by end descending.
    spans: Vec<Span>,
    ids: HashMap<usize, usize>,
    /// Ranges overlap without nesting (or are empty): every lookup walks the parents.
    walk_only: bool,
    memo: HashMap<usize, Option<usize>>,
}

impl Enclosing {
    /// Definitions as (node, value): [`Enclosing::of`] answers the value of the nearest one
    /// above a node.
    pub(crate) fn new<'t>(definitions: impl IntoIterator<Item = (Node<'t>, usize)>) -> Enclosing {
        let mut spans: Vec<Span> = Vec::new();
        let mut ids = HashMap::new();
        for (node, value) in definitions {
            ids.insert(node.id(), value);
            spans.push(Span {
                start: node.start_byte(),
                end: node.end_byte(),
                id: node.id(),
                value,
                outer: None,
                tied: false,
            });
        }
        spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
        let mut walk_only = false;
        let mut open: Vec<usize> = Vec::new();
        for i in 0..spans.len() {
            let (start, end) = (spans[i].start, spans[i].end);
            walk_only |= start >= end;
            if i > 0 && spans[i - 1].start == start && spans[i - 1].end == end {
                spans[i - 1].tied = true;
                spans[i].tied = true;
            }
            while let Some(&top) = open.last() {
                if spans[top].end >= end {
                    break;
                }
                walk_only |= spans[top].end > start;
                open.pop();
            }
            spans[i].outer = open.last().copied();
            open.push(i);
        }
        Enclosing {
            spans,
            ids,
            walk_only,
            memo: HashMap::new(),
        }
    }

    /// The value of the nearest definition strictly above `node` (its own entry, if it is
    /// one, does not count).
    pub(crate) fn of(&mut self, node: Node<'_>) -> Option<usize> {
        match self.by_range(node) {
            Some(found) => found,
            None => self.by_walk(node),
        }
    }

    /// `None` when ranges cannot tell.
    #[allow(
        clippy::option_option,
        reason = "unknown versus no definition, read once by `of`"
    )]
    fn by_range(&self, node: Node<'_>) -> Option<Option<usize>> {
        let (start, end) = (node.start_byte(), node.end_byte());
        if self.walk_only || start >= end {
            return None;
        }
        let mut at = self
            .spans
            .partition_point(|s| s.start <= start)
            .checked_sub(1);
        while let Some(i) = at {
            let span = self.spans.get(i)?;
            if span.start <= start && span.end >= end {
                if span.id == node.id() {
                    at = span.outer;
                    continue;
                }
                if span.tied || (span.start == start && span.end == end) {
                    return None;
                }
                return Some(Some(span.value));
            }
            at = span.outer;
        }
        Some(None)
    }

    /// The first definition among the parents of `node`. `memo` remembers the answer for
    /// every ancestor walked through: nodes of one function share their ancestors.
    fn by_walk(&mut self, node: Node<'_>) -> Option<usize> {
        let mut walked = Vec::new();
        let mut up = node.parent();
        let found = loop {
            let Some(n) = up else { break None };
            if let Some(&i) = self.ids.get(&n.id()) {
                break Some(i);
            }
            if let Some(&known) = self.memo.get(&n.id()) {
                break known;
            }
            walked.push(n.id());
            up = n.parent();
        };
        for id in walked {
            self.memo.insert(id, found);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn all_nodes(root: Node<'_>) -> Vec<Node<'_>> {
        let mut out = Vec::new();
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            out.push(n);
            let mut cursor = n.walk();
            stack.extend(n.children(&mut cursor));
        }
        out
    }

    /// For every node of a file, ranges answer what the walk up the parents answers.
    #[test]
    fn ranges_agree_with_the_parents() {
        let source = "class A:\n    def f(self):\n        def g():\n            return h(1)\n        return g()\n\n@d(x())\ndef k(): pass\nz = A().f()\n";
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_python::LANGUAGE.into())
            .unwrap();
        let tree = parser.parse(source, None).unwrap();
        let nodes = all_nodes(tree.root_node());
        let definitions: Vec<(Node<'_>, usize)> = nodes
            .iter()
            .filter(|n| matches!(n.kind(), "function_definition" | "class_definition"))
            .enumerate()
            .map(|(i, n)| (*n, i))
            .collect();
        assert_eq!(definitions.len(), 4);
        let mut by_range = Enclosing::new(definitions.iter().copied());
        assert!(!by_range.walk_only);
        let mut walked = 0;
        for node in &nodes {
            let mut reference = Enclosing::new(definitions.iter().copied());
            let expected = reference.by_walk(*node);
            if by_range.by_range(*node).is_none() {
                walked += 1;
            }
            assert_eq!(by_range.of(*node), expected, "{}", node.kind());
        }
        // Only ties take the walk: a definition's own name-less wrapper ranges, say.
        assert!(walked < nodes.len() / 4, "{walked} of {}", nodes.len());
    }
}
