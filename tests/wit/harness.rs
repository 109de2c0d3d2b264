//! Starts real daemons in temporary repositories and talks to them.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::collections::HashMap;

use serde_json::Value;
use wit::client::WitClient;

/// The `wit` binary under test.
pub fn wit_bin() -> PathBuf {
    // `WIT_TEST_BIN`: the black-box tests against another build of wit (an older one, to show
    // a test fails there).
    std::env::var_os("WIT_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_wit")))
}

/// The environment that points a daemon serving `repo` at the store under test: nothing
/// (SQLite) unless `WIT_TEST_STORE` names a shared store; then that store, and a project of
/// this test run and repository, so that tests running at once never share state.
pub fn store_env(repo: &Path) -> Vec<(&'static str, String)> {
    static RUN: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    let Some(url) = std::env::var("WIT_TEST_STORE")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        return Vec::new();
    };
    let run = RUN.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            ^ u128::from(std::process::id())
    });
    let project = format!("test-{run:x}-{}", repo.display());
    vec![("WIT_STORE", url), ("WIT_PROJECT", project)]
}

/// Whether the suite runs against a shared store; then a test of the embedded store's own
/// file (`.wit/state.db`) says so and does not run (it ran in the SQLite pass of the suite).
pub fn shared_store_skips(what: &str) -> bool {
    let shared = std::env::var("WIT_TEST_STORE").is_ok_and(|u| !u.is_empty());
    if shared {
        eprintln!("not run against WIT_TEST_STORE: {what} is about the embedded SQLite file");
    }
    shared
}

/// A temporary git repository (short path: Unix socket paths must stay under 108 bytes).
pub struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    pub fn new() -> Self {
        Self::init_with(&[])
    }

    /// A repository made by `git init` with `options` too (`--object-format=sha256`, say).
    pub fn init_with(options: &[&str]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("wit")
            .tempdir_in("/tmp")
            .unwrap();
        let status = Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .args(options)
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "git init {options:?}");
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn socket(&self) -> PathBuf {
        self.path().join(".wit/daemon.sock")
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn client(&self) -> WitClient {
        WitClient::new(self.socket())
    }
}

/// A foreground daemon child process; killed on drop. Its stderr is drained by a thread (a
/// full pipe would otherwise block a chatty daemon) and kept for assertions.
pub struct Daemon {
    pub child: Child,
    pub socket: PathBuf,
    stderr: Arc<Mutex<String>>,
    drain: Option<std::thread::JoinHandle<()>>,
}

impl Daemon {
    /// Spawns `wit daemon run --repo <repo>` and waits until it answers `ping`.
    pub fn start(repo: &Repo) -> Self {
        let mut daemon = Self::spawn(repo);
        daemon.wait_ready();
        daemon
    }

    /// Spawns without waiting.
    pub fn spawn(repo: &Repo) -> Self {
        Self::spawn_with_env(repo, &store_env(repo.path()))
    }

    /// Spawns with `env` added to its environment, without waiting.
    pub fn spawn_with_env(repo: &Repo, env: &[(&str, String)]) -> Self {
        Self::spawn_at(repo.path(), env)
    }

    /// Spawns `wit daemon run --repo <root>` with `env` added, without waiting; `socket` is
    /// `root`'s. It logs at `warn`, or what `WIT_TEST_DAEMON_LOG` says (e.g. `wit=debug`, to
    /// read a flaky run's daemons with `WIT_TEST_DAEMON_LOG_DIR`).
    pub fn spawn_at(root: &Path, env: &[(&str, String)]) -> Self {
        let filter = std::env::var("WIT_TEST_DAEMON_LOG").unwrap_or_else(|_| "warn".into());
        Self::spawn_logging(root, env, &filter)
    }

