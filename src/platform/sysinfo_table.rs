//! The process table through the `sysinfo` crate: what wit uses off Linux (macOS, Windows,
//! the BSDs), built and tested on every platform. Each question refreshes the one pid it is
//! about (`ProcessesToUpdate::Some`), never the whole table.

use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};

use super::process::{Liveness, Lookup, ProcessInfo, ProcessTable};

/// The process table as `sysinfo` reads it. Start stamps are seconds since the epoch.
#[derive(Debug, Default, Clone, Copy)]
pub struct SysinfoTable;

impl ProcessTable for SysinfoTable {
    fn lookup(&self, pid: i64) -> Lookup {
        let Ok(raw) = u32::try_from(pid) else {
            return Lookup::Gone;
        };
        if raw == 0 {
            return Lookup::Gone;
        }
        if !sysinfo::IS_SUPPORTED_SYSTEM {
            return Lookup::Unknown;
        }
        let Some(system) = refreshed(raw, ProcessRefreshKind::nothing()) else {
            return absent(raw);
        };
        let Some(process) = system.process(Pid::from_u32(raw)) else {
            return absent(raw);
        };
        if matches!(
            process.status(),
            ProcessStatus::Zombie | ProcessStatus::Dead
        ) {
            return Lookup::Gone;
        }
        Lookup::Running(ProcessInfo {
            start: i64::try_from(process.start_time()).unwrap_or(i64::MAX),
            parent: process
                .parent()
                .map(|p| i64::from(p.as_u32()))
                .filter(|&p| p > 0),
            name: process.name().to_string_lossy().into_owned(),
        })
    }
}

/// A `System` that knows process `pid` (refreshed alone, with `kind`), or `None` when the
/// refresh found nothing.
fn refreshed(pid: u32, kind: ProcessRefreshKind) -> Option<System> {
    let mut system = System::new();
    let found = system.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[Pid::from_u32(pid)]),
        false,
        kind,
    );
    (found > 0).then_some(system)
}

/// What a pid that `sysinfo` did not find is: on Unix, gone only when `kill(pid, 0)` says no
/// such process (a process of another user, whose details are refused, still runs); elsewhere
/// gone.
fn absent(pid: u32) -> Lookup {
    #[cfg(unix)]
    {
        let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return Lookup::Gone;
        };
        match rustix::process::test_kill_process(pid) {
            Err(rustix::io::Errno::SRCH) => Lookup::Gone,
            Ok(()) | Err(_) => Lookup::Unknown,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        Lookup::Gone
    }
}

/// Whether process `pid` has exited: gone, or a zombie (whose tasks have all ended, where
/// `sysinfo` lists tasks).
pub fn exit_state(pid: u32) -> Liveness {
    if !sysinfo::IS_SUPPORTED_SYSTEM {
        return Liveness::Unknown;
    }
    let Some(system) = refreshed(pid, ProcessRefreshKind::nothing().with_tasks()) else {
        return liveness_of_absent(pid);
    };
    let Some(process) = system.process(Pid::from_u32(pid)) else {
        return liveness_of_absent(pid);
    };
    let zombie = matches!(
        process.status(),
        ProcessStatus::Zombie | ProcessStatus::Dead
    );
    let threads_left = process.tasks().map_or(0, |tasks| tasks.len());
    if zombie && threads_left <= 1 {
        Liveness::Dead
    } else {
        Liveness::Alive
    }
}

fn liveness_of_absent(pid: u32) -> Liveness {
    match absent(pid) {
        Lookup::Gone => Liveness::Dead,
        Lookup::Running(_) => Liveness::Alive,
        Lookup::Unknown => Liveness::Unknown,
    }
}

/// The resident memory of process `pid` in bytes.
pub fn resident_bytes(pid: u32) -> Option<u64> {
    let system = refreshed(pid, ProcessRefreshKind::nothing().with_memory())?;
    system
        .process(Pid::from_u32(pid))
        .map(sysinfo::Process::memory)
}

/// This host's name, as the kernel knows it.
pub fn host_name() -> Option<String> {
    System::host_name()
}

/// The machine's hardware id where `sysinfo` reads one (macOS: the platform UUID).
pub fn machine_id() -> Option<String> {
    sysinfo::Product::uuid()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    /// The `sysinfo` table is what runs off Linux: here it is checked against the native one.
    #[test]
    fn it_agrees_with_the_native_table_on_this_process() {
        let me = i64::from(std::process::id());
        let Lookup::Running(ours) = SysinfoTable.lookup(me) else {
            panic!("sysinfo does not see this process");
        };
        let Lookup::Running(native) = super::super::process::NativeTable.lookup(me) else {
            panic!("the native table does not see this process");
        };
        assert_eq!(ours.parent, native.parent);
        assert_eq!(ours.name, native.name);
        assert!(ours.start > 1_600_000_000, "seconds since the epoch");
        assert_eq!(SysinfoTable.liveness(me, ours.start), Liveness::Alive);
        assert_eq!(SysinfoTable.liveness(me, ours.start - 1), Liveness::Dead);
        assert!(resident_bytes(std::process::id()).is_some_and(|rss| rss > 0));
        assert_eq!(exit_state(std::process::id()), Liveness::Alive);
        assert!(host_name().is_some_and(|name| !name.is_empty()));
    }

    #[test]
    fn missing_and_exited_pids_are_gone() {
        assert_eq!(SysinfoTable.lookup(0), Lookup::Gone);
        assert_eq!(SysinfoTable.lookup(-1), Lookup::Gone);
        assert_eq!(SysinfoTable.lookup(i64::from(i32::MAX)), Lookup::Gone);
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--list")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while exit_state(pid) != Liveness::Dead {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never ended"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(
            SysinfoTable.lookup(i64::from(pid)),
            Lookup::Gone,
            "a zombie"
        );
        child.wait().unwrap();
        assert_eq!(SysinfoTable.lookup(i64::from(pid)), Lookup::Gone);
    }
}
