//! A content-addressed cache of analyses, bounded by the memory they take, evicting the least
//! recently used entry. Disk parses and `analyze_content` share it, so staged content equal
//! to the working copy costs no parse. An analysis heavier than the whole bound is kept too,
//! alone in a slot of its own (the last such one): otherwise every call on a huge file would
//! decode its analysis again (issue 32.5: 128k one-line functions, 40× the cost of 64k).
//! That slot holds its analysis only while it is worth its memory (tens of MB): while a file it
//! was read for is still on disk as it was then, or, read for no file (staged content), for
//! [`UNVOUCHED_OVERSIZE_TTL`] after its last use; [`ContentCache::release_stale_oversize`],
//! run by the daemon's pulse, drops it otherwise (issue 32.7: a deleted 8 MiB file's analysis
//! held 60 MB for good).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::language::Language;
use super::model::FileAnalysis;

/// Identifies content: language, length and its 128-bit XXH3 hash (a well-mixed hash at
/// memory speed: `check-contracts` hashes MBs of staged content on every call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ContentKey {
    language: Language,
    len: usize,
    hash: u128,
}

impl ContentKey {
    /// The key of `content` parsed as `language`.
    pub(crate) fn new(language: Language, content: &str) -> ContentKey {
        ContentKey {
            language,
            len: content.len(),
            hash: xxhash_rust::xxh3::xxh3_128(content.as_bytes()),
        }
    }

    /// The key of content of `len` bytes whose hash is `hash` (as stored in the index).
    pub(crate) fn from_parts(language: Language, len: usize, hash: u128) -> ContentKey {
        ContentKey {
            language,
            len,
            hash,
        }
    }

    /// The content's hash.
    pub(crate) fn hash(&self) -> u128 {
        self.hash
    }

    /// The language the content is parsed as.
    pub(crate) fn language(&self) -> Language {
        self.language
    }
}

/// How long an oversize analysis that no file vouches for stays after its last use.
pub(crate) const UNVOUCHED_OVERSIZE_TTL: Duration = Duration::from_secs(60);

/// The most files one oversize analysis remembers as read for (the same content in a few
/// worktrees; a further one replaces the oldest).
const MAX_VOUCHERS: usize = 8;

/// A file an analysis was read for, with the size and mtime it had then: the analysis stands
/// for the file while both are unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileStamp {
    /// The file's path (absolute, or as the index reaches it).
    pub(crate) path: PathBuf,
    /// Its size when read.
    pub(crate) size: u64,
    /// Its mtime when read.
    pub(crate) mtime: Option<SystemTime>,
}

impl FileStamp {
    /// Whether the file is still there with the size and mtime it had.
    fn unchanged(&self) -> bool {
        std::fs::metadata(&self.path)
            .is_ok_and(|meta| meta.len() == self.size && meta.modified().ok() == self.mtime)
    }
}

struct Entry {
    analysis: Arc<FileAnalysis>,
    /// What the analysis costs in memory ([`FileAnalysis::approx_heap_bytes`]).
    weight: usize,
    last_used: u64,
}

/// The analysis outside the bound, with what keeps it.
struct Oversize {
    key: ContentKey,
    entry: Entry,
    /// The files it was read for ([`ContentCache::vouch`]).
    vouchers: Vec<FileStamp>,
    /// When it was last inserted or found.
    used_at: Instant,
}

struct Inner {
    entries: HashMap<ContentKey, Entry>,
    bytes: usize,
    tick: u64,
    /// The last analysis heavier than the capacity, outside the bound (at most one: what a
    /// file under the index's size limit analyses to).
    oversize: Option<Oversize>,
}

/// The cache. Cheap to share; all methods take `&self`.
pub(crate) struct ContentCache {
    inner: Mutex<Inner>,
    capacity: usize,
}

