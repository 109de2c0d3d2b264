//! The code index that coordination sees ([`CodeIndex`]), answered by the analysis module's
//! [`RepoIndex`]: fresh for every file it reads, parse results shared by content hash.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::analysis::{signatures_equal, FileAnalysis, Language, Lookup, RepoIndex};
use crate::coord::{CodeIndex, SignatureLookup, SymbolSpan, TextSymbols};
use crate::platform::at_rest::{DiskText, OpenWriters};

/// [`CodeIndex`] over a [`RepoIndex`].
#[derive(Debug, Clone)]
pub struct AnalysisIndex {
    index: Arc<RepoIndex>,
    /// The worktree's root, as sessions record it.
    root: String,
    /// The files the tree observer sees being written: a text read from one is not at rest.
    writers: Arc<OpenWriters>,
    /// The symbol lists last made of analyses ([`CodeIndex::file_symbols`]).
    spans: Arc<SpanMemo>,
}

/// The symbol lists of the last few analyses asked for, each kept while its analysis is the
/// index's: a preflight of a large file asks for the same thousand symbols each time, and
/// copying their names and signatures cost more than the rest of its symbol work.
#[derive(Debug, Default)]
struct SpanMemo {
    kept: Mutex<Vec<MemoEntry>>,
}

/// An analysis (not kept alive by the memo) and the symbol list made of it.
type MemoEntry = (Weak<FileAnalysis>, Arc<[SymbolSpan]>);

impl SpanMemo {
    /// How many lists are kept.
    const CAPACITY: usize = 4;
    /// Lists of more symbols are made each time and not kept: the index keeps a large
    /// file's analysis, and a kept list beside it would hold as much again (about 40 MB for
    /// the 294,665 symbols of an 8 MiB file). A 1 MiB file of one-line functions has 40k.
    const MOST_SYMBOLS: usize = 65_536;

    /// The symbol list of `analysis`, made once (outside the memo's lock). An entry is found
    /// by the analysis's address, which its `Weak` keeps from being reused while it stands.
    fn spans_of(&self, analysis: &Arc<FileAnalysis>) -> Arc<[SymbolSpan]> {
        let is_this = |(weak, _): &&MemoEntry| std::ptr::eq(weak.as_ptr(), Arc::as_ptr(analysis));
        {
            let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
            kept.retain(|(weak, _)| weak.strong_count() > 0);
            if let Some((_, spans)) = kept.iter().find(is_this) {
                return Arc::clone(spans);
            }
        }
        let spans: Arc<[SymbolSpan]> = symbol_spans(analysis).into();
        if spans.len() <= Self::MOST_SYMBOLS {
            let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
            if !kept.iter().any(|entry| is_this(&entry)) {
                if kept.len() >= Self::CAPACITY {
                    kept.remove(0);
                }
                kept.push((Arc::downgrade(analysis), Arc::clone(&spans)));
            }
        }
        spans
    }
}

impl AnalysisIndex {
    /// Wraps the repository index; `writers` says which files are being written.
    pub fn new(index: Arc<RepoIndex>, writers: Arc<OpenWriters>) -> Self {
        let root = index.root().display().to_string();
        Self {
            index,
            root,
            writers,
            spans: Arc::default(),
        }
    }

    fn analysis(&self, file: &str) -> Option<Arc<crate::analysis::FileAnalysis>> {
        match self.index.file(file) {
            Ok(found) => found,
            Err(error) => {
                tracing::debug!(file, %error, "file not analysed");
                None
            }
        }
    }
}

