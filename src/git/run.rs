//! The one git runner: a command line, its environment, its stdin, and which exit codes
//! count as an answer; synchronous, or on the async runtime for callers with a deadline.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Why git could not answer.
#[derive(Debug, thiserror::Error)]
#[error("git {args}: {message}")]
pub struct GitError {
    args: String,
    message: String,
}

impl GitError {
    /// Git run with `args` failed with `message`.
    pub fn new(args: &str, message: String) -> GitError {
        GitError {
            args: args.to_owned(),
            message,
        }
    }
}

/// How to run git in one directory: built once, then run with any arguments.
#[derive(Debug, Clone)]
pub struct Git<'a> {
    cwd: &'a Path,
    env: Vec<(&'a str, OsString)>,
    removed: Vec<&'a str>,
    ok_codes: &'a [i32],
}

impl<'a> Git<'a> {
    /// git in `cwd`, its environment inherited, only exit code 0 an answer.
    pub fn new(cwd: &'a Path) -> Git<'a> {
        Git {
            cwd,
            env: Vec::new(),
            removed: Vec::new(),
            ok_codes: &[],
        }
    }

    /// With `key=value` in git's environment.
    pub fn env(mut self, key: &'a str, value: impl AsRef<OsStr>) -> Git<'a> {
        self.env.push((key, value.as_ref().to_owned()));
        self
    }

    /// Without `key` in git's environment (a variable the caller's own git set, say).
    pub fn without(mut self, key: &'a str) -> Git<'a> {
        self.removed.push(key);
        self
    }

    /// Taking no optional locks (`GIT_OPTIONAL_LOCKS=0`): a read never refreshes the index
    /// behind an agent's back, nor wakes the file watcher that asked.
    pub fn quiet(self) -> Git<'a> {
        self.env("GIT_OPTIONAL_LOCKS", "0")
    }

    /// Exit codes besides 0 whose stdout is an answer (`check-ignore`'s 1: none ignored).
    pub fn ok_codes(mut self, codes: &'a [i32]) -> Git<'a> {
        self.ok_codes = codes;
        self
    }

    /// Runs `git ARGS` with nothing on stdin; its stdout.
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Vec<u8>, GitError> {
        self.spawn(args, None)
    }

    /// Runs `git ARGS` with `input` on stdin; its stdout. The input is written from its own
    /// thread while the answer is read: git answers while it reads, and pipes are bounded.
    pub fn run_with_input<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        input: &[u8],
    ) -> Result<Vec<u8>, GitError> {
        self.spawn(args, Some(input))
    }

    /// Runs `git ARGS`; its stdout as text (git's own answer: object names, paths, refs).
    pub fn text<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<String, GitError> {
        let out = self.run(args)?;
        String::from_utf8(out).map_err(|_| self.failed(args, "its answer is not UTF-8".to_owned()))
    }

    /// Runs `git ARGS` (nothing on stdin); its exit status and both streams, whatever the
    /// exit code (a command whose refusal is what the caller shows, like a hook's).
    pub fn output<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<std::process::Output, GitError> {
        self.command(args, false)
            .output()
            .map_err(|e| self.failed(args, format!("cannot run git: {e}")))
    }

    /// Runs `git ARGS` (nothing on stdin) as a child of the async runtime, killed when the
    /// caller gives up (its future dropped, by a timeout around it); its stdout.
    pub async fn run_async<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Vec<u8>, GitError> {
        let mut command = tokio::process::Command::from(self.command(args, false));
        let output = command
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| self.failed(args, format!("cannot run git: {e}")))?;
        self.answer(args, output)
    }

    /// Starts `git ARGS` and leaves it running with its stdin and stdout piped (stderr
    /// dropped): a process kept for many requests ([`super::BatchReader`]).
    pub fn spawn_piped<S: AsRef<OsStr>>(
        &self,
        args: &[S],
    ) -> Result<std::process::Child, GitError> {
        self.command(args, true)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| self.failed(args, format!("cannot run git: {e}")))
    }

