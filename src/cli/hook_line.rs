//! The command line a harness runs around every tool call (`wit hook pre-edit --agent claude`,
//! `wit hook post-tool --agent codex`), read without clap.
//!
//! Building even the hook-only clap parser ([`super::HookCli`]: every `wit hook` subcommand,
//! its help texts, the agents' value list) is work each hook process does for one fixed
//! line. [`read`] takes only the plain forms the harness configurations wit writes use, and
//! their global flags; any other command line (an unknown or repeated flag, `--help`, a
//! value that starts with `-`, text that is not UTF-8) is left to clap, so the same command
//! line always means what clap says it means. The unit tests hold the two readers to the same
//! answers. (What it saves is small: with the rest of issue 32.2's smaller cuts, about 40 µs
//! of a 2.7 ms hook; docs/benchmarks-history.md, 2026-12-05 late.)

use std::ffi::OsString;
use std::path::PathBuf;

use super::agent_config::Agent;
use super::{GlobalArgs, HarnessHook};

/// Reads `args` (the program's name left out) when they are a plain harness hook command
/// line: `hook pre-edit|post-tool --agent NAME`, with the global flags `--repo DIR`,
/// `--session ID` and `--json` anywhere (each at most once, `--flag VALUE` or
/// `--flag=VALUE`); `None` for every other command line.
pub(super) fn read(args: &[OsString]) -> Option<(GlobalArgs, HarnessHook)> {
    let mut words = Vec::with_capacity(args.len());
    for arg in args {
        words.push(arg.to_str()?);
    }
    let mut flags = Flags::default();
    let mut positionals = Vec::with_capacity(2);
    let mut rest = words.into_iter();
    while let Some(word) = rest.next() {
        let Some(flag) = word.strip_prefix("--") else {
            if word.starts_with('-') {
                return None;
            }
            positionals.push(word);
            continue;
        };
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (flag, None),
        };
        if name == "json" {
            if inline.is_some() || std::mem::replace(&mut flags.json, true) {
                return None;
            }
            continue;
        }
        // `--agent` belongs to the hook's subcommand: clap refuses it before the subcommand.
        if name == "agent" && positionals.len() < 2 {
            return None;
        }
        let value = match inline {
            Some(value) => value,
            None => rest.next()?,
        };
        if value.is_empty() || value.starts_with('-') {
            return None;
        }
        let slot = match name {
            "repo" => &mut flags.repo,
            "session" => &mut flags.session,
            "agent" => &mut flags.agent,
            _ => return None,
        };
        if slot.replace(value).is_some() {
            return None;
        }
    }
    let agent = flags.agent?;
    let agent = Agent::ALL.into_iter().find(|known| known.name() == agent)?;
    let hook = match positionals.as_slice() {
        ["hook", "pre-edit"] => HarnessHook::PreEdit(agent),
        ["hook", "post-tool"] => HarnessHook::PostTool(agent),
        _ => return None,
    };
    let global = GlobalArgs {
        repo: flags.repo.map(PathBuf::from),
        session: flags.session.map(str::to_owned),
        json: flags.json,
    };
    Some((global, hook))
}

/// The flags seen so far.
#[derive(Default)]
struct Flags<'a> {
    repo: Option<&'a str>,
    session: Option<&'a str>,
    agent: Option<&'a str>,
    json: bool,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// What clap's hook parser makes of `line`.
    fn by_clap(line: &[&str]) -> Option<(GlobalArgs, HarnessHook)> {
        crate::cli::by_hook_cli(std::iter::once("wit").chain(line.iter().copied()))
    }

    fn by_hand(line: &[&str]) -> Option<(GlobalArgs, HarnessHook)> {
        let args: Vec<OsString> = line.iter().map(OsString::from).collect();
        read(&args)
    }

    /// The forms harness configurations use are read by hand, exactly as clap reads them.
    #[test]
    fn the_harnesses_command_lines_are_read_as_clap_reads_them() {
        let lines: &[&[&str]] = &[
            &["hook", "pre-edit", "--agent", "claude"],
            &["hook", "post-tool", "--agent", "codex"],
            &["hook", "pre-edit", "--agent=gemini"],
            &["--repo", "/r d", "hook", "pre-edit", "--agent", "cursor"],
            &[
                "--repo=/r",
                "--session",
                "s 1",
                "hook",
                "post-tool",
                "--agent",
                "kiro",
            ],
            &[
                "hook",
                "--json",
                "pre-edit",
                "--agent",
                "cline",
                "--session=a=b",
            ],
            &[
                "hook", "pre-edit", "--agent", "windsurf", "--repo", "r", "--json",
            ],
            &["--json", "hook", "post-tool", "--agent", "opencode"],
            &["hook", "pre-edit", "--session", "s", "--agent", "copilot"],
        ];
        for line in lines {
            let hand = by_hand(line);
            assert!(hand.is_some(), "{line:?} is not read by hand");
            assert_eq!(hand, by_clap(line), "{line:?}");
        }
        for agent in Agent::ALL {
            let line = ["hook", "pre-edit", "--agent", agent.name()];
            assert_eq!(by_hand(&line), by_clap(&line));
        }
    }

    /// Everything else is left to clap: an error there, or a meaning the hand reader does not
    /// claim to know.
    #[test]
    fn any_other_command_line_is_left_to_clap() {
        let lines: &[&[&str]] = &[
            &[],
            &["hook"],
            &["hook", "pre-edit"],
            &["hook", "pre-edit", "--agent"],
            &["hook", "pre-edit", "--agent", "Claude"],
            &["hook", "pre-edit", "--agent", "nobody"],
            &["hook", "pre-edit", "--agent", "claude", "--agent", "codex"],
            &["hook", "pre-edit", "--agent", "claude", "--json", "--json"],
            &["hook", "pre-edit", "--agent", "claude", "--json=true"],
            &["hook", "pre-edit", "--agent", "claude", "--repo"],
            &["hook", "pre-edit", "--agent", "claude", "--repo="],
            &["hook", "pre-edit", "--agent", "claude", "--session", "-s"],
            &["hook", "pre-edit", "--agent", "claude", "--help"],
            &["hook", "pre-edit", "--agent", "claude", "-h"],
            &["hook", "pre-edit", "--agent", "claude", "--"],
            &["hook", "pre-edit", "--agent", "claude", "extra"],
            &["--agent", "claude", "hook", "pre-edit"],
            &["hook", "--agent", "claude", "pre-edit"],
            &["pre-edit", "hook", "--agent", "claude"],
            &["hook", "policy"],
            &["hook", "install", "--agent", "claude"],
            &["hook", "pre-edit", "--agent", "claude", "--unknown", "x"],
        ];
        for line in lines {
            assert_eq!(by_hand(line), None, "{line:?} is read by hand");
        }
    }

    #[test]
    fn text_that_is_not_utf8_is_left_to_clap() {
        use std::os::unix::ffi::OsStringExt as _;
        let args = vec![
            OsString::from("--repo"),
            OsString::from_vec(vec![0xff, b'r']),
            OsString::from("hook"),
            OsString::from("pre-edit"),
            OsString::from("--agent"),
            OsString::from("claude"),
        ];
        assert_eq!(read(&args), None);
    }
}
