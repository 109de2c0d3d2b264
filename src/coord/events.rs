//! Events (docs/protocol.md 9): their kinds, the payloads each change appends, reading the log
//! and its retention. Every change appends its events with [`EventsWrite::append_event`](crate::store::EventsWrite::append_event) in its
//! own transaction; this module only names them and reads them back.

use serde_json::{json, Value};

use super::{iso_millis, Coord, CoordError, Result};
use crate::store::{Event, NewEvent, Writer};

/// Events of the last 7 days are kept...
pub const EVENT_RETENTION_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// ...and at least this many of the newest, whatever their age.
pub const EVENTS_KEPT_AT_LEAST: i64 = 10_000;
/// Most events one `events.poll` returns.
pub const MAX_POLL_LIMIT: usize = 1000;
/// Events one `events.poll` returns by default.
pub const DEFAULT_POLL_LIMIT: usize = 100;

/// The kinds of event, with the protocol's spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// `register`.
    SessionRegistered,
    /// `session.end`.
    SessionEnded,
    /// The reaper found the session dead.
    SessionReaped,
    /// A new acquisition (also a hand-over to a waiter).
    LockAcquired,
    /// The holder acquired again.
    LockRefreshed,
    /// Released by its holder, its session's end or reap.
    LockReleased,
    /// Its TTL ran out (appended when the daemon removes or replaces it).
    LockExpired,
    /// `intent.declared` (also an observed edit).
    IntentDeclared,
    /// A status change.
    IntentUpdated,
    /// `contract.propose`.
    ContractProposed,
    /// `contract.respond`.
    ContractResponded,
}

impl EventKind {
    /// Every kind, in the protocol's order.
    pub const ALL: [EventKind; 11] = [
        EventKind::SessionRegistered,
        EventKind::SessionEnded,
        EventKind::SessionReaped,
        EventKind::LockAcquired,
        EventKind::LockRefreshed,
        EventKind::LockReleased,
        EventKind::LockExpired,
        EventKind::IntentDeclared,
        EventKind::IntentUpdated,
        EventKind::ContractProposed,
        EventKind::ContractResponded,
    ];

    /// The protocol's spelling (`lock.acquired`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::SessionRegistered => "session.registered",
            EventKind::SessionEnded => "session.ended",
            EventKind::SessionReaped => "session.reaped",
            EventKind::LockAcquired => "lock.acquired",
            EventKind::LockRefreshed => "lock.refreshed",
            EventKind::LockReleased => "lock.released",
            EventKind::LockExpired => "lock.expired",
            EventKind::IntentDeclared => "intent.declared",
            EventKind::IntentUpdated => "intent.updated",
            EventKind::ContractProposed => "contract.proposed",
            EventKind::ContractResponded => "contract.responded",
        }
    }

    /// The kind spelled `name`.
    pub fn parse(name: &str) -> Option<EventKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// Appends one event of `kind` at `now`; its `seq`.
pub(crate) fn append(
    w: &Writer<'_>,
    now: i64,
    kind: EventKind,
    session_id: Option<&str>,
    subject: &str,
    data: Value,
) -> Result<i64> {
    Ok(w.append_event(
        now,
        &NewEvent {
            kind: kind.as_str(),
            session_id,
            subject,
            data,
        },
    )?)
}

/// The `data` of a lock event: its times and token, plus `extra` fields.
pub(crate) fn lock_data(lock: &crate::store::Lock, extra: Value) -> Value {
    let mut data = json!({
        "acquiredAt": iso_millis(lock.acquired_at_ms),
        "expiresAt": iso_millis(lock.expires_at_ms),
        "token": lock.token,
    });
    if let (Some(map), Value::Object(more)) = (data.as_object_mut(), extra) {
        map.extend(more);
    }
    data
}

/// One answer of [`Coord::poll_events`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolledEvents {
    /// The events, oldest first.
    pub events: Vec<Event>,
    /// The `since` to pass next time.
    pub next: i64,
    /// Whether events after `since` were already dropped by retention.
    pub gap: bool,
}

impl Coord {
    /// The newest event's `seq` (0 when there is none): where a poll without `since` starts.
    pub fn newest_event_seq(&self) -> Result<i64> {
        Ok(self.store.read(|r| r.newest_event_seq())?)
    }

