//! Linux: the process table and host facts read from procfs, one small file per question
//! (why not `sysinfo` here: see [`super`]).

use std::io::ErrorKind;

use super::process::{Liveness, Lookup, ProcessInfo};

/// What runs with pid `pid`, from `/proc/<pid>/stat`.
pub fn lookup(pid: i64) -> Lookup {
    match read_small(&format!("/proc/{pid}/stat")) {
        Ok(stat) => parse_stat(&stat),
        Err(error) if error.kind() == ErrorKind::NotFound => Lookup::Gone,
        // ESRCH while the process exits, EACCES under an odd mount: cannot tell.
        Err(_) => Lookup::Unknown,
    }
}

/// The text of a procfs file, in reads of 1 KiB (a process's `stat` in one, and one more for
/// the end): the module's one way to read procfs. procfs says its files are empty (`stat`
/// size 0), so `std::fs::read_to_string` starts from a 32-byte read and doubles: six reads for
/// a process's `stat` on every hook's harness walk, as many for the daemon's pulse's `statm`.
fn read_small(path: &str) -> std::io::Result<String> {
    use std::io::Read;

    let mut file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => bytes.extend_from_slice(chunk.get(..read).unwrap_or_default()),
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
    String::from_utf8(bytes).map_err(|error| std::io::Error::new(ErrorKind::InvalidData, error))
}

/// A `/proc/<pid>/stat` line: the command name (field 2, in parentheses, which may itself
/// hold spaces and parentheses, so fields are counted from the last `)`), the state (field
/// 3: a zombie, `Z`, or `X` has exited), the parent (field 4) and the start time (field 22,
/// clock ticks since boot).
pub fn parse_stat(stat: &str) -> Lookup {
    let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
        return Lookup::Unknown;
    };
    let Some(name) = stat.get(open + 1..close) else {
        return Lookup::Unknown;
    };
    let mut fields = stat[close + 1..].split_ascii_whitespace();
    let Some(state) = fields.next() else {
        return Lookup::Unknown;
    };
    if state == "Z" || state == "X" {
        return Lookup::Gone;
    }
    let parent = fields.next().and_then(|p| p.parse::<i64>().ok());
    // Fields 5..21 lie between the parent and the start time.
    let start = fields.nth(22 - 5).and_then(|s| s.parse::<i64>().ok());
    match (parent, start) {
        (Some(parent), Some(start)) => Lookup::Running(ProcessInfo {
            start,
            parent: (parent > 0).then_some(parent),
            name: name.to_owned(),
        }),
        _ => Lookup::Unknown,
    }
}

/// Whether process `pid` has exited, from `/proc/<pid>/status`: gone, or a zombie with no
/// thread left running.
pub fn exit_state(pid: u32) -> Liveness {
    match read_small(&format!("/proc/{pid}/status")) {
        Ok(status) if is_finished_zombie(&status) => Liveness::Dead,
        Ok(_) => Liveness::Alive,
        Err(error) if error.kind() == ErrorKind::NotFound => Liveness::Dead,
        Err(_) => Liveness::Unknown,
    }
}

/// Whether a `/proc/<pid>/status` text is that of a zombie with no thread left running.
pub fn is_finished_zombie(status: &str) -> bool {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
    };
    field("State:").is_some_and(|state| state.starts_with('Z'))
        && field("Threads:").is_some_and(|threads| threads == "1")
}

/// Resident set of process `pid` in bytes (`/proc/<pid>/statm`, field 2, in pages).
pub fn resident_bytes(pid: u32) -> Option<u64> {
    let statm = read_small(&format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}

/// The kernel's boot id (a random UUID per boot) and this process's pid namespace, as the
/// host identity needs them; empty when unreadable.
pub fn boot_and_namespace() -> (String, String) {
    let boot = read_small("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let namespace = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    (boot, namespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_spaces_and_parentheses_are_skipped() {
        let stat = "1234 (a) b (c)) S 77 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 \
                    1000 10 18446744073709551615";
        assert_eq!(
            parse_stat(stat),
            Lookup::Running(ProcessInfo {
                start: 98765,
                parent: Some(77),
                name: "a) b (c)".into(),
            })
        );
        let zombie = "1234 (x) Z 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 0 0";
        assert_eq!(parse_stat(zombie), Lookup::Gone);
        assert_eq!(parse_stat("garbage"), Lookup::Unknown);
        assert_eq!(parse_stat("1 (init) S 0 1 1"), Lookup::Unknown, "cut short");
        let init = "1 (init) S 0 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 3 1000 10";
        assert!(matches!(
            parse_stat(init),
            Lookup::Running(ProcessInfo {
                parent: None,
                start: 3,
                ..
            })
        ));
    }

    #[test]
    fn a_zombie_has_finished_once_its_last_thread_ends() {
        assert!(is_finished_zombie(
            "Name:\tx\nState:\tZ (zombie)\nThreads:\t1\n"
        ));
        assert!(!is_finished_zombie(
            "Name:\tx\nState:\tZ (zombie)\nThreads:\t3\n"
        ));
        assert!(!is_finished_zombie(
            "Name:\tx\nState:\tS (sleeping)\nThreads:\t1\n"
        ));
    }

    #[test]
    fn the_boot_id_is_read() {
        let (boot, namespace) = boot_and_namespace();
        assert_eq!(boot.len(), 36, "{boot}");
        assert!(namespace.starts_with("pid:"), "{namespace}");
    }
}
