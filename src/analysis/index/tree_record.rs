//! The record of a walk of the tree (`walk::walk`), and the check a warm restart makes of it
//! instead of walking again.

use std::fs::Metadata;
use std::path::Path;

use super::walk::{Walked, WalkedFile};
use crate::analysis::language::Language;
use crate::analysis::store::to_nanos;

/// What decides the result of a walk, as it was: every directory walked with its mtime (an
/// entry made, removed or renamed in a directory changes it), every file that decides what is
/// ignored or how Go imports resolve (`.gitignore` and `.ignore` of each directory,
/// `.git/info/exclude`, the `go.mod` manifests) with its mtime and size or its absence, and
/// the files found. While all of that is unchanged, a walk would find the same files: a warm
/// restart checks it with a `stat` of each directory and deciding file instead of walking the
/// tree again (sympy: 12–13 ms of walking, the largest part of a warm restart; issue 32.3).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct TreeRecord {
    /// When the walk started (ns since the epoch): what changed within [`RACY_NS`] of it may
    /// not have moved an mtime the record could tell from.
    walked_at_ns: i64,
    dirs: Vec<(String, i64)>,
    deciding: Vec<(String, Option<(i64, u64)>)>,
    files: Vec<(String, u64)>,
    manifests: Vec<String>,
}

/// How close to a walk a recorded mtime must not be (file systems keep mtimes as coarse as a
/// second or two).
const RACY_NS: i64 = 2_000_000_000;

/// The files of a directory that decide what the walk ignores.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

fn mtime_ns(meta: &Metadata) -> Option<i64> {
    to_nanos(meta.modified().ok()?)
}

/// A deciding file's mtime and size, `None` when it is absent (or unreadable).
fn deciding_state(path: &Path) -> Option<(i64, u64)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((mtime_ns(&meta)?, meta.len()))
}

impl TreeRecord {
    /// The walk this record stands for (each file's metadata is left to the build, which
    /// reads them on its threads); `None` when anything that decides it changed or is too
    /// close to the walk to tell (then the tree is walked).
    pub(super) fn unchanged(&self, root: &Path) -> Option<Walked> {
        let racy = self.walked_at_ns.saturating_sub(RACY_NS);
        for (dir, recorded) in &self.dirs {
            let now = mtime_ns(&std::fs::symlink_metadata(root.join(dir)).ok()?)?;
            if now != *recorded || now >= racy {
                return None;
            }
        }
        for (path, recorded) in &self.deciding {
            let now = deciding_state(&root.join(path));
            if now != *recorded || now.is_some_and(|(mtime, _)| mtime >= racy) {
                return None;
            }
        }
        let mut files = Vec::with_capacity(self.files.len());
        for (rel, size) in &self.files {
            files.push(WalkedFile {
                rel: rel.clone(),
                language: Language::for_path(rel)?,
                size: *size,
                meta: None,
            });
        }
        Some(Walked {
            files,
            manifests: self.manifests.clone(),
            record: None,
        })
    }

    /// A record of a walk of `root` starting now; `None` outside a main worktree (a linked
    /// one's exclude file is in the common directory) or when the clock cannot be read.
    pub(super) fn start(root: &Path) -> Option<TreeRecord> {
        let walked_at_ns = to_nanos(std::time::SystemTime::now())?;
        root.join(".git").is_dir().then(|| TreeRecord {
            walked_at_ns,
            ..TreeRecord::default()
        })
    }

    /// The record with the directory `entry` and its ignore files; `None` when its mtime
    /// cannot be read (the walk is then not recorded).
    pub(super) fn with_dir(mut self, root: &Path, entry: &ignore::DirEntry) -> Option<TreeRecord> {
        let rel = entry.path().strip_prefix(root).ok()?.to_str()?.to_owned();
        let mtime = mtime_ns(&entry.metadata().ok()?)?;
        for name in IGNORE_FILES {
            let path = if rel.is_empty() {
                name.to_owned()
            } else {
                format!("{rel}/{name}")
            };
            if let Some(state) = deciding_state(&root.join(&path)) {
                self.deciding.push((path, Some(state)));
            }
        }
        self.dirs.push((rel, mtime));
        Some(self)
    }

