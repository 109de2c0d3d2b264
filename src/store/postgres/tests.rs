//! Tests of the PostgreSQL backend. They need a server: `WIT_TEST_POSTGRES` names a database
//! they may use (CI always sets it). Without it each test says so and passes. Every test
//! works in its own random project, so they run in parallel on one database.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::store::{
    CommitListener, Contract, ContractStatus, DaemonBeat, Intent, IntentFilter, IntentRange,
    IntentStatus, Lock, NewEvent, NewWaiter,
};

/// The test database, or `None` (and a clear message) when there is none.
fn server() -> Option<String> {
    match std::env::var("WIT_TEST_POSTGRES") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            eprintln!("skipped: no PostgreSQL (set WIT_TEST_POSTGRES)");
            None
        }
    }
}

/// The test database's URL, or return from the test.
macro_rules! pg_or_skip {
    () => {
        match server() {
            Some(url) => url,
            None => return,
        }
    };
}

fn project() -> String {
    format!("test-{}", uuid::Uuid::new_v4())
}

/// What a store's listener heard.
#[derive(Default)]
struct Heard {
    state: Mutex<(Vec<i64>, usize)>,
    changed: Condvar,
}

impl Heard {
    /// Waits (at most 20 s, then fails) until `done` holds for (event seqs, grants).
    fn wait_until(&self, what: &str, done: impl Fn(&[i64], usize) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut state = self.state.lock().unwrap();
        while !done(&state.0, state.1) {
            let now = Instant::now();
            assert!(now < deadline, "never heard {what}: {:?}", state);
            state = self.changed.wait_timeout(state, deadline - now).unwrap().0;
        }
    }

    fn grants(&self) -> usize {
        self.state.lock().unwrap().1
    }
}

struct Recorder(Arc<Heard>);

impl CommitListener for Recorder {
    fn events_committed(&self, newest_seq: i64) {
        self.0.state.lock().unwrap().0.push(newest_seq);
        self.0.changed.notify_all();
    }

    fn waiters_granted(&self) {
        self.0.state.lock().unwrap().1 += 1;
        self.0.changed.notify_all();
    }
}

/// A store on the test database and what its listener hears.
struct Daemon {
    store: PgStore,
    heard: Arc<Heard>,
    id: String,
}

fn open_daemon(url: &str, project: &str) -> Daemon {
    let slot = ListenerSlot::default();
    let heard = Arc::new(Heard::default());
    let _ = slot.set(Box::new(Recorder(Arc::clone(&heard))));
    let id = uuid::Uuid::new_v4().to_string();
    let store = PgStore::open(&StoreUrl::parse(url).unwrap(), project, &id, slot).unwrap();
    Daemon { store, heard, id }
}

fn open(url: &str, project: &str) -> PgStore {
    open_daemon(url, project).store
}

fn write<T>(store: &PgStore, f: impl FnOnce(&Writer<'_>) -> Result<T>) -> Result<T> {
    store.write(f).map(|(out, _)| out)
}

fn lock(path: &str, session: &str, expires: i64, token: i64) -> Lock {
    Lock {
        symbol_path: path.into(),
        session_id: session.into(),
        acquired_at_ms: 10,
        expires_at_ms: expires,
        token,
    }
}

fn event<'a>(subject: &'a str) -> NewEvent<'a> {
    NewEvent {
        kind: "lock.acquired",
        session_id: Some("s1"),
        subject,
        data: serde_json::json!({"b": 1, "a": 2}),
    }
}

/// A plain client on the test database, for what the store does not offer.
fn admin(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

#[test]
fn opens_migrated_and_describes_without_password() {
    let url = pg_or_skip!();
    let p = project();
    let store = open(&url, &p);
    assert_eq!(
        store.schema_version().unwrap(),
        crate::store::to_i64(LATEST_VERSION)
    );
    let shown = store.describe();
    assert!(shown.ends_with(&format!(" (project {p})")), "{shown}");
    for secret in secrets(&url) {
        assert!(!shown.contains(&secret), "{shown}");
    }
}

#[test]
fn deferred_writes_are_seen_by_later_statements_of_their_transaction() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    let a = lock("src/a.ts:f", "s1", 100, 1);
    write(&store, |w| {
        w.put_lock(&a)?;
        assert_eq!(w.lock("src/a.ts:f")?, Some(a.clone()));
        w.delete_lock("src/a.ts:f")?;
        assert_eq!(w.lock("src/a.ts:f")?, None);
        w.put_lock(&a)?;
        let seq = w.append_event(5, &event("src/a.ts:f"))?;
        assert_eq!(w.newest_event_seq()?, seq);
        Ok::<_, StoreError>(())
    })
    .unwrap();
    // The last deferred writes went with the commit.
    assert_eq!(store.read(|r| r.lock("src/a.ts:f")).unwrap(), Some(a));
    // A failed transaction sends none of its deferred writes.
    let b = lock("src/b.ts:g", "s2", 50, 2);
    let failed: Result<(), StoreError> = write(&store, |w| {
        w.put_lock(&b)?;
        Err(StoreError::Postgres {
            store: "test".into(),
            message: "the closure failed".into(),
        })
    });
    assert!(failed.is_err());
    assert_eq!(store.read(|r| r.lock("src/b.ts:g")).unwrap(), None);
}

