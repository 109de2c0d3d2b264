//! The LISTEN thread: one dedicated connection that hears the commits of every daemon on the
//! project (`NOTIFY` is delivered on commit only, so a notification never announces a change
//! that could still roll back) and tells this store's `CommitListener`:
//!
//! - `e:<seq>` → `CommitListener::events_committed` (wakes `events.poll` and lock waits);
//! - `g:<daemon id>` → `CommitListener::waiters_granted`, only when the id is this daemon's.
//!
//! Nothing polls a table. When the connection breaks the thread reconnects with backoff
//! (100 ms doubling to 2 s) and then reports the newest `seq` and a possible grant once,
//! since notifications sent meanwhile are lost. The thread ends soon after the store is
//! dropped (it checks a flag between waits of at most [`WAIT_SLICE`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;

use super::pool::Connector;
use crate::store::ListenerSlot;

/// The longest the thread waits for a notification before looking at its stop flag.
const WAIT_SLICE: Duration = Duration::from_millis(250);

/// The first reconnection delay; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(100);

/// The longest reconnection delay.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// What the thread needs to know.
pub(super) struct ListenSpec {
    /// Opens its connection.
    pub(super) connector: Connector,
    /// The project's notification channel.
    pub(super) channel: String,
    /// The project (to read the newest `seq` after a reconnection).
    pub(super) project: String,
    /// This daemon's id.
    pub(super) daemon_id: String,
    /// Whom to tell.
    pub(super) listener: ListenerSlot,
}

/// The running thread; dropping it asks the thread to stop.
pub(super) struct ListenThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl ListenThread {
    /// Starts listening with the connection `first` (already open, so a store that opened
    /// is listening from the start).
    pub(super) fn start(spec: ListenSpec, first: Client) -> std::io::Result<ListenThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("wit-pg-listen".into())
            .spawn(move || run(&spec, first, &flag))?;
        Ok(ListenThread {
            stop,
            handle: Some(handle),
        })
    }

    /// Whether the thread is still running (for tests).
    #[cfg(test)]
    pub(super) fn is_running(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| !h.is_finished())
    }
}

impl Drop for ListenThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Not joined: the thread notices the flag within a wait slice (or a backoff) and
        // closes its connection itself; a store dropped on an async worker must not block.
        drop(self.handle.take());
    }
}

/// Why a listening session ended.
enum Ended {
    /// The store is gone.
    Stopped,
    /// The connection broke.
    Broken,
}

fn run(spec: &ListenSpec, first: Client, stop: &AtomicBool) {
    let mut client = Some(first);
    let mut backoff = MIN_BACKOFF;
    let mut reconnected = false;
    while !stop.load(Ordering::Relaxed) {
        let mut conn = match client.take() {
            Some(conn) => conn,
            None => match spec.connector.connect() {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::debug!(error = %e, "store listener cannot reconnect yet");
                    sleep_unless_stopped(backoff, stop);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            },
        };
        if let Err(e) = conn.batch_execute(&format!("LISTEN {}", spec.channel)) {
            tracing::debug!(error = %spec.connector.name.scrub(&e.to_string()), "LISTEN failed");
            sleep_unless_stopped(backoff, stop);
            backoff = (backoff * 2).min(MAX_BACKOFF);
            continue;
        }
        if reconnected {
            catch_up(spec, &mut conn);
        }
        backoff = MIN_BACKOFF;
        match listen(spec, &mut conn, stop) {
            Ended::Stopped => return,
            Ended::Broken => {
                tracing::warn!(store = %spec.connector.name.shown, "store listener lost its connection; reconnecting");
                reconnected = true;
            }
        }
    }
}

/// Waits for notifications until the connection breaks or the store is dropped.
fn listen(spec: &ListenSpec, conn: &mut Client, stop: &AtomicBool) -> Ended {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ended::Stopped;
        }
        let mut notifications = conn.notifications();
        let mut iter = notifications.timeout_iter(WAIT_SLICE);
        'slice: loop {
            match iter.next() {
                Ok(Some(n)) => {
                    dispatch(spec, n.payload());
                    if stop.load(Ordering::Relaxed) {
                        return Ended::Stopped;
                    }
                }
                Ok(None) => break 'slice,
                Err(_) => return Ended::Broken,
            }
        }
        drop(iter);
        drop(notifications);
        if conn.is_closed() {
            return Ended::Broken;
        }
    }
}

/// Tells the listener what one notification announces.
fn dispatch(spec: &ListenSpec, payload: &str) {
    let Some(listener) = spec.listener.get() else {
        return;
    };
    if let Some(seq) = payload.strip_prefix("e:") {
        if let Ok(seq) = seq.parse() {
            listener.events_committed(seq);
        }
    } else if let Some(daemon) = payload.strip_prefix("g:") {
        if daemon == spec.daemon_id {
            listener.waiters_granted();
        }
    }
}

/// After a reconnection: the notifications sent while the connection was down are lost, so
/// report the newest `seq` and a possible grant once.
fn catch_up(spec: &ListenSpec, conn: &mut Client) {
    let Some(listener) = spec.listener.get() else {
        return;
    };
    let newest = conn
        .query_opt(
            "SELECT next_seq - 1 FROM wit_projects WHERE project = $1",
            &[&spec.project],
        )
        .ok()
        .flatten()
        .and_then(|row| row.try_get::<_, i64>(0).ok());
    if let Some(newest) = newest {
        listener.events_committed(newest);
    }
    listener.waiters_granted();
}

fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let mut left = total;
    while !left.is_zero() && !stop.load(Ordering::Relaxed) {
        let step = left.min(Duration::from_millis(50));
        std::thread::sleep(step);
        left -= step;
    }
}
