//! Every owner's uncommitted work kept as git objects (docs/protocol.md 15.5): after each pass
//! of the tree observer, each session's work in the worktree (HEAD's bytes with exactly its
//! changes, from the owner map) is saved as a commit on `HEAD` under `refs/wit/work/…`
//! ([`crate::cli::snapshots::save_work`]) when it changed since the last save.
//!
//! A snapshot never forgets a file because its lines vanished from the tree: whatever took
//! them (`git stash` run by a script, a person's `git reset --hard`, `rm`), the file stays in
//! the session's snapshot until `HEAD` holds exactly what the snapshot holds (the work was
//! committed). A session whose work is all gone keeps its last snapshot; `wit snapshots`
//! lists them and `wit snapshots restore` writes the lines back.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::coord::Coord;
use crate::git::blobs_at;

/// One file's content in a snapshot (`None`: deleted).
type Content = Option<Vec<u8>>;

/// The work snapshots this daemon keeps up.
#[derive(Debug, Default)]
pub struct WorkSnapshots {
    /// Per (worktree root, session): the files of its last snapshot, and their digest.
    kept: HashMap<(String, String), (BTreeMap<String, Content>, u64)>,
}

/// The digest of a snapshot's files.
fn digest(files: &BTreeMap<String, Content>) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for (file, content) in files {
        hasher.update(file.as_bytes());
        hasher.update(&[0]);
        match content {
            Some(bytes) => {
                hasher.update(&(bytes.len() as u64).to_le_bytes());
                hasher.update(bytes);
            }
            None => hasher.update(b"\xff"),
        }
    }
    hasher.digest()
}

impl WorkSnapshots {
    /// Saves the work of every owner in the worktree at `root` that changed since its last
    /// snapshot. Git is asked about HEAD only for work that changed, or when `head_moved`.
    pub fn refresh(&mut self, coord: &Coord, root: &Path, head_moved: bool) -> Result<(), String> {
        let key_root = root.to_string_lossy().into_owned();
        let touched = coord.take_touched(&key_root);
        let mut now = coord.work_of_owners(&key_root);
        // A session's file changes in its snapshot only by its own changes: lines that
        // vanished by anybody else's (a reset, a stash, `rm`) stay, until HEAD holds them.
        for ((r, session), (files, _)) in &self.kept {
            if *r != key_root {
                continue;
            }
            let entry = now.entry(session.clone()).or_default();
            for (file, content) in files {
                if !touched.contains(&(session.clone(), file.clone())) {
                    entry.insert(file.clone(), content.clone());
                }
            }
        }
        for (session, mut files) in now {
            let key = (key_root.clone(), session.clone());
            let unchanged = self
                .kept
                .get(&key)
                .is_some_and(|(_, d)| *d == digest(&files));
            if unchanged && !head_moved {
                continue;
            }
            self.drop_committed(root, &mut files)?;
            if files.is_empty() {
                self.kept.remove(&key);
                continue;
            }
            let sum = digest(&files);
            if self.kept.get(&key).is_some_and(|(_, d)| *d == sum) {
                continue;
            }
            crate::cli::snapshots::save_work(root, &session, &files).map_err(|e| e.to_string())?;
            self.kept.insert(key, (files, sum));
        }
        Ok(())
    }

    /// Leaves out the files whose snapshot content is what HEAD holds now (committed).
    fn drop_committed(
        &self,
        root: &Path,
        files: &mut BTreeMap<String, Content>,
    ) -> Result<(), String> {
        let names: Vec<String> = files.keys().map(|f| format!("HEAD:{f}")).collect();
        let heads = blobs_at(root, &names, usize::MAX).map_err(|e| e.to_string())?;
        let committed: Vec<String> = files
            .iter()
            .zip(heads)
            .filter(|((_, content), head)| *content == head)
            .map(|((file, _), _)| file.clone())
            .collect();
        for file in committed {
            files.remove(&file);
        }
        Ok(())
    }
}
