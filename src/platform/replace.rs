//! Replacing a small file by a complete new one, so that a reader at any moment finds either
//! the old file or the new one, never none and never part of one.
//!
//! The usual way is to write the new bytes aside and `rename(2)` them over the file. On ext4
//! (the common Linux file system, mounted with its default `auto_da_alloc`) a rename that
//! replaces a file first starts the write-back of the new file's data, so that a crash cannot
//! leave a zero-length file where there was one: about 170 µs on the development machine, for a
//! state file of a few hundred bytes that a hook writes on every tool call with news. On Linux
//! [`replace`] swaps the two names instead (`renameat2(RENAME_EXCHANGE)`, equally atomic for
//! readers, 25 µs with the removal of the old file) and falls back to the rename where the file
//! system cannot swap (or the file is not there yet). What it gives up is that flush: after a
//! power loss the file may be empty, which its readers must take as no file (the files written
//! this way are caches a reader can rebuild, such as a harness session's news cursor).

use std::io;
use std::path::Path;

/// Puts the file at `aside` (complete, written by the caller) in place of `target`; `aside`
/// is gone afterwards. Atomic for readers of `target`; not flushed (see the module).
pub fn replace(aside: &Path, target: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        match renameat_with(CWD, aside, CWD, target, RenameFlags::EXCHANGE) {
            // `aside` now holds the old file.
            Ok(()) => return std::fs::remove_file(aside),
            Err(error) if !cannot_swap(error) => return Err(error.into()),
            Err(_) => {}
        }
    }
    std::fs::rename(aside, target)
}

/// Whether a failed swap calls for a plain rename: no file to swap with yet, or a file system
/// (or kernel) that cannot swap.
#[cfg(target_os = "linux")]
fn cannot_swap(error: rustix::io::Errno) -> bool {
    use rustix::io::Errno;
    [Errno::NOENT, Errno::INVAL, Errno::NOSYS, Errno::NOTSUP].contains(&error)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// A new file, then a replaced one: the target holds the new bytes, nothing is left aside.
    #[test]
    fn replaces_a_file_or_puts_a_new_one_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let (aside, target) = (dir.path().join("state.tmp"), dir.path().join("state"));
        for text in ["first", "second, longer than the first", "third"] {
            std::fs::write(&aside, text).unwrap();
            replace(&aside, &target).unwrap();
            assert_eq!(std::fs::read_to_string(&target).unwrap(), text);
            assert!(!aside.exists(), "{text}: the old file is left aside");
        }
    }

    /// A missing `aside` is an error, and the target is left as it was.
    #[test]
    fn a_missing_new_file_leaves_the_target_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (aside, target) = (dir.path().join("state.tmp"), dir.path().join("state"));
        std::fs::write(&target, "kept").unwrap();
        assert!(replace(&aside, &target).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    }
}
