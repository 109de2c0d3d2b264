//! `events.poll`: read the log, and wait on the [`super::waiting::EventBell`] when it has
//! nothing yet.

use std::time::Duration;

use super::services::App;
use super::waiting::parked;
use crate::coord::events::{EventKind, PolledEvents};
use crate::protocol::server::EventsMethods;
use crate::protocol::{EventRecord, EventsPollParams, EventsPollResult, ProtocolError};

impl EventsMethods for App {
    async fn events_poll(
        &self,
        params: EventsPollParams,
    ) -> Result<EventsPollResult, ProtocolError> {
        // The decoder has checked every value against the spec's schema (types are its enum).
        let kinds: Option<Vec<EventKind>> = (!params.types.is_empty()).then(|| {
            params
                .types
                .iter()
                .filter_map(|t| EventKind::parse(&t.to_string()))
                .collect()
        });
        let wait = Duration::from_millis(u64::try_from(params.wait_ms.unwrap_or(0)).unwrap_or(0));
        // Subscribe before reading, so that an event committed in between still wakes us.
        let mut bell = self.bell().subscribe();
        let since = match params.since {
            Some(since) => since,
            None => self.now(|coord| coord.newest_event_seq())?,
        };
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            bell.borrow_and_update();
            let polled =
                self.now(|coord| coord.poll_events(since, params.limit, kinds.as_deref()))?;
            let closing = bell.borrow().closing;
            if !polled.events.is_empty() || wait.is_zero() || closing {
                return Ok(poll_result(polled));
            }
            match parked(tokio::time::timeout_at(deadline, bell.changed())).await {
                Ok(Ok(())) => continue,
                // Time is up, or the bell is gone with the daemon: answer what there is.
                Ok(Err(_)) | Err(_) => {
                    let polled =
                        self.now(|coord| coord.poll_events(since, params.limit, kinds.as_deref()))?;
                    return Ok(poll_result(polled));
                }
            }
        }
    }
}

fn poll_result(polled: PolledEvents) -> EventsPollResult {
    EventsPollResult {
        events: polled
            .events
            .into_iter()
            .filter_map(|event| {
                let data = match serde_json::from_str(&event.data) {
                    Ok(serde_json::Value::Object(map)) => map,
                    _ => serde_json::Map::new(),
                };
                let kind = serde_json::from_value(serde_json::Value::String(event.kind)).ok()?;
                Some(EventRecord {
                    seq: event.seq,
                    at: event.at_ms,
                    type_: kind,
                    session_id: event.session_id,
                    subject: event.subject,
                    data,
                })
            })
            .collect(),
        next: polled.next,
        gap: polled.gap,
    }
}
