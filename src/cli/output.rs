//! The one place that prints: command outcomes ([`Report`], [`CliError`]) become stdout,
//! stderr and an exit code here, and the human renderings of protocol records live here.
//!
//! With `--json`, stdout carries exactly one JSON document (the result, or
//! `{"error": {..}}`); without it, a readable text. Writes ignore a closed pipe
//! (`wit status | head` must not panic).

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::duration::format_left;
use super::{EXIT_PROTOCOL, EXIT_UNREACHABLE, EXIT_USAGE};
use crate::client::ClientError;
use crate::protocol::{
    CallerWarning, ConflictItem, ConflictReport, ContractRecord, ErrorCode, IntentRecord,
    LockRecord, ProtocolError, Violation,
};

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
    /// No daemon answers and none could be started (exit 3).
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
            Self::Unreachable(_) => EXIT_UNREACHABLE,
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
            Self::Failed(message) => json!({"error": {"kind": "failed", "message": message}}),
        }
    }
}

impl From<ClientError> for CliError {
    fn from(error: ClientError) -> Self {
        match error {
            ClientError::Rpc(error) => Self::Rpc(error),
            ClientError::Unreachable(source) => Self::Unreachable(format!(
                "no wit daemon answers ({source}); start one with `wit daemon start`"
            )),
            ClientError::Transport(message) => {
                Self::Unreachable(format!("lost the wit daemon: {message}"))
            }
            ClientError::Decode(message) => {
                Self::Failed(format!("unexpected answer from the wit daemon: {message}"))
            }
        }
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
        CliError::Rpc(error) => rpc_error_text(error),
        CliError::Usage(message) => format!("wit: {message}"),
        CliError::Unreachable(message) => format!("wit: {message}"),
        CliError::Failed(message) => format!("wit: {message}"),
    }
}

fn rpc_error_text(error: &ProtocolError) -> String {
    let data = error.data.as_ref().and_then(Value::as_object);
    let field = |name: &str| data.and_then(|d| d.get(name)).and_then(Value::as_str);
    let mut text = format!("wit: {}", error.message);
    let detail = match error.error_code() {
        Some(ErrorCode::LockConflict) => field("heldBy").map(|held_by| {
            let until = field("expiresAt").map(until_text).unwrap_or_default();
            let cycle = data
                .and_then(|d| d.get("cycle"))
                .and_then(Value::as_array)
                .map(|ids| {
                    let ids: Vec<&str> = ids.iter().filter_map(Value::as_str).collect();
                    format!(
                        "; waiting would deadlock: {} -> {}",
                        ids.join(" -> "),
                        ids.first().copied().unwrap_or_default()
                    )
                })
                .unwrap_or_else(|| {
                    "; add --wait 5m to wait for it (first come, first served)".into()
                });
            format!("locked by {held_by}{until}{cycle}")
        }),
        Some(ErrorCode::LockNotHeld) => {
            field("heldBy").map(|held_by| format!("the lock is held by {held_by}"))
        }
        Some(ErrorCode::LockNotFound) => Some("no live lock on that symbol".to_string()),
        Some(ErrorCode::InvalidTransition) => match (field("current"), field("requested")) {
            (Some(current), Some(requested)) => Some(format!(
                "the intent is {current}; it cannot become {requested}"
            )),
            _ => None,
        },
        Some(ErrorCode::SymbolNotFound) => field("symbolPath").map(|path| {
            let candidates = data
                .and_then(|d| d.get("candidates"))
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .filter(|list| !list.is_empty());
            match candidates {
                Some(list) => format!("{path} is ambiguous; candidates: {list}"),
                None => format!("no symbol {path}"),
            }
        }),
        Some(ErrorCode::ContractAlreadyResolved) => {
            field("status").map(|status| format!("the contract is already {status}"))
        }
        Some(ErrorCode::SelfAcceptNotAllowed) => {
            Some("a contract must be accepted or rejected by another session".to_string())
        }
        Some(ErrorCode::IntentNotOwned) => {
            Some("the intent belongs to another session".to_string())
        }
        Some(ErrorCode::SessionNotFound) => field("sessionId").map(|session| {
            format!("the daemon has never seen session {session} (register it first)")
        }),
        Some(ErrorCode::InvalidRequest) => invalid_request_text(error.data.as_ref()),
        _ => None,
    };
    if let Some(detail) = detail {
        let _ = write!(text, ": {detail}");
    }
    // Everything in `data` stays visible, whether or not the summary used it.
    if let Some(data) = data {
        if !error.is(ErrorCode::InvalidRequest) {
            for (key, value) in data {
                let value = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let _ = write!(text, "\n  {key}: {value}");
            }
        }
    } else if let Some(other) = &error.data {
        let _ = write!(text, "\n  data: {other}");
    }
    text
}

