//! The process table: whether a pid runs, since when, its parent and its command name
//! (docs/protocol.md 7.1).
//!
//! A pid alone is not an identity: the kernel reuses them. A process is its pid together with
//! its start stamp ([`ProcessInfo::start`]), so a session whose process exited is dead even
//! when another process now has its pid. The stamp is opaque and compared only on the host
//! that made it: clock ticks since boot on Linux (what wit has always stored), seconds since
//! the epoch elsewhere (see [`super`]).

use std::sync::Arc;

/// The environment variable that replaces the process table in tests: `unknown` makes it
/// answer [`Lookup::Unknown`] for every pid (a platform whose table cannot be read). Test
/// only: a daemon run with it reaps no session by its pid.
pub const TEST_TABLE_ENV: &str = "WIT_TEST_PROCESS_TABLE";

/// The start stamp stored for a process whose table answered `Unknown` when it registered:
/// the pid is kept, and only its absence can later say the process is gone. Real stamps are
/// never negative.
pub const START_UNKNOWN: i64 = -1;

/// What the table knows of a running process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its start stamp (opaque, comparable on this host only).
    pub start: i64,
    /// Its parent, when it has one.
    pub parent: Option<i64>,
    /// Its command name (as the kernel keeps it: at most 15 bytes on Linux).
    pub name: String,
}

/// The answer of the table about one pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A process runs with that pid.
    Running(ProcessInfo),
    /// No process runs with that pid (or only a zombie: it has exited).
    Gone,
    /// The table cannot tell (unsupported platform, refused, unreadable).
    Unknown,
}

/// Whether the process registered as (pid, start stamp) still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// It runs.
    Alive,
    /// It has exited (its pid runs nothing, or another process).
    Dead,
    /// The table cannot tell; never to be taken for dead.
    Unknown,
}

/// Looks up processes on this host (injected, so tests can fake them).
pub trait ProcessTable: Send + Sync {
    /// What runs with pid `pid`.
    fn lookup(&self, pid: i64) -> Lookup;

    /// Whether the process registered as `pid` with start stamp `start` still runs.
    fn liveness(&self, pid: i64, start: i64) -> Liveness {
        liveness_of(&self.lookup(pid), start)
    }
}

/// The liveness of a process registered with start stamp `start`, given what its pid looks
/// like now. A stamp of [`START_UNKNOWN`] matches any process with that pid.
pub fn liveness_of(lookup: &Lookup, start: i64) -> Liveness {
    match lookup {
        Lookup::Running(info) if start == START_UNKNOWN || info.start == start => Liveness::Alive,
        Lookup::Running(_) | Lookup::Gone => Liveness::Dead,
        Lookup::Unknown => Liveness::Unknown,
    }
}

/// This host's process table: procfs on Linux, `sysinfo` elsewhere.
#[derive(Debug, Default, Clone, Copy)]
pub struct NativeTable;

impl ProcessTable for NativeTable {
    fn lookup(&self, pid: i64) -> Lookup {
        if pid < 1 {
            return Lookup::Gone;
        }
        #[cfg(target_os = "linux")]
        {
            super::procfs::lookup(pid)
        }
        #[cfg(not(target_os = "linux"))]
        {
            super::sysinfo_table::SysinfoTable.lookup(pid)
        }
    }
}

/// A table that can tell nothing: every pid is [`Lookup::Unknown`] (`WIT_TEST_PROCESS_TABLE=unknown`).
#[derive(Debug, Default, Clone, Copy)]
pub struct UnknownTable;

impl ProcessTable for UnknownTable {
    fn lookup(&self, _pid: i64) -> Lookup {
        Lookup::Unknown
    }
}

/// The process table to use: [`NativeTable`], or [`UnknownTable`] when
/// `WIT_TEST_PROCESS_TABLE=unknown` (tests).
pub fn table() -> Arc<dyn ProcessTable> {
    table_for(std::env::var(TEST_TABLE_ENV).ok().as_deref())
}

/// [`table`] for a value of `WIT_TEST_PROCESS_TABLE`.
fn table_for(knob: Option<&str>) -> Arc<dyn ProcessTable> {
    match knob.map(str::trim) {
        Some("unknown") => Arc::new(UnknownTable),
        _ => Arc::new(NativeTable),
    }
}

/// The pid of this process's parent.
pub fn parent_pid() -> i64 {
    #[cfg(unix)]
    {
        i64::from(std::os::unix::process::parent_id())
    }
    #[cfg(not(unix))]
    {
        match NativeTable.lookup(i64::from(std::process::id())) {
            Lookup::Running(info) => info.parent.unwrap_or(0),
            Lookup::Gone | Lookup::Unknown => 0,
        }
    }
}

