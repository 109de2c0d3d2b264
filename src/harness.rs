//! Which process is the agent harness (Claude Code, Codex, …) that ran a hook or a server:
//! the first ancestor that is not a shell or wrapper. A session registered with that pid
//! lives as long as the agent does (docs/protocol.md 7), and two sessions with the same
//! harness pid are one agent.

use crate::platform::process::{self, Lookup};

/// Programs that stand between Claude and this hook (`sh -c "… wit hook …"`): the session's
/// process is the first ancestor that is none of them.
const INTERMEDIATES: &[&str] = &["sh", "bash", "dash", "zsh", "fish", "env", "timeout", "wit"];

/// The harness that runs this process: the first ancestor from the parent upwards that is not
/// a shell or wrapper, or `None` when there is nothing better than init (or the process table
/// cannot tell). Each step asks the table about one pid.
pub fn harness_pid() -> Option<i64> {
    let table = process::table();
    harness_pid_from(process::parent_pid(), &|pid| entry(table.lookup(pid)))
}

/// `(command name, parent pid)` of a running process.
fn entry(lookup: Lookup) -> Option<(String, i64)> {
    match lookup {
        Lookup::Running(info) => Some((info.name, info.parent.unwrap_or(0))),
        Lookup::Gone | Lookup::Unknown => None,
    }
}

/// The first process from `start` upwards that is not a shell or wrapper: the harness that
/// ran the hook. `None` when the walk finds nothing better than init.
fn harness_pid_from(start: i64, entry: &dyn Fn(i64) -> Option<(String, i64)>) -> Option<i64> {
    let mut pid = start;
    for _ in 0..16 {
        if pid <= 1 {
            return None;
        }
        let (name, ppid) = entry(pid)?;
        if !INTERMEDIATES.contains(&name.as_str()) {
            return Some(pid);
        }
        pid = ppid;
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::platform::process::ProcessTable as _;

    #[test]
    fn the_harness_is_the_first_ancestor_that_is_not_a_shell() {
        let table = |pid: i64| match pid {
            30 => Some(("sh".to_string(), 20)),
            20 => Some(("bash".to_string(), 10)),
            10 => Some(("claude".to_string(), 1)),
            5 => Some(("sh".to_string(), 1)),
            _ => None,
        };
        assert_eq!(harness_pid_from(30, &table), Some(10));
        assert_eq!(harness_pid_from(10, &table), Some(10));
        assert_eq!(harness_pid_from(5, &table), None, "only shells up to init");
        assert_eq!(harness_pid_from(99, &table), None);
    }

    #[test]
    fn this_process_has_an_entry() {
        let me = i64::from(std::process::id());
        let (_, ppid) = entry(process::NativeTable.lookup(me)).unwrap();
        assert_eq!(ppid, process::parent_pid());
        assert_eq!(entry(process::UnknownTable.lookup(me)), None);
    }
}
