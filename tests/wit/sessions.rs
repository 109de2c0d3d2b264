//! Sessions with a pulse, lock waits and events end to end (docs/protocol.md 5, 7, 8, 9), against
//! a real daemon through the generated client.

use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wit::client::WitClient;
use wit::protocol::{
    ErrorCode, EventsPollParams, EventsPollParamsTypesItem, EventsPollResult, IntentDeclareParams,
    LockAcquireParams, LockAcquireResult, RegisterParams, SessionEndParams, SessionHeartbeatParams,
};

use crate::harness::*;
use crate::locks::{acquire, assert_domain, assert_invalid_fields, query, release, rpc_error};

fn register(name: &str, session: &str, pid: Option<i64>, lease_ms: Option<i64>) -> RegisterParams {
    RegisterParams {
        name: name.into(),
        session_id: session.into(),
        pid,
        lease_ms,
    }
}

fn acquire_waiting(symbol: &str, session: &str, wait_ms: Option<i64>) -> LockAcquireParams {
    LockAcquireParams {
        wait_ms,
        ..acquire(symbol, session, None)
    }
}

/// `session` waits up to 20 s for `symbol`, on its own connection in a task.
fn spawn_wait(
    repo: &Repo,
    symbol: &'static str,
    session: &'static str,
) -> tokio::task::JoinHandle<Result<LockAcquireResult, wit::client::ClientError>> {
    let client = repo.client();
    tokio::spawn(async move {
        client
            .lock_acquire(acquire_waiting(symbol, session, Some(20_000)))
            .await
    })
}

fn poll(since: Option<i64>, wait_ms: Option<i64>) -> EventsPollParams {
    EventsPollParams {
        since,
        wait_ms,
        limit: Some(1000),
        types: Vec::new(),
    }
}

fn types_of(result: &EventsPollResult) -> Vec<String> {
    result.events.iter().map(|e| e.type_.to_string()).collect()
}

/// Polls until `done` says the events since `since` are complete, or 10 s pass.
async fn events_until(
    client: &WitClient,
    since: i64,
    done: impl Fn(&[String]) -> bool,
) -> EventsPollResult {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = client
            .events_poll(poll(Some(since), Some(500)))
            .await
            .unwrap();
        if done(&types_of(&got)) || Instant::now() > deadline {
            return got;
        }
    }
}

/// A child process that lives until killed.
fn sleeper() -> std::process::Child {
    Command::new("sleep")
        .arg("600")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_agent_loses_its_locks_and_intents_within_five_seconds() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    let mut agent = sleeper();
    block_on(async {
        let pid = i64::from(agent.id());
        client
            .register(register("doomed", "s1", Some(pid), None))
            .await
            .unwrap();
        client
            .lock_acquire(acquire_waiting("src/a.ts:f", "s1", None))
            .await
            .unwrap();
        let intent = client
            .intent_declare(IntentDeclareParams {
                session_id: "s1".into(),
                description: "work".into(),
                files: vec!["src/a.ts".into()],
                symbols: Vec::new(),
            })
            .await
            .unwrap();
        let since = client.events_poll(poll(Some(0), None)).await.unwrap().next;

        agent.kill().unwrap();
        agent.wait().unwrap();
        let killed = Instant::now();
        let got = events_until(&client, since, |t| t.iter().any(|t| t == "intent.updated")).await;
        let freed_after = killed.elapsed();
        assert_eq!(
            types_of(&got),
            ["session.reaped", "lock.released", "intent.updated"]
        );
        assert!(freed_after < Duration::from_secs(5), "{freed_after:?}");
        assert_eq!(got.events[0].subject, "s1");
        assert_eq!(got.events[2].subject, intent.intent_id);
        assert_eq!(got.events[2].data["to"], "abandoned");
        assert!(client.lock_query(query(None)).await.unwrap().is_empty());
        let sessions = client.session_list().await.unwrap();
        let s1 = sessions.iter().find(|s| s.session_id == "s1").unwrap();
        assert!(!s1.live);
        assert_eq!(s1.pid, None, "a reaped session keeps no pulse");
        // Another session can take the lock at once.
        client
            .lock_acquire(acquire_waiting("src/a.ts:f", "s2", None))
            .await
            .unwrap();
    });
}

