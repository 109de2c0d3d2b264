//! Every change of the tree has an owner (docs/protocol.md 15.1–15.3, 15.7): tool-call windows,
//! the attribution of changes seen on disk, and the owner map of every file with uncommitted
//! work, per worktree.
//!
//! A harness's pre-tool hook opens a *window* for each tool call the gate lets through
//! ([`Coord::open_window`]); its post-tool hook closes it ([`Coord::close_window`]). The
//! daemon's tree observer hands in every change it sees on disk ([`Coord::attribute_change`]):
//! a change no recorded edit explains is attributed to the window that names the file, else to
//! the sessions of the open windows that name no file (a shell command, a notebook, another
//! server's tool), else to nobody — the session `unowned:<worktree root>`. The changed lines
//! join each owner's observed intent as a recorded edit's would (13), and the file's
//! [`FileOwners`] records them line by line, which is what `work.owners`, `work.changes`,
//! `wit commit` and the snapshots read.
//!
//! Windows and owner maps live in this daemon's memory: they describe its machine's trees.

use std::collections::{BTreeMap, HashMap};
use std::sync::{MutexGuard, PoisonError};

use super::conflicts::{Others, Standing};
use super::owner_map::{FileOwners, Mark, OwnedHunk, OwnedLines};
use super::paths::normalize;
use super::preflight::spans::{diff_lines, Applied};
use super::regions::{regions_of_changes, Lines};
use super::workmap::Observed;
use super::worktree_work::Origin;
use super::{Coord, CoordError, LineRegion, Result, Vantage, MAX_SESSION_ID_BYTES};
use crate::store::IntentFilter;

/// The session of a worktree's unowned work is this prefix and the worktree's root (15.3).
pub const UNOWNED_SESSION_PREFIX: &str = "unowned:";

/// The session holding the unowned work of the worktree at `root`.
pub fn unowned_session(root: &str) -> String {
    format!("{UNOWNED_SESSION_PREFIX}{root}")
}

/// Whether `session_id` is a worktree's unowned work.
pub fn is_unowned_session(session_id: &str) -> bool {
    session_id.starts_with(UNOWNED_SESSION_PREFIX)
}

/// How long a window stays open without `work.end` (15.2), in ms.
pub const DEFAULT_WINDOW_TTL_MS: i64 = 600_000;
/// The longest window.
pub const MAX_WINDOW_TTL_MS: i64 = 86_400_000;
/// The most windows open at once; past it the oldest closes.
const MAX_WINDOWS: usize = 4_096;
/// The longest tool name kept.
const MAX_TOOL_BYTES: usize = 200;

/// One open tool-call window.
#[derive(Debug, Clone)]
struct Window {
    session_id: String,
    /// The worktree the call acts in (the request's).
    root: String,
    /// The file a file-edit tool writes (normalised).
    file: Option<String>,
    /// The texts its edits write (empty: any change of the file is its own).
    texts: Vec<String>,
    expires_at_ms: i64,
    /// What was attributed to it, per file.
    changed: BTreeMap<String, Vec<LineRegion>>,
    /// Closed (`work.end`) before the observer answered this flush: still open to what the
    /// observer reads up to it, then gone ([`Coord::retire_closed_windows`]).
    closed_at_flush: Option<u64>,
}

/// One file's uncommitted work, as the tree observer last saw it.
#[derive(Debug, Clone)]
struct TreeFile {
    owners: FileOwners,
    /// Whether the file exists on disk.
    exists: bool,
    /// Whether HEAD has the file.
    in_head: bool,
    /// What the tree observer last read on disk ([`disk_digest`]); `None` until it reads the
    /// file, when the disk is taken to hold HEAD's text. A recorded edit moves the owner map
    /// ahead of the disk: until the disk changes, nothing happened there.
    disk_seen: Option<u64>,
}

/// The digest of a file's state on disk: its bytes, or absence.
fn disk_digest(bytes: Option<&[u8]>) -> u64 {
    match bytes {
        Some(bytes) => xxhash_rust::xxh3::xxh3_64(bytes),
        None => u64::MAX,
    }
}

impl TreeFile {
    /// Whether nothing of it is uncommitted.
    fn is_clean(&self) -> bool {
        self.owners.is_clean() && self.exists == self.in_head
    }
}

/// The windows and owner maps of the trees this daemon serves.
#[derive(Debug, Default)]
pub struct Ownership {
    windows: HashMap<String, Window>,
    /// No open window expires before this (a lower bound: closing one leaves it as it was),
    /// so that opening a window, or taking in a change, does not walk every open window to
    /// drop the expired ones each time: with a harness that has no post-tool hook, or
    /// `wit-bench`'s gate, thousands stay open until they expire.
    earliest_expiry_ms: i64,
    /// Per (worktree root, file).
    files: HashMap<(String, String), TreeFile>,
    next_window: u64,
    /// Per worktree root: the (session, file) pairs whose changes were attributed or
    /// recorded since the work snapshots last looked ([`Coord::take_touched`]).
    touched: HashMap<String, std::collections::BTreeSet<(String, String)>>,
}

