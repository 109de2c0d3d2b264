//! `edit.preflight` (docs/protocol.md 10, 13): an edit → the spans it changes → the symbols it
//! touches → other live agents' intents and locks it meets (collisions) and their work near
//! it (context), and the contracts the new text breaks; with `record`, observed work.
//!
//! The current text's symbols come from the index (no parse when it knows the file). The new
//! text is not parsed whole: each changed region, widened to the outermost symbols it meets
//! (or, when it meets none, to its neighbours, so that a symbol added to a container is named
//! with it), is parsed on its own, and symbols elsewhere keep their names, ranges (shifted)
//! and signatures. A region that does not parse cleanly on its own, or an edit that changes
//! most of the file, falls back to one parse of the whole new text. Every step is linear in
//! the file's symbols and the edit's changes (binary searches over sorted spans).
//!
//! The rules (what collides, what is context, whose work counts) live in
//! [`super::conflicts`]; the regions' upkeep in `workmap`.

pub mod line_ops;
mod related;
pub mod spans;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::conflicts::{collides, held_by_another, overlap_items, Conflict, Others, Related, Work};
use super::contracts::{Violation, SYMBOL_NOT_IN_STAGED_CONTENT};
use super::paths::{join_symbol_path, normalize};
use super::regions::Lines;
use super::workmap::{Observed, Upkeep};
use super::{check_len, Coord, CoordError, Result, SymbolSpan, Vantage, MAX_PATH_BYTES};
use crate::protocol::params::MAX_BODY_BYTES;
use crate::store::RangeHit;
use spans::{apply_edits, map_end, map_start, meets, Applied, Change, Edit, EditError};

/// The description of an intent recorded from an observed edit.
pub const OBSERVED_EDIT: &str = "observed edit";

/// What the edit is.
#[derive(Debug, Clone, Copy)]
pub enum NewText<'a> {
    /// Find-and-replace edits, applied in order.
    Edits(&'a [Edit]),
    /// The whole new text.
    Content(&'a str),
}

impl<'a> NewText<'a> {
    /// The edit an `edit.preflight` names: its `edits` or its whole `content`, exactly one
    /// of them (the decoder refuses an empty `edits`, so empty means absent here).
    pub fn of(edits: &'a [Edit], content: Option<&'a str>) -> Result<NewText<'a>> {
        match (edits.is_empty(), content) {
            (false, None) => Ok(NewText::Edits(edits)),
            (true, Some(content)) => Ok(NewText::Content(content)),
            _ => Err(CoordError::InvalidInput {
                field: "edits",
                message: "give exactly one of edits and content".into(),
            }),
        }
    }

    /// The bytes the edit writes (its new texts, or the content); `None` when `replaceAll`
    /// makes that unbounded by the edit alone.
    fn written(&self) -> Option<usize> {
        match self {
            NewText::Content(content) => Some(content.len()),
            NewText::Edits(edits) if edits.iter().any(|e| e.replace_all) => None,
            NewText::Edits(edits) => Some(edits.iter().map(|e| e.new_text.len()).sum()),
        }
    }
}

/// The answer of `edit.preflight`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preflight {
    /// Whether the edits apply to the current text.
    pub applies: bool,
    /// Why they do not.
    pub reason: Option<String>,
    /// Touched symbols, `file:Qualified`, innermost first, each once.
    pub symbols: Vec<String>,
    /// Collisions: INTENT_OVERLAP items, then LOCK_INTERSECTION items.
    pub conflicts: Vec<Conflict>,
    /// Contracts the new text breaks.
    pub violations: Vec<Violation>,
    /// Context: SAME_SYMBOL items, then COUPLED items (13.5).
    pub related: Vec<Related>,
    /// The id of the intent `record` declared, if it declared one.
    pub recorded_intent: Option<String>,
}

/// A changed region wider than this share of the new text is parsed with the whole text.
const WHOLE_PARSE_SHARE: f64 = 0.5;

/// The new text's symbols where the edit may have changed them.
struct NewSymbols {
    /// Symbols found in the parsed regions (or the whole text), with new-text ranges.
    symbols: Vec<SymbolSpan>,
    /// The parsed regions in the current text's coordinates (`None`: the whole text was
    /// parsed, so every old symbol is superseded).
    regions: Option<Vec<(usize, usize)>>,
}

/// The largest file, and the most text an edit may write, that a preflight checks on the
/// request's own thread: parsing that much takes well under a millisecond, less than a
/// hand-off to the blocking pool and back costs a harness hook's call (two thread switches).
const QUICK_PREFLIGHT_BYTES: u64 = 16 * 1024;