/// Issue 31: a pid whose liveness the host cannot tell is never taken for dead. With the
/// daemon's process table answering "unknown" for every pid (`WIT_TEST_PROCESS_TABLE`), a
/// session whose process has exited is still live after several reap intervals, the list
/// says why and `wit doctor` says so in one line; the same steps without the knob reap it.
#[test]
fn an_exited_process_is_not_reaped_while_the_table_cannot_tell() {
    for unknown in [false, true] {
        let repo = Repo::new();
        let mut env = store_env(repo.path());
        if unknown {
            env.push(("WIT_TEST_PROCESS_TABLE", "unknown".into()));
        }
        let mut daemon = Daemon::spawn_with_env(&repo, &env);
        daemon.wait_ready();
        let client = repo.client();
        let mut agent = sleeper();
        let pid = i64::from(agent.id());
        let s1 = block_on(async {
            client
                .register(register("agent", "s1", Some(pid), None))
                .await
                .unwrap();
            agent.kill().unwrap();
            agent.wait().unwrap();
            // The daemon reaps about once a second: four intervals are plenty.
            let deadline = Instant::now() + Duration::from_secs(4);
            loop {
                let sessions = client.session_list().await.unwrap();
                let s1 = sessions.into_iter().find(|s| s.session_id == "s1").unwrap();
                if !s1.live || Instant::now() > deadline {
                    return s1;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        let doctor = Command::new(wit_bin())
            .arg("doctor")
            .current_dir(repo.path())
            .envs(store_env(repo.path()))
            .env_remove("WIT_TEST_PROCESS_TABLE")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&doctor.stdout).into_owned();
        let line = format!("cannot tell whether the process of s1 (pid {pid}) still runs");
        if unknown {
            assert!(
                s1.live,
                "taken for dead while the table cannot tell: {s1:?}"
            );
            assert_eq!(s1.pid_unknown, Some(true), "{s1:?}");
            assert_eq!(
                said.lines().filter(|l| l.contains(&line)).count(),
                1,
                "{said}"
            );
        } else {
            assert!(!s1.live, "the control: an exited process is reaped: {s1:?}");
            assert_eq!(s1.pid_unknown, None);
            assert!(!said.contains(&line), "{said}");
        }
        drop(daemon);
    }
}

#[test]
fn register_validates_pid_and_lease_and_lists_sessions() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let e = rpc_error(
            client
                .call_raw(
                    "register",
                    json!({"name": "a", "sessionId": "s", "pid": 0, "leaseMs": 10}),
                )
                .await,
        );
        assert_invalid_fields(&e, &["pid", "leaseMs"]);
        // A pid that does not exist (pid_max is at most 2^22 on Linux).
        let e = rpc_error(
            client
                .register(register("a", "s", Some(i64::from(i32::MAX)), None))
                .await,
        );
        assert_invalid_fields(&e, &["pid"]);
        let me = i64::from(std::process::id());
        let first = client
            .register(register("alice", "s1", Some(me), Some(60_000)))
            .await
            .unwrap();
        client
            .lock_acquire(acquire_waiting("a.ts:f", "s2", None))
            .await
            .unwrap();
        let list = client.session_list().await.unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].session_id, "s1");
        assert_eq!(list[0].name.as_deref(), Some("alice"));
        assert_eq!(list[0].agent_id, Some(first.agent_id));
        assert_eq!(list[0].pid, Some(me));
        assert!(list[0].live);
        assert_eq!((list[1].name.as_deref(), list[1].locks), (None, 1));
        assert!(list[1].last_seen_at > 0);

        let beat = client
            .session_heartbeat(SessionHeartbeatParams {
                session_id: "s1".into(),
            })
            .await
            .unwrap();
        assert!(beat.live);
        assert!(beat.lease_expires_at.is_some_and(|at| at.ends_with('Z')));
        let e = rpc_error(
            client
                .session_heartbeat(SessionHeartbeatParams {
                    session_id: "nobody".into(),
                })
                .await,
        );
        assert_domain(
            &e,
            ErrorCode::SessionNotFound,
            Some(json!({"sessionId": "nobody"})),
        );
        // Idempotent end; unknown sessions give zeros.
        let ended = client
            .session_end(SessionEndParams {
                session_id: "s2".into(),
            })
            .await
            .unwrap();
        assert_eq!((ended.locks_released, ended.intents_abandoned), (1, 0));
        for session in ["s2", "nobody"] {
            let again = client
                .session_end(SessionEndParams {
                    session_id: session.into(),
                })
                .await
                .unwrap();
            assert_eq!((again.locks_released, again.intents_abandoned), (0, 0));
        }
        let e = rpc_error(client.call_raw("session.end", json!({})).await);
        assert_invalid_fields(&e, &["sessionId"]);
        // Registering again replaces the pulse: no pid, no lease.
        client
            .register(register("alice", "s1", None, None))
            .await
            .unwrap();
        let list = client.session_list().await.unwrap();
        assert_eq!(list[0].pid, None);
    });
}

