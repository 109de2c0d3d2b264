//! The pulse's memory step: drops the index's analysis of a large file no longer as it was,
//! then hands freed memory back to the system ([`crate::platform::heap`]) when the daemon
//! grew or something large was dropped (issue 32.7).

use std::sync::{Arc, Mutex};

use crate::analysis::RepoIndex;
use crate::platform::heap::FreedMemory;

/// What the pulse keeps between its memory steps.
pub(super) struct MemoryUpkeep {
    /// The main worktree's index (linked worktrees share its parse cache).
    index: Arc<RepoIndex>,
    freed: Mutex<FreedMemory>,
}

impl MemoryUpkeep {
    /// The upkeep of `index`'s cache and of the process's heap.
    pub(super) fn new(index: Arc<RepoIndex>) -> MemoryUpkeep {
        MemoryUpkeep {
            index,
            freed: Mutex::new(FreedMemory::new()),
        }
    }

    /// One step (blocking: a `stat` or two, and a trim when one is due).
    pub(super) fn run(&self) {
        let dropped = self.index.release_stale_analyses();
        if let Some(bytes) = dropped {
            tracing::debug!(
                bytes,
                "dropped the analysis of a large file no longer on disk as it was"
            );
        }
        let started = std::time::Instant::now();
        let trimmed = self
            .freed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .release(dropped.is_some());
        if let Some(trimmed) = trimmed {
            tracing::debug!(
                before_kib = trimmed.before / 1024,
                after_kib = trimmed.after / 1024,
                micros = started.elapsed().as_micros(),
                "handed freed memory back"
            );
        }
    }
}
