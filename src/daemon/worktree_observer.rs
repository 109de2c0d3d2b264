//! The trees the daemon serves, watched (docs/protocol.md 15.3): every change on disk in any
//! worktree (the one tree of a repository too) is handed, as bytes, to the coordination core
//! for attribution ([`crate::daemon::tree_attribution`]) within moments; and while the
//! repository has more than one worktree, every worktree's changes against its merge-base with
//! the main worktree are handed to it as well ([`Coord::observe_worktree`], 14.4). A handler
//! that must answer from what is on disk now (`work.end`) asks for a flush ([`TreeFlush`]).
//!
//! Changes are noticed by file-system notification, not by polling the tree: each directory
//! holding files git knows (tracked, or untracked and not ignored) is watched on its own
//! (a recursive watch would also watch build output and `node_modules`), directories made
//! later are added as they appear, and the git common directory is watched for commits,
//! checkouts and merges (which move merge-bases). A change marks its worktree dirty; once
//! the worktree has been quiet for [`SETTLE`] (or dirty for [`MAX_DELAY`]), git says what
//! changed. A worktree whose directories cannot be watched (the system's watch limit) is
//! looked at every [`FALLBACK_POLL`] instead.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};

use crate::coord::worktree_work::ChangedFile;
use crate::coord::Coord;
use crate::daemon::tree_attribution::{attribute, Changed, Reading};
use crate::daemon::work_snapshots::WorkSnapshots;
use crate::daemon::worktree_git::WorktreeGit;
use crate::git::Git;
use crate::platform::at_rest::OpenWriters;
use crate::rpc::tree_flush::TreeFlush;
use crate::worktrees::changes::{changes_of, WorktreeChanges};
use crate::worktrees::{all_worktrees, branch_of, Repository};

use super::watch_set::{self, Stamp, WatchStatus};

/// How long a worktree stays quiet before its changes are read.
pub const SETTLE: Duration = Duration::from_millis(150);
/// The longest a dirty worktree waits, however busy it stays.
pub const MAX_DELAY: Duration = Duration::from_millis(1_000);
/// How often the list of worktrees is read again (a few small files in the common dir).
pub const RESCAN: Duration = Duration::from_millis(250);
/// How often a worktree that cannot be watched is read.
pub const FALLBACK_POLL: Duration = Duration::from_millis(1_500);
/// The longest a file being written is held back (a writer that keeps it open longer, a
/// log, is read at least this often): the bound the requests' reads use too.
pub const HOLD_AT_MOST: Duration = OpenWriters::LONGEST_PAUSE;
/// File-system events queued before the observer stops telling them apart (then every
/// worktree is read again).
const QUEUE: usize = 4_096;

/// Observes the worktrees of `repository` for `coord` until `stopping` turns true.
pub async fn observe_worktrees(
    repository: Option<Repository>,
    coord: Arc<Coord>,
    flush: Arc<TreeFlush>,
    writers: Arc<OpenWriters>,
    serving_since: std::time::SystemTime,
    mut stopping: watch::Receiver<bool>,
) {
    let Some(repository) = repository else {
        let _ = stopping.wait_for(|stop| *stop).await;
        return;
    };
    flush.set_active(true);
    let (events_tx, mut events) = mpsc::channel::<notify::Result<notify::Event>>(QUEUE);
    let overflowed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut observer = Observer {
        repository,
        coord,
        watcher: Watching::NotYet {
            events: events_tx,
            overflowed: Arc::clone(&overflowed),
        },
        roots: Vec::new(),
        watched: HashMap::new(),
        polled: HashSet::new(),
        dirty: HashMap::new(),
        last_read: HashMap::new(),
        several: false,
        index_stamps: HashMap::new(),
        poll_reason: None,
        published: None,
        serving_since,
        head_stamps: HashMap::new(),
        work_snapshots: Arc::default(),
        snapshots_due: HashMap::new(),
        snapshots_refresh: None,
        cookies: None,
        cookies_dropped: 0,
        held_back: HashMap::new(),
        gits: HashMap::new(),
        analyses_due: BTreeSet::new(),
        warming: None,
        writers,
    };
    observer.forget_vanished().await;
    loop {
        observer.rescan().await;
        if overflowed.swap(false, std::sync::atomic::Ordering::Relaxed) {
            // Events were lost (a burst of creations): every watch set is checked again.
            observer.index_stamps.clear();
            observer.all_dirty(Seen::Everything);
        }
        observer.check_watch_sets().await;
        observer.publish_watch_status();
        // What the watcher has queued is taken in first: a file a writer has open is known
        // as such before the pass reads it.
        while let Ok(event) = events.try_recv() {
            observer.on_event(event);
        }
        observer.read_settled(false).await;
        observer.warm_analyses();
        observer.refresh_snapshots();
        let wake = if observer.dirty.is_empty() {
            RESCAN
        } else {
            SETTLE / 2
        };
        tokio::select! {
            _ = stopping.wait_for(|stop| *stop) => break,
            () = tokio::time::sleep(wake) => {}
            () = flush.asked() => {
                let ticket = flush.ticket();
                observer.catch_up(&mut events).await;
                // A commit or a reset a moment ago may not have been told yet: a HEAD moved
                // since the last flush is taken in now.
                observer.mark_moved_heads();
                observer.read_settled(true).await;
                // Answered before the work snapshots are refreshed: they are kept within
                // moments (15.5), and a flush waiting for them (about 10 git processes a
                // changed owner) made `wit commit` and every hook wait too (issue 33).
                flush.answered(ticket);
                observer.coord.retire_closed_windows(ticket);
                observer.warm_analyses();
                observer.refresh_snapshots();
            }
            Some(event) = events.recv() => {
                observer.on_event(event);
                while let Ok(event) = events.try_recv() {
                    observer.on_event(event);
                }
            }
        }
    }
    flush.set_active(false);
}

