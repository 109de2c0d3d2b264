//! `wit blame FILE`: who owns each uncommitted line of a file (`work.owners`, docs/protocol.md
//! 15.7), with the lines' text.

use serde_json::json;

use super::context::Context;
use super::output::{CliError, Report};
use crate::protocol::{OwnedLines, WorkOwnersParams};

/// The arguments of `wit blame`.
#[derive(Debug, clap::Args)]
pub struct BlameArgs {
    /// The file, relative to the repository's root.
    pub file: String,
}

/// Prints the owners of the file's uncommitted lines.
pub async fn blame(ctx: &Context, args: &BlameArgs) -> Result<Report, CliError> {
    let params = WorkOwnersParams {
        file: args.file.clone(),
    };
    let result = ctx
        .call(|client| {
            let params = params.clone();
            async move { client.work_owners(params).await }
        })
        .await?;
    let text = std::fs::read(ctx.paths.root.join(&result.file)).unwrap_or_default();
    let human = blame_text(&result.file, result.binary, &result.lines, &text);
    Ok(Report::new(json!(result), human))
}

/// Who a run of lines is: its sessions, or "unowned" (a person, a formatter, an unhooked tool).
fn owners_text(run: &OwnedLines) -> String {
    if run.session_ids.is_empty() {
        "unowned".to_owned()
    } else {
        run.session_ids.join(", ")
    }
}

/// The human text: one block per run, each line with its number.
fn blame_text(file: &str, binary: bool, runs: &[OwnedLines], text: &[u8]) -> String {
    if runs.is_empty() {
        return format!("{file}: no uncommitted changes");
    }
    if binary {
        return format!(
            "{file}: binary, changed by {} (since {})",
            owners_text(&runs[0]),
            runs[0].since
        );
    }
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let mut out = String::new();
    for run in runs {
        if run.end_line < run.start_line {
            out.push_str(&format!(
                "{:>5}  deleted after line {} by {} (since {})\n",
                "-",
                run.end_line,
                owners_text(run),
                run.since
            ));
            continue;
        }
        for n in run.start_line..=run.end_line {
            let index = usize::try_from(n - 1).unwrap_or(usize::MAX);
            let line = lines.get(index).copied().unwrap_or_default();
            let shown = String::from_utf8_lossy(line);
            out.push_str(&format!(
                "{n:>5}  {:<24} {}\n",
                owners_text(run),
                shown.trim_end_matches(['\n', '\r'])
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(start: i64, end: i64, ids: &[&str]) -> OwnedLines {
        OwnedLines {
            start_line: start,
            end_line: end,
            session_ids: ids.iter().map(|s| (*s).to_owned()).collect(),
            since: "2026-12-01T00:00:00.000Z".to_owned(),
        }
    }

    #[test]
    fn each_owned_line_is_shown_with_its_owners_and_deletions_as_points() {
        let text = b"a\nb\nc\n";
        let shown = blame_text(
            "f.py",
            false,
            &[run(2, 2, &["A", "B"]), run(3, 2, &[])],
            text,
        );
        assert!(shown.contains("    2  A, B"), "{shown}");
        assert!(shown.contains(" b\n"), "{shown}");
        assert!(shown.contains("deleted after line 2 by unowned"), "{shown}");
    }
}
