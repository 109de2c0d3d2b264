//! Signatures (docs/protocol.md 2.5): the normalised text of a declaration's interface, and the
//! token comparison that decides whether a contract is still honoured.

use tree_sitter::Node;

/// The normalised text of the syntax tokens of `node` that lie within `start..end`, comments
/// removed: one space where the source had whitespace or a comment between two tokens, none
/// right after `(`/`[` or right before `)`/`]`/`,`, and a trailing comma before `)`/`]` dropped.
/// Tokens inside a `skip` range (the declaration's name, Rust's `fn`) are left out; where one
/// was, the tokens around it are separated by a space. `drop_trailing` removes a final token
/// with that text (Python's `:` after a class header).
pub(crate) fn normalized_text(
    node: Node<'_>,
    start: usize,
    end: usize,
    source: &str,
    comment_kinds: &[&str],
    skip: &[(usize, usize)],
    drop_trailing: Option<&str>,
) -> String {
    let mut tokens: Vec<(usize, usize)> = Vec::new();
    collect_tokens(node, start, end, comment_kinds, &mut tokens);
    if !skip.is_empty() {
        tokens.retain(|t| !skip.iter().any(|s| s.0 <= t.0 && t.1 <= s.1));
    }
    if let (Some(last), Some(trailing)) = (tokens.last(), drop_trailing) {
        if source.get(last.0..last.1) == Some(trailing) {
            tokens.pop();
        }
    }
    let text = |t: (usize, usize)| source.get(t.0..t.1).unwrap_or("");
    let mut out = String::new();
    let mut prev: Option<(usize, usize)> = None;
    for (i, &tok) in tokens.iter().enumerate() {
        let this = text(tok);
        if this == "," {
            if let Some(&next) = tokens.get(i + 1) {
                if matches!(text(next), ")" | "]") {
                    continue;
                }
            }
        }
        if let Some(p) = prev {
            let gap = p.1 < tok.0;
            let after_open = matches!(text(p), "(" | "[");
            let before_close = matches!(this, ")" | "]" | ",");
            if gap && !after_open && !before_close {
                out.push(' ');
            }
        }
        push_collapsed(&mut out, this);
        prev = Some(tok);
    }
    out
}

/// Appends a token's text; a token that spans lines (a template literal) keeps its content but
/// its whitespace runs count as one space, like everywhere else.
fn push_collapsed(out: &mut String, text: &str) {
    if !text.contains('\n') {
        out.push_str(text);
        return;
    }
    let mut in_space = false;
    for ch in text.chars() {
        if ch.is_whitespace() {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(ch);
            in_space = false;
        }
    }
}

fn collect_tokens(
    node: Node<'_>,
    start: usize,
    end: usize,
    comment_kinds: &[&str],
    out: &mut Vec<(usize, usize)>,
) {
    let mut cursor = node.walk();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.end_byte() <= start || n.start_byte() >= end {
            continue;
        }
        if comment_kinds.contains(&n.kind()) {
            continue;
        }
        // Strings are one token, whatever nodes the grammar splits them into.
        let atomic = n.child_count() == 0 || matches!(n.kind(), "string" | "template_string");
        if atomic {
            if n.start_byte() < n.end_byte() && n.start_byte() >= start && n.end_byte() <= end {
                out.push((n.start_byte(), n.end_byte()));
            }
            continue;
        }
        let children: Vec<Node<'_>> = n.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
}

/// Whether two signatures are the same once comments, whitespace and trailing commas are
/// ignored: they are compared token by token, so reformatting is never a difference and any
/// changed token is (docs/protocol.md 2.5).
pub fn signatures_equal(a: &str, b: &str) -> bool {
    tokens(a) == tokens(b)
}