/// Registers each of `sessions` with a 1 s lease and a lock of its own (`a.ts:f`, `a.ts:g`).
async fn leased_lock_holders(client: &WitClient, sessions: [&str; 2]) {
    for (session, symbol) in sessions.into_iter().zip(["a.ts:f", "a.ts:g"]) {
        client
            .register(register(session, session, None, Some(1000)))
            .await
            .unwrap();
        client
            .lock_acquire(acquire_waiting(symbol, session, None))
            .await
            .unwrap();
    }
}

#[test]
fn a_lapsed_lease_is_reaped_and_heartbeats_keep_it() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        leased_lock_holders(&client, ["beating", "silent"]).await;
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(3500) {
            client
                .session_heartbeat(SessionHeartbeatParams {
                    session_id: "beating".into(),
                })
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let locks = client.lock_query(query(None)).await.unwrap();
        let holders: Vec<&str> = locks.iter().map(|l| l.session_id.as_str()).collect();
        assert_eq!(holders, ["beating"]);
    });
}

/// docs/protocol.md 7.2: the `sessionId` of every method is a sign of life, tool-call windows
/// and `work.changes` included: a session that only opens and closes windows keeps its lease;
/// one that does nothing (the control) is reaped with its lock.
#[test]
fn tool_call_windows_are_signs_of_life() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        leased_lock_holders(&client, ["windows", "silent"]).await;
        let started = Instant::now();
        let mut round = 0;
        while started.elapsed() < Duration::from_millis(3500) {
            round += 1;
            if round % 3 == 0 {
                client
                    .work_changes(wit::protocol::WorkChangesParams {
                        session_id: Some("windows".into()),
                        files: Vec::new(),
                    })
                    .await
                    .unwrap();
            } else {
                let window = client
                    .work_begin(wit::protocol::WorkBeginParams {
                        session_id: "windows".into(),
                        tool: "Bash".into(),
                        file: None,
                        edits: Vec::new(),
                        ttl_ms: None,
                    })
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(100)).await;
                client
                    .work_end(wit::protocol::WorkEndParams {
                        session_id: "windows".into(),
                        window_id: window.window_id,
                    })
                    .await
                    .unwrap();
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let locks = client.lock_query(query(None)).await.unwrap();
        let holders: Vec<&str> = locks.iter().map(|l| l.session_id.as_str()).collect();
        assert_eq!(holders, ["windows"]);
    });
}

