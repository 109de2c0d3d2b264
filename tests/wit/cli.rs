//! The `wit` command line end to end, in real temporary git repositories.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::*;

// ---- CLI helpers (used by this module only) ---------------------------------------------

/// `wit` in `repo` with a clean wit environment and extra `env`.
fn wit_cmd(repo: &Path, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(wit_bin());
    command
        .current_dir(repo)
        .envs(store_env(repo))
        .env_remove("WIT_SESSION")
        .env_remove("CLAUDE_SESSION_ID")
        .env_remove("WIT_REPO_ROOT")
        .env_remove("WIT_NO_AUTOSTART")
        .stdin(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

fn wit_as(repo: &Repo, session: &str, args: &[&str]) -> Output {
    wit_cmd(repo.path(), &[("WIT_SESSION", session)])
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    })
}

/// Starts `command` and hands over its stdout line by line as it comes.
fn spawn_lines(mut command: Command) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let _ = tx.send(line.unwrap());
        }
    });
    (child, rx)
}

fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

/// `git` in `repo` with a fixed identity, the repository found from the working directory.
fn git_command(repo: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(repo)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env_remove("WIT_REPO_ROOT")
        // A blocking verdict must not turn into fail-open on a loaded CI machine; the
        // unreachable-daemon case fails open at once whatever the budget.
        .env("WIT_HOOK_TIMEOUT_MS", "20000");
    command
}

fn git(repo: &Path, args: &[&str]) -> Output {
    git_command(repo).args(args).output().unwrap()
}

/// Stops the repository's daemon when dropped, so no test leaks a process.
struct StopDaemon<'a>(&'a Repo);

impl Drop for StopDaemon<'_> {
    fn drop(&mut self) {
        let _ = wit_cmd(self.0.path(), &[])
            .args(["daemon", "stop"])
            .output();
    }
}

const AUTH_TS: &str =
    "export function validateToken(token: string): boolean {\n  return token.length > 3;\n}\n";
const API_TS: &str = "import { validateToken } from \"./auth\";\nexport function handle(t: string): number {\n  return validateToken(t) ? 200 : 401;\n}\n";

