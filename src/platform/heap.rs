//! Hands the memory the daemon freed back to the system. glibc keeps freed memory in its
//! arenas for reuse and gives back only the top of a heap: after a large file's parse or
//! preflight (hundreds of MB at 8 MiB) the daemon stayed at its peak for good, with a fraction
//! of it live (issue 32.7: 92 MB resident, 27 MB live, after a 4.5 MiB file was deleted).
//! `malloc_trim(0)` returns every whole free page of every arena.
//!
//! [`FreedMemory`] decides when: the daemon's pulse asks it about once a second, and it trims
//! only when the resident set grew by [`GROWTH_TO_TRIM`] since the last trim (work that
//! left freed memory behind) or when told that something large was dropped. Reading the
//! resident set is one small `/proc` read; a trim walks the arenas (about a millisecond per
//! 100 MB of heap) and runs on the pulse's blocking thread.
//!
//! [`tune_allocator`] sets glibc's malloc up for a long-lived daemon at its start, and
//! [`allocator_env`] passes the same settings to its parse workers.
//!
//! Elsewhere (macOS, musl, Windows) it does nothing: those allocators return large freed
//! blocks themselves and have no such call.

/// glibc's malloc settings of the daemon and its parse workers: each one's environment
/// variable, `mallopt` parameter and value.
///
/// - glibc's malloc gives every thread that allocates concurrently an arena of its own (up
///   to 8 per core), and each arena keeps the peak it once reached: a daemon that answers
///   large requests on many threads grows for good. At most two arenas: no throughput change,
///   about a third less resident memory after heavy large-file traffic (BENCHMARKS.md).
/// - glibc also raises its mmap threshold to the largest block ever freed (up to 32 MiB), so
///   after one large file the transient megabytes of every later request (a file's text, its
///   analysis' encoding, SQLite's copy of a blob) come from the heap and stay resident, in
///   pieces no trim can give back. A fixed 1 MiB threshold (and trim threshold) keeps each
///   such block in a mapping of its own, returned when freed: RSS after a 4 MiB file's
///   preflight 254 → 177 MB (issue 32.7).
/// - With that trim threshold alone, a heap's top was given back after each request of more
///   than a megabyte of transients (a recorded edit of a 169 KB file: its text, its lines,
///   the owner map's entries, several times over) and taken again by the next, page by
///   fresh zeroed page: 33 to 325 page faults per `wit hook pre-edit` on that file. A 4 MiB
///   top pad keeps that much at each heap's top when it grows or is trimmed: 0.2 faults per
///   hook, p50 3.61–3.95 → 3.04–3.20 ms (docs/benchmarks-history.md). The pulse's
///   `malloc_trim(0)` still gives the pad back when the resident set grows.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MALLOC_SETTINGS: [(&str, i32, i32); 4] = [
    ("MALLOC_ARENA_MAX", libc::M_ARENA_MAX, 2),
    ("MALLOC_MMAP_THRESHOLD_", libc::M_MMAP_THRESHOLD, 1 << 20),
    ("MALLOC_TRIM_THRESHOLD_", libc::M_TRIM_THRESHOLD, 1 << 20),
    ("MALLOC_TOP_PAD_", libc::M_TOP_PAD, 4 << 20),
];

/// Elsewhere the allocator has none of these settings.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
const MALLOC_SETTINGS: [(&str, i32, i32); 0] = [];

/// The [`MALLOC_SETTINGS`] this process's environment does not set already (glibc read an
/// explicit one at the start, and a child inherits it).
fn unset_settings() -> impl Iterator<Item = (&'static str, i32, i32)> {
    MALLOC_SETTINGS
        .into_iter()
        .filter(|(name, _, _)| std::env::var_os(name).is_none())
}

