//! Which store a daemon opens, and for which project (docs/protocol.md 12.1).
//!
//! Each setting comes from the first of: the `wit daemon run|start` flag (`--store`,
//! `--project`), the environment (`WIT_STORE`, `WIT_PROJECT`), the `[store]` table of this
//! clone's `.wit/config.toml` (`url`, `project`), the default (`sqlite`; the project is the id
//! of the repository's first commit, the oldest if several, or the clone's path before the
//! first commit). The project only matters with a shared store, so it is only worked out then.

use std::path::Path;

use crate::config::{self, ConfigError, StoreSection, LOCAL_FILE};
use crate::git::Git;
use crate::store::{StoreUrl, StoreUrlError};

/// The environment variable naming the store.
pub const STORE_ENV: &str = "WIT_STORE";
/// The environment variable naming the project.
pub const PROJECT_ENV: &str = "WIT_PROJECT";
/// Longest project name, in bytes.
const MAX_PROJECT_BYTES: usize = 256;

/// The store a daemon opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreChoice {
    /// Where the state lives.
    pub url: StoreUrl,
    /// The project the state is scoped to (empty with the embedded store, which holds one).
    pub project: String,
}

impl StoreChoice {
    /// The store for people: `sqlite`, or the URL without its password and the project.
    pub fn describe(&self) -> String {
        match &self.url {
            StoreUrl::Sqlite => "sqlite".to_owned(),
            shared => format!("{shared} (project {})", self.project),
        }
    }
}

/// Why the store settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreChoiceError {
    /// The store value is not `sqlite` or a PostgreSQL URL.
    #[error(transparent)]
    Url(#[from] StoreUrlError),
    /// The project name is empty or too long.
    #[error("invalid project name: must be 1 to {MAX_PROJECT_BYTES} bytes")]
    Project,
    /// `.wit/config.toml` cannot be read, is not valid TOML or its `[store]` values are not
    /// strings.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// Works out the store of the daemon serving `root` (whose state directory is `wit_dir`).
pub fn resolve(
    root: &Path,
    wit_dir: &Path,
    store_flag: Option<&str>,
    project_flag: Option<&str>,
) -> Result<StoreChoice, StoreChoiceError> {
    let file = read_file_settings(&wit_dir.join(LOCAL_FILE))?;
    let env = |name| {
        std::env::var(name)
            .ok()
            .filter(|v: &String| !v.trim().is_empty())
    };
    let url = match store_flag
        .map(str::to_owned)
        .or_else(|| env(STORE_ENV))
        .or(file.url)
    {
        Some(value) => StoreUrl::parse(&value)?,
        None => StoreUrl::Sqlite,
    };
    if !url.is_shared() {
        return Ok(StoreChoice {
            url,
            project: String::new(),
        });
    }
    let project = match project_flag
        .map(str::to_owned)
        .or_else(|| env(PROJECT_ENV))
        .or(file.project)
    {
        Some(project) => project.trim().to_owned(),
        None => default_project(root),
    };
    if project.is_empty() || project.len() > MAX_PROJECT_BYTES {
        return Err(StoreChoiceError::Project);
    }
    Ok(StoreChoice { url, project })
}

/// The `[store]` table of the settings file at `path` (empty when there is no file).
fn read_file_settings(path: &Path) -> Result<StoreSection, StoreChoiceError> {
    Ok(config::read(path)?
        .map(|file| file.store)
        .unwrap_or_default())
}

/// The id of the repository's first commit (the oldest root commit if there are several),
/// or `path:<canonical root>` before the first commit.
pub fn default_project(root: &Path) -> String {
    let output = Git::new(root).text(&["log", "--max-parents=0", "--format=%ct %H", "HEAD"]);
    let oldest = output.ok().and_then(|out| {
        out.lines()
            .filter_map(|line| {
                let (time, id) = line.split_once(' ')?;
                Some((time.parse::<i64>().ok()?, id.to_owned()))
            })
            .min()
            .map(|(_, id)| id)
    });
    oldest.unwrap_or_else(|| {
        let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        format!("path:{}", canonical.display())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn git(root: &Path, args: &[&str]) {
        crate::git::as_tester(root).run(args).unwrap();
    }

    #[test]
    fn project_is_the_first_commit_or_the_path() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        assert!(default_project(dir.path()).starts_with("path:/"));
        std::fs::write(dir.path().join("a"), "a").unwrap();
        git(dir.path(), &["add", "a"]);
        git(dir.path(), &["commit", "-q", "-m", "first"]);
        let first = default_project(dir.path());
        std::fs::write(dir.path().join("b"), "b").unwrap();
        git(dir.path(), &["add", "b"]);
        git(dir.path(), &["commit", "-q", "-m", "second"]);
        assert_eq!(default_project(dir.path()), first);
        assert_eq!(first.len(), 40, "{first}");
    }

    #[test]
    fn flag_then_file_then_default() {
        let dir = tempfile::tempdir().unwrap();
        let wit = dir.path().join(".wit");
        std::fs::create_dir(&wit).unwrap();
        // The environment is the test runner's: only assert what it cannot change.
        let flagged = resolve(dir.path(), &wit, Some("postgres://h/db"), Some("p1")).unwrap();
        assert_eq!(flagged.project, "p1");
        assert!(flagged.url.is_shared());
        let sqlite = resolve(dir.path(), &wit, Some("sqlite"), None).unwrap();
        assert_eq!(sqlite.url, StoreUrl::Sqlite);
        assert!(sqlite.project.is_empty());
        std::fs::write(
            wit.join(LOCAL_FILE),
            "[store]\nurl = \"postgres://u:pw@h/db\"\nproject = \"from-file\"\n",
        )
        .unwrap();
        let settings = read_file_settings(&wit.join(LOCAL_FILE)).unwrap();
        assert_eq!(settings.project.as_deref(), Some("from-file"));
        assert_eq!(settings.url.as_deref(), Some("postgres://u:pw@h/db"));
        assert!(resolve(dir.path(), &wit, Some("mysql://x"), None).is_err());
        assert!(matches!(
            resolve(dir.path(), &wit, Some("postgres://h/db"), Some(" ")),
            Err(StoreChoiceError::Project)
        ));
        std::fs::write(wit.join(LOCAL_FILE), "[store]\nurl = 5\n").unwrap();
        assert!(matches!(
            read_file_settings(&wit.join(LOCAL_FILE)),
            Err(StoreChoiceError::Config(_))
        ));
    }
}