/// Whether `event` is a file closed after writing (inotify's `IN_CLOSE_WRITE`).
fn is_close_after_writing(event: &notify::Event) -> bool {
    use notify::event::{AccessKind, AccessMode};
    matches!(
        event.kind,
        EventKind::Access(AccessKind::Close(AccessMode::Write))
    )
}

/// What says a worktree's HEAD moved, cheaply (two `stat`s, no git): the size and time of
/// its HEAD file and of its HEAD reflog (a commit, a reset, a checkout each append to it).
type HeadStamp = Option<(u64, std::time::SystemTime, std::time::SystemTime)>;

/// The [`HeadStamp`] of the worktree at `root` (in its git directory).
fn head_stamp(root: &Path) -> HeadStamp {
    let git_dir = watch_set::git_dir(root)?;
    let head = std::fs::metadata(git_dir.join("HEAD")).ok()?;
    let log = std::fs::metadata(git_dir.join("logs/HEAD"));
    Some((
        log.as_ref().map_or(0, |m| m.len()),
        log.and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH),
        head.modified().unwrap_or(std::time::UNIX_EPOCH),
    ))
}

/// How long a flush lets queued file-system events arrive before it reads, when it cannot
/// drop a cookie ([`COOKIE_DIR`] could not be made or watched).
const FLUSH_GRACE: Duration = Duration::from_millis(15);

/// Where a flush drops its cookie (relative to the main worktree's root): a directory of the
/// daemon's own, watched by the one file-system watcher. The kernel queues one watcher's
/// events in the order they happen, so once the watcher has handed over the cookie's
/// creation it has handed over every change made before the flush was asked for: the flush
/// waits exactly that long, not a fixed time (watchman's sync cookies).
const COOKIE_DIR: &str = ".wit/flush";

/// The longest a flush waits for its cookie (its event lost: the queue overflowed).
const COOKIE_WAIT: Duration = Duration::from_millis(100);

/// A dirty worktree: when it was first and last seen changing, and what changed.
#[derive(Debug, Clone)]
struct Dirty {
    first: Instant,
    last: Instant,
    /// The files seen changing (relative to the root).
    paths: HashSet<String>,
    /// Anything may have changed (start, overflow, poll).
    everything: bool,
    /// When the worktree was first looked at: what changed there before predates the
    /// observer.
    found: Option<std::time::SystemTime>,
    /// HEAD may have moved (a commit, a checkout, a reset).
    head_moved: bool,
}

/// What a mark says changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen<'a> {
    /// One file.
    File(&'a str),
    /// Anything.
    Everything,
    /// A worktree first looked at (a start, a worktree added).
    Found,
    /// The repository's refs or HEAD.
    Head,
}

/// The file-system watcher: made when the repository first has a second worktree (a
/// repository with one worktree holds no inotify instance), or unavailable.
enum Watching {
    /// Not made yet: where its events will go.
    NotYet {
        events: mpsc::Sender<notify::Result<notify::Event>>,
        overflowed: Arc<std::sync::atomic::AtomicBool>,
    },
    /// Watching.
    On(RecommendedWatcher),
    /// No notification here: worktrees are polled.
    Unavailable,
}

