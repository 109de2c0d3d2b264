//! Tool-call windows from the harness hooks (docs/protocol.md 15.2): the pre-tool hook that lets
//! a call through opens its window (`work.begin`) in the same process, the post-tool hook
//! closes it (`work.end`). Between the two hook processes the window's id waits in
//! `.wit/windows/<session>` (oldest first: a harness's post-tool hooks come in the order of
//! its calls, and a window left behind closes by itself after its TTL).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::daemon::paths::WitPaths;
use crate::doorway::Doorway;
use crate::protocol::{WorkBeginParams, WorkBeginParamsEditsItem, WorkEndParams};

/// How long a window a hook opens stays open without its post-tool hook: long enough for a
/// slow build or test run, short enough that a harness without a post-tool hook does not
/// keep claiming changes for long.
pub const HOOK_WINDOW_TTL_MS: i64 = 300_000;
/// The most window ids kept per session (older ones have expired in the daemon anyway).
const MAX_KEPT: usize = 64;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Open {
    windows: Vec<String>,
}

fn file_of(paths: &WitPaths, session: &str) -> PathBuf {
    let name = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(session.as_bytes()));
    paths.dir.join("windows").join(name)
}

fn load(path: &Path) -> Open {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn save(path: &Path, open: &Open) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(bytes) = serde_json::to_vec(open) {
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, bytes).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

/// Opens a window for a tool call the gate let through: one per named file with the texts
/// its edits write, or one naming no file (a shell command, any other tool). Failures are
/// silent: the gate fails open.
pub async fn open(
    doorway: &Doorway,
    paths: &WitPaths,
    session: &str,
    tool: &str,
    files: &[(String, Vec<String>)],
) {
    let names: Vec<(Option<String>, Vec<String>)> = if files.is_empty() {
        vec![(None, Vec::new())]
    } else {
        files
            .iter()
            .map(|(file, texts)| (Some(file.clone()), texts.clone()))
            .collect()
    };
    let mut opened = Vec::new();
    for (file, texts) in names {
        let params = WorkBeginParams {
            session_id: session.to_owned(),
            tool: tool.to_owned(),
            file,
            edits: texts
                .into_iter()
                .map(|new_text| WorkBeginParamsEditsItem {
                    old_text: String::new(),
                    new_text,
                    replace_all: None,
                })
                .collect(),
            ttl_ms: Some(HOOK_WINDOW_TTL_MS),
        };
        let begun = doorway
            .call(|client| {
                let params = params.clone();
                async move { client.work_begin(params).await }
            })
            .await;
        if let Ok(begun) = begun {
            opened.push(begun.window_id);
        }
    }
    if opened.is_empty() {
        return;
    }
    let path = file_of(paths, session);
    let mut open = load(&path);
    open.windows.extend(opened);
    let excess = open.windows.len().saturating_sub(MAX_KEPT);
    open.windows.drain(..excess);
    save(&path, &open);
}

/// Closes the session's oldest open window (the tool call that just ended); the files it was
/// given, if any.
pub async fn close(doorway: &Doorway, paths: &WitPaths, session: &str) -> Vec<String> {
    let path = file_of(paths, session);
    let mut open = load(&path);
    if open.windows.is_empty() {
        return Vec::new();
    }
    let window_id = open.windows.remove(0);
    save(&path, &open);
    let params = WorkEndParams {
        session_id: session.to_owned(),
        window_id,
    };
    doorway
        .call(|client| {
            let params = params.clone();
            async move { client.work_end(params).await }
        })
        .await
        .map(|ended| ended.changed.into_iter().map(|c| c.file).collect())
        .unwrap_or_default()
}
