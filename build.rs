//! Generates the protocol code from `openrpc.json` into `OUT_DIR` (see codegen/).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    println!("cargo:rerun-if-changed=openrpc.json");
    println!("cargo:rerun-if-changed=build.rs");
    link_without_pie();
    link_unwinder_statically();
    order_hook_code();
    match generate() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // Cargo shows a build script's stderr when it fails.
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The target's `key` as Cargo hands it to build scripts (`CARGO_CFG_TARGET_<key>`: `OS`,
/// `ENV`, `ARCH`); empty when unset.
fn target(key: &str) -> String {
    std::env::var(format!("CARGO_CFG_TARGET_{key}")).unwrap_or_default()
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
    if target("OS") == "linux" {
        println!("cargo:rustc-link-arg-bin=wit=-no-pie");
    }
}

/// Links GCC's unwinder into `wit` (`libgcc_eh.a`) instead of loading `libgcc_s.so.1` at
/// every start. Loading that library cost every hook process its mapping and binding, and its
/// constructor (`__cpu_indicator_init`) runs a series of `cpuid` instructions, each a trap to
/// the hypervisor on a virtual machine: a pre-edit hook went from 2.46 to 2.30 ms (p50) without
/// it (docs/benchmarks-history.md, issue 32.2, 2026-12-06). Rust's standard library asks for `-lgcc_s` by name; a linker script of that name in
/// a directory searched first hands the linker the static archive instead, the same code
/// that `-static-libgcc` links into a C program. Unwinding (panics caught by tokio, backtraces)
/// works the same: nothing in `wit` unwinds across another shared library. Only on GNU/Linux
/// with a C compiler that has the archive; elsewhere the build is as before.
fn link_unwinder_statically() {
    if target("OS") != "linux" || target("ENV") != "gnu" {
        return;
    }
    let Some(archive) = static_unwinder() else {
        return;
    };
    let Some(out_dir) = std::env::var_os("OUT_DIR") else {
        return;
    };
    let dir = PathBuf::from(out_dir).join("static-unwinder");
    let script = format!("INPUT({})\n", archive.display());
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join("libgcc_s.so"), script));
    if let (Ok(()), Some(path)) = (written, dir.to_str()) {
        println!("cargo:rustc-link-arg-bin=wit=-L{path}");
    }
}

/// Where the C compiler keeps `libgcc_eh.a` (`cc -print-file-name`), if it has one; a path
/// the linker script can name as it is (no spaces, parentheses or quotes).
fn static_unwinder() -> Option<PathBuf> {
    println!("cargo:rerun-if-env-changed=CC");
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let output = std::process::Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let path = PathBuf::from(text.trim());
    let plain = !text.trim().contains([' ', '(', ')', '"', '\'']);
    (output.status.success() && plain && path.is_absolute() && path.is_file()).then_some(path)
}

/// The list of the functions a harness hook runs (`scripts/hook-order` writes it).
const HOOK_ORDER: &str = "link/hook-order.txt";

/// Lays out the functions a harness hook runs side by side at the start of `wit`'s code
/// (LLD's `--symbol-ordering-file` with [`HOOK_ORDER`]): a hook process then maps a few runs
/// of code instead of about seventy scattered 64 KiB runs over 16 MB, 212 -> 154 page faults
/// and 185 µs less per hook on the development VM (docs/benchmarks-history.md, issue 32.2).
/// Only where the linker is known to be LLD (Rust's default for x86_64 Linux since 1.90);
/// elsewhere the build is as before. Names the list no longer finds are skipped, so a stale
/// list costs speed, never a build.
fn order_hook_code() {
    println!("cargo:rerun-if-changed={HOOK_ORDER}");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return;
    };
    let list = PathBuf::from(dir).join(HOOK_ORDER);
    let Some(path) = list.to_str() else {
        return;
    };
    // `-Wl,` splits its argument at commas.
    if !list.is_file() || path.contains(',') || !links_with_lld() {
        return;
    }
    println!("cargo:rustc-link-arg-bin=wit=-Wl,--symbol-ordering-file={path}");
    println!("cargo:rustc-link-arg-bin=wit=-Wl,--no-warn-symbol-ordering");
}

/// Whether `wit` is linked by rustc's own LLD: x86_64 GNU/Linux, Rust 1.90 or later, and no
/// linker chosen in the configuration or the flags.
fn links_with_lld() -> bool {
    if target("ARCH") != "x86_64"
        || target("OS") != "linux"
        || target("ENV") != "gnu"
        || std::env::var_os("RUSTC_LINKER").is_some()
    {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["linker", "link-self-contained", "fuse-ld"]
        .iter()
        .any(|flag| flags.contains(flag))
    {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(output) = std::process::Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8(output.stdout).unwrap_or_default();
    let release = text
        .lines()
        .find_map(|line| line.strip_prefix("release: "))
        .unwrap_or_default();
    let mut parts = release.split(['.', '-']).map(|part| part.parse::<u32>());
    matches!((parts.next(), parts.next()), (Some(Ok(1)), Some(Ok(minor))) if minor >= 90)
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
        // Unchanged files keep their time, so a rerun (the hook list changed, say) does not
        // rebuild the crate.
        if std::fs::read(&path).is_ok_and(|old| old == text.as_bytes()) {
            continue;
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
