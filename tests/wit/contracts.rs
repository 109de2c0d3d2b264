//! `contract.propose`, `contract.respond`, `contract.query`, `check-contracts` end to end
//! (issue 5): the lifecycle, every error with its data, a table of edits for TypeScript and
//! Python with the expected verdicts, path traversal, and a `.tsx` file with JSX.

use std::time::Duration;

use serde_json::{json, Value};
use wit::client::WitClient;
use wit::protocol::{
    CheckContractsParams, CheckContractsParamsFilesItem, ContractProposeParams,
    ContractQueryParams, ContractRespondParams, ErrorCode, Violation,
};

use crate::harness::*;
use crate::intents::declare;
use crate::locks::{assert_domain, assert_invalid_fields, rpc_error};

const SHAPES_TS: &str = r#"import { helper } from './util';

export function area(w: number, h: number = 1): number {
  return helper(w * h);
}

export const double = (x: number): number => x * 2;

export class Shape {
  scale(factor: number): Shape {
    return this;
  }
}

export class Box<T> extends Base implements Sized {
  value?: T;
}

export interface Sized {
  width: number;
  height: number;
}

export type Handler = (req: Request) => void;

export function tail(): void {}
"#;

const AREA_PY: &str = r#"import math


def area(w: int, h: int = 1) -> int:
    return w * h


class Shape:
    def scale(self, factor: float) -> "Shape":
        return self


def tail():
    pass
"#;

pub fn propose(session: &str, symbol: &str) -> ContractProposeParams {
    ContractProposeParams {
        session_id: session.into(),
        symbol_path: symbol.into(),
    }
}

pub fn respond(contract: &str, session: &str, accept: bool) -> ContractRespondParams {
    ContractRespondParams {
        contract_id: contract.into(),
        session_id: session.into(),
        accept,
    }
}

pub fn cquery(symbol: Option<&str>, status: Option<&str>) -> ContractQueryParams {
    ContractQueryParams {
        symbol_path: symbol.map(str::to_owned),
        status: status.map(str::to_owned),
    }
}

fn check(files: &[(&str, &str)]) -> CheckContractsParams {
    CheckContractsParams {
        files: files
            .iter()
            .map(|(path, content)| CheckContractsParamsFilesItem {
                path: (*path).into(),
                content: (*content).into(),
            })
            .collect(),
    }
}

/// Proposes a contract on `symbol` as `owner` and has `other` accept it; returns its id and
/// signature.
async fn accepted(client: &WitClient, symbol: &str) -> (String, String) {
    let proposed = client
        .contract_propose(propose("owner", symbol))
        .await
        .unwrap();
    let answer = client
        .contract_respond(respond(&proposed.contract_id, "other", true))
        .await
        .unwrap();
    assert_eq!(answer.contract_id, proposed.contract_id);
    assert_eq!(
        serde_json::to_value(answer.status).unwrap(),
        json!("accepted")
    );
    (proposed.contract_id, proposed.signature)
}

async fn violations(client: &WitClient, files: &[(&str, &str)]) -> Vec<Violation> {
    client
        .check_contracts(check(files))
        .await
        .unwrap()
        .violations
}