/// One file's changes against HEAD with their owners, as `work.changes` answers.
#[derive(Debug, Clone)]
pub struct FileChanges {
    /// The file, relative to its worktree's root.
    pub file: String,
    /// Not valid UTF-8: one file-level hunk.
    pub binary: bool,
    /// Whether the file still exists (a deleted file's hunks delete every line).
    pub exists: bool,
    /// The hunks, in order, each with its owners and, seen from an asking session, whose.
    pub hunks: Vec<SeenHunk>,
}

/// A hunk of the owner map seen from a session (the vantage of `work.changes`).
#[derive(Debug, Clone)]
pub struct SeenHunk {
    /// The hunk.
    pub hunk: OwnedHunk,
    /// Whether it is the asking agent's own: an owner is the asking session or a live session
    /// of the same agent (`conflicts::Standing::Mine`; a dead session's lines are nobody's
    /// own); `None` without an asking session.
    pub mine: Option<bool>,
    /// The live owners that are not the asking agent's (`unowned:<root>` for nobody's).
    pub others: Vec<String>,
}

/// One file's owners, as `work.owners` answers.
#[derive(Debug, Clone)]
pub struct FileOwnersView {
    /// The file.
    pub file: String,
    /// Not valid UTF-8: file-level.
    pub binary: bool,
    /// The owned runs of lines (a binary file's: one run over its whole text, lines 1..=0).
    pub lines: Vec<OwnedLines>,
}

/// A change seen on disk, as the tree observer hands it in.
#[derive(Debug, Clone, Copy)]
pub struct DiskChange<'a> {
    /// The worktree's root.
    pub root: &'a str,
    /// The file, relative to it.
    pub file: &'a str,
    /// Its bytes in HEAD (`None`: not in HEAD).
    pub head: Option<&'a [u8]>,
    /// Its bytes now (`None`: deleted).
    pub now: Option<&'a [u8]>,
}

impl Coord {
    fn ownership(&self) -> MutexGuard<'_, Ownership> {
        self.ownership
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a tool call's window (15.2, `work.begin`) for `at`'s session in its worktree;
    /// its id.
    pub fn open_window(
        &self,
        at: &Vantage,
        tool: &str,
        file: Option<&str>,
        texts: Vec<String>,
        ttl_ms: Option<i64>,
    ) -> Result<String> {
        let session_id = at.session().unwrap_or_default();
        if session_id.is_empty() || session_id.len() > MAX_SESSION_ID_BYTES {
            return Err(CoordError::invalid("sessionId", "1 to 256 bytes"));
        }
        if tool.is_empty() || tool.len() > MAX_TOOL_BYTES {
            return Err(CoordError::invalid("tool", "1 to 200 bytes"));
        }
        let ttl = ttl_ms.unwrap_or(DEFAULT_WINDOW_TTL_MS);
        if !(1..=MAX_WINDOW_TTL_MS).contains(&ttl) {
            return Err(CoordError::invalid("ttlMs", "1 to 86400000"));
        }
        let file = file
            .map(|f| normalize(f).map_err(|e| CoordError::invalid("file", e.to_string())))
            .transpose()?;
        // A window's sessionId is the acting session's: a sign of life (docs/protocol.md 7.2).
        self.acting(at)?;
        let now = self.clock.now_ms();
        let root = at.root().to_owned();
        let mut ownership = self.ownership();
        ownership.drop_expired_windows(now);
        if ownership.windows.len() >= MAX_WINDOWS {
            let oldest = ownership
                .windows
                .iter()
                .min_by_key(|(_, w)| w.expires_at_ms)
                .map(|(id, _)| id.clone());
            if let Some(id) = oldest {
                ownership.windows.remove(&id);
            }
        }
        ownership.next_window += 1;
        let id = format!("w{}-{}", ownership.next_window, self.ids.next_id());
        let expires_at_ms = now.saturating_add(ttl);
        ownership.earliest_expiry_ms = ownership.earliest_expiry_ms.min(expires_at_ms);
        ownership.windows.insert(
            id.clone(),
            Window {
                session_id: session_id.to_owned(),
                root,
                file,
                texts,
                expires_at_ms,
                changed: BTreeMap::new(),
                closed_at_flush: None,
            },
        );
        Ok(id)
    }

