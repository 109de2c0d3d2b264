//! Snapshot files: a test's output compared with a copy kept in the repository, or written
//! over it when the update variable is set, so that a change of output is a reviewed diff.
//!
//! One file, included with `#[path]` by each test crate that keeps snapshots: the CLI output
//! (`tests/wit/cli.rs`, `WIT_UPDATE_SNAPSHOTS`), the analysis of the fixtures
//! (`tests/analysis.rs`, `WIT_UPDATE_SNAPSHOTS`) and the generated code
//! (`codegen/tests/golden.rs`, `WIT_UPDATE_GOLDEN`).
#![allow(
    dead_code,
    reason = "each test crate that includes this file uses a part of it"
)]

use std::path::{Path, PathBuf};

/// A directory of snapshot files and the variable that rewrites them.
pub struct Snapshots {
    dir: PathBuf,
    update_var: &'static str,
    rerun: &'static str,
}

impl Snapshots {
    /// The snapshots in `dir`, rewritten when `update_var` is set (to anything but `0`); `rerun`
    /// is the command that runs their tests, for the message of a stale one.
    pub fn new(dir: PathBuf, update_var: &'static str, rerun: &'static str) -> Self {
        Self {
            dir,
            update_var,
            rerun,
        }
    }

    /// The directory of the snapshot files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether this run rewrites the snapshots instead of comparing them.
    pub fn updating(&self) -> bool {
        std::env::var_os(self.update_var).is_some_and(|v| !v.is_empty() && v != "0")
    }

    /// How to accept a changed output.
    pub fn how_to_update(&self) -> String {
        format!(
            "if the change is intended, rerun with `{}=1 {}` and review the diff",
            self.update_var, self.rerun
        )
    }

    /// Compares `actual` with the snapshot `name`, or writes it when [`Self::updating`]; a
    /// stale or missing snapshot is the error, saying where it first differs.
    pub fn compare(&self, name: &str, actual: &str) -> Result<(), String> {
        let path = self.dir.join(name);
        if self.updating() {
            std::fs::create_dir_all(&self.dir)
                .unwrap_or_else(|e| panic!("create {}: {e}", self.dir.display()));
            std::fs::write(&path, actual)
                .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
            return Ok(());
        }
        let Ok(expected) = std::fs::read_to_string(&path) else {
            return Err(format!("{name}: missing ({})", path.display()));
        };
        if expected == actual {
            return Ok(());
        }
        let (mut expected_lines, mut actual_lines) = (expected.lines(), actual.lines());
        let mut line = 1;
        loop {
            match (expected_lines.next(), actual_lines.next()) {
                (e, a) if e != a => {
                    return Err(format!(
                        "{name}: differs from line {line}:\n  expected: {e:?}\n  actual:   {a:?}"
                    ))
                }
                (None, None) => {
                    return Err(format!(
                        "{name}: differs in line endings or the final newline"
                    ))
                }
                _ => line += 1,
            }
        }
    }

    /// Fails the test when the snapshot `name` is not `actual` (see [`Self::compare`]).
    #[track_caller]
    pub fn assert_current(&self, name: &str, actual: &str) {
        if let Err(stale) = self.compare(name, actual) {
            panic!(
                "stale snapshot in {}: {stale}\n{}",
                self.dir.display(),
                self.how_to_update()
            );
        }
    }
}
