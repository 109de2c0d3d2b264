//! Git hooks (`wit hook install|uninstall`, docs/protocol.md 6), the `prepare-commit-msg`
//! trailer step and the `post-commit` step that resolves the observed intents on the
//! committed files, whichever session recorded them (docs/protocol.md 10.3, issue 22.4); the Claude Code session steps live in
//! [`crate::cli::claude`].
//!
//! The installed scripts call the `wit` binary by the absolute path it was installed from,
//! fall back to `wit` on PATH, and let the commit through when neither exists. A hook that was
//! already there is renamed to `<hook>.wit-chained` and called first; `uninstall` puts it back.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::cli::context::Context;
use crate::cli::output::{CliError, Report};
use crate::cli::owners::has_regions;
use crate::cli::render;
use crate::coord::ownership::is_unowned_session;
use crate::git::Git;
use crate::protocol::{
    IntentQueryParams, IntentUpdateParams, IntentUpdateParamsStatus, WorkChangesParams,
};

/// The hooks wit installs.
pub const HOOKS: &[&str] = &["pre-commit", "prepare-commit-msg", "post-commit"];

/// The line that marks a hook script as wit's own.
const MARKER: &str = "# wit-managed-hook";

/// Suffix of a pre-existing hook that wit's hook calls first.
const CHAINED_SUFFIX: &str = ".wit-chained";

/// How long `prepare-commit-msg` and `post-commit` wait for the daemon before giving up
/// silently.
const TRAILER_BUDGET: Duration = Duration::from_millis(1500);

/// What `install` or `uninstall` did, per hook.
#[derive(Debug, Default)]
pub struct HookChanges {
    /// The hooks directory.
    pub dir: PathBuf,
    /// `(hook, what happened)`.
    pub actions: Vec<(String, String)>,
}

impl HookChanges {
    /// The outcome of `wit hook install|uninstall`.
    pub fn report(&self) -> Report {
        let mut human = format!("hooks in {}:\n", self.dir.display());
        for (hook, action) in &self.actions {
            human.push_str(&format!("  {hook:<20} {action}\n"));
        }
        let actions: serde_json::Map<String, Value> = self
            .actions
            .iter()
            .map(|(hook, action)| (hook.clone(), Value::String(action.clone())))
            .collect();
        Report::new(
            json!({"dir": self.dir.display().to_string(), "hooks": actions}),
            human,
        )
    }
}

/// The hooks directory git uses for `root` (`core.hooksPath` honoured).
pub fn hooks_dir(root: &Path) -> Result<PathBuf, CliError> {
    let text = Git::new(root)
        .text(&["rev-parse", "--git-path", "hooks"])
        .map_err(|error| {
            CliError::Usage(format!(
                "{} is not inside a git repository ({error})",
                root.display()
            ))
        })?;
    Ok(root.join(text.trim()))
}

/// The script of `hook`, calling `exe`.
fn script(hook: &str, exe: &Path) -> String {
    let exe = shell_quote(&exe.display().to_string());
    let header = format!(
        "#!/bin/sh\n{MARKER}: {hook}\n\
         # Installed by `wit hook install`; `wit hook uninstall` removes it and restores the hook\n\
         # that was here before (kept as {hook}{CHAINED_SUFFIX} and called first).\n\
         hook_dir=${{0%/*}}\n\
         if [ -x \"$hook_dir/{hook}{CHAINED_SUFFIX}\" ]; then\n\
         \x20   \"$hook_dir/{hook}{CHAINED_SUFFIX}\" \"$@\" || exit $?\n\
         fi\n\
         wit={exe}\n\
         if [ ! -x \"$wit\" ]; then\n\
         \x20   wit=$(command -v wit 2>/dev/null) || wit=\n\
         fi\n"
    );
    let body = match hook {
        "pre-commit" => {
            "\
if [ -z \"$wit\" ]; then
    echo \"wit: wit binary not found; contracts not checked, commit allowed\" >&2
    exit 0
fi
# Contracts, then staged lines another live session changed and did not commit
# (WIT_ALLOW_FOREIGN=1 overrides): one 2 s budget, one warning line. Exit code 1 blocks the
# commit; anything else lets it through.
\"$wit\" hook pre-commit
[ $? -eq 1 ] && exit 1
exit 0
"
        }
        "post-commit" => {
            "\
[ -n \"$wit\" ] && \"$wit\" hook post-commit 2>/dev/null
exit 0
"
        }
        _ => {
            "\
[ -n \"$wit\" ] && \"$wit\" hook prepare-commit-msg \"$@\" 2>/dev/null
exit 0
"
        }
    };
    format!("{header}{body}")
}

