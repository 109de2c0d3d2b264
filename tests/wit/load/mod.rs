//! Reliability under load: a mixed workload from many clients keeps every invariant, a SIGKILL
//! in the middle of a write load loses no acknowledged write, a frozen client blocks nobody,
//! memory stays bounded under repeated work on large files, and a full disk gives JSON-RPC
//! errors the daemon recovers from. One module a scenario; this one holds what they share:
//! the generated source, the runtime, the clock and intent queries.
//!
//! Only liveness is timed, with bounds far above what a loaded 2-core machine needs.

mod checks;
mod frozen;
mod full_disk;
mod ledger;
mod memory;
mod mixed;
mod sigkill;

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::task::JoinSet;
use wit::protocol::{IntentQueryParams, IntentRecordStatus};

/// Bounds every client call, so a hung daemon fails the test instead of stalling it.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Every function [`chained_functions`] writes has this signature.
const CHAINED_SIGNATURE: &str = r#"(a: number, b: string = "x"): number"#;

/// Every intent status, in the order of their life.
const ALL_STATUSES: [IntentRecordStatus; 4] = [
    IntentRecordStatus::Declared,
    IntentRecordStatus::Active,
    IntentRecordStatus::Resolved,
    IntentRecordStatus::Abandoned,
];

/// `count` exported functions `{prefix}0..`, each calling the next one.
fn chained_functions(prefix: &str, count: usize) -> String {
    let mut out = String::new();
    for n in 0..count {
        let _ = writeln!(
            out,
            "export function {prefix}{n}(a: number, b: string = \"x\"): number {{\n  const c = a * 2 + b.length;"
        );
        if n + 1 < count {
            let _ = writeln!(out, "  return {prefix}{}(c, b) + {n};\n}}\n", n + 1);
        } else {
            let _ = writeln!(out, "  return c;\n}}\n");
        }
    }
    out
}

/// A multi-thread runtime with 2 workers, like the CI machine's 2 cores.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Waits for every task; a task's panic is re-raised with its own message.
async fn join_all<T: 'static>(mut tasks: JoinSet<T>) -> Vec<T> {
    let mut out = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(value) => out.push(value),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => panic!("task failed: {error}"),
        }
    }
    out
}

/// The wall clock in unix milliseconds (the daemon reads the same clock).
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// An `intent.query` of `session`'s intents (all sessions' when `None`) with `status` (the
/// open ones when `None`).
fn iquery(session: Option<&str>, status: Option<IntentRecordStatus>) -> IntentQueryParams {
    IntentQueryParams {
        session_id: session.map(str::to_owned),
        file: None,
        status: status.map(|s| s.to_string()),
    }
}

/// Whether an intent in `status` is still open (declared or active).
fn is_open(status: IntentRecordStatus) -> bool {
    matches!(
        status,
        IntentRecordStatus::Declared | IntentRecordStatus::Active
    )
}
