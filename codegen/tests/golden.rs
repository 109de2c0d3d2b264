//! Golden copies of the code generated from the project's openrpc.json.
//!
//! Every generator change shows up as a readable diff of `tests/golden/*` (the Rust files and
//! the MCP tool table `mcp_tools.json`). When the test fails because the output changed on
//! purpose, rerun it with `WIT_UPDATE_GOLDEN=1` to rewrite the golden files, then review and
//! commit the diff.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn spec_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../openrpc.json");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn check_golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("WIT_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let first_difference = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .find(|(_, (e, a))| e != a)
            .map(|(i, (e, a))| format!("line {}:\n  golden:    {e}\n  generated: {a}", i + 1))
            .unwrap_or_else(|| "one file is a prefix of the other".to_string());
        panic!(
            "codegen/tests/golden/{name} is stale ({first_difference}).\n\
             If the change is intended, rerun with WIT_UPDATE_GOLDEN=1 \
             (`WIT_UPDATE_GOLDEN=1 cargo test -p wit-codegen --test golden`) and commit the diff."
        );
    }
}

#[test]
fn generated_code_matches_golden_files() {
    let generated = wit_codegen::generate(&spec_text()).unwrap();
    check_golden("types.rs", &generated.types);
    check_golden("server.rs", &generated.server);
    check_golden("client.rs", &generated.client);
    check_golden("mcp_tools.json", &generated.mcp_tools);
}