#[test]
fn prefetched_lock_rows_read_as_the_table_and_follow_the_transaction_s_writes() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    let a = lock("src/a.ts:f", "s1", 100, 1);
    let b = lock("src/b.ts:g", "s2", 50, 2);
    write(&store, |w| w.put_lock(&a)).unwrap();
    let (seen, _notes) = store
        .write_prefetching(&["src/a.ts:f", "src/b.ts:g"], |w| {
            let before = (w.lock("src/a.ts:f")?, w.lock("src/b.ts:g")?);
            w.put_lock(&b)?;
            w.delete_lock("src/a.ts:f")?;
            let after = (w.lock("src/a.ts:f")?, w.lock("src/b.ts:g")?);
            Ok::<_, StoreError>((before, after))
        })
        .unwrap();
    assert_eq!(seen.0, (Some(a.clone()), None));
    assert_eq!(seen.1, (None, Some(b.clone())));
    assert_eq!(store.read(|r| r.lock("src/a.ts:f")).unwrap(), None);
    assert_eq!(store.read(|r| r.lock("src/b.ts:g")).unwrap(), Some(b));
    // A bulk delete forgets what was read ahead.
    write(&store, |w| w.put_lock(&a)).unwrap();
    let (gone, _notes) = store
        .write_prefetching(&["src/a.ts:f"], |w| {
            w.delete_expired_locks(1_000)?;
            w.lock("src/a.ts:f")
        })
        .unwrap();
    assert_eq!(gone, None);
}

#[test]
fn locks_round_trip() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    let a = lock("src/a.ts:f", "s1", 100, 1);
    let b = lock("src/b.ts:g", "s2", 50, 2);
    write(&store, |w| {
        w.put_lock(&a)?;
        w.put_lock(&b)
    })
    .unwrap();
    assert_eq!(
        store.read(|r| r.lock("src/a.ts:f")).unwrap(),
        Some(a.clone())
    );
    assert_eq!(store.read(|r| r.lock("nope")).unwrap(), None);
    assert_eq!(
        store.read(|r| r.live_locks(40, None)).unwrap(),
        vec![a.clone(), b.clone()],
        "by acquisition time, then symbol path"
    );
    assert_eq!(
        store.read(|r| r.live_locks(40, Some("s2"))).unwrap(),
        vec![b.clone()]
    );
    assert_eq!(
        store.read(|r| r.live_locks(60, None)).unwrap(),
        vec![a.clone()]
    );
    assert_eq!(
        store.read(|r| r.expired_locks(60)).unwrap(),
        vec![b.clone()]
    );
    // Replacing keeps one row per symbol.
    let a2 = Lock {
        session_id: "s3".into(),
        token: 9,
        ..a.clone()
    };
    write(&store, |w| w.put_lock(&a2)).unwrap();
    assert_eq!(store.read(|r| r.lock("src/a.ts:f")).unwrap(), Some(a2));
    assert_eq!(write(&store, |w| w.delete_expired_locks(60)).unwrap(), 1);
    write(&store, |w| w.delete_lock("src/a.ts:f")).unwrap();
    assert_eq!(store.read(|r| r.lock("src/a.ts:f")).unwrap(), None);
    // Deleting a row that is not there is no error.
    write(&store, |w| w.delete_lock("src/a.ts:f")).unwrap();
    assert!(store.read(|r| r.live_locks(0, None)).unwrap().is_empty());
}

#[test]
fn failed_write_rolls_back() {
    #[derive(Debug)]
    enum E {
        Store,
        Domain,
    }
    impl From<StoreError> for E {
        fn from(_: StoreError) -> Self {
            E::Store
        }
    }
    let url = pg_or_skip!();
    let store = open(&url, &project());
    let res: Result<(), E> = store
        .write(|w| {
            w.put_lock(&lock("a:f", "s", 2, 0))?;
            w.append_event(1, &event("a:f"))?;
            Err(E::Domain)
        })
        .map(|(out, _)| out);
    assert!(matches!(res, Err(E::Domain)));
    assert_eq!(store.read(|r| r.lock("a:f")).unwrap(), None);
    assert_eq!(store.read(|r| r.newest_event_seq()).unwrap(), 0);
    let _ = E::Store;
    // A statement that fails inside an otherwise `Ok` closure commits nothing either.
    let res = write(&store, |w| {
        w.put_lock(&lock("b:f", "s", 2, 0))?;
        let _ignored = w.insert_contract(&contract("c1", "x:f", ContractStatus::Proposed));
        let _ignored = w.insert_contract(&contract("c1", "x:f", ContractStatus::Proposed));
        Ok(())
    });
    assert!(matches!(res, Err(StoreError::Postgres { .. })), "{res:?}");
    assert_eq!(store.read(|r| r.lock("b:f")).unwrap(), None);
    assert_eq!(store.read(|r| r.contract("c1")).unwrap(), None);
}

