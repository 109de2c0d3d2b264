//! What a `wit` process needs set up before its first line runs, on Linux, where `wit` has
//! its own entry point instead of the standard library's (`src/main.rs`).
//!
//! `wit` starts once per hook call, twice per tool call of every agent (issue 32.2). Before
//! `main`, the standard library's start-up asks glibc where the main thread's stack is, to
//! install its stack-overflow handler: glibc answers by reading and parsing
//! `/proc/self/maps`: 12 % of a hook process's instructions, and leaving it out took a
//! pre-edit hook from 2.48 to 2.32 ms (p50) on the development VM (docs/benchmarks-history.md,
//! 2026-12-06). `wit` does the rest of that start-up
//! itself ([`prepare`]) and leaves the handler out: a stack overflow still ends the process
//! (by `SIGSEGV`), only without the standard library's one-line message.

use std::io::Write;

/// Sets the process up as the standard library's start-up would: `SIGPIPE` ignored (a write
/// to a closed pipe or socket is an error to handle, not the end of the process) and the
/// standard streams open (a closed one is opened on `/dev/null`, so that no file or socket
/// the process opens later takes its number and receives its output).
pub fn prepare() {
    ignore_broken_pipes();
    open_closed_standard_streams();
}

/// Flushes standard output and returns `code`: what the standard library does when `main`
/// returns (a last line written without a newline would be lost otherwise).
pub fn finish(code: u8) -> i32 {
    let _ = std::io::stdout().flush();
    i32::from(code)
}

/// Opens `/dev/null` in the place of each standard stream that is closed (the standard
/// library's `sanitize_standard_fds`): one `poll`, and an `open` only for a closed one.
fn open_closed_standard_streams() {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};

    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    let mut fds = [
        PollFd::new(&stdin, PollFlags::empty()),
        PollFd::new(&stdout, PollFlags::empty()),
        PollFd::new(&stderr, PollFlags::empty()),
    ];
    // `poll` marks a closed descriptor `POLLNVAL`; with a zero timeout it returns at once.
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    if poll(&mut fds, Some(&now)).is_err() {
        return;
    }
    let closed = fds
        .iter()
        .filter(|fd| fd.revents().contains(PollFlags::NVAL))
        .count();
    for _ in 0..closed {
        // The lowest free descriptor is the closed stream's: it stays open for the
        // process's life.
        if let Ok(null) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
        {
            std::mem::forget(null);
        }
    }
}

/// `signal(SIGPIPE, SIG_IGN)`.
#[allow(
    unsafe_code,
    reason = "libc's signal with SIG_IGN: no handler runs, nothing to uphold"
)]
fn ignore_broken_pipes() {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler; it is what the
    // standard library's start-up does, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}