impl Watching {
    /// The watcher, made on first use.
    fn get(&mut self) -> Option<&mut RecommendedWatcher> {
        if let Watching::NotYet { events, overflowed } = self {
            let (events, flag) = (events.clone(), Arc::clone(overflowed));
            if std::env::var(watch_set::WATCH_ENV).is_ok_and(|v| v == "poll") {
                *self = Watching::Unavailable;
                return None;
            }
            let made = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // Reads (every file the index parses, every `git` that opens one) change
                // nothing, and would crowd out the changes that do; a close after writing
                // says a write is done.
                if event.as_ref().is_ok_and(|e| {
                    matches!(e.kind, EventKind::Access(_)) && !is_close_after_writing(e)
                }) {
                    return;
                }
                if events.try_send(event).is_err() {
                    flag.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            });
            *self = match made {
                Ok(watcher) => Watching::On(watcher),
                Err(error) => {
                    tracing::warn!(%error, "no file-system notification; worktrees are polled");
                    Watching::Unavailable
                }
            };
        }
        match self {
            Watching::On(watcher) => Some(watcher),
            _ => None,
        }
    }
}

struct Observer {
    repository: Repository,
    coord: Arc<Coord>,
    watcher: Watching,
    /// The worktrees observed now (main first); empty while the repository has one.
    roots: Vec<PathBuf>,
    /// Watched directories, and the worktree each belongs to.
    watched: HashMap<PathBuf, PathBuf>,
    /// Worktrees read on a timer instead.
    polled: HashSet<PathBuf>,
    dirty: HashMap<PathBuf, Dirty>,
    last_read: HashMap<PathBuf, Instant>,
    /// Whether the repository has more than one worktree (14.4 runs).
    several: bool,
    /// Per watched worktree: its git index as it was when its watch set was last compared
    /// with what git knows.
    index_stamps: HashMap<PathBuf, Option<Stamp>>,
    /// Why worktrees are polled, when some are.
    poll_reason: Option<String>,
    /// The watch status last published.
    published: Option<WatchStatus>,
    /// When the daemon began serving: the worktrees found at its start take it as the time
    /// they were first looked at (those added later, the time they appear).
    serving_since: std::time::SystemTime,
    /// Each worktree's HEAD as the last flush saw it.
    head_stamps: HashMap<PathBuf, HeadStamp>,
    /// Every owner's work kept as git objects, refreshed after each pass.
    work_snapshots: Arc<std::sync::Mutex<WorkSnapshots>>,
    /// The worktrees whose snapshots are due (with whether their HEAD moved), and the
    /// refresh running (one at a time, beside the observer, never holding up a flush).
    snapshots_due: HashMap<PathBuf, bool>,
    snapshots_refresh: Option<tokio::task::JoinHandle<()>>,
    /// The watched directory flushes drop their cookies in ([`COOKIE_DIR`]), once made.
    cookies: Option<PathBuf>,
    /// Cookies dropped so far (each one's name).
    cookies_dropped: u64,
    /// Files a pass held back as still being written (per worktree), and since when.
    held_back: HashMap<(PathBuf, String), Instant>,
    /// What each worktree's passes asked git, kept for the next (taken out while a pass runs).
    gits: HashMap<PathBuf, WorktreeGit>,
    /// Files of the index's worktree read by a pass whose analyses are due, and the warm-up
    /// running (one at a time, beside the observer, after the flush is answered).
    analyses_due: BTreeSet<String>,
    warming: Option<tokio::task::JoinHandle<()>>,
    /// Files written to since a writer opened them, not yet closed: kept here, asked by the
    /// requests' reads too.
    writers: Arc<OpenWriters>,
}

impl Observer {
    /// Resolves the observed work of worktrees that no longer exist (a daemon that was down
    /// while one was removed). Not with a shared store: the other machines' worktrees are
    /// in it too, and their paths mean nothing here.
    async fn forget_vanished(&mut self) {
        if self.coord.store().is_shared() {
            return;
        }
        let coord = Arc::clone(&self.coord);
        let now = all_worktrees(&self.repository);
        let several = now.len() > 1;
        let result = tokio::task::spawn_blocking(move || {
            for root in coord.worktrees_with_work()? {
                if !several || !now.iter().any(|r| r.to_string_lossy() == root) {
                    coord.release_worktree(&root)?;
                }
            }
            Ok::<_, crate::coord::CoordError>(())
        })
        .await;
        if let Ok(Err(error)) = result {
            tracing::warn!(%error, "could not resolve the work of removed worktrees");
        }
    }

