//! Tests of the generated params decoders, types and error codes, compiled from the real
//! openrpc.json.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use serde_json::{json, Value};

use super::params::{MAX_LIST_ITEMS, MAX_PATH_BYTES};
use super::*;

fn errors_of<T: std::fmt::Debug>(result: Result<T, ParamErrors>) -> ParamErrors {
    result.expect_err("params should be rejected")
}

#[test]
fn decodes_valid_params() {
    let params = json!({"symbolPath": "src/a.ts:f", "sessionId": "s1", "ttlMs": 5000, "x": 1});
    let decoded = LockAcquireParams::from_params(Some(&params)).unwrap();
    assert_eq!(decoded.symbol_path, "src/a.ts:f");
    assert_eq!(decoded.session_id, "s1");
    assert_eq!(decoded.ttl_ms, Some(5000));
}

#[test]
fn reports_every_missing_required_param() {
    let errors = errors_of(LockAcquireParams::from_params(Some(&json!({}))));
    assert_eq!(errors.field_errors["symbolPath"], ["Required"]);
    assert_eq!(errors.field_errors["sessionId"], ["Required"]);
    assert!(errors.form_errors.is_empty());
    let errors = errors_of(LockAcquireParams::from_params(None));
    assert_eq!(errors.field_errors.len(), 2);
}

#[test]
fn reports_wrong_types_and_missing_params_together() {
    let params = json!({"symbolPath": 5, "ttlMs": "soon"});
    let errors = errors_of(LockAcquireParams::from_params(Some(&params)));
    assert_eq!(
        errors.field_errors["symbolPath"],
        ["Expected string, received number"]
    );
    assert_eq!(errors.field_errors["sessionId"], ["Required"]);
    assert_eq!(
        errors.field_errors["ttlMs"],
        ["Expected integer, received string"]
    );
    let errors = errors_of(LockAcquireParams::from_params(Some(
        &json!({"symbolPath": "a:b", "sessionId": "s", "ttlMs": 1.5}),
    )));
    assert_eq!(
        errors.field_errors["ttlMs"],
        ["Expected integer, received float"]
    );
}

#[test]
fn rejects_params_that_are_not_an_object() {
    let errors = errors_of(LockQueryParams::from_params(Some(&json!([1, 2]))));
    assert_eq!(errors.form_errors, ["Expected object, received array"]);
    assert!(errors.field_errors.is_empty());
}

#[test]
fn accepts_omitted_params_when_nothing_is_required() {
    assert_eq!(
        LockQueryParams::from_params(None).unwrap(),
        LockQueryParams { session_id: None }
    );
    assert_eq!(
        ContractQueryParams::from_params(Some(&json!({}))).unwrap(),
        ContractQueryParams {
            symbol_path: None,
            status: None
        }
    );
}

#[test]
fn ping_ignores_params() {
    assert!(PingParams::from_params(Some(&json!([1]))).is_ok());
    assert!(PingParams::from_params(Some(&json!("x"))).is_ok());
    assert!(PingParams::from_params(None).is_ok());
}

#[test]
fn checks_min_length_and_pattern() {
    let params = json!({"symbolPath": "no-colon", "sessionId": ""});
    let errors = errors_of(LockAcquireParams::from_params(Some(&params)));
    assert_eq!(
        errors.field_errors["symbolPath"],
        ["Invalid format: must contain \":\""]
    );
    assert_eq!(
        errors.field_errors["sessionId"],
        ["String must contain at least 1 character(s)"]
    );
}

#[test]
fn checks_enums() {
    let params = json!({"intentId": "i", "sessionId": "s", "status": "declared"});
    let errors = errors_of(IntentUpdateParams::from_params(Some(&params)));
    assert_eq!(
        errors.field_errors["status"],
        ["Invalid enum value. Expected 'active' | 'resolved' | 'abandoned', received 'declared'"]
    );
    let params = json!({"intentId": "i", "sessionId": "s", "status": "resolved"});
    let decoded = IntentUpdateParams::from_params(Some(&params)).unwrap();
    assert_eq!(decoded.status, IntentUpdateParamsStatus::Resolved);
}

#[test]
fn checks_arrays_and_their_elements() {
    let params = json!({"sessionId": "s", "description": "d", "files": []});
    let errors = errors_of(IntentDeclareParams::from_params(Some(&params)));
    assert_eq!(
        errors.field_errors["files"],
        ["Array must contain at least 1 element(s)"]
    );

    let params = json!({"sessionId": "s", "description": "d", "files": ["a.ts", "", 3]});
    let errors = errors_of(IntentDeclareParams::from_params(Some(&params)));
    assert_eq!(
        errors.field_errors["files"],
        [
            "files[1]: String must contain at least 1 character(s)",
            "files[2]: Expected string, received number"
        ]
    );

    let params = json!({"sessionId": "s", "description": "d", "files": ["a.ts"],
                        "symbols": ["f", "g"]});
    let decoded = IntentDeclareParams::from_params(Some(&params)).unwrap();
    assert_eq!(decoded.files, ["a.ts"]);
    assert_eq!(decoded.symbols, vec!["f".to_string(), "g".to_string()]);
}