impl Coord {
    /// Whether [`Coord::preflight`] of `file` with `new` would finish at once: the index
    /// knows the file as it is on disk and it is small, and the edit writes little (never
    /// with `replaceAll`, whose writing the edit alone does not bound). An invalid path is
    /// quick too: it fails before any lookup.
    pub fn preflight_is_quick(&self, file: &str, new: NewText<'_>) -> bool {
        let small = |bytes: u64| bytes <= QUICK_PREFLIGHT_BYTES;
        new.written().is_some_and(|bytes| small(bytes as u64))
            && match normalize(file) {
                Ok(file) => self.index.fresh_size(&file).is_some_and(small),
                Err(_) => true,
            }
    }

    /// Checks an edit of `file` by `session_id` before it is written (docs/protocol.md 10, 13).
    pub fn preflight(
        &self,
        session_id: &str,
        file: &str,
        new: NewText<'_>,
        record: bool,
    ) -> Result<Preflight> {
        let at = self.vantage(Some(session_id));
        self.preflight_while(&at, file, new, record, &Interest::default())
    }

    /// [`Coord::preflight`] for a client that may go away: when `interest` says it has gone,
    /// the work stops between its steps with [`CoordError::Abandoned`].
    pub fn preflight_while(
        &self,
        at: &Vantage,
        file: &str,
        new: NewText<'_>,
        record: bool,
        interest: &Interest,
    ) -> Result<Preflight> {
        let session_id = self.acting(at)?;
        check_len("file", file, MAX_PATH_BYTES)?;
        let file = normalize(file).map_err(|e| CoordError::invalid("file", e.to_string()))?;
        let current = self
            .index
            .file_text(&file)
            .map(|disk| disk.text)
            .unwrap_or_default();
        let applied = match new {
            NewText::Edits(edits) => match apply_edits(&current, edits, MAX_BODY_BYTES) {
                Ok(applied) => applied,
                Err(EditError::DoesNotApply(reason)) => {
                    return Ok(Preflight {
                        applies: false,
                        reason: Some(reason),
                        ..Preflight::default()
                    })
                }
                Err(too_large @ EditError::TooLarge { .. }) => {
                    return Err(CoordError::invalid("edits", too_large.to_string()))
                }
            },
            NewText::Content(content) => Applied::content(&current, content),
        };
        interest.check()?;
        let supported = self.index.is_supported(&file);
        let old = if supported {
            self.index.file_symbols(&file)
        } else {
            Arc::from([])
        };
        interest.check()?;
        let new_symbols = if supported && !applied.changes.is_empty() {
            self.new_symbols(&file, &current, &old, &applied)
        } else {
            NewSymbols {
                symbols: Vec::new(),
                regions: Some(Vec::new()),
            }
        };
        interest.check()?;
        let touched = touched_symbols(&old, &new_symbols.symbols, &applied.changes);
        let old_lines = Lines::of(&current);
        let edit = EditView {
            file: &file,
            current: &current,
            touched: &touched,
            changes: &applied.changes,
            line_changes: &applied.line_changes,
            new_text: &applied.text,
            lines: &old_lines,
        };
        let others = Others::of(self, at)?;
        let (conflicts, near) = self.collisions(&others, &edit)?;
        interest.check()?;
        let violations = self.violations(&file, &old, &new_symbols)?;
        let related = self.related(&others, &edit, near)?;
        let mut preflight = Preflight {
            applies: true,
            reason: None,
            symbols: touched
                .iter()
                .map(|t| join_symbol_path(&file, &t.name))
                .collect(),
            conflicts,
            violations,
            related,
            recorded_intent: None,
        };
        if record && preflight.conflicts.is_empty() && preflight.violations.is_empty() {
            interest.check()?;
            let _recording = self.recording();
            let names: Vec<String> = touched.iter().map(|t| t.name.clone()).collect();
            let observed = Observed {
                file: &file,
                touched: &names,
                before: &current,
                applied: &applied,
                file_level: is_whole_rewrite(new, &current, &applied),
            };
            preflight.recorded_intent = self.record_observed(at, session_id, &observed)?;
            self.note_recorded_edit(at, session_id, &file, &current, applied);
        }
        Ok(preflight)
    }