#[test]
fn propose_captures_signatures_of_every_kind() {
    let repo = Repo::new();
    repo.write("src/shapes.ts", SHAPES_TS);
    repo.write("py/area.py", AREA_PY);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    let cases = [
        ("src/shapes.ts:area", "(w: number, h: number = 1): number"),
        ("src/shapes.ts:double", "(x: number): number"),
        ("src/shapes.ts:Shape.scale", "(factor: number): Shape"),
        ("src/shapes.ts:scale", "(factor: number): Shape"),
        ("src/shapes.ts:Box", "<T> extends Base implements Sized"),
        ("src/shapes.ts:Sized", "{ width: number; height: number; }"),
        ("src/shapes.ts:Handler", "= (req: Request) => void"),
        ("src/shapes.ts:tail", "(): void"),
        ("py/area.py:area", "(w: int, h: int = 1) -> int"),
        (
            "py/area.py:Shape.scale",
            "(self, factor: float) -> \"Shape\"",
        ),
        ("py/area.py:tail", "()"),
    ];
    block_on(async {
        for (symbol, signature) in cases {
            let proposed = client
                .contract_propose(propose("s1", symbol))
                .await
                .unwrap_or_else(|e| panic!("{symbol}: {e:?}"));
            assert_eq!(proposed.signature, signature, "{symbol}");
            assert_eq!(proposed.symbol_path, symbol);
        }
        // The path is normalised in the result and the record.
        let proposed = client
            .contract_propose(propose("s1", "./src//shapes.ts:area"))
            .await
            .unwrap();
        assert_eq!(proposed.symbol_path, "src/shapes.ts:area");
    });
}

