//! Interned symbols: each [`SymbolRef`] that takes part in a call edge is stored once and
//! named by a `u32` id, so the call graph's edge sets hold 4-byte ids instead of two strings
//! per edge and direction (the edges were most of the daemon's memory on large
//! repositories). Ids are reference-counted by the edges that use them and reused once free.

use std::collections::HashMap;

use super::graph::SymbolRef;

/// A symbol's id.
pub(crate) type SymbolId = u32;

/// The interner. Plain data, no locking.
#[derive(Default)]
pub(crate) struct Symbols {
    refs: Vec<SymbolRef>,
    counts: Vec<u32>,
    /// Hash of (file, qualified name) -> id; a second symbol with the same hash goes to
    /// `collided`.
    by_hash: HashMap<u64, SymbolId>,
    collided: HashMap<SymbolRef, SymbolId>,
    free: Vec<SymbolId>,
}

fn hash(file: &str, qualified_name: &str) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(file.as_bytes());
    hasher.update(&[0xff]);
    hasher.update(qualified_name.as_bytes());
    hasher.digest()
}

impl Symbols {
    /// The id of a symbol, if interned.
    pub(crate) fn lookup(&self, file: &str, qualified_name: &str) -> Option<SymbolId> {
        let id = *self.by_hash.get(&hash(file, qualified_name))?;
        let found = self.get(id);
        if found.file == file && found.qualified_name == qualified_name {
            return Some(id);
        }
        self.collided
            .iter()
            .find(|(r, _)| r.file == file && r.qualified_name == qualified_name)
            .map(|(_, id)| *id)
    }

    /// The symbol of an id (an empty reference for a freed id).
    pub(crate) fn get(&self, id: SymbolId) -> &SymbolRef {
        static NONE: SymbolRef = SymbolRef {
            file: String::new(),
            qualified_name: String::new(),
        };
        self.refs.get(id as usize).unwrap_or(&NONE)
    }

    /// Interns a symbol and counts one more use of it.
    pub(crate) fn acquire(&mut self, file: &str, qualified_name: &str) -> SymbolId {
        if let Some(id) = self.lookup(file, qualified_name) {
            if let Some(count) = self.counts.get_mut(id as usize) {
                *count += 1;
            }
            return id;
        }
        let symbol = SymbolRef {
            file: file.to_owned(),
            qualified_name: qualified_name.to_owned(),
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.refs[id as usize] = symbol.clone();
                self.counts[id as usize] = 1;
                id
            }
            None => {
                let id = SymbolId::try_from(self.refs.len()).unwrap_or(SymbolId::MAX);
                self.refs.push(symbol.clone());
                self.counts.push(1);
                id
            }
        };
        let key = hash(file, qualified_name);
        match self.by_hash.entry(key) {
            std::collections::hash_map::Entry::Occupied(_) => {
                self.collided.insert(symbol, id);
            }
            std::collections::hash_map::Entry::Vacant(place) => {
                place.insert(id);
            }
        }
        id
    }

    /// Counts one use less; a symbol no edge uses any more is dropped.
    pub(crate) fn release(&mut self, id: SymbolId) {
        let Some(count) = self.counts.get_mut(id as usize) else {
            return;
        };
        *count = count.saturating_sub(1);
        if *count > 0 {
            return;
        }
        let symbol = std::mem::take(&mut self.refs[id as usize]);
        let key = hash(&symbol.file, &symbol.qualified_name);
        if self.by_hash.get(&key) == Some(&id) {
            self.by_hash.remove(&key);
            // A collided symbol with the same hash takes the free place in `by_hash`.
            let heir = self
                .collided
                .iter()
                .find(|(r, _)| hash(&r.file, &r.qualified_name) == key)
                .map(|(r, id)| (r.clone(), *id));
            if let Some((r, heir)) = heir {
                self.collided.remove(&r);
                self.by_hash.insert(key, heir);
            }
        } else {
            self.collided.remove(&symbol);
        }
        self.free.push(id);
    }

    /// Symbols interned now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.refs.len() - self.free.len()
    }

    /// About how many bytes the interner holds.
    pub(crate) fn approx_heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let strings: usize = self
            .refs
            .iter()
            .map(|r| r.file.len() + r.qualified_name.len())
            .sum();
        self.refs.capacity() * size_of::<SymbolRef>()
            + self.counts.capacity() * size_of::<u32>()
            + self.by_hash.capacity() * (size_of::<(u64, SymbolId)>() + 1)
            + self.collided.len() * (size_of::<(SymbolRef, SymbolId)>() + 64)
            + strings
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn ids_are_shared_counted_and_reused() {
        let mut symbols = Symbols::default();
        let a = symbols.acquire("a.ts", "f");
        let b = symbols.acquire("b.ts", "f");
        assert_ne!(a, b);
        assert_eq!(symbols.acquire("a.ts", "f"), a);
        assert_eq!(symbols.lookup("a.ts", "f"), Some(a));
        assert_eq!(symbols.get(b).file, "b.ts");
        symbols.release(a);
        assert_eq!(symbols.lookup("a.ts", "f"), Some(a), "still used once");
        symbols.release(a);
        assert_eq!(symbols.lookup("a.ts", "f"), None);
        assert_eq!(symbols.len(), 1);
        let c = symbols.acquire("c.ts", "g");
        assert_eq!(c, a, "the freed id is reused");
        assert_eq!(symbols.get(c).qualified_name, "g");
    }
}
