//! The repository's commit hooks, run by `wit commit` as `git commit` runs them (docs/protocol.md
//! 15.6): `pre-commit` on the content it commits (a temporary index holding the new tree),
//! `prepare-commit-msg` and `commit-msg` on the message file, `post-commit` once `HEAD` moved.
//! `--no-verify` skips `pre-commit` and `commit-msg`, as in git. The hooks directory is git's
//! (`core.hooksPath` honoured); a hook that is missing or not executable is skipped, as git
//! skips it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::gitio;
use super::output::CliError;

/// A hook that refused the commit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the repository's {hook} hook refused the commit (exit {status}){}", output_tail(.output))]
pub struct HookRefusal {
    /// The hook's name.
    pub hook: String,
    /// Its exit status (`-1`: killed by a signal).
    pub status: i32,
    /// What it printed (stdout then stderr), trimmed.
    pub output: String,
}

/// `: OUTPUT` when the hook said something.
fn output_tail(output: &str) -> String {
    if output.is_empty() {
        String::new()
    } else {
        format!(": {output}")
    }
}

/// The hooks of one repository.
#[derive(Debug, Clone)]
pub struct Hooks {
    root: PathBuf,
    dir: PathBuf,
    /// `COMMIT_EDITMSG`, where the message hooks get the message.
    message_file: PathBuf,
}

impl Hooks {
    /// The hooks of the repository at `root` (git's hooks directory, `core.hooksPath`
    /// honoured), with one `git rev-parse`.
    pub fn of(root: &Path) -> Result<Self, CliError> {
        let out = gitio::run(
            root,
            &[
                "rev-parse",
                "--git-path",
                "hooks",
                "--git-path",
                "COMMIT_EDITMSG",
            ],
        )?;
        let text = String::from_utf8_lossy(&out);
        let mut paths = text.lines().map(|line| {
            let path = PathBuf::from(line.trim());
            if path.is_absolute() {
                path
            } else {
                root.join(path)
            }
        });
        let (Some(dir), Some(message_file)) = (paths.next(), paths.next()) else {
            return Err(CliError::Failed(format!(
                "git rev-parse --git-path gave no paths: {text}"
            )));
        };
        Ok(Self {
            root: root.to_path_buf(),
            dir,
            message_file,
        })
    }

    /// The hook `name` when it exists and is executable.
    fn find(&self, name: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.join(name);
        let meta = std::fs::metadata(&path).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(path)
    }

    /// Runs hook `name` with `args` in the worktree's root, the index `index` as its
    /// `GIT_INDEX_FILE` (what git gives a hook); a missing hook passes.
    pub fn run(&self, name: &str, args: &[&str], index: Option<&Path>) -> Result<(), HookRefusal> {
        let Some(path) = self.find(name) else {
            return Ok(());
        };
        let mut command = Command::new(&path);
        command
            .args(args)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(index) = index {
            command.env("GIT_INDEX_FILE", index);
        }
        let refusal = |status: i32, output: String| HookRefusal {
            hook: name.to_owned(),
            status,
            output,
        };
        let out = command
            .output()
            .map_err(|error| refusal(-1, format!("cannot run {}: {error}", path.display())))?;
        if out.status.success() {
            return Ok(());
        }
        let mut said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let err = String::from_utf8_lossy(&out.stderr);
        if !err.trim().is_empty() {
            if !said.is_empty() {
                said.push('\n');
            }
            said.push_str(err.trim());
        }
        Err(refusal(out.status.code().unwrap_or(-1), said))
    }

    /// Runs `prepare-commit-msg` (always) and `commit-msg` (unless `no_verify`) on `message`
    /// through the repository's `COMMIT_EDITMSG`; the message as they left it.
    pub fn message(
        &self,
        message: &str,
        index: &Path,
        no_verify: bool,
    ) -> Result<String, CommitHookError> {
        if self.find("prepare-commit-msg").is_none()
            && (no_verify || self.find("commit-msg").is_none())
        {
            return Ok(message.to_owned());
        }
        let file = &self.message_file;
        let shown = file.to_string_lossy().into_owned();
        std::fs::write(file, message)
            .map_err(|e| CliError::Failed(format!("cannot write {shown}: {e}")))?;
        self.run("prepare-commit-msg", &[&shown, "message"], Some(index))?;
        if !no_verify {
            self.run("commit-msg", &[&shown], Some(index))?;
        }
        let edited = std::fs::read(file)
            .map_err(|e| CliError::Failed(format!("cannot read {shown}: {e}")))?;
        let edited = String::from_utf8(edited)
            .map_err(|_| CliError::Failed(format!("{shown} is not UTF-8 after the hooks")))?;
        // `git commit -m`'s cleanup ("whitespace"): trailing blank lines and spaces go.
        let mut cleaned: String = edited
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
            .trim_end()
            .to_owned();
        if cleaned.trim().is_empty() {
            return Err(CommitHookError::Refused(HookRefusal {
                hook: "commit-msg".into(),
                status: 1,
                output: "the hooks left an empty message".into(),
            }));
        }
        cleaned.push('\n');
        Ok(cleaned)
    }
}

/// Why the hooks stopped a commit.
#[derive(Debug, thiserror::Error)]
pub enum CommitHookError {
    /// A hook refused.
    #[error(transparent)]
    Refused(#[from] HookRefusal),
    /// git or the message file failed.
    #[error(transparent)]
    Failed(#[from] CliError),
}
