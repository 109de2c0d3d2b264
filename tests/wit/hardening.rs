//! Issue 20 (hardening): each item's regression test, against a real daemon.

use serde_json::{json, Value};

use crate::harness::*;

/// One JSON-RPC call over a fresh connection: the HTTP status and the parsed answer.
fn call(repo: &Repo, method: &str, params: Value) -> (u16, Value) {
    let request =
        json!({"jsonrpc": "2.0", "witVersion": "1", "id": 1, "method": method, "params": params});
    let (status, body) = post(&repo.socket(), &request.to_string());
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (status, answer)
}

/// Item 8: the largest `since` is an ordinary position past every event, not a gap.
#[test]
fn events_poll_at_the_largest_since_reports_no_gap() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let (_, registered) = call(&repo, "register", json!({"name": "a", "sessionId": "s1"}));
    assert!(registered.get("result").is_some(), "{registered}");
    let (status, answer) = call(&repo, "events.poll", json!({"since": i64::MAX}));
    assert_eq!(status, 200, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["gap"], json!(false), "{answer}");
    assert_eq!(result["events"], json!([]), "{answer}");
    assert_eq!(result["next"], json!(i64::MAX), "{answer}");
}

/// A daemon started with extra command-line arguments; killed when dropped.
struct ArgDaemon(std::process::Child);

impl ArgDaemon {
    fn start(repo: &Repo, args: &[&str], env: &[(&str, String)]) -> ArgDaemon {
        let child = std::process::Command::new(wit_bin())
            .args(["daemon", "run", "--log-level", "warn", "--repo"])
            .arg(repo.path())
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env_remove("WIT_STORE")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while try_post(&repo.socket(), PING).map(|(s, _)| s).ok() != Some(200) {
            assert!(
                std::time::Instant::now() < deadline,
                "the daemon did not answer"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        ArgDaemon(child)
    }
}

impl Drop for ArgDaemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Item 7: `wit daemon run --store URL` keeps the URL (and its password) off its command line
/// for its whole life: what `ps` shows. Against PostgreSQL when the suite has one, else with
/// `sqlite` (the flag must leave the command line all the same).
#[test]
fn daemon_run_keeps_the_store_url_off_its_command_line() {
    let repo = Repo::new();
    let url = std::env::var("WIT_TEST_STORE")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "sqlite".into());
    // The project only (the URL comes from the flag).
    let env: Vec<(&str, String)> = store_env(repo.path())
        .into_iter()
        .filter(|(k, _)| *k == "WIT_PROJECT")
        .collect();
    let daemon = ArgDaemon::start(&repo, &["--store", &url], &env);
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", daemon.0.id())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(!cmdline.contains("--store"), "{cmdline}");
    assert!(!cmdline.contains(&url), "{cmdline}");
    let (_, status) = call(&repo, "ping", json!({}));
    assert_eq!(status["result"], "pong");
}

/// Item 7: a password with an unencoded `/` (or `?`) is never printed: not by `daemon run`,
/// not by `daemon start`, not in the daemon's log.
#[test]
fn a_password_with_a_slash_is_never_printed() {
    let repo = Repo::new();
    for url in [
        "postgres://wit:se/cr3t@127.0.0.1:9/db",
        "postgresql://wit:se?cr3t@127.0.0.1:9/db?connect_timeout=1",
    ] {
        for (command, flag) in [("run", "--store"), ("start", "--store")] {
            let output = std::process::Command::new(wit_bin())
                .args(["daemon", command, flag, url, "--repo"])
                .arg(repo.path())
                .env_remove("WIT_STORE")
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert!(!output.status.success(), "{command} {url}");
            let printed = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(printed.contains("***"), "{printed}");
            assert!(!printed.contains("cr3t"), "{command} {url}: {printed}");
        }
        let log = std::fs::read_to_string(repo.path().join(".wit/daemon.log")).unwrap_or_default();
        assert!(!log.contains("cr3t"), "{log}");
    }
}
