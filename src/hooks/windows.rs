//! Tool-call windows from the harness hooks (docs/protocol.md 15.2): the pre-tool hook that lets
//! a call through opens its window (`work.begin`) in the same process, the post-tool hook
//! closes it (`work.end`). Between the two hook processes the window's id waits in
//! `.wit/windows/<session>/`, one empty file a window (oldest first: a harness's post-tool
//! hooks come in the order of its calls, and a window left behind closes by itself after its
//! TTL).

use std::path::{Path, PathBuf};

use futures_util::future::join_all;

use crate::daemon::paths::WitPaths;
use crate::doorway::Doorway;
use crate::protocol::{WorkBeginParams, WorkBeginParamsEditsItem, WorkEndParams};

/// How long a window a hook opens stays open without its post-tool hook: long enough for a
/// slow build or test run, short enough that a harness without a post-tool hook does not
/// keep claiming changes for long.
pub const HOOK_WINDOW_TTL_MS: i64 = 300_000;
/// The most window ids kept per session (older ones have expired in the daemon anyway).
const MAX_KEPT: usize = 64;

/// The most digits a marker's stamp has (any such number is a `u128`).
const STAMP_MOST_DIGITS: usize = 38;

/// The folder of `session`'s open windows: one empty file a window, named
/// `<nanoseconds>-<hex of its id>` so that names sort oldest first. A file of its own per window
/// means no file is ever rewritten: replacing a file by renaming over it makes ext4 write the
/// old one out first, the largest part of a hook's own time (and racy between two hooks).
fn dir_of(paths: &WitPaths, session: &str) -> PathBuf {
    let name = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(session.as_bytes()));
    paths.dir.join("windows").join(name)
}

fn unhex(text: &str) -> Option<String> {
    let bytes = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()
}

/// The window id a marker's name holds.
fn window_of(name: &str) -> Option<String> {
    let (_, id) = name.split_once('-')?;
    unhex(id)
}

/// Whether `name` is shaped as a marker's: digits (a stamp), `-`, an even number of bytes
/// (the hex of an id). Neither is decoded: a session's folder can hold up to [`MAX_KEPT`]
/// markers and the gate lists them on every call it lets through (a third of a hook's own
/// instructions went to reading them in full); an id that is no hex is dropped when its
/// call is taken ([`window_of`]).
fn is_marker(name: &str) -> bool {
    name.split_once('-').is_some_and(|(stamp, hex)| {
        (1..=STAMP_MOST_DIGITS).contains(&stamp.len())
            && stamp.bytes().all(|byte| byte.is_ascii_digit())
            && hex.len() % 2 == 0
    })
}

/// Calls `each` with the name of every marker in `dir`, read in place (`getdents64` through
/// rustix: names are borrowed, none is copied); `None` when `dir` is missing or not a folder.
fn each_marker(dir: &Path, mut each: impl FnMut(&str)) -> Option<()> {
    use rustix::fs::{openat, Dir, Mode, OFlags, CWD};

    let fd = openat(
        CWD,
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let mut entries = Dir::new(fd).ok()?;
    while let Some(Ok(entry)) = entries.read() {
        if let Some(name) = entry.file_name().to_str().ok().filter(|n| is_marker(n)) {
            each(name);
        }
    }
    Some(())
}

/// The marker names in `dir`, oldest first (none when it is missing or not a folder).
fn markers(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    each_marker(dir, |name| names.push(name.to_owned()));
    names.sort_unstable();
    names
}

/// What a new call needs to know of the markers already in a folder, read in one pass that
/// keeps no name it does not need: a harness without post-tool hooks leaves [`MAX_KEPT`]
/// markers behind, and every call let through looks at them (listing and sorting them all
/// was a quarter of a hook's own instructions).
#[derive(Debug, Default, PartialEq, Eq)]
struct Survey {
    /// How many markers there are.
    count: usize,
    /// The newest marker's name (names sort oldest first).
    newest: Option<String>,
    /// The oldest names, oldest first: as many as were asked for, at most.
    oldest: Vec<String>,
}

impl Survey {
    /// Counts `name` in, keeping it if it is the newest or among the `keep` oldest so far.
    fn add(&mut self, name: &str, keep: usize) {
        self.count += 1;
        if self.newest.as_deref().is_none_or(|newest| name > newest) {
            self.newest = Some(name.to_owned());
        }
        if self.oldest.len() < keep || self.oldest.last().is_some_and(|last| name < last.as_str()) {
            let at = self.oldest.partition_point(|kept| kept.as_str() < name);
            self.oldest.insert(at, name.to_owned());
            self.oldest.truncate(keep);
        }
    }

    /// The newest marker's stamp (0 when there is none).
    fn newest_stamp(&self) -> u128 {
        self.newest.as_deref().and_then(stamp_of).unwrap_or(0)
    }
}

/// Surveys the markers in `dir`, keeping the `keep` oldest names; `None` when it is missing or
/// not a folder.
fn survey(dir: &Path, keep: usize) -> Option<Survey> {
    let mut survey = Survey::default();
    each_marker(dir, |name| survey.add(name, keep))?;
    Some(survey)
}

/// Makes `dir` a folder: the windows of an earlier wit were one file at that path.
fn ensure_dir(dir: &Path) {
    if dir.is_file() {
        let _ = std::fs::remove_file(dir);
    }
    let _ = std::fs::create_dir_all(dir);
}

/// When a marker was written (its name's first part).
fn stamp_of(name: &str) -> Option<u128> {
    name.split_once('-')?.0.parse().ok()
}

/// The stamp of a new call's markers: now, or just after `newest` (the newest stamp already
/// there) when the clock has not moved past it.
fn next_stamp(newest: u128) -> u128 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    now.max(newest + 1)
}

