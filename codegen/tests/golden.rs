//! Golden copies of the code generated from the project's openrpc.json.
//!
//! Every generator change shows up as a readable diff of `tests/golden/*` (the Rust files and
//! the MCP tool table `mcp_tools.json`). When the test fails because the output changed on
//! purpose, rerun it with `WIT_UPDATE_GOLDEN=1` to rewrite the golden files, then review and
//! commit the diff.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::Path;

#[path = "../../tests/common/snapshot.rs"]
mod snapshot_files;

fn spec_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../openrpc.json");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Compares `actual` with `tests/golden/<name>` (rewritten with `WIT_UPDATE_GOLDEN=1`).
#[track_caller]
fn check_golden(name: &str, actual: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    snapshot_files::Snapshots::new(
        dir,
        "WIT_UPDATE_GOLDEN",
        "cargo test -p wit-codegen --test golden",
    )
    .assert_current(name, actual);
}

#[test]
fn generated_code_matches_golden_files() {
    let generated = wit_codegen::generate(&spec_text()).unwrap();
    check_golden("types.rs", &generated.types);
    check_golden("server.rs", &generated.server);
    check_golden("client.rs", &generated.client);
    check_golden("mcp_tools.json", &generated.mcp_tools);
}
