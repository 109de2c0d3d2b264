//! Test doubles for [`Coord`](super::Coord), compiled for unit tests only: a scriptable
//! [`CodeIndex`], deterministic ids and a fake process table. (The test clock is
//! [`ManualClock`](super::ManualClock).)

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::index::{CodeIndex, IdSource, SignatureLookup, SymbolSpan, TextSymbols};
use super::paths::join_symbol_path;
use crate::platform::at_rest::DiskText;

/// Ids `<prefix>1`, `<prefix>2`, ... in call order.
#[derive(Debug)]
pub struct SequentialIds {
    prefix: String,
    next: AtomicU64,
}

impl SequentialIds {
    /// Ids starting at `<prefix>1`.
    pub fn new(prefix: &str) -> Self {
        SequentialIds {
            prefix: prefix.to_owned(),
            next: AtomicU64::new(1),
        }
    }
}

impl IdSource for SequentialIds {
    fn next_id(&self) -> String {
        format!(
            "{}{}",
            self.prefix,
            self.next.fetch_add(1, Ordering::SeqCst)
        )
    }
}

#[derive(Debug, Clone)]
struct FakeSymbol {
    qualified: String,
    start: usize,
    end: usize,
    signature: Option<String>,
}

#[derive(Debug, Default)]
struct FakeState {
    /// Per file, its symbols.
    symbols: HashMap<String, Vec<FakeSymbol>>,
    /// `(caller, callee)` symbol paths.
    calls: Vec<(String, String)>,
    /// Per file, its text on "disk".
    texts: HashMap<String, String>,
    /// Files whose text is being written (read, but not at rest).
    writing: HashSet<String>,
}

/// An in-memory [`CodeIndex`] filled by the test.
///
/// Name resolution follows docs/protocol.md 2.2: a qualified name (with `.`) matches exactly;
/// a bare name means the one top-level symbol of that name, else the one symbol of that name
/// anywhere; for intents every symbol of that name counts. Staged content for
/// [`CodeIndex::signatures_in_content`] is read as lines `qualified.name: signature`
/// (`.txt` files count as an unsupported language); each call counts as one parse.
#[derive(Debug, Default)]
pub struct FakeIndex {
    state: Mutex<FakeState>,
    content_parses: AtomicUsize,
}

impl FakeIndex {
    /// Adds a symbol of `file` with byte range `start..end` and, optionally, a signature.
    pub fn add_symbol(
        &self,
        file: &str,
        qualified_name: &str,
        start: usize,
        end: usize,
        signature: Option<&str>,
    ) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .symbols
            .entry(file.to_owned())
            .or_default()
            .push(FakeSymbol {
                qualified: qualified_name.to_owned(),
                start,
                end,
                signature: signature.map(str::to_owned),
            });
    }

    /// Records that symbol path `caller` calls symbol path `callee`.
    pub fn add_call(&self, caller: &str, callee: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.calls.push((caller.to_owned(), callee.to_owned()));
    }

    /// How many times staged content was parsed.
    pub fn content_parses(&self) -> usize {
        self.content_parses.load(Ordering::SeqCst)
    }

    /// Puts `text` on "disk" as `file`: [`CodeIndex::file_text`] returns it and
    /// [`CodeIndex::file_symbols`] reads its symbols as [`fake_symbols`] does.
    pub fn set_text(&self, file: &str, text: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.texts.insert(file.to_owned(), text.to_owned());
        state.writing.remove(file);
    }

    /// Puts `text` on "disk" as `file` in the middle of being written: [`CodeIndex::file_text`]
    /// says it was not at rest.
    pub fn set_text_being_written(&self, file: &str, text: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.texts.insert(file.to_owned(), text.to_owned());
        state.writing.insert(file.to_owned());
    }
}

/// The symbols of a fake source text: a line `def NAME(SIGNATURE)` opens a symbol (nested
/// ones are qualified by the enclosing names), the matching line `end` closes it (its range
/// runs from the start of the `def` line to the end of the `end` line). Unclosed symbols
/// make the text unclean.
pub fn fake_symbols(text: &str) -> TextSymbols {
    let mut open: Vec<(String, usize, Option<String>)> = Vec::new();
    let mut symbols = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("def ") {
            let (name, signature) = match rest.split_once('(') {
                Some((name, sig)) => (name.trim(), Some(format!("({sig}"))),
                None => (rest.trim(), None),
            };
            let qualified = match open.last() {
                Some((outer, _, _)) => format!("{outer}.{name}"),
                None => name.to_owned(),
            };
            open.push((qualified, at, signature));
        } else if trimmed == "end" {
            if let Some((qualified, start, signature)) = open.pop() {
                symbols.push(SymbolSpan {
                    qualified,
                    start,
                    end: at + line.len(),
                    signature,
                });
            }
        }
        at += line.len();
    }
    symbols.sort_by_key(|s| s.start);
    TextSymbols {
        symbols,
        clean: open.is_empty(),
        calls: Vec::new(),
    }
}

