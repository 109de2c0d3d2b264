//! `intent.declare`, `intent.update`, `intent.query` end to end (issue 4): errors with their
//! data, overlap by byte range, file-level intents, the three detectors in order, the full
//! transitions table, query filters, and state that survives a restart.

use serde_json::{json, Value};
use wit::client::WitClient;
use wit::protocol::{
    ContractProposeParams, ContractRespondParams, ErrorCode, IntentDeclareParams,
    IntentDeclareResult, IntentQueryParams, IntentRecord, IntentUpdateParams,
    IntentUpdateParamsStatus,
};

use crate::harness::*;
use crate::locks::{
    acquire, assert_domain, assert_invalid_fields, query, rpc_error, write_import_pair,
};

const TWO_FUNCTIONS: &str = "export function f(a: number): number {\n  return a;\n}\n\nexport function g(b: string): string {\n  return b;\n}\n";

/// Byte range of the declaration starting at `start_marker` and ending after `end_marker`.
fn range_of(text: &str, start_marker: &str, end_marker: &str) -> (i64, i64) {
    let start = text.find(start_marker).unwrap();
    let end = start + text[start..].find(end_marker).unwrap() + end_marker.len();
    (start as i64, end as i64)
}

pub fn declare(
    session: &str,
    description: &str,
    files: &[&str],
    symbols: Option<&[&str]>,
) -> IntentDeclareParams {
    IntentDeclareParams {
        session_id: session.into(),
        description: description.into(),
        files: files.iter().map(|f| f.to_string()).collect(),
        symbols: symbols
            .unwrap_or_default()
            .iter()
            .map(|s| s.to_string())
            .collect(),
    }
}

fn update(intent: &str, session: &str, status: IntentUpdateParamsStatus) -> IntentUpdateParams {
    IntentUpdateParams {
        intent_id: intent.into(),
        session_id: session.into(),
        status,
    }
}

fn iquery(session: Option<&str>, file: Option<&str>, status: Option<&str>) -> IntentQueryParams {
    IntentQueryParams {
        session_id: session.map(str::to_owned),
        file: file.map(str::to_owned),
        status: status.map(str::to_owned),
    }
}

fn items(result: &IntentDeclareResult) -> Value {
    let items = serde_json::to_value(&result.conflicts.items).unwrap();
    assert_eq!(
        result.conflicts.has_conflicts,
        !items.as_array().unwrap().is_empty()
    );
    items
}

async fn record(client: &WitClient, intent_id: &str) -> IntentRecord {
    let all = client.intent_query(iquery(None, None, None)).await.unwrap();
    let mut more = Vec::new();
    for status in ["resolved", "abandoned"] {
        more.extend(
            client
                .intent_query(iquery(None, None, Some(status)))
                .await
                .unwrap(),
        );
    }
    all.into_iter()
        .chain(more)
        .find(|r| r.intent_id == intent_id)
        .unwrap()
}

fn overlap(intent: &IntentDeclareResult, session: &str, description: &str) -> Value {
    json!({"type": "INTENT_OVERLAP", "overlappingIntentId": intent.intent_id, "overlappingSessionId": session, "description": description})
}