    /// Closes a window (`work.end`): what was attributed to its session while it was open.
    /// An unknown, expired or foreign window closes nothing and answers nothing. With
    /// `unread` (a flush the observer did not answer in time), the window stays open to the
    /// changes the observer reads up to that flush, so they are still its session's.
    pub fn close_window(
        &self,
        session_id: &str,
        window_id: &str,
        unread: Option<u64>,
    ) -> Vec<(String, Vec<LineRegion>)> {
        // A sign of life (7.2), noted before the owner map is taken (no lock across the
        // store write); one that cannot be noted does not keep the window's change back.
        if let Err(error) = self.acting_session(session_id) {
            tracing::debug!(%error, "work.end's sign of life not noted");
        }
        let mut ownership = self.ownership();
        let window = match ownership.windows.get_mut(window_id) {
            Some(window) if window.session_id == session_id && window.closed_at_flush.is_none() => {
                window
            }
            _ => return Vec::new(),
        };
        if let Some(ticket) = unread {
            window.closed_at_flush = Some(ticket);
            return window
                .changed
                .iter()
                .map(|(file, regions)| (file.clone(), regions.clone()))
                .collect();
        }
        ownership
            .windows
            .remove(window_id)
            .map(|w| w.changed.into_iter().collect())
            .unwrap_or_default()
    }

    /// The observer has read every change up to flush `answered`: windows closed before it
    /// answered an earlier one are gone now.
    pub fn retire_closed_windows(&self, answered: u64) {
        self.ownership()
            .windows
            .retain(|_, w| w.closed_at_flush.is_none_or(|ticket| ticket > answered));
    }

    /// Closes every window of a session that ended.
    pub fn close_windows_of(&self, session_id: &str) {
        self.ownership()
            .windows
            .retain(|_, w| w.session_id != session_id);
    }

    /// Takes in a change seen on disk (15.3): unless it is the text the owner map already
    /// holds (a recorded edit's, or nothing new), its changed lines are attributed — to the
    /// window naming the file, else to every open window naming none, else to nobody — and
    /// join the owners' observed intents; a change back to HEAD's bytes resolves what the
    /// file's observed intents covered.
    pub fn attribute_change(&self, change: DiskChange<'_>) -> Result<()> {
        let _recording = self.recording();
        let key = (change.root.to_owned(), change.file.to_owned());
        let now_bytes = change.now.unwrap_or_default();
        let exists = change.now.is_some();
        let (before, owners) = {
            let mut ownership = self.ownership();
            let now_digest = disk_digest(change.now);
            if let Some(known) = ownership.files.get_mut(&key) {
                let seen = known.disk_seen.unwrap_or_else(|| disk_digest(change.head));
                known.disk_seen = Some(now_digest);
                if seen == now_digest {
                    // The disk did not change since the observer last read it (a recorded
                    // edit not written yet leaves the map ahead of it).
                    return Ok(());
                }
            }
            let known = ownership.files.get(&key);
            let before: Vec<u8> = match known {
                Some(known) => known.owners.current().to_vec(),
                None => change.head.unwrap_or_default().to_vec(),
            };
            let was = known.map_or(change.head.is_some(), |k| k.exists);
            if before == now_bytes && was == exists {
                return Ok(());
            }
            let now_ms = self.clock.now_ms();
            let written = written_lines(&before, now_bytes);
            let owners = ownership.owners_of_change(change.root, change.file, &written, now_ms);
            let touched = ownership.touched.entry(change.root.to_owned()).or_default();
            for owner in &owners {
                touched.insert((owner.clone(), change.file.to_owned()));
            }
            let entry = ownership
                .files
                .entry(key.clone())
                .or_insert_with(|| TreeFile {
                    owners: FileOwners::unchanged(change.head.unwrap_or_default().to_vec()),
                    exists: change.head.is_some(),
                    in_head: change.head.is_some(),
                    disk_seen: None,
                });
            entry.disk_seen = Some(now_digest);
            let mark_owners: Vec<String> = owners
                .iter()
                .filter(|s| !is_unowned_session(s))
                .cloned()
                .collect();
            entry
                .owners
                .apply(now_bytes, &Mark::new(&mark_owners, now_ms));
            entry.exists = exists;
            if entry.is_clean() {
                ownership.files.remove(&key);
            }
            (before, owners)
        };
        let origin = self.origin_for_root(change.root);
        let restored = change.now == change.head;
        if restored {
            return self.resolve_observed_in(&origin, change.file);
        }
        // While the repository has several worktrees, a worktree's unowned work is already
        // the intent of its `worktree:<root>` session (14.4): the owner map marks the lines
        // nobody's, and no second intent tells the same lines again.
        let owners: Vec<String> = if self.several_worktrees() {
            owners
                .into_iter()
                .filter(|s| !is_unowned_session(s))
                .collect()
        } else {
            owners
        };
        if owners.is_empty() {
            return Ok(());
        }
        match (std::str::from_utf8(&before), std::str::from_utf8(now_bytes)) {
            (Ok(before), Ok(now)) => {
                let applied = Applied::content(before, now);
                let regions = regions_of_changes(&applied.line_changes, &Lines::of(now));
                let lines: Vec<(i64, i64)> =
                    regions.iter().map(|r| (r.start_line, r.end_line)).collect();
                let touched = self.symbols_on_changed_lines(change.file, before, &applied, &lines);
                let observed = Observed {
                    file: change.file,
                    touched: &touched,
                    before,
                    applied: &applied,
                    file_level: !exists,
                };
                self.record_observed_by(&owners, &observed, &origin, false)?;
                self.note_in_windows(change.root, change.file, &owners, &regions);
            }
            _ => {
                self.record_file_level(&owners, change.file)?;
                self.note_in_windows(change.root, change.file, &owners, &[]);
            }
        }
        Ok(())
    }

