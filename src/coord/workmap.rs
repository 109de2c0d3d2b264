//! The work map's upkeep (docs/protocol.md 13.1, 13.3): a session's clean edit recorded as the
//! lines it changed, and every session's regions carried along when a file's text changes.
//!
//! Regions are lines of a text; the daemon remembers, per file with live regions, which text
//! that is. When the file's current text differs (another session's recorded edit, or a
//! change the index sees on disk), a line diff of the two carries every region along. A
//! recorded edit moves the regions to its new text at once, before the editor has written
//! it: until the file on disk becomes that text, the text before the edit is not taken for a
//! change. After a restart the daemon takes the stored regions to be lines of the text it
//! finds.
//!
//! With several worktrees (docs/protocol.md 14), regions are lines of the text of the worktree
//! they were observed in (their origin): each origin's texts are kept apart, a worktree's
//! regions follow only its own text, and another worktree's are carried to the asking one's
//! text through the merge-base ([`Coord::carried_across`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, MutexGuard, PoisonError};

use serde_json::json;

use super::events::{self, EventKind};
use super::intents::Declaration;
use super::preflight::spans::Applied;
use super::preflight::OBSERVED_EDIT;
use super::regions::{merge, regions_of_changes, LineMap, Lines, Written};
use super::worktree_work::Origin;
use super::{Coord, IntentStatus, LineRegion, Result, Vantage};
use crate::platform::at_rest::DiskText;
use crate::store::{IntentFilter, IntentKind, RangeHit, Writer};

/// Per worktree and file: the text its regions are lines of.
#[derive(Debug, Default)]
pub struct RegionTexts {
    files: HashMap<(Origin, String), RegionText>,
}

#[derive(Debug)]
struct RegionText {
    /// The text the stored regions are lines of.
    text: Arc<str>,
    /// Until the file shows a recorded edit's result: the fingerprint of the text the edit
    /// was made on (which is not a change of the file), and how lines of `text` map back
    /// into it (what a preview against it sees).
    before_edit: Option<(u64, LineMap)>,
}

/// How a file's text stands to the one its regions are lines of.
enum TextStanding<'a> {
    /// It is that text.
    Same,
    /// It is the text a recorded edit not yet written was made on: lines of the known text
    /// map back into it through this map.
    BeforeEdit(&'a LineMap),
    /// Another text.
    Other,
}

impl RegionText {
    /// How `text` stands to the text the regions are lines of.
    fn standing(&self, text: &str) -> TextStanding<'_> {
        if *self.text == *text {
            return TextStanding::Same;
        }
        match &self.before_edit {
            Some((before, back)) if *before == fingerprint(text) => TextStanding::BeforeEdit(back),
            _ => TextStanding::Other,
        }
    }
}

/// Identifies a text the regions were carried to (XXH3: SipHash was 3 % of a recorded edit
/// of a 169 KB file).
fn fingerprint(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

/// What answering a question about regions may do to the work map (docs/protocol.md 10.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Upkeep {
    /// Bring the stored regions up to date with the file's text (the request writes anyway:
    /// a declaration, a query that shows them, an observed change).
    Store,
    /// Carry them for this answer only: a preview (`edit.preflight`) writes nothing.
    Preview,
}

impl Upkeep {
    /// What a request that writes anyway may do with the regions of a file it read as `disk`:
    /// keep them carried to a text read at rest, and only show them carried to one that was
    /// not (a file between a writer's truncate and its write is no text to keep them in).
    pub(super) fn of_read(disk: Option<&DiskText>) -> Upkeep {
        match disk {
            Some(disk) if !disk.at_rest => Upkeep::Preview,
            _ => Upkeep::Store,
        }
    }
}

/// What [`Coord::follow_read`] did with the regions of a file.
pub(super) enum Followed {
    /// Read at rest: carried and stored; whether any moved.
    Stored(bool),
    /// Not read at rest: per intent, its regions carried to the text for this answer only.
    Shown(Vec<(String, Vec<LineRegion>)>),
}

/// A clean edit to record (10.3, 13.1).
pub(crate) struct Observed<'a> {
    /// The normalised file.
    pub file: &'a str,
    /// The touched symbols' qualified names, innermost first.
    pub touched: &'a [String],
    /// The file's current text.
    pub before: &'a str,
    /// The new text and the changes.
    pub applied: &'a Applied,
    /// Whether the edit rewrites the whole file (the intent is then file-level).
    pub file_level: bool,
}

