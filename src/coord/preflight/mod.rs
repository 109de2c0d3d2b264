//! `edit.preflight` (PROTOCOL-NOTES 10): an edit → the spans it changes → the symbols it
//! touches → other live sessions' intents and locks it meets, and the contracts the new text
//! breaks; with `record`, an observed intent.
//!
//! The current text's symbols come from the index (no parse when it knows the file). The new
//! text is not parsed whole: each changed region, widened to the outermost symbols it meets
//! (or to whole lines), is parsed on its own, and symbols elsewhere keep their names, ranges
//! (shifted) and signatures. A region that does not parse cleanly on its own, or an edit that
//! changes most of the file, falls back to one parse of the whole new text.

pub mod spans;

use std::collections::HashSet;

use super::contracts::{Violation, SYMBOL_NOT_IN_STAGED_CONTENT};
use super::intents::Conflict;
use super::paths::{join_symbol_path, normalize};
use super::{check_len, Coord, CoordError, IntentStatus, Result, SymbolSpan, MAX_PATH_BYTES};
use crate::protocol::params::MAX_BODY_BYTES;
use crate::store::IntentFilter;
use spans::{apply_edits, diff_lines, map_end, map_start, meets, Applied, Change, Edit, EditError};

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

/// The answer of `edit.preflight`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preflight {
    /// Whether the edits apply to the current text.
    pub applies: bool,
    /// Why they do not.
    pub reason: Option<String>,
    /// Touched symbols, `file:Qualified`, innermost first, each once.
    pub symbols: Vec<String>,
    /// INTENT_OVERLAP items, then LOCK_INTERSECTION items.
    pub conflicts: Vec<Conflict>,
    /// Contracts the new text breaks.
    pub violations: Vec<Violation>,
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

impl Coord {
    /// Checks an edit of `file` by `session_id` before it is written (PROTOCOL-NOTES 10).
    pub fn preflight(
        &self,
        session_id: &str,
        file: &str,
        new: NewText<'_>,
        record: bool,
    ) -> Result<Preflight> {
        self.acting_session(session_id)?;
        check_len("file", file, MAX_PATH_BYTES)?;
        let file = normalize(file).map_err(|e| CoordError::invalid("file", e.to_string()))?;
        let current = self.index.file_text(&file).unwrap_or_default();
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
            NewText::Content(content) => Applied {
                text: content.to_owned(),
                changes: diff_lines(&current, content),
            },
        };
        let supported = self.index.is_supported(&file);
        let old = if supported {
            self.index.file_symbols(&file).symbols
        } else {
            Vec::new()
        };
        let new_symbols = if supported && !applied.changes.is_empty() {
            self.new_symbols(&file, &old, &applied)
        } else {
            NewSymbols {
                symbols: Vec::new(),
                regions: Some(Vec::new()),
            }
        };
        let touched = touched_symbols(&old, &new_symbols.symbols, &applied.changes);
        let symbol_paths: Vec<String> = touched
            .iter()
            .map(|name| join_symbol_path(&file, name))
            .collect();