    /// Takes in a file as the observer first finds it (a daemon start, a worktree that
    /// appeared): its changes predate the observer, so they are nobody's lines in the owner
    /// map and no intent tells them (it would claim to have seen them happen). A file the map
    /// already holds is left as it is.
    pub fn seed_change(&self, change: DiskChange<'_>) {
        if change.now == change.head {
            return;
        }
        let key = (change.root.to_owned(), change.file.to_owned());
        let now_ms = self.clock.now_ms();
        let mut ownership = self.ownership();
        if ownership.files.contains_key(&key) {
            return;
        }
        let mut owners = FileOwners::unchanged(change.head.unwrap_or_default().to_vec());
        owners.apply(change.now.unwrap_or_default(), &Mark::new(&[], now_ms));
        let tree = TreeFile {
            owners,
            exists: change.now.is_some(),
            in_head: change.head.is_some(),
            disk_seen: Some(disk_digest(change.now)),
        };
        if !tree.is_clean() {
            ownership.files.insert(key, tree);
        }
    }

    /// The origin (13, 14.5) a worktree root stands for.
    fn origin_for_root(&self, root: &str) -> Origin {
        if !self.several_worktrees() {
            return None;
        }
        self.origin_of_root(Some(root))
    }

    /// Adds the attributed lines to the open windows of their owners in that worktree.
    fn note_in_windows(&self, root: &str, file: &str, owners: &[String], regions: &[LineRegion]) {
        let mut ownership = self.ownership();
        let now = self.clock.now_ms();
        for window in ownership.windows.values_mut() {
            if window.root == root
                && window.expires_at_ms > now
                && owners.contains(&window.session_id)
            {
                let kept = window.changed.entry(file.to_owned()).or_default();
                kept.extend_from_slice(regions);
                *kept = super::regions::merge(std::mem::take(kept));
            }
        }
    }

    /// Records a change of a binary file (15.4): file-level observed work of each owner that
    /// has none on the file yet.
    fn record_file_level(&self, owners: &[String], file: &str) -> Result<()> {
        for session_id in owners {
            let has = self.store.read(|r| {
                r.intents(&IntentFilter {
                    session_id: Some(session_id),
                    file: Some(file),
                    status: None,
                })
            })?;
            if has.iter().any(|i| i.status.is_live()) {
                continue;
            }
            let declaration = super::intents::Declaration::observed(file, &[]);
            let resolution = Coord::observed_resolution(file);
            let intent = self.store_intent(
                session_id,
                &declaration,
                &resolution,
                None,
                &[],
                super::IntentStatus::Declared,
            )?;
            self.update_intent(&intent.id, session_id, super::IntentStatus::Active)?;
        }
        Ok(())
    }

    /// Resolves the observed intents on `file` in `origin`'s worktree: the file is HEAD's
    /// again (15.3).
    fn resolve_observed_in(&self, origin: &Origin, file: &str) -> Result<()> {
        let rows = self.live_regions_of(origin, file)?;
        for row in rows {
            self.update_intent(
                &row.intent_id,
                &row.session_id,
                super::IntentStatus::Resolved,
            )?;
        }
        Ok(())
    }

