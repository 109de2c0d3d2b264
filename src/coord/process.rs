//! Which processes are alive, for sessions registered with a pid (PROTOCOL-NOTES 7.1).
//!
//! A pid alone is not an identity: the kernel reuses them. A process is its pid together with
//! its start time (Linux: field 22 of `/proc/<pid>/stat`, clock ticks since boot), so a
//! session whose process exited is dead even when another process now has its pid.

/// Looks up processes on the daemon's host (injected, so tests can fake them).
pub trait Processes: Send + Sync {
    /// The start time of the process `pid`, or `None` when no such process exists.
    fn start_time(&self, pid: i64) -> Option<i64>;
}

/// The real process table, through `/proc`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcFs;

impl Processes for ProcFs {
    fn start_time(&self, pid: i64) -> Option<i64> {
        if pid < 1 {
            return None;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_start_time(&stat)
    }
}

/// Field 22 (`starttime`) of a `/proc/<pid>/stat` line. The second field, the command name
/// in parentheses, may itself hold spaces and parentheses, so fields are counted from the
/// last `)`. A zombie (state `Z`) has exited: it counts as gone.
pub fn parse_start_time(stat: &str) -> Option<i64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_ascii_whitespace();
    // Fields 3.. follow the name: field 3 is the state, field 22 the start time.
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    fields.nth(22 - 4)?.parse().ok()
}

/// The identity of the host a pid means something on (PROTOCOL-NOTES 12.3): the host name
/// with a digest of the kernel's boot id and this process's pid namespace, so two containers
/// of one machine, or one machine before and after a reboot, are different hosts (their pids
/// are different processes). `WIT_HOST_ID` overrides it (tests run "two hosts" on one machine).
pub fn host_id() -> String {
    if let Ok(id) = std::env::var("WIT_HOST_ID") {
        let id = id.trim();
        if !id.is_empty() {
            return id.to_owned();
        }
    }
    let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_owned());
    let name = read("/proc/sys/kernel/hostname").unwrap_or_else(|_| "localhost".to_owned());
    let boot = read("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let namespace = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    format!(
        "{name}-{:08x}",
        fnv1a(&[boot.as_bytes(), namespace.as_bytes()])
    )
}

/// 32-bit FNV-1a over the parts (with a separator byte between them).
fn fnv1a(parts: &[&[u8]]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for part in parts {
        for &byte in part.iter().chain(std::iter::once(&0u8)) {
            hash ^= u32::from(byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn start_time_of_this_process_is_stable() {
        let me = i64::from(std::process::id());
        let first = ProcFs.start_time(me).unwrap();
        assert_eq!(ProcFs.start_time(me), Some(first));
        assert!(first > 0);
    }

    #[test]
    fn host_id_is_stable_and_names_the_host() {
        if std::env::var_os("WIT_HOST_ID").is_some() {
            return;
        }
        let id = host_id();
        assert_eq!(host_id(), id);
        let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert!(id.starts_with(name.trim()), "{id}");
        assert_ne!(fnv1a(&[b"a", b"b"]), fnv1a(&[b"ab"]));
    }

    #[test]
    fn missing_and_invalid_pids_are_gone() {
        assert_eq!(ProcFs.start_time(0), None);
        assert_eq!(ProcFs.start_time(-5), None);
        assert_eq!(ProcFs.start_time(i64::from(i32::MAX)), None);
    }

    #[test]
    fn names_with_spaces_and_parentheses_are_skipped() {
        let stat = "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 \
                    1000 10 18446744073709551615";
        assert_eq!(parse_start_time(stat), Some(98765));
        let zombie = "1234 (x) Z 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 0 0";
        assert_eq!(parse_start_time(zombie), None);
        assert_eq!(parse_start_time("garbage"), None);
    }
}