#[test]
fn declare_update_query_validate_every_param() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let e = rpc_error(client.call_raw("intent.declare", json!({})).await);
        assert_invalid_fields(&e, &["sessionId", "description", "files"]);
        let e = rpc_error(
            client
                .call_raw(
                    "intent.declare",
                    json!({"sessionId": 1, "description": true, "files": "a.ts", "symbols": "f"}),
                )
                .await,
        );
        assert_invalid_fields(&e, &["sessionId", "description", "files", "symbols"]);
        for files in [
            json!([]),
            json!([""]),
            json!(["../a.ts"]),
            json!(["/abs.ts"]),
            json!(["src/.."]),
            json!(["a\u{0}b.ts"]),
        ] {
            let e = rpc_error(
                client
                    .call_raw(
                        "intent.declare",
                        json!({"sessionId": "s", "description": "d", "files": files}),
                    )
                    .await,
            );
            assert_invalid_fields(&e, &["files"]);
        }
        let many: Vec<String> = (0..1001).map(|i| format!("f{i}.ts")).collect();
        let e = rpc_error(
            client
                .intent_declare(IntentDeclareParams {
                    session_id: "s".into(),
                    description: "d".into(),
                    files: many,
                    symbols: Vec::new(),
                })
                .await,
        );
        assert_invalid_fields(&e, &["files"]);
        let e = rpc_error(
            client
                .intent_declare(declare("s", "", &["a.ts"], None))
                .await,
        );
        assert_invalid_fields(&e, &["description"]);
        let e = rpc_error(
            client
                .intent_declare(declare("s", &"d".repeat(64 * 1024 + 1), &["a.ts"], None))
                .await,
        );
        assert_invalid_fields(&e, &["description"]);

        let e = rpc_error(client.call_raw("intent.update", json!({})).await);
        assert_invalid_fields(&e, &["intentId", "sessionId", "status"]);
        for status in ["declared", "", "ACTIVE", "done"] {
            let e = rpc_error(
                client
                    .call_raw(
                        "intent.update",
                        json!({"intentId": "i", "sessionId": "s", "status": status}),
                    )
                    .await,
            );
            assert_invalid_fields(&e, &["status"]);
        }
        for status in ["", "bogus", "DECLARED", "pending"] {
            let e = rpc_error(client.intent_query(iquery(None, None, Some(status))).await);
            assert_invalid_fields(&e, &["status"]);
        }
        let e = rpc_error(
            client
                .call_raw(
                    "intent.query",
                    json!({"sessionId": 1, "file": [], "status": 2}),
                )
                .await,
        );
        assert_invalid_fields(&e, &["sessionId", "file", "status"]);
        // Nothing was stored by the refused calls.
        assert_eq!(
            client.call_raw("intent.query", Value::Null).await.unwrap(),
            json!([])
        );
    });
}

#[test]
fn update_errors_carry_their_data_in_order() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let mine = client
            .intent_declare(declare("s1", "work", &["a.ts"], None))
            .await
            .unwrap();
        let e = rpc_error(
            client
                .intent_update(update(
                    "no-such-intent",
                    "s1",
                    IntentUpdateParamsStatus::Active,
                ))
                .await,
        );
        assert_domain(&e, ErrorCode::IntentNotFound, None);
        let e = rpc_error(
            client
                .intent_update(update(
                    &mine.intent_id,
                    "s2",
                    IntentUpdateParamsStatus::Active,
                ))
                .await,
        );
        assert_domain(&e, ErrorCode::IntentNotOwned, None);
        client
            .intent_update(update(
                &mine.intent_id,
                "s1",
                IntentUpdateParamsStatus::Resolved,
            ))
            .await
            .unwrap();
        // Ownership is checked before the transition.
        let e = rpc_error(
            client
                .intent_update(update(
                    &mine.intent_id,
                    "s2",
                    IntentUpdateParamsStatus::Active,
                ))
                .await,
        );
        assert_domain(&e, ErrorCode::IntentNotOwned, None);
        let e = rpc_error(
            client
                .intent_update(update(
                    &mine.intent_id,
                    "s1",
                    IntentUpdateParamsStatus::Active,
                ))
                .await,
        );
        assert_domain(
            &e,
            ErrorCode::InvalidTransition,
            Some(json!({"current": "resolved", "requested": "active"})),
        );
    });
}