fn simple_name(qualified: &str) -> &str {
    qualified.rsplit('.').next().unwrap_or(qualified)
}

/// Every symbol `name` could mean.
fn matching<'a>(symbols: &'a [FakeSymbol], name: &str) -> Vec<&'a FakeSymbol> {
    if name.contains('.') {
        symbols.iter().filter(|s| s.qualified == name).collect()
    } else {
        symbols
            .iter()
            .filter(|s| simple_name(&s.qualified) == name)
            .collect()
    }
}

/// The one symbol `name` means, or why there is none.
fn lookup<'a>(symbols: &'a [FakeSymbol], name: &str) -> Result<&'a FakeSymbol, SignatureLookup> {
    let all = matching(symbols, name);
    let top_level: Vec<_> = all
        .iter()
        .copied()
        .filter(|s| !s.qualified.contains('.'))
        .collect();
    match (top_level.as_slice(), all.as_slice()) {
        ([one], _) | ([], [one]) => Ok(*one),
        ([], []) => Err(SignatureLookup::NotFound),
        (several, _) if several.len() > 1 => Err(SignatureLookup::Ambiguous {
            candidates: several.iter().map(|s| s.qualified.clone()).collect(),
        }),
        (_, several) => Err(SignatureLookup::Ambiguous {
            candidates: several.iter().map(|s| s.qualified.clone()).collect(),
        }),
    }
}

impl CodeIndex for FakeIndex {
    fn symbol_ranges(&self, file: &str, name: &str) -> Vec<(usize, usize)> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .symbols
            .get(file)
            .map(|symbols| {
                matching(symbols, name)
                    .into_iter()
                    .map(|s| (s.start, s.end))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn callers(&self, file: &str, name: &str) -> Vec<String> {
        let path = join_symbol_path(file, name);
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .calls
            .iter()
            .filter(|(_, callee)| *callee == path)
            .map(|(caller, _)| caller.clone())
            .collect()
    }

    fn callers_are_fresh(&self, _file: &str, _name: &str) -> bool {
        true
    }

    fn file_is_fresh(&self, _file: &str) -> bool {
        true
    }

    fn fresh_size(&self, file: &str) -> Option<u64> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.texts.get(file).map(|text| text.len() as u64)
    }

    fn callees(&self, file: &str, name: &str) -> Vec<String> {
        let path = join_symbol_path(file, name);
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .calls
            .iter()
            .filter(|(caller, _)| *caller == path)
            .map(|(_, callee)| callee.clone())
            .collect()
    }

    fn signature(&self, file: &str, name: &str) -> Result<String, SignatureLookup> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let symbols = state.symbols.get(file).ok_or(SignatureLookup::NotFound)?;
        lookup(symbols, name)?
            .signature
            .clone()
            .ok_or(SignatureLookup::NotFound)
    }

    fn signatures_in_content(
        &self,
        file: &str,
        content: &str,
        names: &[&str],
    ) -> Vec<Option<String>> {
        self.content_parses.fetch_add(1, Ordering::SeqCst);
        if file.ends_with(".txt") {
            return vec![None; names.len()];
        }
        let symbols: Vec<FakeSymbol> = content
            .lines()
            .filter_map(|line| line.split_once(": "))
            .map(|(name, signature)| FakeSymbol {
                qualified: name.trim().to_owned(),
                start: 0,
                end: 0,
                signature: Some(signature.to_owned()),
            })
            .collect();
        names
            .iter()
            .map(|name| {
                lookup(&symbols, name)
                    .ok()
                    .and_then(|s| s.signature.clone())
            })
            .collect()
    }

    fn signatures_equal(&self, a: &str, b: &str) -> bool {
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        squeeze(a) == squeeze(b)
    }

    fn file_text(&self, file: &str) -> Option<DiskText> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.texts.get(file).map(|text| DiskText {
            text: text.clone(),
            at_rest: !state.writing.contains(file),
        })
    }

    fn is_supported(&self, file: &str) -> bool {
        !file.ends_with(".txt")
    }

    fn file_symbols(&self, file: &str) -> Arc<[SymbolSpan]> {
        self.file_text(file)
            .map(|disk| fake_symbols(&disk.text).symbols)
            .unwrap_or_default()
            .into()
    }

    fn text_symbols(&self, _file: &str, text: &str) -> TextSymbols {
        self.content_parses.fetch_add(1, Ordering::SeqCst);
        fake_symbols(text)
    }
}

/// A process table where a test decides which pids run and since when, and which the table
/// cannot tell about (`Unknown`).
#[derive(Debug, Default)]
pub struct FakeProcesses {
    running: Mutex<HashMap<i64, i64>>,
    unknown: Mutex<std::collections::HashSet<i64>>,
}

