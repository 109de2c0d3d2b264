//! A file's symbols as call resolution reads them: qualified names and kinds in one
//! string buffer and a table of offsets (about 12 bytes a symbol plus its name, where a
//! `FileAnalysis` spends several allocations on each). Answers what cross-file resolution
//! asks ([`Exports`]) exactly as the whole analysis does.

use super::language::Language;
use super::model::{FileAnalysis, SymbolKind};
use super::resolve::Exports;

/// One symbol: its qualified name as a range of [`Outline::text`], and its kind.
#[derive(Debug, Clone, Copy)]
struct Entry {
    qualified: (u32, u32),
    kind: SymbolKind,
}

/// The outline of one file. Plain data.
#[derive(Debug, Clone)]
pub(crate) struct Outline {
    /// The language the file was parsed as.
    pub language: Option<Language>,
    default_export: Option<Box<str>>,
    text: Box<str>,
    /// Symbols in document order.
    symbols: Box<[Entry]>,
    /// Symbol positions sorted by qualified name, then position.
    sorted: Box<[u32]>,
}

fn span(text: &mut String, part: &str) -> (u32, u32) {
    let start = u32::try_from(text.len()).unwrap_or(u32::MAX);
    text.push_str(part);
    (start, u32::try_from(part.len()).unwrap_or(u32::MAX))
}

impl Outline {
    /// The outline of an analysis.
    pub(crate) fn of(analysis: &FileAnalysis) -> Outline {
        let mut text = String::new();
        let symbols: Vec<Entry> = analysis
            .symbols
            .iter()
            .map(|s| {
                let qualified = span(&mut text, &s.qualified_name);
                Entry {
                    qualified,
                    kind: s.kind,
                }
            })
            .collect();
        let mut outline = Outline {
            language: analysis.language,
            default_export: analysis.default_export.as_deref().map(Box::from),
            text: text.into_boxed_str(),
            symbols: symbols.into_boxed_slice(),
            sorted: Box::default(),
        };
        let mut sorted: Vec<u32> = (0..u32::try_from(outline.symbols.len()).unwrap_or(0)).collect();
        sorted.sort_by(|a, b| {
            outline
                .qualified(*a)
                .cmp(outline.qualified(*b))
                .then(a.cmp(b))
        });
        outline.sorted = sorted.into_boxed_slice();
        outline
    }

    fn slice(&self, (start, len): (u32, u32)) -> &str {
        self.text
            .get(start as usize..(start + len) as usize)
            .unwrap_or_default()
    }

    /// Number of symbols.
    pub(crate) fn len(&self) -> usize {
        self.symbols.len()
    }

    /// The qualified name of the symbol at `at` (document order).
    pub(crate) fn qualified(&self, at: u32) -> &str {
        self.symbols
            .get(at as usize)
            .map_or("", |e| self.slice(e.qualified))
    }

    fn kind(&self, at: u32) -> Option<SymbolKind> {
        self.symbols.get(at as usize).map(|e| e.kind)
    }

    /// The positions of the symbols with exactly this qualified name, in document order.
    fn by_qualified(&self, qualified: &str) -> &[u32] {
        let start = self
            .sorted
            .partition_point(|at| self.qualified(*at) < qualified);
        let len = self.sorted[start..]
            .iter()
            .take_while(|at| self.qualified(**at) == qualified)
            .count();
        &self.sorted[start..start + len]
    }

    /// The first symbol of this qualified name.
    pub(crate) fn position(&self, qualified: &str) -> Option<u32> {
        self.by_qualified(qualified).first().copied()
    }

    /// About how many bytes it holds.
    pub(crate) fn approx_heap_bytes(&self) -> usize {
        use std::mem::size_of;
        size_of::<Outline>()
            + self.text.len()
            + self.symbols.len() * size_of::<Entry>()
            + self.sorted.len() * size_of::<u32>()
            + self.default_export.as_ref().map_or(0, |d| d.len())
    }
}

impl Exports for Outline {
    fn callable_symbol(&self, qualified_name: &str) -> bool {
        self.by_qualified(qualified_name).iter().any(|at| {
            self.kind(*at).is_some_and(|kind| {
                kind.is_callable() || matches!(kind, SymbolKind::Class | SymbolKind::Record)
            })
        })
    }

    fn export_target(&self, path: &[String]) -> Option<String> {
        let name = match path {
            [one] if one == "default" => return self.default_export.as_deref().map(str::to_owned),
            [one] => one.clone(),
            [first, second] => format!("{first}.{second}"),
            _ => return None,
        };
        (!self.by_qualified(&name).is_empty()).then_some(name)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::analysis::analyze;

    /// Lookups and resolution questions answer as on the whole analysis.
    #[test]
    fn answers_as_the_analysis_does() {
        let source = "export default class Shape {\n  area() { return 1; }\n  static make() { return new Shape(); }\n}\nexport function area() {}\nexport interface Area { x: number }\nfunction helper() {}\nnamespace N { export function area() {} }\n";
        let analysis = analyze(Language::TypeScript, source);
        let outline = Outline::of(&analysis);
        for name in [
            "area",
            "Shape.area",
            "Shape",
            "helper",
            "make",
            "missing",
            "N.area",
            "x.y",
        ] {
            assert_eq!(
                outline.callable_symbol(name),
                analysis.callable_symbol(name),
                "{name}"
            );
        }
        for path in [
            vec!["default"],
            vec!["area"],
            vec!["Shape", "make"],
            vec!["Area"],
            vec!["a", "b", "c"],
        ] {
            let path: Vec<String> = path.into_iter().map(str::to_owned).collect();
            assert_eq!(
                outline.export_target(&path),
                analysis.export_target(&path),
                "{path:?}"
            );
        }
        assert!(outline.approx_heap_bytes() * 2 < analysis.approx_heap_bytes());
    }
}