    /// Reads the list of worktrees; starts observing new ones, lets removed ones go.
    async fn rescan(&mut self) {
        let now = all_worktrees(&self.repository);
        let several = now.len() > 1;
        if now == self.roots && several == self.several {
            return;
        }
        self.several = several;
        let gone: Vec<PathBuf> = self
            .roots
            .iter()
            .filter(|r| !now.contains(r))
            .cloned()
            .collect();
        let new: Vec<PathBuf> = now
            .iter()
            .filter(|r| !self.roots.contains(r))
            .cloned()
            .collect();
        let main = now
            .first()
            .filter(|_| several)
            .map(|m| m.to_string_lossy().into_owned());
        self.coord.set_main_worktree(main.as_deref());
        for root in gone {
            tracing::info!(worktree = %root.display(), "worktree gone; its observed work resolves");
            self.unwatch(&root);
            self.dirty.remove(&root);
            self.last_read.remove(&root);
            self.index_stamps.remove(&root);
            self.gits.remove(&root);
            self.coord.worktree_unwatched(&root.to_string_lossy());
            let coord = Arc::clone(&self.coord);
            let key = root.to_string_lossy().into_owned();
            let released = tokio::task::spawn_blocking(move || coord.release_worktree(&key)).await;
            if let Ok(Err(error)) = released {
                tracing::warn!(worktree = %root.display(), %error, "could not resolve its work");
            }
        }
        self.roots = now;
        if !new.is_empty() {
            self.watch_common_dir();
        }
        for root in new {
            self.watch_worktree(&root).await;
            self.mark(&root, Seen::Found);
        }
    }

    /// Watches the common directory's top level and its refs (commits, merges, checkouts).
    fn watch_common_dir(&mut self) {
        let Some(watcher) = self.watcher.get() else {
            return;
        };
        let common = &self.repository.common_dir;
        let _ = watcher.watch(common, RecursiveMode::NonRecursive);
        let _ = watcher.watch(&common.join("refs"), RecursiveMode::Recursive);
        if let Ok(entries) = std::fs::read_dir(common.join("worktrees")) {
            for entry in entries.flatten() {
                let _ = watcher.watch(&entry.path(), RecursiveMode::NonRecursive);
            }
        }
        if self.cookies.is_none() {
            let dir = self.repository.main_root.join(COOKIE_DIR);
            if std::fs::create_dir_all(&dir).is_ok() {
                let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
                if watcher.watch(&dir, RecursiveMode::NonRecursive).is_ok() {
                    self.cookies = Some(dir);
                }
            }
        }
    }

    /// Takes in every file-system event queued before now (a flush): drops a cookie and
    /// takes in events until the watcher hands over the cookie's (at most [`COOKIE_WAIT`]),
    /// then whatever else arrived. Without a watcher no event is on its way: nothing to wait
    /// for.
    async fn catch_up(&mut self, events: &mut mpsc::Receiver<notify::Result<notify::Event>>) {
        if matches!(self.watcher, Watching::On(_)) {
            match self.drop_cookie() {
                Some(cookie) => {
                    let until = tokio::time::Instant::now() + COOKIE_WAIT;
                    loop {
                        match tokio::time::timeout_at(until, events.recv()).await {
                            Ok(Some(Ok(event))) if event.paths.contains(&cookie) => break,
                            Ok(Some(event)) => self.on_event(event),
                            Ok(None) | Err(_) => break,
                        }
                    }
                }
                // What the kernel has queued reaches the watcher's thread within moments.
                None => tokio::time::sleep(FLUSH_GRACE).await,
            }
        }
        while let Ok(event) = events.try_recv() {
            self.on_event(event);
        }
    }

    /// Makes (and at once removes) a cookie file in the watched [`COOKIE_DIR`]; its path,
    /// whose events the watcher hands over after every earlier one.
    fn drop_cookie(&mut self) -> Option<PathBuf> {
        let dir = self.cookies.as_ref()?;
        self.cookies_dropped += 1;
        let cookie = dir.join(format!("{}-{}", std::process::id(), self.cookies_dropped));
        std::fs::File::create(&cookie).ok()?;
        let _ = std::fs::remove_file(&cookie);
        Some(cookie)
    }