#[test]
fn transitions_table_is_complete() {
    use IntentUpdateParamsStatus::{Abandoned, Active, Resolved};
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    let wire = |s: &IntentUpdateParamsStatus| match s {
        Active => "active",
        Resolved => "resolved",
        Abandoned => "abandoned",
    };
    // (path to the starting state, requested, allowed)
    let starts: [(&str, &[IntentUpdateParamsStatus]); 4] = [
        ("declared", &[]),
        ("active", &[Active]),
        ("resolved", &[Resolved]),
        ("abandoned", &[Abandoned]),
    ];
    let allowed = |from: &str, to: &str| {
        matches!(
            (from, to),
            ("declared", _) | ("active", "resolved" | "abandoned")
        )
    };
    block_on(async {
        for (from, path) in starts {
            for requested in [Active, Resolved, Abandoned] {
                let intent = client
                    .intent_declare(declare("s", "t", &["t.ts"], None))
                    .await
                    .unwrap();
                for step in path {
                    client
                        .intent_update(update(&intent.intent_id, "s", *step))
                        .await
                        .unwrap();
                }
                let to = wire(&requested);
                let before = record(&client, &intent.intent_id).await;
                assert_eq!(serde_json::to_value(before.status).unwrap(), json!(from));
                let outcome = client
                    .intent_update(update(&intent.intent_id, "s", requested))
                    .await;
                if allowed(from, to) {
                    let done = outcome.unwrap_or_else(|e| panic!("{from} -> {to}: {e:?}"));
                    assert_eq!(done.intent_id, intent.intent_id);
                    assert_eq!(done.status, to);
                    assert!(done.updated_at >= before.updated_at);
                    let after = record(&client, &intent.intent_id).await;
                    assert_eq!(serde_json::to_value(after.status).unwrap(), json!(to));
                    assert_eq!(after.updated_at, done.updated_at);
                    assert_eq!(after.declared_at, before.declared_at);
                } else {
                    let e = rpc_error(outcome);
                    assert_domain(
                        &e,
                        ErrorCode::InvalidTransition,
                        Some(json!({"current": from, "requested": to})),
                    );
                    let after = record(&client, &intent.intent_id).await;
                    assert_eq!(
                        serde_json::to_value(&after).unwrap(),
                        serde_json::to_value(&before).unwrap(),
                        "{from} -> {to} left the intent as it was"
                    );
                }
            }
        }
    });
}

