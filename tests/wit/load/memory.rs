//! Memory: the daemon bounds its malloc arenas, and its resident set stays bounded under
//! repeated work on large files.

use tokio::task::JoinSet;
use wit::client::WitClient;

use super::{chained_functions, join_all, runtime, CALL_TIMEOUT, CHAINED_SIGNATURE};
use crate::contracts::{cquery, propose};
use crate::harness::*;
use crate::locks::{acquire, release};

/// [`chained_functions`] with as many functions as it takes to reach `bytes`: (text, count).
fn chained_functions_of_size(prefix: &str, bytes: usize) -> (String, usize) {
    let one = chained_functions(prefix, 2).len() / 2;
    let mut count = bytes / one;
    let mut text = chained_functions(prefix, count);
    while text.len() < bytes {
        count += 16;
        text = chained_functions(prefix, count);
    }
    (text, count)
}

/// The resident set of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .map(|v| v.trim().trim_end_matches("kB").trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no VmRSS in {status}"))
}

/// Calls `from..to`: lock.acquire + lock.release on a symbol of the big file and
/// contract.propose on a symbol of the small one, spread over the clients.
async fn large_file_work(
    clients: &[WitClient],
    (big, small): (usize, usize),
    from: usize,
    to: usize,
) {
    let mut tasks = JoinSet::new();
    let stride = clients.len();
    for (t, client) in clients.iter().enumerate() {
        let client = client.clone();
        tasks.spawn(async move {
            let session = format!("mem-{t}");
            for k in (from..to).filter(|k| k % stride == t) {
                // Distinct symbols: the multipliers are primes that divide neither count.
                let symbol = format!("src/big.ts:fn_{}", (k * 7919) % big);
                let got = client
                    .lock_acquire(acquire(&symbol, &session, Some(60_000)))
                    .await
                    .unwrap_or_else(|e| panic!("acquire {symbol}: {e:?}"));
                assert_eq!(got.symbol_path, symbol);
                client
                    .lock_release(release(&symbol, &session))
                    .await
                    .unwrap_or_else(|e| panic!("release {symbol}: {e:?}"));
                let symbol = format!("src/small.ts:g_{}", (k * 104_729) % small);
                let proposed = client
                    .contract_propose(propose(&session, &symbol))
                    .await
                    .unwrap_or_else(|e| panic!("propose {symbol}: {e:?}"));
                assert_eq!(proposed.signature, CHAINED_SIGNATURE, "{symbol}");
            }
        });
    }
    join_all(tasks).await;
}

/// The thread arenas of glibc's malloc in process `pid`: each is a heap of its own, a
/// 64 MiB-aligned anonymous mapping of exactly 64 MiB (its used part, then its reserve).
fn thread_arenas(pid: u32) -> usize {
    const HEAP: u64 = 64 << 20;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let rows: Vec<(u64, u64, &str, bool)> = maps
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (start, end) = fields[0].split_once('-').unwrap();
            (
                u64::from_str_radix(start, 16).unwrap(),
                u64::from_str_radix(end, 16).unwrap(),
                fields[1],
                fields.len() > 5,
            )
        })
        .collect();
    rows.iter()
        .enumerate()
        .filter(|(i, (start, end, perms, named))| {
            let reserve_end = rows
                .get(i + 1)
                .filter(|next| next.0 == *end && next.2 == "---p" && !next.3)
                .map_or(*end, |next| next.1);
            *perms == "rw-p" && !named && start % HEAP == 0 && reserve_end - start == HEAP
        })
        .count()
}

/// The daemon bounds glibc's malloc arenas to two (the main heap and one more; it also fixes
/// the mmap and trim thresholds, set with `mallopt` at its start, no longer by executing
/// itself again): after requests on 16 connections at once, its memory holds at most one
/// thread arena. An explicit `MALLOC_ARENA_MAX` is left alone (the same count shows it: 8
/// gives several).
#[test]
fn the_daemon_runs_with_bounded_malloc_arenas() {
    let repo = Repo::new();
    repo.write("src/a.ts", "export function a() { return 1; }\n");
    for (explicit, most) in [(None, 1), (Some("8"), 7)] {
        let mut env = store_env(repo.path());
        env.extend(explicit.map(|n| ("MALLOC_ARENA_MAX", n.to_owned())));
        let mut daemon = Daemon::spawn_with_env(&repo, &env);
        daemon.wait_ready();
        std::thread::scope(|scope| {
            for t in 0..16 {
                let socket = repo.socket();
                scope.spawn(move || {
                    for i in 0..20 {
                        let body = serde_json::json!({"jsonrpc": "2.0", "witVersion": "1", "id": i,
                            "method": "lock.query", "params": {"sessionId": format!("s{t}")}});
                        assert_eq!(post(&socket, &body.to_string()).0, 200);
                    }
                });
            }
        });
        let arenas = thread_arenas(daemon.child.id());
        assert!(
            arenas >= 1 && arenas <= most,
            "{arenas} thread arenas with MALLOC_ARENA_MAX {explicit:?}"
        );
        if explicit.is_some() {
            assert!(arenas > 1, "an explicit MALLOC_ARENA_MAX=8 was overridden");
        }
        daemon.terminate();
    }
}

/// With a 1.7 MB and a 169 KB TypeScript file in the repository, 1,000 lock.acquire +
/// lock.release on symbols of the big one and 1,000 contract.propose on symbols of the small
/// one (4 clients in parallel): the daemon's resident set stays under 100 MB and grows by less
/// than 25 MB between the 200th call of each and the end (memory does not grow per call).
#[test]
fn memory_stays_bounded_under_repeated_large_file_work() {
    const CALLS: usize = 1_000;
    const CHECKPOINT: usize = 200;
    let repo = Repo::new();
    let (big_text, big) = chained_functions_of_size("fn_", 1_700_000);
    let (small_text, small) = chained_functions_of_size("g_", 169_000);
    assert!(big % 7919 != 0 && small % 104_729 != 0 && small >= CALLS);
    repo.write("src/big.ts", &big_text);
    repo.write("src/small.ts", &small_text);
    drop((big_text, small_text));
    let daemon = Daemon::start(&repo);
    let pid = daemon.child.id();
    let clients: Vec<WitClient> = (0..4)
        .map(|_| repo.client().with_timeout(CALL_TIMEOUT))
        .collect();
    let runtime = runtime();
    runtime.block_on(large_file_work(&clients, (big, small), 0, CHECKPOINT));
    let checkpoint = rss_kib(pid);
    runtime.block_on(large_file_work(&clients, (big, small), CHECKPOINT, CALLS));
    let end = rss_kib(pid);
    eprintln!(
        "daemon VmRSS: {checkpoint} KiB after {CHECKPOINT} calls of each, {end} KiB after {CALLS}"
    );
    let contracts = runtime
        .block_on(clients[0].contract_query(cquery(None, None)))
        .unwrap();
    assert_eq!(contracts.len(), CALLS);
    assert!(
        end < 100 * 1024,
        "daemon RSS {end} KiB at the end (checkpoint {checkpoint} KiB)"
    );
    assert!(
        end.saturating_sub(checkpoint) < 25 * 1024,
        "daemon RSS grew from {checkpoint} KiB to {end} KiB"
    );
}