/// Writes the marker of `window_id`, one of the windows of the call stamped `stamp`.
fn add_marker(dir: &Path, window_id: &str, stamp: u128) {
    let name = format!("{stamp:020}-{}", crate::git::to_hex(window_id.as_bytes()));
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(name));
}

/// Takes the markers of the oldest call that still has any (every window one tool call
/// opened: a patch of several files opens one a file) and their window ids. Only the
/// markers this process removed count: two hooks ending at once take two calls.
fn take_oldest_call(dir: &Path) -> Vec<String> {
    let names = markers(dir);
    let mut taken = Vec::new();
    let mut call = None;
    for name in &names {
        let stamp = stamp_of(name);
        if call.is_some() && stamp != call {
            break;
        }
        if std::fs::remove_file(dir.join(name)).is_ok() {
            call = stamp;
            taken.extend(window_of(name));
        }
    }
    taken
}

/// Opens a window for a tool call the gate let through: one per named file with the texts
/// its edits write, or one naming no file (a shell command, any other tool). Failures are
/// silent: the gate fails open.
pub async fn open(
    doorway: &Doorway,
    paths: &WitPaths,
    session: &str,
    tool: &str,
    files: &[(String, Vec<String>)],
) {
    let names: Vec<(Option<String>, Vec<String>)> = if files.is_empty() {
        vec![(None, Vec::new())]
    } else {
        files
            .iter()
            .map(|(file, texts)| (Some(file.clone()), texts.clone()))
            .collect()
    };
    // One window a file, opened at once, each on a connection of its own.
    let begun = join_all(names.into_iter().map(|(file, texts)| {
        let params = WorkBeginParams {
            session_id: session.to_owned(),
            tool: tool.to_owned(),
            file,
            edits: texts
                .into_iter()
                .map(|new_text| WorkBeginParamsEditsItem {
                    old_text: String::new(),
                    new_text,
                    replace_all: None,
                })
                .collect(),
            ttl_ms: Some(HOOK_WINDOW_TTL_MS),
        };
        doorway.call(move |client| {
            let params = params.clone();
            async move { client.work_begin(params).await }
        })
    }))
    .await;
    let opened: Vec<String> = begun
        .into_iter()
        .filter_map(|begun| begun.ok().map(|b| b.window_id))
        .collect();
    if opened.is_empty() {
        return;
    }
    mark_call(&dir_of(paths, session), &opened);
}

