//! The code index against a real daemon: `.wit/index.db` reused across restarts, changes made
//! while the daemon was stopped, a damaged index file, large sources through the long-lived
//! parse workers, and the index lines of `wit daemon status`.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{block_on, store_env, wit_bin, Daemon, Repo};
use crate::locks::acquire;

/// `b.ts:b` called from `a.ts:a` and `c.ts:c`.
fn write_triangle(repo: &Repo) {
    repo.write(
        "src/a.ts",
        "import { b } from './b';\nexport function a(x: number) { return b(x); }\n",
    );
    repo.write("src/b.ts", "export function b(y: number) { return y; }\n");
    repo.write(
        "src/c.ts",
        "import { b } from './b';\nexport function c() { return b(1); }\n",
    );
}

/// The index status `daemon` published, once complete (a status file left by an earlier
/// daemon names another pid).
fn complete_status(repo: &Repo, daemon: &Daemon) -> Value {
    let path = repo.path().join(".wit/index.json");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(&path) {
            if let Ok(status) = serde_json::from_str::<Value>(&text) {
                if status["complete"] == json!(true) && status["pid"] == json!(daemon.child.id()) {
                    return status;
                }
            }
        }
        assert!(Instant::now() < deadline, "index never complete");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The symbols whose locks warn an acquire of `target` (held by another session), sorted.
fn warned_callers(repo: &Repo, callers: &[&str], target: &str) -> Vec<String> {
    let client = repo.client();
    block_on(async {
        for caller in callers {
            client
                .lock_acquire(acquire(caller, "holder", None))
                .await
                .unwrap();
        }
        let locked = client
            .lock_acquire(acquire(target, "asker", None))
            .await
            .unwrap();
        let warnings = serde_json::to_value(&locked.warnings).unwrap();
        let mut out: Vec<String> = warnings
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["lockedSymbol"].as_str().unwrap().to_owned())
            .collect();
        out.sort();
        out
    })
}

fn stop(mut daemon: Daemon) {
    assert!(daemon.terminate().success());
}

#[test]
fn a_restart_parses_nothing_and_changes_while_stopped_are_picked_up() {
    let repo = Repo::new();
    write_triangle(&repo);
    repo.write("src/d.ts", "export function d() {}\n");
    let daemon = Daemon::start(&repo);
    let callers = ["src/a.ts:a", "src/c.ts:c"];
    assert_eq!(
        warned_callers(&repo, &callers, "src/b.ts:b"),
        ["src/a.ts:a", "src/c.ts:c"]
    );
    assert_eq!(complete_status(&repo, &daemon)["parsed"], json!(4));
    stop(daemon);

    // Unchanged: nothing parsed, same answers.
    let daemon = Daemon::start(&repo);
    let status = complete_status(&repo, &daemon);
    assert_eq!(
        (status["parsed"].clone(), status["files"].clone()),
        (json!(0), json!(4))
    );
    stop(daemon);

    // While stopped: a edited (no longer calls b), c deleted, d renamed to e, f new.
    std::thread::sleep(Duration::from_millis(20));
    repo.write("src/a.ts", "export function a(x: number) { return x; }\n");
    std::fs::remove_file(repo.path().join("src/c.ts")).unwrap();
    std::fs::rename(repo.path().join("src/d.ts"), repo.path().join("src/e.ts")).unwrap();
    repo.write(
        "src/f.ts",
        "import { b } from './b';\nexport function f() { return b(2); }\n",
    );
    let daemon = Daemon::start(&repo);
    assert_eq!(
        warned_callers(&repo, &["src/a.ts:a", "src/f.ts:f"], "src/b.ts:b"),
        ["src/f.ts:f"]
    );
    let status = complete_status(&repo, &daemon);
    assert_eq!(
        (status["parsed"].clone(), status["files"].clone()),
        (json!(3), json!(4))
    );
    stop(daemon);
}

#[test]
fn a_truncated_index_database_is_rebuilt_with_a_warning() {
    let repo = Repo::new();
    write_triangle(&repo);
    for i in 0..30 {
        repo.write(
            &format!("src/m/f{i}.ts"),
            &format!("export function f{i}(a: number) {{ return a + {i}; }}\n").repeat(30),
        );
    }
    let daemon = Daemon::start(&repo);
    complete_status(&repo, &daemon);
    stop(daemon);
    let db = repo.path().join(".wit/index.db");
    let len = std::fs::metadata(&db).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .set_len(len / 3)
        .unwrap();
    let mut daemon = Daemon::start(&repo);
    assert_eq!(
        warned_callers(&repo, &["src/a.ts:a", "src/c.ts:c"], "src/b.ts:b"),
        ["src/a.ts:a", "src/c.ts:c"]
    );
    assert_eq!(complete_status(&repo, &daemon)["parsed"], json!(33));
    daemon.terminate();
    let log = daemon.stderr_text();
    assert!(log.contains("index database unreadable"), "{log}");
}