impl ContentCache {
    /// A cache holding analyses that take at most `capacity` bytes of memory (as
    /// [`FileAnalysis::approx_heap_bytes`] counts them; an analysis is several times the size
    /// of its source, so a bound on source bytes would not bound memory).
    pub(crate) fn new(capacity: usize) -> ContentCache {
        ContentCache {
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                bytes: 0,
                tick: 0,
                oversize: None,
            }),
            capacity,
        }
    }

    /// The cached analysis of this content, if any, marked as just used.
    pub(crate) fn get(&self, key: &ContentKey) -> Option<Arc<FileAnalysis>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.tick += 1;
        let tick = inner.tick;
        if let Some(entry) = inner.entries.get_mut(key) {
            entry.last_used = tick;
            return Some(Arc::clone(&entry.analysis));
        }
        match &mut inner.oversize {
            Some(oversize) if oversize.key == *key => {
                oversize.used_at = Instant::now();
                Some(Arc::clone(&oversize.entry.analysis))
            }
            _ => None,
        }
    }

    /// Remembers an analysis; evicts the least recently used entries beyond the capacity. One
    /// heavier than the capacity takes the oversize slot, in place of the one there (a cache of
    /// capacity 0 keeps nothing at all).
    pub(crate) fn insert(&self, key: ContentKey, analysis: Arc<FileAnalysis>) {
        if self.capacity == 0 {
            return;
        }
        let weight = analysis.approx_heap_bytes();
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.tick += 1;
        let tick = inner.tick;
        if weight > self.capacity {
            inner.oversize = Some(Oversize {
                key,
                entry: Entry {
                    analysis,
                    weight,
                    last_used: tick,
                },
                vouchers: Vec::new(),
                used_at: Instant::now(),
            });
            return;
        }
        let replaced = inner.entries.insert(
            key,
            Entry {
                analysis,
                weight,
                last_used: tick,
            },
        );
        inner.bytes += weight;
        if let Some(old) = replaced {
            inner.bytes = inner.bytes.saturating_sub(old.weight);
        }
        while inner.bytes > self.capacity {
            let Some((oldest, weight)) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, e)| (*k, e.weight))
            else {
                break;
            };
            inner.entries.remove(&oldest);
            inner.bytes = inner.bytes.saturating_sub(weight);
        }
    }

    /// The most the cached analyses may weigh.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The weight of the cached analyses within the bound now (at most the capacity).
    pub(crate) fn bytes(&self) -> usize {
        self.inner.lock().map(|i| i.bytes).unwrap_or(0)
    }

    /// The weight of the analysis in the oversize slot (0 when it is empty).
    pub(crate) fn oversize_bytes(&self) -> usize {
        self.inner
            .lock()
            .ok()
            .and_then(|i| i.oversize.as_ref().map(|oversize| oversize.entry.weight))
            .unwrap_or(0)
    }

    /// Whether the analysis of `key` is the one in the oversize slot.
    pub(crate) fn is_oversize(&self, key: &ContentKey) -> bool {
        self.inner
            .lock()
            .is_ok_and(|i| i.oversize.as_ref().is_some_and(|o| o.key == *key))
    }

    /// Records that the oversize analysis of `key` (if that is the one in the slot) was read
    /// for the file `stamp`: it stays while that file is unchanged.
    pub(crate) fn vouch(&self, key: &ContentKey, stamp: FileStamp) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(oversize) = inner.oversize.as_mut().filter(|o| o.key == *key) else {
            return;
        };
        oversize.vouchers.retain(|known| known.path != stamp.path);
        if oversize.vouchers.len() >= MAX_VOUCHERS {
            oversize.vouchers.remove(0);
        }
        oversize.vouchers.push(stamp);
    }

    /// Drops the oversize analysis when no file it was read for is still as it was (or, read
    /// for none, when it went unused for [`UNVOUCHED_OVERSIZE_TTL`]); the weight dropped. The
    /// files are looked at without the lock held.
    pub(crate) fn release_stale_oversize(&self) -> Option<usize> {
        let (key, vouchers, used_at) = {
            let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let oversize = inner.oversize.as_ref()?;
            (oversize.key, oversize.vouchers.clone(), oversize.used_at)
        };
        let keep = if vouchers.is_empty() {
            used_at.elapsed() < UNVOUCHED_OVERSIZE_TTL
        } else {
            vouchers.iter().any(FileStamp::unchanged)
        };
        if keep {
            return None;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        // Vouched for or replaced meanwhile: not this pass's to drop.
        let unchanged_since = inner
            .oversize
            .as_ref()
            .is_some_and(|o| o.key == key && o.vouchers == vouchers);
        if !unchanged_since {
            return None;
        }
        inner.oversize.take().map(|oversize| oversize.entry.weight)
    }

    /// Number of cached analyses.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().map(|i| i.entries.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn evicts_least_recently_used_by_weight() {
        let one = FileAnalysis::default().approx_heap_bytes();
        let cache = ContentCache::new(2 * one + one / 2);
        let a = ContentKey::new(Language::Python, "aaaa");
        let b = ContentKey::new(Language::Python, "bbbb");
        let c = ContentKey::new(Language::Python, "cccc");
        cache.insert(a, Arc::default());
        cache.insert(b, Arc::default());
        assert!(cache.get(&a).is_some());
        cache.insert(c, Arc::default());
        assert!(cache.get(&a).is_some());
        assert!(cache.get(&b).is_none(), "b was least recently used");
        assert!(cache.get(&c).is_some());
        assert_eq!(cache.len(), 2);
        // An analysis heavier than the whole cache (however short its source) takes the
        // oversize slot: kept, evicting nothing, and replaced by the next such one.
        let heavy_source = |n: usize| -> String {
            (0..50)
                .map(|i| format!("def f{n}_{i}(a, b=1):\n    return g(a)\n"))
                .collect()
        };
        let (first, second) = (heavy_source(1), heavy_source(2));
        let heavy = Arc::new(crate::analysis::analyze(Language::Python, &first));
        assert!(heavy.approx_heap_bytes() > 3 * one);
        let first_key = ContentKey::new(Language::Python, &first);
        cache.insert(first_key, Arc::clone(&heavy));
        assert!(cache.get(&first_key).is_some());
        assert_eq!(cache.oversize_bytes(), heavy.approx_heap_bytes());
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&a).is_some() && cache.get(&c).is_some());
        let second_key = ContentKey::new(Language::Python, &second);
        cache.insert(
            second_key,
            Arc::new(crate::analysis::analyze(Language::Python, &second)),
        );
        assert!(cache.get(&second_key).is_some());
        assert!(
            cache.get(&first_key).is_none(),
            "one oversize analysis at a time"
        );
        assert!(cache.bytes() <= cache.capacity());
    }

    /// The oversize analysis stays while a file it was read for is as it was, and goes once
    /// that file changes or goes; one read for no file stays while it is used.
    #[test]
    fn an_oversize_analysis_goes_with_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let source: String = (0..50)
            .map(|i| format!("def f{i}(a, b=1):\n    return g(a)\n"))
            .collect();
        let path = dir.path().join("big.py");
        std::fs::write(&path, &source).unwrap();
        let analysis = Arc::new(crate::analysis::analyze(Language::Python, &source));
        let cache = ContentCache::new(analysis.approx_heap_bytes() / 2);
        let key = ContentKey::new(Language::Python, &source);
        cache.insert(key, Arc::clone(&analysis));
        assert!(cache.is_oversize(&key));
        assert_eq!(
            cache.release_stale_oversize(),
            None,
            "read for no file, and just used: kept"
        );
        let meta = std::fs::metadata(&path).unwrap();
        let stamp = FileStamp {
            path: path.clone(),
            size: meta.len(),
            mtime: meta.modified().ok(),
        };
        cache.vouch(&key, stamp.clone());
        // A second worktree's copy vouches too; the first one's change leaves it standing.
        let copy = dir.path().join("copy.py");
        std::fs::write(&copy, &source).unwrap();
        let copy_meta = std::fs::metadata(&copy).unwrap();
        cache.vouch(
            &key,
            FileStamp {
                path: copy.clone(),
                size: copy_meta.len(),
                mtime: copy_meta.modified().ok(),
            },
        );
        assert_eq!(
            cache.release_stale_oversize(),
            None,
            "both files as they were"
        );
        std::fs::write(&path, format!("{source}# more\n")).unwrap();
        assert_eq!(
            cache.release_stale_oversize(),
            None,
            "the copy still holds it"
        );
        std::fs::remove_file(&copy).unwrap();
        assert_eq!(
            cache.release_stale_oversize(),
            Some(analysis.approx_heap_bytes()),
            "no file holds that content any more"
        );
        assert!(cache.get(&key).is_none());
        assert_eq!(cache.oversize_bytes(), 0);
        assert_eq!(cache.release_stale_oversize(), None, "nothing left to drop");
    }

    /// An analysis weighs more than its bare records: every string counts.
    #[test]
    fn weight_grows_with_the_analysis() {
        let small = crate::analysis::analyze(Language::TypeScript, "function f(a: number) {}\n");
        let source: String = (0..100)
            .map(|i| format!("function f{i}(a: number) {{ return g(a); }}\n"))
            .collect();
        let large = crate::analysis::analyze(Language::TypeScript, &source);
        assert!(small.approx_heap_bytes() > FileAnalysis::default().approx_heap_bytes());
        assert!(large.approx_heap_bytes() > 50 * small.approx_heap_bytes() / 2);
    }

    #[test]
    fn language_is_part_of_the_key() {
        assert_ne!(
            ContentKey::new(Language::TypeScript, "x"),
            ContentKey::new(Language::Tsx, "x")
        );
    }

    #[test]
    fn every_byte_reaches_the_hash() {
        let base: Vec<u8> = (0..37u8).map(|b| b'a' + b % 26).collect();
        let key = |bytes: &[u8]| {
            ContentKey::new(Language::TypeScript, std::str::from_utf8(bytes).unwrap())
        };
        assert_eq!(key(&base), key(&base.clone()));
        for i in 0..base.len() {
            let mut edited = base.clone();
            edited[i] = if edited[i] == b'z' { b'y' } else { b'z' };
            assert_ne!(key(&base).hash, key(&edited).hash, "byte {i}");
        }
    }
}