#[test]
fn events_are_numbered_paged_and_pruned() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    assert_eq!(store.read(|r| r.newest_event_seq()).unwrap(), 0);
    let (seqs, notes) = store
        .write(|w| {
            assert_eq!(w.next_event_seq()?, 1);
            let a = w.append_event(100, &event("x"))?;
            assert_eq!(w.next_event_seq()?, 2);
            assert_eq!(w.newest_event_seq()?, 1);
            let b = w.append_event(
                200,
                &NewEvent {
                    kind: "lock.released",
                    session_id: None,
                    subject: "y",
                    data: serde_json::json!({}),
                },
            )?;
            let c = w.append_event(300, &event("z"))?;
            Ok::<_, StoreError>(vec![a, b, c])
        })
        .unwrap();
    assert_eq!(seqs, vec![1, 2, 3]);
    assert_eq!(notes.newest_seq(), Some(3));
    assert_eq!(store.read(|r| r.newest_event_seq()).unwrap(), 3);
    let page = store.read(|r| r.events_after(0, 2, None)).unwrap();
    assert_eq!(page.newest_seq, 3);
    assert_eq!(page.oldest_seq, Some(1));
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1, 2]
    );
    let first = &page.events[0];
    assert_eq!(first.kind, "lock.acquired");
    assert_eq!(first.session_id.as_deref(), Some("s1"));
    assert_eq!(first.subject, "x");
    assert_eq!(first.at_ms, 100);
    assert_eq!(
        first.data, r#"{"b":1,"a":2}"#,
        "the JSON text is kept as written"
    );
    assert_eq!(page.events[1].session_id, None);
    let page = store
        .read(|r| r.events_after(0, 10, Some(&["lock.released"])))
        .unwrap();
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![2]
    );
    let page = store.read(|r| r.events_after(3, 10, None)).unwrap();
    assert!(page.events.is_empty());
    assert_eq!((page.newest_seq, page.oldest_seq), (3, Some(1)));
    // Pruning keeps the newest ones whatever their age, and only drops old ones.
    assert_eq!(write(&store, |w| w.prune_events(250, 1)).unwrap(), 2);
    let page = store.read(|r| r.events_after(0, 10, None)).unwrap();
    assert_eq!(page.oldest_seq, Some(3));
    assert_eq!(write(&store, |w| w.prune_events(1_000, 1)).unwrap(), 0);
    assert_eq!(write(&store, |w| w.prune_events(1_000, 0)).unwrap(), 0);
    // Numbers are never reused after pruning.
    let seq = write(&store, |w| w.append_event(400, &event("w"))).unwrap();
    assert_eq!(seq, 4);
}

fn intent(id: &str, session: &str, files: &str, status: IntentStatus, at: i64) -> Intent {
    Intent {
        id: id.into(),
        session_id: session.into(),
        description: format!("{id} work"),
        files: files.into(),
        symbols: "[]".into(),
        start_byte: Some(0),
        end_byte: Some(10),
        status,
        declared_at_ms: at,
        updated_at_ms: at,
        regions: None,
        // A kind other than the column's default: the round trip keeps it.
        kind: crate::store::IntentKind::ObservedEdit,
    }
}

fn range(file: &str, range: Option<(i64, i64)>) -> IntentRange {
    IntentRange {
        file: file.into(),
        range,
    }
}

#[test]
fn intents_and_their_ranges() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    write(&store, |w| {
        w.insert_intent(
            &intent("i1", "s1", ",a.ts,b.ts,", IntentStatus::Declared, 5),
            &[
                range("a.ts", Some((20, 30))),
                range("a.ts", Some((0, 10))),
                range("b.ts", None),
            ],
        )?;
        w.insert_intent(
            &intent("i2", "s2", ",a.ts,", IntentStatus::Active, 5),
            &[range("a.ts", Some((5, 8)))],
        )?;
        w.insert_intent(
            &intent("i3", "s2", ",c.ts,", IntentStatus::Resolved, 1),
            &[range("c.ts", None)],
        )
    })
    .unwrap();
    assert_eq!(
        store.read(|r| r.intent("i1")).unwrap(),
        Some(intent("i1", "s1", ",a.ts,b.ts,", IntentStatus::Declared, 5))
    );
    let hits = store.read(|r| r.live_ranges_in_file("a.ts", "s2")).unwrap();
    assert_eq!(
        hits.iter()
            .map(|h| (h.intent_id.as_str(), h.range))
            .collect::<Vec<_>>(),
        vec![("i1", Some((20, 30))), ("i1", Some((0, 10)))],
        "ranges in the order given"
    );
    assert_eq!(hits[0].session_id, "s1");
    assert_eq!(hits[0].description, "i1 work");
    assert_eq!(hits[0].declared_at_ms, 5);
    let own = store
        .read(|r| r.own_live_ranges_in_file("a.ts", "s2"))
        .unwrap();
    assert_eq!(own.len(), 1);
    assert_eq!(own[0].range, Some((5, 8)));
    assert!(own[0].intent_seq > hits[0].intent_seq, "creation order");
    let b = store.read(|r| r.live_ranges_in_file("b.ts", "x")).unwrap();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].range, None);
    assert!(store
        .read(|r| r.live_ranges_in_file("c.ts", "x"))
        .unwrap()
        .is_empty());

    let ids = |filter: IntentFilter<'_>| -> Vec<String> {
        store
            .read(|r| r.intents(&filter))
            .unwrap()
            .into_iter()
            .map(|i| i.id)
            .collect()
    };
    assert_eq!(ids(IntentFilter::default()), vec!["i1", "i2"]);
    assert_eq!(
        ids(IntentFilter {
            session_id: Some("s2"),
            ..IntentFilter::default()
        }),
        vec!["i2"]
    );
    assert_eq!(
        ids(IntentFilter {
            status: Some(IntentStatus::Resolved),
            ..IntentFilter::default()
        }),
        vec!["i3"]
    );
    assert_eq!(
        ids(IntentFilter {
            file: Some("b.ts"),
            ..IntentFilter::default()
        }),
        vec!["i1"]
    );
    assert_eq!(
        ids(IntentFilter {
            file: Some("a.ts"),
            session_id: Some("s1"),
            status: Some(IntentStatus::Declared),
        }),
        vec!["i1"]
    );

    assert!(write(&store, |w| w.set_intent_status(
        "i1",
        IntentStatus::Abandoned,
        9
    ))
    .unwrap());
    assert!(!write(&store, |w| w.set_intent_status(
        "nope",
        IntentStatus::Active,
        9
    ))
    .unwrap());
    let i1 = store.read(|r| r.intent("i1")).unwrap().unwrap();
    assert_eq!((i1.status, i1.updated_at_ms), (IntentStatus::Abandoned, 9));
    assert!(store
        .read(|r| r.live_ranges_in_file("a.ts", "s2"))
        .unwrap()
        .is_empty());
    assert_eq!(ids(IntentFilter::default()), vec!["i2"]);
}