#[test]
fn large_sources_go_through_the_parse_workers() {
    let repo = Repo::new();
    // Three sources over the 64 KB threshold: parsed by the long-lived workers.
    for i in 0..3 {
        let body: String = (0..1_500)
            .map(|n| format!("export function g{i}_{n}(a: number): number {{ return a + {n}; }}\n"))
            .collect();
        let caller = format!(
            "import {{ g{i}_7 }} from './big{i}';\nexport function use{i}() {{ return g{i}_7(1); }}\n"
        );
        repo.write(&format!("src/big{i}.ts"), &body);
        repo.write(&format!("src/use{i}.ts"), &caller);
    }
    let daemon = Daemon::start(&repo);
    for i in 0..3 {
        assert_eq!(
            warned_callers(
                &repo,
                &[&format!("src/use{i}.ts:use{i}")],
                &format!("src/big{i}.ts:g{i}_7")
            ),
            [format!("src/use{i}.ts:use{i}")]
        );
    }
    // At most two workers, alive between files, not one process per file (the daemon's
    // other children, the work snapshots' `git cat-file`, are not workers).
    let children = Command::new("pgrep")
        .args(["-f", "-P", &daemon.child.id().to_string(), " __analyze"])
        .output()
        .unwrap();
    let count = String::from_utf8_lossy(&children.stdout).lines().count();
    assert!((1..=2).contains(&count), "{count} worker processes");
    stop(daemon);
}

#[test]
fn daemon_status_shows_the_index() {
    let repo = Repo::new();
    write_triangle(&repo);
    let daemon = Daemon::start(&repo);
    complete_status(&repo, &daemon);
    let output = Command::new(wit_bin())
        .args(["daemon", "status", "--repo"])
        .arg(repo.path())
        .envs(store_env(repo.path()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("index    3 files, 0.0 MB, complete in"),
        "{text}"
    );
    let output = Command::new(wit_bin())
        .args(["--json", "daemon", "status", "--repo"])
        .arg(repo.path())
        .envs(store_env(repo.path()))
        .output()
        .unwrap();
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["index"]["files"], json!(3), "{value}");
    assert_eq!(value["index"]["complete"], json!(true), "{value}");
    stop(daemon);
}

/// Sets the mtime of `path` (a file or a directory) to `secs` after the epoch.
fn set_mtime(path: &std::path::Path, secs: u64) {
    let at = std::time::UNIX_EPOCH + Duration::from_secs(secs);
    std::fs::File::open(path).unwrap().set_modified(at).unwrap();
}

/// A warm restart may trust its record of the last walk of the tree instead of walking it
/// again (when nothing that decides the walk moved, and not too recently to tell): the tree
/// is aged out of that window here, so the restarts below do. A file made while the daemon
/// was stopped is still found, even in a directory whose mtime was then set back to another
/// old time, as `rsync -t` or an archive's restore do.
#[test]
fn a_restart_that_trusts_its_record_of_the_tree_still_finds_new_files() {
    const OLD: u64 = 1_000_000_000;
    let repo = Repo::new();
    write_triangle(&repo);
    let tree = [
        "",
        "src",
        "src/a.ts",
        "src/b.ts",
        "src/c.ts",
        ".git/info/exclude",
    ];
    let age = || {
        for path in tree {
            let path = repo.path().join(path);
            if path.exists() {
                set_mtime(&path, OLD);
            }
        }
    };
    age();
    let daemon = Daemon::start(&repo);
    complete_status(&repo, &daemon);
    stop(daemon);
    // Walked again (starting made `.wit`, which moved the root): recorded with old mtimes.
    age();
    let daemon = Daemon::start(&repo);
    complete_status(&repo, &daemon);
    stop(daemon);
    let daemon = Daemon::start(&repo);
    let status = complete_status(&repo, &daemon);
    assert_eq!(
        (status["parsed"].clone(), status["files"].clone()),
        (json!(0), json!(3))
    );
    stop(daemon);

    repo.write(
        "src/f.ts",
        "import { b } from './b';\nexport function f() { return b(2); }\n",
    );
    set_mtime(&repo.path().join("src"), OLD + 10);
    let daemon = Daemon::start(&repo);
    assert_eq!(
        warned_callers(&repo, &["src/a.ts:a", "src/f.ts:f"], "src/b.ts:b"),
        ["src/a.ts:a", "src/f.ts:f"]
    );
    assert_eq!(complete_status(&repo, &daemon)["files"], json!(4));
    stop(daemon);
}

/// Issue 32.3: once its index is built, a started daemon rehearses an agent's first calls
/// (reads over its own socket, a new session's writes rolled back) and leaves nothing behind:
/// no session, lock or event of its own; an agent's first lock is then the first event.
#[test]
fn the_rehearsal_after_a_start_leaves_no_trace() {
    let repo = Repo::new();
    write_triangle(&repo);
    let mut daemon = Daemon::spawn_logging(
        repo.path(),
        &store_env(repo.path()),
        "warn,wit::daemon::warm_up=debug",
    );
    daemon.wait_ready();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = daemon.stderr_text();
        assert!(
            !log.contains("rehearsal stopped") && !log.contains("rehearsal failed"),
            "{log}"
        );
        if log.contains("rehearsed the first requests") {
            break;
        }
        assert!(Instant::now() < deadline, "never rehearsed: {log}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let client = repo.client();
    let rpc = |method: &str, params: Value| -> Value {
        block_on(client.call_raw(method, params)).unwrap()
    };
    assert_eq!(rpc("session.list", json!({})), json!([]));
    assert_eq!(rpc("lock.query", json!({})), json!([]));
    assert_eq!(rpc("events.poll", json!({"since": 0}))["events"], json!([]));
    block_on(async {
        client
            .lock_acquire(acquire("src/b.ts:b", "agent", None))
            .await
            .unwrap();
    });
    let events = rpc("events.poll", json!({"since": 0}))["events"].clone();
    let kinds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["lock.acquired"], "{events}");
    assert_eq!(events[0]["sessionId"], json!("agent"), "{events}");
    stop(daemon);
}
