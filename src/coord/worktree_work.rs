//! Work in worktrees, observed without hooks (docs/protocol.md 14.4), and observed regions
//! across worktrees (14.5).
//!
//! Each worktree's changes against its merge-base with the main worktree are one `active`
//! intent per file of the session `worktree:<root>`, with regions in the worktree's current
//! text. The daemon's observer hands them in ([`Coord::observe_worktree`]) whenever the
//! worktree changes on disk; what is here keeps them: new files declare, changed regions
//! update, files no longer changed (reverted, or merged into the main worktree's HEAD)
//! resolve, and a worktree that goes takes its work with it ([`Coord::release_worktree`]).
//!
//! Regions are lines of the text of the worktree they were observed in (their *origin*).
//! Seen from another worktree they are carried through the merge-base: origin text → base
//! text → the asking worktree's text ([`Coord::carried_across`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, MutexGuard, PoisonError};

use serde_json::json;

use super::events::{self, EventKind};
use super::intents::Declaration;
use super::regions::{LineMap, Written};
use super::workmap::{regions_json, Upkeep};
use super::{Coord, Intent, IntentStatus, LineRegion, Result, Vantage};
use crate::store::{IntentFilter, IntentKind, RangeHit};

/// The session of a worktree's observed work is this prefix and the worktree's root.
pub const WORKTREE_SESSION_PREFIX: &str = "worktree:";

/// The session holding the observed work of the worktree at `root`.
pub fn worktree_session(root: &str) -> String {
    format!("{WORKTREE_SESSION_PREFIX}{root}")
}

/// The worktree root of a `worktree:<root>` session.
pub fn worktree_of_session(session_id: &str) -> Option<&str> {
    session_id.strip_prefix(WORKTREE_SESSION_PREFIX)
}

/// Which worktree's text regions are lines of: `None` for the main worktree (and whenever
/// the repository has one worktree), else a linked worktree's root.
pub(super) type Origin = Option<String>;

/// One changed file of a worktree, as the work map takes it.
#[derive(Debug, Clone)]
pub struct ObservedFile {
    /// Its path relative to the worktree's root.
    pub file: String,
    /// The changed lines of its current text; `None`: the whole file (13.1).
    pub regions: Option<Vec<LineRegion>>,
    /// The symbols those lines touch (innermost), in document order.
    pub symbols: Vec<String>,
    /// Its text at the worktree's merge-base (`None`: absent there, or unreadable).
    pub base: Option<Arc<str>>,
    /// Its current text (`None`: deleted, or unreadable).
    pub current: Option<Arc<str>>,
}

/// One changed file of a worktree as git reads it, as the observer hands it in: the work map
/// names the symbols and merges the regions ([`Coord::observe_worktree_changes`]).
#[derive(Debug, Clone)]
pub struct ChangedFile {
    /// Its path relative to the worktree's root.
    pub file: String,
    /// The changed lines of its current text, `(first, last)` (a point after `last` when
    /// `first == last + 1`); `None`: the whole file.
    pub lines: Option<Vec<(i64, i64)>>,
    /// Its text at the worktree's merge-base (`None`: absent there, or unreadable).
    pub base: Option<Arc<str>>,
    /// Its current text (`None`: deleted, or unreadable).
    pub current: Option<Arc<str>>,
}

/// One file of a worktree's observed work, as the forecast reads it.
#[derive(Debug, Clone)]
pub struct WorktreeFile {
    /// Its path.
    pub file: String,
    /// Its current text in the worktree.
    pub text: Arc<str>,
    /// The changed lines of `text` (`None`: the whole file).
    pub regions: Option<Vec<LineRegion>>,
    /// The intent holding the work.
    pub intent_id: String,
    /// Its session (`worktree:<root>`).
    pub session_id: String,
}

/// The texts of a changed file in a worktree: what carries its regions across worktrees.
#[derive(Debug, Clone)]
struct FileTexts {
    base: Option<Arc<str>>,
    current: Arc<str>,
}

/// The line maps that carry regions of one origin text through a base to an asking text.
#[derive(Debug)]
struct CarryMaps {
    from: Option<Arc<str>>,
    base: Arc<str>,
    to: Arc<str>,
    /// Base → origin text, whose preimage takes regions back to the base lines they came
    /// from (`None`: the origin's text is the base).
    base_to_origin: Option<LineMap>,
    /// Base → the asking text.
    from_base: LineMap,
}

