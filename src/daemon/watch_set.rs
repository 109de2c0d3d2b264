//! Keeping a worktree's set of watched directories complete (issue 35): a directory is
//! watched *before* it is listed, so one made meanwhile is either in the listing or reported
//! by its parent's watch; and a cheap check — one `stat` of the worktree's git index per
//! pass — tells when git may know directories the set lacks (a checkout still writing the
//! tree when the worktree was first listed, a burst of creations whose events overflowed),
//! and then the set is compared with what git knows again.
//!
//! The functions here are the rules; [`super::worktree_observer`] holds the watcher.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The file in the repository's `.wit/` where the daemon publishes which worktrees it polls
/// instead of watching, and why (what `wit status` shows; no protocol method is involved).
pub const WATCH_STATUS: &str = "watch.json";

/// Environment variable: `poll` makes the daemon poll every worktree instead of watching
/// (file systems without notification, e.g. some network mounts).
pub const WATCH_ENV: &str = "WIT_WATCH";

/// How the daemon observes the worktrees, as published in [`WATCH_STATUS`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchStatus {
    /// The daemon that wrote it.
    pub pid: u32,
    /// The worktrees read on a timer instead of watched (the polling fallback).
    pub polled: Vec<String>,
    /// Why, when some are.
    pub reason: Option<String>,
}

impl WatchStatus {
    /// Writes the status into the state directory `dir` (whole, through a renamed file).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let path = dir.join(WATCH_STATUS);
        let partial = dir.join(format!("{WATCH_STATUS}.tmp"));
        std::fs::write(&partial, serde_json::to_vec(self).unwrap_or_default())?;
        std::fs::rename(partial, path)
    }

    /// The status published in `path`, if any.
    pub fn read(path: &Path) -> Option<WatchStatus> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// The line `wit status` shows.
    pub fn summary(&self) -> String {
        if self.polled.is_empty() {
            return "file-system notification".to_owned();
        }
        format!(
            "polling {} worktree(s) every {} ms ({}): {}",
            self.polled.len(),
            super::worktree_observer::FALLBACK_POLL.as_millis(),
            self.reason.as_deref().unwrap_or("no notification"),
            self.polled.join(", ")
        )
    }
}

/// The most directories one walk watches (a directory made by a move or a checkout arrives
/// whole; past this, the periodic check against git finds the rest).
pub const MAX_WALK: usize = 4_096;

/// What a file looked like: enough to tell that it was written since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

/// The stamp of `path` (`None`: it does not exist).
pub fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}

/// The git directory of the worktree at `root`: `<root>/.git` for a main worktree, the
/// directory a linked worktree's `.git` file points to otherwise.
pub fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let gitdir = Path::new(text.trim().strip_prefix("gitdir:")?.trim());
    Some(if gitdir.is_absolute() {
        gitdir.to_path_buf()
    } else {
        root.join(gitdir)
    })
}

/// The git index of the worktree at `root` (in its [`git_dir`]). Written by every checkout,
/// reset and `git add`: when it changes, what git knows may have.
pub fn index_file(root: &Path) -> Option<PathBuf> {
    git_dir(root).map(|dir| dir.join("index"))
}

/// Whether a directory of a worktree is never watched: git's and wit's own.
pub fn is_own_dir(relative: &Path) -> bool {
    relative
        .components()
        .next()
        .is_some_and(|c| c.as_os_str() == ".git" || c.as_os_str() == ".wit")
}

/// Watches `dir` and the directories below it, each one watched before it is listed; `watch`
/// places one watch (false: it could not). The directories watched, or the first one whose
/// watch failed. `.git` and `.wit` are left out; at most [`MAX_WALK`] directories.
pub fn watch_tree(
    root: &Path,
    dir: &Path,
    watch: &mut dyn FnMut(&Path) -> bool,
) -> Result<Vec<PathBuf>, PathBuf> {
    let mut found = vec![dir.to_path_buf()];
    let mut next = 0;
    while next < found.len() && found.len() < MAX_WALK {
        let at = found[next].clone();
        next += 1;
        if !watch(&at) {
            return Err(at);
        }
        // Listed after its watch is in place.
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let own = path.strip_prefix(root).is_ok_and(is_own_dir);
            if !own && entry.file_type().is_ok_and(|t| t.is_dir()) {
                found.push(path);
            }
        }
    }
    Ok(found)
}

/// The directories of `known` (what git knows of a worktree) that `watched` lacks.
pub fn missing<'k>(known: &'k [PathBuf], watched: &HashMap<PathBuf, PathBuf>) -> Vec<&'k PathBuf> {
    known
        .iter()
        .filter(|dir| !watched.contains_key(*dir))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_tree_is_watched_before_it_is_listed_and_without_gits_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["a/b/c", ".git/objects", "a/.wit", "d"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let mut order = Vec::new();
        let mut watch = |dir: &Path| {
            // A directory made while the walk is under way, inside one already watched
            // and not yet listed, is found by the listing that follows.
            if dir == root.join("a/b") {
                std::fs::create_dir_all(root.join("a/b/late")).unwrap();
            }
            order.push(dir.strip_prefix(root).unwrap().to_path_buf());
            true
        };
        let watched = watch_tree(root, root, &mut watch).unwrap();
        assert_eq!(watched.len(), order.len());
        let names: Vec<String> = order.iter().map(|p| p.display().to_string()).collect();
        assert!(names.contains(&"a/b/late".to_owned()), "{names:?}");
        assert!(!names.iter().any(|n| n.starts_with(".git")), "{names:?}");
        // root, a, d, a/b, a/.wit (only the root's .wit is wit's), a/b/c, a/b/late.
        assert_eq!(names.len(), 7, "{names:?}");
        let mut failing = |dir: &Path| dir != root.join("d");
        assert_eq!(watch_tree(root, root, &mut failing), Err(root.join("d")));
    }

    #[test]
    fn a_linked_worktrees_index_is_in_its_git_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("w");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join(".git"), "gitdir: /r/.git/worktrees/w\n").unwrap();
        assert_eq!(
            index_file(&root),
            Some(PathBuf::from("/r/.git/worktrees/w/index"))
        );
        std::fs::create_dir_all(dir.path().join("m/.git")).unwrap();
        assert_eq!(
            index_file(&dir.path().join("m")),
            Some(dir.path().join("m/.git/index"))
        );
        let file = dir.path().join("f");
        assert_eq!(stamp(&file), None);
        std::fs::write(&file, "x").unwrap();
        let first = stamp(&file).unwrap();
        std::fs::write(&file, "xy").unwrap();
        assert_ne!(stamp(&file), Some(first));
    }

    #[test]
    fn what_git_knows_and_the_set_lacks() {
        let known = [PathBuf::from("/r/a"), PathBuf::from("/r/b")];
        let watched: HashMap<PathBuf, PathBuf> =
            [(PathBuf::from("/r/a"), PathBuf::from("/r"))].into();
        assert_eq!(missing(&known, &watched), [&PathBuf::from("/r/b")]);
    }
}
