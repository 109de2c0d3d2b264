//! Git objects written by wit itself, without a git process (docs/protocol.md 15.5: the work
//! snapshots' upkeep): blobs, trees and commits as loose objects, exactly as
//! `git hash-object -w`, `git write-tree` and `git commit-tree` write them (zlib at git's
//! loose-object level, the id the repository's object format's hash of
//! `<kind> <size>\0<bytes>`), so git reads them as its own.
//!
//! A tree is built over a base tree read through the one object reader ([`BatchReader`]):
//! only the directories on the changed paths are read and written again. A commit is written
//! the same way, by wit as its committer.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha1::Digest;

use super::{BatchReader, Git, GitError};

/// A tree's mode in its parent (git writes it without a leading zero).
const TREE_MODE: &str = "40000";

/// The hash of a repository's objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `sha1`, 20 bytes.
    Sha1,
    /// `sha256`, 32 bytes.
    Sha256,
}

impl Format {
    /// The length of an object id in bytes.
    fn id_len(self) -> usize {
        match self {
            Format::Sha1 => 20,
            Format::Sha256 => 32,
        }
    }

    /// The object id of `bytes` as an object of `kind`.
    fn id_of(self, kind: &str, bytes: &[u8]) -> Vec<u8> {
        let header = format!("{kind} {}\0", bytes.len());
        match self {
            Format::Sha1 => {
                let mut hasher = sha1::Sha1::new();
                hasher.update(header.as_bytes());
                hasher.update(bytes);
                hasher.finalize().to_vec()
            }
            Format::Sha256 => {
                let mut hasher = sha2::Sha256::new();
                hasher.update(header.as_bytes());
                hasher.update(bytes);
                hasher.finalize().to_vec()
            }
        }
    }
}

/// Where a repository keeps its objects, and their hash: asked of git once.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    /// The objects directory (the common one of all worktrees; `GIT_OBJECT_DIRECTORY`
    /// respected).
    dir: PathBuf,
    /// Its object format.
    format: Format,
}

/// A file's content in a tree built by [`ObjectStore::tree_over`]: its mode and bytes, or
/// removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change<'a> {
    /// The file holds `bytes` with `mode` (`100644`, `100755`, `120000`: the bytes are the
    /// link's target).
    File {
        /// The mode as git writes it.
        mode: &'a str,
        /// The content, byte for byte.
        bytes: &'a [u8],
        /// Whether a file the base holds keeps the base's mode (`mode` is then for a new
        /// file only).
        keep_base_mode: bool,
    },
    /// The file is gone.
    Removed,
}

/// One entry of a tree object.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    mode: String,
    id: Vec<u8>,
}

/// Who writes wit's commits (the work snapshots).
const COMMITTER: &str = "wit <wit@localhost>";

/// Temporary files of this process get distinct names.
static TEMPORARY: AtomicU64 = AtomicU64::new(0);

impl ObjectStore {
    /// The object store of the repository at `repo` (one `git rev-parse`).
    pub fn of(repo: &Path) -> Result<ObjectStore, GitError> {
        let args = [
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "objects",
            "--show-object-format",
        ];
        let out = Git::new(repo).run(&args)?;
        let text = String::from_utf8(out)
            .map_err(|_| GitError::new("rev-parse", "a path that is not UTF-8".into()))?;
        let mut lines = text.lines();
        let (Some(dir), Some(format)) = (lines.next(), lines.next()) else {
            return Err(GitError::new(
                "rev-parse",
                format!("unexpected answer {text:?}"),
            ));
        };
        let format = match format.trim() {
            "sha1" => Format::Sha1,
            "sha256" => Format::Sha256,
            other => {
                return Err(GitError::new(
                    "rev-parse",
                    format!("unknown object format {other}"),
                ))
            }
        };
        Ok(ObjectStore {
            dir: PathBuf::from(dir),
            format,
        })
    }