#[test]
fn two_functions_of_one_file_overlap_only_when_their_ranges_do() {
    let repo = Repo::new();
    repo.write("src/m.ts", TWO_FUNCTIONS);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    let f = range_of(TWO_FUNCTIONS, "export function f", "}");
    let g = range_of(TWO_FUNCTIONS, "export function g", "}");
    block_on(async {
        let on_f = client
            .intent_declare(declare("s1", "edit f", &["src/m.ts"], Some(&["f"])))
            .await
            .unwrap();
        assert_eq!(items(&on_f), json!([]));
        let on_f_record = record(&client, &on_f.intent_id).await;
        assert_eq!(
            (on_f_record.start_byte, on_f_record.end_byte),
            (Some(f.0), Some(f.1))
        );
        assert_eq!(on_f_record.files, ",src/m.ts,");
        assert_eq!(on_f_record.symbols, r#"["f"]"#);

        let on_g = client
            .intent_declare(declare("s2", "edit g", &["./src//m.ts"], Some(&["g"])))
            .await
            .unwrap();
        assert_eq!(items(&on_g), json!([]), "f and g do not intersect");
        let on_g_record = record(&client, &on_g.intent_id).await;
        assert_eq!(
            (on_g_record.start_byte, on_g_record.end_byte),
            (Some(g.0), Some(g.1))
        );
        assert_eq!(on_g_record.files, ",src/m.ts,");

        let again_f = client
            .intent_declare(declare("s3", "also f", &["src/m.ts"], Some(&["f"])))
            .await
            .unwrap();
        assert_eq!(items(&again_f), json!([overlap(&on_f, "s1", "edit f")]));

        // The same session never conflicts with itself.
        let own = client
            .intent_declare(declare("s1", "more f", &["src/m.ts"], Some(&["f"])))
            .await
            .unwrap();
        assert_eq!(items(&own), json!([overlap(&again_f, "s3", "also f")]));

        // A file-level intent overlaps everything in the file, oldest first.
        let whole = client
            .intent_declare(declare("s4", "whole file", &["src/m.ts"], None))
            .await
            .unwrap();
        assert_eq!(
            items(&whole),
            json!([
                overlap(&on_f, "s1", "edit f"),
                overlap(&on_g, "s2", "edit g"),
                overlap(&again_f, "s3", "also f"),
                overlap(&own, "s1", "more f"),
            ])
        );
        let whole_record = record(&client, &whole.intent_id).await;
        assert_eq!(
            (whole_record.start_byte, whole_record.end_byte),
            (None, None)
        );
        assert_eq!(whole_record.symbols, "[]");

        // Resolved and abandoned intents no longer take part.
        for (intent, session, status) in [
            (&on_f, "s1", IntentUpdateParamsStatus::Resolved),
            (&again_f, "s3", IntentUpdateParamsStatus::Abandoned),
            (&own, "s1", IntentUpdateParamsStatus::Active),
            (&whole, "s4", IntentUpdateParamsStatus::Abandoned),
        ] {
            client
                .intent_update(update(&intent.intent_id, session, status))
                .await
                .unwrap();
        }
        let late = client
            .intent_declare(declare("s5", "late f", &["src/m.ts"], Some(&["f"])))
            .await
            .unwrap();
        assert_eq!(
            items(&late),
            json!([overlap(&own, "s1", "more f")]),
            "active intents still count"
        );
        // Another file never overlaps.
        let elsewhere = client
            .intent_declare(declare("s6", "elsewhere", &["src/n.ts"], None))
            .await
            .unwrap();
        assert_eq!(items(&elsewhere), json!([]));
    });
}

#[test]
fn file_level_rules_per_file_and_for_unknown_symbols() {
    let repo = Repo::new();
    repo.write("src/m.ts", TWO_FUNCTIONS);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    let f = range_of(TWO_FUNCTIONS, "export function f", "}");
    let g = range_of(TWO_FUNCTIONS, "export function g", "}");
    block_on(async {
        // `f` and `g` resolve in m.ts only: x.py is file-level, m.ts covers f..g; the record's
        // range comes from the first listed file that is not file-level.
        let mixed = client
            .intent_declare(declare(
                "s1",
                "mixed",
                &["src/x.py", "src/m.ts"],
                Some(&["g", "f"]),
            ))
            .await
            .unwrap();
        let mixed_record = record(&client, &mixed.intent_id).await;
        assert_eq!(
            (mixed_record.start_byte, mixed_record.end_byte),
            (Some(f.0), Some(g.1))
        );
        assert_eq!(mixed_record.files, ",src/x.py,src/m.ts,");
        assert_eq!(mixed_record.symbols, r#"["g","f"]"#);
        // x.py is file-level for `mixed`: any intent there overlaps.
        let py = client
            .intent_declare(declare("s2", "py", &["src/x.py"], Some(&["h"])))
            .await
            .unwrap();
        assert_eq!(items(&py), json!([overlap(&mixed, "s1", "mixed")]));

        // A symbol found in no listed file is new code of unknown place: every file is
        // file-level, so it overlaps an intent on g alone and records no range.
        let other = client
            .intent_declare(declare("s3", "q", &["src/q.ts"], None))
            .await
            .unwrap();
        assert_eq!(items(&other), json!([]));
        let unknown = client
            .intent_declare(declare(
                "s4",
                "new code",
                &["src/m.ts", "src/q.ts"],
                Some(&["f", "brandNew"]),
            ))
            .await
            .unwrap();
        assert_eq!(
            items(&unknown),
            json!([overlap(&mixed, "s1", "mixed"), overlap(&other, "s3", "q")])
        );
        let unknown_record = record(&client, &unknown.intent_id).await;
        assert_eq!(
            (unknown_record.start_byte, unknown_record.end_byte),
            (None, None)
        );
    });
}

#[test]
fn detectors_report_overlap_then_lock_intersection_then_dep_chain() {
    let repo = Repo::new();
    write_import_pair(&repo);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let older = client
            .intent_declare(declare("s1", "older", &["src/a.ts"], Some(&["caller"])))
            .await
            .unwrap();
        let newer = client
            .intent_declare(declare("s3", "newer", &["src/a.ts"], None))
            .await
            .unwrap();
        let on_caller = client
            .lock_acquire(acquire("src/a.ts:caller", "s2", None))
            .await
            .unwrap();
        let on_callee = client
            .lock_acquire(acquire("src/b.ts:callee", "s2", None))
            .await
            .unwrap();
        assert!(
            on_callee.warnings.is_empty(),
            "the caller is locked by s2 itself: {on_callee:?}"
        );
        // My own locks never conflict with me.
        client
            .lock_acquire(acquire("src/a.ts:bystander", "me", None))
            .await
            .unwrap();

        let mine = client
            .intent_declare(declare(
                "me",
                "mine",
                &["src/a.ts"],
                Some(&["caller", "bystander"]),
            ))
            .await
            .unwrap();
        assert_eq!(
            items(&mine),
            json!([
                overlap(&older, "s1", "older"),
                overlap(&newer, "s3", "newer"),
                {"type": "LOCK_INTERSECTION", "symbolPath": "src/a.ts:caller", "heldBy": "s2", "expiresAt": on_caller.expires_at},
                {"type": "DEP_CHAIN", "intentSymbol": "src/a.ts:caller", "lockedCallee": "src/b.ts:callee", "heldBy": "s2"},
            ])
        );

        // DEP_CHAIN alone, from a session with no overlapping intent: across the import.
        client
            .intent_update(update(
                &older.intent_id,
                "s1",
                IntentUpdateParamsStatus::Abandoned,
            ))
            .await
            .unwrap();
        client
            .intent_update(update(
                &newer.intent_id,
                "s3",
                IntentUpdateParamsStatus::Abandoned,
            ))
            .await
            .unwrap();
        client
            .intent_update(update(
                &mine.intent_id,
                "me",
                IntentUpdateParamsStatus::Abandoned,
            ))
            .await
            .unwrap();
        client
            .call_raw(
                "lock.release",
                json!({"symbolPath": "src/a.ts:caller", "sessionId": "s2"}),
            )
            .await
            .unwrap();
        let dep = client
            .intent_declare(declare("s4", "dep", &["src/a.ts"], Some(&["caller"])))
            .await
            .unwrap();
        assert_eq!(
            items(&dep),
            json!([{"type": "DEP_CHAIN", "intentSymbol": "src/a.ts:caller", "lockedCallee": "src/b.ts:callee", "heldBy": "s2"}])
        );
        // An expired lock is no conflict.
        client
            .lock_acquire(acquire("src/b.ts:unrelated", "s2", Some(20)))
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
        let late = client
            .intent_declare(declare("s5", "late", &["src/b.ts"], Some(&["unrelated"])))
            .await
            .unwrap();
        assert_eq!(items(&late), json!([]));
    });
}