#[test]
fn lifecycle_and_every_error_with_its_data() {
    let repo = Repo::new();
    repo.write("src/shapes.ts", SHAPES_TS);
    repo.write(
        "src/twice.ts",
        "class A { m(): void {} }\nclass B { m(x: number): void {} }\n",
    );
    repo.write("README.md", "# area\n");
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        // propose: params, then SYMBOL_NOT_FOUND for a missing file, language, symbol.
        let e = rpc_error(client.call_raw("contract.propose", json!({})).await);
        assert_invalid_fields(&e, &["sessionId", "symbolPath"]);
        let e = rpc_error(
            client
                .contract_propose(propose("s1", "src/shapes.ts"))
                .await,
        );
        assert_invalid_fields(&e, &["symbolPath"]);
        let e = rpc_error(
            client
                .contract_propose(propose("", "src/shapes.ts:area"))
                .await,
        );
        assert_invalid_fields(&e, &["sessionId"]);
        for (asked, reported) in [
            ("src/missing.ts:area", "src/missing.ts:area"),
            ("README.md:area", "README.md:area"),
            ("./src//shapes.ts:nope", "src/shapes.ts:nope"),
            ("src/shapes.ts:Shape.nope", "src/shapes.ts:Shape.nope"),
            ("src:area", "src:area"),
        ] {
            let e = rpc_error(client.contract_propose(propose("s1", asked)).await);
            assert_domain(
                &e,
                ErrorCode::SymbolNotFound,
                Some(json!({"symbolPath": reported})),
            );
        }
        let e = rpc_error(
            client
                .contract_propose(propose("s1", "src/twice.ts:m"))
                .await,
        );
        assert_domain(
            &e,
            ErrorCode::SymbolNotFound,
            Some(json!({"symbolPath": "src/twice.ts:m", "candidates": ["A.m", "B.m"]})),
        );
        assert_eq!(
            client.call_raw("contract.query", json!({})).await.unwrap(),
            json!([]),
            "failed proposals store nothing"
        );

        let first = client
            .contract_propose(propose("s1", "src/shapes.ts:area"))
            .await
            .unwrap();
        let second = client
            .contract_propose(propose("s1", "src/shapes.ts:double"))
            .await
            .unwrap();
        assert_ne!(first.contract_id, second.contract_id);
        let listed = client.call_raw("contract.query", json!({})).await.unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 2);
        let record = &listed[0];
        assert_eq!(record["contractId"], json!(first.contract_id));
        assert_eq!(record["proposerSessionId"], "s1");
        assert_eq!(record["symbolPath"], "src/shapes.ts:area");
        assert_eq!(record["signature"], json!(first.signature));
        assert_eq!(record["status"], "proposed");
        assert_eq!(record["responderSessionId"], Value::Null);
        assert_eq!(record["respondedAt"], Value::Null);
        assert!(record["proposedAt"].as_i64().unwrap() > 1_700_000_000_000);

        // respond: params, then not found, already resolved, self, in that order.
        let e = rpc_error(client.call_raw("contract.respond", json!({})).await);
        assert_invalid_fields(&e, &["contractId", "sessionId", "accept"]);
        let e = rpc_error(
            client
                .call_raw(
                    "contract.respond",
                    json!({"contractId": "x", "sessionId": "s2", "accept": "yes"}),
                )
                .await,
        );
        assert_invalid_fields(&e, &["accept"]);
        let e = rpc_error(
            client
                .contract_respond(respond("no-such-contract", "s2", true))
                .await,
        );
        assert_domain(&e, ErrorCode::ContractNotFound, None);
        let e = rpc_error(
            client
                .contract_respond(respond(&first.contract_id, "s1", true))
                .await,
        );
        assert_domain(&e, ErrorCode::SelfAcceptNotAllowed, None);
        let e = rpc_error(
            client
                .contract_respond(respond(&first.contract_id, "s1", false))
                .await,
        );
        assert_domain(&e, ErrorCode::SelfAcceptNotAllowed, None);
        let answer = client
            .contract_respond(respond(&first.contract_id, "s2", true))
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(answer.status).unwrap(),
            json!("accepted")
        );
        let answer = client
            .contract_respond(respond(&second.contract_id, "s3", false))
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(answer.status).unwrap(),
            json!("rejected")
        );
        let e = rpc_error(
            client
                .contract_respond(respond(&first.contract_id, "s3", false))
                .await,
        );
        assert_domain(
            &e,
            ErrorCode::ContractAlreadyResolved,
            Some(json!({"status": "accepted"})),
        );
        // Already resolved is checked before self.
        let e = rpc_error(
            client
                .contract_respond(respond(&second.contract_id, "s1", true))
                .await,
        );
        assert_domain(
            &e,
            ErrorCode::ContractAlreadyResolved,
            Some(json!({"status": "rejected"})),
        );

        let listed = client.call_raw("contract.query", json!({})).await.unwrap();
        assert_eq!(listed[0]["status"], "accepted");
        assert_eq!(listed[0]["responderSessionId"], "s2");
        assert!(
            listed[0]["respondedAt"].as_i64().unwrap() >= listed[0]["proposedAt"].as_i64().unwrap()
        );
        assert_eq!(listed[1]["status"], "rejected");
        assert_eq!(listed[1]["responderSessionId"], "s3");

        // query filters: exact normalised symbol path, validated status.
        let ids = |records: Vec<wit::protocol::ContractRecord>| {
            records
                .into_iter()
                .map(|r| r.contract_id)
                .collect::<Vec<_>>()
        };
        let (a, b) = (first.contract_id.as_str(), second.contract_id.as_str());
        assert_eq!(
            ids(client.contract_query(cquery(None, None)).await.unwrap()),
            [a, b]
        );
        assert_eq!(
            ids(client
                .contract_query(cquery(Some("./src//shapes.ts:area"), None))
                .await
                .unwrap()),
            [a]
        );
        assert_eq!(
            ids(client
                .contract_query(cquery(Some("src/shapes.ts:are"), None))
                .await
                .unwrap()),
            Vec::<String>::new()
        );
        assert_eq!(
            ids(client.contract_query(cquery(Some(""), None)).await.unwrap()),
            Vec::<String>::new()
        );
        assert_eq!(
            ids(client
                .contract_query(cquery(None, Some("rejected")))
                .await
                .unwrap()),
            [b]
        );
        assert_eq!(
            ids(client
                .contract_query(cquery(Some("src/shapes.ts:area"), Some("rejected")))
                .await
                .unwrap()),
            Vec::<String>::new()
        );
        assert_eq!(
            ids(client
                .contract_query(cquery(None, Some("proposed")))
                .await
                .unwrap()),
            Vec::<String>::new()
        );
        for status in ["", "ACCEPTED", "declared", "nope"] {
            let e = rpc_error(client.contract_query(cquery(None, Some(status))).await);
            assert_invalid_fields(&e, &["status"]);
        }
        let e = rpc_error(client.contract_query(cquery(Some("../x.ts:f"), None)).await);
        assert_invalid_fields(&e, &["symbolPath"]);

        // check-contracts: params.
        let e = rpc_error(client.call_raw("check-contracts", json!({})).await);
        assert_invalid_fields(&e, &["files"]);
        let e = rpc_error(
            client
                .call_raw("check-contracts", json!({"files": [{"path": "a.ts"}]}))
                .await,
        );
        assert_invalid_fields(&e, &["files"]);
        let e = rpc_error(
            client
                .call_raw("check-contracts", json!({"files": "a.ts"}))
                .await,
        );
        assert_invalid_fields(&e, &["files"]);
        for bad in ["../src/shapes.ts", "/src/shapes.ts", "src/\u{0}.ts"] {
            let e = rpc_error(client.check_contracts(check(&[(bad, SHAPES_TS)])).await);
            assert_invalid_fields(&e, &["files"]);
        }
        assert!(violations(&client, &[]).await.is_empty());
        // Only the accepted contract is checked: `double` was rejected.
        let broken = SHAPES_TS
            .replace("(x: number): number", "(x: string): string")
            .replace("h: number = 1", "h: number = 2");
        let found = violations(
            &client,
            &[("./src//shapes.ts", &broken), ("src/other.ts", "garbage(")],
        )
        .await;
        assert_eq!(
            serde_json::to_value(&found).unwrap(),
            json!([{"contractId": a, "symbolPath": "src/shapes.ts:area", "expected": "(w: number, h: number = 1): number", "actual": "(w: number, h: number = 2): number"}])
        );
        // The path is matched exactly: another file of the same name is not this one.
        assert!(violations(
            &client,
            &[("lib/src/shapes.ts", &broken), ("shapes.ts", &broken)]
        )
        .await
        .is_empty());
    });
}

