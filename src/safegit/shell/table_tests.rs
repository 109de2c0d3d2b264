//! The gate's table ([`TABLE`], `gate_table.txt`): every line read as the gate reads it, in
//! the table's scene, gets the table's verdict. The same table is replayed against real git
//! by the black-box test `git_guards` (so it is true to git, not only to this parser).

#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::config::RepoConfig;
use super::git::Effect;
use super::line::analyse;
use super::scope::in_scope;

/// The table: `deny`/`pass`, spaces, a command line (`⏎` for a newline).
pub const TABLE: &str = include_str!("gate_table.txt");

/// The table's lines as `(deny, command)`.
pub fn entries() -> Vec<(bool, String)> {
    TABLE
        .lines()
        .filter(|line| !line.starts_with("//") && !line.trim().is_empty())
        .map(|line| {
            let (verdict, command) = line.split_once("  ").unwrap();
            (verdict == "deny", command.replace('⏎', "\n"))
        })
        .collect()
}

struct Scene {
    aliases: HashMap<&'static str, &'static str>,
}

impl RepoConfig for Scene {
    fn alias(&self, _dir: &Path, name: &str) -> Option<String> {
        self.aliases.get(name).map(|v| v.to_string())
    }
    fn clean_requires_force(&self, _dir: &Path) -> bool {
        true
    }
    fn rebase_autostash(&self, _dir: &Path) -> bool {
        false
    }
    fn current_branch(&self, _dir: &Path) -> Option<String> {
        Some("main".into())
    }
}

/// A directory with the scene's files (the gate looks at which operands exist).
fn scene_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wit-gate-table-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    for file in ["src/lib.ts", "src/own.ts", "src/new.ts", "README.md"] {
        std::fs::write(dir.join(file), "x\n").unwrap();
    }
    std::fs::write(
        dir.join("fix.patch"),
        "diff --git a/src/lib.ts b/src/lib.ts\n--- a/src/lib.ts\n+++ b/src/lib.ts\n@@ -1 +1 @@\n-a\n+b\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("own.patch"),
        "diff --git a/src/own.ts b/src/own.ts\n--- a/src/own.ts\n+++ b/src/own.ts\n@@ -1 +1 @@\n-a\n+b\n",
    )
    .unwrap();
    dir
}

/// Whether the gate would find the other session's work (src/lib.ts modified, src/new.ts
/// untracked) at stake.
fn denies(command: &str, dir: &Path, scene: &Scene) -> bool {
    let analysis = analyse(command, dir, scene);
    let others = [("src/lib.ts", " M"), ("src/new.ts", "??")];
    analysis.risks.iter().any(|risk| {
        risk.effect == Effect::CannotTell
            || others.iter().any(|(file, status)| {
                (!risk.command.starts_with("git clean") || *status == "??")
                    && in_scope(dir, risk, file)
            })
    })
}

#[test]
fn every_line_of_the_table_gets_its_verdict() {
    let scene = Scene {
        aliases: HashMap::from([
            ("st", "stash"),
            ("co", "checkout"),
            ("wipe", "!git reset --hard"),
        ]),
    };
    let dir = scene_dir();
    let entries = entries();
    assert!(entries.len() >= 150, "{} lines", entries.len());
    let wrong: Vec<String> = entries
        .iter()
        .filter(|(deny, command)| denies(command, &dir, &scene) != *deny)
        .map(|(deny, command)| {
            let analysis = analyse(command, &dir, &scene);
            format!(
                "{} expected, got the other: {command:?}\n    {:?}\n    {:?}",
                if *deny { "deny" } else { "pass" },
                analysis.risks,
                analysis.notes
            )
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn worst_cases_stay_bounded() {
    let scene = Scene {
        aliases: HashMap::from([("loop", "!git loop; git loop; git loop")]),
    };
    let dir = scene_dir();
    let unknown: String = (0..5_000).map(|n| format!("git sub{n}; ")).collect();
    assert!(analyse(&unknown, &dir, &scene).risks.is_empty());
    let recursive = analyse("git loop", &dir, &scene);
    assert!(recursive.risks.is_empty());
    assert!(!recursive.notes.is_empty());
    let huge = format!("echo {} && git stash", "a".repeat(1 << 20));
    assert_eq!(analyse(&huge, &dir, &scene).risks.len(), 1);
    let many: String = (0..2_000).map(|n| format!("git add f{n}; ")).collect();
    let risks = analyse(&many, &dir, &scene).risks;
    assert_eq!(risks.len(), super::line::MAX_RISKS + 1);
    assert_eq!(risks.last().unwrap().effect, Effect::CannotTell);
    let _ = std::fs::remove_dir_all(&dir);
}