/// The regions of one intent as a row shows them, each intent once.
fn region_rows(rows: Vec<RangeHit>) -> Vec<RangeHit> {
    let mut seen = HashSet::new();
    rows.into_iter()
        .filter(|row| row.regions.is_some() && seen.insert(row.intent_seq))
        .collect()
}

impl Coord {
    fn region_texts(&self) -> MutexGuard<'_, RegionTexts> {
        self.region_texts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `rows` (intent rows of `file`) with their regions as lines of `text`, the file's
    /// current text in the worktree of the request: see [`Coord::regions_of_origin`] for
    /// regions observed in that worktree; another worktree's are carried across (14.5).
    pub(super) fn regions_in(
        &self,
        at: &Vantage,
        file: &str,
        text: &str,
        rows: Vec<RangeHit>,
        upkeep: Upkeep,
    ) -> Result<Vec<RangeHit>> {
        Ok(self
            .regions_and_writes_in(at, file, text, rows, upkeep)?
            .into_iter()
            .map(|(row, _)| row)
            .collect())
    }

    /// [`Coord::regions_in`], each row with what its worktree wrote over lines of `text`
    /// that are still the merge-base's (only for another worktree's rows, 13.4).
    pub(super) fn regions_and_writes_in(
        &self,
        at: &Vantage,
        file: &str,
        text: &str,
        rows: Vec<RangeHit>,
        upkeep: Upkeep,
    ) -> Result<Vec<(RangeHit, Vec<Written>)>> {
        let unwritten = |rows: Vec<RangeHit>| rows.into_iter().map(|row| (row, Vec::new()));
        if !self.several_worktrees() {
            let rows = self.regions_of_origin(&None, file, text, rows, upkeep)?;
            return Ok(unwritten(rows).collect());
        }
        let here = self.here(at);
        let origins = self.origins(&rows)?;
        let (mut mine, mut across, mut whole) = (Vec::new(), Vec::new(), Vec::new());
        for (row, origin) in rows.into_iter().zip(origins) {
            if origin == here {
                mine.push(row);
            } else if row.regions.is_none() {
                let written = self.written_whole(&origin, file, text);
                whole.push((row, written));
            } else {
                across.push((origin, row));
            }
        }
        let mut rows: Vec<(RangeHit, Vec<Written>)> =
            unwritten(self.regions_of_origin(&here, file, text, mine, upkeep)?).collect();
        rows.extend(whole);
        rows.extend(
            across
                .into_iter()
                .map(|(origin, row)| self.carried_across(&origin, &here, file, text, row)),
        );
        Ok(rows)
    }

    /// `rows` (intent rows of `file` observed in the worktree of `origin`) with their regions
    /// as lines of `text`, that worktree's current text of the file: when the text changed
    /// since the regions were last true, every live region of the file observed there is
    /// carried to it and stored (13.3) — with [`Upkeep::Preview`] carried for this answer
    /// only, nothing stored —; while a recorded edit is not yet written, they are mapped back
    /// to the text it was made on, for this answer only.
    pub(super) fn regions_of_origin(
        &self,
        origin: &Origin,
        file: &str,
        text: &str,
        rows: Vec<RangeHit>,
        upkeep: Upkeep,
    ) -> Result<Vec<RangeHit>> {
        if rows.iter().all(|row| row.regions.is_none()) {
            return Ok(rows);
        }
        if upkeep == Upkeep::Preview {
            return Ok(match self.preview_map(origin, file, text) {
                Some(map) => map_rows(rows, &map),
                None => rows,
            });
        }
        let key = (origin.clone(), file.to_owned());
        let mut texts = self.region_texts();
        if let Some(known) = texts.files.get(&key) {
            match known.standing(text) {
                TextStanding::Same => return Ok(rows),
                TextStanding::BeforeEdit(back) => return Ok(map_rows(rows, back)),
                TextStanding::Other => {}
            }
        }
        Ok(match self.follow_locked(&mut texts, origin, file, text)? {
            Some(map) => map_rows(rows, &map),
            None => rows,
        })
    }