    /// A clean edit recorded through `edit.preflight` (15.1): the owner map takes it at once,
    /// so that when the editor writes it the observer finds nothing new. A file the map does
    /// not hold yet is taken to be HEAD's text before the edit (the observer holds every file
    /// that changed on disk). The preflight's line diff of the edit (`applied.line_ops`) is
    /// the map's, so it is not made again.
    pub(super) fn note_recorded_edit(
        &self,
        at: &Vantage,
        session_id: &str,
        file: &str,
        before: &str,
        applied: Applied,
    ) {
        let key = (at.root().to_owned(), file.to_owned());
        let now = self.clock.now_ms();
        let mut ownership = self.ownership();
        ownership
            .touched
            .entry(key.0.clone())
            .or_default()
            .insert((session_id.to_owned(), file.to_owned()));
        let entry = ownership
            .files
            .entry(key.clone())
            .or_insert_with(|| TreeFile {
                owners: FileOwners::unchanged(before.as_bytes().to_vec()),
                exists: true,
                in_head: !before.is_empty(),
                disk_seen: None,
            });
        if entry.owners.current() != before.as_bytes() {
            entry.owners.apply(before.as_bytes(), &Mark::new(&[], now));
        }
        // The map's text is `before` now, the text the preflight's diff starts from.
        let mark = Mark::new(&[session_id.to_owned()], now);
        match applied.line_ops {
            Some((ops, _)) => entry
                .owners
                .apply_diff(applied.text.into_bytes(), &ops, &mark),
            None => entry.owners.apply(applied.text.as_bytes(), &mark),
        }
        entry.exists = true;
        if entry.is_clean() {
            ownership.files.remove(&key);
        }
    }

    /// The owner map of every file with uncommitted work in `at`'s worktree (or only
    /// `files`), seen from `at`'s session when it names one (`work.changes`).
    pub fn owned_changes(&self, at: &Vantage, files: &[String]) -> Result<Vec<FileChanges>> {
        if at.session().is_some() {
            // The asking session acts: a sign of life (7.2).
            self.acting(at)?;
        }
        let root = at.root().to_owned();
        let wanted: Vec<String> = files
            .iter()
            .map(|f| normalize(f).map_err(|e| CoordError::invalid("files", e.to_string())))
            .collect::<Result<_>>()?;
        // Each file's hunks are read under the lock: a walk of its map, where a copy of the
        // map would copy the file's text twice over.
        let mut found: Vec<(String, Vec<OwnedHunk>, bool, bool)> = {
            let ownership = self.ownership();
            ownership
                .files
                .iter()
                .filter(|((r, f), _)| *r == root && (wanted.is_empty() || wanted.contains(f)))
                .map(|((_, f), t)| (f.clone(), t.owners.hunks(), t.owners.is_binary(), t.exists))
                .collect()
        };
        found.sort_by(|a, b| a.0.cmp(&b.0));
        let others = at.session().map(|_| Others::of(self, at)).transpose()?;
        if let Some(view) = &others {
            let owners = found.iter().flat_map(|(_, owned, ..)| owned);
            view.learn(owners.flat_map(|h| h.mark.owners.iter().map(String::as_str)))?;
        }
        let unowned = unowned_session(&root);
        let mut out = Vec::with_capacity(found.len());
        for (file, owned, binary, exists) in found {
            let mut hunks = Vec::new();
            for hunk in owned {
                let (mine, others) = match &others {
                    None => (None, Vec::new()),
                    Some(view) => {
                        let mut mine = false;
                        let mut theirs = Vec::new();
                        for owner in &hunk.mark.owners {
                            // A dead session's lines are neither the caller's nor a live
                            // agent's (`Standing::Aside`).
                            match view.standing(owner)? {
                                Standing::Mine => mine = true,
                                Standing::Theirs => theirs.push(owner.clone()),
                                Standing::Aside => {}
                            }
                        }
                        if hunk.mark.owners.is_empty() {
                            theirs.push(unowned.clone());
                        }
                        (Some(mine), theirs)
                    }
                };
                hunks.push(SeenHunk { hunk, mine, others });
            }
            out.push(FileChanges {
                file,
                binary,
                exists,
                hunks,
            });
        }
        Ok(out)
    }

    /// The owners of `file`'s uncommitted lines in `at`'s worktree (`work.owners`).
    pub fn file_owners(&self, at: &Vantage, file: &str) -> Result<FileOwnersView> {
        let file = normalize(file).map_err(|e| CoordError::invalid("file", e.to_string()))?;
        let root = at.root().to_owned();
        let ownership = self.ownership();
        let Some(tree) = ownership.files.get(&(root, file.clone())) else {
            return Ok(FileOwnersView {
                file,
                binary: false,
                lines: Vec::new(),
            });
        };
        let binary = tree.owners.is_binary();
        let lines = match tree.owners.file_mark() {
            Some(mark) => vec![OwnedLines {
                start_line: 1,
                end_line: 0,
                mark: mark.clone(),
            }],
            None => tree.owners.lines(),
        };
        Ok(FileOwnersView {
            file,
            binary,
            lines,
        })
    }

    /// The (session, file) pairs of the worktree at `root` whose changes were attributed or
    /// recorded since the last call: what the work snapshots take in anew (a session's lines
    /// that vanished by somebody else's change stay in its snapshot).
    pub fn take_touched(&self, root: &str) -> std::collections::BTreeSet<(String, String)> {
        self.ownership().touched.remove(root).unwrap_or_default()
    }