/// Applies [`MALLOC_SETTINGS`] to this process, each one its environment does not set already;
/// call it before the process starts a thread (the arena bound holds for arenas made after
/// it). Until 2026-12-05 the daemon executed itself again with the variables set instead: 2 ms
/// of every start (issue 32.3).
pub fn tune_allocator() {
    for (_, param, value) in unset_settings() {
        set_malloc_option(param, value);
    }
}

/// The [`MALLOC_SETTINGS`] a child process should be given as environment variables: the
/// ones this process's environment does not set.
pub fn allocator_env() -> impl Iterator<Item = (&'static str, String)> {
    unset_settings().map(|(name, _, value)| (name, value.to_string()))
}

/// `mallopt(param, value)`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(
    unsafe_code,
    reason = "glibc's mallopt: no pointers, nothing to uphold"
)]
fn set_malloc_option(param: i32, value: i32) {
    // SAFETY: mallopt takes two integers and changes only glibc's own parameters, under its
    // lock.
    unsafe { libc::mallopt(param, value) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_malloc_option(_param: i32, _value: i32) {}

/// Growth of the resident set since the last trim (bytes) that makes the next pulse trim.
pub const GROWTH_TO_TRIM: u64 = 8 << 20;

/// What a trim did: the resident set before and after, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trimmed {
    /// Resident set before the trim.
    pub before: u64,
    /// Resident set after it.
    pub after: u64,
}

/// The daemon's record of its resident set at the last trim.
#[derive(Debug, Default)]
pub struct FreedMemory {
    /// Resident set (bytes) right after the last trim, or when first asked.
    baseline: Option<u64>,
}

impl FreedMemory {
    /// A record with no baseline yet (the first call sets it).
    pub fn new() -> FreedMemory {
        FreedMemory::default()
    }

    /// Trims when the resident set grew by [`GROWTH_TO_TRIM`] since the last trim, or when
    /// `dropped_large` (the caller just dropped something large); what the trim did.
    pub fn release(&mut self, dropped_large: bool) -> Option<Trimmed> {
        let now = resident()?;
        let baseline = *self.baseline.get_or_insert(now);
        if now < baseline {
            // The allocator gave memory back by itself: a lower floor to grow from.
            self.baseline = Some(now);
        }
        if !dropped_large && now < baseline.saturating_add(GROWTH_TO_TRIM) {
            return None;
        }
        if !trim() {
            self.baseline = Some(now);
            return None;
        }
        let after = resident().unwrap_or(now);
        self.baseline = Some(after);
        Some(Trimmed { before: now, after })
    }
}

/// This process's resident set, in bytes.
fn resident() -> Option<u64> {
    super::process::resident_bytes(std::process::id())
}

/// `malloc_trim(0)`; whether the allocator could be asked.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(
    unsafe_code,
    reason = "glibc's malloc_trim: no pointers, nothing to uphold"
)]
fn trim() -> bool {
    // SAFETY: malloc_trim takes no pointers and has no precondition; glibc locks each arena
    // while it walks it, so it is safe beside allocations on other threads.
    unsafe { libc::malloc_trim(0) };
    true
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    /// Freed memory goes back: a large heap block's pages, written and freed among live
    /// allocations (so glibc cannot give it back from the top of its heap), come back on the
    /// trim a drop asks for.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_drop_gives_freed_pages_back() {
        let mut freed = FreedMemory::new();
        assert_eq!(
            freed.release(false),
            None,
            "the first call sets the baseline"
        );
        // Many small blocks (under the mmap threshold, so on the heap), every other one kept.
        let mut blocks: Vec<Vec<u8>> = (0..40_000).map(|i| vec![(i as u8) | 1; 2048]).collect();
        let kept: Vec<Vec<u8>> = blocks
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| i % 64 == 0)
            .map(|(_, b)| std::mem::take(b))
            .collect();
        drop(blocks);
        let trimmed = freed.release(true).expect("a trim was asked for");
        assert!(
            trimmed.after + (16 << 20) < trimmed.before,
            "{trimmed:?}: about 78 MB were freed"
        );
        assert_eq!(kept.len(), 625);
    }
}
