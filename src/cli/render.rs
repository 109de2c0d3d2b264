//! The human renderings of protocol records: tables of locks, intents and contracts, caller
//! warnings, conflicts and contract violations.

use std::fmt::Write as _;

use serde_json::Value;

use super::duration::format_left;
use crate::doorway::clock;
use crate::protocol::{
    CallerWarning, ConflictItem, ConflictReport, ContractRecord, IntentRecord, LockRecord,
    Violation,
};

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
                "INTENT_OVERLAP     {overlapping_session_id}, intent {overlapping_intent_id}: \"{}\"",
                shorten(description, 80)
            ),
            ConflictItem::LockIntersection {
                symbol_path,
                held_by,
                expires_at,
            } => format!(
                "LOCK_INTERSECTION  {symbol_path} is locked by {held_by}{}",
                clock::until_text(expires_at, clock::now_ms())
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
    use super::*;

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
}
