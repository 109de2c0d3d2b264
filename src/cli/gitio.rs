//! Running git for `wit commit`, the shell gate, the pre-commit check and snapshots: one
//! synchronous runner (`crate::git`'s), reading the committed bytes of files in one `git
//! cat-file --batch` (`crate::git::blobs_at`), and
//! writing trees through a temporary index (`GIT_INDEX_FILE`), so no caller ever touches the
//! working tree or the repository's own index by accident.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::output::CliError;
use crate::git::{blobs_at, Git};

/// Runs `git ARGS` in `root` with `env`, `input` on stdin; its stdout when it succeeds.
pub fn run_with(
    root: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    input: Option<&[u8]>,
) -> Result<Vec<u8>, CliError> {
    let git = env
        .iter()
        .fold(Git::new(root), |git, (key, value)| git.env(key, value));
    match input {
        Some(bytes) => git.run_with_input(args, bytes),
        None => git.run(args),
    }
    .map_err(|error| CliError::Failed(error.to_string()))
}

/// Runs `git ARGS` in `root`; its stdout when it succeeds.
pub fn run(root: &Path, args: &[&str]) -> Result<Vec<u8>, CliError> {
    run_with(root, args, &[], None)
}

/// The commit `HEAD` names, or `None` in a repository without commits.
pub fn head(root: &Path) -> Option<String> {
    run(root, &["rev-parse", "--verify", "-q", "HEAD"])
        .ok()
        .map(|out| String::from_utf8_lossy(&out).trim().to_string())
        .filter(|id| !id.is_empty())
}

/// A file as a tree of a commit holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// `100644`, `100755`, `120000`.
    pub mode: String,
    /// Its bytes (docs/protocol.md 15.4: never decoded).
    pub bytes: Vec<u8>,
}

/// The files `paths` in the tree of `commit` (absent ones are left out).
pub fn blobs(root: &Path, commit: &str, paths: &[&str]) -> Result<HashMap<String, Blob>, CliError> {
    let mut out = HashMap::new();
    if paths.is_empty() {
        return Ok(out);
    }
    let mut args = vec!["ls-tree", "-z", commit, "--"];
    args.extend(paths);
    let listing = run(root, &args)?;
    let mut entries: Vec<(String, String, String)> = Vec::new();
    for item in listing.split(|b| *b == 0).filter(|i| !i.is_empty()) {
        let Ok(item) = std::str::from_utf8(item) else {
            continue;
        };
        let Some((meta, path)) = item.split_once('\t') else {
            continue;
        };
        let fields: Vec<&str> = meta.split(' ').collect();
        if let [mode, "blob", id] = fields.as_slice() {
            entries.push((path.to_string(), (*mode).to_string(), (*id).to_string()));
        }
    }
    let ids: Vec<String> = entries.iter().map(|(_, _, id)| id.clone()).collect();
    let contents =
        blobs_at(root, &ids, usize::MAX).map_err(|error| CliError::Failed(error.to_string()))?;
    for ((path, mode, _), bytes) in entries.into_iter().zip(contents) {
        if let Some(bytes) = bytes {
            out.insert(path, Blob { mode, bytes });
        }
    }
    Ok(out)
}

/// The staged bytes of `path` (`git show :path`), `None` when the index does not hold it.
pub fn staged(root: &Path, path: &str) -> Option<Vec<u8>> {
    run(root, &["show", &format!(":{path}")]).ok()
}

/// A file's new content for a tree built by [`write_tree`]: bytes and mode, or removal.
#[derive(Debug, Clone)]
pub enum TreeEntry {
    /// The file holds these bytes with this mode.
    Text {
        /// `100644`, `100755`, or `120000` (a symlink: the bytes are its target).
        mode: String,
        /// The content, byte for byte.
        bytes: Vec<u8>,
    },
    /// The file is removed.
    Removed,
}

/// A temporary index file under `.git/`, removed when dropped.
pub struct TempIndex {
    path: PathBuf,
}

impl TempIndex {
    /// A fresh index path in the repository's git directory.
    pub fn new(root: &Path) -> Result<Self, CliError> {
        let git_dir = run(root, &["rev-parse", "--absolute-git-dir"])?;
        let git_dir = PathBuf::from(String::from_utf8_lossy(&git_dir).trim());
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        Ok(Self {
            path: git_dir.join(format!("wit-index-{}-{nanos}", std::process::id())),
        })
    }
}

