//! What attributing a worktree's changes asks git, kept between the observer's passes.
//!
//! A pass after an edit asks git two things about the changed files: HEAD's bytes of each
//! (`git cat-file --batch`) and which of them git ignores (`git check-ignore`). Asked through
//! a process each, they cost 1.6–1.8 ms apiece here, in the path of the post-tool hook that
//! waits for the edit to be taken in (15.2). Kept instead:
//! - HEAD's bytes come through one `git cat-file --batch` kept running ([`BatchReader`]),
//!   which resolves `HEAD:<path>` anew for every name (a commit is seen at once); after a
//!   failure the next pass starts another.
//! - Git's ignore answers are remembered while nothing they depend on has changed: the
//!   worktree's index (a tracked file is never ignored), `info/exclude`, the configuration
//!   files and the excludes file they name (stamped before each question), and the tree's
//!   `.gitignore` files, whose changes reach the pass as changed paths
//!   ([`WorktreeGit::paths_changed`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::daemon::watch_set::{self, Stamp};
use crate::git::{blobs_at, BatchReader, Git, GitError};

/// The most ignore answers remembered per worktree (past it they are asked again).
const MOST_ANSWERS: usize = 100_000;

/// What the attribution of one worktree asks git, kept between passes.
#[derive(Debug)]
pub struct WorktreeGit {
    root: PathBuf,
    /// HEAD's bytes, read through one process; started on first use, dropped on a failure.
    reader: Option<BatchReader>,
    ignores: IgnoreAnswers,
}

/// Git's ignore answers, and the stamps of the files they were given under.
#[derive(Debug, Default)]
struct IgnoreAnswers {
    /// The configuration files, and their stamps when the other sources were found.
    configs: Vec<(PathBuf, Option<Stamp>)>,
    /// The other files the answers depend on ([`exclude_sources`]), found with the
    /// configuration (the excludes file is the one it names).
    sources: Vec<PathBuf>,
    /// The stamps of every source when the answers were given (configs first).
    stamps: Vec<Option<Stamp>>,
    /// Whether git ignores each file asked about.
    answers: HashMap<String, bool>,
}

impl WorktreeGit {
    /// Nothing asked yet of the worktree at `root`.
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            reader: None,
            ignores: IgnoreAnswers::default(),
        }
    }

    /// The bytes of each of `names` (`HEAD:<path>`, ..), in order; `None` when missing or
    /// over `limit` bytes. Through the kept reader, or a process of its own when the reader
    /// cannot be had.
    pub fn blobs(
        &mut self,
        names: &[String],
        limit: usize,
    ) -> Result<Vec<Option<Vec<u8>>>, GitError> {
        if self.reader.is_none() {
            self.reader = BatchReader::start(&self.root).ok();
        }
        if let Some(reader) = &mut self.reader {
            match reader.blobs(names, limit) {
                Ok(blobs) => return Ok(blobs),
                Err(error) => {
                    tracing::debug!(%error, "the kept cat-file failed; started again next pass");
                    self.reader = None;
                }
            }
        }
        blobs_at(&self.root, names, limit)
    }

    /// `files` without those git ignores, in their order. Files not asked about since the
    /// answers' sources last changed are asked (one `git check-ignore --stdin`); when git
    /// cannot answer, none is taken for ignored and nothing is remembered.
    pub fn not_ignored(&mut self, files: Vec<String>) -> Vec<String> {
        self.ignores.refresh(&self.root);
        let unknown: Vec<&str> = files
            .iter()
            .filter(|file| !self.ignores.answers.contains_key(*file))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let Some(ignored) = check_ignore(&self.root, &unknown) else {
                return files;
            };
            if self.ignores.answers.len() + unknown.len() > MOST_ANSWERS {
                self.ignores.answers.clear();
            }
            for file in unknown {
                let answer = ignored.contains(file);
                self.ignores.answers.insert(file.to_owned(), answer);
            }
        }
        files
            .into_iter()
            .filter(|file| self.ignores.answers.get(file) != Some(&true))
            .collect()
    }

    /// Takes in that `paths` (relative to the root) changed: a `.gitignore` among them
    /// changes git's answers for the files below it, so every answer is forgotten.
    pub fn paths_changed(&mut self, paths: &[String]) {
        let ignore_file = |path: &String| {
            Path::new(path)
                .file_name()
                .is_some_and(|name| name == ".gitignore")
        };
        if paths.iter().any(ignore_file) {
            self.forget_ignores();
        }
    }

    /// Forgets every ignore answer: the pass cannot tell which files changed (a
    /// `.gitignore` may have).
    pub fn forget_ignores(&mut self) {
        self.ignores.answers.clear();
    }
}