/// `(name, edited source, violation expected)` for the contract on `area`.
fn ts_edits() -> Vec<(&'static str, String, bool)> {
    let s = SHAPES_TS;
    let moved = {
        let start = s.find("export function area").unwrap();
        let end = start + s[start..].find("}\n").unwrap() + 2;
        format!("{}{}\n{}", &s[..start], &s[end..], &s[start..end])
    };
    vec![
        ("added parameter", s.replace("h: number = 1)", "h: number = 1, d: number)"), true),
        ("removed parameter", s.replace("w: number, h: number = 1", "w: number"), true),
        ("renamed parameter", s.replace("area(w: number", "area(width: number"), true),
        ("changed type", s.replace("area(w: number", "area(w: bigint"), true),
        ("optional parameter", s.replace("area(w: number", "area(w?: number"), true),
        ("changed default", s.replace("h: number = 1", "h: number = 10"), true),
        ("changed return type", s.replace("= 1): number {", "= 1): string {"), true),
        ("type parameter added", s.replace("function area(", "function area<T>("), true),
        ("async added", s.replace("export function area(w: number, h: number = 1): number", "export async function area(w: number, h: number = 1): Promise<number>"), true),
        ("body-only change", s.replace("return helper(w * h);", "const product = w * h;\n  return helper(product) + 0;"), false),
        ("reformatted", s.replace("area(w: number, h: number = 1): number {", "area(\n    w:number,\n    h : number=1,\n)   :   number\n{"), false),
        ("comment added", s.replace("area(w: number, h: number = 1)", "area(w: number /* width */, h: number = 1 // height\n)").replace("export function area", "/** Area. */\nexport function area"), false),
        ("another symbol changed", s.replace("(x: number): number", "(x: string): number"), false),
        ("symbol removed", s.replace("export function area(w: number, h: number = 1): number {\n  return helper(w * h);\n}\n", ""), true),
        ("symbol renamed", s.replace("function area(", "function surface("), true),
        ("symbol moved within the file", moved, false),
        ("unchanged", s.to_owned(), false),
    ]
}

