//! The pairs file of `wit-bench replay`: one JSON object a line, as `scripts/replay/mine.py`
//! writes it (`{"id", "repo", "language", "truth", "conflicted", "files": {path: {"base",
//! "a"?, "b"?}}}`; a side's key is absent when that side left the file alone, null when the
//! file is absent in that state).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// Which agent's patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    A,
    B,
}

/// One file's three states.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileStates {
    /// The text at the base, `None` when the file does not exist there.
    pub base: Option<String>,
    /// A's text: `None` when A left the file alone, `Some(None)` when A deleted it.
    pub a: Option<Option<String>>,
    /// B's text, likewise.
    pub b: Option<Option<String>>,
}

impl FileStates {
    /// What `side` did to the file (`None`: nothing).
    pub(crate) fn side(&self, side: Side) -> Option<Option<&str>> {
        let state = match side {
            Side::A => &self.a,
            Side::B => &self.b,
        };
        state.as_ref().map(|text| text.as_deref())
    }

    /// The file's text after `side`'s patch.
    pub(crate) fn after(&self, side: Side) -> Option<&str> {
        self.side(side).unwrap_or(self.base.as_deref())
    }
}

/// Two agents' patches of one base.
#[derive(Debug, Clone)]
pub(crate) struct Pair {
    /// `<repo>-<merge commit>`.
    pub id: String,
    /// The language family most of its files are in.
    pub language: String,
    /// What the miner found: git's conflicted files of the original merge among these files.
    pub mined_conflicted: Vec<String>,
    /// The files either patch changes, by path.
    pub files: BTreeMap<String, FileStates>,
}

impl Pair {
    /// The paths `side` changes.
    pub(crate) fn changed(&self, side: Side) -> impl Iterator<Item = &str> {
        self.files
            .iter()
            .filter(move |(_, f)| f.side(side).is_some())
            .map(|(p, _)| p.as_str())
    }
}

/// Reads the pairs of `path`.
pub(crate) fn load(path: &Path) -> Result<Vec<Pair>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| parse(line).with_context(|| format!("{}:{}", path.display(), n + 1)))
        .collect()
}

fn parse(line: &str) -> Result<Pair> {
    let value: Value = serde_json::from_str(line)?;
    let string = |v: &Value, key: &str| -> Result<String> {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .with_context(|| format!("no string {key}"))
    };
    let text = |v: Option<&Value>| -> Result<Option<String>> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => bail!("a file state is neither text nor null"),
        }
    };
    let mut files = BTreeMap::new();
    for (path, states) in value
        .get("files")
        .and_then(Value::as_object)
        .context("no files")?
    {
        let side = |key: &str| -> Result<Option<Option<String>>> {
            match states.get(key) {
                None => Ok(None),
                some => Ok(Some(text(some)?)),
            }
        };
        files.insert(
            path.clone(),
            FileStates {
                base: text(states.get("base"))?,
                a: side("a")?,
                b: side("b")?,
            },
        );
    }
    Ok(Pair {
        id: string(&value, "id")?,
        language: string(&value, "language")?,
        mined_conflicted: value
            .get("conflicted")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        files,
    })
}