impl IgnoreAnswers {
    /// Forgets the answers when any source changed since they were given; finds the
    /// sources again (the excludes file the configuration names) when a configuration file
    /// changed.
    fn refresh(&mut self, root: &Path) {
        let configs_changed = self.configs.is_empty()
            || self
                .configs
                .iter()
                .any(|(path, stamp)| watch_set::stamp(path) != *stamp);
        if configs_changed {
            self.configs = config_files(root)
                .into_iter()
                .map(|path| {
                    let stamp = watch_set::stamp(&path);
                    (path, stamp)
                })
                .collect();
            self.sources = exclude_sources(root, excludes_file(root).as_deref());
        }
        let stamps: Vec<Option<Stamp>> = self
            .configs
            .iter()
            .map(|(_, stamp)| *stamp)
            .chain(self.sources.iter().map(|path| watch_set::stamp(path)))
            .collect();
        if stamps != self.stamps {
            self.answers.clear();
            self.stamps = stamps;
        }
    }
}

/// The files git reads its configuration from for the worktree at `root` (the system's
/// aside: where it lives depends on how git was built).
fn config_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(git_dir) = watch_set::git_dir(root) {
        files.push(common_dir(&git_dir).join("config"));
        files.push(git_dir.join("config.worktree"));
    }
    match std::env::var_os("GIT_CONFIG_GLOBAL") {
        Some(global) => files.push(PathBuf::from(global)),
        None => {
            if let Some(home) = std::env::var_os("HOME") {
                files.push(Path::new(&home).join(".gitconfig"));
            }
            if let Some(config) = xdg_config_home() {
                files.push(config.join("git/config"));
            }
        }
    }
    files
}

/// The files besides the configuration whose changes change git's ignore answers: the
/// worktree's index, `info/exclude`, and the excludes file (the one configured, or the
/// default `$XDG_CONFIG_HOME/git/ignore`).
fn exclude_sources(root: &Path, configured: Option<&Path>) -> Vec<PathBuf> {
    let mut sources = Vec::new();
    if let Some(git_dir) = watch_set::git_dir(root) {
        sources.push(git_dir.join("index"));
        sources.push(common_dir(&git_dir).join("info/exclude"));
    }
    match configured {
        Some(file) => sources.push(file.to_path_buf()),
        None => sources.extend(xdg_config_home().map(|config| config.join("git/ignore"))),
    }
    sources
}

/// The common directory of a worktree whose git directory is `git_dir`: named by its
/// `commondir` file in a linked worktree, `git_dir` itself otherwise.
fn common_dir(git_dir: &Path) -> PathBuf {
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim()),
        Err(_) => git_dir.to_path_buf(),
    }
}

/// `$XDG_CONFIG_HOME`, or `$HOME/.config` when it is unset or empty.
fn xdg_config_home() -> Option<PathBuf> {
    match std::env::var_os("XDG_CONFIG_HOME") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => std::env::var_os("HOME").map(|home| Path::new(&home).join(".config")),
    }
}

/// The excludes file git's configuration names (`core.excludesFile`), if any.
fn excludes_file(root: &Path) -> Option<PathBuf> {
    let output = Git::new(root)
        .quiet()
        .ok_codes(&[1])
        .run(&["config", "--path", "--get", "core.excludesFile"])
        .ok()?;
    let text = std::str::from_utf8(&output).ok()?.trim_end_matches('\n');
    (!text.is_empty()).then(|| root.join(text))
}

/// Which of `files` git ignores (one `git check-ignore --stdin -z`); `None` when git
/// could not say.
fn check_ignore(root: &Path, files: &[&str]) -> Option<HashSet<String>> {
    let input: Vec<u8> = files.iter().flat_map(|f| f.bytes().chain([0])).collect();
    let output = Git::new(root)
        .quiet()
        .ok_codes(&[1])
        .run_with_input(&["check-ignore", "--stdin", "-z"], &input)
        .ok()?;
    Some(
        output
            .split(|&b| b == 0)
            .filter_map(|f| std::str::from_utf8(f).ok())
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

#[cfg(test)]
mod tests;
