//! Intents (docs/protocol.md 3, `intent.*`): declaring one, moving it forward, querying.
//!
//! A declared intent covers, per listed file, the byte ranges of the declared symbols found
//! there, or the whole file. Declaring one reports the conflicts the rules of
//! [`super::conflicts`] find, in this order: INTENT_OVERLAP (other live sessions' intents
//! meeting it, oldest first), LOCK_INTERSECTION (every listed file × declared symbol locked
//! by another session) and DEP_CHAIN (callees of the declared symbols locked by another
//! session). Every lookup goes through an index (ranges by file, locks by symbol path), so
//! the cost depends on what shares the intent's files, not on the total.

use std::collections::{HashMap, HashSet};

use super::conflicts::{collides, held_by_another, overlap_items, Others, Work};
use super::events::{self, EventKind};
use super::paths::{join_symbol_path, normalize};
use super::regions::Lines;
use super::workmap::{Followed, Upkeep};
use super::{
    check_len, Coord, CoordError, Intent, IntentRange, IntentStatus, LineRegion, Result, Vantage,
    MAX_DESCRIPTION_BYTES, MAX_LIST_ITEMS, MAX_PATH_BYTES,
};
use crate::store::{IntentFilter, IntentKind};
use serde_json::json;

pub use super::conflicts::Conflict;

/// The outcome of [`Coord::declare_intent`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredIntent {
    /// The stored intent.
    pub intent: Intent,
    /// The conflicts found (empty: none).
    pub conflicts: Vec<Conflict>,
}

/// A listed file's byte ranges, `None` when the whole file is claimed.
type FileRanges = Option<Vec<(i64, i64)>>;

/// A declaration's parameters, checked and normalised.
pub(super) struct Declaration {
    /// Its description.
    pub description: String,
    /// The listed files, normalised, each once, in order.
    pub files: Vec<String>,
    /// The declared symbols as given (stored as they are).
    pub symbols: Vec<String>,
    /// The declared symbols, each once, in order.
    pub distinct_symbols: Vec<String>,
    /// Declared by its session, or observed work (and how).
    pub kind: IntentKind,
}

/// What the index says about the declared symbols, computed before the transaction.
pub(super) struct Resolution {
    /// Per listed file: its rows (ranges, or one file-level row).
    pub(super) ranges: Vec<IntentRange>,
    /// Per listed file: its ranges, `None` when file-level.
    per_file: Vec<(String, FileRanges)>,
    /// `(file:symbol, callee)` pairs for DEP_CHAIN, deduplicated, in order.
    callees: Vec<(String, String)>,
}

impl Resolution {
    /// `startByte`/`endByte` of the record: the smallest start and largest end among the
    /// ranges of the first listed file that is not file-level.
    fn byte_span(&self) -> (Option<i64>, Option<i64>) {
        self.per_file
            .iter()
            .find_map(|(_, ranges)| ranges.as_ref())
            .map(|ranges| {
                let start = ranges.iter().map(|r| r.0).min();
                let end = ranges.iter().map(|r| r.1).max();
                (start, end)
            })
            .unwrap_or((None, None))
    }
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Most files a declare may list and still run on the calling thread (one `stat` or so each).
const QUICK_DECLARE_FILES: usize = 64;

impl Declaration {
    /// Checks the parameters of `intent.declare` (sizes, paths) and normalises the files.
    fn check(description: &str, files: &[String], symbols: &[String]) -> Result<Declaration> {
        if description.is_empty() {
            return Err(CoordError::invalid("description", "must not be empty"));
        }
        check_len("description", description, MAX_DESCRIPTION_BYTES)?;
        if files.is_empty() {
            return Err(CoordError::invalid("files", "must list at least one file"));
        }
        for (field, count) in [("files", files.len()), ("symbols", symbols.len())] {
            if count > MAX_LIST_ITEMS {
                return Err(CoordError::invalid(
                    field,
                    format!("must list at most {MAX_LIST_ITEMS} {field}"),
                ));
            }
        }
        let mut normalised: Vec<String> = Vec::with_capacity(files.len());
        for file in files {
            check_len("files", file, MAX_PATH_BYTES)?;
            let file = normalize(file)
                .map_err(|e| CoordError::invalid("files", format!("{file:?}: {e}")))?;
            if !normalised.contains(&file) {
                normalised.push(file);
            }
        }
        let mut distinct_symbols: Vec<String> = Vec::with_capacity(symbols.len());
        for symbol in symbols {
            check_len("symbols", symbol, MAX_PATH_BYTES)?;
            if !distinct_symbols.contains(symbol) {
                distinct_symbols.push(symbol.clone());
            }
        }
        Ok(Declaration {
            description: description.to_owned(),
            files: normalised,
            symbols: symbols.to_vec(),
            distinct_symbols,
            kind: IntentKind::Declared,
        })
    }
}

impl Coord {
    /// Whether [`Coord::declare_intent`] over `files` would finish without parsing source
    /// (the index knows every listed file and its imports as they are on disk), so it can run
    /// on the calling thread. Invalid input is quick too: it fails before any lookup.
    pub fn declare_is_quick(&self, files: &[String]) -> bool {
        files.len() <= QUICK_DECLARE_FILES
            && files.iter().all(|file| match normalize(file) {
                Ok(file) => self.index.file_is_fresh(&file),
                Err(_) => true,
            })
    }

