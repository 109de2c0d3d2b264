//! `wit log`: the daemon's log of changes (`events.poll`), once or following.

use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};

use super::context::Context;
use super::output::{self, CliError, Report};
use crate::client::WitClient;
use crate::protocol::{EventRecord, EventsPollParams, EventsPollParamsTypesItem};

/// How long one `events.poll` of `--follow` waits before asking again.
const FOLLOW_WAIT_MS: i64 = 30_000;
/// The most events one poll returns.
const PAGE: i64 = 1000;

/// `wit log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Show the events after this sequence number (default: the last `--last`).
    #[arg(long, value_name = "SEQ")]
    pub since: Option<i64>,
    /// Without `--since`: how many of the newest events to show.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub last: i64,
    /// Keep printing new events as they happen (Ctrl-C to quit).
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Only events of this type (repeatable): lock.acquired, session.reaped, …
    #[arg(long = "type", value_name = "TYPE", value_parser = parse_type)]
    pub types: Vec<EventsPollParamsTypesItem>,
}

fn parse_type(text: &str) -> Result<EventsPollParamsTypesItem, String> {
    serde_json::from_value(Value::String(text.to_string())).map_err(|_| {
        "one of session.registered, session.ended, session.reaped, lock.acquired, \
         lock.refreshed, lock.released, lock.expired, intent.declared, intent.updated, \
         contract.proposed, contract.responded"
            .to_string()
    })
}

/// Prints the log (and follows it with `--follow`).
pub async fn run(ctx: &Context, args: LogArgs) -> Result<Report, CliError> {
    if args.last < 1 {
        return Err(CliError::Usage("--last must be at least 1".into()));
    }
    let params = |since: Option<i64>, wait_ms: Option<i64>| EventsPollParams {
        since,
        wait_ms,
        limit: Some(PAGE),
        types: args.types.clone(),
    };
    let mut since = match args.since {
        Some(since) if since < 0 => {
            return Err(CliError::Usage("--since must be at least 0".into()));
        }
        Some(since) => since,
        None => {
            // The newest seq, then step back: the last N events of any type.
            let newest = ctx
                .call(|client| async move { client.events_poll(params(None, None)).await })
                .await?
                .next;
            (newest - args.last).max(0)
        }
    };
    let client = ctx.client();
    // Everything already there, page by page.
    let mut events = Vec::new();
    let mut gap = false;
    loop {
        let page = ctx
            .call(|client| {
                let params = params(Some(since), None);
                async move { client.events_poll(params).await }
            })
            .await?;
        gap |= page.gap;
        let done = page.events.len() < PAGE as usize;
        since = page.next;
        events.extend(page.events);
        if done {
            break;
        }
    }
    if !args.follow {
        let human = if events.is_empty() {
            "no events".to_string()
        } else {
            events.iter().map(event_line).collect::<Vec<_>>().join("\n")
        };
        let report = Report::new(json!({"events": events, "next": since, "gap": gap}), human);
        return Ok(if gap {
            report.with_note("some older events were already dropped (retention: 7 days)")
        } else {
            report
        });
    }
    for event in &events {
        print_event(ctx.json, event);
    }
    follow(&client, ctx.json, since, &args.types).await;
    Ok(Report::nothing())
}

/// Prints events as they come until Ctrl-C; a vanished daemon is retried.
async fn follow(
    client: &WitClient,
    json_mode: bool,
    mut since: i64,
    types: &[EventsPollParamsTypesItem],
) {
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        let params = EventsPollParams {
            since: Some(since),
            wait_ms: Some(FOLLOW_WAIT_MS),
            limit: Some(PAGE),
            types: types.to_vec(),
        };
        tokio::select! {
            _ = &mut interrupted => return,
            answer = client.events_poll(params) => match answer {
                Ok(page) => {
                    for event in &page.events {
                        print_event(json_mode, event);
                    }
                    since = page.next;
                }
                Err(error) => {
                    output::err_line(&output::error_text(&CliError::from(error)));
                    tokio::select! {
                        _ = &mut interrupted => return,
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
            },
        }
    }
}

fn print_event(json_mode: bool, event: &EventRecord) {
    if json_mode {
        output::out_text(&json!(event).to_string());
    } else {
        output::out_text(&event_line(event));
    }
}

/// One event as a line: `#12 10:30:00.123 lock.acquired src/a.ts:f by s1 (expiresAt=…)`.
pub fn event_line(event: &EventRecord) -> String {
    let time = crate::coord::iso_millis(event.at);
    let clock = time.get(11..23).unwrap_or(&time);
    let by = event
        .session_id
        .as_deref()
        .map(|s| format!(" by {s}"))
        .unwrap_or_default();
    let details: Vec<String> = event
        .data
        .iter()
        .filter(|(key, _)| !matches!(key.as_str(), "acquiredAt"))
        .map(|(key, value)| match value {
            Value::String(s) => format!("{key}={s}"),
            other => format!("{key}={other}"),
        })
        .collect();
    let details = if details.is_empty() {
        String::new()
    } else {
        format!(" ({})", details.join(", "))
    };
    format!(
        "#{} {clock} {} {}{by}{details}",
        event.seq, event.type_, event.subject
    )
}