fn contract(id: &str, path: &str, status: ContractStatus) -> Contract {
    let (file, name) = path.split_once(':').unwrap();
    Contract {
        id: id.into(),
        proposer_session_id: "s1".into(),
        symbol_path: path.into(),
        file: file.into(),
        name: name.into(),
        signature: "(a: number)".into(),
        status,
        responder_session_id: None,
        proposed_at_ms: 7,
        responded_at_ms: None,
    }
}

#[test]
fn contracts_round_trip() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    write(&store, |w| {
        w.insert_contract(&contract("c1", "a.ts:f", ContractStatus::Proposed))?;
        w.insert_contract(&contract("c2", "a.ts:g", ContractStatus::Accepted))?;
        w.insert_contract(&contract("c3", "b.ts:f", ContractStatus::Accepted))
    })
    .unwrap();
    assert_eq!(
        store.read(|r| r.contract("c1")).unwrap(),
        Some(contract("c1", "a.ts:f", ContractStatus::Proposed))
    );
    let ids = |path: Option<&str>, status: Option<ContractStatus>| -> Vec<String> {
        store
            .read(|r| r.contracts(path, status))
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect()
    };
    assert_eq!(ids(None, None), vec!["c1", "c2", "c3"]);
    assert_eq!(ids(Some("a.ts:f"), None), vec!["c1"]);
    assert_eq!(ids(None, Some(ContractStatus::Accepted)), vec!["c2", "c3"]);
    assert_eq!(
        ids(Some("a.ts:g"), Some(ContractStatus::Accepted)),
        vec!["c2"]
    );
    assert!(ids(Some("a.ts:g"), Some(ContractStatus::Rejected)).is_empty());
    let accepted = store
        .read(|r| r.accepted_contracts_in_file("a.ts"))
        .unwrap();
    assert_eq!(accepted.len(), 1);
    assert_eq!(accepted[0].id, "c2");
    assert!(write(&store, |w| w.set_contract_response(
        "c1",
        ContractStatus::Accepted,
        "s2",
        8
    ))
    .unwrap());
    assert!(!write(&store, |w| w.set_contract_response(
        "nope",
        ContractStatus::Accepted,
        "s2",
        8
    ))
    .unwrap());
    let c1 = store.read(|r| r.contract("c1")).unwrap().unwrap();
    assert_eq!(c1.status, ContractStatus::Accepted);
    assert_eq!(c1.responder_session_id.as_deref(), Some("s2"));
    assert_eq!(c1.responded_at_ms, Some(8));
}

#[test]
fn agents_get_stable_increasing_ids() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    assert_eq!(write(&store, |w| w.upsert_agent("s1", "a", 1)).unwrap(), 1);
    assert_eq!(write(&store, |w| w.upsert_agent("s2", "b", 2)).unwrap(), 2);
    assert_eq!(write(&store, |w| w.upsert_agent("s1", "a2", 3)).unwrap(), 1);
    assert_eq!(
        store.read(|r| r.agent("s1")).unwrap(),
        Some((1, "a2".to_owned()))
    );
    assert_eq!(store.read(|r| r.agent("s9")).unwrap(), None);
}