    /// How lines of the text the regions of `file` observed in `origin`'s worktree are lines
    /// of map to `text`, for one answer (nothing stored): `None` when they are lines of
    /// `text` already, or nothing is known since the start (the stored regions are lines of
    /// this text).
    fn preview_map(&self, origin: &Origin, file: &str, text: &str) -> Option<LineMap> {
        let texts = self.region_texts();
        let known = texts.files.get(&(origin.clone(), file.to_owned()))?;
        match known.standing(text) {
            TextStanding::Same => None,
            TextStanding::BeforeEdit(back) => Some(back.clone()),
            TextStanding::Other => {
                let known = Arc::clone(&known.text);
                drop(texts);
                Some(LineMap::between(&known, text))
            }
        }
    }

    /// Brings the live regions of `file` observed in `origin`'s worktree up to date with
    /// `disk`, its text as a request read it (13.3), by [`Upkeep::of_read`]: carried and
    /// stored from a read at rest, carried for this answer only from one that was not.
    pub(super) fn follow_read(
        &self,
        origin: &Origin,
        file: &str,
        disk: &DiskText,
    ) -> Result<Followed> {
        if Upkeep::of_read(Some(disk)) == Upkeep::Store {
            return Ok(Followed::Stored(
                self.follow_text_of(origin, file, &disk.text)?,
            ));
        }
        let Some(map) = self.preview_map(origin, file, &disk.text) else {
            return Ok(Followed::Shown(Vec::new()));
        };
        Ok(Followed::Shown(
            self.live_regions_of(origin, file)?
                .into_iter()
                .filter_map(|row| Some((row.intent_id, map.carry(&row.regions?))))
                .collect(),
        ))
    }

    /// The text the regions of `file` observed in `origin`'s worktree are lines of, when
    /// known.
    pub(super) fn region_text(&self, origin: &Origin, file: &str) -> Option<Arc<str>> {
        self.region_texts()
            .files
            .get(&(origin.clone(), file.to_owned()))
            .map(|known| Arc::clone(&known.text))
    }

    /// Carries the live regions of `file` observed in `origin`'s worktree to `text`, its
    /// current text there (read at rest), when the text changed since they were last true
    /// (13.3); whether any region moved.
    pub(super) fn follow_text_of(&self, origin: &Origin, file: &str, text: &str) -> Result<bool> {
        let mut texts = self.region_texts();
        if let Some(known) = texts.files.get(&(origin.clone(), file.to_owned())) {
            if !matches!(known.standing(text), TextStanding::Other) {
                return Ok(false);
            }
        }
        Ok(self
            .follow_locked(&mut texts, origin, file, text)?
            .is_some())
    }

    /// The live region rows of `file` observed in `origin`'s worktree, each intent once.
    pub(super) fn live_regions_of(&self, origin: &Origin, file: &str) -> Result<Vec<RangeHit>> {
        let rows = region_rows(self.store.read(|r| r.live_regions_in_file(file))?);
        if !self.several_worktrees() {
            return Ok(rows);
        }
        let origins = self.origins(&rows)?;
        Ok(rows
            .into_iter()
            .zip(origins)
            .filter(|(_, o)| o == origin)
            .map(|(row, _)| row)
            .collect())
    }

    /// [`Coord::follow_text_of`] with the texts held: the line map when regions were carried.
    fn follow_locked(
        &self,
        texts: &mut RegionTexts,
        origin: &Origin,
        file: &str,
        text: &str,
    ) -> Result<Option<LineMap>> {
        let key = (origin.clone(), file.to_owned());
        let rows = self.live_regions_of(origin, file)?;
        if rows.is_empty() {
            texts.files.remove(&key);
            return Ok(None);
        }
        let base = texts.files.get(&key).map(|known| Arc::clone(&known.text));
        texts.files.insert(
            key,
            RegionText {
                text: Arc::from(text),
                before_edit: None,
            },
        );
        let Some(base) = base else {
            // Nothing known since the start: the stored regions are lines of this text.
            return Ok(None);
        };
        let map = LineMap::between(&base, text);
        self.store.write(|w| {
            for row in &rows {
                carry(w, row, &map, &[])?;
            }
            Ok::<_, super::CoordError>(())
        })?;
        Ok(Some(map))
    }