#[test]
fn three_waiters_are_served_in_arrival_order() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let held = client
            .lock_acquire(acquire_waiting("a.ts:f", "holder", None))
            .await
            .unwrap();
        let mut waiters = Vec::new();
        for session in ["w1", "w2", "w3"] {
            waiters.push(spawn_wait(&repo, "a.ts:f", session));
            // Arrival order is the order the daemon queues them in.
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        let mut tokens = vec![held.token];
        let mut previous = "holder".to_string();
        for (waiter, session) in waiters.into_iter().zip(["w1", "w2", "w3"]) {
            client
                .lock_release(release("a.ts:f", &previous))
                .await
                .unwrap();
            let got: LockAcquireResult = waiter.await.unwrap().unwrap();
            assert_eq!(got.session_id, session);
            tokens.push(got.token);
            previous = session.to_string();
        }
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
        // A refresh keeps the token.
        let again = client
            .lock_acquire(acquire_waiting("a.ts:f", "w3", None))
            .await
            .unwrap();
        assert_eq!(again.token, tokens[3]);
        let records = client.lock_query(query(None)).await.unwrap();
        assert_eq!(records[0].token, tokens[3]);
    });
}

#[test]
fn the_hand_over_lets_no_third_party_slip_in() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        client
            .lock_acquire(acquire_waiting("a.ts:f", "holder", None))
            .await
            .unwrap();
        let waiter = spawn_wait(&repo, "a.ts:f", "waiter");
        tokio::time::sleep(Duration::from_millis(150)).await;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hammer = {
            let client = repo.client();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut won = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    if client
                        .lock_acquire(acquire_waiting("a.ts:f", "intruder", None))
                        .await
                        .is_ok()
                    {
                        won += 1;
                    }
                }
                won
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let released_at = Instant::now();
        client
            .lock_release(release("a.ts:f", "holder"))
            .await
            .unwrap();
        let got = waiter.await.unwrap().unwrap();
        let handover = released_at.elapsed();
        assert_eq!(got.session_id, "waiter");
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(hammer.await.unwrap(), 0, "the intruder never got the lock");
        assert!(handover < Duration::from_secs(2), "{handover:?}");
    });
}

#[test]
fn a_two_session_deadlock_is_refused_with_its_cycle() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        client
            .lock_acquire(acquire_waiting("x.ts:f", "a", None))
            .await
            .unwrap();
        client
            .lock_acquire(acquire_waiting("y.ts:f", "b", None))
            .await
            .unwrap();
        let b_waits = spawn_wait(&repo, "x.ts:f", "b");
        tokio::time::sleep(Duration::from_millis(150)).await;
        let started = Instant::now();
        let e = rpc_error(
            client
                .lock_acquire(acquire_waiting("y.ts:f", "a", Some(20_000)))
                .await,
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "refused at once"
        );
        assert!(e.is(ErrorCode::LockConflict), "{e:?}");
        let data = e.data.unwrap();
        assert_eq!(data["heldBy"], "b");
        assert_eq!(data["cycle"], json!(["a", "b"]));
        // a gives up x: b's wait ends with the lock.
        client.lock_release(release("x.ts:f", "a")).await.unwrap();
        assert_eq!(b_waits.await.unwrap().unwrap().session_id, "b");
    });
}

