//! The daemons serving one state and the hosts they run on (docs/protocol.md 12.3).
//!
//! Every daemon records itself with its host and beats once a second (from the pulse). A
//! session registered with a pid belongs to the host of the daemon that registered it: only a
//! daemon of that host can look the pid up. A host none of whose daemons has beaten for
//! [`HOST_SILENCE_MS`] counts as dead for those sessions, and the other daemons reap them. A
//! daemon silent that long is also dropped from the table together with its waiting lock
//! requests (their connections went with it).

use std::collections::HashSet;
use std::sync::{MutexGuard, PoisonError};

use super::locks::Handover;
use super::waits::{Grant, LocalWaiters};
use super::{Coord, Result};
use crate::store::{DaemonBeat, Writer};

/// How long a host's daemons may stay silent before its pid-based sessions count as dead.
pub const HOST_SILENCE_MS: i64 = 30_000;

/// The hosts with a daemon that beat within [`HOST_SILENCE_MS`], as of the last beat.
#[derive(Debug, Default)]
pub(crate) struct LiveHosts {
    hosts: HashSet<String>,
}

impl Coord {
    fn live_hosts(&self) -> MutexGuard<'_, LiveHosts> {
        self.live_hosts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// This daemon's id in the store (new at every start).
    pub fn store_daemon_id(&self) -> &str {
        self.store.daemon_id()
    }

    /// The host this daemon runs on.
    pub fn host_id(&self) -> &str {
        &self.host_id
    }

    /// Records this daemon at start. With the embedded store only one daemon ever serves the
    /// state, so every other daemon row (and its waiting requests) is a leftover of an
    /// earlier run and goes at once. With a shared store, other daemons' rows keep the
    /// [`HOST_SILENCE_MS`] rule, but `previous`, this daemon's own previous incarnation (on
    /// this root, which only one daemon at a time serves), is known dead: its waiting
    /// requests died with it and go at once, locks already handed to them to the next
    /// waiter (issue 20 item 2: otherwise each dead waiter in turn got the lock for 30 s).
    pub fn join(&self, previous: Option<&str>) -> Result<()> {
        let shared = self.store.is_shared();
        let own = self.store.daemon_id();
        let mut waits = self.waits();
        let mut handovers = Vec::new();
        let live = self.store.write(|w| {
            let now = self.clock.now_ms();
            let cutoff = if shared {
                now - HOST_SILENCE_MS
            } else {
                i64::MAX
            };
            // This daemon's id is new, so none of the rows dropped here is its own.
            let mut gone = w.delete_stale_daemons(cutoff)?;
            if let Some(previous) = previous.filter(|p| *p != own && !gone.iter().any(|g| g == p)) {
                w.delete_daemon(previous)?;
                gone.push(previous.to_owned());
            }
            for daemon in &gone {
                handovers.extend(self.drop_daemon_waiters(w, &mut waits, daemon, now)?);
            }
            w.beat_daemon(&self.beat(now))?;
            Ok::<_, super::CoordError>(w.live_hosts(now - HOST_SILENCE_MS)?)
        })?;
        self.deliver_all(&mut waits, handovers);
        drop(waits);
        self.set_live_hosts(live);
        Ok(())
    }

    /// Drops the waiting requests of the dead daemon `daemon`; locks already granted to them
    /// never reached them and go to the next waiter. The hand-overs to deliver.
    fn drop_daemon_waiters(
        &self,
        w: &Writer<'_>,
        waits: &mut LocalWaiters,
        daemon: &str,
        now: i64,
    ) -> Result<Vec<Handover>> {
        let mut handovers = Vec::new();
        for row in w.granted_waiters(daemon)? {
            if let Some(granted) = row.granted.as_deref().and_then(Grant::decode) {
                if let Some(h) = self.give_back_in(w, waits, &granted.lock, now)? {
                    handovers.push(h);
                }
            }
        }
        w.delete_daemon_waiters(daemon)?;
        Ok(handovers)
    }

    /// The daemon's heartbeat (once a second with a shared store; the embedded store has one
    /// daemon and skips it): moves its own beat forward, drops daemons silent for
    /// [`HOST_SILENCE_MS`] with their waiting requests, and refreshes which hosts are live.
    /// The ids of the dropped daemons.
    pub fn beat_daemon(&self) -> Result<Vec<String>> {
        if !self.store.is_shared() {
            // The only daemon of its state (`join` cleared the others): nobody reads its beat.
            return Ok(Vec::new());
        }
        let mut waits = self.waits();
        let mut handovers = Vec::new();
        let (gone, live) = self.store.write(|w| {
            let now = self.clock.now_ms();
            w.beat_daemon(&self.beat(now))?;
            let gone = w.delete_stale_daemons(now - HOST_SILENCE_MS)?;
            for daemon in &gone {
                handovers.extend(self.drop_daemon_waiters(w, &mut waits, daemon, now)?);
            }
            Ok::<_, super::CoordError>((gone, w.live_hosts(now - HOST_SILENCE_MS)?))
        })?;
        self.deliver_all(&mut waits, handovers);
        drop(waits);
        self.set_live_hosts(live);
        Ok(gone)
    }

    /// The daemon stops: its waiting requests leave the shared queue (they were answered).
    /// Its row stays and ages out, so that the pid-based sessions of its host are not
    /// reaped before [`HOST_SILENCE_MS`] (a restart is not a death).
    pub fn leave(&self) -> Result<()> {
        self.store
            .write(|w| w.delete_daemon_waiters(self.store.daemon_id()))?;
        Ok(())
    }

    /// Replaces the set of hosts with a live daemon.
    pub(crate) fn set_live_hosts(&self, hosts: Vec<String>) {
        self.live_hosts().hosts = hosts.into_iter().collect();
    }

    /// Whether `host` has a live daemon (this daemon's own host always has).
    pub(crate) fn host_is_live(&self, host: &str) -> bool {
        host == self.host_id || self.live_hosts().hosts.contains(host)
    }

    fn beat(&self, now: i64) -> DaemonBeat<'_> {
        DaemonBeat {
            daemon_id: self.store.daemon_id(),
            host_id: &self.host_id,
            pid: i64::from(std::process::id()),
            started_at_ms: self.started_at_ms,
            now_ms: now,
        }
    }
}
