//! Several daemons on one PostgreSQL database (docs/protocol.md 12), black-box: two clones of
//! one repository, a daemon on each (playing two hosts), one store.
//!
//! These tests need a server: `WIT_TEST_STORE` must be a `postgres://` URL (CI sets it; see
//! `.ci/run`). Without one each test says so and passes without checking anything.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{post, try_post, Daemon, Repo};

/// The PostgreSQL URL under test, or `None` (with the reason printed) when there is none.
fn server() -> Option<String> {
    match std::env::var("WIT_TEST_STORE") {
        Ok(url) if url.starts_with("postgres") => Some(url),
        _ => {
            eprintln!("skipped: no PostgreSQL (set WIT_TEST_STORE to a postgres:// URL)");
            None
        }
    }
}

/// A project name no other test (or earlier run) uses.
fn fresh_project(tag: &str) -> String {
    format!("shared-{tag}-{}", uuid::Uuid::new_v4())
}

/// A daemon on `repo` sharing `url`'s `project`, as host `host`.
fn daemon(repo: &Repo, url: &str, project: &str, host: &str) -> Daemon {
    let mut daemon = Daemon::spawn_with_env(
        repo,
        &[
            ("WIT_STORE", url.to_owned()),
            ("WIT_PROJECT", project.to_owned()),
            ("WIT_HOST_ID", host.to_owned()),
        ],
    );
    daemon.wait_ready();
    daemon
}

/// One JSON-RPC call on a fresh connection: the `result`, or the `error` object as `Err`.
fn call(socket: &Path, method: &str, params: Value) -> Result<Value, Value> {
    let body = json!({"jsonrpc": "2.0", "witVersion": "1", "id": 1, "method": method,
                      "params": params});
    let (_, text) = post(socket, &body.to_string());
    let answer: Value = serde_json::from_str(&text).unwrap();
    match answer.get("error") {
        Some(error) => Err(error.clone()),
        None => Ok(answer["result"].clone()),
    }
}

/// The symbol paths of every live lock, as `lock.query` through `socket` lists them.
fn locked_symbols(socket: &Path) -> std::collections::HashSet<String> {
    let locks = call(socket, "lock.query", json!({})).unwrap();
    locks
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["symbolPath"].as_str().map(str::to_owned))
        .collect()
}

/// Two clones of one repository with a daemon each on one project.
struct Pair {
    a: Daemon,
    b: Daemon,
    _repos: [Repo; 2],
}

fn pair(url: &str, tag: &str) -> Pair {
    let project = fresh_project(tag);
    let repos = [Repo::new(), Repo::new()];
    for repo in &repos {
        repo.write("src/a.ts", "export function f() { return 1; }\n");
    }
    let a = daemon(&repos[0], url, &project, "host-a");
    let b = daemon(&repos[1], url, &project, "host-b");
    Pair {
        a,
        b,
        _repos: repos,
    }
}