#[test]
fn checks_nested_objects() {
    let params = json!({"files": [{"path": "a.ts", "content": "x"}, {"content": 1}]});
    let errors = errors_of(CheckContractsParams::from_params(Some(&params)));
    assert_eq!(
        errors.field_errors["files"],
        [
            "files[1].path: Required",
            "files[1].content: Expected string, received number"
        ]
    );
    let params = json!({"files": [{"path": "a.ts", "content": "x"}]});
    let decoded = CheckContractsParams::from_params(Some(&params)).unwrap();
    assert_eq!(decoded.files[0].path, "a.ts");
    assert_eq!(decoded.files[0].content, "x");
}

#[test]
fn enforces_size_limits() {
    let long_id = "s".repeat(257);
    let params = json!({"name": long_id, "sessionId": long_id});
    let errors = errors_of(RegisterParams::from_params(Some(&params)));
    assert_eq!(
        errors.field_errors["name"],
        ["String must be at most 256 bytes long (got 257)"]
    );
    assert_eq!(errors.field_errors.len(), 2);
    assert!(
        RegisterParams::from_params(Some(&json!({"name": "s".repeat(256), "sessionId": "x"})))
            .is_ok()
    );

    let long_path = format!("{}:f", "a".repeat(MAX_PATH_BYTES));
    let params = json!({"symbolPath": long_path, "sessionId": "s"});
    let errors = errors_of(ContractProposeParams::from_params(Some(&params)));
    assert!(errors.field_errors["symbolPath"][0].starts_with("String must be at most 4096"));

    let params = json!({"sessionId": "s", "description": "x".repeat(64 * 1024 + 1),
                        "files": ["a".repeat(MAX_PATH_BYTES + 1)]});
    let errors = errors_of(IntentDeclareParams::from_params(Some(&params)));
    assert!(errors.field_errors["description"][0].contains("65536 bytes"));
    assert!(errors.field_errors["files"][0].starts_with("files[0]: String must be at most 4096"));

    let many: Vec<Value> = (0..=MAX_LIST_ITEMS)
        .map(|i| json!(format!("f{i}.ts")))
        .collect();
    let params = json!({"sessionId": "s", "description": "d", "files": ["a.ts"], "symbols": many});
    let errors = errors_of(IntentDeclareParams::from_params(Some(&params)));
    assert_eq!(
        errors.field_errors["symbols"],
        ["Array must contain at most 1000 element(s) (got 1001)"]
    );

    let params = json!({"files": [{"path": "a".repeat(MAX_PATH_BYTES + 1), "content": "x"}]});
    let errors = errors_of(CheckContractsParams::from_params(Some(&params)));
    assert!(errors.field_errors["files"][0].starts_with("files[0].path: String must be at most"));
}

#[test]
fn caps_the_element_problems_reported() {
    let bad: Vec<Value> = (0..50).map(|_| json!(1)).collect();
    let params = json!({"sessionId": "s", "description": "d", "files": bad});
    let errors = errors_of(IntentDeclareParams::from_params(Some(&params)));
    let messages = &errors.field_errors["files"];
    assert_eq!(messages.len(), 11);
    assert_eq!(messages[10], "40 more problem(s) in the elements not shown");
}

#[test]
fn invalid_params_error_carries_form_and_field_errors() {
    let error = ProtocolError::invalid_params(ParamErrors::field("sessionId", "Required"));
    assert_eq!(error.code, -32600);
    assert_eq!(error.message, "INVALID_REQUEST");
    assert_eq!(
        error.data,
        Some(json!({"formErrors": [], "fieldErrors": {"sessionId": ["Required"]}}))
    );
    assert!(error.is(ErrorCode::InvalidRequest));
}

#[test]
fn error_codes_follow_the_spec() {
    assert_eq!(ErrorCode::LockConflict.code(), -32000);
    assert_eq!(ErrorCode::LockConflict.message(), "LOCK_CONFLICT");
    assert_eq!(ErrorCode::MethodNotFound.code(), -32601);
    assert_eq!(ErrorCode::MethodNotFound.code(), METHOD_NOT_FOUND_CODE);
    assert_eq!(ErrorCode::InvalidRequest.code(), INVALID_REQUEST_CODE);
    assert_eq!(ErrorCode::ALL.len(), 13);
    assert_eq!(
        ErrorCode::from_message("SESSION_NOT_FOUND"),
        Some(ErrorCode::SessionNotFound)
    );
    assert_eq!(
        ErrorCode::from_message("SELF_ACCEPT_NOT_ALLOWED"),
        Some(ErrorCode::SelfAcceptNotAllowed)
    );
    let error = ProtocolError::new(ErrorCode::LockNotHeld, Some(json!({"heldBy": "s2"})));
    assert_eq!(error.error_code(), Some(ErrorCode::LockNotHeld));
    assert_eq!(ProtocolError::internal("boom").code, -32603);
}

