//! The truth of a pair: does git conflict when it merges the two patched states?
//!
//! The three states of a pair's files (base, A, B) become three commits of a scratch bare
//! repository through one `git fast-import`, and `git merge-tree --write-tree` merges A and B
//! as `git merge` would (its own merge base: the base commit). The answer is computed on the
//! files the replay sends, so it holds for the pair as replayed, whatever the rest of the
//! original repository held.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::replay_data::{Pair, Side};

/// A scratch bare repository for merges.
pub(crate) struct TruthRepo {
    git_dir: PathBuf,
}

impl TruthRepo {
    /// Creates the repository at `git_dir`.
    pub(crate) fn create(git_dir: &Path) -> Result<Self> {
        let status = Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(git_dir)
            .status()
            .context("git init")?;
        if !status.success() {
            bail!("git init --bare {} failed", git_dir.display());
        }
        Ok(Self {
            git_dir: git_dir.to_owned(),
        })
    }

    /// The files git reports as conflicted when it merges `pair`'s A and B states (empty:
    /// a clean merge).
    pub(crate) fn conflicted_files(&self, pair: &Pair) -> Result<Vec<String>> {
        self.import(pair)?;
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(&self.git_dir)
            .args([
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--no-messages",
                "refs/replay/a",
                "refs/replay/b",
            ])
            .output()
            .context("git merge-tree")?;
        match out.status.code() {
            Some(0) => Ok(Vec::new()),
            Some(1) => {
                let mut files: Vec<String> = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .skip(1)
                    .map(str::to_owned)
                    .collect();
                files.dedup();
                Ok(files)
            }
            _ => bail!(
                "git merge-tree failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    /// Writes the base, A and B commits of `pair` as `refs/replay/{base,a,b}`.
    fn import(&self, pair: &Pair) -> Result<()> {
        let mut stream: Vec<u8> = Vec::new();
        let mut commit = |reference: &str, mark: u32, parent: Option<u32>, side: Option<Side>| {
            let _ = write!(
                stream,
                "reset {reference}\ncommit {reference}\nmark :{mark}\ncommitter replay <replay@localhost> 0 +0000\ndata 0\n"
            );
            if let Some(parent) = parent {
                let _ = writeln!(stream, "from :{parent}");
            }
            for (path, file) in &pair.files {
                let text = match side {
                    None => file.base.as_deref(),
                    Some(side) => match file.side(side) {
                        None => continue,
                        Some(changed) => changed,
                    },
                };
                match text {
                    Some(text) => {
                        let _ = write!(stream, "M 100644 inline {path}\ndata {}\n", text.len());
                        stream.extend_from_slice(text.as_bytes());
                        stream.push(b'\n');
                    }
                    None if side.is_some() => {
                        let _ = writeln!(stream, "D {path}");
                    }
                    None => {}
                }
            }
            stream.push(b'\n');
        };
        commit("refs/replay/base", 1, None, None);
        commit("refs/replay/a", 2, Some(1), Some(Side::A));
        commit("refs/replay/b", 3, Some(1), Some(Side::B));
        let mut child = Command::new("git")
            .arg("--git-dir")
            .arg(&self.git_dir)
            .args(["fast-import", "--quiet", "--force", "--done"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("git fast-import")?;
        stream.extend_from_slice(b"done\n");
        child
            .stdin
            .take()
            .context("fast-import stdin")?
            .write_all(&stream)?;
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "git fast-import failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }
}