#[test]
fn racing_acquires_through_two_daemons_have_exactly_one_winner_per_round() {
    let Some(url) = server() else { return };
    let pair = pair(&url, "race");
    let sockets = [pair.a.socket.clone(), pair.b.socket.clone()];
    for round in 0..5 {
        let symbol = format!("src/a.ts:f{round}");
        let barrier = Arc::new(Barrier::new(200));
        let winners = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..200)
            .map(|i| {
                let socket = sockets[i % 2].clone();
                let (barrier, winners, symbol) =
                    (Arc::clone(&barrier), Arc::clone(&winners), symbol.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let session = format!("c{i}");
                    let params = json!({"symbolPath": symbol, "sessionId": session});
                    match call(&socket, "lock.acquire", params) {
                        Ok(_) => winners.lock().unwrap().push(session),
                        Err(error) => assert_eq!(error["message"], "LOCK_CONFLICT", "{error}"),
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let winners = winners.lock().unwrap().clone();
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        for socket in &sockets {
            let locks = call(socket, "lock.query", json!({})).unwrap();
            let holder = locks
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["symbolPath"] == symbol.as_str())
                .map(|l| l["sessionId"].clone());
            assert_eq!(holder, Some(json!(winners[0])), "round {round}");
        }
    }
}

#[test]
fn a_waiter_on_one_daemon_is_handed_the_lock_released_on_the_other() {
    let Some(url) = server() else { return };
    let pair = pair(&url, "handover");
    let first = call(
        &pair.a.socket,
        "lock.acquire",
        json!({"symbolPath": "src/a.ts:f", "sessionId": "s1"}),
    )
    .unwrap();
    let socket_b = pair.b.socket.clone();
    let waiter = std::thread::spawn(move || {
        call(
            &socket_b,
            "lock.acquire",
            json!({"symbolPath": "src/a.ts:f", "sessionId": "s2", "waitMs": 20_000}),
        )
    });
    // The waiter is queued when the store has its row: wait for it through a's view.
    std::thread::sleep(Duration::from_millis(300));
    call(
        &pair.a.socket,
        "lock.release",
        json!({"symbolPath": "src/a.ts:f", "sessionId": "s1"}),
    )
    .unwrap();
    let granted = waiter.join().unwrap().expect("the waiter gets the lock");
    assert_eq!(granted["sessionId"], "s2");
    assert!(
        granted["token"].as_i64() > first["token"].as_i64(),
        "{granted}"
    );
    let locks = call(&pair.a.socket, "lock.query", json!({})).unwrap();
    assert_eq!(locks[0]["sessionId"], "s2", "{locks}");
}

#[test]
fn events_from_both_daemons_are_in_one_seq_order_and_wake_pollers_on_either() {
    let Some(url) = server() else { return };
    let pair = pair(&url, "events");
    let start = call(&pair.b.socket, "events.poll", json!({"since": 0}))
        .unwrap()
        .get("next")
        .cloned()
        .unwrap();
    // A poller on b waits; a change through a wakes it.
    let socket_b = pair.b.socket.clone();
    let since = start.clone();
    let poller = std::thread::spawn(move || {
        call(
            &socket_b,
            "events.poll",
            json!({"since": since, "waitMs": 20_000}),
        )
        .unwrap()
    });
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    call(
        &pair.a.socket,
        "lock.acquire",
        json!({"symbolPath": "src/a.ts:f", "sessionId": "s1"}),
    )
    .unwrap();
    let woken = poller.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "woken by the change"
    );
    assert_eq!(woken["events"][0]["type"], "lock.acquired", "{woken}");
    for i in 0..6 {
        let socket = if i % 2 == 0 {
            &pair.a.socket
        } else {
            &pair.b.socket
        };
        call(
            socket,
            "intent.declare",
            json!({"sessionId": format!("s{i}"), "description": "d", "files": ["src/a.ts"]}),
        )
        .unwrap();
    }
    let from_a = call(&pair.a.socket, "events.poll", json!({"since": start})).unwrap();
    let from_b = call(&pair.b.socket, "events.poll", json!({"since": start})).unwrap();
    assert_eq!(from_a, from_b);
    let seqs: Vec<i64> = from_a["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs.len(), 7, "{from_a}");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

#[test]
fn a_killed_daemon_loses_no_acknowledged_write_and_its_host_sessions_are_reaped_after_30s() {
    let Some(url) = server() else { return };
    let mut pair = pair(&url, "kill");
    // An agent process on host-a, registered through a's daemon.
    let mut agent = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    call(
        &pair.a.socket,
        "register",
        json!({"name": "agent", "sessionId": "agent-a", "pid": agent.id()}),
    )
    .unwrap();
    call(
        &pair.a.socket,
        "lock.acquire",
        json!({"symbolPath": "src/a.ts:held", "sessionId": "agent-a"}),
    )
    .unwrap();
    // Load through a; the daemon dies in the middle of it.
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let loaders: Vec<_> = (0..4)
        .map(|t| {
            let (socket, acknowledged, stop) = (
                pair.a.socket.clone(),
                Arc::clone(&acknowledged),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let symbol = format!("src/a.ts:k{t}_{i}");
                    let body = json!({"jsonrpc": "2.0", "witVersion": "1", "id": 1,
                        "method": "lock.acquire",
                        "params": {"symbolPath": symbol, "sessionId": format!("load{t}")}});
                    match try_post(&socket, &body.to_string()) {
                        Ok((200, text)) if text.contains("\"result\"") => {
                            acknowledged.lock().unwrap().push(symbol);
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(700));
    pair.a.kill9();
    stop.store(true, Ordering::Relaxed);
    for loader in loaders {
        loader.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(!acknowledged.is_empty());
    let present = locked_symbols(&pair.b.socket);
    for symbol in &acknowledged {
        assert!(
            present.contains(symbol.as_str()),
            "{symbol} was acknowledged"
        );
    }
    // b cannot see host-a's processes; it waits for host-a's 30 s of silence.
    let killed_at = Instant::now();
    let live = |socket: &Path| -> Option<bool> {
        let sessions = call(socket, "session.list", json!({})).unwrap();
        sessions
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == "agent-a")
            .map(|s| s["live"].as_bool().unwrap_or(false))
    };
    std::thread::sleep(Duration::from_secs(15));
    assert_eq!(live(&pair.b.socket), Some(true), "still live 15 s after");
    let reaped = loop {
        let locks = call(
            &pair.b.socket,
            "lock.query",
            json!({"sessionId": "agent-a"}),
        )
        .unwrap();
        if locks.as_array().unwrap().is_empty() {
            break killed_at.elapsed();
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(60),
            "never reaped"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(reaped >= Duration::from_secs(25), "reaped after {reaped:?}");
    assert_eq!(live(&pair.b.socket), Some(false));
    let _ = agent.kill();
    let _ = agent.wait();
}

/// A TCP proxy in front of the server that the test can cut and restore (what a database
/// restart or a network outage looks like to the daemon).
struct Proxy {
    port: u16,
    up: Arc<AtomicBool>,
    generation: Arc<AtomicUsize>,
}

impl Proxy {
    fn start(target: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let generation = Arc::new(AtomicUsize::new(0));
        let (up2, generation2) = (Arc::clone(&up), Arc::clone(&generation));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !up2.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let born = generation2.load(Ordering::SeqCst);
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let (up, generation) = (Arc::clone(&up2), Arc::clone(&generation2));
                    std::thread::spawn(move || {
                        let _ = from.set_read_timeout(Some(Duration::from_millis(100)));
                        let mut buffer = [0u8; 16384];
                        loop {
                            if !up.load(Ordering::SeqCst)
                                || generation.load(Ordering::SeqCst) != born
                            {
                                break;
                            }
                            match from.read(&mut buffer) {
                                Ok(0) => break,
                                Ok(n) => {
                                    if to.write_all(&buffer[..n]).is_err() {
                                        break;
                                    }
                                }
                                Err(e)
                                    if e.kind() == std::io::ErrorKind::WouldBlock
                                        || e.kind() == std::io::ErrorKind::TimedOut
                                        || e.kind() == std::io::ErrorKind::Interrupted => {}
                                Err(_) => break,
                            }
                        }
                        let _ = from.shutdown(std::net::Shutdown::Both);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy {
            port,
            up,
            generation,
        }
    }

    /// Cuts every connection and refuses new ones.
    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

/// `url` with its host and port replaced by the proxy's, or `None` for a socket URL.
fn through_proxy(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let (authority, path) = rest.split_at(rest.find('/')?);
    let (user, host_port) = match authority.rsplit_once('@') {
        Some((user, host)) => (format!("{user}@"), host),
        None => (String::new(), authority),
    };
    if host_port.is_empty() || path.contains("host=") {
        return None;
    }
    let target = if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:5432")
    };
    Some((format!("{scheme}://{user}127.0.0.1:{{port}}{path}"), target))
}

#[test]
fn an_outage_under_load_gives_clear_errors_ping_still_answers_and_nothing_acknowledged_is_lost() {
    let Some(url) = server() else { return };
    let Some((template, target)) = through_proxy(&url) else {
        eprintln!("skipped: WIT_TEST_STORE is not a TCP URL, the outage test needs one");
        return;
    };
    let proxy = Proxy::start(target);
    let proxied = template.replace("{port}", &proxy.port.to_string());
    let repo = Repo::new();
    repo.write("src/a.ts", "export function f() { return 1; }\n");
    let project = fresh_project("outage");
    let daemon = daemon(&repo, &proxied, &project, "host-a");
    let acquire = |symbol: &str| {
        call(
            &daemon.socket,
            "lock.acquire",
            json!({"symbolPath": symbol, "sessionId": "s1"}),
        )
    };
    acquire("src/a.ts:before").unwrap();
    // Load through the outage: every acquire that was acknowledged must be there after it.
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let loaders: Vec<_> = (0..2)
        .map(|t| {
            let (socket, acknowledged, stop) = (
                daemon.socket.clone(),
                Arc::clone(&acknowledged),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                let mut errors = 0usize;
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let symbol = format!("src/a.ts:load{t}_{i}");
                    let params = json!({"symbolPath": symbol, "sessionId": format!("load{t}")});
                    match call(&socket, "lock.acquire", params) {
                        Ok(_) => acknowledged.lock().unwrap().push(symbol),
                        Err(error) => {
                            assert_eq!(error["code"], -32603, "{error}");
                            errors += 1;
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                }
                errors
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    proxy.cut();
    let started = Instant::now();
    let error = acquire("src/a.ts:during").unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "answered in time"
    );
    assert_eq!(error["code"], -32603, "{error}");
    let reason = error["data"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("store"), "{error}");
    if let Some((_, after_scheme)) = url.split_once("://") {
        if let Some((user_info, _)) = after_scheme.split_once('@') {
            if let Some((_, password)) = user_info.split_once(':') {
                assert!(!error.to_string().contains(password), "{error}");
            }
        }
    }
    let pong = call(&daemon.socket, "ping", json!({})).unwrap();
    assert!(pong.to_string().contains("pong"), "{pong}");
    proxy.restore();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match acquire("src/a.ts:after") {
            Ok(_) => break,
            Err(error) => {
                assert!(Instant::now() < deadline, "never recovered: {error}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let errors: usize = loaders.into_iter().map(|l| l.join().unwrap()).sum();
    assert!(errors > 0, "the load met the outage");
    let present = locked_symbols(&daemon.socket);
    for symbol in acknowledged.lock().unwrap().iter() {
        assert!(
            present.contains(symbol.as_str()),
            "{symbol} was acknowledged"
        );
    }
    assert!(present.contains("src/a.ts:before"), "{present:?}");
    assert!(present.contains("src/a.ts:after"), "{present:?}");
    assert!(!present.contains("src/a.ts:during"), "{present:?}");
}
