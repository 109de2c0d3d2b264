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