impl CodeIndex for AnalysisIndex {
    fn symbol_ranges(&self, file: &str, name: &str) -> Vec<(usize, usize)> {
        self.analysis(file)
            .map(|analysis| {
                analysis
                    .matching(name)
                    .iter()
                    .map(|symbol| (symbol.start_byte, symbol.end_byte))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn callers(&self, file: &str, name: &str) -> Vec<String> {
        self.index
            .callers(file, name)
            .iter()
            .map(|caller| caller.to_symbol_path())
            .collect()
    }

    fn callers_are_fresh(&self, file: &str, name: &str) -> bool {
        self.index.callers_are_fresh(file, name)
    }

    fn file_is_fresh(&self, file: &str) -> bool {
        self.index.file_and_imports_are_fresh(file)
    }

    fn fresh_size(&self, file: &str) -> Option<u64> {
        self.index.size_as_on_disk(file)
    }

    fn callees(&self, file: &str, name: &str) -> Vec<String> {
        self.index
            .callees(file, name)
            .iter()
            .map(|callee| callee.to_symbol_path())
            .collect()
    }

    fn signature(&self, file: &str, name: &str) -> Result<String, SignatureLookup> {
        let analysis = self.analysis(file).ok_or(SignatureLookup::NotFound)?;
        match analysis.lookup(name) {
            Lookup::Unique(symbol) => symbol.signature.clone().ok_or(SignatureLookup::NotFound),
            Lookup::Ambiguous(symbols) => Err(SignatureLookup::Ambiguous {
                candidates: symbols.iter().map(|s| s.qualified_name.clone()).collect(),
            }),
            Lookup::NotFound => Err(SignatureLookup::NotFound),
        }
    }

    fn signatures_in_content(
        &self,
        file: &str,
        content: &str,
        names: &[&str],
    ) -> Vec<Option<String>> {
        let Some(language) = Language::for_path(file) else {
            return vec![None; names.len()];
        };
        let analysis = self.index.analyze_content_of(file, language, content);
        names
            .iter()
            .map(|name| match analysis.lookup(name) {
                Lookup::Unique(symbol) => symbol.signature.clone(),
                Lookup::Ambiguous(_) | Lookup::NotFound => None,
            })
            .collect()
    }

    fn signatures_equal(&self, a: &str, b: &str) -> bool {
        signatures_equal(a, b)
    }

    fn file_text(&self, file: &str) -> Option<DiskText> {
        match self.index.read_text(file) {
            Ok(Some(mut disk)) => {
                disk.at_rest &= !self.writers.is_open(&self.index.root().join(file));
                Some(disk)
            }
            Ok(None) => None,
            Err(error) => {
                tracing::debug!(file, %error, "file not read");
                None
            }
        }
    }

    fn is_supported(&self, file: &str) -> bool {
        Language::for_path(file).is_some()
    }

    fn file_symbols(&self, file: &str) -> Arc<[SymbolSpan]> {
        self.analysis(file)
            .map(|analysis| self.spans.spans_of(&analysis))
            .unwrap_or_else(|| Arc::from([]))
    }

    fn text_symbols(&self, file: &str, text: &str) -> TextSymbols {
        match Language::for_path(file) {
            Some(language) => text_symbols(&self.index.analyze_content_of(file, language, text)),
            None => TextSymbols::default(),
        }
    }

    fn known_symbols(&self, file: &str, text: &str) -> Option<Arc<[SymbolSpan]>> {
        let language = Language::for_path(file)?;
        self.index
            .known_analysis_of(file, language, text)
            .map(|analysis| self.spans.spans_of(&analysis))
    }

    fn worktree_root(&self) -> Option<String> {
        Some(self.root.clone())
    }
}

/// The symbols of an analysis as coordination sees them.
fn symbol_spans(analysis: &FileAnalysis) -> Vec<SymbolSpan> {
    analysis
        .symbols
        .iter()
        .map(|symbol| SymbolSpan {
            qualified: symbol.qualified_name.clone(),
            start: symbol.start_byte,
            end: symbol.end_byte,
            signature: symbol.signature.clone(),
        })
        .collect()
}

/// The symbols and calls of an analysis as coordination sees them.
fn text_symbols(analysis: &FileAnalysis) -> TextSymbols {
    TextSymbols {
        symbols: symbol_spans(analysis),
        clean: analysis.diagnostics.is_empty(),
        calls: analysis
            .calls
            .iter()
            .filter_map(|call| Some((call.caller.clone()?, call.callee.clone())))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::analysis::{Symbol, SymbolKind};

    fn analysis(symbols: usize) -> Arc<FileAnalysis> {
        Arc::new(FileAnalysis {
            symbols: (0..symbols)
                .map(|n| Symbol {
                    name: format!("f{n}"),
                    qualified_name: format!("f{n}"),
                    kind: SymbolKind::Function,
                    start_byte: n * 10,
                    end_byte: n * 10 + 9,
                    line: n + 1,
                    signature: Some(format!("f{n}()")),
                })
                .collect(),
            ..FileAnalysis::default()
        })
    }

    /// An analysis's symbol list is made once while the analysis lives; a new analysis (the
    /// file changed) gets its own; a huge list is not kept.
    #[test]
    fn symbol_lists_are_shared_while_their_analysis_lives() {
        let memo = SpanMemo::default();
        let small = analysis(3);
        let first = memo.spans_of(&small);
        assert_eq!(first.len(), 3);
        assert_eq!(first[2].qualified, "f2");
        assert!(Arc::ptr_eq(&first, &memo.spans_of(&small)), "shared");
        let changed = analysis(3);
        assert!(
            !Arc::ptr_eq(&first, &memo.spans_of(&changed)),
            "its own list"
        );
        let huge = analysis(SpanMemo::MOST_SYMBOLS + 1);
        let made = memo.spans_of(&huge);
        assert!(!Arc::ptr_eq(&made, &memo.spans_of(&huge)), "made again");
        drop(small);
        memo.spans_of(&changed);
        assert_eq!(
            memo.kept.lock().unwrap().len(),
            1,
            "the dead analysis's list is let go"
        );
    }
}

#[cfg(test)]
mod change_symbol_tests {
    //! The symbols a change found on disk is named by: its regions parsed, as a preflight
    //! parses them, against the whole new text parsed.
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::sync::Arc;

    use proptest::prelude::*;

    use super::AnalysisIndex;
    use crate::analysis::RepoIndex;
    use crate::coord::preflight::spans::Applied;
    use crate::coord::regions::{regions_of_changes, Lines};
    use crate::coord::time::SystemClock;
    use crate::coord::CodeIndex;
    use crate::coord::Coord;
    use crate::fuzz::runner;
    use crate::store::Store;

    const TYPESCRIPT: &str = "import { x } from './x';\n\nexport class Shape {\n  area(): number {\n    return 1;\n  }\n\n  grow(by: number): void {\n    this.size += by;\n  }\n}\n\nexport function make(n: number): Shape {\n  const s = new Shape();\n  if (n > 1) {\n    return make(n - 1);\n  }\n  return s;\n}\n\nconst helper = (a: number) => a * 2;\n\nexport interface Named {\n  name: string;\n}\n";
    const PYTHON: &str = "import os\n\n\nclass Shape:\n    def area(self):\n        return 1\n\n    def grow(self, by):\n        self.size += by\n\n\ndef make(n):\n    s = Shape()\n    if n > 1:\n        return make(n - 1)\n    return s\n\n\nLIMIT = 10\n";
    const RUST: &str = "use std::fmt;\n\npub struct Shape {\n    size: i64,\n}\n\nimpl Shape {\n    pub fn area(&self) -> i64 {\n        1\n    }\n\n    pub fn grow(&mut self, by: i64) {\n        self.size += by;\n    }\n}\n\npub fn make(n: i64) -> Shape {\n    if n > 1 {\n        return make(n - 1);\n    }\n    Shape { size: n }\n}\n";
    const GO: &str = "package shapes\n\nimport \"fmt\"\n\ntype Shape struct {\n\tsize int\n}\n\nfunc (s *Shape) Area() int {\n\treturn 1\n}\n\nfunc (s *Shape) Grow(by int) {\n\ts.size += by\n}\n\nfunc Make(n int) *Shape {\n\tif n > 1 {\n\t\treturn Make(n - 1)\n\t}\n\treturn &Shape{size: n}\n}\n";
    const JAVA: &str = "package shapes;\n\nimport java.util.List;\n\npublic class Shape {\n    private int size;\n\n    public int area() {\n        return 1;\n    }\n\n    public void grow(int by) {\n        this.size += by;\n    }\n\n    static class Inner {\n        void touch() {\n            size = 2;\n        }\n    }\n}\n";

    /// A function or method of each language, indented by `indent`.
    fn added(file: &str, indent: &str) -> String {
        let body = match file.rsplit('.').next() {
            Some("ts") => "function added(a: number): number {\n  return a;\n}\n",
            Some("py") => "def added(a):\n    return a\n",
            Some("rs") => "fn added(a: i64) -> i64 {\n    a\n}\n",
            Some("go") => "func Added(a int) int {\n\treturn a\n}\n",
            _ => "int added(int a) {\n    return a;\n}\n",
        };
        body.lines()
            .map(|line| format!("{indent}{line}\n"))
            .collect()
    }

    /// `before` with one change at its line `at` (wrapped) that keeps it well formed: a line
    /// rewritten, or, after a line that opens or closes no block, that line repeated or
    /// removed, or a function added (at its indentation, at the top level, or right above the
    /// next top-level declaration). A change that
    /// leaves a block's body behind its removed opener is left out: parsed alone, a region
    /// lacks the context that decides where such lines belong (Python's indentation).
    fn edited(file: &str, before: &str, change: usize, at: usize) -> String {
        let lines: Vec<&str> = before.lines().collect();
        let at = at % lines.len();
        let line = lines[at];
        let indent = &line[..line.len() - line.trim_start().len()];
        let plain = !line.trim().is_empty()
            && !line.trim_end().ends_with([':', '{', '}', '(', ','])
            && !line.trim_start().starts_with(['}', ')']);
        let mut out: Vec<String> = lines[..at].iter().map(|l| format!("{l}\n")).collect();
        match change {
            1 if plain => out.extend([format!("{line}\n"), format!("{line}\n")]),
            2 if plain => {}
            3 if plain => out.extend([format!("{line}\n"), added(file, indent)]),
            4 => out.extend([format!("{line}\n"), "\n".to_owned(), added(file, "")]),
            5 => {
                // Right above the next top-level declaration, no blank line between.
                let declares = |l: &&str| {
                    l.starts_with(|c: char| c.is_ascii_alphabetic())
                        && !["import", "package", "use"]
                            .iter()
                            .any(|k| l.starts_with(k))
                };
                let next = lines[at..].iter().position(declares).map(|i| at + i);
                let until = next.unwrap_or(lines.len());
                out.extend(lines[at..until].iter().map(|l| format!("{l}\n")));
                out.push(added(file, ""));
                out.extend(lines[until..].iter().map(|l| format!("{l}\n")));
                return out.concat();
            }
            _ => out.push(format!(
                "{}\n",
                line.replacen('1', "2", 1).replacen("size", "width", 1)
            )),
        }
        out.extend(lines[at + 1..].iter().map(|l| format!("{l}\n")));
        out.concat()
    }

    #[test]
    fn a_change_found_on_disk_is_named_alike_from_its_regions_and_from_the_whole_text() {
        let dir = tempfile::tempdir().unwrap();
        let index = Arc::new(AnalysisIndex::new(
            Arc::new(RepoIndex::new(dir.path().to_path_buf())),
            Arc::default(),
        ));
        let coord = Coord::new(
            Store::open_in_memory().unwrap(),
            Arc::new(SystemClock),
            index.clone(),
        );
        let samples = [
            ("src/a.ts", TYPESCRIPT),
            ("a.py", PYTHON),
            ("src/a.rs", RUST),
            ("a.go", GO),
            ("Shape.java", JAVA),
        ];
        let named = std::cell::Cell::new(0usize);
        runner()
            .run(
                &(0..samples.len(), 0usize..6, 0usize..64),
                |(which, change, at)| {
                    let (file, before) = samples[which];
                    // The text before is analysed already (the regions are parsed then).
                    index.text_symbols(file, before);
                    prop_assert!(index.known_symbols(file, before).is_some());
                    let now = edited(file, before, change, at);
                    let applied = Applied::content(before, &now);
                    let lines: Vec<(i64, i64)> =
                        regions_of_changes(&applied.line_changes, &Lines::of(&now))
                            .iter()
                            .map(|r| (r.start_line, r.end_line))
                            .collect();
                    let regions = coord.symbols_on_changed_lines(file, before, &applied, &lines);
                    let whole = coord.symbols_on_lines(file, &now, &lines);
                    named.set(named.get() + usize::from(!whole.is_empty()));
                    prop_assert_eq!(regions, whole, "{} changed ({}):\n{}", file, change, now);
                    Ok(())
                },
            )
            .unwrap();
        // The changes do reach symbols (the comparison is not of empty lists).
        assert!(named.get() > 0);
    }
}