    /// The command line, its environment and pipes (stdin piped only for an input).
    fn command<S: AsRef<OsStr>>(&self, args: &[S], input: bool) -> Command {
        let mut command = Command::new("git");
        command
            .args(args)
            .current_dir(self.cwd)
            .envs(self.env.iter().map(|(key, value)| (key, value)))
            .stdin(if input { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for key in &self.removed {
            command.env_remove(key);
        }
        command
    }

    /// Its stdout when git's exit code is an answer, else why not.
    fn answer<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        output: std::process::Output,
    ) -> Result<Vec<u8>, GitError> {
        let code = output.status.code().unwrap_or(-1);
        if code != 0 && !self.ok_codes.contains(&code) {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
            let message = if stderr.is_empty() {
                format!("exit code {code}")
            } else {
                stderr
            };
            return Err(self.failed(args, message));
        }
        Ok(output.stdout)
    }

    /// Why `git ARGS` did not answer.
    fn failed<S: AsRef<OsStr>>(&self, args: &[S], message: String) -> GitError {
        let args: Vec<String> = args
            .iter()
            .map(|arg| arg.as_ref().to_string_lossy().into_owned())
            .collect();
        GitError::new(&args.join(" "), message)
    }

    /// Runs `git ARGS`, `input` (if any) written on its own thread; its stdout.
    fn spawn<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        let mut child = self
            .command(args, input.is_some())
            .spawn()
            .map_err(|e| self.failed(args, format!("cannot run git: {e}")))?;
        let stdin = child.stdin.take();
        let output = std::thread::scope(|scope| {
            if let (Some(input), Some(mut stdin)) = (input, stdin) {
                // A write error (git exited before reading all) shows in its status.
                scope.spawn(move || {
                    let _ = stdin.write_all(input);
                });
            }
            child.wait_with_output()
        })
        .map_err(|e| self.failed(args, e.to_string()))?;
        self.answer(args, output)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn git_answers_with_its_stdout_and_reads_its_stdin() {
        let (dir, id) = super::super::repository_with(b"\xff bytes\n");
        let git = Git::new(dir.path());
        assert_eq!(id.len(), 40);
        let back = git.run(&["cat-file", "blob", &id]).unwrap();
        assert_eq!(back, b"\xff bytes\n");
        // A large input is written while the answer is read.
        let big = vec![b'x'; 4 << 20];
        let id = git
            .run_with_input(&["hash-object", "--stdin"], &big)
            .unwrap();
        assert_eq!(id.len(), 41);
    }

    #[test]
    fn a_failure_names_the_command_and_says_why_unless_its_code_is_an_answer() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::new(dir.path()).quiet();
        git.run(&["init", "-q"]).unwrap();
        let error = git.run(&["rev-parse", "--verify", "nope"]).unwrap_err();
        assert!(error
            .to_string()
            .starts_with("git rev-parse --verify nope: "));
        // check-ignore answers 1 when nothing is ignored.
        let ignore = Git::new(dir.path()).ok_codes(&[1]);
        assert_eq!(ignore.run(&["check-ignore", "a"]).unwrap(), b"");
        assert!(git.run(&["check-ignore", "a"]).is_err());
        let refused = git.output(&["rev-parse", "--verify", "nope"]).unwrap();
        assert!(!refused.status.success() && !refused.stderr.is_empty());
        let unset = Git::new(dir.path())
            .env("GIT_DIR", "/nonexistent")
            .without("GIT_DIR")
            .text(&["rev-parse", "--git-dir"]);
        assert_eq!(unset.unwrap(), ".git\n");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let error = runtime
            .block_on(git.run_async(&["rev-parse", "--verify", "nope"]))
            .unwrap_err();
        assert!(error
            .to_string()
            .starts_with("git rev-parse --verify nope: "));
        let head = runtime.block_on(git.run_async(&["rev-parse", "--git-dir"]));
        assert_eq!(head.unwrap(), b".git\n");
        assert_eq!(
            git.env("GIT_DIR", dir.path().join(".git"))
                .text(&["rev-parse", "--is-inside-git-dir"])
                .unwrap()
                .trim(),
            "false"
        );
    }
}
