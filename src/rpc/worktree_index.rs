//! Each worktree analysed as its own text (PROTOCOL-NOTES 14.2), behind the one coordination
//! core of the repository: [`WorktreeIndex`] is the [`CodeIndex`] the core holds, and answers
//! every question from the index of the worktree the current request came in from.
//!
//! The worktree is known by the socket: each worktree's method table carries its own index
//! ([`super::App::for_worktree`]), and the app runs a request's work inside
//! [`in_worktree`], which names that index for the thread doing the work. Work outside any
//! request (the pulse) sees the main worktree's index.

use std::cell::RefCell;
use std::sync::Arc;

use crate::coord::{CodeIndex, SignatureLookup, TextSymbols};

thread_local! {
    /// The index of the worktree whose request this thread is working on.
    static CURRENT: RefCell<Option<Arc<dyn CodeIndex>>> = const { RefCell::new(None) };
}

/// Runs `work` with `index` as the current worktree's index on this thread (`None`: the main
/// worktree's). Restores the previous one after, also when `work` panics.
pub fn in_worktree<T>(index: Option<&Arc<dyn CodeIndex>>, work: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<dyn CodeIndex>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|current| *current.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|current| current.replace(index.cloned()));
    let _restore = Restore(previous);
    work()
}

/// The [`CodeIndex`] of the coordination core: the current worktree's index, else the main
/// worktree's.
pub struct WorktreeIndex {
    main: Arc<dyn CodeIndex>,
}

impl WorktreeIndex {
    /// Routes to `main` outside any worktree's request.
    pub fn new(main: Arc<dyn CodeIndex>) -> Self {
        Self { main }
    }

    fn current(&self) -> Arc<dyn CodeIndex> {
        CURRENT
            .with(|current| current.borrow().clone())
            .unwrap_or_else(|| Arc::clone(&self.main))
    }
}

impl CodeIndex for WorktreeIndex {
    fn symbol_ranges(&self, file: &str, name: &str) -> Vec<(usize, usize)> {
        self.current().symbol_ranges(file, name)
    }

    fn callers(&self, file: &str, name: &str) -> Vec<String> {
        self.current().callers(file, name)
    }

    fn callers_are_fresh(&self, file: &str, name: &str) -> bool {
        self.current().callers_are_fresh(file, name)
    }

    fn file_is_fresh(&self, file: &str) -> bool {
        self.current().file_is_fresh(file)
    }

    fn callees(&self, file: &str, name: &str) -> Vec<String> {
        self.current().callees(file, name)
    }

    fn signature(&self, file: &str, name: &str) -> Result<String, SignatureLookup> {
        self.current().signature(file, name)
    }

    fn signatures_in_content(
        &self,
        file: &str,
        content: &str,
        names: &[&str],
    ) -> Vec<Option<String>> {
        self.current().signatures_in_content(file, content, names)
    }

    fn signatures_equal(&self, a: &str, b: &str) -> bool {
        self.current().signatures_equal(a, b)
    }

    fn file_text(&self, file: &str) -> Option<String> {
        self.current().file_text(file)
    }

    fn is_supported(&self, file: &str) -> bool {
        self.current().is_supported(file)
    }

    fn file_symbols(&self, file: &str) -> TextSymbols {
        self.current().file_symbols(file)
    }

    fn text_symbols(&self, file: &str, text: &str) -> TextSymbols {
        self.current().text_symbols(file, text)
    }

    fn worktree_root(&self) -> Option<String> {
        self.current().worktree_root()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::coord::testing::FakeIndex;

    #[test]
    fn a_request_sees_its_worktree_and_nothing_leaks_after_it() {
        let main = FakeIndex::default();
        main.set_text("a.py", "main");
        let other = FakeIndex::default();
        other.set_text("a.py", "other");
        let routed = WorktreeIndex::new(Arc::new(main));
        let other: Arc<dyn CodeIndex> = Arc::new(other);
        assert_eq!(routed.file_text("a.py").unwrap(), "main");
        in_worktree(Some(&other), || {
            assert_eq!(routed.file_text("a.py").unwrap(), "other");
            in_worktree(None, || {
                assert_eq!(routed.file_text("a.py").unwrap(), "main")
            });
            assert_eq!(routed.file_text("a.py").unwrap(), "other");
        });
        assert_eq!(routed.file_text("a.py").unwrap(), "main");
    }
}