impl TempIndex {
    /// Its path (what `GIT_INDEX_FILE` names).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes the blobs of `entries` and returns the tree of `base` (a commit; none: empty) with
/// those files changed, built in a temporary index.
pub fn write_tree(
    root: &Path,
    base: Option<&str>,
    entries: &[(String, TreeEntry)],
) -> Result<String, CliError> {
    let index = TempIndex::new(root)?;
    write_tree_in(root, &index, base, entries)
}

/// [`write_tree`] in the temporary index `index`, which holds the tree after (what a hook of
/// its commit reads). Every blob is written by one `git hash-object --stdin-paths`.
pub fn write_tree_in(
    root: &Path,
    index: &TempIndex,
    base: Option<&str>,
    entries: &[(String, TreeEntry)],
) -> Result<String, CliError> {
    let env = [("GIT_INDEX_FILE", index.path.as_path())];
    match base {
        Some(commit) => run_with(root, &["read-tree", commit], &env, None)?,
        None => run_with(root, &["read-tree", "--empty"], &env, None)?,
    };
    let contents: Vec<&[u8]> = entries
        .iter()
        .filter_map(|(_, entry)| match entry {
            TreeEntry::Text { bytes, .. } => Some(bytes.as_slice()),
            TreeEntry::Removed => None,
        })
        .collect();
    let mut ids = hash_objects(root, index, &contents)?.into_iter();
    let mut info = String::new();
    for (path, entry) in entries {
        match entry {
            TreeEntry::Text { mode, .. } => {
                let id = ids
                    .next()
                    .ok_or_else(|| CliError::Failed("git hash-object gave too few ids".into()))?;
                info.push_str(&format!("{mode} {id}\t{path}\n"));
            }
            TreeEntry::Removed => {
                info.push_str(&format!(
                    "0 0000000000000000000000000000000000000000\t{path}\n"
                ));
            }
        }
    }
    run_with(
        root,
        &["update-index", "--index-info"],
        &env,
        Some(info.as_bytes()),
    )?;
    let tree = run_with(root, &["write-tree"], &env, None)?;
    Ok(String::from_utf8_lossy(&tree).trim().to_string())
}

/// Writes `contents` as blobs, their ids in order: the contents go to files beside `index`
/// (removed after), named to git by one `git hash-object -w --stdin-paths`.
fn hash_objects(
    root: &Path,
    index: &TempIndex,
    contents: &[&[u8]],
) -> Result<Vec<String>, CliError> {
    if contents.is_empty() {
        return Ok(Vec::new());
    }
    let dir = index.path.with_extension("blobs");
    let failed =
        |e: std::io::Error| CliError::Failed(format!("cannot write {}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(failed)?;
    struct Cleanup<'a>(&'a Path);
    impl Drop for Cleanup<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(self.0);
        }
    }
    let _cleanup = Cleanup(&dir);
    let mut paths = Vec::new();
    for (n, bytes) in contents.iter().enumerate() {
        let path = dir.join(n.to_string());
        std::fs::write(&path, bytes).map_err(failed)?;
        paths.extend_from_slice(path.as_os_str().as_encoded_bytes());
        paths.push(b'\n');
    }
    // --no-filters: the bytes as they are, never through the repository's clean filters
    // (what the working tree holds is what is committed, byte for byte).
    let out = run_with(
        root,
        &["hash-object", "-w", "--no-filters", "--stdin-paths"],
        &[],
        Some(&paths),
    )?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// Commits `tree` with `message` on `parent` (none: a root commit), touching no ref; the new
/// commit's id.
pub fn commit_tree(
    root: &Path,
    tree: &str,
    message: &str,
    parent: Option<&str>,
) -> Result<String, CliError> {
    let mut args = vec!["commit-tree", tree, "-m", message];
    if let Some(parent) = parent {
        args.push("-p");
        args.push(parent);
    }
    let commit = run(root, &args)?;
    Ok(String::from_utf8_lossy(&commit).trim().to_string())
}

/// The mode a working file would be committed with (a symlink's is `120000`).
pub fn file_mode(path: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => "120000".into(),
        Ok(meta) if meta.permissions().mode() & 0o111 != 0 => "100755".into(),
        _ => "100644".into(),
    }
}

/// A working file as git would store it: a symlink's target, a file's bytes (`None`: gone,
/// or not a file or symlink).
pub fn working_bytes(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        return std::fs::read_link(path)
            .ok()
            .map(|target| target.into_os_string().into_encoded_bytes());
    }
    meta.is_file().then(|| std::fs::read(path).ok()).flatten()
}