    /// The record of the finished walk `walked`: the exclude file and the manifests, and the
    /// files found.
    pub(super) fn finish(mut self, root: &Path, walked: &Walked) -> TreeRecord {
        let exclude = ".git/info/exclude";
        self.deciding
            .push((exclude.to_owned(), deciding_state(&root.join(exclude))));
        for manifest in &walked.manifests {
            self.deciding
                .push((manifest.clone(), deciding_state(&root.join(manifest))));
        }
        self.files = walked
            .files
            .iter()
            .map(|f| (f.rel.clone(), f.size))
            .collect();
        self.manifests.clone_from(&walked.manifests);
        self
    }

    /// The record as stored.
    pub(super) fn encode(&self) -> Vec<u8> {
        postcard::to_stdvec(self).unwrap_or_default()
    }

    /// A stored record; `None` when it does not decode (then the tree is walked).
    pub(super) fn decode(bytes: &[u8]) -> Option<TreeRecord> {
        postcard::from_bytes(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    use super::super::testing::write;
    use super::super::walk::recorded_walk;

    /// An mtime long before any walk of the test; [`MOVED`] is another one, as long before.
    const AGED: u64 = 1_000_000_000;
    const MOVED: u64 = AGED + 10;

    /// Sets the mtime of `path` (a file or a directory) to `secs` after the epoch: out of the
    /// racy window of a walk made now, and the same each time.
    fn set_mtime(path: &Path, secs: u64) {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        std::fs::File::open(path).unwrap().set_modified(at).unwrap();
    }

    fn age_all(root: &Path, paths: &[&str]) {
        for path in paths {
            set_mtime(&root.join(path), AGED);
        }
    }

    fn names(walked: &Walked) -> Vec<&str> {
        walked.files.iter().map(|f| f.rel.as_str()).collect()
    }

    /// A record of a walk stands for it while nothing that decides it moved: an edit inside
    /// a file does not (its fresh metadata comes back); a new file, a changed `.gitignore` or
    /// `go.mod`, a new `exclude` each send the build back to walking, told by the mtime or
    /// presence of what they moved alone (set to another old time, out of the racy window);
    /// and a tree too fresh to tell does too.
    #[test]
    fn a_walk_record_stands_for_the_walk_until_the_tree_moves() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        write(root, "src/a.ts", "export const a = 1;\n");
        write(root, "src/b.py", "b = 1\n");
        write(root, ".gitignore", "gen/\n");
        write(root, "gen/c.ts", "export const c = 1;\n");
        write(root, "m/go.mod", "module example.com/m\n");
        write(root, "m/d.go", "package m\n");
        let tree = [".", "src", "gen", "m", ".gitignore", "m/go.mod"];
        let fresh = recorded_walk(root).record.unwrap();
        assert!(
            fresh.unchanged(root).is_none(),
            "walked right after the tree moved"
        );

        age_all(root, &tree);
        let walked = recorded_walk(root);
        let record = TreeRecord::decode(&walked.record.as_ref().unwrap().encode()).unwrap();
        let again = record.unchanged(root).unwrap();
        assert_eq!(names(&again), names(&walked));
        assert_eq!(again.manifests, walked.manifests);

        write(root, "src/a.ts", "export const a = 22;\n");
        assert!(record.unchanged(root).is_some(), "an edit inside a file");

        // Each change, and what it moved (set to MOVED, an old time of its own).
        let changes: [(&str, &dyn Fn(), &str); 4] = [
            ("a new file", &|| write(root, "src/new.ts", "x\n"), "src"),
            (
                "an edited .gitignore",
                &|| write(root, ".gitignore", "gen/\n"),
                ".gitignore",
            ),
            (
                "an edited go.mod",
                &|| write(root, "m/go.mod", "module example.com/n\n"),
                "m/go.mod",
            ),
            (
                "a new exclude",
                &|| write(root, ".git/info/exclude", "*.py\n"),
                ".git/info/exclude",
            ),
        ];
        for (what, change, moved) in changes {
            age_all(root, &tree);
            let record = recorded_walk(root).record.unwrap();
            assert!(record.unchanged(root).is_some(), "before {what}");
            change();
            set_mtime(&root.join(moved), MOVED);
            assert!(record.unchanged(root).is_none(), "{what} went unseen");
        }
    }
}
