//! Parse isolation: large sources are analysed in a short-lived child process.
//!
//! A tree-sitter parse tree is about 55 times the size of its source (95 MB for a 1.7 MB
//! TypeScript file). The allocator keeps that peak after the tree is freed, once per thread
//! arena, so a daemon that parsed a few large files in-process stayed at hundreds of MB for
//! good. A child process gives every byte back when it exits, and a parser crash on hostile
//! input takes down the child, not the daemon. The child is the daemon's own executable run as
//! `wit __analyze LANGUAGE BUDGET_MS`: it reads the source on stdin and writes the
//! [`FileAnalysis`] on stdout ([`serve`], `encoding`). Small sources, the common case, are parsed
//! in-process, where a process start would cost more than the parse.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::extract::analyze_with_budget;
use super::language::Language;
use super::model::FileAnalysis;

/// The subcommand of the executable that runs one analysis ([`serve`]).
pub const SUBCOMMAND: &str = "__analyze";

/// Sources of at least this many bytes go to a child process by default.
pub const DEFAULT_THRESHOLD: usize = 64 * 1024;

/// How much longer than the parse budget a child may take (process start, I/O, JSON) before
/// it is killed.
const GRACE: Duration = Duration::from_secs(10);

/// Why a child analysis failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The child could not be started (missing executable, no processes or descriptors left).
    #[error("cannot start the parser process: {0}")]
    Spawn(std::io::Error),
    /// The child died, was killed after its deadline, or answered something unreadable.
    #[error("the parser process failed: {0}")]
    Failed(String),
}

/// Runs analyses of large sources in child processes of `program`.
#[derive(Debug, Clone)]
pub struct ParseWorker {
    program: PathBuf,
    threshold: usize,
    grace: Duration,
}

impl ParseWorker {
    /// Children run `program __analyze ..`; sources shorter than `threshold` bytes are not
    /// sent to a child.
    pub fn new(program: PathBuf, threshold: usize) -> ParseWorker {
        ParseWorker {
            program,
            threshold,
            grace: GRACE,
        }
    }

    /// The executable the children run.
    pub fn program(&self) -> &std::path::Path {
        &self.program
    }

    /// Whether `source` is large enough to be parsed in a child.
    pub fn takes(&self, source: &str) -> bool {
        source.len() >= self.threshold
    }

    /// Analyses `source` as `language` in a child process within `budget` (plus a grace
    /// period for the process itself, after which the child is killed).
    pub fn analyze(
        &self,
        language: Language,
        source: &str,
        budget: Duration,
    ) -> Result<FileAnalysis, WorkerError> {
        let mut child = Command::new(&self.program)
            .arg(SUBCOMMAND)
            .arg(language.name())
            .arg(budget.as_millis().to_string())
            .envs(crate::platform::heap::allocator_env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(WorkerError::Spawn)?;
        let deadline = budget + self.grace;
        let watchdog = Watchdog::start(child.id(), deadline);
        // The child reads all of stdin before it writes, so writing first cannot deadlock.
        let written = child
            .stdin
            .take()
            .map(|mut stdin| stdin.write_all(source.as_bytes()))
            .unwrap_or(Ok(()));
        let answer = child.stdout.take().map(|mut stdout| {
            let mut bytes = Vec::new();
            stdout.read_to_end(&mut bytes).map(|_| bytes)
        });
        let status = child.wait();
        let timed_out = watchdog.stop();
        if timed_out {
            return Err(WorkerError::Failed(format!(
                "no answer within {} ms",
                deadline.as_millis()
            )));
        }
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => return Err(WorkerError::Failed(format!("it exited with {status}"))),
            Err(error) => return Err(WorkerError::Failed(error.to_string())),
        }
        written.map_err(|e| WorkerError::Failed(format!("sending the source: {e}")))?;
        let answer = answer
            .ok_or_else(|| WorkerError::Failed("no output pipe".to_owned()))?
            .map_err(|e| WorkerError::Failed(format!("reading the answer: {e}")))?;
        super::encoding::decode(&answer).map_err(|e| WorkerError::Failed(e.to_string()))
    }
}

