//! The worktrees of a repository, read from git's own files (no `git` process): which
//! repository a worktree belongs to (its git common directory and main worktree), and which
//! linked worktrees the repository has now (docs/protocol.md 14.1).
//!
//! Layout read: a main worktree has a `.git` directory (the common directory); a linked
//! worktree has a `.git` file `gitdir: <common>/worktrees/<name>`, whose directory holds a
//! `commondir` file (the common directory, usually `../..`) and a `gitdir` file (the path of
//! the worktree's `.git` file). `git worktree remove` deletes that directory; a worktree
//! deleted by hand leaves it, with a `gitdir` naming a file that no longer exists.
//!
//! While `git worktree add` is still checking a worktree out, its directory holds a `locked`
//! file (git's own "initializing" lock) and no `index` yet: git writes the index when the
//! checkout is done, then drops the lock. Such a worktree is not listed yet (issue 35: one
//! listed mid-checkout was watched and indexed from a half-written tree).

use std::path::{Path, PathBuf};

pub mod changes;
pub mod forecast;

/// The repository a worktree belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// The git common directory (`<main>/.git`).
    pub common_dir: PathBuf,
    /// The main worktree's root: where the repository's wit state lives (`<main>/.wit`).
    pub main_root: PathBuf,
}

/// The repository of the worktree at `root`; `None` when `root` is no git worktree, or its
/// repository has no main worktree (a bare repository: each worktree then stands alone).
pub fn repository_of(root: &Path) -> Option<Repository> {
    let dot_git = root.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(Repository {
            common_dir: canonical(&dot_git),
            main_root: canonical(root),
        });
    }
    let admin = admin_dir(root)?;
    let common = std::fs::read_to_string(admin.join("commondir")).ok()?;
    let common_dir = canonical(&admin.join(common.trim()));
    let main_root = common_dir.parent()?.to_path_buf();
    // A bare repository's common directory is no `.git` of a worktree.
    let is_main = common_dir.file_name().is_some_and(|n| n == ".git")
        && std::fs::symlink_metadata(main_root.join(".git")).is_ok_and(|m| m.is_dir());
    is_main.then_some(Repository {
        common_dir,
        main_root,
    })
}

/// The linked worktree at `root`'s directory under the common directory
/// (`<common>/worktrees/<name>`), from its `.git` file.
fn admin_dir(root: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(root.join(".git")).ok()?;
    let target = text.trim().strip_prefix("gitdir:")?.trim();
    Some(canonical(&root.join(target)))
}

/// Every worktree of the repository that exists now: the main one first, then the linked
/// ones (canonical, sorted).
pub fn all_worktrees(repository: &Repository) -> Vec<PathBuf> {
    let mut roots = vec![repository.main_root.clone()];
    roots.extend(linked_worktrees(repository));
    roots
}

/// The roots of the repository's linked worktrees that exist now (canonical, sorted); the
/// main worktree is not among them.
pub fn linked_worktrees(repository: &Repository) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(repository.common_dir.join("worktrees")) else {
        return Vec::new();
    };
    let mut roots: Vec<PathBuf> = entries
        .flatten()
        .filter_map(|entry| {
            let gitdir = std::fs::read_to_string(entry.path().join("gitdir")).ok()?;
            let dot_git = PathBuf::from(gitdir.trim());
            // Gone when its `.git` file is (deleted by hand, not yet pruned).
            std::fs::symlink_metadata(&dot_git)
                .ok()
                .filter(|m| m.is_file())?;
            if being_added(&entry.path()) {
                return None;
            }
            Some(canonical(dot_git.parent()?))
        })
        .collect();
    roots.sort();
    roots.dedup();
    roots
}

/// How long a `locked` worktree without an index counts as being added: past it, it is a
/// worktree added with `--lock --no-checkout` (locked for good, never checked out).
const ADDING_AT_MOST: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether the linked worktree whose directory under the common directory is `admin` is
/// still being checked out by `git worktree add`: locked (recently) and no index yet.
fn being_added(admin: &Path) -> bool {
    if admin.join("index").exists() {
        return false;
    }
    std::fs::metadata(admin.join("locked"))
        .and_then(|meta| meta.modified())
        .is_ok_and(|locked_at| locked_at.elapsed().map_or(true, |age| age < ADDING_AT_MOST))
}