#[test]
fn nullable_fields_serialise_as_null() {
    let record = IntentRecord {
        intent_id: "i".into(),
        session_id: "s".into(),
        description: "d".into(),
        files: ",a.ts,".into(),
        symbols: "[]".into(),
        start_byte: None,
        end_byte: None,
        status: IntentRecordStatus::Declared,
        declared_at: 1,
        updated_at: 2,
        regions: Vec::new(),
    };
    let value = serde_json::to_value(&record).unwrap();
    assert_eq!(value["startByte"], Value::Null);
    assert_eq!(value["endByte"], Value::Null);
    assert_eq!(value["status"], "declared");
    assert!(value.get("regions").is_none(), "no regions: absent");
}

#[test]
fn conflict_items_are_tagged_by_type() {
    let item: ConflictItem = serde_json::from_value(json!({
        "type": "LOCK_INTERSECTION", "symbolPath": "a.ts:f", "heldBy": "s",
        "expiresAt": "2026-01-15T10:30:00.000Z"}))
    .unwrap();
    let back = serde_json::to_value(&item).unwrap();
    assert_eq!(back["type"], "LOCK_INTERSECTION");
    assert_eq!(back["expiresAt"], "2026-01-15T10:30:00.000Z");
}

#[test]
fn methods_table_lists_every_method() {
    let names: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
    assert_eq!(
        names,
        [
            "ping",
            "register",
            "lock.acquire",
            "lock.release",
            "lock.query",
            "lock.waits",
            "intent.declare",
            "intent.update",
            "intent.query",
            "contract.propose",
            "contract.respond",
            "contract.query",
            "check-contracts",
            "session.heartbeat",
            "session.end",
            "session.list",
            "events.poll",
            "edit.preflight",
            "worktree.forecast",
            "work.begin",
            "work.end",
            "work.owners",
            "work.changes"
        ]
    );
    assert_eq!(
        method("lock.acquire").unwrap().params,
        ["symbolPath", "sessionId", "ttlMs", "waitMs"]
    );
    assert_eq!(
        method("register").unwrap().params,
        ["name", "sessionId", "pid", "leaseMs"]
    );
    let spec: Value = serde_json::from_str(SPEC_JSON).unwrap();
    assert_eq!(spec["methods"].as_array().unwrap().len(), METHODS.len());
}

/// The spec's `minimum`/`maximum` bound the new integer params (docs/protocol.md 7.1, 8.1, 9.2),
/// each problem keyed by its param, every problem at once.
#[test]
fn integer_bounds_of_the_extensions_are_checked() {
    let errors = errors_of(LockAcquireParams::from_params(Some(&json!(
        {"symbolPath": "a:b", "sessionId": "s", "waitMs": -1}
    ))));
    assert_eq!(
        errors.field_errors["waitMs"],
        ["Number must be an integer from 0 to 600000"]
    );
    assert!(LockAcquireParams::from_params(Some(&json!(
        {"symbolPath": "a:b", "sessionId": "s", "waitMs": 600000}
    )))
    .is_ok());
    assert!(LockAcquireParams::from_params(Some(&json!(
        {"symbolPath": "a:b", "sessionId": "s", "waitMs": 600001}
    )))
    .is_err());

    let errors = errors_of(RegisterParams::from_params(Some(&json!(
        {"name": "n", "sessionId": "s", "pid": 0, "leaseMs": 999}
    ))));
    assert_eq!(
        errors.field_errors["pid"],
        ["Number must be greater than or equal to 1"]
    );
    assert_eq!(
        errors.field_errors["leaseMs"],
        ["Number must be an integer from 1000 to 86400000"]
    );

    let errors = errors_of(EventsPollParams::from_params(Some(&json!(
        {"since": -1, "waitMs": 60001, "limit": 0, "types": []}
    ))));
    assert_eq!(errors.field_errors.len(), 4, "{errors:?}");
    let errors = errors_of(EventsPollParams::from_params(Some(&json!(
        {"types": ["lock.acquired", "lock.stolen"]}
    ))));
    assert!(
        errors.field_errors["types"][0].contains("lock.stolen"),
        "{errors:?}"
    );
    let ok = EventsPollParams::from_params(Some(&json!({"types": ["lock.acquired"]}))).unwrap();
    assert_eq!(ok.types.len(), 1);
    assert!(EventsPollParams::from_params(None).is_ok());
}
