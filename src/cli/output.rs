//! The one place that prints: command outcomes ([`Report`], [`CliError`]) become stdout,
//! stderr and an exit code here. The human renderings of protocol records live in
//! [`super::render`], error advice in [`crate::doorway::advice`], times in
//! [`crate::doorway::clock`].
//!
//! With `--json`, stdout carries exactly one JSON document (the result, or
//! `{"error": {..}}`); without it, a readable text. Writes ignore a closed pipe
//! (`wit status | head` must not panic).

use std::io::{IsTerminal, Write};

use serde_json::{json, Value};

use super::{EXIT_PROTOCOL, EXIT_UNREACHABLE, EXIT_USAGE};
use crate::client::ClientError;
use crate::doorway::{advice, clock, Failure, Unavailable};
use crate::protocol::ProtocolError;

/// What a command produced: its JSON form, its human form, warnings for stderr, and the exit
/// code.
#[derive(Debug, Default)]
pub struct Report {
    json: Value,
    human: String,
    notes: Vec<String>,
    code: u8,
    raw: Option<Vec<u8>>,
}

impl Report {
    /// A successful outcome: `json` for `--json`, `human` otherwise.
    pub fn new(json: Value, human: impl Into<String>) -> Self {
        Self {
            json,
            human: human.into(),
            ..Self::default()
        }
    }

    /// Bytes printed as they are in both modes (completion scripts).
    pub fn raw(bytes: Vec<u8>) -> Self {
        Self {
            raw: Some(bytes),
            ..Self::default()
        }
    }

    /// An outcome that prints nothing on stdout in either mode.
    pub fn nothing() -> Self {
        Self::raw(Vec::new())
    }

    /// An outcome that prints nothing on stdout in human mode.
    pub fn quiet(json: Value) -> Self {
        Self::new(json, String::new())
    }

    /// The exit code.
    pub fn code(&self) -> u8 {
        self.code
    }

    /// The same outcome with exit code `code`.
    pub fn with_code(mut self, code: u8) -> Self {
        self.code = code;
        self
    }

    /// Adds a one-line warning printed on stderr in both modes.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }
}

/// Why a command failed; each kind has its exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments or an unusable repository (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The daemon answered with a protocol error (exit 1).
    #[error("{0}")]
    Rpc(ProtocolError),
    /// No daemon answers and none could be started, or it stopped answering (exit 3).
    #[error("{0}")]
    Daemon(Unavailable),
    /// The daemon could not be started or stopped (exit 3).
    #[error("{0}")]
    Unreachable(String),
    /// Something else went wrong, e.g. a git command (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    fn code(&self) -> u8 {
        match self {
            Self::Usage(_) => EXIT_USAGE,
            Self::Rpc(_) | Self::Failed(_) => EXIT_PROTOCOL,
            Self::Unreachable(_) | Self::Daemon(_) => EXIT_UNREACHABLE,
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Self::Rpc(error) => json!({"error": {
                "kind": "rpc",
                "code": error.code,
                "message": error.message,
                "data": error.data.clone().unwrap_or(Value::Null),
            }}),
            Self::Usage(message) => json!({"error": {"kind": "usage", "message": message}}),
            Self::Unreachable(message) => {
                json!({"error": {"kind": "unreachable", "message": message}})
            }
            Self::Daemon(why) => json!({"error": {
                "kind": "unreachable",
                "message": why.to_string(),
                "delivered": why.delivered(),
            }}),
            Self::Failed(message) => json!({"error": {"kind": "failed", "message": message}}),
        }
    }
}

impl From<Failure> for CliError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::Rpc(error) => Self::Rpc(error),
            Failure::Unavailable(why) => Self::Daemon(why),
        }
    }
}

impl From<ClientError> for CliError {
    fn from(error: ClientError) -> Self {
        Failure::from(error).into()
    }
}

/// Prints an outcome and returns the process exit code.
pub fn finish(outcome: Result<Report, CliError>, json_mode: bool) -> u8 {
    match outcome {
        Ok(report) => {
            for note in &report.notes {
                err_line(note);
            }
            if let Some(raw) = &report.raw {
                let _ = std::io::stdout().lock().write_all(raw);
            } else if json_mode {
                out_line(&report.json.to_string());
            } else if !report.human.is_empty() {
                out_text(&report.human);
            }
            report.code
        }
        Err(error) => {
            if json_mode {
                out_line(&error.to_json().to_string());
            } else {
                err_text(&error_text(&error));
            }
            error.code()
        }
    }
}

/// Prints `text` on stdout followed by a newline unless it ends with one, and flushes
/// (streaming commands: watch, demo).
pub fn out_text(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

fn out_line(line: &str) {
    out_text(line);
}

/// Prints one line on stderr.
pub fn err_line(line: &str) {
    err_text(line);
}

fn err_text(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
}

/// Replaces the screen's contents with `text` when stdout is a terminal; otherwise prints it
/// after a separator line.
pub fn redraw(text: &str) {
    if std::io::stdout().is_terminal() {
        out_text(&format!("\x1b[H\x1b[2J{text}"));
    } else {
        out_text(&format!("---\n{text}"));
    }
}

/// The human text of an error, with the useful parts of its `data`.
pub fn error_text(error: &CliError) -> String {
    match error {
        CliError::Rpc(error) => advice::for_person(error, clock::now_ms()),
        CliError::Daemon(why) => format!("wit: {why}"),
        CliError::Usage(message) => format!("wit: {message}"),
        CliError::Unreachable(message) => format!("wit: {message}"),
        CliError::Failed(message) => format!("wit: {message}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn lock_conflict_names_holder_and_keeps_data() {
        let error = ProtocolError {
            code: -32000,
            message: "LOCK_CONFLICT".into(),
            data: Some(json!({"heldBy": "bob", "expiresAt": "2000-01-01T00:00:00.000Z"})),
        };
        let text = error_text(&CliError::Rpc(error));
        assert!(
            text.starts_with(
                "wit: LOCK_CONFLICT: locked by bob until 2000-01-01T00:00:00.000Z (expired)"
            ),
            "{text}"
        );
        assert!(text.contains("heldBy: bob"), "{text}");
    }

    #[test]
    fn invalid_request_lists_every_field() {
        let error = ProtocolError {
            code: -32600,
            message: "INVALID_REQUEST".into(),
            data: Some(
                json!({"formErrors": [], "fieldErrors": {"sessionId": ["Required"], "name": ["Expected string"]}}),
            ),
        };
        let text = error_text(&CliError::Rpc(error));
        assert_eq!(
            text, "wit: INVALID_REQUEST: sessionId: Required; name: Expected string",
            "in the daemon's order"
        );
    }
}
