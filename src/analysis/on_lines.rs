//! The symbols a set of changed lines touches: the innermost symbols of a file whose lines
//! meet them (a container gives way to a touched symbol inside it). What names a worktree's
//! observed work (docs/protocol.md 14.4) and the symbols of a forecast's collision (14.5).

use super::{analyze, FileAnalysis, Language};

/// The innermost symbols of `text` (parsed as `file`'s language) whose lines meet `lines`
/// (1-based, inclusive), in document order; none for an unsupported file.
pub fn symbols_on_lines(file: &str, text: &str, lines: &[(i64, i64)]) -> Vec<String> {
    let Some(language) = Language::for_path(file) else {
        return Vec::new();
    };
    innermost_on_lines(&analyze(language, text), text, lines)
}

/// [`symbols_on_lines`] for an analysis already made of `text`.
pub fn innermost_on_lines(
    analysis: &FileAnalysis,
    text: &str,
    lines: &[(i64, i64)],
) -> Vec<String> {
    let spans: Vec<(&str, usize, usize)> = analysis
        .symbols
        .iter()
        .map(|s| (s.qualified_name.as_str(), s.start_byte, s.end_byte))
        .collect();
    innermost_spans_on_lines(&spans, text, lines)
}

/// [`symbols_on_lines`] for symbols already found in `text`: `(qualified name, start byte,
/// end byte exclusive)` each.
pub fn innermost_spans_on_lines(
    symbols: &[(&str, usize, usize)],
    text: &str,
    lines: &[(i64, i64)],
) -> Vec<String> {
    if lines.is_empty() {
        return Vec::new();
    }
    let newlines: Vec<usize> = text
        .bytes()
        .enumerate()
        .filter(|&(_, b)| b == b'\n')
        .map(|(at, _)| at)
        .collect();
    // The 1-based line of a byte: one more than the newlines before it.
    let line_of = |byte: usize| -> i64 {
        i64::try_from(newlines.partition_point(|&at| at < byte)).unwrap_or(i64::MAX) + 1
    };
    let spans: Vec<(&str, i64, i64)> = symbols
        .iter()
        .map(|&(name, start, end)| {
            let end = end.saturating_sub(1).max(start);
            (name, line_of(start), line_of(end))
        })
        .filter(|(_, first, last)| lines.iter().any(|&(a, b)| a <= *last && *first <= b))
        .collect();
    let mut names: Vec<String> = spans
        .iter()
        .filter(|(name, first, last)| {
            !spans.iter().any(|(other, f, l)| {
                other != name && *first <= *f && *l <= *last && (f, l) != (first, last)
            })
        })
        .map(|(name, _, _)| (*name).to_owned())
        .collect();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_innermost_symbols_on_the_lines() {
        let text = "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n\nX = 1\n";
        assert_eq!(symbols_on_lines("a.py", text, &[(3, 3)]), ["A.f"]);
        assert_eq!(
            symbols_on_lines("a.py", text, &[(3, 3), (6, 6)]),
            ["A.f", "A.g"]
        );
        assert_eq!(symbols_on_lines("a.py", text, &[(1, 1)]), ["A"]);
        assert!(symbols_on_lines("a.py", text, &[]).is_empty());
        assert!(symbols_on_lines("a.txt", text, &[(1, 1)]).is_empty());
    }
}