    /// Declares an intent of `session_id` to change `files` (and, optionally, `symbols` in
    /// them), stores it as `declared` and reports the conflicts with other sessions' work.
    pub fn declare_intent(
        &self,
        at: &Vantage,
        description: &str,
        files: &[String],
        symbols: Option<&[String]>,
    ) -> Result<DeclaredIntent> {
        let session_id = self.acting(at)?;
        self.check_storable("description", description)?;
        let declaration = Declaration::check(description, files, symbols.unwrap_or_default())?;
        let resolution = self.resolve(&declaration.files, &declaration.distinct_symbols);
        let conflicts = self.declare_conflicts(at, &declaration, &resolution)?;
        let intent = self.store_intent(
            session_id,
            &declaration,
            &resolution,
            None,
            &conflicts,
            IntentStatus::Declared,
        )?;
        Ok(DeclaredIntent { intent, conflicts })
    }

    /// The conflicts of a declaration, in the order of docs/protocol.md 3, by the rules of
    /// [`super::conflicts`].
    fn declare_conflicts(
        &self,
        at: &Vantage,
        declaration: &Declaration,
        resolution: &Resolution,
    ) -> Result<Vec<Conflict>> {
        let others = Others::of(self, at)?;
        let session_id = others.me();
        let mut hits = Vec::new();
        for (file, mine) in &resolution.per_file {
            let mut rows = self
                .store
                .read(|r| r.live_ranges_in_file(file, session_id))?;
            // Observed regions are lines of the current text: as they are now (kept so only
            // from a read at rest: a file being written is not a text to keep them in).
            let text = if rows.iter().any(|row| row.regions.is_some()) {
                let disk = self.index.file_text(file);
                let upkeep = Upkeep::of_read(disk.as_ref());
                let text = disk.map(|disk| disk.text).unwrap_or_default();
                rows = self.regions_in(at, file, &text, rows, upkeep)?;
                Some(text)
            } else {
                None
            };
            let lines = text.as_deref().map(Lines::of);
            let work = Work::Declared {
                ranges: mine.as_deref(),
                lines: lines.as_ref(),
            };
            hits.extend(rows.into_iter().filter(|row| collides(work, row, &[])));
        }
        let mut conflicts = overlap_items(others.filter(hits, |h| h.session_id.as_str())?);

        let (locks, deps) = self.store.read(|r| {
            let now = self.clock.now_ms();
            let mut locks = Vec::new();
            for file in &declaration.files {
                for symbol in &declaration.distinct_symbols {
                    let path = join_symbol_path(file, symbol);
                    locks.extend(
                        r.lock(&path)?
                            .filter(|l| held_by_another(l, session_id, now)),
                    );
                }
            }
            let mut deps = Vec::new();
            for (intent_symbol, callee) in &resolution.callees {
                if let Some(lock) = r.lock(callee)? {
                    if held_by_another(&lock, session_id, now) {
                        deps.push((intent_symbol.clone(), lock));
                    }
                }
            }
            Ok::<_, CoordError>((locks, deps))
        })?;
        conflicts.extend(others.lock_items(locks)?);
        for (intent_symbol, lock) in others.filter(deps, |(_, l)| l.session_id.as_str())? {
            conflicts.push(Conflict::DepChain {
                intent_symbol,
                locked_callee: lock.symbol_path,
                held_by: lock.session_id,
            });
        }
        Ok(conflicts)
    }

