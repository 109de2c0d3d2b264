//! git as wit runs it: the one way every part of wit (the daemon's observer and forecast,
//! `wit commit`, the shell gate, the hooks) starts a git process ([`Git`]), the one reader
//! of object contents ([`blobs_at`], one `git cat-file --batch`, or [`BatchReader`] kept
//! running; bytes never decoded: docs/protocol.md 15.4), and the one writer of objects and
//! refs without a process ([`ObjectStore`]: the work snapshots' blobs, trees and commits;
//! [`RefWriter`]: their refs). Which lines changed is never git's patch output but the one
//! line diff, `coord::preflight::line_ops` (13.7).

mod batch;
mod objects;
mod refs;
mod run;

pub use batch::{blobs_at, BatchReader, Object};
pub use objects::{to_hex, Change, ObjectStore};
pub use refs::RefWriter;
pub use run::{Git, GitError};

/// git in `cwd` committing as a tester: what the tests' repositories are made with.
#[cfg(test)]
pub(crate) fn as_tester(cwd: &std::path::Path) -> Git<'_> {
    Git::new(cwd)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
}

/// A fresh repository holding `bytes` as a blob, and the blob's id (for the tests).
#[cfg(test)]
fn repository_with(bytes: &[u8]) -> (tempfile::TempDir, String) {
    #![allow(clippy::unwrap_used, reason = "tests")]
    let dir = tempfile::tempdir().unwrap();
    let git = Git::new(dir.path());
    git.run(&["init", "-q"]).unwrap();
    let id = git
        .run_with_input(&["hash-object", "-w", "--stdin"], bytes)
        .unwrap();
    let id = String::from_utf8(id).unwrap().trim().to_owned();
    (dir, id)
}