    /// Every owner's uncommitted work in the worktree at `root` (15.5): per session (nobody's
    /// as `unowned:<root>`), per file, HEAD's bytes with exactly that owner's changes applied
    /// (`None`: the owner deleted the file). A binary file's work is the whole file, each of
    /// its owners'.
    pub fn work_of_owners(
        &self,
        root: &str,
    ) -> BTreeMap<String, BTreeMap<String, Option<Vec<u8>>>> {
        let unowned = unowned_session(root);
        let mut out: BTreeMap<String, BTreeMap<String, Option<Vec<u8>>>> = BTreeMap::new();
        let ownership = self.ownership();
        for ((r, file), tree) in &ownership.files {
            if r != root {
                continue;
            }
            let named = |owners: &[String]| -> Vec<String> {
                if owners.is_empty() {
                    vec![unowned.clone()]
                } else {
                    owners.to_vec()
                }
            };
            if let Some(mark) = tree.owners.file_mark() {
                let bytes = tree.exists.then(|| tree.owners.current().to_vec());
                for owner in named(&mark.owners) {
                    out.entry(owner)
                        .or_default()
                        .insert(file.clone(), bytes.clone());
                }
                continue;
            }
            let hunks = tree.owners.hunks();
            let hunk_owners: Vec<Vec<String>> =
                hunks.iter().map(|h| named(&h.mark.owners)).collect();
            let mut owners: Vec<&String> = hunk_owners.iter().flatten().collect();
            owners.sort();
            owners.dedup();
            for owner in owners {
                let mine: Vec<OwnedHunk> = hunks
                    .iter()
                    .zip(&hunk_owners)
                    .filter(|(_, by)| by.contains(owner))
                    .map(|(h, _)| h.clone())
                    .collect();
                let bytes = if !tree.exists && mine.len() == hunks.len() {
                    None
                } else {
                    Some(super::owner_map::compose(
                        tree.owners.base(),
                        tree.owners.current(),
                        &mine,
                        |_| true,
                    ))
                };
                out.entry(owner.clone())
                    .or_default()
                    .insert(file.clone(), bytes);
            }
        }
        out
    }

    /// The files of the worktree at `root` the owner map holds (what the observer compares
    /// after a checkout or a commit moved HEAD).
    pub fn owned_files(&self, root: &str) -> Vec<String> {
        let mut files: Vec<String> = self
            .ownership()
            .files
            .keys()
            .filter(|(r, _)| r == root)
            .map(|(_, f)| f.clone())
            .collect();
        files.sort();
        files
    }

    /// Takes HEAD's new bytes of `file` (a commit, a checkout): the map is rebuilt against
    /// them, each remaining change keeping the owners of the lines it wrote, and dropped
    /// when nothing is left uncommitted.
    pub fn rebase_owner_map(&self, root: &str, file: &str, head: Option<&[u8]>) {
        let key = (root.to_owned(), file.to_owned());
        let mut ownership = self.ownership();
        let Some(tree) = ownership.files.remove(&key) else {
            return;
        };
        if tree.owners.base() == head.unwrap_or_default() && tree.in_head == head.is_some() {
            // HEAD's bytes did not change: nothing to rebase.
            ownership.files.insert(key, tree);
            return;
        }
        let base = head.unwrap_or_default().to_vec();
        let current = tree.owners.current().to_vec();
        if current == base && tree.exists == head.is_some() {
            return;
        }
        let old_lines = tree.owners.lines();
        let rebuilt = FileOwners::rebuilt(base, &current, |new, _| {
            // The owners of the old map's lines among the ones this change wrote.
            let (first, last) = (new.start + 1, new.end);
            old_lines
                .iter()
                .filter(|l| {
                    l.start_line <= last.max(first) && first <= l.end_line.max(l.start_line)
                })
                .fold(Mark::default(), |acc, l| Mark {
                    owners: {
                        let mut o = acc.owners.clone();
                        o.extend(l.mark.owners.iter().cloned());
                        o.sort();
                        o.dedup();
                        o
                    },
                    at_ms: acc.at_ms.max(l.mark.at_ms),
                })
        });
        ownership.files.insert(
            key,
            TreeFile {
                owners: rebuilt,
                exists: tree.exists,
                in_head: head.is_some(),
                disk_seen: tree.disk_seen,
            },
        );
    }
}

impl Window {
    /// Whether this file-edit window's edits explain a change that wrote `written` (15.2):
    /// every written line is in the text of one of its edits.
    fn explains(&self, written: &[String]) -> bool {
        if self.texts.is_empty() {
            return true;
        }
        if written.is_empty() {
            // A change that wrote no line (a deletion) is an edit's only when an edit writes
            // nothing either.
            return self.texts.iter().any(|text| text.trim().is_empty());
        }
        written
            .iter()
            .all(|line| self.texts.iter().any(|text| text.contains(line.as_str())))
    }
}