fn py_edits() -> Vec<(&'static str, String, bool)> {
    let s = AREA_PY;
    let moved = {
        let start = s.find("def area").unwrap();
        let end = start + s[start..].find("\n\n\n").unwrap() + 3;
        format!("{}{}\n\n\n{}", &s[..start], &s[end..], &s[start..end])
    };
    vec![
        (
            "added parameter",
            s.replace("h: int = 1)", "h: int = 1, d: int = 0)"),
            true,
        ),
        (
            "removed parameter",
            s.replace("w: int, h: int = 1", "w: int"),
            true,
        ),
        (
            "renamed parameter",
            s.replace("area(w: int", "area(width: int"),
            true,
        ),
        (
            "changed type",
            s.replace("area(w: int", "area(w: float"),
            true,
        ),
        (
            "changed default",
            s.replace("h: int = 1", "h: int = 2"),
            true,
        ),
        (
            "changed return type",
            s.replace(") -> int:", ") -> float:"),
            true,
        ),
        (
            "star args added",
            s.replace("h: int = 1)", "h: int = 1, *rest)"),
            true,
        ),
        // docs/protocol.md 2.5: the signature is the parameter list and return type; `async` is
        // not part of it.
        (
            "async added",
            s.replace("def area(", "async def area("),
            false,
        ),
        (
            "body-only change",
            s.replace("return w * h", "product = w * h\n    return product"),
            false,
        ),
        (
            "reformatted",
            s.replace(
                "area(w: int, h: int = 1) -> int:",
                "area(\n    w:int,\n    h: int=1,\n)->int:",
            ),
            false,
        ),
        (
            "comment added",
            s.replace(
                "area(w: int, h: int = 1)",
                "area(\n    w: int,  # width\n    h: int = 1,\n)",
            )
            .replace("def area", "# Area.\ndef area"),
            false,
        ),
        (
            "decorator added",
            s.replace("def area", "@cache\ndef area"),
            false,
        ),
        (
            "symbol removed",
            s.replace(
                "def area(w: int, h: int = 1) -> int:\n    return w * h\n",
                "",
            ),
            true,
        ),
        ("symbol moved within the file", moved, false),
        ("unchanged", s.to_owned(), false),
    ]
}

fn run_edit_table(
    path: &str,
    original: &str,
    symbol: &str,
    edits: Vec<(&'static str, String, bool)>,
) {
    let repo = Repo::new();
    repo.write(path, original);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    let symbol_path = format!("{path}:{symbol}");
    block_on(async {
        let (contract_id, expected) = accepted(&client, &symbol_path).await;
        let mut failures = Vec::new();
        for (name, edited, violation_expected) in edits {
            assert_ne!(
                edited == original,
                name != "unchanged",
                "the edit {name:?} changes the text"
            );
            let found = violations(&client, &[(path, &edited)]).await;
            if found.is_empty() == violation_expected {
                failures.push(format!(
                    "{name}: expected violation {violation_expected}, got {found:?}"
                ));
                continue;
            }
            if let Some(violation) = found.first() {
                assert_eq!(found.len(), 1, "{name}: one contract, one violation");
                assert_eq!(violation.contract_id, contract_id, "{name}");
                assert_eq!(violation.symbol_path, symbol_path, "{name}");
                assert_eq!(violation.expected, expected, "{name}");
                assert_ne!(violation.actual, expected, "{name}");
                if name.starts_with("symbol removed") || name.starts_with("symbol renamed") {
                    assert_eq!(
                        violation.actual, "(symbol not found in staged content)",
                        "{name}"
                    );
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    });
}

#[test]
fn typescript_edit_table() {
    run_edit_table("src/shapes.ts", SHAPES_TS, "area", ts_edits());
}

#[test]
fn python_edit_table() {
    run_edit_table("py/area.py", AREA_PY, "area", py_edits());
}

#[test]
fn method_contracts_follow_their_class() {
    let repo = Repo::new();
    repo.write("src/shapes.ts", SHAPES_TS);
    repo.write("py/area.py", AREA_PY);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let (ts, _) = accepted(&client, "src/shapes.ts:Shape.scale").await;
        let (py, _) = accepted(&client, "py/area.py:Shape.scale").await;
        let renamed_class = SHAPES_TS.replace("class Shape {", "class Figure {");
        let found = violations(&client, &[("src/shapes.ts", &renamed_class)]).await;
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].contract_id.as_str(), found[0].actual.as_str()),
            (ts.as_str(), "(symbol not found in staged content)")
        );
        let changed = AREA_PY.replace("factor: float", "factor: int");
        let found = violations(
            &client,
            &[("py/area.py", &changed), ("src/shapes.ts", SHAPES_TS)],
        )
        .await;
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].contract_id.as_str(), found[0].actual.as_str()),
            (py.as_str(), "(self, factor: int) -> \"Shape\"")
        );
    });
}

