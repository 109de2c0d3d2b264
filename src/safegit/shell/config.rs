//! What the gate reads of a repository besides the command line: its aliases and
//! `clean.requireForce` (one `git config` process per repository per hook run, read only when
//! a command needs it: a subcommand git does not know, or `git clean` without `-f`), and the
//! branch its worktree has checked out (read from the `HEAD` file, no process).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::cli::gitio;

/// A repository's settings the gate needs.
pub trait RepoConfig {
    /// The value of `alias.<name>` for the repository at `dir`.
    fn alias(&self, dir: &Path, name: &str) -> Option<String>;
    /// Whether `git clean` in `dir` needs `-f` (git's default; `clean.requireForce=false`
    /// turns it off).
    fn clean_requires_force(&self, dir: &Path) -> bool;
    /// Whether `git rebase` in `dir` stashes local changes first (`rebase.autoStash`; without
    /// it git refuses to rebase a dirty tree).
    fn rebase_autostash(&self, dir: &Path) -> bool;
    /// The branch the worktree at `dir` has checked out (`None`: detached or unknown).
    fn current_branch(&self, dir: &Path) -> Option<String>;
}

/// How many repositories one hook run reads the configuration of; past that, a command in
/// yet another repository is read as if it had no aliases.
const MAX_REPOSITORIES: usize = 4;

/// The settings of one repository.
#[derive(Debug, Default)]
struct Settings {
    aliases: HashMap<String, String>,
    clean_requires_force: bool,
    rebase_autostash: bool,
}

impl Settings {
    fn defaults() -> Self {
        Self {
            aliases: HashMap::new(),
            clean_requires_force: true,
            rebase_autostash: false,
        }
    }
}

/// [`RepoConfig`] read from git, once per repository (cached for the hook run).
#[derive(Default)]
pub struct GitConfig {
    read: RefCell<HashMap<PathBuf, Rc<Settings>>>,
}

impl GitConfig {
    fn settings(&self, dir: &Path) -> Rc<Settings> {
        let key = top_level(dir).unwrap_or_else(|| dir.to_path_buf());
        if let Some(found) = self.read.borrow().get(&key) {
            return found.clone();
        }
        if self.read.borrow().len() >= MAX_REPOSITORIES {
            return Rc::new(Settings::defaults());
        }
        let settings = Rc::new(read_settings(&key));
        self.read.borrow_mut().insert(key, settings.clone());
        settings
    }
}

impl RepoConfig for GitConfig {
    fn alias(&self, dir: &Path, name: &str) -> Option<String> {
        self.settings(dir)
            .aliases
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    fn clean_requires_force(&self, dir: &Path) -> bool {
        self.settings(dir).clean_requires_force
    }

    fn rebase_autostash(&self, dir: &Path) -> bool {
        self.settings(dir).rebase_autostash
    }

    fn current_branch(&self, dir: &Path) -> Option<String> {
        current_branch(dir)
    }
}

/// One `git config` of everything the gate needs.
fn read_settings(dir: &Path) -> Settings {
    let mut settings = Settings::defaults();
    // Exit 1 (nothing matched) and any failure leave the defaults.
    let Ok(out) = gitio::run(
        dir,
        &[
            "config",
            "-z",
            "--get-regexp",
            r"^(alias\..*|clean\.requireforce|rebase\.autostash)$",
        ],
    ) else {
        return settings;
    };
    for item in out.split(|b| *b == 0).filter(|item| !item.is_empty()) {
        let text = String::from_utf8_lossy(item);
        let (key, value) = text.split_once('\n').unwrap_or((&text, ""));
        let key = key.to_ascii_lowercase();
        if let Some(name) = key.strip_prefix("alias.") {
            settings.aliases.insert(name.to_string(), value.to_string());
        } else if key == "clean.requireforce" {
            settings.clean_requires_force = is_true(value);
        } else if key == "rebase.autostash" {
            settings.rebase_autostash = is_true(value);
        }
    }
    settings
}

/// A git boolean (`true`, `yes`, `on`, `1`, or a bare key).
fn is_true(value: &str) -> bool {
    !matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "false" | "no" | "off" | "0"
    )
}

/// The repository's settings under a git call's own `-c key=value` (later pairs win).
pub struct Overridden<'a> {
    /// The repository's.
    pub base: &'a dyn RepoConfig,
    /// The call's `-c` pairs (keys lowercased), in order.
    pub pairs: &'a [(String, String)],
}

impl Overridden<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl RepoConfig for Overridden<'_> {
    fn alias(&self, dir: &Path, name: &str) -> Option<String> {
        match self.get(&format!("alias.{}", name.to_ascii_lowercase())) {
            Some(value) => Some(value.to_string()),
            None => self.base.alias(dir, name),
        }
    }

    fn clean_requires_force(&self, dir: &Path) -> bool {
        self.get("clean.requireforce")
            .map_or_else(|| self.base.clean_requires_force(dir), is_true)
    }

    fn rebase_autostash(&self, dir: &Path) -> bool {
        self.get("rebase.autostash")
            .map_or_else(|| self.base.rebase_autostash(dir), is_true)
    }

    fn current_branch(&self, dir: &Path) -> Option<String> {
        self.base.current_branch(dir)
    }
}

/// The top of the worktree holding `dir`: the nearest ancestor with a `.git`.
pub fn top_level(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|candidate| candidate.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The branch checked out in the worktree holding `dir`, from its `HEAD` file (a linked
/// worktree's `.git` file names its git directory).
pub fn current_branch(dir: &Path) -> Option<String> {
    let top = top_level(dir)?;
    let dot_git = top.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let named = text.trim().strip_prefix("gitdir:")?.trim();
        top.join(named)
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
}