/// The branch checked out in the worktree at `root` (`main` for `ref: refs/heads/main`);
/// `None` when its HEAD is detached, or `root` is no git worktree.
pub fn branch_of(root: &Path) -> Option<String> {
    let dot_git = root.join(".git");
    let git_dir = if std::fs::symlink_metadata(&dot_git).ok()?.is_dir() {
        dot_git
    } else {
        admin_dir(root)?
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let branch = head.trim().strip_prefix("ref:")?.trim();
    let branch = branch.strip_prefix("refs/heads/").unwrap_or(branch);
    Some(branch.to_owned())
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    /// Lays out what `git worktree add` writes, without git.
    fn link(main: &Path, name: &str, root: &Path) {
        let admin = main.join(".git/worktrees").join(name);
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::create_dir_all(root).unwrap();
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        std::fs::write(
            admin.join("gitdir"),
            format!("{}\n", root.join(".git").display()),
        )
        .unwrap();
        std::fs::write(root.join(".git"), format!("gitdir: {}\n", admin.display())).unwrap();
    }

    #[test]
    fn a_worktree_git_is_still_checking_out_is_not_listed_yet() {
        let temp = tempfile::tempdir().unwrap();
        let base = canonical(temp.path());
        let main = base.join("main");
        std::fs::create_dir_all(main.join(".git")).unwrap();
        let feature = base.join("feature");
        link(&main, "feature", &feature);
        let admin = main.join(".git/worktrees/feature");
        let repository = repository_of(&main).unwrap();
        std::fs::write(admin.join("locked"), "initializing\n").unwrap();
        assert!(linked_worktrees(&repository).is_empty(), "mid-checkout");
        std::fs::write(admin.join("index"), "DIRC").unwrap();
        assert_eq!(
            linked_worktrees(&repository),
            std::slice::from_ref(&feature),
            "checked out"
        );
        std::fs::remove_file(admin.join("index")).unwrap();
        // `--lock --no-checkout`: locked for good, never an index.
        let old = std::time::SystemTime::now() - 2 * ADDING_AT_MOST;
        std::fs::File::options()
            .write(true)
            .open(admin.join("locked"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(linked_worktrees(&repository), [feature]);
    }

    #[test]
    fn linked_worktrees_lead_to_their_main_worktree() {
        let temp = tempfile::tempdir().unwrap();
        let base = canonical(temp.path());
        let main = base.join("main");
        std::fs::create_dir_all(main.join(".git")).unwrap();
        let feature = base.join("feature");
        let other = base.join("other");
        link(&main, "feature", &feature);
        link(&main, "other", &other);
        let repository = repository_of(&main).unwrap();
        assert_eq!(repository.main_root, main);
        assert_eq!(repository.common_dir, main.join(".git"));
        assert_eq!(repository_of(&feature).unwrap(), repository);
        assert_eq!(
            linked_worktrees(&repository),
            [feature.clone(), other.clone()]
        );
        // Deleted by hand: gone, although git has not pruned it yet.
        std::fs::remove_dir_all(&other).unwrap();
        assert_eq!(linked_worktrees(&repository), [feature]);
        assert_eq!(repository_of(&base), None, "no worktree");
    }

    #[test]
    fn the_branch_is_read_from_each_worktree_s_head() {
        let temp = tempfile::tempdir().unwrap();
        let base = canonical(temp.path());
        let main = base.join("main");
        std::fs::create_dir_all(main.join(".git")).unwrap();
        std::fs::write(main.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let feature = base.join("feature");
        link(&main, "feature", &feature);
        std::fs::write(
            main.join(".git/worktrees/feature/HEAD"),
            "ref: refs/heads/topic/x\n",
        )
        .unwrap();
        assert_eq!(branch_of(&main).as_deref(), Some("main"));
        assert_eq!(branch_of(&feature).as_deref(), Some("topic/x"));
        std::fs::write(
            main.join(".git/HEAD"),
            "0123456789abcdef0123456789abcdef01234567\n",
        )
        .unwrap();
        assert_eq!(branch_of(&main), None, "detached");
        assert_eq!(branch_of(&base), None, "no worktree");
    }
}