    /// The collisions of an edit (10.2, 13.4): other live agents' intents it meets, oldest
    /// first, then their locks on the touched symbols; and the rows of other sessions'
    /// intents in this file that it does not meet (the candidates for context, not yet
    /// filtered by [`Others`]).
    fn collisions(
        &self,
        others: &Others<'_>,
        edit: &EditView<'_>,
    ) -> Result<(Vec<Conflict>, Vec<RangeHit>)> {
        let me = others.me();
        let rows = self.store.read(|r| r.live_ranges_in_file(edit.file, me))?;
        // A preview writes nothing (10.3): regions are carried for this answer only.
        let rows = self.regions_and_writes_in(
            others.vantage(),
            edit.file,
            edit.current,
            rows,
            Upkeep::Preview,
        )?;
        let work = Work::Edit {
            changes: edit.changes,
            line_changes: edit.line_changes,
            new_text: edit.new_text,
            lines: edit.lines,
        };
        // Whose work counts is asked only of what the geometry keeps (a read per session).
        let (mut hits, mut near): (Vec<RangeHit>, Vec<RangeHit>) = (Vec::new(), Vec::new());
        for (row, written) in rows {
            if collides(work, &row, &written) {
                hits.push(row);
            } else {
                near.push(row);
            }
        }
        let hits = others.filter(hits, |row| row.session_id.as_str())?;
        let hit_ids: HashSet<i64> = hits.iter().map(|h| h.intent_seq).collect();
        let near = near
            .into_iter()
            .filter(|row| !hit_ids.contains(&row.intent_seq))
            .collect();
        let mut conflicts = overlap_items(hits);

        // LOCK_INTERSECTION: each touched symbol (by its qualified and its bare name).
        let locks = self.store.read(|r| {
            let now = self.clock.now_ms();
            let mut asked = HashSet::new();
            let mut locks = Vec::new();
            for touched in edit.touched {
                let name = touched.name.as_str();
                let simple = name.rsplit('.').next().unwrap_or(name);
                for candidate in [name, simple] {
                    let path = join_symbol_path(edit.file, candidate);
                    if asked.insert(path.clone()) {
                        locks.extend(r.lock(&path)?.filter(|l| held_by_another(l, me, now)));
                    }
                }
            }
            Ok::<_, CoordError>(locks)
        })?;
        conflicts.extend(others.lock_items(locks)?);
        Ok((conflicts, near))
    }

    /// Accepted contracts of the file whose signature the new text changes.
    fn violations(
        &self,
        file: &str,
        old: &[SymbolSpan],
        new_symbols: &NewSymbols,
    ) -> Result<Vec<Violation>> {
        let contracts = self.store.read(|r| r.accepted_contracts_in_file(file))?;
        Ok(contracts
            .into_iter()
            .filter_map(|contract| {
                let actual = new_signature(old, new_symbols, &contract.name);
                let equal = actual
                    .as_deref()
                    .is_some_and(|actual| self.index.signatures_equal(&contract.signature, actual));
                (!equal).then(|| Violation {
                    contract_id: contract.id,
                    symbol_path: contract.symbol_path,
                    expected: contract.signature,
                    actual: actual.unwrap_or_else(|| SYMBOL_NOT_IN_STAGED_CONTENT.to_owned()),
                })
            })
            .collect())
    }

    /// The innermost symbols on `lines` (1-based, of the new text) of a change `applied` to
    /// `before`. When `before`'s analysis is already made, the new text is parsed only in the
    /// regions the change touched, as a preflight parses them (a change found on disk is
    /// attributed without parsing the whole file anew); else the whole new text is parsed,
    /// the text the next request about the file needs.
    pub(crate) fn symbols_on_changed_lines(
        &self,
        file: &str,
        before: &str,
        applied: &Applied,
        lines: &[(i64, i64)],
    ) -> Vec<String> {
        if lines.is_empty() {
            return Vec::new();
        }
        let Some(known) = self.index.known_symbols(file, before) else {
            return self.symbols_on_lines(file, &applied.text, lines);
        };
        let new = self.new_symbols(file, before, &known, applied);
        let spans: Vec<(&str, usize, usize)> = new
            .symbols
            .iter()
            .map(|s| (s.qualified.as_str(), s.start, s.end))
            .collect();
        crate::analysis::innermost_spans_on_lines(&spans, &applied.text, lines)
    }