    /// Up to `limit` events after `since`, of `kinds` when given (docs/protocol.md 9.2).
    pub fn poll_events(
        &self,
        since: i64,
        limit: Option<i64>,
        kinds: Option<&[EventKind]>,
    ) -> Result<PolledEvents> {
        if since < 0 {
            return Err(CoordError::invalid("since", "must be at least 0"));
        }
        let limit = match limit {
            None => DEFAULT_POLL_LIMIT,
            Some(n) => usize::try_from(n)
                .ok()
                .filter(|n| (1..=MAX_POLL_LIMIT).contains(n))
                .ok_or_else(|| {
                    CoordError::invalid("limit", format!("must be from 1 to {MAX_POLL_LIMIT}"))
                })?,
        };
        let names: Option<Vec<&str>> = kinds.map(|k| k.iter().map(|k| k.as_str()).collect());
        let page = self
            .store
            .read(|r| r.events_after(since, limit, names.as_deref()))?;
        // Events after `since` were dropped when the oldest kept one is past `since + 1`
        // (written without `since + 1`, which overflows for `since = i64::MAX`).
        let gap = page.oldest_seq.is_some_and(|oldest| since < oldest - 1);
        let next = match page.events.last() {
            Some(last) if page.events.len() == limit => last.seq,
            _ => since.max(page.newest_seq),
        };
        Ok(PolledEvents {
            events: page.events,
            next,
            gap,
        })
    }

    /// Drops events that are older than [`EVENT_RETENTION_MS`] and not among the newest
    /// [`EVENTS_KEPT_AT_LEAST`], and sessions idle as long that nothing refers to any more;
    /// how many events.
    pub fn prune_events(&self) -> Result<usize> {
        let (sessions, events) = self.store.write(|w| {
            let now = self.clock.now_ms();
            let sessions = w.prune_sessions(now - EVENT_RETENTION_MS)?;
            let events = w.prune_events(now - EVENT_RETENTION_MS, EVENTS_KEPT_AT_LEAST)?;
            Ok::<_, CoordError>((sessions, events))
        })?;
        if sessions > 0 {
            // A forgotten row must be written again on its session's next call.
            self.forget_open_rows();
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::coord::testing::Harness;

    #[test]
    fn every_change_appends_its_event_and_seq_grows_by_one() {
        let h = Harness::new();
        h.coord.register("a", "s1").unwrap();
        let lock = h.coord.acquire_lock("a.ts:f", "s1", Some(1000)).unwrap();
        h.coord.acquire_lock("a.ts:f", "s1", Some(2000)).unwrap();
        h.coord.release_lock("a.ts:f", "s1").unwrap();
        h.coord.acquire_lock("a.ts:g", "s1", Some(10)).unwrap();
        h.clock.advance(20);
        h.coord.acquire_lock("a.ts:g", "s2", Some(10)).unwrap();
        let polled = h.coord.poll_events(0, None, None).unwrap();
        let seqs: Vec<i64> = polled.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=7).collect::<Vec<_>>());
        let kinds: Vec<&str> = polled.events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "session.registered",
                "lock.acquired",
                "lock.refreshed",
                "lock.released",
                "lock.acquired",
                "lock.expired",
                "lock.acquired"
            ]
        );
        // The fencing token is the seq of the acquisition's event, kept by a refresh.
        assert_eq!(lock.lock.token, 2);
        let data: serde_json::Value = serde_json::from_str(&polled.events[2].data).unwrap();
        assert_eq!(data["token"], 2);
        assert_eq!(polled.next, 7);
        assert!(!polled.gap);
    }

    #[test]
    fn limit_types_next_and_gap() {
        let h = Harness::new();
        for i in 0..10 {
            h.coord
                .acquire_lock(&format!("a.ts:f{i}"), "s1", None)
                .unwrap();
        }
        h.coord.release_lock("a.ts:f0", "s1").unwrap();
        let page = h.coord.poll_events(0, Some(4), None).unwrap();
        assert_eq!(page.events.len(), 4);
        assert_eq!(page.next, 4);
        let page = h.coord.poll_events(4, Some(100), None).unwrap();
        assert_eq!(page.events.len(), 7);
        assert_eq!(page.next, 11);
        let released = h
            .coord
            .poll_events(0, None, Some(&[EventKind::LockReleased]))
            .unwrap();
        assert_eq!(released.events.len(), 1);
        assert_eq!(
            released.next, 11,
            "filtered-out events are skipped for good"
        );
        assert!(h
            .coord
            .poll_events(11, None, None)
            .unwrap()
            .events
            .is_empty());
        assert!(matches!(
            h.coord.poll_events(0, Some(0), None),
            Err(CoordError::InvalidInput { field: "limit", .. })
        ));

        // Retention: keep the newest N whatever their age, and everything of the last 7 days.
        h.clock.advance(EVENT_RETENTION_MS + 1);
        let pruned = h
            .coord
            .store()
            .write(|w| w.prune_events(h.coord.now_ms() - EVENT_RETENTION_MS, 3))
            .unwrap();
        assert_eq!(pruned, 8);
        let page = h.coord.poll_events(2, None, None).unwrap();
        assert!(page.gap);
        assert_eq!(page.events[0].seq, 9, "starts at the oldest kept");
        assert!(!h.coord.poll_events(8, None, None).unwrap().gap);
        // Nothing newer than 7 days is pruned.
        h.coord.acquire_lock("b.ts:f", "s1", None).unwrap();
        assert_eq!(h.coord.prune_events().unwrap(), 0);
    }
}
