//! Linux measurements for `wit-bench`, from procfs: what the benchmarks report and `sysinfo`
//! does not give (CPU time to the nanosecond from `schedstat`, the peak resident set, context
//! switches, inotify watches). Nothing in the daemon or the CLI uses them.

use std::io;
use std::path::Path;
use std::time::Duration;

/// Clock ticks per second (the unit of `stat`'s CPU times).
pub fn clock_ticks() -> u64 {
    rustix::param::clock_ticks_per_second()
}

/// The fields of `/proc/<pid>/stat` after the command name, from field 3 (the state) on.
fn stat_fields(pid: u32) -> io::Result<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat
        .rsplit_once(')')
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "odd /proc stat"))?
        .1;
    Ok(after_name.split_whitespace().map(str::to_owned).collect())
}

/// The sum of `stat` fields `range` (numbered as in proc(5)) as a duration.
fn ticks_of(pid: u32, range: std::ops::RangeInclusive<usize>) -> io::Result<Duration> {
    ticks_in(&stat_fields(pid)?, range)
}

/// The sum of fields `range` of `fields` (a `stat` line from field 3 on) as a duration.
fn ticks_in(fields: &[String], range: std::ops::RangeInclusive<usize>) -> io::Result<Duration> {
    let mut ticks = 0u64;
    for field in range {
        // `fields` starts at field 3.
        ticks += fields
            .get(field - 3)
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "cpu times"))?;
    }
    Ok(Duration::from_millis(ticks * 1000 / clock_ticks()))
}

/// utime + stime of a process (clock ticks, 10 ms).
pub fn cpu_time(pid: u32) -> io::Result<Duration> {
    ticks_of(pid, 14..=15)
}

/// CPU time (user + system) of process `pid` and of the children it has waited for (the git
/// processes a daemon runs, say).
pub fn cpu_time_with_children(pid: u32) -> io::Result<Duration> {
    ticks_of(pid, 14..=17)
}

/// What the children process `pid` has waited for used so far: CPU time (user + system, clock
/// ticks) and minor page faults (`cutime`, `cstime`, `cminflt` of `stat`).
pub fn waited_children_usage(pid: u32) -> io::Result<(Duration, u64)> {
    let fields = stat_fields(pid)?;
    let cpu = ticks_in(&fields, 16..=17)?;
    let faults = fields
        .get(11 - 3)
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "minor faults"))?;
    Ok((cpu, faults))
}

/// CPU time of a process's live threads to the nanosecond (`/proc/<pid>/task/*/schedstat`;
/// the clock ticks of `stat` are 10 ms, too coarse for a few thousand cheap requests).
pub fn cpu_time_of_threads(pid: u32) -> io::Result<Duration> {
    let mut nanos: u64 = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let path = task?.path().join("schedstat");
        if let Ok(text) = std::fs::read_to_string(path) {
            nanos += text
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Ok(Duration::from_nanos(nanos))
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`), or a count (`Threads:`).
pub fn status_field(pid: u32, name: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status_value(&status, name)
}

/// Field `name` of a `/proc/<pid>/status` text, without its `kB`.
fn status_value(status: &str, name: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The voluntary context switches of the process's live threads.
pub fn voluntary_switches(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("status")).ok())
        .filter_map(|status| status_value(&status, "voluntary_ctxt_switches:"))
        .sum()
}

/// The process's inotify instances and their watches in all.
pub fn inotify(pid: u32) -> io::Result<(usize, usize)> {
    let (mut instances, mut watches) = (0, 0);
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        let fd = fd?;
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        if target != Path::new("anon_inode:inotify") {
            continue;
        }
        instances += 1;
        let mut info = Path::new("/proc").join(pid.to_string()).join("fdinfo");
        info.push(fd.file_name());
        watches += std::fs::read_to_string(info)?
            .lines()
            .filter(|l| l.starts_with("inotify wd:"))
            .count();
    }
    Ok((instances, watches))
}

/// The CPU's model name (`/proc/cpuinfo`), or empty.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn this_process_is_measured() {
        let me = std::process::id();
        assert!(status_field(me, "VmRSS:").is_some_and(|kib| kib > 0));
        assert!(status_field(me, "Threads:").is_some_and(|n| n >= 1));
        assert!(cpu_time_with_children(me).unwrap() >= cpu_time(me).unwrap());
        assert!(cpu_time_of_threads(me).unwrap() > Duration::ZERO);
        assert!(inotify(me).is_ok());
        assert!(clock_ticks() > 0);
        assert_eq!(status_value("VmHWM:\t  1234 kB\n", "VmHWM:"), Some(1234));
    }
}