#[test]
fn sessions_lifecycle_and_summaries() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    write(&store, |w| {
        w.touch_session("s1", 100)?;
        w.set_session_pulse("s1", Some((42, 4242)), "h1", None)?;
        w.touch_session("s2", 200)?;
        w.set_session_pulse("s2", None, "h1", Some(5_000))?;
        w.touch_session("s3", 300)?;
        w.upsert_agent("s1", "one", 100)?;
        w.put_lock(&lock("a:f", "s2", 1_000, 1))?;
        w.put_lock(&lock("a:g", "s2", 10, 2))?;
        w.insert_intent(
            &intent("i1", "s4", ",a,", IntentStatus::Active, 50),
            &[range("a", None)],
        )
    })
    .unwrap();
    let s1 = store.read(|r| r.session("s1")).unwrap().unwrap();
    assert_eq!(
        (s1.pid, s1.pid_start, s1.lease_ms),
        (Some(42), Some(4242), None)
    );
    assert_eq!(s1.host_id.as_deref(), Some("h1"));
    assert_eq!((s1.first_seen_ms, s1.last_seen_ms), (100, 100));
    let s2 = store.read(|r| r.session("s2")).unwrap().unwrap();
    assert_eq!((s2.pid, s2.lease_ms, s2.host_id), (None, Some(5_000), None));
    let pulsing: Vec<String> = store
        .read(|r| r.sessions_with_pulse())
        .unwrap()
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    assert_eq!(pulsing.len(), 2);
    assert!(pulsing.contains(&"s1".to_owned()) && pulsing.contains(&"s2".to_owned()));

    // Sightings only move forward; record_last_seen never creates a row.
    write(&store, |w| {
        w.record_last_seen("s1", 150)?;
        w.record_last_seen("s1", 120)?;
        w.record_last_seen("ghost", 1)
    })
    .unwrap();
    assert_eq!(
        store
            .read(|r| r.session("s1"))
            .unwrap()
            .unwrap()
            .last_seen_ms,
        150
    );
    assert_eq!(store.read(|r| r.session("ghost")).unwrap(), None);

    let summaries = store.read(|r| r.session_summaries(20)).unwrap();
    let order: Vec<&str> = summaries.iter().map(|s| s.session_id.as_str()).collect();
    // s3 holds nothing and is not registered; s4 is known by its intent only.
    assert_eq!(order, vec!["s4", "s1", "s2"]);
    let s4 = &summaries[0];
    assert_eq!((s4.intents, s4.locks, s4.first_seen_ms), (1, 0, 50));
    assert_eq!(
        (s4.name.clone(), s4.agent_id, s4.last_seen_ms),
        (None, None, 50)
    );
    let s1 = &summaries[1];
    assert_eq!(
        (s1.name.as_deref(), s1.agent_id, s1.pid),
        (Some("one"), Some(1), Some(42))
    );
    assert_eq!((s1.last_seen_ms, s1.host_id.as_deref()), (150, Some("h1")));
    assert_eq!(summaries[2].locks, 1, "only the live lock counts");

    // End, then revive: the pulse stays cleared.
    assert!(write(&store, |w| w.end_session("s1", 500)).unwrap());
    assert!(!write(&store, |w| w.end_session("s1", 600)).unwrap());
    let ended = store.read(|r| r.session("s1")).unwrap().unwrap();
    assert_eq!(
        (ended.ended_at_ms, ended.pid, ended.pid_start),
        (Some(500), None, None)
    );
    write(&store, |w| w.touch_session("s1", 700)).unwrap();
    let revived = store.read(|r| r.session("s1")).unwrap().unwrap();
    assert_eq!(
        (revived.ended_at_ms, revived.pid, revived.last_seen_ms),
        (None, None, 700)
    );
    write(&store, |w| w.touch_session("s1", 650)).unwrap();
    assert_eq!(
        store
            .read(|r| r.session("s1"))
            .unwrap()
            .unwrap()
            .last_seen_ms,
        700
    );

    // Only s3 is forgotten: s1 is registered, s2 holds locks.
    write(&store, |w| w.touch_session("s5", 10)).unwrap();
    assert_eq!(write(&store, |w| w.prune_sessions(1_000)).unwrap(), 2);
    assert_eq!(store.read(|r| r.session("s3")).unwrap(), None);
    assert!(store.read(|r| r.session("s2")).unwrap().is_some());
}

#[test]
fn waiters_queue_in_arrival_order() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    let waiter = |path: &'static str, session: &'static str, daemon: &'static str| NewWaiter {
        symbol_path: path,
        session_id: session,
        ttl_ms: 1_000,
        daemon_id: daemon,
        callers: "[]",
        queued_at_ms: 5,
    };
    let (ids, _) = store
        .write(|w| {
            Ok::<_, StoreError>(vec![
                w.insert_waiter(&waiter("b:f", "s1", "d1"))?,
                w.insert_waiter(&waiter("a:f", "s2", "d2"))?,
                w.insert_waiter(&waiter("b:f", "s3", "d2"))?,
            ])
        })
        .unwrap();
    assert!(ids[0] < ids[1] && ids[1] < ids[2]);
    let all = store.read(|r| r.waiters()).unwrap();
    assert_eq!(
        all.iter().map(|w| w.id).collect::<Vec<_>>(),
        vec![ids[1], ids[0], ids[2]],
        "by symbol path, then arrival"
    );
    assert_eq!(all[0].session_id, "s2");
    assert_eq!(all[0].callers, "[]");
    assert_eq!(
        store.read(|r| r.first_waiter("b:f")).unwrap().unwrap().id,
        ids[0]
    );
    let (granted, notes) = store.write(|w| w.grant_waiter(ids[0], "d1", "{}")).unwrap();
    assert!(granted);
    assert_eq!(notes.granted_daemons(), vec!["d1".to_owned()]);
    assert!(!write(&store, |w| w.grant_waiter(ids[0], "d1", "{}")).unwrap());
    assert_eq!(
        store.read(|r| r.first_waiter("b:f")).unwrap().unwrap().id,
        ids[2]
    );
    let granted = store.read(|r| r.granted_waiters("d1")).unwrap();
    assert_eq!(granted.len(), 1);
    assert_eq!(granted[0].granted.as_deref(), Some("{}"));
    assert!(store.read(|r| r.granted_waiters("d2")).unwrap().is_empty());
    assert!(store.read(|r| r.waiter(ids[0])).unwrap().is_some());
    assert!(write(&store, |w| w.delete_waiter(ids[0])).unwrap());
    assert!(!write(&store, |w| w.delete_waiter(ids[0])).unwrap());
    assert_eq!(write(&store, |w| w.delete_daemon_waiters("d2")).unwrap(), 2);
    assert!(store.read(|r| r.waiters()).unwrap().is_empty());
}