#[test]
fn tsx_with_jsx_is_parsed() {
    const BUTTON_TSX: &str = r#"import React from 'react';

interface ButtonProps { label: string; onClick?: () => void }

export function Button(props: ButtonProps): JSX.Element {
  return <button className="btn" onClick={props.onClick}>{props.label}</button>;
}

export const Card = ({ title }: { title: string }) => (
  <div className="card">
    <h1>{title}</h1>
  </div>
);
"#;
    let repo = Repo::new();
    repo.write("ui/button.tsx", BUTTON_TSX);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let (button, signature) = accepted(&client, "ui/button.tsx:Button").await;
        assert_eq!(signature, "(props: ButtonProps): JSX.Element");
        let (card, signature) = accepted(&client, "ui/button.tsx:Card").await;
        assert_eq!(signature, "({ title }: { title: string })");
        let new_markup = BUTTON_TSX
            .replace(
                "{props.label}</button>",
                "<span>{props.label}</span></button>",
            )
            .replace(
                "<h1>{title}</h1>",
                "<h2 id=\"t\">{title.toUpperCase()}</h2>",
            );
        assert!(violations(&client, &[("ui/button.tsx", &new_markup)])
            .await
            .is_empty());
        let changed = BUTTON_TSX
            .replace(
                "Button(props: ButtonProps)",
                "Button(props: ButtonProps, ref: unknown)",
            )
            .replace(
                "({ title }: { title: string })",
                "({ title, subtitle }: { title: string; subtitle: string })",
            );
        let found = violations(&client, &[("ui/button.tsx", &changed)]).await;
        let ids: Vec<_> = found.iter().map(|v| v.contract_id.as_str()).collect();
        assert_eq!(ids, [button.as_str(), card.as_str()]);
        assert_eq!(
            found[0].actual,
            "(props: ButtonProps, ref: unknown): JSX.Element"
        );
    });
}