/// Writes the markers of one call's windows into `dir` (made when missing), stamped after
/// every marker already there, and drops the oldest beyond [`MAX_KEPT`] (never the new ones).
fn mark_call(dir: &Path, window_ids: &[String]) {
    // The markers that may have to go: as many as the call adds.
    let before = survey(dir, window_ids.len()).unwrap_or_else(|| {
        ensure_dir(dir);
        Survey::default()
    });
    let stamp = next_stamp(before.newest_stamp());
    for window_id in window_ids {
        add_marker(dir, window_id, stamp);
    }
    let excess = (before.count + window_ids.len()).saturating_sub(MAX_KEPT);
    for name in before.oldest.iter().take(excess) {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

/// Closes the windows of the session's oldest open tool call (the call that just ended: one
/// window, or one a file of a patch); the files they changed.
pub async fn close(doorway: &Doorway, paths: &WitPaths, session: &str) -> Vec<String> {
    let dir = dir_of(paths, session);
    // A call's windows (one a file of a patch) close together, each on a connection of its own.
    let ended = join_all(take_oldest_call(&dir).into_iter().map(|window_id| {
        let params = WorkEndParams {
            session_id: session.to_owned(),
            window_id,
        };
        doorway.call(move |client| {
            let params = params.clone();
            async move { client.work_end(params).await }
        })
    }))
    .await;
    ended
        .into_iter()
        .filter_map(Result::ok)
        .flat_map(|ended| ended.changed.into_iter().map(|c| c.file))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// Each call's windows come back together, oldest call first, whatever their ids; a
    /// later call's stamp follows the newest one even when the clock has not moved.
    #[test]
    fn the_oldest_calls_windows_are_taken_together_in_the_order_of_the_calls() {
        let dir = tempfile::tempdir().unwrap();
        let windows = dir.path().join("s");
        // What an earlier wit left at that path: one file of every id.
        std::fs::write(&windows, br#"{"windows":["w0"]}"#).unwrap();
        ensure_dir(&windows);
        // Stamps far ahead of the clock: only `next_stamp` orders the calls.
        let far = u128::from(u64::MAX);
        for id in ["z-patch a.ts", "a-patch b.ts"] {
            add_marker(&windows, id, far);
        }
        let surveyed = survey(&windows, 1).unwrap();
        assert_eq!(surveyed.count, 2);
        let listed = markers(&windows);
        assert_eq!(surveyed.oldest, listed[..1]);
        assert_eq!(surveyed.newest.as_ref(), listed.last());
        let second = next_stamp(surveyed.newest_stamp());
        assert_eq!(second, far + 1);
        add_marker(&windows, "w 2/é", second);
        let newest = survey(&windows, 0).unwrap().newest_stamp();
        add_marker(&windows, "w-3", next_stamp(newest));
        std::fs::write(windows.join("unrelated.tmp"), b"").unwrap();
        std::fs::write(windows.join("x-6161"), b"").unwrap();
        let mut first = take_oldest_call(&windows);
        first.sort();
        assert_eq!(first, ["a-patch b.ts", "z-patch a.ts"]);
        assert_eq!(take_oldest_call(&windows), ["w 2/é"]);
        assert_eq!(take_oldest_call(&windows), ["w-3"]);
        assert!(take_oldest_call(&windows).is_empty());
    }

    /// A folder keeps the newest [`MAX_KEPT`] markers: each call drops the oldest beyond
    /// them, and a call never drops its own.
    #[test]
    fn a_folder_keeps_the_newest_markers() {
        let dir = tempfile::tempdir().unwrap();
        let windows = dir.path().join("s");
        for call in 0..MAX_KEPT + 3 {
            mark_call(&windows, &[format!("w{call}")]);
        }
        let kept = markers(&windows);
        assert_eq!(kept.len(), MAX_KEPT);
        assert_eq!(window_of(&kept[0]).as_deref(), Some("w3"));
        let patch: Vec<String> = (0..MAX_KEPT + 1).map(|file| format!("p{file}")).collect();
        mark_call(&windows, &patch);
        let kept = markers(&windows);
        assert_eq!(kept.len(), MAX_KEPT + 1);
        assert!(kept
            .iter()
            .all(|name| window_of(name).is_some_and(|id| id.starts_with('p'))));
    }

    #[test]
    fn a_missing_folder_has_no_markers() {
        let dir = tempfile::tempdir().unwrap();
        assert!(markers(&dir.path().join("none")).is_empty());
        assert_eq!(survey(&dir.path().join("none"), 1), None);
        assert_eq!(window_of("123-zz"), None);
        assert_eq!(window_of("123-"), Some(String::new()));
    }
}