#[test]
fn lock_waits_join_the_live_holder_in_symbol_then_arrival_order() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    let waiter = |path: &'static str, session: &'static str, at: i64| NewWaiter {
        symbol_path: path,
        session_id: session,
        ttl_ms: 1_000,
        daemon_id: "d1",
        callers: "[]",
        queued_at_ms: at,
    };
    write(&store, |w| {
        w.put_lock(&lock("b:f", "hold-b", 100, 1))?;
        w.put_lock(&lock("a:f", "hold-a", 1_000, 2))?;
        w.insert_waiter(&waiter("b:f", "s1", 5))?;
        w.insert_waiter(&waiter("a:f", "s2", 6))?;
        let granted = w.insert_waiter(&waiter("b:f", "s3", 7))?;
        w.insert_waiter(&waiter("b:f", "s4", 8))?;
        w.grant_waiter(granted, "d1", "{}")
    })
    .unwrap();
    let shown = |now: i64| -> Vec<(String, String, i64, Option<String>)> {
        store
            .read(|r| r.lock_waits(now))
            .unwrap()
            .into_iter()
            .map(|w| (w.symbol_path, w.session_id, w.since_ms, w.holder))
            .collect()
    };
    let held = |s: &str| Some(s.to_string());
    assert_eq!(
        shown(50),
        [
            ("a:f".into(), "s2".into(), 6, held("hold-a")),
            ("b:f".into(), "s1".into(), 5, held("hold-b")),
            ("b:f".into(), "s4".into(), 8, held("hold-b")),
        ]
    );
    assert_eq!(shown(100)[1].3, None, "an expired lock has no holder");
}

#[test]
fn daemons_beat_and_go_stale() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    let beat = |id: &'static str, host: &'static str, now: i64| DaemonBeat {
        daemon_id: id,
        host_id: host,
        pid: 7,
        started_at_ms: 1,
        now_ms: now,
    };
    write(&store, |w| {
        w.beat_daemon(&beat("d1", "h2", 100))?;
        w.beat_daemon(&beat("d2", "h1", 100))?;
        w.beat_daemon(&beat("d3", "h1", 50))?;
        w.beat_daemon(&beat("d3", "h1", 60))
    })
    .unwrap();
    assert_eq!(store.read(|r| r.live_hosts(60)).unwrap(), vec!["h1", "h2"]);
    assert_eq!(store.read(|r| r.live_hosts(61)).unwrap(), vec!["h1", "h2"]);
    assert_eq!(
        write(&store, |w| w.delete_stale_daemons(61)).unwrap(),
        vec!["d3"]
    );
    assert!(write(&store, |w| w.delete_daemon("d1")).unwrap());
    assert!(!write(&store, |w| w.delete_daemon("d1")).unwrap());
    assert_eq!(store.read(|r| r.live_hosts(0)).unwrap(), vec!["h1"]);
}