    /// Parses the changed regions of the new text (or all of it) for their symbols.
    fn new_symbols(
        &self,
        file: &str,
        current: &str,
        old: &[SymbolSpan],
        applied: &Applied,
    ) -> NewSymbols {
        let whole = |coord: &Coord| NewSymbols {
            symbols: coord.index.text_symbols(file, &applied.text).symbols,
            regions: None,
        };
        if old.is_empty() {
            return whole(self);
        }
        let regions = changed_regions(old, &applied.changes, current, &applied.text);
        let covered: usize = regions.iter().map(|r| r.new.1 - r.new.0).sum();
        if covered as f64 > WHOLE_PARSE_SHARE * applied.text.len() as f64 {
            return whole(self);
        }
        let mut symbols = Vec::new();
        for region in &regions {
            let Some(snippet) = applied.text.get(region.new.0..region.new.1) else {
                return whole(self);
            };
            let parsed = self.index.text_symbols(file, snippet);
            if !parsed.clean {
                return whole(self);
            }
            let prefix = qualifier_prefix(region.outermost.as_deref(), &parsed.symbols);
            symbols.extend(parsed.symbols.into_iter().map(|s| SymbolSpan {
                qualified: format!("{prefix}{}", s.qualified),
                start: s.start + region.new.0,
                end: s.end + region.new.0,
                signature: s.signature,
            }));
        }
        NewSymbols {
            symbols,
            regions: Some(regions.iter().map(|r| r.old).collect()),
        }
    }
}

/// Whether a change rewrites the whole file (13.1: a whole-content write that shares no line
/// with the old text, or a deletion), which makes an observed intent file-level.
fn is_whole_rewrite(new: NewText<'_>, current: &str, applied: &Applied) -> bool {
    match new {
        NewText::Edits(_) => false,
        NewText::Content(content) => {
            content.is_empty()
                || matches!(&applied.changes[..], [only]
                    if only.old == (0, current.len()) && only.new == (0, content.len()))
        }
    }
}

/// What the rules need to know about an edit.
pub(crate) struct EditView<'a> {
    /// The normalised file.
    pub file: &'a str,
    /// Its current text.
    pub current: &'a str,
    /// The touched symbols, innermost first.
    pub touched: &'a [Touched],
    /// The changes of the current text (exact spans).
    pub changes: &'a [Change],
    /// Its changed lines as git aligns them.
    pub line_changes: &'a [Change],
    /// The new text.
    pub new_text: &'a str,
    /// The current text's lines.
    pub lines: &'a Lines,
}

/// Whether the client still wants the answer: set to gone when its connection closes, so
/// long work stops between its steps (issue 20.3).
#[derive(Debug, Clone, Default)]
pub struct Interest(Arc<AtomicBool>);

