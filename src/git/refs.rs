//! Refs moved by wit itself, without a git process: a loose ref written as git's files backend
//! writes one (`<ref>.lock` made exclusively, the id written, renamed into place), so that the
//! work snapshots' upkeep starts no process per refresh (docs/protocol.md 15.5). A repository
//! whose refs are not loose files (`extensions.refStorage = reftable`), and any ref whose lock
//! is taken, are left to `git update-ref --stdin`.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Git, GitError};

/// How the refs of one repository are moved.
#[derive(Debug, Clone)]
pub struct RefWriter {
    /// The common git directory when refs are loose files there (`None`: reftable, or not
    /// known: every update goes through git).
    loose_in: Option<PathBuf>,
}

impl RefWriter {
    /// The writer for the repository at `repo` (one `git rev-parse`, one `git config`).
    pub fn of(repo: &Path) -> Result<RefWriter, GitError> {
        let git = Git::new(repo);
        let common = git.text(&["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
        let storage =
            Git::new(repo)
                .ok_codes(&[1])
                .text(&["config", "--get", "extensions.refStorage"])?;
        let files = matches!(storage.trim(), "" | "files");
        Ok(RefWriter {
            loose_in: files.then(|| PathBuf::from(common.trim())),
        })
    }

    /// Points each `(ref, id)` of `updates` (full names under `refs/`) at its id: as loose
    /// files where it can, the rest through one `git update-ref --stdin` in `repo`.
    pub fn update(&self, repo: &Path, updates: &[(String, String)]) -> Result<(), GitError> {
        let rest: Vec<&(String, String)> = match &self.loose_in {
            Some(common) => updates
                .iter()
                .filter(|(name, id)| write_loose(common, name, id).is_err())
                .collect(),
            None => updates.iter().collect(),
        };
        if rest.is_empty() {
            return Ok(());
        }
        let request: String = rest
            .iter()
            .map(|(name, id)| format!("update {name} {id}\n"))
            .collect();
        Git::new(repo)
            .run_with_input(&["update-ref", "--stdin"], request.as_bytes())
            .map(|_| ())
    }
}

/// Writes the loose ref `name` in `common` holding `id`, under git's lock protocol.
fn write_loose(common: &Path, name: &str, id: &str) -> std::io::Result<()> {
    let safe = name.starts_with("refs/")
        && name.split('/').all(|part| {
            !part.is_empty() && part != "." && part != ".." && !part.ends_with(".lock")
        })
        && id.bytes().all(|b| b.is_ascii_hexdigit());
    if !safe {
        return Err(std::io::Error::other("not a ref name wit writes"));
    }
    let path = common.join(name);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let lock = PathBuf::from(format!("{}.lock", path.display()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock)?;
    let written = file
        .write_all(format!("{id}\n").as_bytes())
        .and_then(|()| std::fs::rename(&lock, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&lock);
    }
    written
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn loose_refs_are_what_git_reads_and_a_locked_one_goes_through_git() {
        let (dir, blob) = super::super::repository_with(b"x\n");
        let git = super::super::as_tester(dir.path());
        let tree = git.text(&["mktree"]).unwrap();
        let commit = git
            .text(&["commit-tree", tree.trim(), "-m", "m"])
            .unwrap()
            .trim()
            .to_owned();
        let writer = RefWriter::of(dir.path()).unwrap();
        assert!(writer.loose_in.is_some());
        writer
            .update(dir.path(), &[("refs/wit/work/a".into(), commit.clone())])
            .unwrap();
        let read = git.text(&["rev-parse", "refs/wit/work/a"]).unwrap();
        assert_eq!(read.trim(), commit);
        // Packed, then moved again: the loose file wins, as git reads it.
        git.run(&["pack-refs", "--all"]).unwrap();
        let _ = blob;
        let second = git
            .text(&["commit-tree", tree.trim(), "-p", &commit, "-m", "n"])
            .unwrap()
            .trim()
            .to_owned();
        writer
            .update(dir.path(), &[("refs/wit/work/a".into(), second.clone())])
            .unwrap();
        assert_eq!(
            git.text(&["rev-parse", "refs/wit/work/a"]).unwrap().trim(),
            second
        );
        // A lock held by someone else: git decides (and refuses, the lock being taken).
        std::fs::write(dir.path().join(".git/refs/wit/work/a.lock"), "").unwrap();
        let refused = writer.update(dir.path(), &[("refs/wit/work/a".into(), commit.clone())]);
        assert!(refused.is_err(), "{refused:?}");
        std::fs::remove_file(dir.path().join(".git/refs/wit/work/a.lock")).unwrap();
        git.run(&["fsck", "--strict", "--no-dangling"]).unwrap();
    }
}
