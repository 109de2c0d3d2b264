//! The `wit` binary: hands over to [`wit::cli`].
//!
//! On Linux `wit` has its own entry point: the standard library's start-up reads
//! `/proc/self/maps` for its stack-overflow handler, a cost every hook process paid
//! ([`wit::platform::start`] says what is set up instead).
//! (Test builds keep the standard entry point: the test harness brings its own `main`.)
#![cfg_attr(all(target_os = "linux", not(test)), no_main)]

/// The process's entry point, called by the C runtime with the command line (which
/// `std::env::args` reads by itself).
#[cfg(all(target_os = "linux", not(test)))]
#[allow(
    unsafe_code,
    reason = "the C entry point must be an unmangled symbol named `main`"
)]
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    wit::platform::start::prepare();
    wit::platform::start::finish(wit::cli::main())
}

#[cfg(any(not(target_os = "linux"), test))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(wit::cli::main())
}
