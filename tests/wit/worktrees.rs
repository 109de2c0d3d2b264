//! Worktrees (docs/protocol.md 14, issue 24): one daemon serves every worktree of a
//! repository, each on its own socket, over one state; each worktree is analysed as its own
//! text; worktrees added while the daemon runs are served, removed ones let go. Real daemons,
//! real `git worktree add`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use wit::client::{ClientError, WitClient};
use wit::protocol::{ContractProposeParams, ErrorCode};

use crate::harness::*;
use crate::locks::{acquire, assert_domain, query, rpc_error};

/// A repository with a first commit in `<temp>/m` (its main worktree), and room for linked
/// worktrees next to it (short paths: socket paths stay under 108 bytes).
pub(crate) struct Family {
    dir: tempfile::TempDir,
}

impl Family {
    pub(crate) fn new(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("wt")
            .tempdir_in("/tmp")
            .unwrap();
        let family = Self { dir };
        std::fs::create_dir(family.main()).unwrap();
        family.git(&family.main(), &["init", "-q", "-b", "main"]);
        for (rel, text) in files {
            write_file(&family.main(), rel, text);
        }
        family.git(&family.main(), &["add", "-A"]);
        family.git(&family.main(), &["commit", "-qm", "first"]);
        family
    }

    pub(crate) fn main(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap().join("m")
    }

    pub(crate) fn worktree(&self, name: &str) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap().join(name)
    }

    /// `git worktree add ../<name> -b <name>`.
    pub(crate) fn add(&self, name: &str) -> PathBuf {
        let root = self.worktree(name);
        self.git(
            &self.main(),
            &["worktree", "add", "-q", "-b", name, root.to_str().unwrap()],
        );
        root
    }

    pub(crate) fn remove(&self, name: &str) {
        let root = self.worktree(name);
        self.git(
            &self.main(),
            &["worktree", "remove", "--force", root.to_str().unwrap()],
        );
    }

    pub(crate) fn git(&self, cwd: &Path, args: &[&str]) {
        let output = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    pub(crate) fn daemon(&self) -> Daemon {
        let mut daemon = Daemon::spawn_at(&self.main(), &store_env(&self.main()));
        daemon.wait_ready();
        daemon
    }
}

pub(crate) fn write_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub(crate) fn client(root: &Path) -> WitClient {
    WitClient::new(root.join(".wit/daemon.sock"))
}

/// Waits until the socket of `root` answers `ping` (`true`), or stops answering (`false`);
/// fails after 20 s.
pub(crate) fn wait_answering(root: &Path, answering: bool) {
    let socket = root.join(".wit/daemon.sock");
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if try_post(&socket, PING).is_ok_and(|(status, _)| status == 200) == answering {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} never became answering={answering}", socket.display());
}

const SHAPES: &str = "def area(r):\n    return r * r\n";

#[test]
fn a_lock_in_one_worktree_is_refused_in_the_others() {
    let family = Family::new(&[("src/shapes.py", SHAPES)]);
    let one = family.add("w1");
    let two = family.add("w2");
    let _daemon = family.daemon();
    wait_answering(&one, true);
    wait_answering(&two, true);
    block_on(async {
        client(&one)
            .lock_acquire(acquire("src/shapes.py:area", "s1", None))
            .await
            .unwrap();
        for root in [&two, &family.main()] {
            let refused = rpc_error(
                client(root)
                    .lock_acquire(acquire("src/shapes.py:area", "s2", None))
                    .await,
            );
            assert!(refused.is(ErrorCode::LockConflict), "{refused:?}");
            // One picture: every worktree lists the lock.
            let locks = client(root).lock_query(query(None)).await.unwrap();
            assert_eq!(locks.len(), 1, "{root:?}");
            assert_eq!(locks[0].session_id, "s1");
        }
    });
    // One daemon: the linked worktrees have a socket, no daemon of their own.
    assert!(!one.join(".wit/daemon.pid").exists());
    assert!(family.main().join(".wit/daemon.pid").exists());
}

