//! A content-addressed cache of analyses, bounded by the bytes of source it covers, evicting the
//! least recently used entry. Disk parses and `analyze_content` share it, so staged content equal
//! to the working copy costs no parse.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use super::extract::FileAnalysis;
use super::language::Language;

/// Identifies content: language, length and two independent 64-bit hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ContentKey {
    language: Language,
    len: usize,
    hash: (u64, u64),
}

impl ContentKey {
    /// The key of `content` parsed as `language`.
    pub(crate) fn new(language: Language, content: &str) -> ContentKey {
        let hash_with = |seed: u64| {
            let mut hasher = DefaultHasher::new();
            seed.hash(&mut hasher);
            content.hash(&mut hasher);
            hasher.finish()
        };
        ContentKey {
            language,
            len: content.len(),
            hash: (hash_with(0x5157), hash_with(0xa11ce)),
        }
    }
}

struct Entry {
    analysis: Arc<FileAnalysis>,
    last_used: u64,
}

struct Inner {
    entries: HashMap<ContentKey, Entry>,
    bytes: usize,
    tick: u64,
}

/// The cache. Cheap to share; all methods take `&self`.
pub(crate) struct ContentCache {
    inner: Mutex<Inner>,
    capacity: usize,
}

impl ContentCache {
    /// A cache holding analyses of at most `capacity` bytes of source.
    pub(crate) fn new(capacity: usize) -> ContentCache {
        ContentCache {
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                bytes: 0,
                tick: 0,
            }),
            capacity,
        }
    }

    /// The cached analysis of this content, if any, marked as just used.
    pub(crate) fn get(&self, key: &ContentKey) -> Option<Arc<FileAnalysis>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.tick += 1;
        let tick = inner.tick;
        let entry = inner.entries.get_mut(key)?;
        entry.last_used = tick;
        Some(Arc::clone(&entry.analysis))
    }

    /// Remembers an analysis; evicts the least recently used entries beyond the capacity.
    /// Content larger than the whole capacity is not kept.
    pub(crate) fn insert(&self, key: ContentKey, analysis: Arc<FileAnalysis>) {
        if key.len > self.capacity {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.tick += 1;
        let tick = inner.tick;
        if inner
            .entries
            .insert(
                key,
                Entry {
                    analysis,
                    last_used: tick,
                },
            )
            .is_none()
        {
            inner.bytes += key.len;
        }
        while inner.bytes > self.capacity {
            let Some(oldest) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k)
            else {
                break;
            };
            inner.entries.remove(&oldest);
            inner.bytes = inner.bytes.saturating_sub(oldest.len);
        }
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
    fn evicts_least_recently_used_by_bytes() {
        let cache = ContentCache::new(10);
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
        let huge = ContentKey::new(Language::Python, "01234567890");
        cache.insert(huge, Arc::default());
        assert!(cache.get(&huge).is_none());
    }

    #[test]
    fn language_is_part_of_the_key() {
        assert_ne!(
            ContentKey::new(Language::TypeScript, "x"),
            ContentKey::new(Language::Tsx, "x")
        );
    }
}
