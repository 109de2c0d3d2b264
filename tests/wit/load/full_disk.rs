//! A full disk: writes answer JSON-RPC errors naming the full database, and the daemon
//! recovers once space is freed (or, where tmpfs cannot be mounted, a broken state file
//! stops the start cleanly).

use std::collections::BTreeSet;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wit::protocol::ProtocolError;

use super::{iquery, CALL_TIMEOUT};
use crate::harness::*;
use crate::intents::declare;
use crate::locks::{acquire, query, rpc_error};

/// A small tmpfs mounted at a directory; lazily unmounted on drop.
struct TmpfsMount {
    dir: PathBuf,
}

impl TmpfsMount {
    fn mount(dir: &Path, size: &str) -> Result<Self, String> {
        std::fs::create_dir_all(dir).unwrap();
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if output.status.success() {
            Ok(Self {
                dir: dir.to_path_buf(),
            })
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Writes zeros to `path` until the file system says it is full; returns the bytes written.
fn fill(path: &Path) -> usize {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = [0u8; 4096];
    let mut written = 0;
    loop {
        match file.write(&chunk) {
            Ok(0) => panic!("write of zero bytes"),
            Ok(n) => written += n,
            Err(error) if error.kind() == std::io::ErrorKind::StorageFull => return written,
            Err(error) => panic!("filling {}: {error}", path.display()),
        }
    }
}

/// Asserts a storage failure: `-32603 INTERNAL_ERROR` whose detail names the database.
fn assert_storage_failure(error: &ProtocolError) {
    assert_eq!(error.code, -32603, "{error:?}");
    assert_eq!(error.message, "INTERNAL_ERROR", "{error:?}");
    let detail = error.data.as_ref().and_then(|d| d["detail"].as_str());
    let detail = detail.unwrap_or_else(|| panic!("no data.detail: {error:?}"));
    assert!(detail.contains("database or disk is full"), "{error:?}");
}

/// Waits (up to 10 s: the log is drained by a thread) until the daemon's stderr has `needle`.
fn wait_for_log(daemon: &mut Daemon, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = daemon.stderr_text();
        if text.contains(needle) || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// With `.wit` on a 2 MB tmpfs (root only): once the file system is full, lock.acquire,
/// intent.declare and contract.propose answer `-32603` naming the full database, on a
/// connection that stays usable; reads, `ping` and the earlier data are unaffected, nothing of
/// the failed writes is stored, and the daemon logs the failure. Once space is freed, writes
/// succeed again, and everything acknowledged survives a restart. Where tmpfs cannot be
/// mounted (or `WIT_TEST_NO_MOUNT=1`), an unwritable or unreadable `.wit/state.db` must make
/// the daemon exit non-zero with a clear message and no panic, and it starts and serves with
/// the earlier data once the file is restored.
#[test]
fn a_full_disk_gives_errors_and_the_daemon_recovers() {
    if shared_store_skips("a full disk under .wit/") {
        return;
    }
    let repo = Repo::new();
    let wit_dir = repo.path().join(".wit");
    let mounted = if std::env::var_os("WIT_TEST_NO_MOUNT").is_some() {
        Err("WIT_TEST_NO_MOUNT is set".to_owned())
    } else {
        TmpfsMount::mount(&wit_dir, "2m")
    };
    match mounted {
        Ok(mount) => full_tmpfs(&repo, mount),
        Err(reason) => {
            eprintln!("no tmpfs ({}); a broken state file instead", reason.trim());
            broken_state_file(&repo);
        }
    }
}

fn full_tmpfs(repo: &Repo, _mount: TmpfsMount) {
    let filler = repo.path().join(".wit/filler");
    let mut daemon = Daemon::start(repo);
    let client = repo.client().with_timeout(CALL_TIMEOUT);
    let mut raw = UnixStream::connect(repo.socket()).unwrap();
    raw.set_read_timeout(Some(CALL_TIMEOUT)).unwrap();
    let rpc = |id: usize, method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "witVersion": "1", "id": id, "method": method, "params": params})
            .to_string()
    };
    block_on(async {
        let mut before = Vec::new();
        for i in 0..3 {
            let symbol = format!("src/a.ts:before{i}");
            let lock = client
                .lock_acquire(acquire(&symbol, "s1", Some(3_600_000)))
                .await
                .unwrap();
            before.push(lock);
        }
        let intent = client
            .intent_declare(declare("s1", "before the disk filled", &["src/a.ts"], None))
            .await
            .unwrap();

        let filled = fill(&filler);
        assert!(filled > 0);
        for i in 0..3 {
            let symbol = format!("src/a.ts:during{i}");
            let error = rpc_error(client.lock_acquire(acquire(&symbol, "s1", None)).await);
            assert_storage_failure(&error);
        }
        let error = rpc_error(
            client
                .intent_declare(declare("s1", "while full", &["src/b.ts"], None))
                .await,
        );
        assert_storage_failure(&error);
        // The same keep-alive connection answers a failed write and then a ping.
        let body = rpc(
            1,
            "lock.acquire",
            json!({"symbolPath": "src/a.ts:raw", "sessionId": "s2"}),
        );
        let (status, answer) = exchange(&mut raw, "POST", "/rpc", body.as_bytes()).unwrap();
        assert_eq!(status, 200, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["error"]["code"], json!(-32603), "{answer}");
        let (status, answer) = exchange(&mut raw, "POST", "/rpc", PING.as_bytes()).unwrap();
        assert_eq!(status, 200);
        assert!(answer.contains("pong"), "{answer}");
        client.ping().await.unwrap();
        // Reads still work and show nothing of the failed writes.
        let locks = client.lock_query(query(None)).await.unwrap();
        let symbols: Vec<&str> = locks.iter().map(|l| l.symbol_path.as_str()).collect();
        assert_eq!(
            symbols,
            ["src/a.ts:before0", "src/a.ts:before1", "src/a.ts:before2"]
        );
        let intents = client.intent_query(iquery(None, None)).await.unwrap();
        assert_eq!(intents.len(), 1, "{intents:?}");
        assert_eq!(intents[0].intent_id, intent.intent_id);

        let log = wait_for_log(&mut daemon, "database or disk is full");
        eprintln!("daemon log while the disk was full:\n{log}");
        assert!(log.contains("storage failure"), "{log}");
        assert!(log.contains("database or disk is full"), "{log}");
        assert!(!log.contains("panicked"), "{log}");
        assert!(
            !log.contains('\u{1b}'),
            "plain text, no colour codes: {log:?}"
        );

        std::fs::remove_file(&filler).unwrap();
        let after = client
            .lock_acquire(acquire("src/a.ts:after", "s1", Some(3_600_000)))
            .await
            .unwrap();
        client
            .intent_declare(declare("s1", "after space was freed", &["src/b.ts"], None))
            .await
            .unwrap();
        let locks = client.lock_query(query(None)).await.unwrap();
        for lock in before.iter().chain([&after]) {
            assert!(
                locks
                    .iter()
                    .any(|l| l.symbol_path == lock.symbol_path && l.expires_at == lock.expires_at),
                "{lock:?} missing from {locks:?}"
            );
        }
        assert_eq!(locks.len(), 4, "{locks:?}");
    });
    // Everything acknowledged survives a clean restart on the same file system.
    assert!(daemon.terminate().success());
    drop(daemon);
    let mut daemon = Daemon::start(repo);
    let client = repo.client().with_timeout(CALL_TIMEOUT);
    block_on(async {
        let locks = client.lock_query(query(None)).await.unwrap();
        let mut symbols: Vec<&str> = locks.iter().map(|l| l.symbol_path.as_str()).collect();
        symbols.sort_unstable();
        assert_eq!(
            symbols,
            [
                "src/a.ts:after",
                "src/a.ts:before0",
                "src/a.ts:before1",
                "src/a.ts:before2"
            ]
        );
        let descriptions: BTreeSet<String> = client
            .intent_query(iquery(None, None))
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.description)
            .collect();
        assert_eq!(
            descriptions,
            BTreeSet::from([
                "before the disk filled".into(),
                "after space was freed".into()
            ])
        );
    });
    assert!(!daemon.stderr_text().contains("panicked"));
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The fallback fault for machines that cannot mount: a state file the daemon cannot open.
fn broken_state_file(repo: &Repo) {
    let wit_dir = repo.path().join(".wit");
    let database = wit_dir.join("state.db");
    let lock = {
        let mut daemon = Daemon::start(repo);
        let client = repo.client().with_timeout(CALL_TIMEOUT);
        let lock =
            block_on(client.lock_acquire(acquire("src/a.ts:kept", "s1", Some(3_600_000)))).unwrap();
        assert!(daemon.terminate().success());
        lock
    };
    assert!(database.exists());

    // Restores usable modes even when an assertion fails, so the temporary repository can go.
    struct Restore(PathBuf);
    impl Drop for Restore {
        fn drop(&mut self) {
            let mode = |path: &Path, mode| {
                let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
            };
            mode(&self.0, 0o700);
            mode(&self.0.join("state.db"), 0o600);
        }
    }
    let _restore = Restore(wit_dir.clone());
    set_mode(&database, 0o400);
    set_mode(&wit_dir, 0o500);
    // Without CAP_DAC_OVERRIDE the daemon cannot open the database for writing. A privileged
    // user that could not mount (say, a container without CAP_SYS_ADMIN) gets a file that is
    // not a database instead, with the real one moved aside.
    let privileged = std::fs::OpenOptions::new()
        .append(true)
        .open(&database)
        .is_ok();
    let aside = repo.path().join("state-aside");
    let expected = if privileged {
        set_mode(&wit_dir, 0o700);
        set_mode(&database, 0o600);
        std::fs::create_dir(&aside).unwrap();
        for name in ["state.db", "state.db-wal", "state.db-shm"] {
            if wit_dir.join(name).exists() {
                std::fs::rename(wit_dir.join(name), aside.join(name)).unwrap();
            }
        }
        std::fs::write(
            &database,
            "this is not a SQLite database, but it is long enough to look like one\n".repeat(64),
        )
        .unwrap();
        "file is not a database"
    } else {
        "Permission denied"
    };

    let mut daemon = Daemon::spawn(repo);
    let status = wait_with_timeout(&mut daemon.child, CALL_TIMEOUT);
    let stderr = daemon.stderr_text();
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("could not open the daemon state"),
        "{stderr}"
    );
    assert!(stderr.contains(".wit/state.db"), "names the file: {stderr}");
    assert!(stderr.contains(expected), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("stack backtrace"),
        "{stderr}"
    );
    assert!(
        !repo.socket().exists(),
        "a failed start left its socket behind"
    );
    drop(daemon);

    // Restored, the daemon starts, serves, and has the earlier lock.
    set_mode(&wit_dir, 0o700);
    if privileged {
        std::fs::remove_file(&database).unwrap();
        for name in ["state.db", "state.db-wal", "state.db-shm"] {
            let _ = std::fs::remove_file(wit_dir.join(name));
            if aside.join(name).exists() {
                std::fs::rename(aside.join(name), wit_dir.join(name)).unwrap();
            }
        }
    } else {
        set_mode(&database, 0o600);
    }
    let mut daemon = Daemon::start(repo);
    let client = repo.client().with_timeout(CALL_TIMEOUT);
    block_on(async {
        let locks = client.lock_query(query(None)).await.unwrap();
        assert_eq!(locks.len(), 1, "{locks:?}");
        assert_eq!(locks[0].symbol_path, lock.symbol_path);
        assert_eq!(locks[0].expires_at, lock.expires_at);
        client
            .lock_acquire(acquire("src/a.ts:new", "s1", None))
            .await
            .unwrap();
    });
    assert!(!daemon.stderr_text().contains("panicked"));
}