    /// Watches every directory of the worktree at `root` holding files git knows, then lists
    /// them again with the watches in place until nothing new turns up (a worktree still
    /// being checked out grows while it is listed); the periodic check does the rest.
    async fn watch_worktree(&mut self, root: &Path) {
        if self.watcher.get().is_none() {
            self.poll_reason = Some(
                if std::env::var(watch_set::WATCH_ENV).is_ok_and(|v| v == "poll") {
                    format!("{}=poll", watch_set::WATCH_ENV)
                } else {
                    "no file-system notification".to_owned()
                },
            );
            self.polled.insert(root.to_path_buf());
            return;
        }
        for _ in 0..4 {
            match self.watch_known(root).await {
                Some(0) | None => break,
                Some(_) => {}
            }
        }
    }

    /// Compares the watch set of `root` with the directories git knows there and watches
    /// what it lacks: how many it added (`None`: a watch failed, the worktree is polled).
    async fn watch_known(&mut self, root: &Path) -> Option<usize> {
        let index = watch_set::index_file(root);
        self.index_stamps.insert(
            root.to_path_buf(),
            index.as_deref().and_then(watch_set::stamp),
        );
        let listed = root.to_path_buf();
        let dirs = tokio::task::spawn_blocking(move || known_dirs(&listed))
            .await
            .unwrap_or_default();
        let missing: Vec<PathBuf> = watch_set::missing(&dirs, &self.watched)
            .into_iter()
            .cloned()
            .collect();
        for dir in &missing {
            if !self.watch_dir(root, dir) {
                tracing::warn!(worktree = %root.display(), dir = %dir.display(),
                    "cannot watch; the worktree is polled");
                self.polled.insert(root.to_path_buf());
                return None;
            }
        }
        Some(missing.len())
    }

    /// The cheap periodic check (issue 35): for each watched worktree whose git index was
    /// written since its watch set was last compared with git, compare again; a worktree
    /// that had directories without a watch is read again (saves there went unseen).
    async fn check_watch_sets(&mut self) {
        let roots: Vec<PathBuf> = self
            .roots
            .iter()
            .filter(|root| !self.polled.contains(*root))
            .cloned()
            .collect();
        for root in roots {
            let now = watch_set::index_file(&root).and_then(|index| watch_set::stamp(&index));
            if self.index_stamps.get(&root) == Some(&now) {
                continue;
            }
            if let Some(added) = self.watch_known(&root).await.filter(|&n| n > 0) {
                tracing::info!(worktree = %root.display(), added,
                    "directories git knows had no watch; watched now");
                self.mark(&root, Seen::Everything);
            }
        }
    }

    /// Watches one directory of `root`; whether that worked.
    fn watch_dir(&mut self, root: &Path, dir: &Path) -> bool {
        if self.watched.contains_key(dir) {
            return true;
        }
        self.rewatch_dir(root, dir)
    }

    /// Watches one directory of `root` even if it was watched (a directory made again under
    /// the same path is a new directory, and its old watch went with the old one).
    fn rewatch_dir(&mut self, root: &Path, dir: &Path) -> bool {
        let Some(watcher) = self.watcher.get() else {
            return false;
        };
        match watcher.watch(dir, RecursiveMode::NonRecursive) {
            Ok(()) => {
                self.watched.insert(dir.to_path_buf(), root.to_path_buf());
                true
            }
            // Gone already: nothing to watch.
            Err(_) if !dir.exists() => true,
            Err(error) => {
                self.poll_reason = Some(format!("cannot watch {}: {error}", dir.display()));
                false
            }
        }
    }

    fn unwatch(&mut self, root: &Path) {
        let dirs: Vec<PathBuf> = self
            .watched
            .iter()
            .filter(|(_, r)| r.as_path() == root)
            .map(|(d, _)| d.clone())
            .collect();
        for dir in dirs {
            self.watched.remove(&dir);
            if let Watching::On(watcher) = &mut self.watcher {
                let _ = watcher.unwatch(&dir);
            }
        }
        self.polled.remove(root);
    }

    /// Publishes which worktrees are polled, and why, when that changed (`wit status` shows
    /// it: the fallback is not only in `daemon.log`).
    fn publish_watch_status(&mut self) {
        let mut polled: Vec<String> = self
            .polled
            .iter()
            .map(|root| root.display().to_string())
            .collect();
        polled.sort();
        let status = WatchStatus {
            pid: std::process::id(),
            reason: (!polled.is_empty())
                .then(|| self.poll_reason.clone())
                .flatten(),
            polled,
        };
        if self.published.as_ref() == Some(&status) {
            return;
        }
        let dir = self.repository.main_root.join(".wit");
        match status.write(&dir) {
            Ok(()) => self.published = Some(status),
            Err(error) => tracing::debug!(%error, "could not publish the watch status"),
        }
    }