/// At most this many sets of line maps are kept (then they are made again as asked).
const MAX_CARRIES: usize = 256;

/// A text's identity by content: its length and digest (never its address).
type TextKey = (usize, u64);

fn text_key(text: &str) -> TextKey {
    (text.len(), xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
}

/// Whether two texts are the same, by content (one shared `Arc` is the quick case).
fn same_text(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// The worktrees the daemon serves and the texts of their changed files.
#[derive(Debug, Default)]
pub struct Worktrees {
    /// The main worktree's root, once the repository has more than one worktree.
    main_root: Option<String>,
    /// Per `(origin, file)`: its merge-base and current texts.
    texts: HashMap<(Origin, String), FileTexts>,
    /// Line maps kept by the contents of (origin text, base, asking text).
    carries: HashMap<(Option<TextKey>, TextKey, TextKey), Arc<CarryMaps>>,
    /// Per watched worktree root: a number that grows with every change seen on its disk
    /// (what lets the forecast keep a worktree's state while it does not change).
    generations: HashMap<String, u64>,
}

impl Coord {
    fn worktrees(&self) -> MutexGuard<'_, Worktrees> {
        self.worktrees
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the core the repository's main worktree's root while it has more than one
    /// worktree (`None`: one worktree; observed regions then all share one text).
    pub fn set_main_worktree(&self, main_root: Option<&str>) {
        let mut worktrees = self.worktrees();
        worktrees.main_root = main_root.map(str::to_owned);
        if main_root.is_none() {
            worktrees.texts.clear();
            worktrees.carries.clear();
            worktrees.generations.clear();
        }
    }

    /// Records that the worktree at `root`, watched for changes, may have changed now.
    pub fn worktree_touched(&self, root: &str) {
        *self
            .worktrees()
            .generations
            .entry(root.to_owned())
            .or_default() += 1;
    }

    /// Records that the worktree at `root` is not watched (its changes are not all seen).
    pub fn worktree_unwatched(&self, root: &str) {
        self.worktrees().generations.remove(root);
    }

    /// How many changes have been seen on the disk of the watched worktree at `root`
    /// (`None`: it is not watched, so any moment may have changed it).
    pub fn worktree_generation(&self, root: &str) -> Option<u64> {
        self.worktrees().generations.get(root).copied()
    }

    /// Whether observed regions may be lines of different worktrees' texts.
    pub(super) fn several_worktrees(&self) -> bool {
        self.worktrees().main_root.is_some()
    }

    /// The origin a worktree root stands for (the main worktree is `None`).
    pub(super) fn origin_of_root(&self, root: Option<&str>) -> Origin {
        let worktrees = self.worktrees();
        match (root, &worktrees.main_root) {
            (Some(root), Some(main)) if root != main => Some(root.to_owned()),
            _ => None,
        }
    }

    /// The origin of the request seen from `at` (its worktree).
    pub(super) fn here(&self, at: &Vantage) -> Origin {
        if !self.several_worktrees() {
            return None;
        }
        self.origin_of_root(at.worktree())
    }

    /// The origin of each row: the worktree of a `worktree:` session, else the worktree its
    /// session last acted from.
    pub(super) fn origins(&self, rows: &[RangeHit]) -> Result<Vec<Origin>> {
        if !self.several_worktrees() {
            return Ok(vec![None; rows.len()]);
        }
        let mut known: HashMap<&str, Origin> = HashMap::new();
        let mut origins = Vec::with_capacity(rows.len());
        for row in rows {
            let session = row.session_id.as_str();
            if let Some(origin) = known.get(session) {
                origins.push(origin.clone());
                continue;
            }
            let origin = match worktree_of_session(session) {
                Some(root) => self.origin_of_root(Some(root)),
                None => {
                    let row = self.store.read(|r| r.session(session))?;
                    self.origin_of_root(row.and_then(|r| r.worktree).as_deref())
                }
            };
            known.insert(session, origin.clone());
            origins.push(origin);
        }
        Ok(origins)
    }

    /// What another worktree's file-level work on `file` (13.1: a file it added, deleted or
    /// rewrote whole) wrote over `text`, the asking worktree's: its whole current text over
    /// every line of `text`. An edit that leaves exactly that text is the same change and
    /// meets nothing (13.4: git's merge applies one copy; a file both sides add alike).
    pub(super) fn written_whole(&self, origin: &Origin, file: &str, text: &str) -> Vec<Written> {
        let worktrees = self.worktrees();
        let Some(theirs) = worktrees.texts.get(&(origin.clone(), file.to_owned())) else {
            return Vec::new();
        };
        let lines = i64::try_from(text.split_inclusive('\n').count()).unwrap_or(i64::MAX);
        vec![Written {
            at: LineRegion::new(1, lines),
            text: theirs.current.to_string(),
        }]
    }

    /// `row`'s regions, lines of `origin`'s text of `file`, carried to `text` (the asking
    /// worktree's text) through the merge-base (14.5): origin text → base (the base lines
    /// they came from, a deletion's included: [`LineMap::preimage`]) → `text`; with what the
    /// origin wrote over lines `text` keeps as the base has them (an identical change there
    /// meets nothing, 13.4). A file the origin did not change is its base text.
    pub(super) fn carried_across(
        &self,
        origin: &Origin,
        here: &Origin,
        file: &str,
        text: &str,
        mut row: RangeHit,
    ) -> (RangeHit, Vec<Written>) {
        let Some(regions) = &row.regions else {
            return (row, Vec::new());
        };
        let (theirs, mine) = {
            let worktrees = self.worktrees();
            let get = |o: &Origin| worktrees.texts.get(&(o.clone(), file.to_owned())).cloned();
            (get(origin), get(here))
        };
        let origin_text = self.region_text(origin, file);
        let base = theirs
            .as_ref()
            .and_then(|t| t.base.clone())
            .or_else(|| mine.as_ref().and_then(|t| t.base.clone()));
        let Some(base) = base else {
            // Neither side changed the file against a base we know: the lines are the same.
            return (row, Vec::new());
        };
        let from = origin_text.or_else(|| theirs.map(|t| t.current));
        let maps = self.carry_maps(from.as_ref(), &base, text);
        let (at_base, written) = match (&maps.base_to_origin, &from) {
            (Some(base_to_origin), Some(from)) => (
                base_to_origin.preimage(regions),
                base_to_origin.written_into(from, &maps.from_base),
            ),
            _ => (regions.clone(), Vec::new()),
        };
        row.regions = Some(maps.from_base.carry(&at_base));
        (row, written)
    }

    /// The line maps origin text → base → `text`: kept by the three texts' contents (digests,
    /// then compared), so a preview asked again does not diff whole files again.
    fn carry_maps(&self, from: Option<&Arc<str>>, base: &Arc<str>, text: &str) -> Arc<CarryMaps> {
        let same = |maps: &CarryMaps| {
            same_text(&maps.base, base)
                && match (&maps.from, from) {
                    (Some(a), Some(b)) => same_text(a, b),
                    (None, None) => true,
                    _ => false,
                }
                && same_text(&maps.to, text)
        };
        let key = (from.map(|t| text_key(t)), text_key(base), text_key(text));
        let kept = self.worktrees().carries.get(&key).map(Arc::clone);
        if let Some(maps) = kept.filter(|m| same(m)) {
            return maps;
        }
        let maps = Arc::new(CarryMaps {
            base_to_origin: from.map(|from| LineMap::between(base, from)),
            from_base: LineMap::between(base, text),
            from: from.cloned(),
            base: Arc::clone(base),
            to: Arc::from(text),
        });
        let mut worktrees = self.worktrees();
        if worktrees.carries.len() >= MAX_CARRIES {
            worktrees.carries.clear();
        }
        worktrees.carries.insert(key, Arc::clone(&maps));
        maps
    }

    /// The innermost symbols that `lines` of `text` (the text of `file`) touch, as the code
    /// index parses the text (keeping its analysis by content, a large text parsed in its
    /// worker).
    pub fn symbols_on_lines(&self, file: &str, text: &str, lines: &[(i64, i64)]) -> Vec<String> {
        if lines.is_empty() {
            return Vec::new();
        }
        let found = self.index.text_symbols(file, text);
        let spans: Vec<(&str, usize, usize)> = found
            .symbols
            .iter()
            .map(|s| (s.qualified.as_str(), s.start, s.end))
            .collect();
        crate::analysis::innermost_spans_on_lines(&spans, text, lines)
    }

    /// Takes in the changes of the worktree at `root` as git reads them (14.4): each file's
    /// lines merged into regions (13.1) and named by the symbols they touch, then
    /// [`Coord::observe_worktree`].
    pub fn observe_worktree_changes(
        &self,
        root: &str,
        label: &str,
        files: Vec<ChangedFile>,
    ) -> Result<()> {
        let files = files
            .into_iter()
            .map(|changed| {
                let symbols = match (&changed.current, &changed.lines) {
                    (Some(text), Some(lines)) => self.symbols_on_lines(&changed.file, text, lines),
                    _ => Vec::new(),
                };
                let regions = changed.lines.map(|lines| {
                    super::regions::merge(
                        lines
                            .into_iter()
                            .map(|(first, last)| LineRegion::new(first, last))
                            .collect(),
                    )
                });
                ObservedFile {
                    file: changed.file,
                    regions,
                    symbols,
                    base: changed.base,
                    current: changed.current,
                }
            })
            .collect();
        self.observe_worktree(root, label, files)
    }

    /// Takes in the changes of the worktree at `root` (14.4): `files` are all of them now;
    /// `label` names the worktree in the intents' description (its branch, else its path).
    /// Lines already covered by a live session's observed regions in that worktree stay
    /// with that session's intent.
    pub fn observe_worktree(
        &self,
        root: &str,
        label: &str,
        files: Vec<ObservedFile>,
    ) -> Result<()> {
        let session = worktree_session(root);
        let origin = self.origin_of_root(Some(root));
        {
            let mut worktrees = self.worktrees();
            worktrees.texts.retain(|(o, _), _| *o != origin);
            for file in &files {
                if let Some(current) = &file.current {
                    worktrees.texts.insert(
                        (origin.clone(), file.file.clone()),
                        FileTexts {
                            base: file.base.clone(),
                            current: Arc::clone(current),
                        },
                    );
                }
            }
        }
        let mut wanted: HashMap<String, Option<Vec<LineRegion>>> = HashMap::new();
        let mut symbols: HashMap<String, Vec<String>> = HashMap::new();
        for file in files {
            symbols.insert(file.file.clone(), file.symbols);
            if let Some(current) = &file.current {
                // The regions observed there so far (this worktree's among them) become lines
                // of the text read now, the text the new regions are lines of (13.3).
                self.follow_text_of(&origin, &file.file, current)?;
            }
            let regions = match (file.regions, &file.current) {
                (Some(regions), Some(current)) => {
                    let left = self.uncovered(&origin, &session, &file.file, current, regions)?;
                    if left.is_empty() {
                        continue;
                    }
                    Some(left)
                }
                _ => None,
            };
            wanted.insert(file.file, regions);
        }
        let live = self.live_intents_of(&session)?;
        let description = format!("worktree {label}");
        let now = self.clock.now_ms();
        let mut kept = HashSet::new();
        self.store.write(|w| {
            for intent in &live {
                let file = intent.files.trim_matches(',').to_owned();
                match wanted.get(&file) {
                    Some(regions) if kept.insert(file.clone()) => {
                        if intent.description != description {
                            // The branch was renamed (or checked out): the description
                            // names the worktree as it is now.
                            w.set_intent_description(&intent.id, &description)?;
                        }
                        let touched = symbols.get(&file).cloned().unwrap_or_default();
                        let listed =
                            serde_json::to_string(&touched).unwrap_or_else(|_| "[]".to_owned());
                        if intent.regions != *regions || intent.symbols != listed {
                            w.set_intent_regions(&intent.id, regions.as_deref())?;
                            w.set_intent_symbols(&intent.id, &listed)?;
                            let shown = regions.as_deref().map(regions_json);
                            events::append(
                                w,
                                now,
                                EventKind::IntentUpdated,
                                Some(&session),
                                &intent.id,
                                json!({ "regions": shown, "symbols": touched }),
                            )?;
                        }
                    }
                    _ => resolve(w, &session, intent, now)?,
                }
            }
            Ok::<_, super::CoordError>(())
        })?;
        let mut new: Vec<(String, Option<Vec<LineRegion>>)> = wanted
            .into_iter()
            .filter(|(file, _)| !kept.contains(file))
            .collect();
        new.sort_by(|a, b| a.0.cmp(&b.0));
        for (file, regions) in new {
            let touched = symbols.remove(&file).unwrap_or_default();
            self.declare_worktree_intent(&session, &description, &file, regions, touched)?;
        }
        Ok(())
    }

    /// `regions` of `file` in the worktree of `origin` without the lines a live session's
    /// observed intent there already covers (its regions, as lines of `current`).
    fn uncovered(
        &self,
        origin: &Origin,
        session: &str,
        file: &str,
        current: &str,
        regions: Vec<LineRegion>,
    ) -> Result<Vec<LineRegion>> {
        let theirs: Vec<RangeHit> = self
            .live_regions_of(origin, file)?
            .into_iter()
            .filter(|row| row.session_id != session)
            .collect();
        if theirs.is_empty() {
            return Ok(regions);
        }
        let covered: Vec<LineRegion> = self
            .regions_of_origin(origin, file, current, theirs, Upkeep::Store)?
            .into_iter()
            .flat_map(|r| r.regions.unwrap_or_default())
            .collect();
        Ok(subtract(&regions, &covered))
    }

    /// Declares the observed work of a worktree on one file as an `active` intent.
    fn declare_worktree_intent(
        &self,
        session: &str,
        description: &str,
        file: &str,
        regions: Option<Vec<LineRegion>>,
        symbols: Vec<String>,
    ) -> Result<()> {
        let declaration = Declaration {
            description: description.to_owned(),
            files: vec![file.to_owned()],
            distinct_symbols: symbols.clone(),
            symbols,
            kind: IntentKind::Worktree,
        };
        let resolution = Coord::observed_resolution(file);
        self.store_intent(
            session,
            &declaration,
            &resolution,
            regions,
            &[],
            IntentStatus::Active,
        )?;
        Ok(())
    }

    /// The declared and active intents of `session`.
    fn live_intents_of(&self, session: &str) -> Result<Vec<Intent>> {
        Ok(self.store.read(|r| {
            r.intents(&IntentFilter {
                session_id: Some(session),
                file: None,
                status: None,
            })
        })?)
    }

    /// Resolves every live intent of the worktree at `root` (it was removed, or the
    /// repository has one worktree again).
    pub fn release_worktree(&self, root: &str) -> Result<()> {
        let session = worktree_session(root);
        let origin = self.origin_of_root(Some(root));
        self.worktrees().texts.retain(|(o, _), _| *o != origin);
        let live = self.live_intents_of(&session)?;
        if live.is_empty() {
            return Ok(());
        }
        let now = self.clock.now_ms();
        self.store.write(|w| {
            for intent in &live {
                resolve(w, &session, intent, now)?;
            }
            Ok::<_, super::CoordError>(())
        })
    }

    /// The observed work of the worktree at `root` (14.4), per file with its current text:
    /// what the forecast weighs for `related` (14.5).
    pub fn worktree_files(&self, root: &str) -> Result<Vec<WorktreeFile>> {
        let session = worktree_session(root);
        let origin = self.origin_of_root(Some(root));
        let live = self.live_intents_of(&session)?;
        let worktrees = self.worktrees();
        Ok(live
            .into_iter()
            .filter_map(|intent| {
                let file = intent.files.trim_matches(',').to_owned();
                let texts = worktrees.texts.get(&(origin.clone(), file.clone()))?;
                Some(WorktreeFile {
                    text: Arc::clone(&texts.current),
                    regions: intent.regions,
                    intent_id: intent.id,
                    session_id: session.clone(),
                    file,
                })
            })
            .collect())
    }

    /// The observed work of the worktree at `root` as the rules across worktrees weigh it
    /// ([`super::conflicts::related_across`]): per file, the symbols its regions touch and
    /// the calls of its text.
    pub fn worktree_work(&self, root: &str) -> Result<Vec<super::conflicts::FileWork>> {
        Ok(self
            .worktree_files(root)?
            .into_iter()
            .map(|work| {
                let lines: Vec<(i64, i64)> = work
                    .regions
                    .iter()
                    .flatten()
                    .map(|r| (r.start_line, r.end_line))
                    .collect();
                let found = self.index.text_symbols(&work.file, &work.text);
                let spans: Vec<(&str, usize, usize)> = found
                    .symbols
                    .iter()
                    .map(|s| (s.qualified.as_str(), s.start, s.end))
                    .collect();
                let touched = crate::analysis::innermost_spans_on_lines(&spans, &work.text, &lines);
                let calls = found
                    .calls
                    .iter()
                    .map(|(caller, callee)| {
                        let callee = super::conflicts::simple_name(callee).to_owned();
                        (caller.clone(), callee)
                    })
                    .collect();
                super::conflicts::FileWork {
                    file: work.file,
                    session_id: work.session_id,
                    intent_id: work.intent_id,
                    touched,
                    calls,
                }
            })
            .collect())
    }

    /// The roots of worktrees with live observed work (what a restarted daemon finds).
    pub fn worktrees_with_work(&self) -> Result<Vec<String>> {
        let intents = self.store.read(|r| r.intents(&IntentFilter::default()))?;
        let mut roots: Vec<String> = intents
            .iter()
            .filter(|i| i.kind == IntentKind::Worktree)
            .filter_map(|i| worktree_of_session(&i.session_id).map(str::to_owned))
            .collect();
        roots.sort();
        roots.dedup();
        Ok(roots)
    }
}

/// Marks a worktree's intent resolved, with its event.
fn resolve(w: &crate::store::Writer<'_>, session: &str, intent: &Intent, now: i64) -> Result<()> {
    w.set_intent_status(&intent.id, IntentStatus::Resolved, now)?;
    events::append(
        w,
        now,
        EventKind::IntentUpdated,
        Some(session),
        &intent.id,
        json!({"from": intent.status.as_str(), "to": IntentStatus::Resolved.as_str()}),
    )?;
    Ok(())
}

/// The lines of `regions` outside `covered` (both sorted and merged). A point of `regions`
/// stays unless a region of `covered` holds it or touches it; a point of `covered` covers
/// no line.
fn subtract(regions: &[LineRegion], covered: &[LineRegion]) -> Vec<LineRegion> {
    let mut left = Vec::new();
    for region in regions {
        if region.is_point() {
            let at = region.end_line;
            if !covered
                .iter()
                .any(|c| !c.is_point() && c.start_line <= at + 1 && at <= c.end_line)
            {
                left.push(*region);
            }
            continue;
        }
        let mut start = region.start_line;
        for cover in covered.iter().filter(|c| !c.is_point()) {
            if cover.end_line < start || cover.start_line > region.end_line {
                continue;
            }
            if cover.start_line > start {
                left.push(LineRegion::new(start, cover.start_line - 1));
            }
            start = start.max(cover.end_line + 1);
        }
        if start <= region.end_line {
            left.push(LineRegion::new(start, region.end_line));
        }
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(a: i64, b: i64) -> LineRegion {
        LineRegion::new(a, b)
    }

    #[test]
    fn subtracting_covered_lines() {
        assert_eq!(
            subtract(&[r(1, 10)], &[r(3, 4), r(8, 12)]),
            [r(1, 2), r(5, 7)]
        );
        assert_eq!(subtract(&[r(3, 4)], &[r(1, 9)]), []);
        assert_eq!(subtract(&[r(3, 4), r(9, 9)], &[]), [r(3, 4), r(9, 9)]);
        // A point (a deletion) stays unless a covered region holds or touches it; a covered
        // point covers no line.
        assert_eq!(subtract(&[r(5, 4)], &[r(1, 3)]), [r(5, 4)]);
        assert_eq!(subtract(&[r(5, 4)], &[r(1, 4)]), []);
        assert_eq!(subtract(&[r(3, 5)], &[r(4, 3)]), [r(3, 5)]);
    }

    #[test]
    fn line_maps_are_kept_by_content_not_by_address() {
        let h = crate::coord::testing::Harness::new();
        let text = |t: &str| -> Arc<str> { Arc::from(t) };
        let (from, base) = (text("a\nB\nc\n"), text("a\nb\nc\n"));
        let first = h.coord.carry_maps(Some(&from), &base, "a\nb\nc\nd\n");
        // The same texts in other allocations: the kept maps.
        let again =
            h.coord
                .carry_maps(Some(&text("a\nB\nc\n")), &text("a\nb\nc\n"), "a\nb\nc\nd\n");
        assert!(Arc::ptr_eq(&first, &again));
        // Another asking text of the same length, or another base: other maps.
        let other = h.coord.carry_maps(Some(&from), &base, "a\nb\nc\nx\n");
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(*other.to, *"a\nb\nc\nx\n");
        let rebased = h
            .coord
            .carry_maps(Some(&from), &text("a\nb\nC\n"), "a\nb\nc\nd\n");
        assert!(!Arc::ptr_eq(&first, &rebased));
    }

    #[test]
    fn worktree_sessions_name_their_root() {
        let session = worktree_session("/r/w1");
        assert_eq!(session, "worktree:/r/w1");
        assert_eq!(worktree_of_session(&session), Some("/r/w1"));
        assert_eq!(worktree_of_session("agent-1"), None);
    }
}
