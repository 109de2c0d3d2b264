//! The live side: one task follows `events.poll` and fans each batch out to every open page;
//! another re-reads the sections after changes (coalesced, at most one read in flight and one
//! per [`MIN_REFRESH`]); both survive the daemon going away and coming back.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::{broadcast, watch, Notify};

use super::snapshot::{self, Sections};
use crate::doorway::Doorway;

/// How long one `events.poll` waits for news.
const POLL_WAIT_MS: i64 = 20_000;
/// The most events one poll returns.
const POLL_LIMIT: i64 = 1000;
/// How many of the newest events a page gets when it opens.
const RECENT: usize = 500;
/// The shortest time between two reads of the sections (100 events a second cost at most
/// this many reads, not one each).
const MIN_REFRESH: Duration = Duration::from_millis(150);
/// Sections are read again at least this often (liveness and last signs of life change
/// without events).
const IDLE_REFRESH: Duration = Duration::from_secs(3);
/// Wait between attempts while the daemon does not answer.
const RETRY: Duration = Duration::from_millis(500);

/// What the open pages share: the sections, the event stream and the recent events.
#[derive(Debug)]
pub struct Hub {
    sections: watch::Sender<Arc<Sections>>,
    frames: broadcast::Sender<Arc<str>>,
    recent: Mutex<VecDeque<Value>>,
    daemon_up: watch::Sender<bool>,
    dirty: Notify,
}

/// One Server-Sent Events frame.
pub fn frame(event: &str, data: &str) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

impl Hub {
    /// An empty hub (the first sections arrive with the first read).
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            sections: watch::channel(Arc::new(Vec::new())).0,
            frames: broadcast::channel(1024).0,
            recent: Mutex::new(VecDeque::with_capacity(RECENT)),
            daemon_up: watch::channel(true).0,
            dirty: Notify::new(),
        })
    }

    /// The sections now, and a receiver told of every change.
    pub fn sections(&self) -> watch::Receiver<Arc<Sections>> {
        self.sections.subscribe()
    }

    /// Frames from now on (events, gaps, daemon status).
    pub fn frames(&self) -> broadcast::Receiver<Arc<str>> {
        self.frames.subscribe()
    }

    /// The newest events kept for a page that opens now, oldest first.
    pub fn recent(&self) -> Vec<Value> {
        self.recent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// The daemon's status frame as it stands.
    pub fn status_frame(&self) -> String {
        status_frame(*self.daemon_up.borrow())
    }

    /// Asks for a fresh read of the sections (after an action, say).
    pub fn refresh_soon(&self) {
        self.dirty.notify_one();
    }

    fn set_daemon_up(&self, up: bool) {
        if self
            .daemon_up
            .send_if_modified(|now| std::mem::replace(now, up) != up)
        {
            let _ = self.frames.send(Arc::from(status_frame(up)));
        }
    }

    fn publish_events(&self, events: Value) {
        let text = events.to_string();
        let _ = self.frames.send(Arc::from(frame("events", &text)));
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Value::Array(events) = events {
            for event in events {
                if recent.len() == RECENT {
                    recent.pop_front();
                }
                recent.push_back(event);
            }
        }
    }

    fn publish_gap(&self, since: i64, reason: &str) {
        let data = json!({"since": since, "reason": reason}).to_string();
        let _ = self.frames.send(Arc::from(frame("gap", &data)));
    }
}

fn status_frame(up: bool) -> String {
    frame(
        "status",
        &json!({"daemon": if up {"up"} else {"down"}}).to_string(),
    )
}

/// Follows `events.poll` for as long as the server runs, never starting the daemon (a person
/// who stops it should see it stopped); after an outage it resumes from where it was and
/// reports a gap when events were lost (retention, or a store that started afresh).
pub async fn follow_events(hub: Arc<Hub>, daemon: Doorway) {
    let limit = Duration::from_millis(POLL_WAIT_MS as u64 + 5_000);
    let newest = |daemon: Doorway| async move {
        daemon
            .call_if_running(limit, |client| async move {
                client.call_raw("events.poll", json!({})).await
            })
            .await
            .ok()
            .and_then(|page| page["next"].as_i64())
    };
    let mut since = loop {
        if let Some(next) = newest(daemon.clone()).await {
            break (next - RECENT as i64).max(0);
        }
        hub.set_daemon_up(false);
        tokio::time::sleep(RETRY).await;
    };
    let mut was_down = false;
    loop {
        let params = json!({"since": since, "waitMs": POLL_WAIT_MS, "limit": POLL_LIMIT});
        let poll = daemon.call_if_running(limit, |client| async move {
            client.call_raw("events.poll", params).await
        });
        match poll.await {
            Ok(mut page) => {
                hub.set_daemon_up(true);
                if was_down {
                    was_down = false;
                    hub.refresh_soon();
                    if newest(daemon.clone())
                        .await
                        .is_some_and(|next| next < since)
                    {
                        hub.publish_gap(since, "the daemon's store starts afresh");
                        since = 0;
                        continue;
                    }
                }
                if page["gap"] == true {
                    hub.publish_gap(since, "older events were dropped (retention)");
                }
                since = page["next"].as_i64().unwrap_or(since);
                let events = page["events"].take();
                if events.as_array().is_some_and(|events| !events.is_empty()) {
                    hub.publish_events(events);
                    hub.refresh_soon();
                }
            }
            Err(_) => {
                was_down = true;
                hub.set_daemon_up(false);
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// Re-reads the sections whenever [`Hub::refresh_soon`] was called, and every
/// [`IDLE_REFRESH`] anyway; publishes only what changed.
pub async fn refresh_sections(hub: Arc<Hub>, daemon: Doorway, root: PathBuf) {
    loop {
        let started = Instant::now();
        match snapshot::take(&daemon, &root).await {
            Ok(sections) => {
                hub.set_daemon_up(true);
                hub.sections.send_if_modified(|now| {
                    let changed = **now != sections;
                    if changed {
                        *now = Arc::new(sections);
                    }
                    changed
                });
            }
            Err(_) => hub.set_daemon_up(false),
        }
        tokio::time::sleep(MIN_REFRESH.saturating_sub(started.elapsed())).await;
        let _ = tokio::time::timeout(IDLE_REFRESH, hub.dirty.notified()).await;
    }
}
