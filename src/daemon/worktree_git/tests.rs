//! The kept git answers against real git.
#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

/// A repository with `a.txt` committed and `*.log` ignored.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        Git::new(dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .run(args)
            .unwrap()
    };
    git(&["init", "-q"]);
    git(&["config", "user.name", "t"]);
    git(&["config", "user.email", "t@t"]);
    std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "one"]);
    dir
}

fn run(dir: &Path, args: &[&str]) {
    Git::new(dir).run(args).unwrap();
}

fn names(files: &[&str]) -> Vec<String> {
    files.iter().map(|f| (*f).to_owned()).collect()
}

#[test]
fn heads_bytes_come_from_one_kept_reader_that_sees_each_new_commit() {
    let dir = repository();
    let mut git = WorktreeGit::new(dir.path());
    let asked = names(&["HEAD:a.txt", "HEAD:gone.txt"]);
    assert_eq!(
        git.blobs(&asked, 1024).unwrap(),
        [Some(b"one\n".to_vec()), None]
    );
    let reader = git.reader.as_ref().map(BatchReader::pid);
    assert!(reader.is_some());
    std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
    run(dir.path(), &["commit", "-qam", "two"]);
    assert_eq!(
        git.blobs(&asked, 1024).unwrap(),
        [Some(b"two\n".to_vec()), None]
    );
    // Over the limit is none, and the reader reads on after it.
    assert_eq!(git.blobs(&asked[..1], 2).unwrap(), [None]);
    assert_eq!(
        git.blobs(&asked[..1], 4).unwrap(),
        [Some(b"two\n".to_vec())]
    );
    assert_eq!(git.reader.as_ref().map(BatchReader::pid), reader);
}

#[test]
fn a_reader_that_failed_is_replaced_and_the_answer_still_comes() {
    let dir = repository();
    let mut git = WorktreeGit::new(dir.path());
    let asked = names(&["HEAD:a.txt"]);
    git.blobs(&asked, 1024).unwrap();
    let first = git.reader.as_ref().map(BatchReader::pid).unwrap();
    // The process dies under the reader.
    let _ = std::process::Command::new("kill")
        .arg("-9")
        .arg(first.to_string())
        .status();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(git.blobs(&asked, 1024).unwrap(), [Some(b"one\n".to_vec())]);
    assert_eq!(git.blobs(&asked, 1024).unwrap(), [Some(b"one\n".to_vec())]);
    assert_ne!(git.reader.as_ref().map(BatchReader::pid), Some(first));
}

#[test]
fn ignore_answers_are_remembered_until_a_gitignore_changes() {
    let dir = repository();
    let mut git = WorktreeGit::new(dir.path());
    let files = names(&["a.txt", "b.log", "c.tmp"]);
    assert_eq!(git.not_ignored(files.clone()), names(&["a.txt", "c.tmp"]));
    // A `.gitignore` edit reaches the pass as a changed path: until it is told, the
    // answers stand (they were remembered, not asked again).
    std::fs::write(dir.path().join(".gitignore"), "*.tmp\n").unwrap();
    assert_eq!(git.not_ignored(files.clone()), names(&["a.txt", "c.tmp"]));
    git.paths_changed(&names(&["src/a.ts"]));
    assert_eq!(git.not_ignored(files.clone()), names(&["a.txt", "c.tmp"]));
    git.paths_changed(&names(&["a.txt", ".gitignore"]));
    assert_eq!(git.not_ignored(files), names(&["a.txt", "b.log"]));
}

#[test]
fn ignore_answers_follow_the_index_info_exclude_and_the_configured_excludes_file() {
    let dir = repository();
    let mut git = WorktreeGit::new(dir.path());
    let files = names(&["a.txt", "b.log", "c.tmp", "d.bak"]);
    assert_eq!(
        git.not_ignored(files.clone()),
        names(&["a.txt", "c.tmp", "d.bak"])
    );
    // A tracked file is never ignored: `git add -f` writes the index.
    std::fs::write(dir.path().join("b.log"), "kept\n").unwrap();
    run(dir.path(), &["add", "-f", "b.log"]);
    assert_eq!(
        git.not_ignored(files.clone()),
        names(&["a.txt", "b.log", "c.tmp", "d.bak"])
    );
    std::fs::write(dir.path().join(".git/info/exclude"), "*.tmp\n").unwrap();
    assert_eq!(
        git.not_ignored(files.clone()),
        names(&["a.txt", "b.log", "d.bak"])
    );
    let excludes = dir.path().join("excludes");
    std::fs::write(&excludes, "*.bak\n").unwrap();
    run(
        dir.path(),
        &["config", "core.excludesFile", excludes.to_str().unwrap()],
    );
    assert_eq!(git.not_ignored(files.clone()), names(&["a.txt", "b.log"]));
    // The excludes file itself, edited.
    std::fs::write(&excludes, "*.nothing\n").unwrap();
    assert_eq!(git.not_ignored(files), names(&["a.txt", "b.log", "d.bak"]));
}

#[test]
fn a_linked_worktrees_sources_are_its_own_index_and_the_common_exclude() {
    let dir = repository();
    let linked = dir.path().join("linked");
    run(
        dir.path(),
        &["worktree", "add", "-q", linked.to_str().unwrap()],
    );
    let sources = exclude_sources(&linked, None);
    let git_dir = std::fs::canonicalize(dir.path().join(".git")).unwrap();
    let canonical = |p: &PathBuf| {
        std::fs::canonicalize(p.parent().unwrap())
            .unwrap()
            .join(p.file_name().unwrap())
    };
    assert_eq!(
        canonical(&sources[0]),
        git_dir.join("worktrees/linked/index")
    );
    assert_eq!(canonical(&sources[1]), git_dir.join("info/exclude"));
}
