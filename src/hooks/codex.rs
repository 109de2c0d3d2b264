//! Codex's PreToolUse hook (`wit hook pre-edit --agent codex`, wired in `.codex/hooks.json`).
//!
//! Codex edits files with `apply_patch`; the hook gets the patch as `tool_input.command`
//! (Codex's hook wire format is Claude Code's: `session_id`, `cwd`, `tool_name`,
//! `tool_input`, and the answer under `hookSpecificOutput`). The patch format:
//!
//! ```text
//! *** Begin Patch
//! *** Update File: src/auth.py
//! *** Move to: src/login.py          (optional)
//! @@ def validate(token):
//!      context line
//! -    removed line
//! +    added line
//! *** Add File: src/new.py
//! +every line of the new file
//! *** Delete File: src/old.py
//! *** End Patch
//! ```
//!
//! Each `@@` hunk becomes one find-and-replace edit (context and `-` lines are the old text,
//! context and `+` lines the new text), an added file its whole content, a deleted file empty
//! content. A moved file is checked as emptied at its old path (every symbol leaves it).
//! Codex has no "ask" answer: an ask is a deny whose reason asks the agent to get the
//! person's go-ahead.

use serde_json::{json, Value};

use super::claude;
use super::pre_edit::{Change, Decision, EditRequest, FileChange, PayloadError, TextEdit, Verdict};

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOp {
    /// `*** Update File:` with its hunks as `(old text, new text)` pairs.
    Update {
        /// The file.
        path: String,
        /// `*** Move to:`, when the file is also renamed.
        move_to: Option<String>,
        /// The hunks, in order.
        hunks: Vec<(String, String)>,
    },
    /// `*** Add File:` with the new file's content.
    Add {
        /// The file.
        path: String,
        /// Its content.
        content: String,
    },
    /// `*** Delete File:`.
    Delete {
        /// The file.
        path: String,
    },
}

/// Why a patch could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PatchError {
    /// No `*** Begin Patch` line.
    #[error("no `*** Begin Patch` line")]
    NoBegin,
    /// A line that belongs to no file operation.
    #[error("line {0}: unexpected `{1}`")]
    Unexpected(usize, String),
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const UPDATE: &str = "*** Update File: ";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// Parses an `apply_patch` envelope into its file operations, in order.
pub fn parse_patch(text: &str) -> Result<Vec<PatchOp>, PatchError> {
    let mut lines = text
        .lines()
        .enumerate()
        .skip_while(|(_, l)| l.trim() != BEGIN);
    if lines.next().is_none() {
        return Err(PatchError::NoBegin);
    }
    let mut ops = Vec::new();
    let mut current: Option<PatchOp> = None;
    let mut hunk = Hunk::default();
    for (number, line) in lines {
        let op_header = line.starts_with(UPDATE)
            || line.starts_with(ADD)
            || line.starts_with(DELETE)
            || line.trim_end() == END;
        if op_header {
            finish(&mut current, &mut hunk, &mut ops);
            if line.trim_end() == END {
                break;
            }
        }
        if let Some(path) = line.strip_prefix(UPDATE) {
            current = Some(PatchOp::Update {
                path: path.trim().to_string(),
                move_to: None,
                hunks: Vec::new(),
            });
        } else if let Some(path) = line.strip_prefix(ADD) {
            current = Some(PatchOp::Add {
                path: path.trim().to_string(),
                content: String::new(),
            });
        } else if let Some(path) = line.strip_prefix(DELETE) {
            current = Some(PatchOp::Delete {
                path: path.trim().to_string(),
            });
        } else {
            match &mut current {
                Some(PatchOp::Update { move_to, hunks, .. }) => {
                    if let Some(target) = line.strip_prefix(MOVE) {
                        *move_to = Some(target.trim().to_string());
                    } else if line.starts_with("@@") {
                        hunk.flush(hunks);
                    } else if line.trim_end() == END_OF_FILE {
                        // The hunk ends at the end of the file: nothing to do for old/new text.
                    } else {
                        hunk.push(line);
                    }
                }
                Some(PatchOp::Add { content, .. }) => match line.strip_prefix('+') {
                    Some(added) => {
                        content.push_str(added);
                        content.push('\n');
                    }
                    None => return Err(PatchError::Unexpected(number + 1, line.to_string())),
                },
                Some(PatchOp::Delete { .. }) | None => {
                    if !line.trim().is_empty() {
                        return Err(PatchError::Unexpected(number + 1, line.to_string()));
                    }
                }
            }
        }
    }
    finish(&mut current, &mut hunk, &mut ops);
    Ok(ops)
}