    /// Stores a declaration as an intent in `status` (with `regions`, an observed one) and
    /// appends its event.
    pub(super) fn store_intent(
        &self,
        session_id: &str,
        declaration: &Declaration,
        resolution: &Resolution,
        regions: Option<Vec<LineRegion>>,
        conflicts: &[Conflict],
        status: IntentStatus,
    ) -> Result<Intent> {
        let id = self.ids.next_id();
        let (start_byte, end_byte) = match regions {
            Some(_) => (None, None),
            None => resolution.byte_span(),
        };
        self.store.write(|w| {
            let now = self.clock.now_ms();
            let intent = Intent {
                id: id.clone(),
                session_id: session_id.to_owned(),
                description: declaration.description.clone(),
                files: format!(",{},", declaration.files.join(",")),
                symbols: serde_json::to_string(&declaration.symbols)
                    .unwrap_or_else(|_| "[]".to_owned()),
                start_byte,
                end_byte,
                status,
                declared_at_ms: now,
                updated_at_ms: now,
                regions,
                kind: declaration.kind,
            };
            w.insert_intent(&intent, &resolution.ranges)?;
            events::append(
                w,
                now,
                EventKind::IntentDeclared,
                Some(session_id),
                &intent.id,
                json!({
                    "description": intent.description,
                    "files": declaration.files,
                    "symbols": declaration.distinct_symbols,
                    "status": intent.status.as_str(),
                    "conflicts": conflicts.len(),
                }),
            )?;
            Ok(intent)
        })
    }

    /// Resolves the declared symbols in the listed files (docs/protocol.md 3, `intent.declare`).
    pub(super) fn resolve(&self, files: &[String], symbols: &[String]) -> Resolution {
        let mut resolved_somewhere = vec![false; symbols.len()];
        let mut found: Vec<Vec<(i64, i64)>> = Vec::with_capacity(files.len());
        let mut callees = Vec::new();
        let mut seen_pairs = HashSet::new();
        for file in files {
            let mut ranges = Vec::new();
            for (i, symbol) in symbols.iter().enumerate() {
                let symbol_ranges = self.index.symbol_ranges(file, symbol);
                if symbol_ranges.is_empty() {
                    continue;
                }
                resolved_somewhere[i] = true;
                ranges.extend(
                    symbol_ranges
                        .into_iter()
                        .map(|(start, end)| (to_i64(start), to_i64(end))),
                );
                let intent_symbol = join_symbol_path(file, symbol);
                for callee in self.index.callees(file, symbol) {
                    if seen_pairs.insert((intent_symbol.clone(), callee.clone())) {
                        callees.push((intent_symbol.clone(), callee));
                    }
                }
            }
            ranges.sort_unstable();
            ranges.dedup();
            found.push(ranges);
        }
        // A symbol found nowhere is new code of unknown place: every file is file-level.
        let all_file_level = resolved_somewhere.iter().any(|r| !r);
        let mut rows = Vec::new();
        let mut per_file = Vec::with_capacity(files.len());
        for (file, ranges) in files.iter().zip(found) {
            if all_file_level || ranges.is_empty() {
                rows.push(IntentRange {
                    file: file.clone(),
                    range: None,
                });
                per_file.push((file.clone(), None));
            } else {
                rows.extend(ranges.iter().map(|&range| IntentRange {
                    file: file.clone(),
                    range: Some(range),
                }));
                per_file.push((file.clone(), Some(ranges)));
            }
        }
        Resolution {
            ranges: rows,
            per_file,
            callees,
        }
    }

    /// The resolution of an observed intent: its one file, covered by its regions (one
    /// file-level row, so lookups by file find it), no callees.
    pub(super) fn observed_resolution(file: &str) -> Resolution {
        Resolution {
            ranges: vec![IntentRange {
                file: file.to_owned(),
                range: None,
            }],
            per_file: vec![(file.to_owned(), None)],
            callees: Vec::new(),
        }
    }

