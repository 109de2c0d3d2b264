//! A small pool of long-lived parse workers: the isolation of [`super::worker`] (a parse
//! tree's memory peak and a parser crash stay in a child process) without a process start per
//! large file (about 35 ms each).
//!
//! Each worker is the daemon's own executable run as `wit __analyze --serve`; it answers
//! framed requests on stdin/stdout until stdin closes ([`serve_frames`]):
//!
//! ```text
//! request:  "LANGUAGE BUDGET_MS LENGTH\n" then LENGTH bytes of source
//! response: "LENGTH OUTLINE_LENGTH\n" then the FileAnalysis (LENGTH bytes, `encoding`) and its
//!           outline (`resolution::outline`) as JSON (OUTLINE_LENGTH bytes)
//! ```
//!
//! The encoded answer is what the index database stores, so a build writes the worker's
//! bytes as they came and decodes only the (small) outline: whole analyses never take shape
//! in the daemon during a build.
//!
//! A worker that dies, answers garbage, outlives its deadline (the parse budget plus a grace
//! period) or grows past `MAX_WORKER_RSS` is killed and replaced on the next request.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::extract::analyze_with_budget;
use super::language::Language;
use super::model::FileAnalysis;
use super::worker::{Watchdog, WorkerError, SUBCOMMAND};

/// The argument after [`SUBCOMMAND`] that starts a long-lived worker.
pub const SERVE_FLAG: &str = "--serve";

/// A worker whose resident set grows past this after an answer is replaced (the allocator
/// keeps a large parse's peak; a fresh process gives it back).
const MAX_WORKER_RSS: u64 = 256 * 1024 * 1024;

