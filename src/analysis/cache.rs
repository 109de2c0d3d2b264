//! A content-addressed cache of analyses, bounded by the bytes of source it covers, evicting the
//! least recently used entry. Disk parses and `analyze_content` share it, so staged content equal
//! to the working copy costs no parse.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use super::extract::FileAnalysis;
use super::language::Language;

/// Identifies content: language, length and two independent 64-bit hashes (SipHash, and a
/// word-wise multiply-rotate hash that costs a fraction of a second SipHash pass on large
/// content, which `check-contracts` hashes on every call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ContentKey {
    language: Language,
    len: usize,
    hash: (u64, u64),
}

impl ContentKey {
    /// The key of `content` parsed as `language`.
    pub(crate) fn new(language: Language, content: &str) -> ContentKey {
        let mut hasher = DefaultHasher::new();
        content.hash(&mut hasher);
        ContentKey {
            language,
            len: content.len(),
            hash: (hasher.finish(), word_hash(content.as_bytes())),
        }
    }
}

/// A fast 64-bit hash of `bytes`, eight bytes at a time (FxHash's step, with a final mix).
fn word_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h.rotate_left(5) ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    // Spread the high bits down so that every input bit reaches every output bit.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
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

    #[test]
    fn every_byte_reaches_both_hashes() {
        let base: Vec<u8> = (0..37u8).map(|b| b'a' + b % 26).collect();
        let key = |bytes: &[u8]| {
            ContentKey::new(Language::TypeScript, std::str::from_utf8(bytes).unwrap())
        };
        assert_eq!(key(&base), key(&base.clone()));
        for i in 0..base.len() {
            let mut edited = base.clone();
            edited[i] = if edited[i] == b'z' { b'y' } else { b'z' };
            let (a, b) = (key(&base).hash, key(&edited).hash);
            assert_ne!(a.0, b.0, "SipHash missed byte {i}");
            assert_ne!(a.1, b.1, "word hash missed byte {i}");
        }
    }
}