    /// As [`Daemon::spawn_at`], logging what `filter` lets through (`--log-level`).
    pub fn spawn_logging(root: &Path, env: &[(&str, String)], filter: &str) -> Self {
        let mut child = Command::new(wit_bin())
            .args(["daemon", "run", "--log-level", filter, "--repo"])
            .arg(root)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        let drain = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            loop {
                let n = match read_retrying(&mut pipe, &mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        Self {
            child,
            socket: root.join(".wit/daemon.sock"),
            stderr,
            drain: Some(drain),
        }
    }

    /// Everything the daemon wrote to stderr; complete once the process has exited.
    pub fn stderr_text(&mut self) -> String {
        if self.child.try_wait().ok().flatten().is_some() {
            if let Some(drain) = self.drain.take() {
                let _ = drain.join();
            }
        }
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until the daemon answers `ping`; on a timeout, or when the daemon exits first,
    /// panics with what it wrote to stderr and the last error seen, so a failure says why.
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut last = String::from("no attempt");
        while Instant::now() < deadline {
            match try_post(&self.socket, PING) {
                Ok((200, body)) => {
                    assert!(body.contains("pong"), "{body}");
                    return;
                }
                Ok((status, body)) => last = format!("HTTP {status}: {body}"),
                Err(error) => last = error.to_string(),
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let stderr = self.stderr_text();
                panic!("daemon exited ({status}) before answering ping; last: {last}; stderr:\n{stderr}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let stderr = self.stderr_text();
        panic!("daemon did not answer ping in 20 s; last: {last}; stderr:\n{stderr}");
    }

    /// SIGKILLs the daemon and waits until its socket refuses connections: a child the
    /// daemon was starting when killed holds a copy of the listening socket (and of the
    /// daemon's lock) until that child's exec, so for a moment connections are still taken,
    /// then reset (a CI failure of `mcp::bad_input_is_a_clear_error_and_the_server_keeps_serving`).
    pub fn kill9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while UnixStream::connect(&self.socket).is_ok() {
            assert!(
                Instant::now() < deadline,
                "{} still accepts connections 10 s after SIGKILL",
                self.socket.display()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        wait_with_timeout(&mut self.child, Duration::from_secs(10))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // `WIT_TEST_DAEMON_LOG_DIR`: every daemon's stderr is kept there, as
        // `<test>-<pid>.log`.
        if let Ok(dir) = std::env::var("WIT_TEST_DAEMON_LOG_DIR") {
            let text = self.stderr_text();
            let test = std::thread::current()
                .name()
                .unwrap_or("x")
                .replace("::", "_");
            let file = Path::new(&dir).join(format!("{test}-{}.log", self.child.id()));
            let _ = std::fs::write(file, text);
        }
    }
}

pub fn wait_with_timeout(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "process did not exit in time");
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub const PING: &str = r#"{"jsonrpc":"2.0","witVersion":"1","id":"1","method":"ping","params":{}}"#;

#[path = "../common/http.rs"]
mod http;

pub use http::{read_retrying, request_bytes, HttpResponse, ResponseReader};

/// One HTTP exchange on a fresh connection: (status, body).
pub fn try_post(socket: &Path, body: &str) -> std::io::Result<(u16, String)> {
    let mut stream = UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    exchange(&mut stream, "POST", "/rpc", body.as_bytes())
}

pub fn post(socket: &Path, body: &str) -> (u16, String) {
    try_post(socket, body).unwrap()
}

/// Sends one request on `stream` and reads one response (keep-alive friendly).
pub fn exchange(
    stream: &mut UnixStream,
    method: &str,
    path: &str,
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    write_request(stream, method, path, body)?;
    read_response(stream)
}

/// The bytes of one request to the daemon, as [`write_request`] sends it.
pub fn daemon_request(method: &str, path: &str, body: &[u8]) -> Vec<u8> {
    request_bytes(method, path, &[("host", "localhost")], body)
}

/// Writes one HTTP/1.1 request without reading the answer.
pub fn write_request(
    stream: &mut UnixStream,
    method: &str,
    path: &str,
    body: &[u8],
) -> std::io::Result<()> {
    stream.write_all(&daemon_request(method, path, body))
}

/// Reads one response from `stream`: (status, body).
pub fn read_response(stream: &mut UnixStream) -> std::io::Result<(u16, String)> {
    let response = ResponseReader::new(stream).next_response()?;
    Ok((response.status, response.text()))
}

/// A current-thread runtime for driving the async client from a test.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// A stand-in for an agent harness (Claude Code, Codex, …): a long-lived process whose name is
/// not a shell's, which runs `wit hook …` as its child on request, as a harness runs its
/// hooks. The hook finds it as its harness (`wit::harness`), registers its session with its
/// pid, and the session dies with it.
pub struct StandIn {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    dir: tempfile::TempDir,
    calls: usize,
}

impl StandIn {
    /// A stand-in named `name` (at most 15 bytes, the kernel's `comm`) in `repo`.
    pub fn spawn(repo: &Repo, name: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join(name);
        std::os::unix::fs::symlink("/bin/sh", &program).unwrap();
        let script = "while IFS= read -r line; do eval \"$line\"; echo \"done $?\"; done";
        let mut child = Command::new(&program)
            .args(["-c", script])
            .current_dir(repo.path())
            .envs(store_env(repo.path()))
            .env_remove("WIT_SESSION")
            .env_remove("CLAUDE_SESSION_ID")
            .env_remove("WIT_REPO_ROOT")
            .env_remove("WIT_NO_AUTOSTART")
            .env("WIT_GATE_TIMEOUT_MS", "20000")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            dir,
            calls: 0,
        }
    }

    /// The stand-in's pid (the harness pid its sessions are registered with).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Runs `wit ARGS` as the stand-in's child with `input` on stdin and `env` added; returns
    /// its output.
    pub fn run(
        &mut self,
        args: &[&str],
        input: &str,
        env: &[(&str, &str)],
    ) -> std::process::Output {
        use std::io::BufRead;
        self.calls += 1;
        let base = self.dir.path().join(format!("call-{}", self.calls));
        let (stdin_file, out_file, err_file) = (
            base.with_extension("in"),
            base.with_extension("out"),
            base.with_extension("err"),
        );
        std::fs::write(&stdin_file, input).unwrap();
        let quote = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
        let mut line = String::from("env");
        for (key, value) in env {
            line.push_str(&format!(" {key}={}", quote(value)));
        }
        line.push(' ');
        line.push_str(&quote(&wit_bin().display().to_string()));
        for arg in args {
            line.push(' ');
            line.push_str(&quote(arg));
        }
        line.push_str(&format!(
            " < {} > {} 2> {}\n",
            quote(&stdin_file.display().to_string()),
            quote(&out_file.display().to_string()),
            quote(&err_file.display().to_string())
        ));
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let mut done = String::new();
        self.stdout.read_line(&mut done).unwrap();
        let code: i32 = done.trim().strip_prefix("done ").unwrap().parse().unwrap();
        std::process::Output {
            status: std::os::unix::process::ExitStatusExt::from_raw(code << 8),
            stdout: std::fs::read(&out_file).unwrap(),
            stderr: std::fs::read(&err_file).unwrap(),
        }
    }

    /// The harness exits (its stdin closes, its loop ends).
    pub fn exit(mut self) {
        drop(self.stdin.take());
        wait_with_timeout(&mut self.child, Duration::from_secs(10));
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

thread_local! {
    /// Each session's stand-in harness, per repository, for the test running on this thread
    /// (killed when the test's thread ends).
    static HARNESSES: std::cell::RefCell<HashMap<(PathBuf, String), StandIn>> =
        std::cell::RefCell::new(HashMap::new());
}

/// The harness's session id in a payload (`session_id`, Cursor's `conversation_id`).
pub fn payload_session(payload: &str) -> Option<String> {
    let value: Value = serde_json::from_str(payload).ok()?;
    ["session_id", "conversation_id"]
        .iter()
        .find_map(|key| value.get(*key).and_then(Value::as_str))
        .map(str::to_string)
}

/// Runs `with` on the stand-in harness of `session` in `repo` (started on first use): each
/// agent of a test is its own harness process, as in the field.
pub fn with_harness<T>(repo: &Repo, session: &str, with: impl FnOnce(&mut StandIn) -> T) -> T {
    HARNESSES.with(|harnesses| {
        let mut harnesses = harnesses.borrow_mut();
        let name: String = format!("agent-{session}")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let stand_in = harnesses
            .entry((repo.path().to_path_buf(), session.to_string()))
            .or_insert_with(|| StandIn::spawn(repo, &name));
        with(stand_in)
    })
}

/// The pid of `session`'s stand-in harness.
pub fn harness_pid_of(repo: &Repo, session: &str) -> u32 {
    with_harness(repo, session, |stand_in| stand_in.pid())
}

/// `session`'s stand-in harness exits: the sessions registered with its pid die with it.
pub fn end_harness(repo: &Repo, session: &str) {
    let stand_in = HARNESSES.with(|harnesses| {
        harnesses
            .borrow_mut()
            .remove(&(repo.path().to_path_buf(), session.to_string()))
    });
    if let Some(stand_in) = stand_in {
        stand_in.exit();
    }
}