    fn mark(&mut self, root: &Path, seen: Seen<'_>) {
        let now = Instant::now();
        let key = root.to_string_lossy();
        if self.polled.contains(root) {
            self.coord.worktree_unwatched(&key);
        } else {
            self.coord.worktree_touched(&key);
        }
        let dirty = self.dirty.entry(root.to_path_buf()).or_insert(Dirty {
            first: now,
            last: now,
            paths: HashSet::new(),
            everything: false,
            found: None,
            head_moved: false,
        });
        dirty.last = now;
        match seen {
            Seen::File(file) => {
                dirty.paths.insert(file.to_owned());
            }
            Seen::Everything => dirty.everything = true,
            Seen::Found => {
                let at = if self.last_read.is_empty() {
                    self.serving_since
                } else {
                    std::time::SystemTime::now()
                };
                dirty.found = dirty.found.or(Some(at));
                dirty.everything = true;
            }
            Seen::Head => {
                dirty.head_moved = true;
                dirty.everything = true;
            }
        }
    }

    /// Marks the worktrees whose HEAD moved since the last look ([`head_stamp`]).
    fn mark_moved_heads(&mut self) {
        for root in self.roots.clone() {
            let stamp = head_stamp(&root);
            let before = self.head_stamps.insert(root.clone(), stamp);
            if before.is_some_and(|before| before != stamp) {
                self.mark(&root, Seen::Head);
            }
        }
    }

    fn all_dirty(&mut self, seen: Seen<'_>) {
        for root in self.roots.clone() {
            self.mark(&root, seen);
        }
    }

    /// Marks the worktree a file-system event belongs to; watches a new directory.
    fn on_event(&mut self, event: notify::Result<notify::Event>) {
        let Ok(event) = event else {
            self.all_dirty(Seen::Everything);
            return;
        };
        self.note_writers(&event);
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        for path in &event.paths {
            if path.starts_with(&self.repository.common_dir) {
                if is_git_noise(path) {
                    continue;
                }
                self.all_dirty(Seen::Head);
                continue;
            }
            let Some(root) = self.root_of(path) else {
                continue;
            };
            let Ok(relative) = path.strip_prefix(&root) else {
                continue;
            };
            if watch_set::is_own_dir(relative) {
                continue;
            }
            if matches!(event.kind, EventKind::Create(_))
                && path.is_dir()
                && !is_ignored(&root, path)
            {
                // Watched before listed, each directory below it too.
                let mut watch = |dir: &Path| self.rewatch_dir(&root, dir);
                if let Err(dir) = watch_set::watch_tree(&root, path, &mut watch) {
                    tracing::warn!(worktree = %root.display(), dir = %dir.display(),
                        "cannot watch; the worktree is polled");
                    self.polled.insert(root.clone());
                }
                self.mark(&root, Seen::Everything);
                continue;
            }
            match relative.to_str() {
                Some(file) => self.mark(&root, Seen::File(file)),
                None => self.mark(&root, Seen::Everything),
            }
        }
    }