/// The syntax tokens of a signature: identifiers and numbers, string literals, operators and
/// punctuation. Comments (`//`, `/* */`, `#`) and trailing commas before a closing bracket are
/// dropped.
pub(crate) fn tokens(text: &str) -> Vec<&str> {
    const OPERATORS: [&str; 12] = [
        "...", "=>", "->", "?.", "??", "**", "==", "!=", "<=", ">=", "&&", "||",
    ];
    let bytes = text.as_bytes();
    let mut out: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let rest = &text[i..];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if rest.starts_with("//") || (c == b'#' && !is_attribute(rest)) {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if let Some(comment) = rest.strip_prefix("/*") {
            i += comment.find("*/").map_or(rest.len(), |p| p + 4);
        } else if c == b'"' || c == b'\'' || c == b'`' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != c {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            let stop = (j + 1).min(bytes.len());
            out.push(&text[i..stop]);
            i = stop;
        } else if is_word_byte(c) {
            let mut j = i;
            while j < bytes.len() && is_word_byte(bytes[j]) {
                j += 1;
            }
            out.push(&text[i..j]);
            i = j;
        } else if let Some(op) = OPERATORS.iter().find(|op| rest.starts_with(**op)) {
            out.push(&text[i..i + op.len()]);
            i += op.len();
        } else {
            let len = rest.chars().next().map_or(1, char::len_utf8);
            out.push(&text[i..i + len]);
            i += len;
        }
    }
    // Trailing commas never matter: `(a, b,)` is `(a, b)`.
    let mut kept = Vec::with_capacity(out.len());
    for (k, tok) in out.iter().enumerate() {
        // A comma ending the signature (after a Rust `where` clause) trails too.
        if *tok == "," && matches!(out.get(k + 1), None | Some(&(")" | "]" | "}" | ">"))) {
            continue;
        }
        kept.push(*tok);
    }
    kept
}

/// Whether `rest` (starting with `#`) opens a Rust attribute (`#[..]`, `#![..]`) rather than a
/// comment.
fn is_attribute(rest: &str) -> bool {
    rest.starts_with("#[") || rest.starts_with("#![")
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn equal_ignores_formatting_comments_and_trailing_commas() {
        assert!(signatures_equal(
            "(a: string, b?: number): boolean",
            "( a:string,\n  b?: number, ) :boolean"
        ));
        assert!(signatures_equal("(a, b=2)", "(a, /* two */ b = 2)"));
        assert!(signatures_equal(
            "(a: int) -> int",
            "(a: int  # the a\n) -> int"
        ));
        assert!(signatures_equal("<T>(x: T): T", "<T,>(x: T): T"));
        assert!(signatures_equal("(x: T) where T: A", "(x: T) where T: A,"));
    }

    #[test]
    fn any_token_change_is_a_difference() {
        assert!(!signatures_equal(
            "(a: string): boolean",
            "(a: string): number"
        ));
        assert!(!signatures_equal("(a, b = 2)", "(a, b = 3)"));
        assert!(!signatures_equal("(a, b)", "(a, c)"));
        assert!(!signatures_equal("(a?: string)", "(a: string)"));
        assert!(!signatures_equal("(x: 'a b')", "(x: 'a  b')"));
        assert!(!signatures_equal("(...xs: T[])", "(xs: T[])"));
        assert!(!signatures_equal("<T>(x: T): T", "(x: T): T"));
    }

    #[test]
    fn rust_lifetimes_and_attributes_compare_by_token() {
        // Lifetimes read as the start of a quoted token; signatures are compared in their
        // normalised form, where that token is the same text whenever the source tokens are.
        assert!(signatures_equal("<'a>(x: &'a str)", "<'a>(x: &'a str)"));
        assert!(!signatures_equal("<'a>(x: &'a str)", "<'b>(x: &'b str)"));
        assert!(!signatures_equal(
            "<'a>(x: &'a str)",
            "<'a>(x: &'a mut str)"
        ));
        assert!(!signatures_equal(
            "(#[allow(unused)] x: i32) -> i32",
            "(#[allow(unused)] x: i64) -> i64"
        ));
    }

    #[test]
    fn tokens_split_operators_and_strings() {
        assert_eq!(
            tokens("(a = \"x, y\") => void"),
            vec!["(", "a", "=", "\"x, y\"", ")", "=>", "void"]
        );
        assert_eq!(tokens("(ünï: T)"), vec!["(", "ünï", ":", "T", ")"]);
    }
}
