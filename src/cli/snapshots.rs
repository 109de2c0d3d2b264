//! Snapshots before destruction: when the shell gate lets a command through that would throw
//! away other sessions' uncommitted work (policy warn or off), it first saves the affected
//! files as they are in the working tree, as a commit on top of `HEAD` (what `git stash
//! create` makes, for chosen files only) under `refs/wit/snapshots/<id>`.
//!
//! `wit snapshots` lists them, `wit snapshots restore ID` writes their files back into the
//! working tree; the gate's snapshots older than 7 days are dropped whenever one is made or
//! listed (the sessions' work snapshots by the daemon, which knows whose work is live).

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Subcommand;
use serde_json::json;

use super::context::Context;
use super::gitio::{self, TreeEntry};
use super::output::{CliError, Report};
use super::snapshot_merge::{write, Outcome, SYMLINK};
use crate::protocol::{WorkBeginParams, WorkEndParams};

/// Where snapshots are referenced.
pub const REF_PREFIX: &str = "refs/wit/snapshots/";

/// Where each owner's continuous work snapshot is referenced (15.5): one ref per session,
/// `refs/wit/work/<session, made safe for a ref name>`.
pub const WORK_REF_PREFIX: &str = "refs/wit/work/";

/// The id `wit snapshots` shows for a work snapshot: this and the ref's last part.
const WORK_ID_PREFIX: &str = "w-";

/// A session id as a ref's last part: letters, digits, `.`, `_` and `-` kept, anything else
/// `_`, and a hash of the whole id so two ids never share a ref.
pub fn work_ref_name(session: &str) -> String {
    let safe: String = session
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "{safe}-{:08x}",
        xxhash_rust::xxh3::xxh3_64(session.as_bytes()) as u32
    )
}

/// The full name of `session`'s work snapshot ref.
pub fn work_ref(session: &str) -> String {
    format!("{WORK_REF_PREFIX}{}", work_ref_name(session))
}

/// How long a snapshot is kept (a work snapshot: after its last save, 15.5).
pub const KEEP_SECS: u64 = 7 * 24 * 3600;

/// `wit snapshots …`.
#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// List the snapshots (the default).
    List,
    /// Write a snapshot's files back into the working tree.
    Restore {
        /// The snapshot's id (as `wit snapshots` shows it).
        id: String,
        /// Only if the snapshot is this session's work.
        #[arg(long)]
        session: Option<String>,
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
                .map(|item| json!({"id": item.id, "commit": item.commit, "at": item.at_secs * 1000, "subject": item.subject, "files": item.files, "session": item.session}))
                .collect::<Vec<_>>());
            Ok(Report::new(value, human))
        }
        SnapshotCommand::Restore { id, session } => {
            // The lines written back are the snapshot's session's again (15.2): a window of
            // that session names each file while they are written.
            let owner = list(root)?
                .into_iter()
                .find(|item| item.id == id)
                .and_then(|item| item.session.map(|s| (s, item.files)))
                .filter(|(s, _)| !crate::coord::ownership::is_unowned_session(s));
            let windows = match &owner {
                Some((s, files)) => open_windows(ctx, s, files),
                None => Vec::new(),
            };
            let restored = restore(root, &id, session.as_deref());
            if let Some((s, _)) = &owner {
                close_windows(ctx, s, windows);
            }
            let files = restored?;
            let human = format!("restored {} from snapshot {id}\n", files.join(", "));
            Ok(Report::new(json!({"id": id, "files": files}), human))
        }
    }
}

/// Opens a window of `session` naming each of `files` (nothing without a daemon).
fn open_windows(ctx: &Context, session: &str, files: &[String]) -> Vec<String> {
    let opened = super::context::block_on(async {
        let mut ids = Vec::new();
        for file in files {
            let params = WorkBeginParams {
                session_id: session.to_owned(),
                tool: "wit snapshots restore".to_owned(),
                file: Some(file.clone()),
                edits: Vec::new(),
                ttl_ms: Some(60_000),
            };
            let begun = ctx
                .doorway()
                .call(|client| {
                    let params = params.clone();
                    async move { client.work_begin(params).await }
                })
                .await;
            match begun {
                Ok(window) => ids.push(window.window_id),
                Err(_) => break,
            }
        }
        Ok(ids)
    });
    opened.unwrap_or_default()
}

