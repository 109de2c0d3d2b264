//! `commit`, the one hand-written MCP tool: `wit commit` for the agent.
//!
//! Every other tool is a protocol method from the generated table and acts on the daemon's
//! state. `commit` acts on the agent's own git working tree (it writes a commit and moves
//! `HEAD`), which the daemon never does, so it has no method in `openrpc.json`: the server
//! runs [`crate::cli::commit::commit_own_changes`] in-process, the same function `wit commit`
//! runs, as its own session, and renders its typed result here.

use std::path::Path;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::cli::commit::{self, CommitArgs, CommitError};
use crate::cli::CliError;
use crate::doorway::Doorway;
use crate::protocol::{ParamErrors, ProtocolError};

use super::render;

/// The tool's name.
pub const NAME: &str = "commit";

/// The tool's description (what `tools/list` shows).
const DESCRIPTION: &str = "Commit only your own changed lines (use instead of git commit).";

/// The `message` of a refusal: a hunk shared with another session.
pub const REFUSED: &str = "COMMIT_REFUSED";
/// The `message` when the session has nothing to commit.
pub const NOTHING: &str = "NOTHING_TO_COMMIT";
/// The `message` when git failed.
pub const GIT_FAILED: &str = "GIT_FAILED";

/// The tool's arguments.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Arguments {
    message: String,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    include_unowned: bool,
}

/// The tool as `tools/list` lists it.
pub fn tool() -> Tool {
    Tool::new(NAME, DESCRIPTION, Arc::new(object(input_schema())))
        .with_raw_output_schema(Arc::new(object(output_schema())))
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "message": {"type": "string", "minLength": 1},
            "paths": {"type": "array", "items": {"type": "string"}},
            "includeUnowned": {
                "type": "boolean",
                "description": "Also lines no session changed"
            }
        },
        "required": ["message"],
        "additionalProperties": false
    })
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "commit": {"type": "string"},
            "files": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["file", "hunks", "leftUncommitted"],
                    "properties": {
                        "file": {"type": "string"},
                        "hunks": {"type": "integer"},
                        "leftUncommitted": {"type": "integer"}
                    }
                }
            },
            "intentsResolved": {"type": "array", "items": {"type": "string"}},
            "agentTrace": {"type": "boolean"}
        },
        "required": ["commit", "files", "intentsResolved"]
    })
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// Runs the tool for `session` in the repository of `daemon`: the arguments checked, the
/// commit made, and the outcome as a tool result (every failure an `isError` result).
pub async fn call(
    daemon: &Doorway,
    session: &str,
    arguments: Option<JsonObject>,
) -> CallToolResult {
    let arguments: Arguments =
        match serde_json::from_value::<Arguments>(Value::Object(arguments.unwrap_or_default())) {
            Ok(arguments) if !arguments.message.trim().is_empty() => arguments,
            Ok(_) => return invalid("message: must not be empty".to_string()),
            Err(error) => return invalid(error.to_string()),
        };
    let args = CommitArgs {
        message: arguments.message,
        include_unowned: arguments.include_unowned,
        no_verify: false,
        paths: arguments.paths,
    };
    let root: &Path = &daemon.paths().root;
    match commit::commit_own_changes(daemon, root, session, &args).await {
        Ok(done) => {
            let value = serde_json::to_value(&done).unwrap_or_default();
            let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
            result.structured_content = Some(value);
            result
        }
        Err(error) => failure(&error),
    }
}

/// Arguments that do not fit the input schema: INVALID_REQUEST, as the daemon answers it.
fn invalid(detail: String) -> CallToolResult {
    let errors = ParamErrors {
        form_errors: vec![detail],
        ..ParamErrors::default()
    };
    render::tool_error(
        NAME,
        NAME,
        &ProtocolError::invalid_params(errors),
        &Value::Null,
    )
}

/// A commit that did not happen: `{code, message, data}` like the other tools' errors (the
/// daemon's own error or DAEMON_UNAVAILABLE as every tool renders them; `code` null for the
/// refusals of the commit itself), and the reason with what to do as one line of text.
fn failure(error: &CommitError) -> CallToolResult {
    let text = error.to_string().replace("\n  ", "; ").replace('\n', "; ");
    let structured = match error {
        CommitError::NoObservedWork | CommitError::AlreadyCommitted => {
            json!({"code": null, "message": NOTHING, "data": {"detail": text}})
        }
        CommitError::Shared(overlaps) => {
            json!({"code": null, "message": REFUSED, "data": {"overlaps": overlaps}})
        }
        CommitError::Hook(refusal) => {
            json!({"code": null, "message": REFUSED,
                   "data": {"hook": refusal.hook, "status": refusal.status, "output": refusal.output}})
        }
        CommitError::Failed(CliError::Rpc(error)) => {
            return render::tool_error(NAME, NAME, error, &Value::Null)
        }
        CommitError::Failed(CliError::Daemon(why)) => return render::unavailable(NAME, why),
        CommitError::Failed(_) => {
            json!({"code": null, "message": GIT_FAILED, "data": {"detail": text}})
        }
    };
    render::failure(structured, text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn line(result: &CallToolResult) -> String {
        result.content[0].as_text().unwrap().text.clone()
    }

    #[test]
    fn refusals_are_one_line_errors_naming_the_overlaps() {
        let error = CommitError::Shared(vec![
            "a.ts line 4: changed by this session (alice) and by bob".into(),
            "b.ts line 9: changed by this session (alice) and by carol".into(),
        ]);
        let result = failure(&error);
        assert_eq!(result.is_error, Some(true));
        let text = line(&result);
        assert!(!text.contains('\n'), "{text}");
        assert!(
            text.contains("by bob") && text.contains("by carol"),
            "{text}"
        );
        assert_eq!(result.structured_content, None);
        let structured = super::super::render::error_of(&result).unwrap();
        assert_eq!(structured["message"], REFUSED);
        assert_eq!(
            structured["data"]["overlaps"][1],
            "b.ts line 9: changed by this session (alice) and by carol"
        );

        let nothing =
            super::super::render::error_of(&failure(&CommitError::NoObservedWork)).unwrap();
        assert_eq!(nothing["message"], NOTHING);
    }

    #[test]
    fn the_schemas_are_objects_and_the_message_is_required() {
        let tool = tool();
        assert_eq!(tool.name, NAME);
        assert_eq!(tool.input_schema["required"], json!(["message"]));
        let output = tool.output_schema.unwrap();
        assert!(output["properties"].get("commit").is_some());
        assert_eq!(
            output["required"],
            json!(["commit", "files", "intentsResolved"])
        );
    }
}