    /// Moves `session_id`'s intent forward to `status`. Errors, checked in this order:
    /// [`CoordError::IntentNotFound`], [`CoordError::IntentNotOwned`],
    /// [`CoordError::InvalidTransition`]. Returns the updated intent.
    pub fn update_intent(
        &self,
        intent_id: &str,
        session_id: &str,
        status: IntentStatus,
    ) -> Result<Intent> {
        self.acting_session(session_id)?;
        self.store.write(|w| {
            let now = self.clock.now_ms();
            let mut intent = w.intent(intent_id)?.ok_or(CoordError::IntentNotFound)?;
            if intent.session_id != session_id {
                return Err(CoordError::IntentNotOwned);
            }
            if !intent.status.can_become(status) {
                return Err(CoordError::InvalidTransition {
                    current: intent.status,
                    requested: status,
                });
            }
            w.set_intent_status(intent_id, status, now)?;
            events::append(
                w,
                now,
                EventKind::IntentUpdated,
                Some(session_id),
                intent_id,
                json!({"from": intent.status.as_str(), "to": status.as_str()}),
            )?;
            intent.status = status;
            intent.updated_at_ms = now;
            Ok(intent)
        })
    }

    /// Intents filtered by session, file (one element of the file list, after normalisation)
    /// and status (one of the four; without it, declared and active). A given filter applies
    /// literally: an empty session or file matches nothing; an unknown status is
    /// [`CoordError::InvalidInput`]. Ordered by declaration.
    pub fn query_intents(
        &self,
        session_id: Option<&str>,
        file: Option<&str>,
        status: Option<&str>,
    ) -> Result<Vec<Intent>> {
        let status = status
            .map(|s| {
                s.parse::<IntentStatus>().map_err(|_| {
                    CoordError::invalid(
                        "status",
                        "must be one of declared, active, resolved, abandoned",
                    )
                })
            })
            .transpose()?;
        if let Some(session) = session_id {
            check_len("sessionId", session, super::MAX_SESSION_ID_BYTES)?;
            self.check_storable("sessionId", session)?;
        }
        let file = match file {
            Some("") => return Ok(Vec::new()),
            Some(file) => {
                check_len("file", file, MAX_PATH_BYTES)?;
                Some(normalize(file).map_err(|e| CoordError::invalid("file", e.to_string()))?)
            }
            None => None,
        };
        let filter = IntentFilter {
            session_id,
            file: file.as_deref(),
            status,
        };
        let intents = self.store.read(|r| r.intents(&filter))?;
        // Regions are lines of the current text: bring them up to date before showing them
        // (a file read while being written: carried for this answer only).
        let mut moved = false;
        let mut followed = HashSet::new();
        let mut previewed = HashMap::new();
        let here = self.here(&self.vantage(None));
        for intent in intents.iter().filter(|i| i.regions.is_some()) {
            for file in intent.files.split(',').filter(|f| !f.is_empty()) {
                if !followed.insert(file.to_owned()) {
                    continue;
                }
                let Some(disk) = self.index.file_text(file) else {
                    continue;
                };
                match self.follow_read(&here, file, &disk)? {
                    Followed::Stored(carried) => moved |= carried,
                    Followed::Shown(regions) => previewed.extend(regions),
                }
            }
        }
        let mut intents = if moved {
            self.store.read(|r| r.intents(&filter))?
        } else {
            intents
        };
        for intent in &mut intents {
            if let Some(regions) = previewed.remove(&intent.id) {
                intent.regions = Some(regions);
            }
        }
        Ok(intents)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::coord::testing::Harness;

    const T0: i64 = 1_768_473_000_000;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn declare(
        h: &Harness,
        session: &str,
        files: &[&str],
        symbols: Option<&[&str]>,
    ) -> DeclaredIntent {
        let symbols = symbols.map(strings);
        h.coord
            .declare_intent(
                &h.coord.vantage(Some(session)),
                &format!("work of {session}"),
                &strings(files),
                symbols.as_deref(),
            )
            .unwrap()
    }

    fn overlap_ids(d: &DeclaredIntent) -> Vec<String> {
        d.conflicts
            .iter()
            .filter_map(|c| match c {
                Conflict::IntentOverlap { intent_id, .. } => Some(intent_id.clone()),
                _ => None,
            })
            .collect()
    }

    /// `src/a.ts` with `f` at 0..10, `g` at 10..20 (touching `f`), `h` at 15..30.
    fn harness_with_symbols() -> Harness {
        let h = Harness::new();
        h.index
            .add_symbol("src/a.ts", "f", 0, 10, Some("(a: number): void"));
        h.index
            .add_symbol("src/a.ts", "g", 10, 20, Some("(): void"));
        h.index
            .add_symbol("src/a.ts", "h", 15, 30, Some("(): void"));
        h.index
            .add_symbol("src/b.ts", "f", 100, 200, Some("(): void"));
        h
    }

    #[test]
    fn record_shapes() {
        let h = harness_with_symbols();
        let d = declare(
            &h,
            "s1",
            &["./src/a.ts", "src/b.ts", "src//a.ts"],
            Some(&["f", "g"]),
        );
        let i = &d.intent;
        assert_eq!(i.id, "id-1");
        assert_eq!(i.files, ",src/a.ts,src/b.ts,");
        assert_eq!(i.symbols, r#"["f","g"]"#);
        assert_eq!((i.start_byte, i.end_byte), (Some(0), Some(20)));
        assert_eq!(i.status, IntentStatus::Declared);
        assert_eq!((i.declared_at_ms, i.updated_at_ms), (T0, T0));
        assert!(d.conflicts.is_empty());
        let stored = h.coord.store().read(|r| r.intent("id-1")).unwrap().unwrap();
        assert_eq!(&stored, i);
    }

    #[test]
    fn no_symbols_is_file_level_with_null_bytes() {
        let h = harness_with_symbols();
        let d = declare(&h, "s1", &["src/a.ts"], None);
        assert_eq!(d.intent.symbols, "[]");
        assert_eq!((d.intent.start_byte, d.intent.end_byte), (None, None));
    }

    #[test]
    fn start_end_come_from_first_file_that_is_not_file_level() {
        let h = harness_with_symbols();
        // `g` resolves in a.ts only; b.ts (listed first) is file-level there.
        let d = declare(&h, "s1", &["src/b.ts", "src/a.ts"], Some(&["g"]));
        assert_eq!(
            (d.intent.start_byte, d.intent.end_byte),
            (Some(10), Some(20))
        );
        // `f` resolves in both: the first listed file's range counts.
        let d = declare(&h, "s1", &["src/b.ts", "src/a.ts"], Some(&["f"]));
        assert_eq!(
            (d.intent.start_byte, d.intent.end_byte),
            (Some(100), Some(200))
        );
    }

    #[test]
    fn unresolved_symbol_makes_every_file_file_level() {
        let h = harness_with_symbols();
        let d = declare(
            &h,
            "s1",
            &["src/a.ts", "src/b.ts"],
            Some(&["f", "brandNew"]),
        );
        assert_eq!((d.intent.start_byte, d.intent.end_byte), (None, None));
        // So it overlaps anything in either file.
        let other = declare(&h, "s2", &["src/a.ts"], Some(&["h"]));
        assert_eq!(overlap_ids(&other), vec![d.intent.id.clone()]);
    }

    #[test]
    fn overlap_needs_strict_intersection() {
        let h = harness_with_symbols();
        let f = declare(&h, "s1", &["src/a.ts"], Some(&["f"]));
        // g touches f at byte 10: no overlap.
        let g = declare(&h, "s2", &["src/a.ts"], Some(&["g"]));
        assert!(g.conflicts.is_empty(), "{:?}", g.conflicts);
        // h (15..30) intersects g (10..20) but not f.
        let hh = declare(&h, "s3", &["src/a.ts"], Some(&["h"]));
        assert_eq!(overlap_ids(&hh), vec![g.intent.id.clone()]);
        // Same symbol as f: overlaps f only.
        let f2 = declare(&h, "s4", &["src/a.ts"], Some(&["f"]));
        assert_eq!(overlap_ids(&f2), vec![f.intent.id.clone()]);
    }

    #[test]
    fn file_level_on_either_side_overlaps() {
        let h = harness_with_symbols();
        let precise = declare(&h, "s1", &["src/a.ts"], Some(&["f"]));
        let whole = declare(&h, "s2", &["src/a.ts"], None);
        assert_eq!(overlap_ids(&whole), vec![precise.intent.id.clone()]);
        let precise2 = declare(&h, "s3", &["src/a.ts"], Some(&["h"]));
        assert_eq!(overlap_ids(&precise2), vec![whole.intent.id.clone()]);
        // A file where no declared symbol resolves is file-level for that file only.
        // g (10..20) touches f (0..10) and intersects h (15..30).
        let mixed = declare(&h, "s4", &["src/a.ts", "src/c.ts"], Some(&["g"]));
        assert_eq!(
            overlap_ids(&mixed),
            vec![whole.intent.id.clone(), precise2.intent.id.clone()]
        );
        let c_only = declare(&h, "s5", &["src/c.ts"], Some(&["zzz"]));
        assert_eq!(overlap_ids(&c_only), vec![mixed.intent.id.clone()]);
    }

    #[test]
    fn ambiguous_name_contributes_every_range() {
        let h = Harness::new();
        h.index.add_symbol("m.py", "A.run", 0, 10, None);
        h.index.add_symbol("m.py", "B.run", 50, 60, None);
        h.index.add_symbol("m.py", "B.other", 70, 80, None);
        let run = declare(&h, "s1", &["m.py"], Some(&["run"]));
        assert_eq!(
            (run.intent.start_byte, run.intent.end_byte),
            (Some(0), Some(60))
        );
        let d = declare(&h, "s2", &["m.py"], Some(&["B.other"]));
        assert!(d.conflicts.is_empty(), "70..80 is outside both ranges");
        h.index.add_symbol("m.py", "mid", 20, 30, None);
        let d = declare(&h, "s3", &["m.py"], Some(&["mid"]));
        assert!(
            d.conflicts.is_empty(),
            "ranges are per symbol, not the span 0..60"
        );
    }

    #[test]
    fn own_session_and_finished_intents_do_not_conflict() {
        let h = harness_with_symbols();
        let mine = declare(&h, "s1", &["src/a.ts"], None);
        let again = declare(&h, "s1", &["src/a.ts"], None);
        assert!(again.conflicts.is_empty());
        let active = declare(&h, "s2", &["src/b.ts"], None);
        h.coord
            .update_intent(&active.intent.id, "s2", IntentStatus::Active)
            .unwrap();
        let d = declare(&h, "s3", &["src/a.ts", "src/b.ts"], None);
        assert_eq!(
            overlap_ids(&d),
            vec![
                mine.intent.id.clone(),
                again.intent.id.clone(),
                active.intent.id.clone()
            ]
        );
        h.coord
            .update_intent(&mine.intent.id, "s1", IntentStatus::Resolved)
            .unwrap();
        h.coord
            .update_intent(&again.intent.id, "s1", IntentStatus::Abandoned)
            .unwrap();
        let d = declare(&h, "s4", &["src/a.ts", "src/b.ts"], None);
        assert_eq!(
            overlap_ids(&d),
            vec![active.intent.id.clone(), d_id(&h, "s3")]
        );
    }

    fn d_id(h: &Harness, session: &str) -> String {
        h.coord.query_intents(Some(session), None, None).unwrap()[0]
            .id
            .clone()
    }

    #[test]
    fn overlap_is_reported_once_oldest_first() {
        let h = harness_with_symbols();
        h.clock.set(T0 + 50);
        let newer = declare(&h, "s1", &["src/a.ts", "src/b.ts"], Some(&["f"]));
        h.clock.set(T0);
        let older = declare(&h, "s2", &["src/b.ts"], None);
        h.clock.set(T0 + 100);
        let d = declare(&h, "s3", &["src/a.ts", "src/b.ts"], Some(&["f"]));
        assert_eq!(overlap_ids(&d), vec![older.intent.id, newer.intent.id]);
    }

    #[test]
    fn lock_intersection_checks_every_file_and_symbol() {
        let h = harness_with_symbols();
        h.coord.acquire_lock("src/b.ts:g", "s2", None).unwrap();
        h.coord
            .acquire_lock("src/a.ts:f", "s2", Some(1000))
            .unwrap();
        h.coord.acquire_lock("src/a.ts:g", "s1", None).unwrap();
        h.coord.acquire_lock("src/b.ts:f", "s3", Some(10)).unwrap();
        h.clock.advance(10);
        let d = declare(&h, "s1", &["src/a.ts", "src/b.ts"], Some(&["f", "g", "f"]));
        assert_eq!(
            d.conflicts,
            vec![
                Conflict::LockIntersection {
                    symbol_path: "src/a.ts:f".into(),
                    held_by: "s2".into(),
                    expires_at_ms: T0 + 1000,
                },
                Conflict::LockIntersection {
                    symbol_path: "src/b.ts:g".into(),
                    held_by: "s2".into(),
                    expires_at_ms: T0 + 1_800_000,
                },
            ]
        );
    }

    #[test]
    fn dep_chain_for_locked_callees() {
        let h = harness_with_symbols();
        h.index.add_call("src/a.ts:f", "src/lib.ts:helper");
        h.index.add_call("src/a.ts:f", "src/lib.ts:mine");
        h.index.add_call("src/a.ts:g", "src/lib.ts:helper");
        h.coord
            .acquire_lock("src/lib.ts:helper", "s2", None)
            .unwrap();
        h.coord.acquire_lock("src/lib.ts:mine", "s1", None).unwrap();
        let d = declare(&h, "s1", &["src/a.ts"], Some(&["f", "g"]));
        assert_eq!(
            d.conflicts,
            vec![
                Conflict::DepChain {
                    intent_symbol: "src/a.ts:f".into(),
                    locked_callee: "src/lib.ts:helper".into(),
                    held_by: "s2".into(),
                },
                Conflict::DepChain {
                    intent_symbol: "src/a.ts:g".into(),
                    locked_callee: "src/lib.ts:helper".into(),
                    held_by: "s2".into(),
                },
            ]
        );
    }

    #[test]
    fn conflict_kinds_in_order() {
        let h = harness_with_symbols();
        h.index.add_call("src/a.ts:f", "src/lib.ts:helper");
        h.coord
            .acquire_lock("src/lib.ts:helper", "s2", None)
            .unwrap();
        h.coord.acquire_lock("src/a.ts:f", "s2", None).unwrap();
        let theirs = declare(&h, "s2", &["src/a.ts"], Some(&["f"]));
        let d = declare(&h, "s1", &["src/a.ts"], Some(&["f"]));
        let kinds: Vec<_> = d
            .conflicts
            .iter()
            .map(|c| match c {
                Conflict::IntentOverlap {
                    intent_id,
                    session_id,
                    description,
                } => {
                    assert_eq!(intent_id, &theirs.intent.id);
                    assert_eq!(session_id, "s2");
                    assert_eq!(description, "work of s2");
                    "overlap"
                }
                Conflict::LockIntersection { .. } => "lock",
                Conflict::DepChain { .. } => "dep",
            })
            .collect();
        assert_eq!(kinds, ["overlap", "lock", "dep"]);
    }

    #[test]
    fn declare_validates() {
        let h = Harness::new();
        let f = strings(&["a.ts"]);
        let long = "x".repeat(65_537);
        type Case<'a> = (&'a str, &'a str, Vec<String>, Option<Vec<String>>, &'a str);
        let cases: Vec<Case> = vec![
            ("", "d", f.clone(), None, "sessionId"),
            ("s", "", f.clone(), None, "description"),
            ("s", &long, f.clone(), None, "description"),
            ("s", "d", vec![], None, "files"),
            ("s", "d", strings(&["../x.ts"]), None, "files"),
            ("s", "d", strings(&["a.ts", "/abs"]), None, "files"),
            ("s", "d", strings(&[""]), None, "files"),
            ("s", "d", vec!["a".into(); 1001], None, "files"),
            ("s", "d", f.clone(), Some(vec!["x".into(); 1001]), "symbols"),
        ];
        for (session, description, files, symbols, field) in cases {
            let err = h
                .coord
                .declare_intent(
                    &h.coord.vantage(Some(session)),
                    description,
                    &files,
                    symbols.as_deref(),
                )
                .unwrap_err();
            assert!(
                matches!(err, CoordError::InvalidInput { field: f, .. } if f == field),
                "{field}: {err:?}"
            );
        }
        assert!(h.coord.query_intents(None, None, None).unwrap().is_empty());
    }

    #[test]
    fn transitions_table_is_complete() {
        use IntentStatus::*;
        let allowed = [
            (Declared, Active),
            (Declared, Resolved),
            (Declared, Abandoned),
            (Active, Resolved),
            (Active, Abandoned),
        ];
        for from in IntentStatus::ALL {
            for to in IntentStatus::ALL {
                let h = Harness::new();
                let d = declare(&h, "s1", &["a.ts"], None);
                let id = d.intent.id;
                // Bring the intent to `from` by an allowed path.
                match from {
                    Declared => {}
                    Active => {
                        h.coord.update_intent(&id, "s1", Active).unwrap();
                    }
                    Resolved | Abandoned => {
                        h.coord.update_intent(&id, "s1", from).unwrap();
                    }
                }
                h.clock.advance(7);
                let res = h.coord.update_intent(&id, "s1", to);
                if allowed.contains(&(from, to)) {
                    let intent = res.unwrap();
                    assert_eq!(intent.status, to);
                    assert_eq!(intent.updated_at_ms, T0 + 7);
                    assert_eq!(intent.declared_at_ms, T0);
                    let stored = h.coord.store().read(|r| r.intent(&id)).unwrap().unwrap();
                    assert_eq!(stored, intent);
                } else {
                    match res.unwrap_err() {
                        CoordError::InvalidTransition { current, requested } => {
                            assert_eq!((current, requested), (from, to));
                        }
                        other => panic!("{from:?}->{to:?}: {other:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn update_errors_in_order() {
        let h = Harness::new();
        let d = declare(&h, "s1", &["a.ts"], None);
        assert!(matches!(
            h.coord
                .update_intent("nope", "s1", IntentStatus::Active)
                .unwrap_err(),
            CoordError::IntentNotFound
        ));
        // Not owned is checked before the transition.
        assert!(matches!(
            h.coord
                .update_intent(&d.intent.id, "s2", IntentStatus::Declared)
                .unwrap_err(),
            CoordError::IntentNotOwned
        ));
        assert!(matches!(
            h.coord
                .update_intent(&d.intent.id, "", IntentStatus::Active)
                .unwrap_err(),
            CoordError::InvalidInput {
                field: "sessionId",
                ..
            }
        ));
    }

    #[test]
    fn query_filters_and_order() {
        let h = harness_with_symbols();
        let a = declare(&h, "s1", &["src/a.ts", "src/b.ts"], None);
        h.clock.advance(1);
        let b = declare(&h, "s2", &["src/a.ts"], Some(&["f"]));
        h.clock.advance(1);
        let c = declare(&h, "s1", &["src/ab.ts"], None);
        h.clock.advance(1);
        let d = declare(&h, "s2", &["src/c.ts"], None);
        h.coord
            .update_intent(&b.intent.id, "s2", IntentStatus::Active)
            .unwrap();
        h.coord
            .update_intent(&d.intent.id, "s2", IntentStatus::Resolved)
            .unwrap();

        let ids = |v: Vec<Intent>| v.into_iter().map(|i| i.id).collect::<Vec<_>>();
        let q = |s: Option<&str>, f: Option<&str>, st: Option<&str>| {
            ids(h.coord.query_intents(s, f, st).unwrap())
        };
        let (a, b, c, d) = (
            a.intent.id.as_str(),
            b.intent.id.as_str(),
            c.intent.id.as_str(),
            d.intent.id.as_str(),
        );

        assert_eq!(q(None, None, None), [a, b, c]);
        assert_eq!(q(Some("s1"), None, None), [a, c]);
        assert_eq!(q(None, Some("src/a.ts"), None), [a, b]);
        assert_eq!(q(None, Some("./src//a.ts"), None), [a, b]);
        assert_eq!(q(None, Some("src/b.ts"), None), [a]);
        assert!(
            q(None, Some("a.ts"), None).is_empty(),
            "exact element, not a suffix"
        );
        assert!(q(None, Some("SRC/a.ts"), None).is_empty(), "case-sensitive");
        assert!(q(None, Some(""), None).is_empty());
        assert!(q(Some(""), None, None).is_empty());
        assert_eq!(q(None, None, Some("resolved")), [d]);
        assert_eq!(q(None, None, Some("active")), [b]);
        assert_eq!(q(None, Some("src/c.ts"), Some("resolved")), [d]);
        assert!(q(None, Some("src/c.ts"), None).is_empty());
        assert_eq!(q(Some("s2"), Some("src/a.ts"), Some("active")), [b]);

        for bad in ["", "Active", "done", "declared "] {
            assert!(matches!(
                h.coord.query_intents(None, None, Some(bad)).unwrap_err(),
                CoordError::InvalidInput {
                    field: "status",
                    ..
                }
            ));
        }
        assert!(matches!(
            h.coord.query_intents(None, Some("../x"), None).unwrap_err(),
            CoordError::InvalidInput { field: "file", .. }
        ));
    }

    #[test]
    fn declaration_order_breaks_time_ties() {
        let h = Harness::new();
        let ids: Vec<_> = (0..20)
            .map(|i| declare(&h, &format!("s{i}"), &["x.ts"], None).intent.id)
            .collect();
        let got: Vec<_> = h
            .coord
            .query_intents(None, None, None)
            .unwrap()
            .into_iter()
            .map(|i| i.id)
            .collect();
        assert_eq!(got, ids);
    }
}