#[test]
fn query_filters_apply_literally() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let a = client
            .intent_declare(declare("s1", "a", &["src/a.ts", "src/b.ts"], Some(&["x"])))
            .await
            .unwrap();
        let b = client
            .intent_declare(declare("s2", "b", &["src/a.tsx"], None))
            .await
            .unwrap();
        let c = client
            .intent_declare(declare("s1", "c", &["lib/src/a.ts"], None))
            .await
            .unwrap();
        let d = client
            .intent_declare(declare("s2", "d", &["src/b.ts"], None))
            .await
            .unwrap();
        client
            .intent_update(update(&c.intent_id, "s1", IntentUpdateParamsStatus::Active))
            .await
            .unwrap();
        client
            .intent_update(update(
                &d.intent_id,
                "s2",
                IntentUpdateParamsStatus::Resolved,
            ))
            .await
            .unwrap();
        let (a, b, c, d) = (
            a.intent_id.as_str(),
            b.intent_id.as_str(),
            c.intent_id.as_str(),
            d.intent_id.as_str(),
        );
        let none: [&str; 0] = [];
        let ids = |records: Vec<IntentRecord>| {
            records.into_iter().map(|r| r.intent_id).collect::<Vec<_>>()
        };
        let q = |s: Option<&'static str>, f: Option<&'static str>, st: Option<&'static str>| {
            let client = client.clone();
            async move { ids(client.intent_query(iquery(s, f, st)).await.unwrap()) }
        };
        assert_eq!(q(None, None, None).await, [a, b, c]);
        assert_eq!(q(Some("s1"), None, None).await, [a, c]);
        assert_eq!(q(Some(""), None, None).await, none);
        assert_eq!(q(None, Some("src/a.ts"), None).await, [a]);
        assert_eq!(q(None, Some("./src//a.ts"), None).await, [a]);
        assert_eq!(q(None, Some("a.ts"), None).await, none);
        assert_eq!(q(None, Some("src/a"), None).await, none);
        assert_eq!(q(None, Some("SRC/A.TS"), None).await, none);
        assert_eq!(q(None, Some(""), None).await, none);
        assert_eq!(q(None, Some("src/b.ts"), None).await, [a]);
        assert_eq!(q(None, Some("src/b.ts"), Some("resolved")).await, [d]);
        assert_eq!(q(None, None, Some("declared")).await, [a, b]);
        assert_eq!(q(None, None, Some("active")).await, [c]);
        assert_eq!(q(None, None, Some("abandoned")).await, none);
        assert_eq!(
            q(Some("s2"), Some("src/a.tsx"), Some("declared")).await,
            [b]
        );
        // The raw record has exactly the spec's keys, nullable ranges as null.
        let raw = client
            .call_raw("intent.query", json!({"file": "src/a.tsx"}))
            .await
            .unwrap();
        let record = raw[0].as_object().unwrap();
        let mut keys: Vec<&str> = record.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "declaredAt",
                "description",
                "endByte",
                "files",
                "intentId",
                "sessionId",
                "startByte",
                "status",
                "symbols",
                "updatedAt"
            ]
        );
        assert_eq!(record["startByte"], Value::Null);
        assert_eq!(record["files"], ",src/a.tsx,");
    });
}