impl Interest {
    /// Marks the client gone.
    pub fn abandon(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// [`CoordError::Abandoned`] once the client has gone.
    pub fn check(&self) -> Result<()> {
        if self.0.load(Ordering::Relaxed) {
            return Err(CoordError::Abandoned);
        }
        Ok(())
    }
}

/// One changed region: its span in the current and in the new text, and the qualified name
/// of the outermost old symbol it starts with (for the names of what is parsed inside).
struct Region {
    old: (usize, usize),
    new: (usize, usize),
    outermost: Option<String>,
}

/// The symbols no other symbol strictly contains, in source order (one pass over `old`
/// sorted by start, then by end descending).
fn outermost_symbols(old: &[SymbolSpan]) -> Vec<&SymbolSpan> {
    let mut sorted: Vec<&SymbolSpan> = old.iter().collect();
    if !sorted.windows(2).all(|w| {
        (w[0].start, std::cmp::Reverse(w[0].end)) <= (w[1].start, std::cmp::Reverse(w[1].end))
    }) {
        sorted.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    }
    let mut outermost: Vec<&SymbolSpan> = Vec::new();
    for symbol in sorted {
        let contained = outermost.last().is_some_and(|o| {
            o.start <= symbol.start
                && symbol.end <= o.end
                && (o.start, o.end) != (symbol.start, symbol.end)
        });
        if !contained {
            outermost.push(symbol);
        }
    }
    outermost
}

/// The regions to re-parse: each change widened to the outermost old symbols it meets (or
/// whose edge it lies on); a change that meets none is widened to the outermost symbols right
/// before and after it (only blank text between), so that what it adds is parsed inside its
/// container's context (13.2: a method appended to a class, a `fn` added to an `impl`).
/// Overlapping regions merged.
fn changed_regions(
    old: &[SymbolSpan],
    changes: &[Change],
    current: &str,
    new_text: &str,
) -> Vec<Region> {
    let outermost = outermost_symbols(old);
    let blank = |from: usize, to: usize| {
        current
            .get(from.min(to)..to.max(from))
            .is_some_and(|gap| gap.trim().is_empty())
    };
    let mut spans: Vec<(usize, usize, Option<String>)> = Vec::new();
    for change in changes {
        let (mut start, mut end) = change.old;
        let mut first: Option<&SymbolSpan> = None;
        // Outermost symbols are disjoint (or equal) and sorted: those that can touch the
        // change start at the first one ending at or after its start.
        let from = outermost.partition_point(|s| s.end < change.old.0);
        let mut touched_any = false;
        for symbol in outermost[from..]
            .iter()
            .take_while(|s| s.start <= change.old.1)
        {
            let touches = meets(symbol.start, symbol.end, change.old)
                || (symbol.start <= change.old.0 && change.old.1 <= symbol.end);
            if touches {
                touched_any = true;
                if first.is_none_or(|f| symbol.start < f.start) {
                    first = Some(symbol);
                }
                start = start.min(symbol.start);
                end = end.max(symbol.end);
            }
        }
        if !touched_any {
            let before = outermost.partition_point(|s| s.end <= change.old.0);
            let neighbours = [
                before.checked_sub(1).and_then(|i| outermost.get(i)),
                outermost.get(outermost.partition_point(|s| s.start < change.old.1)),
            ];
            for symbol in neighbours.into_iter().flatten() {
                let adjacent = if symbol.end <= change.old.0 {
                    blank(symbol.end, change.old.0)
                } else {
                    blank(change.old.1, symbol.start)
                };
                if adjacent {
                    if first.is_none_or(|f| symbol.start < f.start) {
                        first = Some(symbol);
                    }
                    start = start.min(symbol.start);
                    end = end.max(symbol.end);
                }
            }
        }
        spans.push((start, end, first.map(|s| s.qualified.clone())));
    }
    spans.sort_by_key(|s| s.0);
    let mut merged: Vec<(usize, usize, Option<String>)> = Vec::new();
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.0 <= last.1 => last.1 = last.1.max(span.1),
            _ => merged.push(span),
        }
    }
    merged
        .into_iter()
        .map(|(start, end, outermost)| {
            let new_start = line_start(new_text, map_start(changes, start));
            let new_end = line_end(new_text, map_end(changes, end));
            Region {
                old: (start, end),
                new: (new_start, new_end.max(new_start)),
                outermost,
            }
        })
        .collect()
}