fn finish(current: &mut Option<PatchOp>, hunk: &mut Hunk, ops: &mut Vec<PatchOp>) {
    if let Some(mut op) = current.take() {
        if let PatchOp::Update { hunks, .. } = &mut op {
            hunk.flush(hunks);
        }
        ops.push(op);
    }
    *hunk = Hunk::default();
}

/// The old and new text of the hunk being read.
#[derive(Debug, Default)]
struct Hunk {
    old: String,
    new: String,
    changed: bool,
}

impl Hunk {
    fn push(&mut self, line: &str) {
        // A bare empty line is an empty context line (models often drop its space).
        let (marker, text) = match line.chars().next() {
            Some(marker @ (' ' | '-' | '+')) => (marker, &line[1..]),
            _ => (' ', line),
        };
        if marker != '+' {
            self.old.push_str(text);
            self.old.push('\n');
        }
        if marker != '-' {
            self.new.push_str(text);
            self.new.push('\n');
        }
        self.changed |= marker != ' ';
    }

    fn flush(&mut self, hunks: &mut Vec<(String, String)>) {
        let hunk = std::mem::take(self);
        if hunk.changed {
            hunks.push((hunk.old, hunk.new));
        }
    }
}

/// The files a patch changes, as preflight changes. A hunk without old text (a pure addition
/// with no context) cannot be placed and is left out.
pub fn patch_changes(ops: Vec<PatchOp>) -> Vec<FileChange> {
    let mut files = Vec::new();
    for op in ops {
        match op {
            PatchOp::Update {
                path,
                move_to: Some(_),
                ..
            }
            | PatchOp::Delete { path } => files.push(FileChange {
                path,
                change: Change::Content(String::new()),
            }),
            PatchOp::Update { path, hunks, .. } => {
                let edits: Vec<TextEdit> = hunks
                    .into_iter()
                    .filter(|(old, _)| !old.is_empty())
                    .map(|(old_text, new_text)| TextEdit {
                        old_text,
                        new_text,
                        replace_all: false,
                    })
                    .collect();
                if !edits.is_empty() {
                    files.push(FileChange {
                        path,
                        change: Change::Edits(edits),
                    });
                }
            }
            PatchOp::Add { path, content } => files.push(FileChange {
                path,
                change: Change::Content(content),
            }),
        }
    }
    files
}

/// The patch text of an `apply_patch` call: `tool_input.command` (a string, or the argv
/// `["apply_patch", patch]`), `tool_input.input`, or `tool_input` itself as a string.
fn patch_text(input: &Value) -> Option<&str> {
    let candidates = [
        input.get("command"),
        input.get("input"),
        input.get("patch"),
        Some(input),
    ];
    for candidate in candidates.into_iter().flatten() {
        match candidate {
            Value::String(text) if text.contains(BEGIN) => return Some(text),
            Value::Array(argv) => {
                if let Some(text) = argv
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|arg| arg.contains(BEGIN))
                {
                    return Some(text);
                }
            }
            _ => {}
        }
    }
    None
}

/// Reads a Codex PreToolUse payload; `Ok(None)` when the tool is not a file edit.
pub fn parse(payload: &Value) -> Result<Option<EditRequest>, PayloadError> {
    let (tool, input) = super::claude::tool_call(payload, "tool_name")?;
    let files = match patch_text(input) {
        Some(text) => patch_changes(parse_patch(text).map_err(|error| {
            PayloadError::Shape(format!("the {tool} patch cannot be read: {error}"))
        })?),
        // Codex also reports edits under Claude Code's tool names.
        None => match claude::tool_changes(tool, input)? {
            Some(files) => files,
            None => return Ok(None),
        },
    };
    Ok(Some(EditRequest {
        session: claude::string_field(payload, "session_id"),
        cwd: claude::string_field(payload, "cwd").map(Into::into),
        files,
    }))
}