fn seeded_repo() -> Repo {
    let repo = Repo::new();
    repo.write("src/auth.ts", AUTH_TS);
    repo.write("src/api.ts", API_TS);
    repo.write(
        "tax.py",
        "def tax(amount: float) -> float:\n    return amount * 0.2\n",
    );
    git(repo.path(), &["add", "."]);
    let out = git(repo.path(), &["commit", "-q", "--no-verify", "-m", "init"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    repo
}

/// Replaces timestamps, UUIDs, durations left and the repository path by placeholders.
fn mask(text: &str, repo: &Path) -> String {
    let text = text.replace(&repo.display().to_string(), "<REPO>");
    // The worktree column names the repository's directory.
    let name = repo.file_name().unwrap().to_string_lossy();
    let text = text.replace(name.as_ref(), "<REPO>");
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..].iter().take(36).collect();
        if is_uuid(&rest) {
            out.push_str("<ID>");
            i += 36;
            continue;
        }
        let stamp: String = chars[i..].iter().take(24).collect();
        if stamp.len() == 24
            && stamp.as_bytes()[4] == b'-'
            && stamp.as_bytes()[10] == b'T'
            && stamp.ends_with('Z')
        {
            out.push_str("<TIME>");
            i += 24;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    mask_left(&out)
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// `29m 59s`, `30m 00s`, `45s`, `1h 05m` -> `<LEFT>`.
fn mask_left(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            let mut out: Vec<String> = Vec::new();
            let mut i = 0;
            while i < words.len() {
                let unit = |w: &str, u: &str| {
                    w.strip_suffix(u)
                        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                };
                let word = words[i];
                // "(9m 59s left)": the opening parenthesis stays, the duration goes.
                let (prefix, w) = match word.strip_prefix('(') {
                    Some(rest) => ("(", rest),
                    None => ("", word),
                };
                let next = words.get(i + 1).copied().unwrap_or("");
                if (unit(w, "m") && unit(next, "s"))
                    || (unit(w, "h") && unit(next, "m"))
                    || (unit(w, "d") && unit(next, "h"))
                {
                    out.push(format!("{prefix}<LEFT>"));
                    i += 2;
                } else if unit(w, "s") {
                    out.push(format!("{prefix}<LEFT>"));
                    i += 1;
                } else {
                    out.push(word.to_string());
                    i += 1;
                }
            }
            out.join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[path = "../common/snapshot.rs"]
mod snapshot_files;

/// Compares `actual` with `tests/snapshots/cli/<name>.txt` (rewritten with
/// `WIT_UPDATE_SNAPSHOTS=1`).
#[track_caller]
fn snapshot(name: &str, actual: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/cli");
    snapshot_files::Snapshots::new(dir, "WIT_UPDATE_SNAPSHOTS", "cargo test --test wit cli::")
        .assert_current(&format!("{name}.txt"), actual);
}

// ---- tests ------------------------------------------------------------------------------

#[test]
fn lock_conflict_release_and_tables() {
    let repo = seeded_repo();
    let _stop = StopDaemon(&repo);
    let out = wit_as(
        &repo,
        "alice",
        &["lock", "src/auth.ts:validateToken", "--ttl", "10m"],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    snapshot("lock", &mask(&text(&out.stdout), repo.path()));

    let out = wit_as(&repo, "bob", &["lock", "src/auth.ts:validateToken"]);
    assert_eq!(code(&out), 1);
    let err = text(&out.stderr);
    assert!(
        err.contains("LOCK_CONFLICT") && err.contains("locked by alice"),
        "{err}"
    );
    assert!(err.contains("expiresAt:"), "{err}");
    snapshot("lock_conflict", &mask(&err, repo.path()));

    let out = wit_as(
        &repo,
        "bob",
        &["--json", "lock", "src/auth.ts:validateToken"],
    );
    assert_eq!(code(&out), 1);
    let value = json_of(&out);
    assert_eq!(value["error"]["message"], "LOCK_CONFLICT");
    assert_eq!(value["error"]["data"]["heldBy"], "alice");

    // bob locks the caller: alice re-locking gets no warning, but bob locking... the caller
    // warning goes to whoever locks the callee while the caller is held.
    let out = wit_as(&repo, "bob", &["lock", "src/api.ts:handle"]);
    assert_eq!(code(&out), 0);
    let out = wit_as(
        &repo,
        "alice",
        &["--json", "lock", "src/auth.ts:validateToken"],
    );
    let value = json_of(&out);
    assert_eq!(
        value["warnings"][0]["lockedSymbol"], "src/api.ts:handle",
        "{value}"
    );
    let out = wit_as(&repo, "alice", &["lock", "src/auth.ts:validateToken"]);
    let human = text(&out.stdout);
    assert!(
        human.contains("warning: caller src/api.ts:handle is locked by bob"),
        "{human}"
    );
    assert!(
        human.contains("chain: src/api.ts:handle -> src/auth.ts:validateToken"),
        "{human}"
    );

    let out = wit_as(&repo, "alice", &["locks"]);
    assert_eq!(code(&out), 0);
    snapshot("locks", &mask(&text(&out.stdout), repo.path()));
    let out = wit_as(&repo, "alice", &["--json", "locks", "--mine"]);
    assert_eq!(json_of(&out).as_array().unwrap().len(), 1);

    let out = wit_as(&repo, "alice", &["release", "src/auth.ts:validateToken"]);
    assert_eq!(code(&out), 0);
    assert_eq!(text(&out.stdout), "released src/auth.ts:validateToken\n");
    let out = wit_as(
        &repo,
        "alice",
        &["--json", "release", "src/auth.ts:validateToken"],
    );
    assert_eq!(code(&out), 1);
    assert_eq!(json_of(&out)["error"]["message"], "LOCK_NOT_FOUND");
}

/// A reader that went away (`wit --help | head -0`) makes `wit`'s write fail, which it
/// handles; it does not end `wit` by `SIGPIPE` (wit's own entry point ignores the signal, as
/// the standard library's start-up does).
#[test]
fn a_closed_pipe_is_an_error_not_a_signal() {
    let repo = Repo::new();
    for _ in 0..5 {
        let mut child = wit_cmd(repo.path(), &[])
            .arg("--help")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The reading end closes before `wit` has written anything.
        drop(child.stdout.take());
        let status = child.wait().unwrap();
        assert!(status.code().is_some(), "ended by a signal: {status:?}");
    }
}

#[test]
fn bad_durations_are_usage_errors() {
    let repo = Repo::new();
    for bad in ["600", "10x", "0s"] {
        let out = wit_as(&repo, "a", &["lock", "a.ts:f", "--ttl", bad]);
        assert_eq!(code(&out), 2, "{bad}: {}", text(&out.stderr));
    }
    let out = wit_as(&repo, "a", &["lock", "a.ts:f", "--ttl", "8d"]);
    assert_eq!(code(&out), 2);
    let out = wit_as(&repo, "a", &["no-such-command"]);
    assert_eq!(code(&out), 2);
    assert!(
        !repo.path().join(".wit/daemon.sock").exists(),
        "usage errors start nothing"
    );
}

#[test]
fn unreachable_daemon_exits_3() {
    let repo = Repo::new();
    let out = wit_cmd(
        repo.path(),
        &[("WIT_SESSION", "a"), ("WIT_NO_AUTOSTART", "1")],
    )
    .args(["locks"])
    .output()
    .unwrap();
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    let out = wit_cmd(repo.path(), &[("WIT_NO_AUTOSTART", "1")])
        .args(["--json", "status"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3);
    assert_eq!(json_of(&out)["error"]["kind"], "unreachable");
    // `.wit` is a file: the daemon cannot be started, so auto-start fails fast with 3.
    let blocked = Repo::new();
    std::fs::write(blocked.path().join(".wit"), "not a directory").unwrap();
    let out = wit_cmd(blocked.path(), &[("WIT_SESSION", "a")])
        .args(["locks"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
}

#[test]
fn session_resolution_order() {
    let repo = Repo::new();
    let _stop = StopDaemon(&repo);
    std::fs::create_dir_all(repo.path().join(".wit")).unwrap();
    std::fs::write(repo.path().join(".wit/session.id"), "from-file\n").unwrap();
    let who = |env: &[(&str, &str)], flag: Option<&str>| {
        let mut command = wit_cmd(repo.path(), env);
        if let Some(flag) = flag {
            command.args(["--session", flag]);
        }
        let out = command.args(["--json", "register", "x"]).output().unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        let out = wit_cmd(repo.path(), env)
            .args(["--json", "status"])
            .output()
            .unwrap();
        json_of(&out)["session"].clone()
    };
    let all = [
        ("WIT_SESSION", "from-env"),
        ("CLAUDE_SESSION_ID", "from-claude"),
    ];
    let out = wit_cmd(repo.path(), &all)
        .args(["--session", "from-flag", "--json", "status"])
        .output()
        .unwrap();
    assert_eq!(json_of(&out)["session"]["id"], "from-flag");
    assert_eq!(who(&all, None)["id"], "from-env");
    let claude = [("WIT_SESSION", ""), ("CLAUDE_SESSION_ID", "from-claude")];
    assert_eq!(who(&claude, None)["id"], "from-claude");
    assert_eq!(who(&[], None)["id"], "from-file");
    assert_eq!(who(&[], None)["source"], ".wit/session.id");
}

#[test]
fn intents_contracts_and_status_tables() {
    let repo = seeded_repo();
    let _stop = StopDaemon(&repo);
    let out = wit_as(
        &repo,
        "alice",
        &[
            "--json",
            "declare",
            "-d",
            "Tighten checks",
            "-f",
            "src/auth.ts",
            "-s",
            "validateToken",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let intent = json_of(&out)["intentId"].as_str().unwrap().to_string();
    let out = wit_as(
        &repo,
        "bob",
        &["declare", "-d", "Audit log", "-f", "src/auth.ts"],
    );
    assert_eq!(code(&out), 0);
    let human = text(&out.stdout);
    assert!(
        human.contains("INTENT_OVERLAP") && human.contains(&intent),
        "{human}"
    );
    snapshot("declare_conflict", &mask(&human, repo.path()));

    let out = wit_as(
        &repo,
        "alice",
        &["contract", "propose", "src/auth.ts:validateToken"],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("(token: string): boolean"));
    let out = wit_as(&repo, "alice", &["--json", "contract", "list"]);
    let contract = json_of(&out)[0]["contractId"].as_str().unwrap().to_string();
    let out = wit_as(&repo, "alice", &["contract", "accept", &contract]);
    assert_eq!(code(&out), 1);
    assert!(text(&out.stderr).contains("SELF_ACCEPT_NOT_ALLOWED"));
    let out = wit_as(&repo, "bob", &["contract", "accept", &contract]);
    assert_eq!(code(&out), 0);
    assert_eq!(text(&out.stdout), format!("contract {contract} accepted\n"));
    let out = wit_as(&repo, "alice", &["lock", "src/auth.ts:validateToken"]);
    assert_eq!(code(&out), 0);

    let out = wit_as(&repo, "alice", &["status"]);
    assert_eq!(code(&out), 0);
    snapshot("status", &mask(&text(&out.stdout), repo.path()));
    let out = wit_as(&repo, "alice", &["--json", "status"]);
    let value = json_of(&out);
    assert_eq!(value["intents"].as_array().unwrap().len(), 2);
    assert_eq!(value["locks"].as_array().unwrap().len(), 1);
    assert_eq!(value["contracts"].as_array().unwrap().len(), 1);

    let out = wit_as(&repo, "alice", &["intent", "list", "--mine"]);
    snapshot("intent_list", &mask(&text(&out.stdout), repo.path()));
    let out = wit_as(&repo, "alice", &["intent", "update", &intent, "resolved"]);
    assert_eq!(
        text(&out.stdout),
        format!("intent {intent} is now resolved\n")
    );
    let out = wit_as(
        &repo,
        "alice",
        &["--json", "intent", "update", &intent, "active"],
    );
    assert_eq!(code(&out), 1);
    assert_eq!(json_of(&out)["error"]["data"]["current"], "resolved");
    let out = wit_as(&repo, "alice", &["--json", "intent", "list", "--all"]);
    assert_eq!(json_of(&out).as_array().unwrap().len(), 2);
    let out = wit_as(
        &repo,
        "alice",
        &["contract", "list", "--status", "accepted"],
    );
    snapshot("contract_list", &mask(&text(&out.stdout), repo.path()));

    let out = wit_as(&repo, "alice", &["call", "lock.query", "{}"]);
    assert_eq!(code(&out), 0);
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value[0]["sessionId"], "alice");
    let out = wit_as(&repo, "alice", &["--json", "call", "register", "{}"]);
    assert_eq!(code(&out), 1);
    assert!(json_of(&out)["error"]["data"]["fieldErrors"]["sessionId"].is_array());
    let out = wit_as(&repo, "alice", &["register", "alice-agent"]);
    assert!(text(&out.stdout).starts_with("registered alice-agent (session alice) as agent "));
}

#[test]
fn twenty_concurrent_calls_on_a_cold_repo_start_one_daemon() {
    let repo = Repo::new();
    let _stop = StopDaemon(&repo);
    let children: Vec<_> = (0..20)
        .map(|i| {
            wit_cmd(repo.path(), &[("WIT_SESSION", &format!("s{i}"))])
                .args(["--json", "lock", &format!("a.ts:f{i}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    }
    let out = wit_cmd(repo.path(), &[])
        .args(["--json", "locks"])
        .output()
        .unwrap();
    assert_eq!(json_of(&out).as_array().unwrap().len(), 20);
    let pids = Command::new("pgrep")
        .args([
            "-f",
            &format!("daemon run --repo {}", repo.path().display()),
        ])
        .output()
        .unwrap();
    assert_eq!(text(&pids.stdout).lines().count(), 1, "exactly one daemon");
}

fn init(repo: &Repo) -> Output {
    wit_cmd(repo.path(), &[]).args(["init"]).output().unwrap()
}

#[test]
fn init_is_idempotent() {
    let repo = seeded_repo();
    let _stop = StopDaemon(&repo);
    repo.write("AGENTS.md", "# Our agents\n\nBe nice.\n");
    let out = init(&repo);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let read = |rel: &str| std::fs::read_to_string(repo.path().join(rel)).unwrap();
    let before: Vec<String> = [
        "AGENTS.md",
        "CLAUDE.md",
        ".wit/session.id",
        ".git/hooks/pre-commit",
        ".git/hooks/prepare-commit-msg",
    ]
    .iter()
    .map(|f| read(f))
    .collect();
    assert!(before[0].starts_with("# Our agents\n\nBe nice.\n\n<!-- wit:begin -->"));
    let out = wit_cmd(repo.path(), &[])
        .args(["--json", "init"])
        .output()
        .unwrap();
    let value = json_of(&out);
    assert_eq!(value["sessionCreated"], false);
    assert_eq!(value["daemonStarted"], false);
    assert_eq!(value["docs"]["AGENTS.md"], "unchanged");
    assert_eq!(value["hooks"]["pre-commit"], "unchanged");
    let after: Vec<String> = [
        "AGENTS.md",
        "CLAUDE.md",
        ".wit/session.id",
        ".git/hooks/pre-commit",
        ".git/hooks/prepare-commit-msg",
    ]
    .iter()
    .map(|f| read(f))
    .collect();
    assert_eq!(before, after);
}

fn commit(repo: &Repo, session: &str, message: &str, env: &[(&str, &str)]) -> (Output, Duration) {
    git(repo.path(), &["add", "-A"]);
    let started = Instant::now();
    let mut command = git_command(repo.path());
    command
        .args(["commit", "-q", "-m", message])
        .env("WIT_SESSION", session)
        .env_remove("CLAUDE_SESSION_ID");
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    (out, started.elapsed())
}

#[test]
fn hooks_block_a_broken_contract_allow_body_changes_and_add_trailers() {
    let repo = seeded_repo();
    let _stop = StopDaemon(&repo);
    assert_eq!(code(&init(&repo)), 0);
    let out = wit_as(
        &repo,
        "alice",
        &["--json", "contract", "propose", "src/auth.ts:validateToken"],
    );
    let contract = json_of(&out)["contractId"].as_str().unwrap().to_string();
    assert_eq!(
        code(&wit_as(&repo, "bob", &["contract", "accept", &contract])),
        0
    );
    let out = wit_as(
        &repo,
        "alice",
        &["--json", "declare", "-d", "tighten", "-f", "src/auth.ts"],
    );
    let intent = json_of(&out)["intentId"].as_str().unwrap().to_string();

    repo.write("src/auth.ts", "export function validateToken(token: string, strict: boolean): boolean {\n  return strict;\n}\n");
    let (out, _) = commit(&repo, "alice", "break it", &[]);
    assert!(!out.status.success(), "the commit must be blocked");
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("src/auth.ts:validateToken"), "{all}");
    assert!(all.contains("expected: (token: string): boolean"), "{all}");
    assert!(
        all.contains("actual:   (token: string, strict: boolean): boolean"),
        "{all}"
    );

    repo.write(
        "src/auth.ts",
        "export function validateToken(token: string): boolean {\n  return token.length > 8;\n}\n",
    );
    let (out, _) = commit(&repo, "alice", "body only", &[]);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let message = text(&git(repo.path(), &["log", "-1", "--format=%B"]).stdout);
    assert!(
        message.contains(&format!("Wit-Intent: {intent}")),
        "{message}"
    );

    // bob has no intents: no trailer.
    repo.write(
        "tax.py",
        "def tax(amount: float) -> float:\n    return amount * 0.3\n",
    );
    let (out, _) = commit(&repo, "bob", "tax", &[]);
    assert!(out.status.success());
    let message = text(&git(repo.path(), &["log", "-1", "--format=%B"]).stdout);
    assert!(!message.contains("Wit-Intent"), "{message}");

    // check-contracts on working-tree files, human and JSON.
    let out = wit_as(
        &repo,
        "alice",
        &["--json", "check-contracts", "src/auth.ts"],
    );
    assert_eq!(code(&out), 0);
    assert_eq!(json_of(&out)["violations"], serde_json::json!([]));
}

#[test]
fn a_commit_with_the_daemon_unreachable_goes_through_fast() {
    let repo = seeded_repo();
    let _stop = StopDaemon(&repo);
    assert_eq!(code(&init(&repo)), 0);
    let out = wit_cmd(repo.path(), &[])
        .args(["daemon", "stop"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    repo.write(
        "src/auth.ts",
        "export function validateToken(): boolean { return true; }\n",
    );
    let (out, elapsed) = commit(&repo, "alice", "offline", &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    let err = text(&out.stderr);
    assert!(err.contains("pre-commit checks not done"), "{err}");
    assert_eq!(err.lines().count(), 1, "one-line warning: {err}");
    assert!(
        !repo.path().join(".wit/daemon.sock").exists(),
        "the hook never starts a daemon"
    );
}

/// Issue 32.6: `wit daemon stop` returns once the daemon has exited, so its lock is free and
/// a `start` right after never meets "a wit daemon is already running".
#[test]
fn daemon_stop_returns_once_the_daemon_has_exited_so_start_follows() {
    let repo = seeded_repo();
    let _stop = StopDaemon(&repo);
    let daemon = |verb: &str| {
        wit_cmd(repo.path(), &[])
            .args(["daemon", verb])
            .output()
            .unwrap()
    };
    for round in 0..20 {
        let out = daemon("start");
        assert_eq!(code(&out), 0, "start, round {round}: {}", text(&out.stderr));
        let out = daemon("stop");
        assert_eq!(code(&out), 0, "stop, round {round}: {}", text(&out.stderr));
        let lock = std::fs::OpenOptions::new()
            .write(true)
            .open(repo.path().join(".wit/daemon.lock"))
            .unwrap();
        assert!(
            lock.try_lock().is_ok(),
            "round {round}: the daemon still holds its lock after stop returned"
        );
    }
}

#[test]
fn hooks_chain_to_an_existing_hook_and_uninstall_restores_it() {
    let repo = seeded_repo();
    let hooks = repo.path().join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let original = "#!/bin/sh\necho chained-hook-ran > chained.txt\n";
    std::fs::write(hooks.join("pre-commit"), original).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        hooks.join("pre-commit"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let out = wit_cmd(repo.path(), &[])
        .args(["hook", "install"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("chained"));
    assert_eq!(
        std::fs::read_to_string(hooks.join("pre-commit.wit-chained")).unwrap(),
        original
    );
    repo.write("x.txt", "x");
    let (out, _) = commit(&repo, "a", "x", &[("WIT_NO_AUTOSTART", "1")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        repo.path().join("chained.txt").exists(),
        "the existing hook still runs"
    );
    let out = wit_cmd(repo.path(), &[])
        .args(["hook", "uninstall"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    assert_eq!(
        std::fs::read_to_string(hooks.join("pre-commit")).unwrap(),
        original
    );
    assert!(!hooks.join("pre-commit.wit-chained").exists());
    assert!(!hooks.join("prepare-commit-msg").exists());
}

#[test]
fn hooks_honour_core_hooks_path() {
    let repo = seeded_repo();
    git(repo.path(), &["config", "core.hooksPath", "githooks"]);
    let out = wit_cmd(repo.path(), &[])
        .args(["--json", "hook", "install"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(repo.path().join("githooks/pre-commit").exists());
    assert!(!repo.path().join(".git/hooks/pre-commit").exists());
}

#[test]
fn completions_and_help() {
    let repo = Repo::new();
    let out = wit_cmd(repo.path(), &[])
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    assert!(text(&out.stdout).contains("wit"));
    let out = wit_cmd(repo.path(), &[]).args(["--help"]).output().unwrap();
    assert_eq!(code(&out), 0);
    assert!(text(&out.stdout).contains("Exit codes"));
}

#[test]
fn demo_runs_end_to_end_and_cleans_up() {
    let out = wit_cmd(Path::new("/tmp"), &[])
        .args(["--json", "demo"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    let value = json_of(&out);
    assert_eq!(value["ok"], true);
    let root = value["root"].as_str().unwrap();
    assert!(!Path::new(root).exists(), "the demo removes its repository");
    let steps = value["steps"].as_array().unwrap();
    // Every command the story ran, with what it printed and the facts it checked.
    let commands: Vec<&Value> = steps
        .iter()
        .flat_map(|s| s["commands"].as_array().into_iter().flatten())
        .collect();
    let find = |prefix: &str| -> &Value {
        commands
            .iter()
            .find(|c| c["command"].as_str().unwrap().starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` in the story: {value}"))
    };
    // bob's Edit of alice's function, refused by the gate, naming her.
    let refused = commands
        .iter()
        .find(|c| c["command"].as_str().unwrap().ends_with("by bob"))
        .unwrap();
    assert_eq!(refused["facts"]["decision"], "deny", "{refused}");
    assert!(
        refused["output"].as_str().unwrap().contains("alice"),
        "{refused}"
    );
    // `git add -A && git commit`, refused by the shell gate naming bob, pointing at wit commit.
    let add_all = find("git add -A && git commit");
    assert_eq!(add_all["facts"]["decision"], "deny", "{add_all}");
    let reason = add_all["output"].as_str().unwrap();
    assert!(
        reason.contains("bob") && reason.contains("wit commit"),
        "{reason}"
    );
    // `wit commit` committed alice's line and not bob's.
    let committed = find("git show --stat HEAD")["facts"]["committed"]
        .as_str()
        .unwrap();
    assert!(
        committed.contains("return a + 10;") && committed.contains("return b * 2;"),
        "{committed}"
    );
    // `wit blame` names bob on the line his `sed -i` changed.
    let blame = find("wit blame src/lib.ts")["output"].as_str().unwrap();
    let row = blame
        .lines()
        .find(|l| l.contains("return c - 30;"))
        .unwrap_or_else(|| panic!("{blame}"));
    assert!(row.contains("bob"), "{blame}");
    // The forecast: the two worktrees collide in beta.
    let forecast = find("wit worktrees")["output"].as_str().unwrap();
    assert!(forecast.contains("beta"), "{forecast}");
    // Bob's work is back after `git reset --hard`.
    let restored = find("wit snapshots restore")["facts"]["restored"]
        .as_str()
        .unwrap();
    assert!(
        restored.contains("return b * 20;") && restored.contains("return c - 30;"),
        "{restored}"
    );
}

#[test]
fn watch_prints_changes_and_exits_on_ctrl_c() {
    let repo = Repo::new();
    let _stop = StopDaemon(&repo);
    let mut watch = wit_cmd(repo.path(), &[]);
    watch
        .args(["--json", "watch", "--interval", "1m"])
        .stderr(Stdio::piped());
    let (mut child, rx) = spawn_lines(watch);
    let first = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&first).unwrap()["locks"],
        serde_json::json!([])
    );
    assert_eq!(code(&wit_as(&repo, "a", &["lock", "a.ts:f"])), 0);
    let second = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&second).unwrap()["locks"][0]["symbolPath"],
        "a.ts:f"
    );
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = wait_with_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
}

#[test]
fn lock_wait_sessions_session_end_and_log() {
    let repo = Repo::new();
    let _stop = StopDaemon(&repo);
    assert_eq!(code(&wit_as(&repo, "a", &["lock", "a.ts:f"])), 0);
    // b waits its turn; a releases a moment later.
    let waiter = {
        let path = repo.path().to_path_buf();
        std::thread::spawn(move || {
            let started = Instant::now();
            let out = wit_cmd(&path, &[("WIT_SESSION", "b")])
                .args(["--json", "lock", "a.ts:f", "--wait", "20s"])
                .output()
                .unwrap();
            (out, started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(code(&wit_as(&repo, "a", &["release", "a.ts:f"])), 0);
    let (out, waited) = waiter.join().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(json_of(&out)["sessionId"], "b");
    assert!(waited >= Duration::from_millis(400), "{waited:?}");
    // Without --wait: a conflict at once, with the hint.
    let out = wit_as(&repo, "a", &["lock", "a.ts:f"]);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("locked by b"),
        "{}",
        text(&out.stderr)
    );
    let out = wit_as(&repo, "a", &["lock", "a.ts:f", "--wait", "11m"]);
    assert_eq!(code(&out), 2, "longer than the protocol allows");

    // a holds nothing now: it is listed once registered (docs/protocol.md 7.6).
    assert_eq!(
        code(&wit_as(&repo, "a", &["register", "alice", "--lease", "1h"])),
        0
    );
    let out = wit_as(&repo, "a", &["--json", "sessions"]);
    let sessions = json_of(&out);
    let ids: Vec<&str> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b"]);
    let table = text(&wit_as(&repo, "a", &["sessions"]).stdout);
    assert!(
        table.contains("a (you)") && table.contains("LOCKS"),
        "{table}"
    );

    let out = wit_as(&repo, "b", &["--json", "session", "end"]);
    assert_eq!(json_of(&out)["locksReleased"], 1);

    let out = wit_as(&repo, "a", &["--json", "log", "--since", "0"]);
    let log = json_of(&out);
    let types: Vec<&str> = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "lock.acquired",
            "lock.released",
            "lock.acquired",
            "session.registered",
            "session.ended",
            "lock.released"
        ]
    );
    let out = wit_as(&repo, "a", &["log", "--type", "session.ended"]);
    let lines = text(&out.stdout);
    assert!(lines.contains("session.ended b by b"), "{lines}");
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert_eq!(code(&wit_as(&repo, "a", &["log", "--type", "nope"])), 2);

    // --follow prints what comes next, one JSON event per line.
    let mut follow = wit_cmd(repo.path(), &[("WIT_SESSION", "a")]);
    follow.args(["--json", "log", "-f", "--last", "1"]);
    let (mut child, rx) = spawn_lines(follow);
    let last = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&last).unwrap()["type"],
        "lock.released"
    );
    assert_eq!(code(&wit_as(&repo, "a", &["lock", "b.ts:g"])), 0);
    let next = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let next: Value = serde_json::from_str(&next).unwrap();
    assert_eq!(
        (next["type"].as_str(), next["subject"].as_str()),
        (Some("lock.acquired"), Some("b.ts:g"))
    );
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(
        wait_with_timeout(&mut child, Duration::from_secs(10)).code(),
        Some(0)
    );
}

#[test]
fn the_claude_session_hooks_register_the_harness_pid_and_end_the_session() {
    let repo = Repo::new();
    let _stop = StopDaemon(&repo);
    assert_eq!(code(&init(&repo)), 0);
    let hook = |name: &str| {
        let mut child = wit_cmd(repo.path(), &[])
            // As Claude runs it: through a shell, the payload on stdin.
            .args(["hook", name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(br#"{"session_id":"claude-1","hook_event_name":"x"}"#)
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = hook("claude-session-start");
    assert_eq!(code(&out), 0);
    assert!(
        text(&out.stdout).contains("wit status"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(code(&wit_as(&repo, "claude-1", &["lock", "a.ts:f"])), 0);
    let sessions = json_of(&wit_as(&repo, "x", &["--json", "sessions"]));
    let claude = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == "claude-1")
        .unwrap()
        .clone();
    assert_eq!(claude["name"], "claude-code");
    // The hook's parent here is this test process: the harness.
    assert_eq!(claude["pid"], i64::from(std::process::id()));
    assert_eq!(claude["live"], true);
    let out = hook("claude-session-end");
    assert_eq!(code(&out), 0);
    assert!(out.stdout.is_empty());
    let locks = json_of(&wit_as(&repo, "x", &["--json", "locks"]));
    assert_eq!(locks, serde_json::json!([]));
}
