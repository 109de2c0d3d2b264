//! Tests of the SQLite backend: file settings, atomicity, query plans.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use super::*;
use crate::store::{to_i64, IntentFilter};

/// A write transaction whose commit notes the test does not need.
fn write<T, E: From<StoreError>>(
    store: &SqliteStore,
    f: impl FnOnce(&Writer<'_>) -> Result<T, E>,
) -> Result<T, E> {
    store.write(f).map(|(out, _notes)| out)
}

#[test]
fn open_creates_file_with_mode_0600_and_wal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), to_i64(LATEST_VERSION));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let conn = store.conn.lock().unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let sync: i64 = conn
        .pragma_query_value(None, "synchronous", |r| r.get(0))
        .unwrap();
    assert_eq!(sync, 1, "synchronous=NORMAL");
    let fk: i64 = conn
        .pragma_query_value(None, "foreign_keys", |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
}

#[cfg(unix)]
#[test]
fn open_restricts_an_existing_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, b"").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    SqliteStore::open(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn data_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let lock = Lock {
        symbol_path: "src/a.ts:f".into(),
        session_id: "s1".into(),
        acquired_at_ms: 10,
        expires_at_ms: 20,
        token: 0,
    };
    {
        let store = SqliteStore::open(&path).unwrap();
        write(&store, |w| w.put_lock(&lock)).unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let got = store.read(|r| r.lock("src/a.ts:f")).unwrap();
    assert_eq!(got, Some(lock));
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
    let store = SqliteStore::open_in_memory().unwrap();
    let lock = Lock {
        symbol_path: "a:f".into(),
        session_id: "s".into(),
        acquired_at_ms: 1,
        expires_at_ms: 2,
        token: 0,
    };
    let res: Result<(), E> = write(&store, |w| {
        w.put_lock(&lock)?;
        Err(E::Domain)
    });
    assert!(matches!(res, Err(E::Domain)));
    assert_eq!(store.read(|r| r.lock("a:f")).unwrap(), None);
    let _ = E::Store;
}

#[test]
fn two_handles_on_one_file_serialise_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open(&path).unwrap();
    let lock = Lock {
        symbol_path: "a:f".into(),
        session_id: "s".into(),
        acquired_at_ms: 1,
        expires_at_ms: 2,
        token: 0,
    };
    write(&a, |w| w.put_lock(&lock)).unwrap();
    assert_eq!(b.read(|r| r.lock("a:f")).unwrap(), Some(lock));
}

fn plan(store: &SqliteStore, sql: &str) -> String {
    plan_with(store, sql, &[])
}