#[test]
fn paths_outside_the_root_are_never_read() {
    let outside = tempfile::Builder::new()
        .prefix("witout")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::write(
        outside.path().join("secret.ts"),
        "export function secret(key: string): string {\n  return key;\n}\n",
    )
    .unwrap();
    let outside_name = outside
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let repo = Repo::new();
    repo.write("src/inside.ts", "export function inside(): void {}\n");
    std::os::unix::fs::symlink(
        outside.path().join("secret.ts"),
        repo.path().join("src/link.ts"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("ext")).unwrap();
    std::fs::create_dir_all(repo.path().join("src/dir.ts")).unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(repo.path().join("src/fifo.ts"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let _daemon = Daemon::start(&repo);
    let client = repo.client().with_timeout(Duration::from_secs(10));
    block_on(async {
        for symbol in [
            "src/link.ts:secret",
            "ext/secret.ts:secret",
            "src/dir.ts:secret",
            "src/fifo.ts:secret",
        ] {
            let e = rpc_error(client.contract_propose(propose("s1", symbol)).await);
            assert_domain(
                &e,
                ErrorCode::SymbolNotFound,
                Some(json!({"symbolPath": symbol})),
            );
        }
        let relative = format!("../{outside_name}/secret.ts:secret");
        let absolute = format!("{}:secret", outside.path().join("secret.ts").display());
        let dotted = format!("src/../../{outside_name}/secret.ts:secret");
        for symbol in [
            relative.as_str(),
            absolute.as_str(),
            dotted.as_str(),
            "src/\u{0}/x.ts:secret",
        ] {
            let e = rpc_error(client.contract_propose(propose("s1", symbol)).await);
            assert_invalid_fields(&e, &["symbolPath"]);
        }
        // An intent on a symlink out of the root resolves nothing there: file-level.
        let intent = client
            .intent_declare(declare(
                "s1",
                "peek",
                &["src/link.ts", "ext/secret.ts"],
                Some(&["secret"]),
            ))
            .await
            .unwrap();
        let records = client.call_raw("intent.query", json!({})).await.unwrap();
        let record = records
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["intentId"] == json!(intent.intent_id))
            .unwrap();
        assert_eq!(
            (&record["startByte"], &record["endByte"]),
            (&Value::Null, &Value::Null)
        );
        // And nothing through them shows up as a caller or callee.
        let locked = client
            .call_raw(
                "lock.acquire",
                json!({"symbolPath": "src/link.ts:secret", "sessionId": "s1"}),
            )
            .await
            .unwrap();
        assert_eq!(locked["warnings"], json!([]));
        assert_eq!(
            client.ping().await.unwrap(),
            wit::protocol::PingResult::Pong
        );
        // A very long path is refused by its length, before any file system call.
        let long = format!("{}x.ts:f", "deep/".repeat(2_000));
        let e = rpc_error(client.contract_propose(propose("s1", &long)).await);
        assert_invalid_fields(&e, &["symbolPath"]);
        // The in-root file is still fine.
        client
            .contract_propose(propose("s1", "src/inside.ts:inside"))
            .await
            .unwrap();
    });
    // A path that is not UTF-8 cannot be written in JSON: a lone surrogate escape is refused
    // as invalid params, and the daemon goes on serving.
    let (status, body) = post(
        &repo.socket(),
        r#"{"jsonrpc":"2.0","witVersion":"1","id":1,"method":"contract.propose","params":{"sessionId":"s1","symbolPath":"src/\udc80.ts:f"}}"#,
    );
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32600), "{body}");
    assert!(post(&repo.socket(), PING).1.contains("pong"));
}

/// A file whose name is not UTF-8 sits in the repository: indexing skips it and every other
/// file keeps working.
#[test]
fn a_file_name_that_is_not_utf8_is_skipped() {
    use std::os::unix::ffi::OsStrExt;
    let repo = Repo::new();
    repo.write(
        "src/a.ts",
        "export function a(): void { b(); }\nexport function b(): void {}\n",
    );
    let odd = repo
        .path()
        .join("src")
        .join(std::ffi::OsStr::from_bytes(b"bad-\xff-name.ts"));
    std::fs::write(odd, "export function hidden(): void {}\n").unwrap();
    let _daemon = Daemon::start(&repo);
    let client = repo.client().with_timeout(Duration::from_secs(10));
    block_on(async {
        let locked = client
            .call_raw(
                "lock.acquire",
                json!({"symbolPath": "src/a.ts:b", "sessionId": "s1"}),
            )
            .await
            .unwrap();
        assert_eq!(locked["symbolPath"], json!("src/a.ts:b"));
        let proposed = client
            .contract_propose(propose("s1", "src/a.ts:a"))
            .await
            .unwrap();
        assert_eq!(proposed.signature, "(): void");
    });
}
