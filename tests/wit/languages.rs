//! Go, Rust and Java end to end (docs/protocol.md 11) against a real daemon: caller warnings
//! and DEP_CHAIN through each language's import mechanism, never bound to a same-named symbol
//! elsewhere, and contracts on their signatures.

use std::path::Path;

use wit::protocol::{
    CheckContractsParams, CheckContractsParamsFilesItem, ConflictItem, ContractProposeParams,
    ContractRespondParams, IntentDeclareParams,
};

use crate::harness::*;
use crate::locks::acquire;

/// Copies the analysis fixture `tests/fixtures/analysis/<lang>` into the repository root.
fn copy_fixture(repo: &Repo, lang: &str) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/analysis")
        .join(lang);
    copy_dir(&from, repo.path());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `caller` calls `callee` across files: locking the callee warns about the locked caller,
/// and declaring the caller reports the locked callee as DEP_CHAIN; `unrelated` calls a
/// same-named symbol of its own and is never bound to `callee`.
fn cross_file_case(lang: &str, caller: &str, callee: &str, unrelated: Option<&str>) {
    let repo = Repo::new();
    copy_fixture(&repo, lang);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        client
            .lock_acquire(acquire(caller, "caller-owner", None))
            .await
            .unwrap();
        if let Some(unrelated) = unrelated {
            client
                .lock_acquire(acquire(unrelated, "unrelated-owner", None))
                .await
                .unwrap();
        }
        let locked = client
            .lock_acquire(acquire(callee, "callee-owner", None))
            .await
            .unwrap();
        let warned: Vec<&str> = locked
            .warnings
            .iter()
            .map(|w| w.locked_symbol.as_str())
            .collect();
        assert_eq!(warned, [caller], "{lang}: {:?}", locked.warnings);

        let (file, name) = caller.split_once(':').unwrap();
        let declared = client
            .intent_declare(IntentDeclareParams {
                session_id: "planner".into(),
                description: "change the caller".into(),
                files: vec![file.into()],
                symbols: vec![name.into()],
            })
            .await
            .unwrap();
        let chains: Vec<(String, String)> = declared
            .conflicts
            .items
            .iter()
            .filter_map(|item| match item {
                ConflictItem::DepChain {
                    intent_symbol,
                    locked_callee,
                    ..
                } => Some((intent_symbol.clone(), locked_callee.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(chains, [(caller.to_string(), callee.to_string())], "{lang}");
    });
}

#[test]
fn go_calls_resolve_through_packages() {
    cross_file_case(
        "go",
        "main.go:main",
        "geom/geom.go:Area",
        Some("other/other.go:Use"),
    );
}

#[test]
fn rust_calls_resolve_through_modules() {
    cross_file_case("rust", "src/lib.rs:run", "src/util/mod.rs:helper", None);
}

#[test]
fn java_calls_resolve_through_imports() {
    cross_file_case(
        "java",
        "src/main/java/com/ex/app/App.java:App.main",
        "src/main/java/com/ex/shapes/Util.java:Util.twice",
        None,
    );
}

#[test]
fn contracts_hold_on_go_signatures_by_tokens() {
    let repo = Repo::new();
    repo.write("go.mod", "module example.com/m\n\ngo 1.22\n");
    let source = "package m\n\n// Sum adds.\nfunc Sum(a int, b int) (int, error) {\n\treturn a + b, nil\n}\n";
    repo.write("sum.go", source);
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        let proposed = client
            .contract_propose(ContractProposeParams {
                session_id: "s1".into(),
                symbol_path: "sum.go:Sum".into(),
            })
            .await
            .unwrap();
        assert_eq!(proposed.signature, "(a int, b int) (int, error)");
        client
            .contract_respond(ContractRespondParams {
                contract_id: proposed.contract_id.clone(),
                session_id: "s2".into(),
                accept: true,
            })
            .await
            .unwrap();
        let check = |content: String| CheckContractsParams {
            files: vec![CheckContractsParamsFilesItem {
                path: "sum.go".into(),
                content,
            }],
        };
        let reformatted = source.replace("(a int, b int)", "(a int,\n\tb int, /* both */)");
        let ok = client.check_contracts(check(reformatted)).await.unwrap();
        assert!(ok.violations.is_empty(), "{:?}", ok.violations);
        let changed = source.replace("b int)", "b int64)");
        let broken = client.check_contracts(check(changed)).await.unwrap();
        assert_eq!(broken.violations.len(), 1);
        assert_eq!(broken.violations[0].actual, "(a int, b int64) (int, error)");
    });
}
