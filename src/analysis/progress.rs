//! How far the index build is: counters the build threads bump, and their publication as a
//! small JSON file (`.wit/index.json`) that `wit daemon status`, `wit status` and the progress
//! bar of `wit init` / `wit daemon start` read. There is no protocol method for it: the file
//! is the daemon's side channel, like `daemon.json`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How often a running build rewrites the status file.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// The index's state as published.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexStatus {
    /// The daemon that writes the file.
    pub pid: u32,
    /// Source files the build walks.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files looked at so far (reused or parsed).
    pub files_done: usize,
    /// Their bytes.
    pub bytes_done: u64,
    /// Parses so far (files whose size or mtime changed, or new ones).
    pub parsed: usize,
    /// Whether the build is complete (callers and callees answer without waiting).
    pub complete: bool,
    /// Time since the build started, or its duration once complete.
    pub elapsed_ms: u64,
    /// About how many bytes the index holds in memory (graph and parse cache), once complete.
    #[serde(default)]
    pub heap_bytes: u64,
}

impl IndexStatus {
    /// Reads a status file; `None` when it is missing or unreadable.
    pub fn read(path: &Path) -> Option<IndexStatus> {
        let text = std::fs::read(path).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// One line for people: `1603 files, 27.9 MB, complete in 3.1 s (1603 parsed)` or
    /// `indexing 812/1603 files (14.0/27.9 MB, 51%)`.
    pub fn describe(&self) -> String {
        let mb = |b: u64| b as f64 / 1e6;
        if self.complete {
            format!(
                "{} files, {:.1} MB, complete in {:.1} s ({} parsed; {:.1} MB in memory)",
                self.files,
                mb(self.bytes),
                self.elapsed_ms as f64 / 1e3,
                self.parsed,
                mb(self.heap_bytes)
            )
        } else {
            format!(
                "indexing {}/{} files ({:.1}/{:.1} MB, {}%)",
                self.files_done,
                self.files,
                mb(self.bytes_done),
                mb(self.bytes),
                self.percent()
            )
        }
    }

    /// One line without timings or counts of work (for `wit status`): `1603 files, 27.9 MB,
    /// complete`, or the progress as [`IndexStatus::describe`] gives it.
    pub fn summary(&self) -> String {
        if self.complete {
            format!(
                "{} files, {:.1} MB, complete",
                self.files,
                self.bytes as f64 / 1e6
            )
        } else {
            self.describe()
        }
    }

    /// Bytes done in percent (100 when complete or empty).
    pub fn percent(&self) -> u64 {
        if self.complete || self.bytes == 0 {
            100
        } else {
            (self.bytes_done * 100 / self.bytes).min(99)
        }
    }
}

/// The live counters of a build, and where they are published.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    file: Option<PathBuf>,
    files: AtomicUsize,
    bytes: AtomicU64,
    files_done: AtomicUsize,
    bytes_done: AtomicU64,
    parsed: AtomicUsize,
    complete: AtomicBool,
    heap_bytes: AtomicU64,
    timing: Mutex<Timing>,
}

#[derive(Debug, Default)]
struct Timing {
    started: Option<Instant>,
    published: Option<Instant>,
    took: Duration,
}

impl Progress {
    /// Counters published to `file`.
    pub(crate) fn to_file(file: PathBuf) -> Progress {
        Progress {
            file: Some(file),
            ..Progress::default()
        }
    }

    /// A build of `files` files and `bytes` bytes starts.
    pub(crate) fn start(&self, files: usize, bytes: u64) {
        self.files.store(files, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
        self.files_done.store(0, Ordering::Relaxed);
        self.bytes_done.store(0, Ordering::Relaxed);
        self.complete.store(false, Ordering::Relaxed);
        {
            let mut timing = self.timing();
            timing.started = Some(Instant::now());
            timing.published = None;
        }
        self.publish();
    }

    /// One file of `bytes` bytes was looked at.
    pub(crate) fn file_done(&self, bytes: u64) {
        self.files_done.fetch_add(1, Ordering::Relaxed);
        self.bytes_done.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Publishes when the last publication is older than 250 ms.
    pub(crate) fn publish_if_due(&self, parsed: usize) {
        self.parsed.store(parsed, Ordering::Relaxed);
        let due = self
            .timing()
            .published
            .is_none_or(|at| at.elapsed() >= PUBLISH_EVERY);
        if due {
            self.publish();
        }
    }

    /// The build is complete, after `parsed` parses in all, and the index holds about
    /// `heap_bytes` bytes.
    pub(crate) fn finish(&self, parsed: usize, heap_bytes: usize) {
        self.parsed.store(parsed, Ordering::Relaxed);
        self.heap_bytes.store(
            u64::try_from(heap_bytes).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        {
            let mut timing = self.timing();
            timing.took = timing.started.map(|s| s.elapsed()).unwrap_or_default();
        }
        self.complete.store(true, Ordering::Release);
        self.publish();
    }

    /// The counters now.
    pub(crate) fn snapshot(&self) -> IndexStatus {
        let complete = self.complete.load(Ordering::Acquire);
        let elapsed = {
            let timing = self.timing();
            if complete {
                timing.took
            } else {
                timing.started.map(|s| s.elapsed()).unwrap_or_default()
            }
        };
        IndexStatus {
            pid: std::process::id(),
            files: self.files.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            files_done: self.files_done.load(Ordering::Relaxed),
            bytes_done: self.bytes_done.load(Ordering::Relaxed),
            parsed: self.parsed.load(Ordering::Relaxed),
            complete,
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            heap_bytes: self.heap_bytes.load(Ordering::Relaxed),
        }
    }

    /// Writes the status file (to a temporary name, then renamed: readers never see half).
    fn publish(&self) {
        self.timing().published = Some(Instant::now());
        let Some(file) = &self.file else { return };
        let Ok(json) = serde_json::to_vec(&self.snapshot()) else {
            return;
        };
        let mut temporary = file.as_os_str().to_owned();
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        let written =
            std::fs::write(&temporary, json).and_then(|()| std::fs::rename(&temporary, file));
        if let Err(error) = written {
            tracing::debug!(%error, "index status not published");
        }
    }

    fn timing(&self) -> std::sync::MutexGuard<'_, Timing> {
        self.timing.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_build_is_published_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.json");
        let progress = Progress::to_file(path.clone());
        progress.start(4, 1_000_000);
        progress.file_done(500_000);
        progress.publish();
        let status = IndexStatus::read(&path).unwrap();
        assert!(!status.complete);
        assert_eq!(
            (status.files, status.files_done, status.percent()),
            (4, 1, 50)
        );
        assert!(
            status.describe().starts_with("indexing 1/4 files"),
            "{}",
            status.describe()
        );
        progress.finish(3, 1000);
        let status = IndexStatus::read(&path).unwrap();
        assert!(status.complete);
        assert_eq!(status.parsed, 3);
        assert!(
            status.describe().contains("complete"),
            "{}",
            status.describe()
        );
    }
}