/// Whether process `pid` has exited: gone, or a zombie whose threads have all ended (its
/// files, a lock among them, are closed then; its parent may not have reaped it yet).
/// `Unknown` when the table cannot tell.
pub fn exit_state(pid: u32) -> Liveness {
    #[cfg(target_os = "linux")]
    {
        super::procfs::exit_state(pid)
    }
    #[cfg(not(target_os = "linux"))]
    {
        super::sysinfo_table::exit_state(pid)
    }
}

/// The resident memory of process `pid` in bytes, when the table can tell.
pub fn resident_bytes(pid: u32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        super::procfs::resident_bytes(pid)
    }
    #[cfg(not(target_os = "linux"))]
    {
        super::sysinfo_table::resident_bytes(pid)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use std::collections::HashMap;

    use super::*;

    /// A table a test fills in: pids it knows run, pids it marks unknown; the rest are gone.
    #[derive(Default)]
    struct Fake {
        running: HashMap<i64, ProcessInfo>,
        unknown: Vec<i64>,
    }

    impl ProcessTable for Fake {
        fn lookup(&self, pid: i64) -> Lookup {
            if self.unknown.contains(&pid) {
                return Lookup::Unknown;
            }
            self.running
                .get(&pid)
                .cloned()
                .map_or(Lookup::Gone, Lookup::Running)
        }
    }

    fn info(start: i64) -> ProcessInfo {
        ProcessInfo {
            start,
            parent: Some(1),
            name: "agent".into(),
        }
    }

    #[test]
    fn liveness_is_alive_dead_or_unknown_and_unknown_is_never_dead() {
        let mut fake = Fake::default();
        fake.running.insert(10, info(500));
        fake.unknown.push(20);
        assert_eq!(fake.liveness(10, 500), Liveness::Alive);
        assert_eq!(fake.liveness(10, 499), Liveness::Dead, "a reused pid");
        assert_eq!(fake.liveness(11, 500), Liveness::Dead, "an exited process");
        assert_eq!(fake.liveness(20, 500), Liveness::Unknown);
        assert_eq!(fake.liveness(20, START_UNKNOWN), Liveness::Unknown);
        assert_eq!(fake.liveness(10, START_UNKNOWN), Liveness::Alive);
        assert_eq!(fake.liveness(11, START_UNKNOWN), Liveness::Dead);
    }

    #[test]
    fn the_knob_makes_every_pid_unknown() {
        let me = i64::from(std::process::id());
        let unknown = table_for(Some("unknown"));
        assert_eq!(unknown.lookup(me), Lookup::Unknown);
        assert_eq!(unknown.liveness(me, 1), Liveness::Unknown);
        assert_eq!(unknown.lookup(i64::from(i32::MAX)), Lookup::Unknown);
        let native = table_for(None);
        assert!(matches!(native.lookup(me), Lookup::Running(_)));
        assert!(matches!(
            table_for(Some("other")).lookup(me),
            Lookup::Running(_)
        ));
    }

    #[test]
    fn this_process_runs_with_a_stable_start_and_its_parent() {
        let me = i64::from(std::process::id());
        let Lookup::Running(first) = NativeTable.lookup(me) else {
            panic!("this process is not in the table");
        };
        assert!(first.start >= 0);
        assert_eq!(NativeTable.liveness(me, first.start), Liveness::Alive);
        assert_eq!(first.parent, Some(parent_pid()));
        assert!(!first.name.is_empty());
        assert!(resident_bytes(std::process::id()).is_some_and(|rss| rss > 0));
        assert_eq!(exit_state(std::process::id()), Liveness::Alive);
    }

    #[test]
    fn missing_and_invalid_pids_are_gone() {
        assert_eq!(NativeTable.lookup(0), Lookup::Gone);
        assert_eq!(NativeTable.lookup(-5), Lookup::Gone);
        assert_eq!(NativeTable.lookup(i64::from(i32::MAX)), Lookup::Gone);
        assert_eq!(NativeTable.lookup(i64::MAX), Lookup::Gone);
    }

    #[test]
    fn an_exited_child_is_dead_once_reaped_and_exited_while_a_zombie() {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--list")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        // Not yet waited for: a zombie once it ends, which counts as exited.
        while exit_state(pid) != Liveness::Dead {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never ended"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(NativeTable.lookup(i64::from(pid)), Lookup::Gone);
        child.wait().unwrap();
        assert_eq!(NativeTable.lookup(i64::from(pid)), Lookup::Gone);
        assert_eq!(exit_state(pid), Liveness::Dead);
    }
}