fn invalid_request_text(data: Option<&Value>) -> Option<String> {
    let data = data?;
    let mut problems = Vec::new();
    if let Some(form) = data.get("formErrors").and_then(Value::as_array) {
        problems.extend(form.iter().filter_map(Value::as_str).map(str::to_string));
    }
    if let Some(fields) = data.get("fieldErrors").and_then(Value::as_object) {
        for (name, messages) in fields {
            for message in messages.as_array().into_iter().flatten() {
                problems.push(format!("{name}: {}", message.as_str().unwrap_or_default()));
            }
        }
    }
    if let Some(reason) = data.get("reason").and_then(Value::as_str) {
        problems.push(reason.to_string());
    }
    if let Some(detail) = data.get("detail").and_then(Value::as_str) {
        problems.push(detail.to_string());
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// ` until <time> (<left> left)` for an ISO expiry.
fn until_text(expires_at: &str) -> String {
    match parse_iso_ms(expires_at) {
        Some(at) if at > now_ms() => {
            format!(" until {expires_at} ({} left)", format_left(at - now_ms()))
        }
        Some(_) => format!(" until {expires_at} (expired)"),
        None => format!(" until {expires_at}"),
    }
}

/// The current time in unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Parses `YYYY-MM-DDTHH:MM:SS(.fff)Z` into unix milliseconds.
pub fn parse_iso_ms(text: &str) -> Option<i64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date_parts = date.split('-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: i64 = date_parts.next()?.parse().ok()?;
    let day: i64 = date_parts.next()?.parse().ok()?;
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut clock_parts = clock.split(':');
    let hour: i64 = clock_parts.next()?.parse().ok()?;
    let minute: i64 = clock_parts.next()?.parse().ok()?;
    let second: i64 = clock_parts.next()?.parse().ok()?;
    let millis: i64 = format!("{fraction:0<3}").get(..3)?.parse().ok()?;
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
}

/// Left-aligned columns separated by two spaces, each row indented by two.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(width) = widths.get_mut(i) {
                *width = (*width).max(cell.chars().count());
            }
        }
    }
    let mut text = String::new();
    let header_row: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header_row).chain(rows) {
        let mut line = String::from(" ");
        for (i, cell) in row.iter().enumerate() {
            line.push(' ');
            line.push_str(cell);
            if i + 1 < row.len() {
                let pad = widths[i].saturating_sub(cell.chars().count());
                line.push_str(&" ".repeat(pad + 1));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

fn shorten(text: &str, max: usize) -> String {
    let single_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if single_line.chars().count() <= max {
        single_line
    } else {
        let cut: String = single_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// `",a.ts,b.ts,"` -> `["a.ts", "b.ts"]`.
pub fn intent_files(files: &str) -> Vec<String> {
    files
        .split(',')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect()
}

/// `"[\"f\",\"g\"]"` -> `["f", "g"]` (empty when not a JSON array of strings).
pub fn intent_symbols(symbols: &str) -> Vec<String> {
    serde_json::from_str(symbols).unwrap_or_default()
}

fn enum_text<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A titled section: `TITLE (n)` then the table, or `(none)`.
pub fn section(title: &str, count: usize, body: String) -> String {
    if count == 0 {
        format!("{title} (0)\n  (none)\n")
    } else {
        format!("{title} ({count})\n{body}")
    }
}

/// The live locks as a table.
pub fn locks_section(locks: &[LockRecord]) -> String {
    let rows: Vec<Vec<String>> = locks
        .iter()
        .map(|lock| {
            vec![
                lock.symbol_path.clone(),
                lock.session_id.clone(),
                lock.expires_at.clone(),
                format_left(lock.ttl_remaining_ms),
            ]
        })
        .collect();
    section(
        "LOCKS",
        locks.len(),
        table(&["SYMBOL", "HELD BY", "EXPIRES", "LEFT"], &rows),
    )
}

/// Intents as a table.
pub fn intents_section(intents: &[IntentRecord]) -> String {
    let rows: Vec<Vec<String>> = intents
        .iter()
        .map(|intent| {
            let symbols = intent_symbols(&intent.symbols);
            vec![
                intent.intent_id.clone(),
                intent.session_id.clone(),
                enum_text(&intent.status),
                intent_files(&intent.files).join(","),
                if symbols.is_empty() {
                    "-".into()
                } else {
                    symbols.join(",")
                },
                shorten(&intent.description, 48),
            ]
        })
        .collect();
    section(
        "INTENTS",
        intents.len(),
        table(
            &["ID", "SESSION", "STATUS", "FILES", "SYMBOLS", "DESCRIPTION"],
            &rows,
        ),
    )
}

/// Contracts as a table.
pub fn contracts_section(contracts: &[ContractRecord]) -> String {
    let rows: Vec<Vec<String>> = contracts
        .iter()
        .map(|contract| {
            vec![
                contract.contract_id.clone(),
                contract.symbol_path.clone(),
                enum_text(&contract.status),
                contract.proposer_session_id.clone(),
                contract
                    .responder_session_id
                    .clone()
                    .unwrap_or_else(|| "-".into()),
                shorten(&contract.signature, 60),
            ]
        })
        .collect();
    section(
        "CONTRACTS",
        contracts.len(),
        table(
            &[
                "ID",
                "SYMBOL",
                "STATUS",
                "PROPOSER",
                "RESPONDER",
                "SIGNATURE",
            ],
            &rows,
        ),
    )
}

/// Caller warnings of `lock.acquire`, one block each with its chain.
pub fn caller_warnings(warnings: &[CallerWarning]) -> String {
    let mut text = String::new();
    for warning in warnings {
        let _ = writeln!(
            text,
            "warning: caller {} is locked by {}",
            warning.locked_symbol, warning.held_by
        );
        let _ = writeln!(text, "  chain: {}", warning.chain.join(" -> "));
    }
    text
}

/// The conflicts of `intent.declare`, one line each.
pub fn conflicts(report: &ConflictReport) -> String {
    if report.items.is_empty() {
        return "no conflicts\n".to_string();
    }
    let mut text = format!(
        "{} conflict{}:\n",
        report.items.len(),
        if report.items.len() == 1 { "" } else { "s" }
    );
    for item in &report.items {
        let line = match item {
            ConflictItem::IntentOverlap {
                overlapping_intent_id,
                overlapping_session_id,
                description,
            } => format!(
                "INTENT_OVERLAP     {overlapping_session_id} declared intent {overlapping_intent_id}: \"{}\"",
                shorten(description, 80)
            ),
            ConflictItem::LockIntersection {
                symbol_path,
                held_by,
                expires_at,
            } => format!(
                "LOCK_INTERSECTION  {symbol_path} is locked by {held_by}{}",
                until_text(expires_at)
            ),
            ConflictItem::DepChain {
                intent_symbol,
                locked_callee,
                held_by,
            } => format!(
                "DEP_CHAIN          {intent_symbol} calls {locked_callee}, locked by {held_by}"
            ),
        };
        let _ = writeln!(text, "  {line}");
    }
    text
}

/// Contract violations, naming symbol, expected and actual signature.
pub fn violations(violations: &[Violation]) -> String {
    let mut text = format!(
        "wit: commit blocked: {} contract violation{}\n",
        violations.len(),
        if violations.len() == 1 { "" } else { "s" }
    );
    for violation in violations {
        let _ = writeln!(
            text,
            "  {} (contract {})\n    expected: {}\n    actual:   {}",
            violation.symbol_path, violation.contract_id, violation.expected, violation.actual
        );
    }
    text.push_str(
        "Restore the agreed signature, or agree a new one (wit contract propose SYMBOL), then commit again.\n",
    );
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn iso_timestamps_parse() {
        assert_eq!(parse_iso_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            parse_iso_ms("2026-01-15T10:30:00.250Z"),
            Some(1_768_473_000_250)
        );
        assert_eq!(parse_iso_ms("2000-02-29T00:00:01Z"), Some(951_782_401_000));
        assert_eq!(parse_iso_ms("nonsense"), None);
    }

    #[test]
    fn tables_align_columns() {
        let text = table(
            &["A", "LONGER"],
            &[
                vec!["wide cell".into(), "x".into()],
                vec!["y".into(), "z".into()],
            ],
        );
        assert_eq!(
            text,
            "  A          LONGER\n  wide cell  x\n  y          z\n"
        );
    }

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
