//! The daemon's rehearsal after a start: once the code index is built, it asks itself, over
//! its own socket as an agent would, the read-only questions every agent's first calls ask
//! (`ping`, `session.list`, `lock.query`, `intent.query`), and rehearses the writes of a new
//! session's first call in a transaction it rolls back
//! ([`Store::rehearse_first_writes`](crate::store::Store::rehearse_first_writes)), so that what a
//! process does only once is done before an agent waits for it: the CPU's features probed, the
//! HTTP and JSON-RPC paths' code paged in, the store's statements prepared and its pages read.
//! The index rehearses its call graph itself once built (`RepoIndex`'s warm-up).
//!
//! Measured on sympy (issue 32.3): the first `lock.acquire` after a restart cost 2.9× the
//! steady state's, and a request on another file first left 1.3×: the rest was the process's
//! first request, not the file. Nothing here changes state: every call is a read, the writes
//! are rolled back, and an error only ends the rehearsal (logged at debug). The calls go
//! straight through the client, not the doorway (`crate::doorway`): the daemon must never
//! start a daemon, and a refused call has nothing to retry.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::analysis::RepoIndex;
use crate::client::WitClient;
use crate::coord::Coord;
use crate::protocol::{IntentQueryParams, LockQueryParams};

/// How often the rehearsal looks whether the index is built.
const INDEX_POLL: Duration = Duration::from_millis(50);

/// How long it waits for the index before rehearsing anyway.
const INDEX_WAIT: Duration = Duration::from_secs(600);

/// Waits for `index` to be built, then rehearses over `socket` and in `coord`'s store.
pub async fn rehearse(socket: PathBuf, index: Arc<RepoIndex>, coord: Arc<Coord>) {
    probe_cpu_features();
    let waited = Instant::now();
    while !index.is_built() && waited.elapsed() < INDEX_WAIT {
        tokio::time::sleep(INDEX_POLL).await;
    }
    let started = Instant::now();
    let rehearsed =
        tokio::task::spawn_blocking(move || coord.store().rehearse_first_writes(coord.now_ms()))
            .await;
    if let Ok(Err(error)) = rehearsed {
        tracing::debug!(%error, "the store's rehearsal failed");
    }
    match ask_first_questions(WitClient::new(socket)).await {
        Ok(()) => tracing::debug!(
            micros = started.elapsed().as_micros(),
            "rehearsed the first requests"
        ),
        Err(error) => tracing::debug!(%error, "the rehearsal stopped"),
    }
}

/// The read-only calls, in the order an agent's first tool calls make them.
async fn ask_first_questions(client: WitClient) -> Result<(), crate::client::ClientError> {
    client.ping().await?;
    client.session_list().await?;
    client
        .lock_query(LockQueryParams { session_id: None })
        .await?;
    client
        .intent_query(IntentQueryParams {
            file: None,
            session_id: None,
            status: None,
        })
        .await?;
    Ok(())
}

/// The standard library probes the CPU's features (`cpuid`, a trap to the hypervisor in a VM,
/// about 0.1 ms in all) on the first SIMD-dispatched call of the process: here, not in a
/// request.
fn probe_cpu_features() {
    #[cfg(target_arch = "x86_64")]
    {
        let _ = std::arch::is_x86_feature_detected!("avx2");
    }
}
