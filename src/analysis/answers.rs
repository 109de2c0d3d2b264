//! A small bounded cache of answers read from the index database's graph tables (callers and
//! callees from `links`, imported files from `deps`), valid for one *generation* of the
//! graph: every write to the graph tables starts a new one (`store`), so an answer is never
//! served after a change that may alter it. A steady-state `lock.acquire` asks for the same
//! symbol's callers twice (freshness check, then the answer), an `intent.declare` for a file's
//! imports twice and for its symbols' callees, and agents ask about the same symbols again and
//! again; each ask would otherwise scan and decode every link of the file.

use std::collections::HashMap;

/// Answers kept at most.
const CAPACITY: usize = 256;

/// Answers longer than this are not kept (a few would otherwise take the memory of many).
const MAX_REFS: usize = 512;

/// The cache of one kind of answer, a list of `T` per (file, name) (see the module docs). Not
/// synchronised: the index database keeps it behind a mutex.
#[derive(Debug)]
pub(crate) struct Answers<T> {
    generation: u64,
    /// By `file NUL name`.
    entries: HashMap<String, (u64, Vec<T>)>,
    tick: u64,
}

impl<T> Default for Answers<T> {
    fn default() -> Self {
        Self {
            generation: 0,
            entries: HashMap::new(),
            tick: 0,
        }
    }
}

impl<T: Clone> Answers<T> {
    /// The answer for `name` in `file` as given in `generation`, if kept.
    pub(crate) fn get(&mut self, generation: u64, file: &str, name: &str) -> Option<Vec<T>> {
        self.sync(generation);
        self.tick += 1;
        let tick = self.tick;
        let entry = self.entries.get_mut(&key(file, name))?;
        entry.0 = tick;
        Some(entry.1.clone())
    }

    /// Keeps `answer` for `name` in `file` in `generation` (read from the database when that
    /// generation was current).
    pub(crate) fn put(&mut self, generation: u64, file: &str, name: &str, answer: &[T]) {
        self.sync(generation);
        if generation != self.generation || answer.len() > MAX_REFS {
            return;
        }
        if self.entries.len() >= CAPACITY {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.tick += 1;
        self.entries
            .insert(key(file, name), (self.tick, answer.to_vec()));
    }

    /// How many answers are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Forgets every answer of an older generation.
    fn sync(&mut self, generation: u64) {
        if generation > self.generation {
            self.entries.clear();
            self.generation = generation;
        }
    }
}

/// The key of a symbol: its file and name, NUL-separated (neither holds a NUL).
fn key(file: &str, name: &str) -> String {
    format!("{file}\0{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::resolution::SymbolRef;

    fn refs(n: usize) -> Vec<SymbolRef> {
        (0..n)
            .map(|i| SymbolRef {
                file: format!("f{i}.py"),
                qualified_name: format!("g{i}"),
            })
            .collect()
    }

    #[test]
    fn answers_last_one_generation_and_stay_bounded() {
        let mut answers = Answers::<SymbolRef>::default();
        answers.put(1, "a.py", "f", &refs(2));
        assert_eq!(answers.get(1, "a.py", "f"), Some(refs(2)));
        assert_eq!(answers.get(1, "a.py", "g"), None);
        // A write started generation 2: the old answer is gone, and one read in generation
        // 1 arriving late is not kept.
        assert_eq!(answers.get(2, "a.py", "f"), None);
        answers.put(1, "a.py", "f", &refs(2));
        assert_eq!(answers.get(2, "a.py", "f"), None);
        // Bounded in count (least recently used out) and in answer length.
        for i in 0..CAPACITY + 10 {
            answers.put(2, "b.py", &format!("s{i}"), &refs(1));
            assert!(
                answers.get(2, "b.py", "s0").is_some(),
                "s0 stays: used last"
            );
        }
        assert_eq!(answers.len(), CAPACITY);
        assert!(answers.get(2, "b.py", "s1").is_none());
        answers.put(2, "c.py", "big", &refs(MAX_REFS + 1));
        assert!(answers.get(2, "c.py", "big").is_none());
    }
}