#[test]
fn a_wait_times_out_as_lock_conflict_and_a_closed_waiter_leaves_the_queue() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        client
            .lock_acquire(acquire_waiting("a.ts:f", "holder", Some(0)))
            .await
            .unwrap();
        let started = Instant::now();
        let e = rpc_error(
            client
                .lock_acquire(acquire_waiting("a.ts:f", "patient", Some(300)))
                .await,
        );
        let waited = started.elapsed();
        assert!(e.is(ErrorCode::LockConflict));
        assert_eq!(e.data.as_ref().unwrap()["heldBy"], "holder");
        assert!(e.data.as_ref().unwrap().get("cycle").is_none());
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        let e = rpc_error(
            client
                .call_raw(
                    "lock.acquire",
                    json!({"symbolPath": "a.ts:f", "sessionId": "s", "waitMs": 600_001}),
                )
                .await,
        );
        assert_invalid_fields(&e, &["waitMs"]);
    });
    // A raw connection sends a waiting acquire, then closes.
    let body = json!({"jsonrpc": "2.0", "witVersion": "1", "id": 1, "method": "lock.acquire",
        "params": {"symbolPath": "a.ts:f", "sessionId": "gone", "waitMs": 60_000}})
    .to_string();
    let mut stream = UnixStream::connect(repo.socket()).unwrap();
    write_request(&mut stream, "POST", "/rpc", body.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    drop(stream);
    std::thread::sleep(Duration::from_millis(200));
    block_on(async {
        client
            .lock_release(release("a.ts:f", "holder"))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let locks = client.lock_query(query(None)).await.unwrap();
        assert!(
            locks.is_empty(),
            "the departed waiter holds nothing: {locks:?}"
        );
    });
}