    /// Records a clean edit as observed work (10.3, 13.1, 13.3): its changed lines join the
    /// session's observed intent on the file, or a new `active` one, unless one of its
    /// declared intents there is file-level or names every touched symbol; every session's
    /// regions in the file move to the edit's new text. The id of a newly declared intent.
    pub(super) fn record_observed(
        &self,
        at: &Vantage,
        session_id: &str,
        observed: &Observed<'_>,
    ) -> Result<Option<String>> {
        let here = self.here(at);
        let recorded = self.record_observed_by(&[session_id.to_owned()], observed, &here, true)?;
        Ok(recorded.into_iter().next().flatten())
    }

    /// [`Coord::record_observed`] for a change several sessions own at once (15.1, 15.3: each
    /// of them gets the changed lines), observed in `origin`'s worktree. `pending`: the change
    /// is not on disk yet (a recorded edit before the editor writes it), so the text before
    /// it is no change of the file meanwhile. Per session, the id of a newly declared intent.
    pub(super) fn record_observed_by(
        &self,
        sessions: &[String],
        observed: &Observed<'_>,
        origin: &Origin,
        pending: bool,
    ) -> Result<Vec<Option<String>>> {
        let file = observed.file;
        self.follow_text_of(origin, file, observed.before)?;
        let new_lines = Lines::of(&observed.applied.text);
        let added = regions_of_changes(&observed.applied.line_changes, &new_lines);
        let mut texts = self.region_texts();
        let mut owners = Vec::with_capacity(sessions.len());
        for session_id in sessions {
            owners.push(self.observed_intent_of(session_id, observed)?);
        }
        let rows = self.live_regions_of(origin, file)?;
        let forward = (!rows.is_empty() || pending)
            .then(|| LineMap::of_applied(observed.before, observed.applied));
        if let (false, Some(map)) = (rows.is_empty(), &forward) {
            self.store.write(|w| {
                let now = self.clock.now_ms();
                for row in &rows {
                    let owner = sessions
                        .iter()
                        .zip(&owners)
                        .find(|(_, own)| own.intent.as_deref() == Some(row.intent_id.as_str()));
                    let mine = owner.is_some();
                    let extra: &[LineRegion] = if mine { &added } else { &[] };
                    let moved = carry(w, row, map, extra)?;
                    let named = mine && add_symbols(w, &row.intent_id, observed.touched)?;
                    if let (Some((session_id, _)), true) = (owner, moved || named) {
                        let intent = w.intent(&row.intent_id)?;
                        let mut data = json!({"regions": regions_json(
                            intent.as_ref().and_then(|i| i.regions.as_deref()).unwrap_or_default()
                        )});
                        if let (true, Some(intent)) = (named, &intent) {
                            data["symbols"] =
                                serde_json::from_str(&intent.symbols).unwrap_or_else(|_| json!([]));
                        }
                        events::append(
                            w,
                            now,
                            EventKind::IntentUpdated,
                            Some(session_id),
                            &row.intent_id,
                            data,
                        )?;
                    }
                }
                Ok::<_, super::CoordError>(())
            })?;
        }
        let mut recorded = Vec::with_capacity(sessions.len());
        for (session_id, own) in sessions.iter().zip(&owners) {
            if own.intent.is_some() || own.covered {
                recorded.push(None);
                continue;
            }
            let declaration = Declaration::observed(file, observed.touched);
            let resolution = Coord::observed_resolution(file);
            let regions = (!observed.file_level).then(|| added.clone());
            let intent = self.store_intent(
                session_id,
                &declaration,
                &resolution,
                regions,
                &[],
                IntentStatus::Declared,
            )?;
            self.update_intent(&intent.id, session_id, IntentStatus::Active)?;
            recorded.push(Some(intent.id));
        }
        // Back onto the text before the edit through the same diff, reversed: a region carried
        // forward and back is where it was.
        let before_edit = forward
            .filter(|_| pending)
            .map(|forward| (fingerprint(observed.before), forward.reversed()));
        texts.files.insert(
            (origin.clone(), file.to_owned()),
            RegionText {
                text: Arc::from(observed.applied.text.as_str()),
                before_edit,
            },
        );
        Ok(recorded)
    }