        // Candidates from one snapshot; liveness is checked after it (the queue and sightings
        // locks are never taken while the database is held).
        let (intent_hits, lock_hits, contracts) = self.store.read(|r| {
            let now = self.clock.now_ms();
            // INTENT_OVERLAP: other sessions' intents meeting a replaced span (or file-level
            // here), oldest first, each once.
            let mut hits = r.live_ranges_in_file(&file, session_id)?;
            hits.sort_by_key(|h| (h.declared_at_ms, h.intent_seq));
            let mut seen = HashSet::new();
            let mut intent_hits = Vec::new();
            for hit in hits {
                let overlaps = match hit.range {
                    None => true,
                    Some((start, end)) => applied.changes.iter().any(|c| {
                        meets(
                            usize::try_from(start).unwrap_or(0),
                            usize::try_from(end).unwrap_or(0),
                            c.old,
                        )
                    }),
                };
                if overlaps && seen.insert(hit.intent_seq) {
                    intent_hits.push(hit);
                }
            }
            // LOCK_INTERSECTION: each touched symbol (by its qualified and its bare name)
            // locked by another session.
            let mut asked = HashSet::new();
            let mut lock_hits = Vec::new();
            for name in &touched {
                let simple = name.rsplit('.').next().unwrap_or(name);
                for candidate in [name.as_str(), simple] {
                    let path = join_symbol_path(&file, candidate);
                    if !asked.insert(path.clone()) {
                        continue;
                    }
                    if let Some(lock) = r.lock(&path)? {
                        if lock.is_live(now) && lock.session_id != session_id {
                            lock_hits.push(lock);
                        }
                    }
                }
            }
            let contracts = r.accepted_contracts_in_file(&file)?;
            Ok::<_, CoordError>((intent_hits, lock_hits, contracts))
        })?;
        let mut conflicts = Vec::new();
        for hit in intent_hits {
            if self.session_live(&hit.session_id)? {
                conflicts.push(Conflict::IntentOverlap {
                    intent_id: hit.intent_id,
                    session_id: hit.session_id,
                    description: hit.description,
                });
            }
        }
        for lock in lock_hits {
            if self.session_live(&lock.session_id)? {
                conflicts.push(Conflict::LockIntersection {
                    symbol_path: lock.symbol_path,
                    held_by: lock.session_id,
                    expires_at_ms: lock.expires_at_ms,
                });
            }
        }
        let violations = contracts
            .into_iter()
            .filter_map(|contract| {
                let actual = new_signature(&old, &new_symbols, &contract.name);
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
            .collect::<Vec<_>>();

        let mut preflight = Preflight {
            applies: true,
            reason: None,
            symbols: symbol_paths,
            conflicts,
            violations,
            recorded_intent: None,
        };
        if record && preflight.conflicts.is_empty() && preflight.violations.is_empty() {
            preflight.recorded_intent = self.record_observed(session_id, &file, &touched)?;
        }
        Ok(preflight)
    }

    /// Parses the changed regions of the new text (or all of it) for their symbols.
    fn new_symbols(&self, file: &str, old: &[SymbolSpan], applied: &Applied) -> NewSymbols {
        let whole = |coord: &Coord| NewSymbols {
            symbols: coord.index.text_symbols(file, &applied.text).symbols,
            regions: None,
        };
        if old.is_empty() {
            return whole(self);
        }
        let regions = changed_regions(old, &applied.changes, &applied.text);
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

    /// Declares an active "observed edit" intent for the session, unless one of its open
    /// intents on this file is file-level or names every touched symbol.
    fn record_observed(
        &self,
        session_id: &str,
        file: &str,
        touched: &[String],
    ) -> Result<Option<String>> {
        let covered = self.store.read(|r| {
            let own = r.intents(&IntentFilter {
                session_id: Some(session_id),
                file: Some(file),
                status: None,
            })?;
            let ranges = r.own_live_ranges_in_file(file, session_id)?;
            let file_level = ranges.iter().any(|hit| hit.range.is_none());
            let covers_all = touched.iter().all(|name| {
                let simple = name.rsplit('.').next().unwrap_or(name);
                own.iter().any(|intent| {
                    let names: Vec<String> =
                        serde_json::from_str(&intent.symbols).unwrap_or_default();
                    names.iter().any(|n| n == name || n == simple)
                })
            });
            Ok::<_, CoordError>(!own.is_empty() && (file_level || covers_all))
        })?;
        if covered {
            return Ok(None);
        }
        // Symbols that exist on disk resolve to their ranges; new ones make the intent
        // file-level (PROTOCOL-NOTES 3, intent.declare).
        let symbols: Vec<String> = touched.to_vec();
        let declared = self.declare_intent(
            session_id,
            OBSERVED_EDIT,
            &[file.to_owned()],
            Some(&symbols),
        )?;
        self.update_intent(&declared.intent.id, session_id, IntentStatus::Active)?;
        Ok(Some(declared.intent.id))
    }
}

/// One changed region: its span in the current and in the new text, and the qualified name
/// of the outermost old symbol it starts with (for the names of what is parsed inside).
struct Region {
    old: (usize, usize),
    new: (usize, usize),
    outermost: Option<String>,
}

/// The regions to re-parse: each change widened to the outermost old symbols it meets, or to
/// whole lines when it meets none; overlapping regions merged.
fn changed_regions(old: &[SymbolSpan], changes: &[Change], new_text: &str) -> Vec<Region> {
    let outermost: Vec<&SymbolSpan> = old
        .iter()
        .filter(|s| {
            !old.iter().any(|o| {
                o.start <= s.start && s.end <= o.end && (o.start, o.end) != (s.start, s.end)
            })
        })
        .collect();
    let mut spans: Vec<(usize, usize, Option<String>)> = Vec::new();
    for change in changes {
        let (mut start, mut end) = change.old;
        let mut first: Option<&SymbolSpan> = None;
        for symbol in &outermost {
            let touches = meets(symbol.start, symbol.end, change.old)
                || (symbol.start <= change.old.0 && change.old.1 <= symbol.end);
            if touches {
                if first.is_none_or(|f| symbol.start < f.start) {
                    first = Some(symbol);
                }
                start = start.min(symbol.start);
                end = end.max(symbol.end);
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
/// first symbol the region parsed to.
fn qualifier_prefix(outermost: Option<&str>, parsed: &[SymbolSpan]) -> String {
    let (Some(outer), Some(first)) = (outermost, parsed.first()) else {
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

/// The qualified names touched by the changes: old symbols meeting a replaced span and new
/// ones meeting a replacing span, each once, innermost first: deeper nesting first, then in
/// source order (so a symbol always comes before the symbols that contain it).
fn touched_symbols(old: &[SymbolSpan], new: &[SymbolSpan], changes: &[Change]) -> Vec<String> {
    let depth = |all: &[SymbolSpan], s: &SymbolSpan| {
        all.iter()
            .filter(|o| {
                o.start <= s.start && s.end <= o.end && (o.start, o.end) != (s.start, s.end)
            })
            .count()
    };
    let mut hits: Vec<(std::cmp::Reverse<usize>, usize, usize, &str)> = Vec::new();
    for (all, side) in [(old, 0usize), (new, 1)] {
        for symbol in all {
            let meets_any = changes.iter().any(|c| {
                let span = if side == 0 { c.old } else { c.new };
                meets(symbol.start, symbol.end, span)
            });
            if meets_any {
                let size = symbol.end - symbol.start;
                hits.push((
                    std::cmp::Reverse(depth(all, symbol)),
                    symbol.start,
                    size,
                    &symbol.qualified,
                ));
            }
        }
    }
    hits.sort();
    let mut seen = HashSet::new();
    hits.into_iter()
        .filter(|(_, _, _, name)| seen.insert(*name))
        .map(|(_, _, _, name)| name.to_owned())
        .collect()
}

/// PROTOCOL-NOTES 2.2: a qualified name matches exactly; a bare one means the one top-level
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