/// The answer on stdout: Claude Code's shape, with an ask turned into a deny.
pub fn answer(verdict: &Verdict) -> Option<Value> {
    match verdict.decision {
        Decision::Ask => Some(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": verdict.refusal(),
        }})),
        _ => claude::answer(verdict),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn an_update_with_several_hunks_gives_one_edit_per_hunk() {
        let patch = [
            "*** Begin Patch",
            "*** Update File: src/auth.py",
            "@@ def validate(token):",
            " def validate(token):",
            "-    return len(token) > 3",
            "+    return len(token) > 8",
            "@@ class Session:",
            "     def close(self):",
            "-        pass",
            "+        self.open = False",
            "+        return None",
            "*** End Patch",
            "",
        ]
        .join("\n");
        let patch = patch.as_str();
        let ops = parse_patch(patch).unwrap();
        assert_eq!(
            ops,
            vec![PatchOp::Update {
                path: "src/auth.py".into(),
                move_to: None,
                hunks: vec![
                    (
                        "def validate(token):\n    return len(token) > 3\n".into(),
                        "def validate(token):\n    return len(token) > 8\n".into()
                    ),
                    (
                        "    def close(self):\n        pass\n".into(),
                        "    def close(self):\n        self.open = False\n        return None\n"
                            .into()
                    ),
                ],
            }]
        );
        let files = patch_changes(ops);
        let [FileChange {
            path,
            change: Change::Edits(edits),
        }] = files.as_slice()
        else {
            panic!("{files:?}")
        };
        assert_eq!(path, "src/auth.py");
        assert_eq!(edits.len(), 2);
        assert!(!edits[0].replace_all);
    }

    #[test]
    fn add_delete_and_move_in_one_patch() {
        let patch = "*** Begin Patch\n\
*** Add File: src/new.ts\n\
+export function fresh(): number {\n\
+  return 1;\n\
+}\n\
*** Delete File: src/old.ts\n\
*** Update File: src/a.go\n\
*** Move to: src/b.go\n\
@@\n\
-func A() {}\n\
+func B() {}\n\
*** End of File\n\
*** End Patch";
        let ops = parse_patch(patch).unwrap();
        assert_eq!(
            ops[0],
            PatchOp::Add {
                path: "src/new.ts".into(),
                content: "export function fresh(): number {\n  return 1;\n}\n".into()
            }
        );
        assert_eq!(
            ops[1],
            PatchOp::Delete {
                path: "src/old.ts".into()
            }
        );
        assert_eq!(
            ops[2],
            PatchOp::Update {
                path: "src/a.go".into(),
                move_to: Some("src/b.go".into()),
                hunks: vec![("func A() {}\n".into(), "func B() {}\n".into())]
            }
        );
        let files = patch_changes(ops);
        let summary: Vec<(&str, bool)> = files
            .iter()
            .map(|f| {
                (
                    f.path.as_str(),
                    matches!(&f.change, Change::Content(c) if c.is_empty()),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("src/new.ts", false),
                ("src/old.ts", true),
                ("src/a.go", true)
            ]
        );
    }

    #[test]
    fn bad_patches_and_context_free_additions() {
        assert_eq!(parse_patch("hello"), Err(PatchError::NoBegin));
        assert!(matches!(
            parse_patch("*** Begin Patch\n*** Add File: a.py\nno plus\n*** End Patch\n"),
            Err(PatchError::Unexpected(3, _))
        ));
        assert!(matches!(
            parse_patch("*** Begin Patch\nstray\n*** End Patch\n"),
            Err(PatchError::Unexpected(2, _))
        ));
        // A pure addition without context cannot be placed: the file is left out.
        let ops =
            parse_patch("*** Begin Patch\n*** Update File: a.py\n@@\n+x = 1\n*** End Patch\n")
                .unwrap();
        assert!(patch_changes(ops).is_empty());
        // An empty line inside a hunk is an empty context line.
        let ops = parse_patch(
            "*** Begin Patch\n*** Update File: a.py\n@@\n a\n\n-b\n+c\n*** End Patch\n",
        )
        .unwrap();
        let PatchOp::Update { hunks, .. } = &ops[0] else {
            panic!()
        };
        assert_eq!(hunks[0], ("a\n\nb\n".into(), "a\n\nc\n".into()));
    }

    #[test]
    fn the_patch_is_found_in_every_shape_codex_sends() {
        let patch = "*** Begin Patch\n*** Delete File: x.rs\n*** End Patch\n";
        for input in [
            json!({"command": patch}),
            json!({"command": ["apply_patch", patch]}),
            json!({"input": patch}),
            json!(patch),
        ] {
            assert_eq!(patch_text(&input), Some(patch), "{input}");
        }
        assert_eq!(patch_text(&json!({"command": "ls"})), None);
    }
}