    /// The session's observed intent on the observed file, and whether its declared intents
    /// there already cover the change (file-level, or naming every touched symbol).
    fn observed_intent_of(&self, session_id: &str, observed: &Observed<'_>) -> Result<OwnIntent> {
        let file = observed.file;
        let (own, own_rows) = self.store.read(|r| {
            let own = r.intents(&IntentFilter {
                session_id: Some(session_id),
                file: Some(file),
                status: None,
            })?;
            let own_rows = r.own_live_ranges_in_file(file, session_id)?;
            Ok::<_, super::CoordError>((own, own_rows))
        })?;
        // Its observed intent by kind (a declared intent never has regions, nor a file-level
        // observed one: its lines are the whole file).
        let intent = own
            .iter()
            .find(|intent| intent.kind == IntentKind::ObservedEdit && intent.regions.is_some())
            .map(|intent| intent.id.clone());
        let covered = intent.is_none() && {
            let file_level = own_rows
                .iter()
                .any(|row| row.range.is_none() && row.regions.is_none());
            let names_all = observed.touched.iter().all(|name| {
                let simple = name.rsplit('.').next().unwrap_or(name);
                own.iter().filter(|i| i.regions.is_none()).any(|intent| {
                    let names: Vec<String> =
                        serde_json::from_str(&intent.symbols).unwrap_or_default();
                    names.iter().any(|n| n == name || n == simple)
                })
            });
            !own.is_empty() && (file_level || names_all)
        };
        Ok(OwnIntent { intent, covered })
    }
}

/// A session's own intents on a file, as recording an observed change reads them.
struct OwnIntent {
    /// Its observed intent there (the one with regions).
    intent: Option<String>,
    /// Whether a declared intent of its already covers the change.
    covered: bool,
}

/// `rows` with their regions carried through `map` (in memory).
fn map_rows(rows: Vec<RangeHit>, map: &LineMap) -> Vec<RangeHit> {
    rows.into_iter()
        .map(|mut row| {
            row.regions = row.regions.map(|regions| map.carry(&regions));
            row
        })
        .collect()
}

/// Carries one intent's regions through `map`, adding `extra` (lines of the new text);
/// writes them when they changed; whether they did.
fn carry(w: &Writer<'_>, row: &RangeHit, map: &LineMap, extra: &[LineRegion]) -> Result<bool> {
    let Some(regions) = &row.regions else {
        return Ok(false);
    };
    let mut carried = map.carry(regions);
    if !extra.is_empty() {
        carried.extend_from_slice(extra);
        carried = merge(carried);
    }
    if carried == *regions {
        return Ok(false);
    }
    w.set_intent_regions(&row.intent_id, Some(&carried))?;
    Ok(true)
}

/// Adds the `touched` symbols an observed intent does not list yet to its symbols (13.3: a
/// further clean edit adds its lines, and its symbols, to the same intent); whether any was
/// added.
fn add_symbols(w: &Writer<'_>, intent_id: &str, touched: &[String]) -> Result<bool> {
    let Some(intent) = w.intent(intent_id)? else {
        return Ok(false);
    };
    let mut symbols: Vec<String> = serde_json::from_str(&intent.symbols).unwrap_or_default();
    let before = symbols.len();
    // A set, not a search of the list per name: a new file of 260,000 functions names them
    // all at once, and the pairwise search held the tree observer for minutes.
    let mut listed: std::collections::HashSet<String> = symbols.iter().cloned().collect();
    for name in touched {
        if listed.insert(name.clone()) {
            symbols.push(name.clone());
        }
    }
    if symbols.len() == before {
        return Ok(false);
    }
    let encoded = serde_json::to_string(&symbols).unwrap_or_else(|_| "[]".to_owned());
    w.set_intent_symbols(intent_id, &encoded)?;
    Ok(true)
}

/// Regions as the protocol writes them.
pub(crate) fn regions_json(regions: &[LineRegion]) -> serde_json::Value {
    regions
        .iter()
        .map(|r| json!({"startLine": r.start_line, "endLine": r.end_line}))
        .collect()
}

impl Declaration {
    /// The declaration of an observed intent: its one file and the touched symbols.
    pub(super) fn observed(file: &str, touched: &[String]) -> Declaration {
        Declaration {
            description: OBSERVED_EDIT.to_owned(),
            files: vec![file.to_owned()],
            symbols: touched.to_vec(),
            distinct_symbols: touched.to_vec(),
            kind: IntentKind::ObservedEdit,
        }
    }
}
