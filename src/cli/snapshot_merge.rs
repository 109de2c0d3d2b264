//! Restoring a session's work snapshot (docs/protocol.md 15.5): exactly that session's lines,
//! byte for byte, written back onto each file as it is now. For each file the snapshot's
//! parent (`HEAD` when it was taken) is the base, the snapshot the session's side and the
//! working file the other: `git merge-file` applies the session's changes where the file
//! still holds the base's lines and reports a conflict where the same lines changed since.
//! Nothing is written unless every file merges cleanly.

use std::path::Path;

use super::gitio;
use super::output::CliError;
use super::snapshots::Snapshot;

/// A symlink's mode in a git tree.
pub(super) const SYMLINK: &str = "120000";

/// What one file becomes.
pub(super) enum Outcome {
    /// Already as the snapshot has it.
    Same,
    /// Write these bytes (a symlink: its target).
    Write { bytes: Vec<u8>, symlink: bool },
    /// Remove the file (the session deleted it).
    Remove,
}

/// The bytes of object `name` (`<commit>:<path>`), `None` when it does not exist.
fn object(root: &Path, name: &str) -> Result<Option<Vec<u8>>, CliError> {
    let found = crate::git::blobs_at(root, &[name.to_owned()], usize::MAX)
        .map_err(|e| CliError::Failed(format!("cannot read {name}: {e}")))?;
    Ok(found.into_iter().next().flatten())
}

/// The id of object `name`, `None` when it does not exist.
fn object_id(root: &Path, name: &str) -> Option<String> {
    gitio::run(root, &["rev-parse", "--verify", "-q", name])
        .ok()
        .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
        .filter(|id| !id.is_empty())
}

/// The mode of `path` in `commit`, when it holds it.
fn mode_in(root: &Path, commit: &str, path: &str) -> Option<String> {
    gitio::blobs(root, commit, &[path])
        .ok()?
        .remove(path)
        .map(|blob| blob.mode)
}

/// The three-way merge of one file; `Err(())` for a conflict.
fn merge_file(
    root: &Path,
    commit: &str,
    parent: Option<&str>,
    file: &str,
) -> Result<Result<Outcome, ()>, CliError> {
    let snap_name = format!("{commit}:{file}");
    let snap = object(root, &snap_name)?;
    let base_name = parent.map(|p| format!("{p}:{file}"));
    let base = match &base_name {
        Some(name) => object(root, name)?,
        None => None,
    };
    let current = gitio::working_bytes(&root.join(file));
    let symlink = mode_in(root, commit, file).as_deref() == Some(SYMLINK);
    let Some(snap) = snap else {
        // The session deleted the file.
        return Ok(match current {
            None => Ok(Outcome::Same),
            Some(now) if Some(&now) == base.as_ref() => Ok(Outcome::Remove),
            Some(_) => Err(()),
        });
    };
    let Some(current) = current else {
        // Gone from the tree: it comes back as the session left it.
        return Ok(Ok(Outcome::Write {
            bytes: snap,
            symlink,
        }));
    };
    if current == snap {
        return Ok(Ok(Outcome::Same));
    }
    if Some(&current) == base.as_ref() {
        return Ok(Ok(Outcome::Write {
            bytes: snap,
            symlink,
        }));
    }
    let text = |b: &[u8]| std::str::from_utf8(b).is_ok();
    let (Some(base), Some(base_name)) = (base, base_name) else {
        return Ok(Err(()));
    };
    if symlink || !text(&current) || !text(&base) || !text(&snap) {
        // A symlink or a binary file is whole: changed since, it cannot be merged.
        return Ok(Err(()));
    }
    let current_id = gitio::run_with(root, &["hash-object", "-w", "--stdin"], &[], Some(&current))?;
    let current_id = String::from_utf8_lossy(&current_id).trim().to_owned();
    let (Some(base_id), Some(snap_id)) = (object_id(root, &base_name), object_id(root, &snap_name))
    else {
        return Ok(Err(()));
    };
    let merged = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["merge-file", "-p", "--object-id"])
        .args([&current_id, &base_id, &snap_id])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| CliError::Failed(format!("cannot run git merge-file: {e}")))?;
    match merged.status.code() {
        Some(0) => Ok(Ok(Outcome::Write {
            bytes: merged.stdout,
            symlink: false,
        })),
        Some(n) if n > 0 => Ok(Err(())),
        _ => Err(CliError::Failed(format!(
            "git merge-file failed on {file}: {}",
            String::from_utf8_lossy(&merged.stderr).trim()
        ))),
    }
}

/// Writes `outcome` for `file` (a file already gone stays gone).
pub(super) fn write(root: &Path, file: &str, outcome: Outcome) -> Result<(), CliError> {
    let path = root.join(file);
    let failed =
        |e: std::io::Error| CliError::Failed(format!("cannot write {}: {e}", path.display()));
    match outcome {
        Outcome::Same => Ok(()),
        Outcome::Remove => match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(failed(e)),
            _ => Ok(()),
        },
        Outcome::Write { bytes, symlink } => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(failed)?;
            }
            let is_link =
                std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
            if symlink || is_link {
                let _ = std::fs::remove_file(&path);
            }
            if symlink {
                use std::os::unix::ffi::OsStrExt;
                std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&bytes), &path)
                    .map_err(failed)
            } else {
                std::fs::write(&path, bytes).map_err(failed)
            }
        }
    }
}

/// Restores `session`'s work snapshot `item`; its files.
pub fn restore_work(root: &Path, item: &Snapshot, session: &str) -> Result<Vec<String>, CliError> {
    let parent = object_id(root, &format!("{}^", item.commit));
    let mut planned = Vec::new();
    let mut conflicts = Vec::new();
    for file in &item.files {
        match merge_file(root, &item.commit, parent.as_deref(), file)? {
            Ok(outcome) => planned.push((file.clone(), outcome)),
            Err(()) => conflicts.push(file.clone()),
        }
    }
    if !conflicts.is_empty() {
        return Err(CliError::Failed(format!(
            "snapshot {} not restored: the lines {session} changed in {} changed again since; nothing was written (resolve by hand with `git show {}:FILE`)",
            item.id,
            conflicts.join(", "),
            &item.commit[..12.min(item.commit.len())]
        )));
    }
    for (file, outcome) in planned {
        write(root, &file, outcome)?;
    }
    Ok(item.files.clone())
}
