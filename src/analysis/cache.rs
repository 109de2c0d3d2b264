//! A content-addressed cache of analyses, bounded by the memory they take, evicting the least
//! recently used entry. Disk parses and `analyze_content` share it, so staged content equal
//! to the working copy costs no parse. An analysis heavier than the whole bound is kept too,
//! alone in a slot of its own (the last such one): otherwise every call on a huge file would
//! decode its analysis again (issue 32.5: 128k one-line functions, 40× the cost of 64k).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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

struct Entry {
    analysis: Arc<FileAnalysis>,
    /// What the analysis costs in memory ([`FileAnalysis::approx_heap_bytes`]).
    weight: usize,
    last_used: u64,
}

struct Inner {
    entries: HashMap<ContentKey, Entry>,
    bytes: usize,
    tick: u64,
    /// The last analysis heavier than the capacity, outside the bound (at most one: what a
    /// file under the index's size limit analyses to).
    oversize: Option<(ContentKey, Entry)>,
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
        match &inner.oversize {
            Some((oversize, entry)) if oversize == key => Some(Arc::clone(&entry.analysis)),
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
            inner.oversize = Some((
                key,
                Entry {
                    analysis,
                    weight,
                    last_used: tick,
                },
            ));
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
            .and_then(|i| i.oversize.as_ref().map(|(_, entry)| entry.weight))
            .unwrap_or(0)
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