/// How much longer than the parse budget a worker may take (I/O, JSON) before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// A running worker.
struct Proc {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Long-lived parse workers of one executable. `Send + Sync`; requests from several threads
/// are spread over the workers, one request per worker at a time.
pub struct ParsePool {
    program: PathBuf,
    slots: Vec<Mutex<Option<Proc>>>,
    next: AtomicUsize,
    started: AtomicUsize,
}

impl std::fmt::Debug for ParsePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsePool")
            .field("program", &self.program)
            .field("workers", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl ParsePool {
    /// A pool of `workers` (at least one) processes of `program`, started on first use.
    pub fn new(program: PathBuf, workers: usize) -> ParsePool {
        ParsePool {
            program,
            slots: (0..workers.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            started: AtomicUsize::new(0),
        }
    }

    /// How many worker processes were started so far (restarts included).
    pub fn processes_started(&self) -> usize {
        self.started.load(Ordering::Relaxed)
    }

    /// Analyses `source` as `language` in a worker within `budget` (plus a grace period, after
    /// which the worker is killed).
    pub fn analyze(
        &self,
        language: Language,
        source: &str,
        budget: Duration,
    ) -> Result<FileAnalysis, WorkerError> {
        let encoded = self.analyze_encoded(language, source, budget)?;
        super::encoding::decode(&encoded.analysis).map_err(|e| WorkerError::Failed(e.to_string()))
    }

    /// As [`ParsePool::analyze`], the answer left encoded: the analysis and its outline as
    /// JSON.
    pub fn analyze_encoded(
        &self,
        language: Language,
        source: &str,
        budget: Duration,
    ) -> Result<Encoded, WorkerError> {
        let mut slot = self.slot();
        if slot.is_none() {
            *slot = Some(self.spawn()?);
        }
        let Some(proc) = slot.as_mut() else {
            return Err(WorkerError::Failed("no worker".to_owned()));
        };
        let watchdog = Watchdog::start(proc.child.id(), budget + GRACE);
        let answer = exchange(proc, language, source, budget);
        let timed_out = watchdog.stop();
        if timed_out {
            *slot = None;
            return Err(WorkerError::Failed(format!(
                "no answer within {} ms",
                (budget + GRACE).as_millis()
            )));
        }
        match answer {
            Ok(encoded) => {
                if crate::platform::process::resident_bytes(proc.child.id())
                    .is_some_and(|rss| rss > MAX_WORKER_RSS)
                {
                    *slot = None;
                }
                Ok(encoded)
            }
            Err(error) => {
                *slot = None;
                Err(WorkerError::Failed(error))
            }
        }
    }

    /// A free slot if there is one, else the next in turn (waiting for it).
    fn slot(&self) -> MutexGuard<'_, Option<Proc>> {
        for slot in &self.slots {
            if let Ok(guard) = slot.try_lock() {
                return guard;
            }
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        self.slots[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn spawn(&self) -> Result<Proc, WorkerError> {
        let mut child = Command::new(&self.program)
            .arg(SUBCOMMAND)
            .arg(SERVE_FLAG)
            .envs(crate::platform::heap::allocator_env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(WorkerError::Spawn)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(WorkerError::Failed("no pipes to the worker".to_owned()));
        };
        self.started.fetch_add(1, Ordering::Relaxed);
        Ok(Proc {
            child,
            stdin,
            stdout: BufReader::with_capacity(64 * 1024, stdout),
        })
    }
}

/// A worker's answer as it came: JSON of the analysis and of its outline.
#[derive(Debug)]
pub struct Encoded {
    /// The [`FileAnalysis`].
    pub analysis: Vec<u8>,
    /// Its outline (what the call graph keeps).
    pub outline: Vec<u8>,
}

/// One request and its answer.
fn exchange(
    proc: &mut Proc,
    language: Language,
    source: &str,
    budget: Duration,
) -> Result<Encoded, String> {
    let header = format!(
        "{} {} {}\n",
        language.name(),
        budget.as_millis(),
        source.len()
    );
    proc.stdin
        .write_all(header.as_bytes())
        .and_then(|()| proc.stdin.write_all(source.as_bytes()))
        .and_then(|()| proc.stdin.flush())
        .map_err(|e| format!("sending the source: {e}"))?;
    let mut line = String::new();
    proc.stdout
        .read_line(&mut line)
        .map_err(|e| format!("reading the answer: {e}"))?;
    let lengths: Vec<usize> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| format!("bad answer header {line:?}"))?;
    let [length, outline_length] = lengths[..] else {
        return Err(format!("bad answer header {line:?}"));
    };
    let mut analysis = vec![0; length];
    let mut outline = vec![0; outline_length];
    proc.stdout
        .read_exact(&mut analysis)
        .and_then(|()| proc.stdout.read_exact(&mut outline))
        .map_err(|e| format!("reading the answer: {e}"))?;
    Ok(Encoded { analysis, outline })
}

/// The worker's side: answers framed requests from `input` on `output` until `input` ends.
pub fn serve_frames(input: &mut impl BufRead, output: &mut impl Write) -> Result<(), String> {
    let mut line = String::new();
    loop {
        line.clear();
        let read = input
            .read_line(&mut line)
            .map_err(|e| format!("reading a request: {e}"))?;
        if read == 0 {
            return Ok(());
        }
        let mut fields = line.split_whitespace();
        let (Some(language), Some(budget), Some(length), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(format!("bad request header {line:?}"));
        };
        let language = Language::from_name(language)
            .ok_or_else(|| format!("unknown language {language:?}"))?;
        let budget = budget
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| format!("bad budget {budget:?}"))?;
        let length: usize = length
            .parse()
            .map_err(|_| format!("bad length {length:?}"))?;
        let mut bytes = vec![0; length];
        input
            .read_exact(&mut bytes)
            .map_err(|e| format!("reading the source: {e}"))?;
        let source = String::from_utf8(bytes).map_err(|_| "source is not UTF-8".to_owned())?;
        let analysis = analyze_with_budget(language, &source, budget);
        drop(source);
        let encoded = super::encoding::encode(&analysis);
        let outline = serde_json::to_vec(&super::resolution::outline(&analysis))
            .map_err(|e| format!("encoding: {e}"))?;
        drop(analysis);
        output
            .write_all(format!("{} {}\n", encoded.len(), outline.len()).as_bytes())
            .and_then(|()| output.write_all(&encoded))
            .and_then(|()| output.write_all(&outline))
            .and_then(|()| output.flush())
            .map_err(|e| format!("writing: {e}"))?;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn frames_round_trip_several_analyses() {
        let sources = [
            (Language::Python, "def f(a):\n    return g(a)\n"),
            (
                Language::TypeScript,
                "export function h(x: number) { return x; }\n",
            ),
        ];
        let mut input = Vec::new();
        for (language, source) in &sources {
            input.extend(format!("{} 5000 {}\n", language.name(), source.len()).bytes());
            input.extend(source.bytes());
        }
        let mut output = Vec::new();
        serve_frames(&mut input.as_slice(), &mut output).unwrap();
        let mut reader = BufReader::new(output.as_slice());
        for (language, source) in &sources {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let lengths: Vec<u64> = line
                .split_whitespace()
                .map(|n| n.parse().unwrap())
                .collect();
            let mut encoded = Vec::new();
            (&mut reader)
                .take(lengths[0])
                .read_to_end(&mut encoded)
                .unwrap();
            let back = crate::analysis::encoding::decode(&encoded).unwrap();
            let outline: FileAnalysis =
                serde_json::from_reader((&mut reader).take(lengths[1])).unwrap();
            let direct = crate::analysis::analyze(*language, source);
            assert_eq!(back.symbols, direct.symbols);
            assert_eq!(back.calls, direct.calls);
            assert_eq!(outline.symbols.len(), direct.symbols.len());
        }
    }

    #[test]
    fn bad_frames_are_refused() {
        let mut output = Vec::new();
        assert!(serve_frames(&mut "cobol 5000 1\nx".as_bytes(), &mut output).is_err());
        assert!(serve_frames(&mut "python soon 1\nx".as_bytes(), &mut output).is_err());
        assert!(serve_frames(&mut "python 5000 9\nx".as_bytes(), &mut output).is_err());
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let pool = ParsePool::new(PathBuf::from("/nonexistent/wit"), 1);
        let error = pool
            .analyze(Language::Python, "def f(): pass\n", Duration::from_secs(1))
            .unwrap_err();
        assert!(matches!(error, WorkerError::Spawn(_)), "{error}");
    }

    #[test]
    fn a_dead_worker_is_reported_and_replaced() {
        // `true` exits at once without an answer: every request fails, each with a new process.
        let pool = ParsePool::new(PathBuf::from("true"), 1);
        for round in 1..=2 {
            let error = pool
                .analyze(Language::Python, "def f(): pass\n", Duration::from_secs(1))
                .unwrap_err();
            assert!(matches!(error, WorkerError::Failed(_)), "{error}");
            assert_eq!(pool.processes_started(), round);
        }
    }
}