    /// Follows which files a writer has open: made (an empty file until its first write) or
    /// written to (a modification of its data, a truncate among them) until closed after
    /// writing, or removed.
    fn note_writers(&mut self, event: &notify::Event) {
        use notify::event::{CreateKind, ModifyKind, RemoveKind};
        match event.kind {
            EventKind::Create(CreateKind::File)
            | EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any) => {
                self.writers.opened(&event.paths);
            }
            EventKind::Remove(RemoveKind::File | RemoveKind::Any) => self.written(event),
            _ if is_close_after_writing(event) => self.written(event),
            _ => {}
        }
    }

    /// Files closed after writing, or removed: no longer being written; one held back is
    /// read now.
    fn written(&mut self, event: &notify::Event) {
        for path in &event.paths {
            if !self.writers.closed(path) {
                continue;
            }
            let Some(root) = self.root_of(path) else {
                continue;
            };
            if let Some(file) = path.strip_prefix(&root).ok().and_then(Path::to_str) {
                let file = file.to_owned();
                self.mark(&root, Seen::File(&file));
            }
        }
    }

    /// The worktree holding `path` (the innermost, for worktrees inside others).
    fn root_of(&self, path: &Path) -> Option<PathBuf> {
        self.roots
            .iter()
            .filter(|root| path.starts_with(root))
            .max_by_key(|root| root.as_os_str().len())
            .cloned()
    }

    /// Refreshes the work snapshots of the worktrees due, in a blocking task of their own,
    /// unless one runs: then they stay due for the next turn of the loop.
    fn refresh_snapshots(&mut self) {
        let running = self
            .snapshots_refresh
            .as_ref()
            .is_some_and(|refresh| !refresh.is_finished());
        if self.snapshots_due.is_empty() || running {
            return;
        }
        let due = std::mem::take(&mut self.snapshots_due);
        let coord = Arc::clone(&self.coord);
        let snapshots = Arc::clone(&self.work_snapshots);
        self.snapshots_refresh = Some(tokio::task::spawn_blocking(move || {
            let mut snapshots = snapshots
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (root, head_moved) in due {
                if let Err(error) = snapshots.refresh(&coord, &root, head_moved) {
                    tracing::warn!(worktree = %root.display(), %error, "could not keep its work snapshots");
                }
            }
        }));
    }

    /// Notes the files a pass over `root` read as due for analysis, when `root` is the
    /// worktree the code index reads.
    fn analyses_due(&mut self, root: &Path, read: Vec<String>) {
        if self.coord.index_root().as_deref() == Some(&*root.to_string_lossy()) {
            self.analyses_due.extend(read);
        }
    }

    /// Analyses the due files as they are on disk now, beside the observer: the requests
    /// that ask about them next (a hook's preflight of the next edit, a changed file's
    /// callers) find their analysis made instead of parsing them on their own path. A request
    /// that comes while one is being made waits for it rather than making it again.
    fn warm_analyses(&mut self) {
        let running = self.warming.as_ref().is_some_and(|w| !w.is_finished());
        if self.analyses_due.is_empty() || running {
            return;
        }
        let due: Vec<String> = std::mem::take(&mut self.analyses_due).into_iter().collect();
        let coord = Arc::clone(&self.coord);
        self.warming = Some(tokio::task::spawn_blocking(move || {
            coord.warm_analyses(&due);
        }));
    }

    /// How a pass over `root` reads files still being written: held back while a writer
    /// has them open (a flush too: the tool that asked has closed its files), and on the
    /// observer's own passes while they were modified a moment ago; each for at most
    /// [`HOLD_AT_MOST`].
    fn reading(&self, root: &Path, flush: bool) -> Reading {
        let overdue = self
            .held_back
            .iter()
            .filter(|((at, _), since)| at == root && since.elapsed() >= HOLD_AT_MOST)
            .map(|((_, file), _)| file.clone())
            .collect();
        Reading {
            writing: self.writers.under(root),
            own_pass: !flush,
            overdue,
        }
    }

    /// Notes the files of `root` a pass held back and marks them to be read again; those
    /// read are no longer held.
    fn hold_back(&mut self, root: &Path, held: Vec<String>) {
        let now = Instant::now();
        let held: HashSet<String> = held.into_iter().collect();
        self.held_back
            .retain(|(at, file), _| at != root || held.contains(file));
        for file in held {
            self.held_back
                .entry((root.to_path_buf(), file.clone()))
                .or_insert(now);
            self.mark(root, Seen::File(&file));
        }
    }

    /// Reads the changes of every worktree that is settled, and of polled ones when due.
    /// `now`: read every dirty worktree at once, settled or not (a flush).
    async fn read_settled(&mut self, now_all: bool) {
        let now = Instant::now();
        for root in self.polled.clone() {
            let due = self
                .last_read
                .get(&root)
                .is_none_or(|at| now.duration_since(*at) >= FALLBACK_POLL);
            if due {
                self.mark(&root, Seen::Everything);
            }
        }
        let ready: Vec<PathBuf> = self
            .dirty
            .iter()
            .filter(|(_, d)| {
                now_all
                    || now.duration_since(d.last) >= SETTLE
                    || now.duration_since(d.first) >= MAX_DELAY
            })
            .map(|(root, _)| root.clone())
            .collect();
        for root in ready {
            let Some(dirty) = self.dirty.remove(&root) else {
                continue;
            };
            self.last_read.insert(root.clone(), Instant::now());
            let changed = if let Some(at) = dirty.found {
                Changed::Found(at)
            } else if dirty.everything {
                Changed::Everything
            } else {
                Changed::Paths(dirty.paths.into_iter().collect())
            };
            let coord = Arc::clone(&self.coord);
            let at = root.clone();
            let head_moved = dirty.head_moved;
            let reading = self.reading(&root, now_all);
            let mut git = self
                .gits
                .remove(&root)
                .unwrap_or_else(|| WorktreeGit::new(&root));
            let attributed = tokio::task::spawn_blocking(move || {
                let held = attribute(&coord, &at, &mut git, changed, head_moved, &reading);
                (held, git)
            })
            .await
            .map(|(held, git)| {
                self.gits.insert(root.clone(), git);
                held
            });
            // Then every owner's work there is kept as git objects (15.5).
            *self.snapshots_due.entry(root.clone()).or_default() |= head_moved;
            match attributed {
                Ok(Ok(pass)) => {
                    self.hold_back(&root, pass.held);
                    self.analyses_due(&root, pass.read);
                }
                Ok(Err(error)) => {
                    tracing::warn!(worktree = %root.display(), %error, "could not attribute its changes")
                }
                Err(_) => {}
            }
            if !self.several {
                continue;
            }
            let Some(main) = self.roots.first().cloned() else {
                return;
            };
            let coord = Arc::clone(&self.coord);
            let at = root.clone();
            let read = tokio::task::spawn_blocking(move || observe(&coord, &at, &main)).await;
            match read {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::warn!(worktree = %root.display(), %error, "could not read its changes")
                }
                Err(error) => {
                    tracing::warn!(worktree = %root.display(), %error, "reading its changes failed")
                }
            }
        }
    }
}

