//! Generates the protocol code from `openrpc.json` into `OUT_DIR` (see codegen/).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    println!("cargo:rerun-if-changed=openrpc.json");
    println!("cargo:rerun-if-changed=build.rs");
    link_without_pie();
    match generate() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // Cargo shows a build script's stderr when it fails.
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// `wit` starts once per hook call, twice per tool call of every agent (docs/protocol.md 15.2),
/// so its start-up is on every agent's path: as a position-independent executable most of its
/// own start-up CPU went to the dynamic loader resolving ~31k relocations (perf). On Linux it
/// is linked as a fixed-address executable instead (the code is still compiled
/// position-independent; the linker resolves those relocations once): `wit --version` 1.80 ->
/// 1.58 ms (docs/benchmarks-history.md, 2026-12-05). The price is ASLR for the executable's
/// own code (libraries, stack and heap stay randomised): the daemon is reached only through a
/// socket in the user's own `.wit/`. macOS requires position-independent executables.
fn link_without_pie() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=wit=-no-pie");
    }
}

fn generate() -> Result<(), String> {
    let spec = std::fs::read_to_string("openrpc.json")
        .map_err(|e| format!("cannot read openrpc.json: {e}"))?;
    let generated = wit_codegen::generate(&spec).map_err(|e| e.to_string())?;
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    for (name, text) in [
        ("types.rs", &generated.types),
        ("server.rs", &generated.server),
        ("client.rs", &generated.client),
        ("mcp_tools.json", &generated.mcp_tools),
    ] {
        let path = out_dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