#[test]
fn events_poll_waits_wakes_filters_and_validates() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        // Without since: only what comes after the call.
        client
            .register(register("a", "s1", None, None))
            .await
            .unwrap();
        let empty = client.events_poll(poll(None, None)).await.unwrap();
        assert!(empty.events.is_empty());
        assert_eq!(empty.next, 1);
        assert!(!empty.gap);

        let poller = {
            let client = repo.client();
            tokio::spawn(async move {
                let started = Instant::now();
                let got = client.events_poll(poll(Some(1), Some(10_000))).await;
                (got, started.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        client
            .lock_acquire(acquire_waiting("a.ts:f", "s1", None))
            .await
            .unwrap();
        let (got, took) = poller.await.unwrap();
        let got = got.unwrap();
        assert_eq!(types_of(&got), ["lock.acquired"]);
        assert!(
            took < Duration::from_secs(5),
            "woken by the change: {took:?}"
        );
        let event = &got.events[0];
        assert_eq!(event.seq, 2);
        assert_eq!(event.subject, "a.ts:f");
        assert_eq!(event.session_id.as_deref(), Some("s1"));
        assert!(event.data["expiresAt"].as_str().is_some());
        assert_eq!(got.next, 2);

        // A wait that sees nothing answers empty when its time is up.
        let started = Instant::now();
        let none = client.events_poll(poll(Some(2), Some(200))).await.unwrap();
        assert!(none.events.is_empty() && started.elapsed() >= Duration::from_millis(200));

        client.lock_release(release("a.ts:f", "s1")).await.unwrap();
        let filtered = client
            .events_poll(EventsPollParams {
                since: Some(0),
                wait_ms: None,
                limit: None,
                types: vec![EventsPollParamsTypesItem::LockReleased],
            })
            .await
            .unwrap();
        assert_eq!(types_of(&filtered), ["lock.released"]);
        assert_eq!(filtered.next, 3);
        let limited = client
            .events_poll(EventsPollParams {
                since: Some(0),
                wait_ms: None,
                limit: Some(1),
                types: Vec::new(),
            })
            .await
            .unwrap();
        assert_eq!((limited.events.len(), limited.next), (1, 1));

        let e = rpc_error(
            client
                .call_raw(
                    "events.poll",
                    json!({"since": -1, "waitMs": 60_001, "limit": 1001, "types": ["nope"]}),
                )
                .await,
        );
        assert_invalid_fields(&e, &["since", "waitMs", "limit", "types"]);
    });
}

#[test]
fn every_acknowledged_change_has_its_event_after_sigkill_and_restart() {
    let repo = Repo::new();
    let mut daemon = Daemon::start(&repo);
    let client = repo.client();
    let acknowledged = block_on(async {
        let mut acknowledged = Vec::new();
        for i in 0..40 {
            let symbol = format!("a.ts:f{}", i % 5);
            let session = format!("s{}", i % 3);
            if client
                .lock_acquire(acquire_waiting(&symbol, &session, None))
                .await
                .is_ok()
            {
                acknowledged.push(symbol.clone());
            }
            let _ = client.lock_release(release(&symbol, &session)).await;
        }
        acknowledged
    });
    daemon.kill9();
    let _daemon = Daemon::start(&repo);
    block_on(async {
        let events = client.events_poll(poll(Some(0), None)).await.unwrap();
        let acquired: Vec<&str> = events
            .events
            .iter()
            .filter(|e| e.type_.to_string() == "lock.acquired")
            .map(|e| e.subject.as_str())
            .collect();
        assert_eq!(acquired, acknowledged);
        let seqs: Vec<i64> = events.events.iter().map(|e| e.seq).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    });
}

#[test]
fn events_older_than_retention_leave_a_gap() {
    if shared_store_skips("old events written into state.db") {
        return;
    }
    let repo = Repo::new();
    let mut daemon = Daemon::start(&repo);
    daemon.terminate();
    // 10,100 events from a month ago, written straight into the state database.
    {
        let db = rusqlite::Connection::open(repo.path().join(".wit/state.db")).unwrap();
        let old = 1_700_000_000_000i64;
        db.execute_batch("BEGIN").unwrap();
        for i in 0..10_100 {
            db.execute(
                "INSERT INTO events (at_ms, type, session_id, subject, data) \
                 VALUES (?1, 'lock.acquired', 's', 'a.ts:f', '{}')",
                [old + i],
            )
            .unwrap();
        }
        db.execute_batch("COMMIT").unwrap();
    }
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let deadline = Instant::now() + Duration::from_secs(10);
        let page = loop {
            let page = client.events_poll(poll(Some(0), None)).await.unwrap();
            if page.gap || Instant::now() > deadline {
                break page;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(page.gap, "100 old events were pruned");
        assert_eq!(page.events[0].seq, 101, "starts at the oldest kept");
        let later = client.events_poll(poll(Some(100), None)).await.unwrap();
        assert!(!later.gap);
    });
}

#[test]
fn sigterm_answers_waiting_requests_at_once() {
    let repo = Repo::new();
    let mut daemon = Daemon::start(&repo);
    let client = repo.client();
    let (lock_wait, poll_wait) = block_on(async {
        client
            .lock_acquire(acquire_waiting("a.ts:f", "holder", None))
            .await
            .unwrap();
        let lock_wait = {
            let client = repo.client();
            std::thread::spawn(move || {
                block_on(async move {
                    client
                        .lock_acquire(acquire_waiting("a.ts:f", "waiter", Some(60_000)))
                        .await
                })
            })
        };
        let poll_wait = {
            let client = repo.client();
            std::thread::spawn(move || {
                block_on(async move { client.events_poll(poll(None, Some(60_000))).await })
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        (lock_wait, poll_wait)
    });
    let started = Instant::now();
    let status = daemon.terminate();
    assert!(status.success());
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "shutdown was not held up"
    );
    let e = rpc_error(lock_wait.join().unwrap());
    assert!(e.is(ErrorCode::LockConflict), "{e:?}");
    let polled = poll_wait.join().unwrap().unwrap();
    assert!(polled.events.is_empty());
    // Restarted, the lock is still the holder's: nothing was half handed.
    let _daemon = Daemon::start(&repo);
    block_on(async {
        let locks = client.lock_query(query(None)).await.unwrap();
        assert_eq!(locks.len(), 1);
        assert_eq!(locks[0].session_id, "holder");
    });
}

#[test]
fn the_pid_file_is_the_bare_pid() {
    let repo = Repo::new();
    let daemon = Daemon::start(&repo);
    let text = std::fs::read_to_string(repo.path().join(".wit/daemon.pid")).unwrap();
    // What the earlier implementation's CLI does: a plain integer parse.
    assert!(text.ends_with('\n'));
    let pid: u32 = text.trim_end().parse().unwrap();
    assert_eq!(pid, daemon.child.id());
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join(".wit/daemon.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(info["pid"], pid);
    assert!(info["version"].is_string());
}

#[test]
fn two_hundred_waiters_take_turns_and_exclusion_holds() {
    const CLIENTS: usize = 200;
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let since = repo
            .client()
            .events_poll(poll(None, None))
            .await
            .unwrap()
            .next;
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(CLIENTS));
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..CLIENTS {
            let client = repo.client();
            let barrier = barrier.clone();
            tasks.spawn(async move {
                client.ping().await.unwrap();
                let session = format!("turn-{i}");
                barrier.wait().await;
                let got = client
                    .lock_acquire(acquire_waiting("src/turns.ts:f", &session, Some(120_000)))
                    .await
                    .unwrap();
                assert_eq!(got.session_id, session);
                // While it is ours, nobody else holds it.
                let held = client.lock_query(query(None)).await.unwrap();
                assert_eq!(held.len(), 1);
                assert_eq!(held[0].session_id, session);
                client
                    .lock_release(release("src/turns.ts:f", &session))
                    .await
                    .unwrap();
                got.token
            });
        }
        let mut tokens = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            tokens.push(joined.unwrap());
        }
        tokens.sort_unstable();
        tokens.dedup();
        assert_eq!(tokens.len(), CLIENTS, "every acquisition has its own token");
        // The log alternates acquired/released, one holder at a time.
        let client = repo.client();
        let mut kinds = Vec::new();
        let mut next = since;
        loop {
            let page = client.events_poll(poll(Some(next), None)).await.unwrap();
            if page.events.is_empty() {
                break;
            }
            next = page.next;
            kinds.extend(
                page.events
                    .into_iter()
                    .map(|e| (e.type_.to_string(), e.session_id)),
            );
        }
        assert_eq!(kinds.len(), 2 * CLIENTS);
        for pair in kinds.chunks(2) {
            assert_eq!(pair[0].0, "lock.acquired");
            assert_eq!(pair[1].0, "lock.released");
            assert_eq!(pair[0].1, pair[1].1);
        }
    });
}