fn line_start(text: &str, at: usize) -> usize {
    let at = floor_boundary(text, at.min(text.len()));
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

fn line_end(text: &str, at: usize) -> usize {
    let at = floor_boundary(text, at.min(text.len()));
    if at > 0 && text.as_bytes().get(at - 1) == Some(&b'\n') {
        return at;
    }
    text[at..].find('\n').map_or(text.len(), |i| at + i + 1)
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The qualifier that names inside a region lose when it is parsed alone (`Type.` for a Rust
/// method of an `impl`, which is no symbol itself), from the outermost old symbol and the
/// symbol the region parsed it to: the parsed symbol that names it (the same name, or its
/// last segments), else the first one parsed. A symbol added before it in the region (a
/// function written just above a Go method) does not stand for it.
fn qualifier_prefix(outermost: Option<&str>, parsed: &[SymbolSpan]) -> String {
    let Some(outer) = outermost else {
        return String::new();
    };
    let names_outer = |symbol: &&SymbolSpan| {
        outer == symbol.qualified
            || outer
                .strip_suffix(symbol.qualified.as_str())
                .is_some_and(|head| head.ends_with('.'))
    };
    let Some(first) = parsed.iter().find(names_outer).or(parsed.first()) else {
        return String::new();
    };
    let outer_depth = outer.matches('.').count();
    let parsed_depth = first.qualified.matches('.').count();
    if outer_depth > parsed_depth {
        let keep = outer_depth - parsed_depth;
        let segments: Vec<&str> = outer.split('.').take(keep).collect();
        format!("{}.", segments.join("."))
    } else {
        String::new()
    }
}

/// A touched symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Touched {
    /// Its qualified name.
    pub name: String,
    /// Its range in the current text, when it exists there.
    pub old_range: Option<(usize, usize)>,
    /// Whether no other touched symbol lies inside it (13.5: a symbol, not its container).
    pub innermost: bool,
}

/// Whether the half-open range `[start, end)` meets any of `spans` (sorted, disjoint, as the
/// changes' spans are): one binary search.
fn meets_any(start: usize, end: usize, spans: &[(usize, usize)]) -> bool {
    // The first span ending after `start` is the only candidate with the smallest start.
    let i = spans.partition_point(|span| span.1 <= start);
    spans.get(i).is_some_and(|&span| meets(start, end, span))
}

/// The symbols touched by the changes: old symbols meeting a replaced span and new ones
/// meeting a replacing span, each name once, innermost first: deeper nesting first, then in
/// source order (so a symbol always comes before the symbols that contain it). Linear in the
/// symbols (a binary search over the changes each) plus the hits' sort.
fn touched_symbols(old: &[SymbolSpan], new: &[SymbolSpan], changes: &[Change]) -> Vec<Touched> {
    let old_spans: Vec<(usize, usize)> = changes.iter().map(|c| c.old).collect();
    let new_spans: Vec<(usize, usize)> = changes.iter().map(|c| c.new).collect();
    let mut hits: Vec<(usize, &SymbolSpan, bool)> = Vec::new();
    for (all, spans, is_old) in [(old, &old_spans, true), (new, &new_spans, false)] {
        let mut side: Vec<&SymbolSpan> = all
            .iter()
            .filter(|s| meets_any(s.start, s.end, spans))
            .collect();
        // Depth among the hits is depth among all: every container of a hit meets it too.
        side.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
        let mut open: Vec<&SymbolSpan> = Vec::new();
        for symbol in side {
            while open.last().is_some_and(|o| {
                !(o.start <= symbol.start
                    && symbol.end <= o.end
                    && (o.start, o.end) != (symbol.start, symbol.end))
            }) {
                open.pop();
            }
            hits.push((open.len(), symbol, is_old));
            open.push(symbol);
        }
    }
    hits.sort_by_key(|(depth, s, _)| (std::cmp::Reverse(*depth), s.start, s.end - s.start));
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut touched: Vec<Touched> = Vec::new();
    for (_, symbol, is_old) in hits {
        let index = *at.entry(symbol.qualified.as_str()).or_insert_with(|| {
            touched.push(Touched {
                name: symbol.qualified.clone(),
                old_range: None,
                innermost: true,
            });
            touched.len() - 1
        });
        if is_old {
            if let Some(t) = touched.get_mut(index) {
                t.old_range.get_or_insert((symbol.start, symbol.end));
            }
        }
    }
    // A touched name with another touched name inside it (`C` for `C.m`) is a container.
    let mut containers: HashSet<&str> = HashSet::new();
    for t in &touched {
        let mut name = t.name.as_str();
        while let Some((outer, _)) = name.rsplit_once('.') {
            containers.insert(outer);
            name = outer;
        }
    }
    let containers: HashSet<String> = containers.into_iter().map(str::to_owned).collect();
    for t in &mut touched {
        t.innermost = !containers.contains(&t.name);
    }
    touched
}

/// docs/protocol.md 2.2: a qualified name matches exactly; a bare one means the one top-level
/// symbol of that name, else the one symbol of that name anywhere.
fn resolve<'a>(
    symbols: impl Iterator<Item = &'a SymbolSpan> + Clone,
    name: &str,
) -> Option<&'a SymbolSpan> {
    let only = |found: Vec<&'a SymbolSpan>| (found.len() == 1).then(|| found[0]);
    if name.contains('.') {
        return only(symbols.filter(|s| s.qualified == name).collect());
    }
    let top: Vec<&SymbolSpan> = symbols.clone().filter(|s| s.qualified == name).collect();
    if !top.is_empty() {
        return only(top);
    }
    only(symbols.filter(|s| s.simple_name() == name).collect())
}

/// The signature of `name` in the new text: from the re-parsed regions when it lies in one,
/// else (unchanged) from the current text.
fn new_signature(old: &[SymbolSpan], new: &NewSymbols, name: &str) -> Option<String> {
    match &new.regions {
        None => resolve(new.symbols.iter(), name).and_then(|s| s.signature.clone()),
        Some(regions) => {
            let outside = |s: &&SymbolSpan| {
                !regions
                    .iter()
                    .any(|&(start, end)| s.start < end.max(start + 1) && start < s.end)
            };
            let kept = old.iter().filter(outside);
            let all = kept.chain(new.symbols.iter());
            let all: Vec<&SymbolSpan> = all.collect();
            resolve(all.iter().copied(), name).and_then(|s| s.signature.clone())
        }
    }
}

#[cfg(test)]
mod tests;