/// Closes the windows `ids` of `session` once the daemon has read what they wrote.
fn close_windows(ctx: &Context, session: &str, ids: Vec<String>) {
    let _ = super::context::block_on(async {
        for window_id in ids {
            let params = WorkEndParams {
                session_id: session.to_owned(),
                window_id,
            };
            let _ = ctx
                .doorway()
                .call(|client| {
                    let params = params.clone();
                    async move { client.work_end(params).await }
                })
                .await;
        }
        Ok(())
    });
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
    /// A work snapshot's session (15.5); `None` for the gate's.
    pub session: Option<String>,
    /// Its ref.
    pub reference: String,
}

/// Now, in unix seconds.
pub(crate) fn now_secs() -> u64 {
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
            let entry = match gitio::working_bytes(&path) {
                Some(bytes) => TreeEntry::Text {
                    mode: gitio::file_mode(&path),
                    bytes,
                },
                None => TreeEntry::Removed,
            };
            (file.clone(), entry)
        })
        .collect();
    let tree = gitio::write_tree(root, head.as_deref(), &entries)?;
    let message = format!(
        "wit snapshot before `{command}`\n\nwork of: {sessions}\nfiles: {}\n",
        files.join(", ")
    );
    let commit = gitio::commit_tree(root, &tree, &message, head.as_deref())?;
    let id = format!("{}-{}", now_secs(), &commit[..8.min(commit.len())]);
    gitio::run(root, &["update-ref", &format!("{REF_PREFIX}{id}"), &commit])?;
    prune(root)?;
    Ok(id)
}

/// Every snapshot, the gate's and the sessions' work, newest first.
pub fn list(root: &Path) -> Result<Vec<Snapshot>, CliError> {
    let out = gitio::run(
        root,
        &[
            "for-each-ref",
            "--sort=-committerdate",
            "--format=%(refname)%00%(objectname)%00%(committerdate:unix)%00%(subject)%00%(body)%01",
            REF_PREFIX,
            WORK_REF_PREFIX,
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
        let session = body
            .lines()
            .find_map(|line| line.strip_prefix("session: "))
            .map(str::to_string);
        let id = match name.strip_prefix(WORK_REF_PREFIX) {
            Some(work) => format!("{WORK_ID_PREFIX}{work}"),
            None => name.trim_start_matches(REF_PREFIX).to_string(),
        };
        items.push(Snapshot {
            reference: (*name).to_string(),
            session,
            id,
            commit: (*commit).to_string(),
            at_secs: at.parse().unwrap_or(0),
            subject: (*subject).to_string(),
            files,
        });
    }
    Ok(items)
}

/// Drops the gate's snapshots older than 7 days. The sessions' work snapshots are the
/// daemon's to drop (`daemon::work_snapshots`): only it knows whose work is still live, and
/// work nobody touched for a week is still work.
fn prune(root: &Path) -> Result<(), CliError> {
    let cutoff = now_secs().saturating_sub(KEEP_SECS);
    for item in list(root)? {
        if item.at_secs < cutoff && item.reference.starts_with(REF_PREFIX) {
            gitio::run(root, &["update-ref", "-d", &item.reference])?;
        }
    }
    Ok(())
}

/// Writes snapshot `id` back into the working tree; returns its files. A session's work
/// snapshot (15.5) writes back exactly that session's lines onto each file as it is now, and
/// refuses, naming the files and the session, where the same lines changed since; with
/// `session`, the snapshot must be that session's. The gate's snapshots hold whole files.
pub fn restore(root: &Path, id: &str, session: Option<&str>) -> Result<Vec<String>, CliError> {
    let item = list(root)?
        .into_iter()
        .find(|item| item.id == id)
        .ok_or_else(|| CliError::Usage(format!("no snapshot {id} (`wit snapshots` lists them)")))?;
    match (&item.session, session) {
        (Some(owner), Some(wanted)) if owner != wanted => {
            return Err(CliError::Usage(format!(
                "snapshot {id} is the work of {owner}, not {wanted}"
            )))
        }
        (None, Some(_)) => {
            return Err(CliError::Usage(format!(
                "snapshot {id} was taken by the gate and holds whole files: restore it without --session"
            )))
        }
        (Some(owner), _) => return super::snapshot_merge::restore_work(root, &item, owner),
        (None, None) => {}
    }
    let paths: Vec<&str> = item.files.iter().map(String::as_str).collect();
    // Byte for byte (15.4): a file that is not UTF-8 comes back as it was saved.
    let saved = gitio::blobs(root, &item.commit, &paths)?;
    let mut restored = Vec::new();
    for file in &item.files {
        let outcome = match saved.get(file) {
            Some(blob) => Outcome::Write {
                bytes: blob.bytes.clone(),
                symlink: blob.mode == SYMLINK,
            },
            None => Outcome::Remove,
        };
        write(root, file, outcome)?;
        restored.push(file.clone());
    }
    Ok(restored)
}