/// `text` quoted for a POSIX shell.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn is_ours(path: &Path) -> bool {
    fs::read_to_string(path).is_ok_and(|text| text.contains(MARKER))
}

fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

fn io_failed(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> CliError {
    let context = format!("{what} {}", path.display());
    move |error| CliError::Failed(format!("{context}: {error}"))
}

fn write_executable(path: &Path, content: &str) -> Result<(), CliError> {
    let aside = path.with_extension(format!("wit-tmp-{}", std::process::id()));
    {
        let mut file = fs::File::create(&aside).map_err(io_failed("writing", &aside))?;
        file.write_all(content.as_bytes())
            .map_err(io_failed("writing", &aside))?;
    }
    fs::set_permissions(&aside, fs::Permissions::from_mode(0o755))
        .map_err(io_failed("making executable", &aside))?;
    fs::rename(&aside, path).map_err(io_failed("installing", path))
}

/// Installs wit's hooks for the repository at `root`, calling `exe`.
pub fn install(root: &Path, exe: &Path) -> Result<HookChanges, CliError> {
    let dir = hooks_dir(root)?;
    fs::create_dir_all(&dir).map_err(io_failed("creating", &dir))?;
    let mut changes = HookChanges {
        dir: dir.clone(),
        actions: Vec::new(),
    };
    for hook in HOOKS {
        let path = dir.join(hook);
        let chained = dir.join(format!("{hook}{CHAINED_SUFFIX}"));
        let wanted = script(hook, exe);
        let action = if exists(&path) && is_ours(&path) {
            if fs::read_to_string(&path).is_ok_and(|text| text == wanted) {
                "unchanged".to_string()
            } else {
                write_executable(&path, &wanted)?;
                "updated".to_string()
            }
        } else if exists(&path) {
            if exists(&chained) {
                return Err(CliError::Failed(format!(
                    "cannot install the {hook} hook: both {} and {} exist; move one away first",
                    path.display(),
                    chained.display()
                )));
            }
            fs::rename(&path, &chained).map_err(io_failed("renaming", &path))?;
            write_executable(&path, &wanted)?;
            format!("installed (chained to the existing hook, kept as {hook}{CHAINED_SUFFIX})")
        } else {
            write_executable(&path, &wanted)?;
            "installed".to_string()
        };
        changes.actions.push((hook.to_string(), action));
    }
    Ok(changes)
}

/// Removes wit's hooks and restores what they chained to.
pub fn uninstall(root: &Path) -> Result<HookChanges, CliError> {
    let dir = hooks_dir(root)?;
    let mut changes = HookChanges {
        dir: dir.clone(),
        actions: Vec::new(),
    };
    for hook in HOOKS {
        let path = dir.join(hook);
        let chained = dir.join(format!("{hook}{CHAINED_SUFFIX}"));
        let action = if exists(&path) && !is_ours(&path) {
            "left alone (not installed by wit)".to_string()
        } else {
            let removed = exists(&path);
            if removed {
                fs::remove_file(&path).map_err(io_failed("removing", &path))?;
            }
            if exists(&chained) {
                fs::rename(&chained, &path).map_err(io_failed("restoring", &chained))?;
                "removed; previous hook restored".to_string()
            } else if removed {
                "removed".to_string()
            } else {
                "absent".to_string()
            }
        };
        changes.actions.push((hook.to_string(), action));
    }
    Ok(changes)
}

/// Appends one `Wit-Intent: <id>` trailer per open intent of the committing session.
pub async fn add_trailers(ctx: &Context, file: &Path) -> Result<Vec<String>, CliError> {
    let Some((session_id, _)) = ctx.session_if_any()? else {
        return Ok(Vec::new());
    };
    let client = ctx.client().with_timeout(TRAILER_BUDGET);
    let intents = client
        .intent_query(IntentQueryParams {
            session_id: Some(session_id),
            file: None,
            // The default: declared and active intents.
            status: None,
        })
        .await?;
    let ids: Vec<String> = intents.into_iter().map(|intent| intent.intent_id).collect();
    if ids.is_empty() {
        return Ok(ids);
    }
    let mut args: Vec<OsString> = [
        "interpret-trailers",
        "--in-place",
        "--if-exists",
        "addIfDifferent",
    ]
    .map(OsString::from)
    .into();
    for id in &ids {
        args.extend(["--trailer".into(), format!("Wit-Intent: {id}").into()]);
    }
    args.push(file.into());
    tokio::time::timeout(TRAILER_BUDGET, Git::new(&ctx.paths.root).run_async(&args))
        .await
        .map_err(|_| CliError::Failed("git interpret-trailers took too long".into()))?
        .map_err(|error| CliError::Failed(error.to_string()))?;
    Ok(ids)
}

/// `post-commit`: resolves the open observed intents (those with regions, as the daemon
/// records observed work, 13.1) on the files of the commit (`HEAD`; the root commit too)
/// whose session has no uncommitted line left in them, whichever session recorded them: the
/// harness session whose edits the gate observed is seldom the one that commits (issue
/// 22.4). What is left is the daemon's owner map after the commit (`work.changes`, rebased on
/// the new HEAD before it answers), so a session whose lines in the file were not all
/// committed keeps its intent. Each is resolved as its own session (only the owner may
/// update an intent). Never starts a daemon; returns the ids it resolved.
pub async fn resolve_observed(ctx: &Context) -> Result<Vec<String>, CliError> {
    if !ctx.paths.socket.exists() {
        return Ok(Vec::new());
    }
    let committed = committed_files(ctx).await?;
    if committed.is_empty() {
        return Ok(Vec::new());
    }
    let doorway = ctx.doorway();
    let mut files: Vec<String> = committed.iter().cloned().collect();
    files.sort();
    let (intents, left) = doorway
        .call_if_running(TRAILER_BUDGET, |client| async move {
            let intents = client.intent_query(IntentQueryParams {
                session_id: None,
                file: None,
                // The default: declared and active intents.
                status: None,
            });
            let left = client.work_changes(WorkChangesParams {
                session_id: None,
                files,
            });
            tokio::try_join!(intents, left)
        })
        .await?;
    // Who still owns uncommitted lines of each committed file (`None`: nobody, unowned).
    let mut owners: HashMap<String, HashSet<Option<String>>> = HashMap::new();
    for file in left.files {
        let entry = owners.entry(file.file).or_default();
        for hunk in file.hunks {
            if hunk.session_ids.is_empty() {
                entry.insert(None);
            }
            entry.extend(hunk.session_ids.into_iter().map(Some));
        }
    }
    let still_owns = |session: &str, file: &str| {
        owners.get(file).is_some_and(|by| {
            by.contains(&Some(session.to_owned()))
                || (is_unowned_session(session) && by.contains(&None))
        })
    };
    let mut resolved = Vec::new();
    for intent in intents.into_iter().filter(has_regions) {
        let on: Vec<String> = render::intent_files(&intent.files)
            .into_iter()
            .filter(|file| committed.contains(file))
            .collect();
        if on.is_empty() || on.iter().any(|file| still_owns(&intent.session_id, file)) {
            continue;
        }
        let params = IntentUpdateParams {
            intent_id: intent.intent_id.clone(),
            session_id: intent.session_id.clone(),
            status: IntentUpdateParamsStatus::Resolved,
        };
        doorway
            .call_if_running(TRAILER_BUDGET, |client| async move {
                client.intent_update(params).await
            })
            .await?;
        resolved.push(intent.intent_id);
    }
    Ok(resolved)
}

/// The files of the `HEAD` commit (`--root`: the first commit lists every file it adds).
async fn committed_files(ctx: &Context) -> Result<HashSet<String>, CliError> {
    let git = Git::new(&ctx.paths.root);
    let command = git.run_async(&[
        "diff-tree",
        "--no-commit-id",
        "--name-only",
        "-r",
        "--root",
        "-z",
        "HEAD",
    ]);
    let out = tokio::time::timeout(TRAILER_BUDGET, command)
        .await
        .map_err(|_| CliError::Failed("git diff-tree took too long".into()))?
        .map_err(|error| CliError::Failed(error.to_string()))?;
    Ok(String::from_utf8_lossy(&out)
        .split('\0')
        .filter(|path| !path.is_empty())
        .map(str::to_string)
        .collect())
}