/// The non-blank lines a change from `before` to `after` wrote, trimmed (none for bytes that
/// are not text).
fn written_lines(before: &[u8], after: &[u8]) -> Vec<String> {
    let (Ok(before), Ok(after)) = (std::str::from_utf8(before), std::str::from_utf8(after)) else {
        return Vec::new();
    };
    diff_lines(before, after)
        .iter()
        .flat_map(|change| after[change.new.0..change.new.1].lines())
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Ownership {
    /// Drops the windows expired at `now_ms`; walks them only once the earliest expiry has
    /// come.
    fn drop_expired_windows(&mut self, now_ms: i64) {
        if now_ms < self.earliest_expiry_ms {
            return;
        }
        self.windows.retain(|_, w| w.expires_at_ms > now_ms);
        self.earliest_expiry_ms = self
            .windows
            .values()
            .map(|w| w.expires_at_ms)
            .min()
            .unwrap_or(i64::MAX);
    }

    /// Whose change on disk this is (15.3): the sessions of the live windows in `root` naming
    /// `file`, else of those naming no file, else the worktree's unowned session.
    fn owners_of_change(
        &mut self,
        root: &str,
        file: &str,
        written: &[String],
        now_ms: i64,
    ) -> Vec<String> {
        self.drop_expired_windows(now_ms);
        let open: Vec<&Window> = self.windows.values().filter(|w| w.root == root).collect();
        let naming: Vec<String> = open
            .iter()
            .filter(|w| w.file.as_deref() == Some(file) && w.explains(written))
            .map(|w| w.session_id.clone())
            .collect();
        let mut owners = if naming.is_empty() {
            open.iter()
                .filter(|w| w.file.is_none())
                .map(|w| w.session_id.clone())
                .collect()
        } else {
            naming
        };
        owners.sort();
        owners.dedup();
        if owners.is_empty() {
            owners.push(unowned_session(root));
        }
        owners
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::coord::testing::Harness;

    const BEFORE: &str = "a\nb\nc\nd\ne\nf\ng\n";

    /// `session` opens a shell command's window (naming no file); its id.
    fn open_shell_window(h: &Harness, session: &str) -> String {
        open_shell_window_for(h, session, None)
    }

    /// [`open_shell_window`] that closes by itself after `ttl_ms` (the default when `None`).
    fn open_shell_window_for(h: &Harness, session: &str, ttl_ms: Option<i64>) -> String {
        h.coord
            .open_window(
                &h.coord.vantage(Some(session)),
                "Bash",
                None,
                Vec::new(),
                ttl_ms,
            )
            .unwrap()
    }

    /// A daemon where `session` is registered with a live harness process.
    fn with_live_session(session: &str) -> Harness {
        let h = Harness::new();
        h.processes.start(50, 7);
        h.coord
            .register_with_pulse(session, session, Some(50), None)
            .unwrap();
        h
    }

    /// f.txt changed on disk from [`BEFORE`] (in HEAD) to `to`.
    fn change_to(to: &str) -> DiskChange<'_> {
        DiskChange {
            root: "",
            file: "f.txt",
            head: Some(BEFORE.as_bytes()),
            now: Some(to.as_bytes()),
        }
    }

    /// The owners of line `n` in `owners`.
    fn owners_of_line(owners: &FileOwnersView, n: usize) -> Option<Vec<String>> {
        owners
            .lines
            .iter()
            .find(|l| l.start_line <= n && n <= l.end_line)
            .map(|l| l.mark.owners.clone())
    }

    /// `session` runs a shell command (a window naming no file) that turns `from` into `to`.
    fn shell_change(h: &Harness, session: &str, from: &str, to: &str) {
        let window = open_shell_window(h, session);
        h.coord.attribute_change(change_to(to)).unwrap();
        assert!(from != to);
        h.coord.close_window(session, &window, None);
    }

    /// A window that outlived its `ttlMs` explains no change: a change after it expired is
    /// nobody's (whether or not another window was opened since), one before it is its
    /// session's.
    #[test]
    fn an_expired_window_is_gone_for_the_next_change() {
        let h = with_live_session("brief");
        let short = |ttl: i64| open_shell_window_for(&h, "brief", Some(ttl));
        let change = |to: &str| {
            h.coord.attribute_change(change_to(to)).unwrap();
            h.coord
                .file_owners(&h.coord.vantage(None), "f.txt")
                .unwrap()
        };
        short(1_000);
        short(5_000);
        let owners = change("A\nb\nc\nd\ne\nf\ng\n");
        assert_eq!(owners_of_line(&owners, 1), Some(vec!["brief".to_owned()]));
        // The first window expires; the second still explains a change.
        h.clock.advance(2_000);
        let owners = change("A\nB\nc\nd\ne\nf\ng\n");
        assert_eq!(owners_of_line(&owners, 2), Some(vec!["brief".to_owned()]));
        // Both expired: the next change is nobody's, and so after a window opened meanwhile
        // that expired too.
        h.clock.advance(4_000);
        short(10);
        h.clock.advance(20);
        let owners = change("A\nB\nC\nd\ne\nf\ng\n");
        assert_ne!(owners_of_line(&owners, 3), Some(vec!["brief".to_owned()]));
        assert_eq!(owners_of_line(&owners, 1), Some(vec!["brief".to_owned()]));
    }

    /// A `work.end` whose flush the observer did not answer in time: the change it reads
    /// afterwards is still the window's session's, until that flush is answered.
    #[test]
    fn a_window_closed_before_the_observer_caught_up_keeps_its_change() {
        let h = with_live_session("slow");
        let window = open_shell_window(&h, "slow");
        assert!(h.coord.close_window("slow", &window, Some(7)).is_empty());
        // Closed once: a second work.end answers nothing.
        assert!(h.coord.close_window("slow", &window, None).is_empty());
        h.coord
            .attribute_change(change_to(
                "a
B
c
d
e
f
g
",
            ))
            .unwrap();
        let owners = h
            .coord
            .file_owners(&h.coord.vantage(None), "f.txt")
            .unwrap();
        assert!(
            owners.lines.iter().any(|l| l.mark.owners == ["slow"]),
            "{:?}",
            owners.lines
        );
        // The observer answers flush 7: the window is gone, later changes are nobody's.
        h.coord.retire_closed_windows(7);
        h.coord
            .attribute_change(change_to(
                "a
B
c
D
e
f
g
",
            ))
            .unwrap();
        let owners = h
            .coord
            .file_owners(&h.coord.vantage(None), "f.txt")
            .unwrap();
        let of_line = |n: usize| owners_of_line(&owners, n);
        assert_eq!(of_line(2), Some(vec!["slow".to_owned()]));
        assert_ne!(of_line(4), Some(vec!["slow".to_owned()]));
    }

    /// "Mine" in `work.changes` is the asking session's and its agent's live sessions' work;
    /// a dead session's lines are nobody's: neither the asker's (so `wit commit` does not take
    /// them) nor a live agent's.
    #[test]
    fn a_dead_sessions_lines_are_neither_mine_nor_anothers() {
        let h = Harness::new();
        h.processes.start(50, 7); // alice's harness: two sessions
        h.processes.start(60, 8); // bob's
        h.processes.start(70, 9); // carol's, which will exit
        for (agent, session, pid) in [
            ("alice", "alice", 50),
            ("alice", "alice-mcp", 50),
            ("bob", "bob", 60),
            ("carol", "carol", 70),
        ] {
            h.coord
                .register_with_pulse(agent, session, Some(pid), None)
                .unwrap();
        }
        let one = "A\nb\nc\nd\ne\nf\ng\n";
        let two = "A\nb\nC\nd\ne\nf\ng\n";
        let three = "A\nb\nC\nd\nE\nf\ng\n";
        let four = "A\nb\nC\nd\nE\nf\nG\n";
        shell_change(&h, "alice-mcp", BEFORE, one);
        shell_change(&h, "bob", one, two);
        shell_change(&h, "carol", two, three);
        shell_change(&h, "alice", three, four);
        h.processes.kill(70);
        let seen = |asker: &str| -> Vec<(usize, Option<bool>, Vec<String>)> {
            let files = h
                .coord
                .owned_changes(&h.coord.vantage(Some(asker)), &[])
                .unwrap();
            assert_eq!(files.len(), 1);
            files[0]
                .hunks
                .iter()
                .map(|s| (s.hunk.new_start, s.mine, s.others.clone()))
                .collect()
        };
        let carol_dead = (5, Some(false), Vec::new());
        assert_eq!(
            seen("alice"),
            [
                (1, Some(true), Vec::new()),
                (3, Some(false), vec!["bob".to_owned()]),
                carol_dead.clone(),
                (7, Some(true), Vec::new()),
            ]
        );
        assert_eq!(
            seen("bob"),
            [
                (1, Some(false), vec!["alice-mcp".to_owned()]),
                (3, Some(true), Vec::new()),
                carol_dead,
                (7, Some(false), vec!["alice".to_owned()]),
            ]
        );
        // Reaped, the same.
        h.coord.reap_dead_sessions().unwrap();
        assert_eq!(seen("alice")[2], (5, Some(false), Vec::new()));
    }
}