#[test]
fn each_worktree_resolves_symbols_in_its_own_text() {
    let family = Family::new(&[("src/shapes.py", SHAPES)]);
    let one = family.add("w1");
    // The same path, other content: `perimeter` exists only in w1, `area` moved down.
    write_file(
        &one,
        "src/shapes.py",
        "def perimeter(r):\n    return 2 * r\n\n\ndef area(r):\n    return r * r\n",
    );
    let _daemon = family.daemon();
    wait_answering(&one, true);
    block_on(async {
        let proposed = client(&one)
            .contract_propose(ContractProposeParams {
                session_id: "s1".into(),
                symbol_path: "src/shapes.py:perimeter".into(),
            })
            .await
            .unwrap();
        assert_eq!(proposed.signature, "(r)");
        let missing = rpc_error(
            client(&family.main())
                .contract_propose(ContractProposeParams {
                    session_id: "s2".into(),
                    symbol_path: "src/shapes.py:perimeter".into(),
                })
                .await,
        );
        assert_domain(
            &missing,
            ErrorCode::SymbolNotFound,
            Some(json!({"symbolPath": "src/shapes.py:perimeter"})),
        );
    });
}

#[test]
fn worktrees_added_while_the_daemon_runs_are_served_and_removed_ones_let_go() {
    let family = Family::new(&[("src/shapes.py", SHAPES)]);
    let mut daemon = family.daemon();
    let late = family.add("w3");
    wait_answering(&late, true);
    block_on(async {
        client(&late)
            .lock_acquire(acquire("src/shapes.py:area", "late", None))
            .await
            .unwrap();
        let locks = client(&family.main())
            .lock_query(query(None))
            .await
            .unwrap();
        assert_eq!(locks[0].session_id, "late");
    });
    family.remove("w3");
    wait_answering(&late, false);
    assert!(matches!(
        block_on(client(&late).ping()),
        Err(ClientError::Unreachable(_))
    ));
    // The repository's daemon goes on serving its main worktree, and stops cleanly.
    wait_answering(&family.main(), true);
    assert!(daemon.terminate().success());
}