    /// Writes `bytes` as an object of `kind` (`blob`, `tree`) unless it is there; its id.
    fn write(&self, kind: &str, bytes: &[u8]) -> Result<Vec<u8>, GitError> {
        let id = self.format.id_of(kind, bytes);
        let hex = to_hex(&id);
        let (fan, rest) = hex.split_at(2);
        let dir = self.dir.join(fan);
        let path = dir.join(rest);
        if path.exists() {
            return Ok(id);
        }
        let failed = |what: &str, error: std::io::Error| {
            GitError::new(
                "(object write)",
                format!("{what} {}: {error}", path.display()),
            )
        };
        std::fs::create_dir_all(&dir).map_err(|e| failed("cannot make the directory of", e))?;
        let temporary = dir.join(format!(
            "tmp_obj_wit_{}_{}",
            std::process::id(),
            TEMPORARY.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let file = std::fs::File::create(&temporary)?;
            // git's core.looseCompression default: zlib's fastest level.
            let mut encoder = flate2::write::ZlibEncoder::new(file, flate2::Compression::fast());
            encoder.write_all(format!("{kind} {}\0", bytes.len()).as_bytes())?;
            encoder.write_all(bytes)?;
            let file = encoder.finish()?;
            let mut permissions = file.metadata()?.permissions();
            permissions.set_readonly(true);
            file.set_permissions(permissions)?;
            std::fs::rename(&temporary, &path)
        })();
        if let Err(error) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(failed("cannot write", error));
        }
        Ok(id)
    }

    /// Writes `bytes` as a blob; its id in hex.
    #[cfg(test)]
    fn write_blob(&self, bytes: &[u8]) -> Result<String, GitError> {
        self.write("blob", bytes).map(|id| to_hex(&id))
    }

    /// A commit of `tree` on `parent` with `message`, wit as its author and committer (now);
    /// its id in hex.
    pub fn write_commit(
        &self,
        tree: &str,
        parent: Option<&str>,
        message: &str,
    ) -> Result<String, GitError> {
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let ident = format!("{COMMITTER} {seconds} +0000");
        let mut text = format!("tree {tree}\n");
        if let Some(parent) = parent {
            text.push_str(&format!("parent {parent}\n"));
        }
        text.push_str(&format!("author {ident}\ncommitter {ident}\n\n{message}"));
        self.write("commit", text.as_bytes()).map(|id| to_hex(&id))
    }

    /// The tree `base` (a tree-ish `reader` can read; none: the empty tree) with `changes`
    /// made (paths relative to the top, `/`-separated), written with every blob and tree it
    /// needs; its id in hex. A directory left empty is left out, as git's `write-tree` leaves
    /// it out.
    pub fn tree_over(
        &self,
        reader: &mut BatchReader,
        base: Option<&str>,
        changes: &BTreeMap<String, Change<'_>>,
    ) -> Result<String, GitError> {
        let mut dirs: BTreeSet<String> = BTreeSet::from([String::new()]);
        for path in changes.keys() {
            let mut at = path.as_str();
            while let Some((parent, _)) = at.rsplit_once('/') {
                dirs.insert(parent.to_owned());
                at = parent;
            }
        }
        let dirs: Vec<String> = dirs.into_iter().collect();
        let mut trees: BTreeMap<String, BTreeMap<Vec<u8>, Entry>> = BTreeMap::new();
        let bases = match base {
            Some(base) => {
                let names: Vec<String> = dirs.iter().map(|dir| format!("{base}:{dir}")).collect();
                reader.blobs(&names, usize::MAX)?
            }
            None => vec![None; dirs.len()],
        };
        for (dir, bytes) in dirs.iter().zip(bases) {
            let entries = bytes
                .map(|bytes| self.parse_tree(&bytes))
                .unwrap_or_default();
            trees.insert(dir.clone(), entries);
        }
        for (path, change) in changes {
            let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
            let Some(tree) = trees.get_mut(dir) else {
                continue;
            };
            match change {
                Change::File {
                    mode,
                    bytes,
                    keep_base_mode,
                } => {
                    let id = self.write("blob", bytes)?;
                    let mode = match tree.get(name.as_bytes()) {
                        Some(base) if *keep_base_mode && base.mode != TREE_MODE => {
                            base.mode.clone()
                        }
                        _ => (*mode).to_owned(),
                    };
                    tree.insert(name.as_bytes().to_vec(), Entry { mode, id });
                }
                Change::Removed => {
                    tree.remove(name.as_bytes());
                }
            }
        }
        // Deepest first, so a parent takes each subtree's new id (or loses it when empty).
        let mut order: Vec<String> = trees.keys().cloned().collect();
        order.sort_by_key(|dir| {
            std::cmp::Reverse(dir.matches('/').count() + usize::from(!dir.is_empty()))
        });
        let mut root = None;
        for dir in order {
            let Some(entries) = trees.remove(&dir) else {
                continue;
            };
            let written = if entries.is_empty() && !dir.is_empty() {
                None
            } else {
                Some(self.write("tree", &serialize_tree(&entries))?)
            };
            if dir.is_empty() {
                root = written;
                continue;
            }
            let (parent, name) = dir.rsplit_once('/').unwrap_or(("", &dir));
            if let Some(parent) = trees.get_mut(parent) {
                match written {
                    Some(id) => {
                        parent.insert(
                            name.as_bytes().to_vec(),
                            Entry {
                                mode: TREE_MODE.to_owned(),
                                id,
                            },
                        );
                    }
                    None => {
                        parent.remove(name.as_bytes());
                    }
                }
            }
        }
        let root = match root {
            Some(id) => id,
            None => self.write("tree", b"")?,
        };
        Ok(to_hex(&root))
    }

    /// The entries of a tree object's bytes (`<mode> <name>\0<id>` each), by name.
    fn parse_tree(&self, mut bytes: &[u8]) -> BTreeMap<Vec<u8>, Entry> {
        let mut entries = BTreeMap::new();
        let id_len = self.format.id_len();
        while let Some(space) = bytes.iter().position(|b| *b == b' ') {
            let Some(nul) = bytes[space..]
                .iter()
                .position(|b| *b == 0)
                .map(|n| n + space)
            else {
                break;
            };
            if bytes.len() < nul + 1 + id_len {
                break;
            }
            let Ok(mode) = std::str::from_utf8(&bytes[..space]).map(str::to_owned) else {
                break;
            };
            let name = bytes[space + 1..nul].to_vec();
            let id = bytes[nul + 1..nul + 1 + id_len].to_vec();
            entries.insert(name, Entry { mode, id });
            bytes = &bytes[nul + 1 + id_len..];
        }
        entries
    }
}