/// SQLite's query plan for `sql` with `args` bound, one step after the other.
fn plan_with(store: &SqliteStore, sql: &str, args: &[&dyn rusqlite::ToSql]) -> String {
    let conn = store.conn.lock().unwrap();
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let rows = stmt
        .query_map(args, |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap();
    rows.join("; ")
}

/// The lookups conflict detection runs on every request must go through an index, so that
/// their cost does not grow with unrelated rows.
#[test]
fn hot_lookups_use_indexes() {
    let store = SqliteStore::open_in_memory().unwrap();
    let cases = [
        ("SELECT * FROM locks WHERE symbol_path = 'x'", "locks"),
        (
            "SELECT i.seq FROM intent_ranges r JOIN intents i ON i.seq = r.intent_seq \
             WHERE r.file = 'x' AND r.live = 1 AND i.session_id <> 's'",
            "intent_ranges_file",
        ),
        (
            "SELECT * FROM contracts WHERE file = 'x' AND status = 'accepted'",
            "contracts_file_status",
        ),
        (
            "SELECT * FROM intents i WHERE +i.status IN ('declared', 'active') \
             AND i.seq IN (SELECT intent_seq FROM intent_ranges WHERE file = 'x')",
            "intent_ranges_file",
        ),
        (
            "SELECT * FROM contracts WHERE symbol_path = 'x'",
            "contracts_symbol",
        ),
        (
            "UPDATE intent_ranges SET live = 0 WHERE intent_seq = 1",
            "intent_ranges_intent",
        ),
    ];
    for (sql, index) in cases {
        let plan = plan(&store, sql);
        assert!(
            plan.contains(index) || plan.contains("PRIMARY KEY"),
            "{sql}: {plan}"
        );
        assert!(
            !plan.contains("SCAN r")
                && !plan.contains("SCAN locks")
                && !plan.contains("SCAN contracts"),
            "{sql}: {plan}"
        );
    }
}

/// `intent.query` by file or session looks up that file's or session's rows, never walks
/// every live intent through the status index.
#[test]
fn intent_queries_by_file_or_session_use_their_index() {
    let store = SqliteStore::open_in_memory().unwrap();
    let cases = [
        (
            IntentFilter {
                file: Some("x"),
                ..IntentFilter::default()
            },
            "INTEGER PRIMARY KEY",
        ),
        (
            IntentFilter {
                session_id: Some("s"),
                status: Some(IntentStatus::Active),
                ..IntentFilter::default()
            },
            "intents_session",
        ),
        (IntentFilter::default(), "intents_status"),
    ];
    for (filter, index) in cases {
        let (sql, args) = intents::intents_query(&filter);
        let plan = plan_with(&store, &sql, &args);
        assert!(plan.contains(index), "{filter:?}: {plan}");
        if index != "intents_status" {
            assert!(!plan.contains("intents_status"), "{filter:?}: {plan}");
        }
    }
}

#[test]
fn intent_lookups_stay_fast_with_many_unrelated_rows() {
    let store = SqliteStore::open_in_memory().unwrap();
    store
        .write(|w| {
            for i in 0..10_000 {
                let intent = Intent {
                    id: format!("i{i}"),
                    session_id: format!("s{}", i % 50),
                    description: "d".into(),
                    files: format!(",f{i}.ts,"),
                    symbols: "[]".into(),
                    start_byte: None,
                    end_byte: None,
                    status: IntentStatus::Active,
                    declared_at_ms: i,
                    updated_at_ms: i,
                    regions: None,
                    kind: crate::store::IntentKind::Declared,
                };
                let range = IntentRange {
                    file: format!("f{i}.ts"),
                    range: Some((0, 10)),
                };
                w.insert_intent(&intent, &[range])?;
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
    let hits = store
        .read(|r| r.live_ranges_in_file("f77.ts", "other"))
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].intent_id, "i77");
    assert_eq!(hits[0].range, Some((0, 10)));
    let start = std::time::Instant::now();
    for i in 0..1000 {
        let file = format!("f{i}.ts");
        store.read(|r| r.live_ranges_in_file(&file, "x")).unwrap();
    }
    // About 10 µs each in release; generous for a loaded debug build.
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    let all = store.read(|r| r.intents(&IntentFilter::default())).unwrap();
    assert_eq!(all.len(), 10_000);
    assert!(write(&store, |w| w.set_intent_status(
        "i77",
        IntentStatus::Resolved,
        5
    ))
    .unwrap());
    assert!(store
        .read(|r| r.live_ranges_in_file("f77.ts", "other"))
        .unwrap()
        .is_empty());
    assert!(!write(&store, |w| w.set_intent_status(
        "nope",
        IntentStatus::Resolved,
        5
    ))
    .unwrap());
}

/// A cached statement runs as it was prepared whatever is bound to it: without the query
/// planner stability guarantee SQLite marks statements for a new plan on every binding and
/// parses them again at their next step, a fifth of the daemon's time on a hook's requests.
#[test]
fn cached_statements_are_not_prepared_again_for_new_bindings() {
    let store = SqliteStore::open_in_memory().unwrap();
    let filters =
        [("a.ts", "s1"), ("b.ts", "s2"), ("c.ts", "s3")].map(|(file, session)| IntentFilter {
            file: Some(file),
            session_id: Some(session),
            ..IntentFilter::default()
        });
    for filter in &filters {
        store.read(|r| r.intents(filter)).unwrap();
    }
    let (sql, _) = super::intents::intents_query(&filters[0]);
    let conn = store.conn.lock().unwrap();
    let cached = conn.prepare_cached(&sql).unwrap();
    assert_eq!(
        cached.get_status(rusqlite::StatementStatus::RePrepare),
        0,
        "{sql}"
    );
}

/// `session.list`'s summaries are the same whether the sessions table is read whole (few
/// rows beside the listed ones) or one lookup each (many unlisted rows, as a week of one-off
/// session ids leaves): the listed sessions, with their counts, in order of first appearance.
#[test]
fn session_summaries_read_whole_or_by_lookups_agree() {
    let summaries_with = |unlisted: usize| {
        let store = SqliteStore::open_in_memory().unwrap();
        write(&store, |w| {
            for i in 0..unlisted {
                w.touch_session(&format!("one-off-{i}"), 1)?;
            }
            w.touch_session("registered", 30)?;
            w.upsert_agent("registered", "Reg", 40)?;
            w.touch_session("locker", 20)?;
            for (n, expires) in [(1, 1_000), (2, 1_000), (3, 5)] {
                w.put_lock(&Lock {
                    symbol_path: format!("a.ts:f{n}"),
                    session_id: "locker".into(),
                    acquired_at_ms: 20 + n,
                    expires_at_ms: expires,
                    token: n,
                })?;
            }
            let intent = Intent {
                id: "i1".into(),
                session_id: "planner".into(),
                description: "d".into(),
                files: ",a.ts,".into(),
                symbols: "[]".into(),
                start_byte: None,
                end_byte: None,
                status: IntentStatus::Active,
                declared_at_ms: 10,
                updated_at_ms: 10,
                regions: None,
                kind: crate::store::IntentKind::Declared,
            };
            w.insert_intent(&intent, &[])?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
        store.read(|r| r.session_summaries(100)).unwrap()
    };
    let whole = summaries_with(0);
    let looked_up = summaries_with(2_000);
    assert_eq!(whole, looked_up);
    let listed: Vec<(&str, i64, i64, i64)> = whole
        .iter()
        .map(|s| (s.session_id.as_str(), s.first_seen_ms, s.locks, s.intents))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("planner", 10, 0, 1),
            ("locker", 20, 2, 0),
            ("registered", 30, 0, 0)
        ]
    );
    assert_eq!(whole[2].name.as_deref(), Some("Reg"));
    assert_eq!(whole[0].last_seen_ms, 10, "no row: its first appearance");
}
