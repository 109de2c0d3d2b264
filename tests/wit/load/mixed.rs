//! The mixed load: 32 clients run locks, intents, contracts and queries on a few shared
//! symbols, each keeping a [`Ledger`] of what the daemon acknowledged; `checks` compares the
//! daemon's view with the ledgers.

use std::time::{Duration, Instant};

use tokio::task::JoinSet;
use wit::client::WitClient;

use super::checks::{check_contracts, check_intents, check_listed_locks};
use super::ledger::{ContractPool, Ledger, Rng, LOAD_FILE, LOAD_FUNCTIONS};
use super::{chained_functions, join_all, now_ms, runtime, CALL_TIMEOUT};
use crate::harness::*;
use crate::locks::query;

/// How long the mixed load runs: `WIT_SOAK_SECS` (a soak run sets it high), else 4 s.
fn soak_duration() -> Duration {
    let secs = std::env::var("WIT_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(4.0);
    Duration::from_secs_f64(secs)
}

/// One client of the load: random operations until `deadline`, each acknowledged one kept in
/// its ledger.
async fn mixed_worker(
    client: WitClient,
    session: String,
    seed: u64,
    deadline: Instant,
    pool: ContractPool,
) -> Ledger {
    let mut rng = Rng::new(seed);
    let mut ledger = Ledger::new(session);
    while Instant::now() < deadline {
        match rng.below(10) {
            0..=2 => ledger.acquire(&client, &mut rng).await,
            3 | 4 => ledger.release_one(&client, &mut rng).await,
            5 if ledger.open_intents().len() < 3 => ledger.declare(&client, &mut rng).await,
            5 | 6 if !ledger.open_intents().is_empty() => {
                ledger.advance(&client, &mut rng).await;
            }
            6 => ledger.declare(&client, &mut rng).await,
            7 => ledger.propose(&client, &mut rng, &pool).await,
            8 => ledger.respond(&client, &mut rng, &pool).await,
            _ => ledger.check_own_view(&client, &mut rng).await,
        }
        ledger.ops += 1;
    }
    ledger
}

/// 32 clients, each with its own keep-alive connection, run locks, intents, contracts and
/// queries on a few shared symbols for `WIT_SOAK_SECS` (default 4 s). Every task records what
/// the daemon acknowledged and checks its own session's view as it goes; afterwards no symbol
/// has two live holders, every live acknowledged lock is listed with its holder and expiry and
/// nothing else is, every acknowledged intent has its last acknowledged status (and nothing
/// else exists), every contract answer was given once, and `ping` still answers.
#[test]
fn mixed_load_keeps_invariants() {
    const TASKS: usize = 32;
    let repo = Repo::new();
    repo.write(LOAD_FILE, &chained_functions("f", LOAD_FUNCTIONS));
    let _daemon = Daemon::start(&repo);
    let pool = ContractPool::default();
    let ledgers = runtime().block_on(async {
        let deadline = Instant::now() + soak_duration();
        let mut tasks = JoinSet::new();
        for i in 0..TASKS {
            let client = repo.client().with_timeout(CALL_TIMEOUT);
            tasks.spawn(mixed_worker(
                client,
                format!("load-{i}"),
                i as u64,
                deadline,
                pool.clone(),
            ));
        }
        join_all(tasks).await
    });
    assert_eq!(ledgers.len(), TASKS);
    for ledger in &ledgers {
        assert!(ledger.ops > 0, "{} did nothing", ledger.session);
    }
    let conflicts: usize = ledgers.iter().map(|l| l.conflicts).sum();
    eprintln!(
        "mixed load: {} operations ({} to {} per client), {conflicts} lock conflicts, {} intents, {} contracts",
        ledgers.iter().map(|l| l.ops).sum::<usize>(),
        ledgers.iter().map(|l| l.ops).min().unwrap_or(0),
        ledgers.iter().map(|l| l.ops).max().unwrap_or(0),
        ledgers.iter().map(|l| l.intents.len()).sum::<usize>(),
        ledgers.iter().map(|l| l.proposed.len()).sum::<usize>(),
    );
    assert!(conflicts > 0, "the load never made two sessions conflict");

    let client = repo.client().with_timeout(CALL_TIMEOUT);
    block_on(async {
        // Locks: at most one live holder per symbol, and exactly the acknowledged ones.
        let sent = now_ms();
        let locks = client.lock_query(query(None)).await.unwrap();
        let everyone: Vec<&Ledger> = ledgers.iter().collect();
        check_listed_locks(&locks, &everyone, sent, now_ms());
        check_intents(&client, &ledgers).await;
        check_contracts(&client, &ledgers).await;
        client.ping().await.unwrap();
    });
}