/// A tree object's bytes: its entries in git's order (a tree's name compared as if it ended
/// in `/`).
fn serialize_tree(entries: &BTreeMap<Vec<u8>, Entry>) -> Vec<u8> {
    let mut sorted: Vec<(&Vec<u8>, &Entry)> = entries.iter().collect();
    let key = |name: &[u8], entry: &Entry| -> Vec<u8> {
        let mut key = name.to_vec();
        if entry.mode == TREE_MODE {
            key.push(b'/');
        }
        key
    };
    sorted.sort_by_key(|(name, entry)| key(name, entry));
    let mut out = Vec::new();
    for (name, entry) in sorted {
        out.extend_from_slice(entry.mode.as_bytes());
        out.push(b' ');
        out.extend_from_slice(name);
        out.push(0);
        out.extend_from_slice(&entry.id);
    }
    out
}

/// Bytes as lower-case hex.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    hex
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn hex_is_two_lower_case_digits_a_byte() {
        for (bytes, hex) in [
            (&b""[..], ""),
            (&[0x00][..], "00"),
            (&[0x0f, 0xf0, 0xab][..], "0ff0ab"),
            (&b"w1-"[..], "77312d"),
        ] {
            assert_eq!(to_hex(bytes), hex);
        }
    }

    /// git's own answer: `base` read into a fresh index, `changes` made there, `write-tree`.
    fn trees_as_git_writes_them(
        repo: &Path,
        base: &str,
        changes: &BTreeMap<String, Change<'_>>,
    ) -> String {
        let index = repo.join(".git/test-index");
        let git = Git::new(repo).env("GIT_INDEX_FILE", &index);
        git.run(&["read-tree", base]).unwrap();
        for (path, change) in changes {
            match change {
                Change::File { mode, bytes, .. } => {
                    let id = git
                        .run_with_input(&["hash-object", "-w", "--stdin"], bytes)
                        .unwrap();
                    let id = String::from_utf8(id).unwrap();
                    let info = format!("{mode},{},{path}", id.trim());
                    git.run(&["update-index", "--add", "--cacheinfo", &info])
                        .unwrap();
                }
                Change::Removed => {
                    git.run(&["update-index", "--force-remove", path]).unwrap();
                }
            }
        }
        let tree = git.run(&["write-tree"]).unwrap();
        String::from_utf8(tree).unwrap().trim().to_owned()
    }

    fn repository(format: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let git = crate::git::as_tester(dir.path());
        git.run(&["init", "-q", &format!("--object-format={format}")])
            .unwrap();
        for (path, text) in [
            ("a.py", "a\n"),
            ("lib/b.py", "b\n"),
            ("lib/c/d.py", "d\n"),
            ("lib.py", "x\n"),
            ("lib-x/e.py", "e\n"),
            ("z/only.py", "o\n"),
        ] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git.run(&["add", "-A"]).unwrap();
        git.run(&["commit", "-q", "-m", "base"]).unwrap();
        dir
    }

    #[test]
    fn a_tree_over_a_commit_is_the_one_git_writes() {
        for format in ["sha1", "sha256"] {
            let dir = repository(format);
            let store = ObjectStore::of(dir.path()).unwrap();
            let changes: BTreeMap<String, Change<'_>> = [
                (
                    "lib/b.py",
                    Change::File {
                        mode: "100644",
                        bytes: b"b\r\n\xff no final newline",
                        keep_base_mode: true,
                    },
                ),
                (
                    "lib/c/new.sh",
                    Change::File {
                        mode: "100755",
                        bytes: b"#!/bin/sh\n",
                        keep_base_mode: true,
                    },
                ),
                (
                    "lib/link",
                    Change::File {
                        mode: "120000",
                        bytes: b"../lib.py",
                        keep_base_mode: false,
                    },
                ),
                ("z/only.py", Change::Removed),
                ("a.py", Change::Removed),
                (
                    "new/deep/f.py",
                    Change::File {
                        mode: "100644",
                        bytes: b"",
                        keep_base_mode: true,
                    },
                ),
                ("gone/never.py", Change::Removed),
            ]
            .into_iter()
            .map(|(path, change)| (path.to_owned(), change))
            .collect();
            let mut reader = BatchReader::start(dir.path()).unwrap();
            let ours = store
                .tree_over(&mut reader, Some("HEAD"), &changes)
                .unwrap();
            assert_eq!(
                ours,
                trees_as_git_writes_them(dir.path(), "HEAD", &changes),
                "{format}"
            );
            let listing = Git::new(dir.path())
                .run(&["ls-tree", "-r", "--name-only", &ours])
                .unwrap();
            let listing = String::from_utf8(listing).unwrap();
            assert!(!listing.contains("z/"), "an emptied directory is left out");
            let fsck = Git::new(dir.path()).run(&["fsck", "--strict", "--no-dangling"]);
            assert!(fsck.is_ok(), "{format}: {fsck:?}");
        }
    }

    #[test]
    fn a_tree_over_nothing_holds_just_the_changes() {
        let dir = repository("sha1");
        let store = ObjectStore::of(dir.path()).unwrap();
        let changes: BTreeMap<String, Change<'_>> = [(
            "x/y.py".to_owned(),
            Change::File {
                mode: "100644",
                bytes: b"y\n",
                keep_base_mode: true,
            },
        )]
        .into_iter()
        .collect();
        let mut reader = BatchReader::start(dir.path()).unwrap();
        let ours = store.tree_over(&mut reader, None, &changes).unwrap();
        let commit = store.write_commit(&ours, None, "work\n").unwrap();
        let shown = Git::new(dir.path())
            .run(&["log", "-1", "--format=%an <%ae>|%T|%B", &commit])
            .unwrap();
        assert_eq!(
            String::from_utf8(shown).unwrap(),
            format!("wit <wit@localhost>|{ours}|work\n\n")
        );
        let listing = Git::new(dir.path()).run(&["ls-tree", "-r", &ours]).unwrap();
        let blob = store.write_blob(b"y\n").unwrap();
        assert_eq!(
            String::from_utf8(listing).unwrap(),
            format!("100644 blob {blob}\tx/y.py\n")
        );
    }
}