#[test]
fn state_survives_a_daemon_restart() {
    let repo = Repo::new();
    repo.write("src/m.ts", TWO_FUNCTIONS);
    let mut daemon = Daemon::start(&repo);
    let (locks_before, intents_before, contracts_before) = block_on(async {
        let client = repo.client();
        client
            .lock_acquire(acquire("src/m.ts:f", "s1", None))
            .await
            .unwrap();
        client
            .lock_acquire(acquire("src/m.ts:g", "s2", Some(600_000)))
            .await
            .unwrap();
        let i1 = client
            .intent_declare(declare("s1", "one", &["src/m.ts"], Some(&["f"])))
            .await
            .unwrap();
        client
            .intent_declare(declare("s2", "two", &["src/m.ts"], Some(&["g"])))
            .await
            .unwrap();
        client
            .intent_update(update(
                &i1.intent_id,
                "s1",
                IntentUpdateParamsStatus::Active,
            ))
            .await
            .unwrap();
        let proposed = client
            .contract_propose(ContractProposeParams {
                session_id: "s1".into(),
                symbol_path: "src/m.ts:f".into(),
            })
            .await
            .unwrap();
        client
            .contract_respond(ContractRespondParams {
                contract_id: proposed.contract_id,
                session_id: "s2".into(),
                accept: true,
            })
            .await
            .unwrap();
        (
            client.lock_query(query(None)).await.unwrap(),
            client.intent_query(iquery(None, None, None)).await.unwrap(),
            client.call_raw("contract.query", json!({})).await.unwrap(),
        )
    });
    assert!(daemon.terminate().success());
    let _daemon = Daemon::start(&repo);
    block_on(async {
        let client = repo.client();
        let locks_after = client.lock_query(query(None)).await.unwrap();
        assert_eq!(locks_after.len(), 2);
        for (before, after) in locks_before.iter().zip(&locks_after) {
            assert_eq!(
                (
                    &before.symbol_path,
                    &before.session_id,
                    &before.acquired_at,
                    &before.expires_at
                ),
                (
                    &after.symbol_path,
                    &after.session_id,
                    &after.acquired_at,
                    &after.expires_at
                )
            );
        }
        let intents_after = client.intent_query(iquery(None, None, None)).await.unwrap();
        assert_eq!(
            serde_json::to_value(&intents_after).unwrap(),
            serde_json::to_value(&intents_before).unwrap()
        );
        assert_eq!(
            client.call_raw("contract.query", json!({})).await.unwrap(),
            contracts_before
        );
        // Locks still exclude after the restart.
        let e = rpc_error(client.lock_acquire(acquire("src/m.ts:f", "s9", None)).await);
        assert!(e.is(ErrorCode::LockConflict));
    });
}