/// Reads the changes of the worktree at `root` and hands them to `coord`, which names their
/// symbols and merges their lines into regions.
fn observe(coord: &Coord, root: &Path, main: &Path) -> Result<(), String> {
    let changes = changes_of(root, main).map_err(|e| e.to_string())?;
    let label = branch_of(root).unwrap_or_else(|| root.display().to_string());
    let key = root.to_string_lossy().into_owned();
    coord
        .observe_worktree_changes(&key, &label, changed_files(changes))
        .map_err(|e| e.to_string())
}

/// A worktree's changed files as git read them.
fn changed_files(changes: WorktreeChanges) -> Vec<ChangedFile> {
    changes
        .files
        .into_iter()
        .map(|file| ChangedFile {
            lines: (!file.whole_file).then_some(file.lines),
            file: file.file,
            base: file.base.map(Arc::from),
            current: file.current.map(Arc::from),
        })
        .collect()
}

/// Events in the common directory that say nothing about any worktree's changes: the
/// index (staging, or `git status` refreshing it), lock files, and wit's own refs and
/// temporary indexes.
fn is_git_noise(path: &Path) -> bool {
    // wit's own refs (the work snapshots, the gate's snapshots) and temporary indexes move
    // no HEAD.
    let wits_own = path
        .components()
        .collect::<Vec<_>>()
        .windows(2)
        .any(|pair| pair[0].as_os_str() == "refs" && pair[1].as_os_str() == "wit");
    wits_own
        || path.file_name().is_some_and(|name| {
            let name = name.to_string_lossy();
            name == "index"
                || name.ends_with(".lock")
                || name == "FETCH_HEAD"
                || name.starts_with("wit-index-")
        })
}

/// The directories of `root` holding files git knows: tracked ones, and untracked ones not
/// ignored; with the root itself.
fn known_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: HashSet<PathBuf> = HashSet::new();
    dirs.insert(root.to_path_buf());
    for args in [
        &["ls-files", "-z"][..],
        &["ls-files", "-z", "--others", "--exclude-standard"][..],
    ] {
        let Ok(output) = Git::new(root).quiet().run(args) else {
            continue;
        };
        for file in output.split(|&b| b == 0).filter(|f| !f.is_empty()) {
            let relative = Path::new(std::str::from_utf8(file).unwrap_or(""));
            let mut dir = relative.parent();
            while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
                if !dirs.insert(root.join(d)) {
                    break;
                }
                dir = d.parent();
            }
        }
    }
    let mut dirs: Vec<PathBuf> = dirs.into_iter().collect();
    dirs.sort();
    dirs
}

/// Whether git ignores `path` in the worktree at `root`.
fn is_ignored(root: &Path, path: &Path) -> bool {
    Git::new(root)
        .quiet()
        .run(&[
            OsStr::new("check-ignore"),
            OsStr::new("-q"),
            OsStr::new("--"),
            path.as_os_str(),
        ])
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_lock_files_are_no_change() {
        assert!(is_git_noise(Path::new("/r/.git/index")));
        assert!(is_git_noise(Path::new("/r/.git/HEAD.lock")));
        assert!(!is_git_noise(Path::new("/r/.git/HEAD")));
        assert!(!is_git_noise(Path::new("/r/.git/refs/heads/main")));
    }
}
