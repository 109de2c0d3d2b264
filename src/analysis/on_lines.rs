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
    let newlines: Vec<usize> = memchr::memchr_iter(b'\n', text.as_bytes()).collect();
    // The 1-based line of a byte: one more than the newlines before it.
    let line_of = |byte: usize| -> i64 {
        i64::try_from(newlines.partition_point(|&at| at < byte)).unwrap_or(i64::MAX) + 1
    };
    let touched = Touched::new(lines);
    let spans: Vec<Span<'_>> = symbols
        .iter()
        .map(|&(name, start, end)| {
            let end = end.saturating_sub(1).max(start);
            Span {
                name,
                first: line_of(start),
                last: line_of(end),
            }
        })
        .filter(|span| touched.meets(span.first, span.last))
        .collect();
    let inside = Nesting::new(&spans);
    let mut names: Vec<String> = spans
        .iter()
        .enumerate()
        .filter(|&(at, _)| !inside.holds_another(at))
        .map(|(_, span)| span.name.to_owned())
        .collect();
    names.dedup();
    names
}

/// A symbol's name and lines (1-based, inclusive).
#[derive(Debug, Clone, Copy)]
struct Span<'a> {
    name: &'a str,
    first: i64,
    last: i64,
}

/// Changed line ranges, sorted and merged: whether a span meets one, by binary search.
struct Touched(Vec<(i64, i64)>);

impl Touched {
    fn new(lines: &[(i64, i64)]) -> Touched {
        let mut sorted: Vec<(i64, i64)> = lines.to_vec();
        sorted.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(sorted.len());
        for (a, b) in sorted {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        // A merged range's end only grows, so the ends stay sorted for the search.
        Touched(merged)
    }

    /// Whether lines `first..=last` meet a changed range.
    fn meets(&self, first: i64, last: i64) -> bool {
        let at = self.0.partition_point(|&(_, b)| b < first);
        self.0.get(at).is_some_and(|&(a, _)| a <= last)
    }
}

/// Which spans hold another one inside them (a different name whose lines lie within theirs,
/// not the very same lines): in O(n log n), where comparing every pair took minutes for a
/// new file of 260,000 functions (every line changed) and held the tree observer, and every
/// flush waiting on it, that long.
struct Nesting<'s, 'a> {
    spans: &'s [Span<'a>],
    /// Span indexes by first line.
    by_first: Vec<usize>,
    /// For each position of `by_first`: the index of the span of least last line from there
    /// to the end.
    least_last_from: Vec<usize>,
}

impl<'s, 'a> Nesting<'s, 'a> {
    fn new(spans: &'s [Span<'a>]) -> Nesting<'s, 'a> {
        let mut by_first: Vec<usize> = (0..spans.len()).collect();
        by_first.sort_by_key(|&at| spans[at].first);
        let mut least_last_from = vec![0; by_first.len()];
        for position in (0..by_first.len()).rev() {
            let here = by_first[position];
            least_last_from[position] = match least_last_from.get(position + 1) {
                Some(&next) if spans[next].last <= spans[here].last => next,
                _ => here,
            };
        }
        Nesting {
            spans,
            by_first,
            least_last_from,
        }
    }

    /// The span of least last line among those starting at or after line `first` (`strictly`:
    /// after it).
    fn least_last_starting_from(&self, first: i64, strictly: bool) -> Option<usize> {
        let position = self.by_first.partition_point(|&at| {
            let f = self.spans[at].first;
            if strictly {
                f <= first
            } else {
                f < first
            }
        });
        self.least_last_from.get(position).copied()
    }

    /// Whether span `at` holds another span inside it.
    fn holds_another(&self, at: usize) -> bool {
        let span = self.spans[at];
        // Another range inside this one starts at or after its first line and ends before its
        // last, or starts after its first line and ends by its last.
        let witnesses = [
            self.least_last_starting_from(span.first, false)
                .filter(|&w| self.spans[w].last < span.last),
            self.least_last_starting_from(span.first, true)
                .filter(|&w| self.spans[w].last <= span.last),
        ];
        let Some(witness) = witnesses.into_iter().flatten().next() else {
            return false;
        };
        if self.spans[witness].name != span.name {
            return true;
        }
        // The nearest one shares the name (a rare redefinition): look at every span.
        self.spans.iter().any(|other| {
            other.name != span.name
                && span.first <= other.first
                && other.last <= span.last
                && (other.first, other.last) != (span.first, span.last)
        })
    }
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

    /// The rule as first written, pair by pair: the oracle of the fast one.
    fn innermost_by_pairs(
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

    #[test]
    fn the_fast_rule_is_the_rule_pair_by_pair_on_random_nestings() {
        // A small deterministic generator (no dependency for a test's randomness).
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut below = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let text: String = (0..60).map(|n| format!("line {n}\n")).collect();
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        const NAMES: [&str; 5] = ["a", "b", "c", "a.b", "d"];
        for _ in 0..3_000 {
            let count = 1 + below(9) as usize;
            let symbols: Vec<(&str, usize, usize)> = (0..count)
                .map(|_| {
                    let first = below(40) as usize;
                    let last = first + below(15) as usize;
                    let name = NAMES[below(NAMES.len() as u64) as usize];
                    (name, starts[first], starts[last + 1])
                })
                .collect();
            // Ranges, and points where lines were deleted (`(n + 1, n)`).
            let lines: Vec<(i64, i64)> = (0..below(4))
                .map(|_| {
                    let a = 1 + below(55) as i64;
                    (a, a + below(6) as i64 - 1)
                })
                .collect();
            assert_eq!(
                innermost_spans_on_lines(&symbols, &text, &lines),
                innermost_by_pairs(&symbols, &text, &lines),
                "{symbols:?} {lines:?}"
            );
        }
    }
}