/// Kills a child that outlives its deadline.
pub(crate) struct Watchdog {
    done: Arc<AtomicBool>,
    fired: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Watches the process `pid`, killing it once `deadline` has passed.
    pub(crate) fn start(pid: u32, deadline: Duration) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let fired = Arc::new(AtomicBool::new(false));
        let thread = {
            let done = Arc::clone(&done);
            let fired = Arc::clone(&fired);
            std::thread::Builder::new()
                .name("wit-parse-watchdog".to_owned())
                .spawn(move || {
                    let until = Instant::now() + deadline;
                    while !done.load(Ordering::Acquire) {
                        let now = Instant::now();
                        if now >= until {
                            fired.store(true, Ordering::Release);
                            kill(pid);
                            return;
                        }
                        std::thread::park_timeout((until - now).min(Duration::from_millis(100)));
                    }
                })
                .ok()
        };
        Watchdog {
            done,
            fired,
            thread,
        }
    }

    /// Stops watching; whether the deadline had passed and the child was killed.
    pub(crate) fn stop(mut self) -> bool {
        self.done.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
        self.fired.load(Ordering::Acquire)
    }
}

fn kill(pid: u32) {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// The child's side: reads the source from `input`, analyses it as `language` within
/// `budget_ms` and writes the analysis as JSON to `output`.
pub fn serve(
    language: &str,
    budget_ms: &str,
    input: &mut impl Read,
    output: &mut impl Write,
) -> Result<(), String> {
    let language =
        Language::from_name(language).ok_or_else(|| format!("unknown language {language:?}"))?;
    let budget = budget_ms
        .parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| format!("bad budget {budget_ms:?}"))?;
    let mut source = String::new();
    input
        .read_to_string(&mut source)
        .map_err(|e| format!("reading the source: {e}"))?;
    let analysis = analyze_with_budget(language, &source, budget);
    output
        .write_all(&super::encoding::encode(&analysis))
        .and_then(|()| output.flush())
        .map_err(|e| format!("writing: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn the_child_side_round_trips_an_analysis() {
        let source = "import { g } from './g';\nexport class K {\n  m(a: number): string { return g(a); }\n}\nexport function f(x = 1) { return new K().m(x); }\n";
        let mut output = Vec::new();
        serve("typescript", "5000", &mut source.as_bytes(), &mut output).unwrap();
        let back = crate::analysis::encoding::decode(&output).unwrap();
        let direct = crate::analysis::analyze(Language::TypeScript, source);
        assert_eq!(back.symbols, direct.symbols);
        assert_eq!(back.calls, direct.calls);
        assert_eq!(back.imports, direct.imports);
        assert_eq!(back.by_qualified("K.m").len(), 1);
        assert!(matches!(
            back.lookup("f"),
            crate::analysis::Lookup::Unique(_)
        ));
    }

    #[test]
    fn the_child_side_refuses_bad_arguments() {
        let mut output = Vec::new();
        assert!(serve("cobol", "5000", &mut "".as_bytes(), &mut output).is_err());
        assert!(serve("python", "soon", &mut "".as_bytes(), &mut output).is_err());
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let worker = ParseWorker::new(PathBuf::from("/nonexistent/wit"), 1);
        let error = worker
            .analyze(Language::Python, "def f(): pass\n", Duration::from_secs(1))
            .unwrap_err();
        assert!(matches!(error, WorkerError::Spawn(_)), "{error}");
    }

    #[test]
    fn a_failing_child_is_reported() {
        // `false` ignores its arguments and exits 1 without an answer.
        let worker = ParseWorker::new(PathBuf::from("false"), 1);
        let error = worker
            .analyze(Language::Python, "def f(): pass\n", Duration::from_secs(1))
            .unwrap_err();
        assert!(matches!(error, WorkerError::Failed(_)), "{error}");
    }

    #[test]
    fn a_child_past_its_deadline_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("slow-parser");
        std::fs::write(&script, "#!/bin/sh\nexec sleep 600\n").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let worker = ParseWorker {
            program: script,
            threshold: 1,
            grace: Duration::from_millis(100),
        };
        let started = Instant::now();
        let error = worker
            .analyze(
                Language::Python,
                "def f(): pass\n",
                Duration::from_millis(100),
            )
            .unwrap_err();
        assert!(error.to_string().contains("no answer"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(60));
    }
}