#[test]
fn wit_in_a_new_worktree_reaches_the_repository_daemon() {
    let family = Family::new(&[("src/shapes.py", SHAPES)]);
    let _daemon = family.daemon();
    let pid = std::fs::read_to_string(family.main().join(".wit/daemon.pid")).unwrap();
    block_on(async {
        client(&family.main())
            .lock_acquire(acquire("src/shapes.py:area", "main-agent", None))
            .await
            .unwrap();
    });
    let fresh = family.add("w4");
    // Straight after `git worktree add`: the CLI finds the repository's daemon running and
    // waits for it to serve the worktree, rather than starting a second one.
    let output = Command::new(wit_bin())
        .args(["--json", "locks"])
        .current_dir(&fresh)
        .envs(store_env(&family.main()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("main-agent"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(family.main().join(".wit/daemon.pid")).unwrap(),
        pid
    );
    assert!(!fresh.join(".wit/daemon.pid").exists());
}

/// The index status a worktree's index publishes once its build is complete (the main
/// worktree's in `<main>/.wit`, a linked one's under `<main>/.wit/worktrees/`); fails after
/// 20 s.
fn complete_status(dir: &Path) -> wit::analysis::progress::IndexStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Some(status) = wit::analysis::progress::IndexStatus::read(&dir.join("index.json"))
            .filter(|status| status.complete)
        {
            return status;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no complete index in {}", dir.display());
}

#[test]
fn a_second_worktree_costs_only_its_differences() {
    let files: Vec<(String, String)> = (0..20)
        .map(|i| {
            (
                format!("src/m{i}.py"),
                format!("def f{i}(x):\n    return x + {i}\n"),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(rel, text)| (rel.as_str(), text.as_str()))
        .collect();
    let family = Family::new(&borrowed);
    let one = family.add("w1");
    write_file(&one, "src/m3.py", "def g3(x):\n    return x\n");
    let _daemon = family.daemon();
    let main = complete_status(&family.main().join(".wit"));
    assert_eq!(main.parsed, 20);
    wait_answering(&one, true);
    let dirs: Vec<PathBuf> = std::fs::read_dir(family.main().join(".wit/worktrees"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let linked = complete_status(&dirs[0]);
    assert_eq!(linked.files, 20);
    assert_eq!(linked.parsed, 1, "only the file that differs is parsed");
}

#[test]
fn sessions_know_their_worktree_and_branch() {
    let family = Family::new(&[("src/shapes.py", SHAPES)]);
    let one = family.add("w1");
    let _daemon = family.daemon();
    wait_answering(&one, true);
    block_on(async {
        client(&one)
            .lock_acquire(acquire("src/shapes.py:area", "in-w1", None))
            .await
            .unwrap();
        client(&family.main())
            .lock_acquire(acquire("src/other.py:f", "in-main", None))
            .await
            .unwrap();
        let listed = client(&family.main()).session_list().await.unwrap();
        let found = |id: &str| {
            let s = listed.iter().find(|s| s.session_id == id).unwrap();
            (s.worktree.clone(), s.branch.clone())
        };
        assert_eq!(
            found("in-w1"),
            (Some(one.display().to_string()), Some("w1".to_owned()))
        );
        assert_eq!(
            found("in-main"),
            (
                Some(family.main().display().to_string()),
                Some("main".to_owned())
            )
        );
        // A session acting from another worktree moves there.
        client(&family.main())
            .lock_acquire(acquire("src/shapes.py:other", "in-w1", None))
            .await
            .ok();
        let listed = client(&one).session_list().await.unwrap();
        let moved = listed.iter().find(|s| s.session_id == "in-w1").unwrap();
        assert_eq!(moved.branch.as_deref(), Some("main"));
    });
    // `wit sessions` and `wit status` show them.
    for args in [&["sessions"][..], &["status"][..]] {
        let output = Command::new(wit_bin())
            .args(args)
            .current_dir(&one)
            .envs(store_env(&family.main()))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{args:?}: {stdout}");
        assert!(stdout.contains("BRANCH"), "{args:?}: {stdout}");
        assert!(stdout.contains("w1"), "{args:?}: {stdout}");
    }
}

#[test]
fn the_forecast_names_the_worktrees_files_and_symbols_that_will_collide() {
    let shapes = "def area(r):\n    return r * r\n\n\ndef perimeter(r):\n    return 2 * r\n\n\ndef volume(r):\n    return r * r * r\n";
    let family = Family::new(&[("src/shapes.py", shapes)]);
    let one = family.add("w1");
    let two = family.add("w2");
    let three = family.add("w3");
    // w1 changes area, uncommitted; w2 changes area too, committed on its branch; w3 changes
    // volume only: it collides with nobody.
    write_file(
        &one,
        "src/shapes.py",
        &shapes.replace("r * r\n\n\ndef perimeter", "r ** 2\n\n\ndef perimeter"),
    );
    write_file(
        &two,
        "src/shapes.py",
        &shapes.replace(
            "r * r\n\n\ndef perimeter",
            "abs(r) * abs(r)\n\n\ndef perimeter",
        ),
    );
    family.git(&two, &["commit", "-qam", "area by abs"]);
    write_file(
        &three,
        "src/shapes.py",
        &shapes.replace("r * r * r", "r ** 3"),
    );
    let _daemon = family.daemon();
    wait_answering(&one, true);
    let forecast = block_on(client(&family.main()).worktree_forecast()).unwrap();
    let pairs: Vec<(String, String)> = forecast
        .pairs
        .iter()
        .map(|p| (p.a.clone(), p.b.clone()))
        .collect();
    assert_eq!(
        pairs,
        [(one.display().to_string(), two.display().to_string())],
        "{forecast:?}"
    );
    let collision = &forecast.pairs[0].collisions[0];
    assert_eq!(collision.file, "src/shapes.py");
    assert_eq!(collision.symbols, ["area"]);
    assert_eq!(collision.lines_a.len(), 1);
    assert_eq!(collision.lines_a[0].start_line, 2);
    // `wit worktrees` says the same.
    let output = Command::new(wit_bin())
        .args(["worktrees"])
        .current_dir(&three)
        .envs(store_env(&family.main()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("will collide"), "{stdout}");
    assert!(
        stdout.contains("src/shapes.py") && stdout.contains("area"),
        "{stdout}"
    );
    // The worktrees were not touched: w1's change is still uncommitted, its index as it was.
    let status = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&one)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout).trim(),
        "M src/shapes.py"
    );
}

#[test]
fn wit_init_in_a_linked_worktree_wires_the_repository() {
    let family = Family::new(&[("src/shapes.py", SHAPES)]);
    let one = family.add("w1");
    let output = Command::new(wit_bin())
        .args(["init"])
        .current_dir(&one)
        .envs(store_env(&family.main()))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The repository's state and daemon live in the main worktree, the hooks in the common
    // directory (every worktree runs them); the linked worktree has its socket.
    assert!(family.main().join(".wit/daemon.pid").exists());
    assert!(!one.join(".wit/daemon.pid").exists());
    let hook = std::fs::read_to_string(family.main().join(".git/hooks/pre-commit")).unwrap();
    assert!(hook.contains("wit"), "{hook}");
    wait_answering(&one, true);
    wait_answering(&family.main(), true);
    let stop = Command::new(wit_bin())
        .args(["daemon", "stop"])
        .current_dir(&one)
        .envs(store_env(&family.main()))
        .output()
        .unwrap();
    assert!(stop.status.success());
    wait_answering(&family.main(), false);
}

/// Issue 35: a worktree whose `.wit/daemon.sock` would be 120 bytes long (more than a Unix
/// socket address holds) is served on a short path recorded in its `.wit/`, and `wit status`
/// there answers at once instead of waiting for a socket that can never exist.
#[test]
fn a_worktree_with_a_socket_path_too_long_is_served_on_a_short_path() {
    let family = Family::new(&[("src/shapes.py", SHAPES)]);
    let prefix = family.worktree("").join(".wit/daemon.sock");
    let name = "w".repeat(120 - 1 - prefix.as_os_str().len());
    let root = family.add(&name);
    let natural = root.join(".wit/daemon.sock");
    assert_eq!(natural.as_os_str().len(), 120);
    let _daemon = family.daemon();
    let record = root.join(".wit/daemon.sock.path");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !record.exists() {
        assert!(Instant::now() < deadline, "no short socket recorded");
        std::thread::sleep(Duration::from_millis(20));
    }
    let short = PathBuf::from(std::fs::read_to_string(&record).unwrap().trim());
    assert!(short.as_os_str().len() <= 107, "{}", short.display());
    let (status, body) = post(&short, PING);
    assert_eq!(status, 200, "{body}");
    // The CLI finds the same short path from the worktree.
    let started = Instant::now();
    let output = Command::new(wit_bin())
        .arg("status")
        .current_dir(&root)
        .envs(store_env(&family.main()))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "wit status waited {:?}",
        started.elapsed()
    );
    // A lock taken there is the repository's.
    block_on(async {
        WitClient::new(short.clone())
            .lock_acquire(acquire("src/shapes.py:area", "s-long", None))
            .await
            .unwrap();
        let refused = rpc_error(
            client(&family.main())
                .lock_acquire(acquire("src/shapes.py:area", "s-main", None))
                .await,
        );
        assert!(refused.is(ErrorCode::LockConflict), "{refused:?}");
    });
}

/// Issue 35: a worktree added while the daemon runs is indexed from the tree as checked out,
/// not from the half-written tree `git worktree add` leaves while it is still writing: once
/// its index says `complete`, the index the daemon stored holds every file and every call a
/// fresh build of the same tree finds. 900 files in 150 directories make the checkout long
/// enough for the daemon to notice the worktree while it is still being written.
#[test]
fn a_worktree_added_while_the_daemon_runs_is_indexed_as_a_fresh_build_would_be() {
    let mut files: Vec<(String, String)> = vec![(
        "core/helper.py".to_string(),
        "def helper(x):\n    return x + 1\n".to_string(),
    )];
    for d in 0..150 {
        let deep = (0..=(d % 6))
            .map(|k| format!("d{d}_{k}"))
            .collect::<Vec<_>>();
        for f in 0..6 {
            files.push((
                format!("pkg/{}/m{f}.py", deep.join("/")),
                format!(
                    "from core.helper import helper\n\ndef use_{d}_{f}(x):\n    return helper(x) * {f}\n"
                ),
            ));
        }
    }
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(rel, text)| (rel.as_str(), text.as_str()))
        .collect();
    let family = Family::new(&borrowed);
    let _daemon = family.daemon();
    complete_status(&family.main().join(".wit"));
    let linked = family.add("w1");
    wait_answering(&linked, true);
    let dirs: Vec<PathBuf> = std::fs::read_dir(family.main().join(".wit/worktrees"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let status = complete_status(&dirs[0]);
    assert_eq!(status.files, files.len(), "{status:?}");

    let fresh = wit::analysis::RepoIndex::new(linked.clone());
    fresh.build_now();
    let fresh_callers = fresh.callers("core/helper.py", "helper");
    assert_eq!(
        fresh_callers.len(),
        files.len() - 1,
        "the fresh build itself"
    );
    let stored =
        wit::analysis::RepoIndex::new(linked.clone()).with_index_db(&dirs[0].join("index.db"));
    assert_eq!(
        stored.callers("core/helper.py", "helper"),
        fresh_callers,
        "the daemon's index of the worktree differs from a fresh build"
    );
}
