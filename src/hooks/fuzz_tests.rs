//! The harness payload parsers take any JSON (issue 20, "keep it from coming back"): an
//! edit request, "not an edit" or a payload error, never a panic; and what they read is no
//! larger than the payload (no parser amplifies: the bound on the text edits build is the
//! daemon's, in `edit.preflight`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use proptest::prelude::*;
use serde_json::Value;

use super::codex;
use super::pre_edit::{self, Change};
use crate::cli::agent_config::Agent;
use crate::fuzz::{json, runner};

const KEYS: [&str; 18] = [
    "tool_name",
    "tool_input",
    "file_path",
    "old_string",
    "new_string",
    "replace_all",
    "edits",
    "content",
    "cwd",
    "session_id",
    "hook_event_name",
    "command",
    "input",
    "path",
    "filePath",
    "old_str",
    "new_str",
    "patch",
];

fn read_size(files: &[pre_edit::FileChange]) -> usize {
    files
        .iter()
        .map(|f| {
            f.path.len()
                + match &f.change {
                    Change::Content(text) => text.len(),
                    Change::Edits(edits) => edits
                        .iter()
                        .map(|e| e.old_text.len() + e.new_text.len())
                        .sum(),
                }
        })
        .sum()
}

#[test]
fn the_four_harness_parsers_take_any_json() {
    let tools = prop::sample::select(vec![
        "Edit",
        "MultiEdit",
        "Write",
        "apply_patch",
        "replace",
        "write_file",
        "edit_file",
        "Bash",
    ]);
    let agents = prop::sample::select(vec![
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Cursor,
    ]);
    let strategy = (agents, tools, json(KEYS.to_vec()), json(KEYS.to_vec()));
    runner()
        .run(&strategy, |(agent, tool, input, extra)| {
            let mut payload = match extra {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            };
            payload.insert("tool_name".into(), Value::from(tool));
            payload.insert("tool_input".into(), input);
            let payload = Value::Object(payload);
            if let Ok(Some(request)) = pre_edit::parse(agent, &payload) {
                prop_assert!(read_size(&request.files) <= payload.to_string().len());
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_patch_parser_takes_any_text() {
    let line = prop_oneof![
        Just("*** Begin Patch".to_owned()),
        Just("*** End Patch".to_owned()),
        "\\*\\*\\* (Add|Update|Delete) File: [a-z/.]{0,10}",
        "\\*\\*\\* Move to: [a-z/.]{0,10}",
        "@@ ?[a-z ]{0,10}",
        "[ +-][a-z ]{0,12}",
        ".{0,16}",
    ];
    let strategy = prop::collection::vec(line, 0..24).prop_map(|lines| lines.join("\n"));
    runner()
        .run(&strategy, |text| {
            if let Ok(ops) = codex::parse_patch(&text) {
                let files = codex::patch_changes(ops);
                prop_assert!(read_size(&files) <= 2 * text.len() + 64);
            }
            Ok(())
        })
        .unwrap();
}