impl FakeProcesses {
    /// Starts (or restarts, with another start time) process `pid`.
    pub fn start(&self, pid: i64, start_time: i64) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pid, start_time);
    }

    /// Ends process `pid`.
    pub fn kill(&self, pid: i64) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&pid);
    }

    /// Makes the table answer `Unknown` about `pid` (or tell again, with `false`).
    pub fn set_unknown(&self, pid: i64, unknown: bool) {
        let mut set = self.unknown.lock().unwrap_or_else(PoisonError::into_inner);
        if unknown {
            set.insert(pid);
        } else {
            set.remove(&pid);
        }
    }
}

impl super::ProcessTable for FakeProcesses {
    fn lookup(&self, pid: i64) -> super::Lookup {
        if self
            .unknown
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&pid)
        {
            return super::Lookup::Unknown;
        }
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&pid)
            .map_or(super::Lookup::Gone, |&start| {
                super::Lookup::Running(crate::platform::process::ProcessInfo {
                    start,
                    parent: None,
                    name: "fake".into(),
                })
            })
    }
}

/// A `Coord` over an in-memory store, a manual clock at 2026-01-15T10:30:00.000Z, a
/// [`FakeIndex`], a [`FakeProcesses`] table and ids `id-1`, `id-2`, ...
pub(crate) struct Harness {
    pub coord: super::Coord,
    pub clock: super::ManualClock,
    pub index: std::sync::Arc<FakeIndex>,
    pub processes: std::sync::Arc<FakeProcesses>,
}

#[allow(clippy::new_without_default, reason = "test helper")]
impl Harness {
    pub fn new() -> Self {
        #![allow(clippy::expect_used, reason = "test helper")]
        use std::sync::Arc;
        let clock = super::ManualClock::new(1_768_473_000_000);
        let index = Arc::new(FakeIndex::default());
        let store = crate::store::Store::open_in_memory().expect("in-memory store");
        let processes = Arc::new(FakeProcesses::default());
        let coord = super::Coord::new(store, Arc::new(clock.clone()), index.clone())
            .with_ids(Arc::new(SequentialIds::new("id-")))
            .with_processes(processes.clone());
        Harness {
            coord,
            clock,
            index,
            processes,
        }
    }
}

/// Two coordination cores ("daemons" on hosts `host-a` and `host-b`) over one SQLite file
/// treated as shared, with one manual clock, one fake index and one process table: what
/// several daemons on one PostgreSQL database do, without a server.
pub(crate) struct SharedPair {
    pub a: std::sync::Arc<super::Coord>,
    pub b: std::sync::Arc<super::Coord>,
    pub clock: super::ManualClock,
    pub processes: std::sync::Arc<FakeProcesses>,
    _dir: tempfile::TempDir,
}

impl SharedPair {
    pub fn new() -> Self {
        #![allow(clippy::expect_used, reason = "test helper")]
        use std::sync::Arc;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("state.db");
        let clock = super::ManualClock::new(1_768_473_000_000);
        let index = Arc::new(FakeIndex::default());
        let processes = Arc::new(FakeProcesses::default());
        let open = |host: &str| {
            let store = crate::store::Store::open(&path)
                .expect("store")
                .shared_for_tests();
            let coord = super::Coord::new(store, Arc::new(clock.clone()), index.clone())
                .with_processes(processes.clone())
                .with_host_id(host);
            coord.join(None).expect("join");
            Arc::new(coord)
        };
        let a = open("host-a");
        let b = open("host-b");
        SharedPair {
            a,
            b,
            clock,
            processes,
            _dir: dir,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn fake_resolution_follows_the_notes() {
        let index = FakeIndex::default();
        index.add_symbol("a.ts", "run", 0, 5, Some("()"));
        index.add_symbol("a.ts", "A.run", 10, 20, Some("(a)"));
        index.add_symbol("a.ts", "B.go", 30, 40, Some("(b)"));
        index.add_symbol("a.ts", "C.go", 50, 60, Some("(c)"));
        assert_eq!(index.signature("a.ts", "run").unwrap(), "()");
        assert_eq!(index.signature("a.ts", "A.run").unwrap(), "(a)");
        assert_eq!(
            index.signature("a.ts", "go").unwrap_err(),
            SignatureLookup::Ambiguous {
                candidates: vec!["B.go".into(), "C.go".into()]
            }
        );
        assert_eq!(
            index.signature("a.ts", "none").unwrap_err(),
            SignatureLookup::NotFound
        );
        assert_eq!(
            index.signature("b.ts", "run").unwrap_err(),
            SignatureLookup::NotFound
        );
        assert_eq!(index.symbol_ranges("a.ts", "run"), vec![(0, 5), (10, 20)]);
        assert_eq!(index.symbol_ranges("a.ts", "go"), vec![(30, 40), (50, 60)]);
        assert_eq!(
            index.signatures_in_content("x.ts", "f: (a)\nK.m: (b)\n", &["f", "m", "g"]),
            vec![Some("(a)".into()), Some("(b)".into()), None]
        );
        assert_eq!(index.content_parses(), 1);
    }
}
