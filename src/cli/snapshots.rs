//! Snapshots before destruction: when the shell gate lets a command through that would throw
//! away other sessions' uncommitted work (policy warn or off), it first saves the affected
//! files as they are in the working tree, as a commit on top of `HEAD` (what `git stash
//! create` makes, for chosen files only) under `refs/wit/snapshots/<id>`.
//!
//! `wit snapshots` lists them, `wit snapshots restore ID` writes their files back into the
//! working tree; snapshots older than 7 days are dropped whenever one is made or listed.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Subcommand;
use serde_json::json;

use super::context::Context;
use super::gitio::{self, TreeEntry};
use super::output::{CliError, Report};

/// Where snapshots are referenced.
pub const REF_PREFIX: &str = "refs/wit/snapshots/";

/// How long a snapshot is kept.
const KEEP_SECS: u64 = 7 * 24 * 3600;

/// `wit snapshots …`.
#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// List the snapshots (the default).
    List,
    /// Write a snapshot's files back into the working tree.
    Restore {
        /// The snapshot's id (as `wit snapshots` shows it).
        id: String,
    },
}

/// Runs `wit snapshots [list|restore ID]`.
pub fn run(ctx: &Context, command: Option<SnapshotCommand>) -> Result<Report, CliError> {
    let root = &ctx.paths.root;
    match command.unwrap_or(SnapshotCommand::List) {
        SnapshotCommand::List => {
            prune(root)?;
            let items = list(root)?;
            let mut human = String::new();
            if items.is_empty() {
                human.push_str("no snapshots\n");
            }
            for item in &items {
                human.push_str(&format!(
                    "{}  {}\n    files: {}\n",
                    item.id,
                    item.subject,
                    item.files.join(", ")
                ));
            }
            let value = json!(items
                .iter()
                .map(|item| json!({"id": item.id, "commit": item.commit, "at": item.at_secs * 1000, "subject": item.subject, "files": item.files}))
                .collect::<Vec<_>>());
            Ok(Report::new(value, human))
        }
        SnapshotCommand::Restore { id } => {
            let files = restore(root, &id)?;
            let human = format!("restored {} from snapshot {id}\n", files.join(", "));
            Ok(Report::new(json!({"id": id, "files": files}), human))
        }
    }
}

/// One snapshot.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The id (the last part of its ref).
    pub id: String,
    /// Its commit.
    pub commit: String,
    /// When it was made (unix seconds).
    pub at_secs: u64,
    /// What it was made before.
    pub subject: String,
    /// The files it holds.
    pub files: Vec<String>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Saves `files` (relative to `root`) as they are in the working tree, before `command`,
/// which endangers the work of `sessions`; returns the snapshot's id.
pub fn save(
    root: &Path,
    files: &[String],
    command: &str,
    sessions: &str,
) -> Result<String, CliError> {
    let head = gitio::head(root);
    let entries: Vec<(String, TreeEntry)> = files
        .iter()
        .map(|file| {
            let path = root.join(file);
            let entry = match std::fs::read(&path) {
                Ok(bytes) => TreeEntry::Text {
                    mode: gitio::file_mode(&path),
                    bytes,
                },
                Err(_) => TreeEntry::Removed,
            };
            (file.clone(), entry)
        })
        .collect();
    let tree = gitio::write_tree(root, head.as_deref(), &entries)?;
    let message = format!(
        "wit snapshot before `{command}`\n\nwork of: {sessions}\nfiles: {}\n",
        files.join(", ")
    );
    let mut args = vec!["commit-tree", tree.as_str(), "-m", message.as_str()];
    if let Some(head) = &head {
        args.push("-p");
        args.push(head);
    }
    let commit = gitio::run(root, &args)?;
    let commit = String::from_utf8_lossy(&commit).trim().to_string();
    let id = format!("{}-{}", now_secs(), &commit[..8.min(commit.len())]);
    gitio::run(root, &["update-ref", &format!("{REF_PREFIX}{id}"), &commit])?;
    prune(root)?;
    Ok(id)
}

/// Every snapshot, newest first.
pub fn list(root: &Path) -> Result<Vec<Snapshot>, CliError> {
    let out = gitio::run(
        root,
        &[
            "for-each-ref",
            "--sort=-committerdate",
            "--format=%(refname)%00%(objectname)%00%(committerdate:unix)%00%(subject)%00%(body)%01",
            REF_PREFIX,
        ],
    )?;
    let text = String::from_utf8_lossy(&out);
    let mut items = Vec::new();
    for record in text.split('\u{1}').map(str::trim).filter(|r| !r.is_empty()) {
        let fields: Vec<&str> = record.split('\0').collect();
        let [name, commit, at, subject, body] = fields.as_slice() else {
            continue;
        };
        let files = body
            .lines()
            .find_map(|line| line.strip_prefix("files: "))
            .map(|list| list.split(", ").map(str::to_string).collect())
            .unwrap_or_default();
        items.push(Snapshot {
            id: name.trim_start_matches(REF_PREFIX).to_string(),
            commit: (*commit).to_string(),
            at_secs: at.parse().unwrap_or(0),
            subject: (*subject).to_string(),
            files,
        });
    }
    Ok(items)
}

/// Drops snapshots older than 7 days.
fn prune(root: &Path) -> Result<(), CliError> {
    let cutoff = now_secs().saturating_sub(KEEP_SECS);
    for item in list(root)? {
        if item.at_secs < cutoff {
            gitio::run(
                root,
                &["update-ref", "-d", &format!("{REF_PREFIX}{}", item.id)],
            )?;
        }
    }
    Ok(())
}

/// Writes the files of snapshot `id` back into the working tree; returns them.
pub fn restore(root: &Path, id: &str) -> Result<Vec<String>, CliError> {
    let item = list(root)?
        .into_iter()
        .find(|item| item.id == id)
        .ok_or_else(|| CliError::Usage(format!("no snapshot {id} (`wit snapshots` lists them)")))?;
    let paths: Vec<&str> = item.files.iter().map(String::as_str).collect();
    let blobs = gitio::blobs(root, &item.commit, &paths)?;
    let mut restored = Vec::new();
    for file in &item.files {
        let path = root.join(file);
        match blobs.get(file) {
            Some(blob) => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        CliError::Failed(format!("cannot create {}: {e}", parent.display()))
                    })?;
                }
                std::fs::write(&path, &blob.bytes).map_err(|e| {
                    CliError::Failed(format!("cannot write {}: {e}", path.display()))
                })?;
            }
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
        restored.push(file.clone());
    }
    Ok(restored)
}