/// Many threads through two stores ("daemons") race a check-and-write on one symbol:
/// exactly one wins.
#[test]
fn racing_check_and_write_through_two_daemons_has_one_winner() {
    let url = pg_or_skip!();
    let p = project();
    let stores = [open(&url, &p), open(&url, &p)];
    let winners = AtomicUsize::new(0);
    let threads = 200;
    let start = Barrier::new(threads);
    std::thread::scope(|scope| {
        for i in 0..threads {
            let store = &stores[i % 2];
            let (winners, start) = (&winners, &start);
            scope.spawn(move || {
                start.wait();
                let session = format!("s{i}");
                let won = write(store, |w| {
                    if w.lock("x:f")?.is_some() {
                        return Ok(false);
                    }
                    let token = w.next_event_seq()?;
                    w.put_lock(&lock("x:f", &session, i64::MAX, token))?;
                    w.append_event(1, &event("x:f"))?;
                    Ok(true)
                })
                .unwrap();
                if won {
                    winners.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(winners.load(Ordering::Relaxed), 1);
    assert_eq!(stores[1].read(|r| r.newest_event_seq()).unwrap(), 1);
}

/// Events appended through two stores at once are numbered 1..=n without gaps, and every
/// page a reader saw only ever grows at its end.
#[test]
fn seq_is_contiguous_and_ordered_across_daemons() {
    let url = pg_or_skip!();
    let p = project();
    let stores = [open(&url, &p), open(&url, &p)];
    let per_thread = 25;
    let threads = 8;
    let seqs = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (store, seqs) = (&stores[t % 2], &seqs);
            scope.spawn(move || {
                for _ in 0..per_thread {
                    let seq = write(store, |w| {
                        let expected = w.next_event_seq()?;
                        let seq = w.append_event(1, &event("s"))?;
                        assert_eq!(seq, expected);
                        Ok(seq)
                    })
                    .unwrap();
                    seqs.lock().unwrap().push(seq);
                }
            });
        }
        // A reader polling meanwhile never sees a seq appear below one it already saw.
        let reader = &stores[1];
        scope.spawn(move || {
            let mut seen = 0;
            while seen < i64::try_from(threads * per_thread).unwrap() {
                let page = reader.read(|r| r.events_after(seen, 1000, None)).unwrap();
                for (i, e) in page.events.iter().enumerate() {
                    assert_eq!(e.seq, seen + 1 + i64::try_from(i).unwrap(), "no gap");
                }
                seen += i64::try_from(page.events.len()).unwrap();
            }
        });
    });
    let mut seqs = seqs.into_inner().unwrap();
    seqs.sort_unstable();
    let n = i64::try_from(threads * per_thread).unwrap();
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>());
}

#[test]
fn other_daemons_hear_commits_and_only_the_named_daemon_hears_grants() {
    let url = pg_or_skip!();
    let p = project();
    let a = open_daemon(&url, &p);
    let b = open_daemon(&url, &p);
    let seq = write(&a.store, |w| w.append_event(1, &event("x"))).unwrap();
    b.heard
        .wait_until("A's event at B", |events, _| events.contains(&seq));
    // A grants a waiter of B: B hears it, A does not.
    let b_id = b.id.clone();
    write(&a.store, |w| {
        let id = w.insert_waiter(&NewWaiter {
            symbol_path: "x:f",
            session_id: "s",
            ttl_ms: 1_000,
            daemon_id: &b_id,
            callers: "[]",
            queued_at_ms: 1,
        })?;
        w.grant_waiter(id, &b_id, "{}")
    })
    .unwrap();
    b.heard
        .wait_until("the grant at B", |_, grants| grants >= 1);
    // Notifications on one channel arrive in commit order: once A hears a later event, it
    // would already have heard the grant had it been told.
    let later = write(&b.store, |w| w.append_event(2, &event("y"))).unwrap();
    a.heard
        .wait_until("B's later event at A", |events, _| events.contains(&later));
    assert_eq!(a.heard.grants(), 0);
    // A rolled-back transaction tells nobody.
    let _ = write(&a.store, |w| {
        w.append_event(3, &event("z"))?;
        Err::<(), _>(StoreError::Postgres {
            store: String::new(),
            message: "no".into(),
        })
    });
    let last = write(&a.store, |w| w.append_event(4, &event("z"))).unwrap();
    assert_eq!(last, later + 1, "the rolled-back seq was not used");
    b.heard
        .wait_until("the last event at B", |events, _| events.contains(&last));
    assert!(!b.heard.state.lock().unwrap().0.contains(&(last + 1)));
}

#[test]
fn projects_are_isolated() {
    let url = pg_or_skip!();
    let one = open_daemon(&url, &project());
    let two = open_daemon(&url, &project());
    write(&one.store, |w| {
        w.put_lock(&lock("a:f", "s", i64::MAX, 1))?;
        w.upsert_agent("s", "n", 1)?;
        w.touch_session("s", 1)?;
        w.append_event(1, &event("a:f"))
    })
    .unwrap();
    assert_eq!(two.store.read(|r| r.lock("a:f")).unwrap(), None);
    assert_eq!(two.store.read(|r| r.agent("s")).unwrap(), None);
    assert!(two
        .store
        .read(|r| r.session_summaries(0))
        .unwrap()
        .is_empty());
    assert_eq!(two.store.read(|r| r.newest_event_seq()).unwrap(), 0);
    // Both number their own events and agents from 1.
    assert_eq!(
        write(&two.store, |w| w.append_event(1, &event("b"))).unwrap(),
        1
    );
    assert_eq!(
        write(&two.store, |w| w.upsert_agent("s", "n", 1)).unwrap(),
        1
    );
    // Project two's listener hears its own channel only.
    two.heard
        .wait_until("its own event", |events, _| events.contains(&1));
    let seq = write(&one.store, |w| w.append_event(2, &event("c"))).unwrap();
    one.heard
        .wait_until("its event", |events, _| events.contains(&seq));
    let after = write(&two.store, |w| w.append_event(3, &event("d"))).unwrap();
    two.heard
        .wait_until("its later event", |events, _| events.contains(&after));
    assert!(!two.heard.state.lock().unwrap().0.contains(&seq) || seq == after);
}

#[test]
fn concurrent_opens_migrate_once() {
    let url = pg_or_skip!();
    let p = project();
    let start = Barrier::new(6);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let (url, p, start) = (&url, &p, &start);
                scope.spawn(move || {
                    start.wait();
                    open(url, p).schema_version().unwrap()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), crate::store::to_i64(LATEST_VERSION));
        }
    });
    let mut client = admin(&url);
    let rows = client
        .query("SELECT version FROM wit_schema ORDER BY version", &[])
        .unwrap();
    let versions: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        versions,
        (1..=crate::store::to_i64(LATEST_VERSION)).collect::<Vec<_>>()
    );
    let projects: i64 = client
        .query_one(
            "SELECT count(*) FROM wit_projects WHERE project = $1",
            &[&p],
        )
        .unwrap()
        .get(0);
    assert_eq!(projects, 1);
}