#[test]
fn reaps_hand_locks_to_waiters_under_load() {
    const AGENTS: usize = 20;
    const WAITERS_PER_LOCK: usize = 5;
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let mut agents: Vec<_> = (0..AGENTS).map(|_| sleeper()).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = repo.client();
        for (a, agent) in agents.iter().enumerate() {
            let session = format!("agent-{a}");
            client
                .register(register(
                    "agent",
                    &session,
                    Some(i64::from(agent.id())),
                    None,
                ))
                .await
                .unwrap();
            client
                .lock_acquire(acquire_waiting(&format!("src/r.ts:f{a}"), &session, None))
                .await
                .unwrap();
        }
        let mut tasks = tokio::task::JoinSet::new();
        for a in 0..AGENTS {
            for w in 0..WAITERS_PER_LOCK {
                let client = repo.client();
                tasks.spawn(async move {
                    let symbol = format!("src/r.ts:f{a}");
                    let session = format!("waiter-{a}-{w}");
                    let got = client
                        .lock_acquire(acquire_waiting(&symbol, &session, Some(60_000)))
                        .await
                        .unwrap();
                    assert_eq!(got.session_id, session);
                    client
                        .lock_release(release(&symbol, &session))
                        .await
                        .unwrap();
                });
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let killed = Instant::now();
        for agent in &mut agents {
            agent.kill().unwrap();
            agent.wait().unwrap();
        }
        while let Some(joined) = tasks.join_next().await {
            joined.unwrap();
        }
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "{:?}",
            killed.elapsed()
        );
        assert!(client.lock_query(query(None)).await.unwrap().is_empty());
        let sessions = client.session_list().await.unwrap();
        assert!(sessions
            .iter()
            .filter(|s| s.session_id.starts_with("agent-"))
            .all(|s| !s.live));
    });
}