/// A server nobody listens on: `Unavailable` naming the store, without the password.
#[test]
fn unreachable_server_is_unavailable_without_the_password() {
    // Needs no server: port 1 on the loopback refuses connections.
    let url = StoreUrl::parse("postgres://wit:s3cr%65t-pw@127.0.0.1:1/wit").unwrap();
    let err = PgStore::open(&url, "p", "d", ListenerSlot::default())
        .err()
        .expect("no server there");
    let text = format!("{err} {err:?}");
    assert!(matches!(err, StoreError::Unavailable { .. }), "{text}");
    assert!(text.contains("127.0.0.1:1"), "{text}");
    assert!(text.contains("(project p)"), "{text}");
    assert!(!text.contains("s3cr"), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
}

#[test]
fn scrubs_passwords_from_driver_messages() {
    let name = StoreName::new(
        "postgres://u:***@h/db (project p)".into(),
        secrets("postgres://u:p%40ss@h/db?password=other"),
    );
    assert_eq!(
        name.scrub("auth failed for p@ss, p%40ss and other"),
        "auth failed for ***, *** and ***"
    );
}

/// A pooled connection the server killed while idle is replaced without the caller
/// noticing; one killed in the middle of a transaction fails that call (nothing of it
/// stays) and the next call works.
#[test]
fn reconnects_after_connections_are_killed() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    write(&store, |w| w.put_lock(&lock("a:f", "s", i64::MAX, 1))).unwrap();
    let mut admin = admin(&url);
    let kill = |admin: &mut postgres::Client, pids: &[i32]| {
        for pid in pids {
            admin
                .execute("SELECT pg_terminate_backend($1)", &[pid])
                .unwrap();
        }
    };
    let pids = store.idle_backend_pids();
    assert!(!pids.is_empty());
    kill(&mut admin, &pids);
    // Idle connections killed: the call replaces them transparently.
    assert!(store.read(|r| r.lock("a:f")).unwrap().is_some());

    let pids = store.idle_backend_pids();
    let res = write(&store, |w| {
        w.put_lock(&lock("b:f", "s", i64::MAX, 2))?;
        kill(&mut admin, &pids);
        w.append_event(1, &event("b:f"))?;
        Ok(())
    });
    assert!(
        matches!(res, Err(StoreError::Unavailable { .. })),
        "{res:?}"
    );
    assert_eq!(
        store.read(|r| r.lock("b:f")).unwrap(),
        None,
        "no partial effect"
    );
    assert_eq!(store.read(|r| r.newest_event_seq()).unwrap(), 0);
    write(&store, |w| w.append_event(1, &event("c:f"))).unwrap();
    assert_eq!(store.read(|r| r.newest_event_seq()).unwrap(), 1);
}

/// The LISTEN connection killed: the thread reconnects, reports the newest seq once, and
/// hears later commits again.
#[test]
fn listener_reconnects_and_catches_up() {
    let url = pg_or_skip!();
    let p = project();
    let a = open_daemon(&url, &p);
    let b = open(&url, &p);
    let mut admin = admin(&url);
    let killed = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE query = $1 AND pid <> pg_backend_pid()",
            &[&format!("LISTEN {}", channel(&p))],
        )
        .unwrap();
    assert!(killed >= 1, "found the listening connections");
    // Meanwhile another daemon commits; A hears of it either directly or by catching up.
    let seq = write(&b, |w| w.append_event(1, &event("x"))).unwrap();
    a.heard
        .wait_until("the event", |events, _| events.contains(&seq));
    a.heard
        .wait_until("a catch-up grant check", |_, grants| grants >= 1);
    let later = write(&b, |w| w.append_event(2, &event("y"))).unwrap();
    a.heard
        .wait_until("the later event", |events, _| events.contains(&later));
    assert!(a.store._listen.is_running());
}

/// The daemon calls the store from async worker threads too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_on_a_multi_thread_runtime_worker() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    write(&store, |w| w.put_lock(&lock("a:f", "s", i64::MAX, 1))).unwrap();
    assert!(store.read(|r| r.lock("a:f")).unwrap().is_some());
    assert_eq!(
        store.schema_version().unwrap(),
        crate::store::to_i64(LATEST_VERSION)
    );
    let moved = tokio::spawn(async move {
        let n = write(&store, |w| w.append_event(1, &event("a:f"))).unwrap();
        drop(store);
        n
    })
    .await
    .unwrap();
    assert_eq!(moved, 1);
    // Opening from a worker works too.
    let again = open(&url, &project());
    drop(again);
}

/// A closure that panics leaves no open transaction behind in the pool.
#[test]
fn a_panicking_closure_commits_nothing_and_poisons_no_connection() {
    let url = pg_or_skip!();
    let store = open(&url, &project());
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = write(&store, |w| {
            w.put_lock(&lock("a:f", "s", i64::MAX, 1))?;
            panic!("in the closure");
            #[allow(unreachable_code)]
            Ok(())
        });
    }));
    assert!(panicked.is_err());
    assert_eq!(store.read(|r| r.lock("a:f")).unwrap(), None);
    write(&store, |w| w.append_event(1, &event("b"))).unwrap();
    assert_eq!(store.read(|r| r.newest_event_seq()).unwrap(), 1);
}
