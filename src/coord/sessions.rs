//! Sessions with a pulse (docs/protocol.md 7): signs of life, liveness by pid or lease, the
//! reap (or clean `session.end`) that releases a dead session's locks and abandons its
//! intents, and `session.list`.
//!
//! Sightings are kept in memory and flushed to the `sessions` table about once a second by
//! [`Coord::flush_sightings`], so a call pays no extra write for being a sign of life; only a
//! session's first call since the daemon started (or since it ended) writes its row at once.

use std::collections::{HashMap, HashSet};

use serde_json::json;

use super::events::{self, EventKind};
use super::{check_session, Coord, CoordError, Result};
use crate::platform::process::{Liveness, Lookup, START_UNKNOWN};
use crate::store::{IntentFilter, IntentStatus, SessionRow, SessionSummary, Writer};

/// Shortest lease accepted.
pub const MIN_LEASE_MS: i64 = 1000;
/// Longest lease accepted: one day.
pub const MAX_LEASE_MS: i64 = 86_400_000;

/// Signs of life seen since the last flush, and the sessions whose row is known to exist and
/// be open (so touching them needs no write).
#[derive(Debug, Default)]
pub struct Sightings {
    /// Last sighting per session, and whether it is newer than the flushed one.
    last_seen: HashMap<String, (i64, bool)>,
    open_rows: HashSet<String>,
    /// The worktree each session was last recorded acting from.
    worktrees: HashMap<String, String>,
}

impl Sightings {
    /// Records a sighting at `now`; allocates only for a session not seen before.
    fn saw(&mut self, session_id: &str, now: i64) {
        match self.last_seen.get_mut(session_id) {
            Some(seen) => *seen = (now.max(seen.0), true),
            None => {
                self.last_seen.insert(session_id.to_owned(), (now, true));
            }
        }
    }
}

/// Why a session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// `session.end`.
    Ended,
    /// Its process exited (or its pid now belongs to another process).
    ProcessExited,
    /// It made no call for longer than its lease.
    LeaseLapsed,
    /// Its pid lives on a host whose daemons all went silent (docs/protocol.md 12.3).
    HostSilent,
}

impl EndReason {
    fn event(self) -> EventKind {
        match self {
            EndReason::Ended => EventKind::SessionEnded,
            _ => EventKind::SessionReaped,
        }
    }

    /// How the reason is spelled in event data and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Ended => "ended",
            EndReason::ProcessExited => "process exited",
            EndReason::LeaseLapsed => "lease lapsed",
            EndReason::HostSilent => "host silent",
        }
    }
}

/// What ending a session did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndedSession {
    /// Locks released.
    pub locks_released: i64,
    /// Intents abandoned.
    pub intents_abandoned: i64,
}

/// A reaped session, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReapedSession {
    /// Its id.
    pub session_id: String,
    /// Why.
    pub reason: EndReason,
    /// What was released.
    pub ended: EndedSession,
}

/// What one `register` records about its session.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Registration<'a> {
    /// The session.
    pub session_id: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its agent id.
    pub agent_id: i64,
    /// Its pid with the process start time.
    pub pid: Option<(i64, i64)>,
    /// Its lease.
    pub lease_ms: Option<i64>,
}

/// `session.heartbeat`'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    /// When the lease lapses without another call (unix ms), if the session has one.
    pub lease_expires_at_ms: Option<i64>,
}

/// One row of `session.list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// What the store knows.
    pub summary: SessionSummary,
    /// Whether it is live now.
    pub live: bool,
    /// Whether it is live while its process's liveness cannot be told (see
    /// [`Coord::pid_unknown`]).
    pub pid_unknown: bool,
}

/// The session row a summary was read from.
fn row_of(summary: &SessionSummary) -> SessionRow {
    SessionRow {
        session_id: summary.session_id.clone(),
        pid: summary.pid,
        pid_start: summary.pid_start,
        lease_ms: summary.lease_ms,
        first_seen_ms: summary.first_seen_ms,
        last_seen_ms: summary.last_seen_ms,
        ended_at_ms: summary.ended_at_ms,
        host_id: summary.host_id.clone(),
        worktree: summary.worktree.clone(),
    }
}

impl Coord {
    /// Validates the acting session of a request and counts the request as a sign of life.
    pub(crate) fn acting_session(&self, session_id: &str) -> Result<()> {
        self.acting(&self.vantage(Some(session_id))).map(|_| ())
    }

    /// Validates the acting session of the request seen from `at` (which must name one)
    /// and counts the request as a sign of life of it, acting from `at`'s worktree.
    pub(crate) fn acting<'v>(&self, at: &'v super::Vantage) -> Result<&'v str> {
        let session_id = at.session().unwrap_or_default();
        check_session("sessionId", session_id)?;
        self.check_storable("sessionId", session_id)?;
        self.touch(session_id, at.worktree())?;
        Ok(session_id)
    }

    /// Records a sign of life of `session_id` now, acting from the worktree at `worktree`.
    fn touch(&self, session_id: &str, worktree: Option<&str>) -> Result<()> {
        let now = self.clock.now_ms();
        // The sightings are read, then the store written without them held (no lock across a
        // store write), then noted: two first calls at once both write the row, which is
        // idempotent.
        let (open, known_root) = {
            let sightings = self.sightings();
            (
                sightings.open_rows.contains(session_id),
                sightings.worktrees.get(session_id).cloned(),
            )
        };
        let moved = worktree.filter(|root| known_root.as_deref() != Some(*root));
        if !open || moved.is_some() {
            self.store.write(|w| {
                if !open {
                    w.touch_session(session_id, now)?;
                }
                if let Some(root) = moved {
                    w.set_session_worktree(session_id, root)?;
                }
                Ok::<_, CoordError>(())
            })?;
        }
        let mut sightings = self.sightings();
        if !open {
            sightings.open_rows.insert(session_id.to_owned());
        }
        if let Some(root) = moved {
            sightings
                .worktrees
                .insert(session_id.to_owned(), root.to_owned());
        }
        sightings.saw(session_id, now);
        Ok(())
    }

    /// Makes the next call of every session write its row again (after pruning).
    pub(crate) fn forget_open_rows(&self) {
        let mut sightings = self.sightings();
        sightings.open_rows.clear();
        sightings.worktrees.clear();
    }

    /// Records a sign of life of a session whose row is open (memory only).
    pub(crate) fn saw(&self, session_id: &str) {
        let now = self.clock.now_ms();
        self.sightings().saw(session_id, now);
    }

    fn sightings(&self) -> std::sync::MutexGuard<'_, Sightings> {
        self.sightings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The last sign of life of a session: the newer of memory and `row`.
    fn last_seen(&self, session_id: &str, stored_ms: i64) -> i64 {
        self.sightings()
            .last_seen
            .get(session_id)
            .map_or(stored_ms, |seen| seen.0)
            .max(stored_ms)
    }

    /// Writes the sightings of the last second to the `sessions` table.
    pub fn flush_sightings(&self) -> Result<usize> {
        let pending: Vec<(String, i64)> = {
            let mut sightings = self.sightings();
            sightings
                .last_seen
                .iter_mut()
                .filter(|(_, seen)| seen.1)
                .map(|(session, seen)| {
                    seen.1 = false;
                    (session.clone(), seen.0)
                })
                .collect()
        };
        if pending.is_empty() {
            return Ok(0);
        }
        self.store.write(|w| {
            for (session, at) in &pending {
                w.record_last_seen(session, *at)?;
            }
            Ok(pending.len())
        })
    }

    /// Checks the pid of `register` and reads its process's start time.
    pub(crate) fn register_pid(&self, pid: Option<i64>) -> Result<Option<(i64, i64)>> {
        let Some(pid) = pid else { return Ok(None) };
        if pid < 1 {
            return Err(CoordError::invalid("pid", "must be at least 1"));
        }
        match self.processes.lookup(pid) {
            Lookup::Running(process) => Ok(Some((pid, process.start))),
            // The table cannot tell: the pid is kept, and only its absence ends the session
            // (until then it lives on its lease, or stays live).
            Lookup::Unknown => Ok(Some((pid, START_UNKNOWN))),
            Lookup::Gone => Err(CoordError::invalid(
                "pid",
                format!("no process with pid {pid} runs on the daemon's host"),
            )),
        }
    }

    /// Checks the lease of `register`.
    pub(crate) fn check_lease(lease_ms: Option<i64>) -> Result<()> {
        match lease_ms {
            Some(lease) if !(MIN_LEASE_MS..=MAX_LEASE_MS).contains(&lease) => {
                Err(CoordError::invalid(
                    "leaseMs",
                    format!("must be an integer from {MIN_LEASE_MS} to {MAX_LEASE_MS}"),
                ))
            }
            _ => Ok(()),
        }
    }

    /// `session.heartbeat`: a sign of life for a session the daemon knows.
    /// Unknown: [`CoordError::SessionNotFound`].
    pub fn heartbeat(&self, session_id: &str) -> Result<Heartbeat> {
        check_session("sessionId", session_id)?;
        self.check_storable("sessionId", session_id)?;
        // One read answers both questions: does the daemon know the session, and its lease.
        let (row, registered) = self.store.read(|r| {
            Ok::<_, CoordError>((r.session(session_id)?, r.agent(session_id)?.is_some()))
        })?;
        if row.is_none() && !registered {
            return Err(CoordError::SessionNotFound {
                session_id: session_id.to_owned(),
            });
        }
        self.touch(session_id, self.worktree_root.as_deref())?;
        let now = self.clock.now_ms();
        let lease = row.and_then(|s| s.lease_ms);
        Ok(Heartbeat {
            lease_expires_at_ms: lease.map(|lease| now.saturating_add(lease)),
        })
    }

    /// `session.end`: releases the session's locks and abandons its declared/active intents,
    /// as a reap does. Idempotent: an unknown or ended session gives zeros.
    pub fn end_session(&self, session_id: &str) -> Result<EndedSession> {
        check_session("sessionId", session_id)?;
        self.check_storable("sessionId", session_id)?;
        self.finish_session(session_id, EndReason::Ended)
    }

    /// Ends `session_id` for `reason` in one transaction: the session event, then one
    /// `lock.released` per lock (each handed to its first waiter, if any) and one
    /// `intent.updated` per abandoned intent. The session's own waiting requests are refused.
    fn finish_session(&self, session_id: &str, reason: EndReason) -> Result<EndedSession> {
        // Its tool-call windows close with it (15.2).
        self.close_windows_of(session_id);
        let mut waits = self.waits();
        // The session's own waiting requests leave first: none of its locks may be handed to it.
        let refused: Vec<_> = waits
            .ids_of_session(session_id)
            .into_iter()
            .filter_map(|id| waits.remove(id))
            .collect();
        let mut handovers = Vec::new();
        let ended = self.store.write(|w| {
            let now = self.clock.now_ms();
            if self.store.is_shared() {
                // Its requests on other daemons leave the shared queue too (those daemons'
                // waits then run out as LOCK_CONFLICT).
                for row in w.waiters()? {
                    if row.session_id == session_id {
                        w.delete_waiter(row.id)?;
                    }
                }
            } else {
                for waiter in &refused {
                    w.delete_waiter(waiter.id)?;
                }
            }
            let locks = w.live_locks(now, Some(session_id))?;
            let intents = w.intents(&IntentFilter {
                session_id: Some(session_id),
                ..IntentFilter::default()
            })?;
            let was_open = w.end_session(session_id, now)?;
            let ended = EndedSession {
                locks_released: super::to_i64(locks.len()),
                intents_abandoned: super::to_i64(intents.len()),
            };
            if !was_open && locks.is_empty() && intents.is_empty() {
                return Ok::<_, CoordError>(ended);
            }
            let mut data = json!({
                "locksReleased": ended.locks_released,
                "intentsAbandoned": ended.intents_abandoned,
            });
            if reason != EndReason::Ended {
                data["reason"] = json!(reason.as_str());
            }
            events::append(w, now, reason.event(), Some(session_id), session_id, data)?;
            for lock in &locks {
                w.delete_lock(&lock.symbol_path)?;
                events::append(
                    w,
                    now,
                    EventKind::LockReleased,
                    Some(session_id),
                    &lock.symbol_path,
                    events::lock_data(lock, json!({"reason": reason.as_str()})),
                )?;
                if let Some(handover) = self.hand_over(w, &mut waits, &lock.symbol_path, now)? {
                    handovers.push(handover);
                }
            }
            for intent in &intents {
                w.set_intent_status(&intent.id, IntentStatus::Abandoned, now)?;
                events::append(
                    w,
                    now,
                    EventKind::IntentUpdated,
                    Some(session_id),
                    &intent.id,
                    json!({
                        "from": intent.status.as_str(),
                        "to": IntentStatus::Abandoned.as_str(),
                        "reason": reason.as_str(),
                    }),
                )?;
            }
            Ok(ended)
        })?;
        self.deliver_all(&mut waits, handovers);
        drop(waits);
        self.refuse(refused);
        let mut sightings = self.sightings();
        sightings.open_rows.remove(session_id);
        Ok(ended)
    }

    /// The liveness of the process of a session row that lives on this daemon's host, or
    /// `None` when the row has no pid or lives on another host.
    fn local_liveness(&self, row: &SessionRow) -> Option<Liveness> {
        let (Some(pid), Some(start)) = (row.pid, row.pid_start) else {
            return None;
        };
        match row.host_id.as_deref() {
            // Rows from before hosts were recorded are this host's.
            Some(host) if host != self.host_id => None,
            _ => Some(self.processes.liveness(pid, start)),
        }
    }

    /// Whether a session with this stored pulse is dead now, and why. `waiting`: it has a
    /// request waiting for a lock, a sign of life for as long as it waits. A process whose
    /// liveness the table cannot tell is not dead: its lease decides, or it stays live.
    fn death(&self, row: &SessionRow, now: i64, waiting: bool) -> Option<EndReason> {
        if let (Some(_), Some(_), Some(host)) = (row.pid, row.pid_start, row.host_id.as_deref()) {
            if host != self.host_id && !self.host_is_live(host) {
                return Some(EndReason::HostSilent);
            }
        }
        if self.local_liveness(row) == Some(Liveness::Dead) {
            return Some(EndReason::ProcessExited);
        }
        if let Some(lease) = row.lease_ms {
            let last = self.last_seen(&row.session_id, row.last_seen_ms);
            if now > last.saturating_add(lease) && !waiting {
                return Some(EndReason::LeaseLapsed);
            }
        }
        None
    }

    /// Whether the session is live while the daemon cannot tell whether its process runs
    /// (the process table answers `Unknown` for its pid): it then lives on its lease, or
    /// until it ends.
    pub fn pid_unknown(&self, summary: &SessionSummary) -> bool {
        summary.ended_at_ms.is_none()
            && self.local_liveness(&row_of(summary)) == Some(Liveness::Unknown)
    }

    /// Whether the session of `row` is live now (docs/protocol.md 7.3), reaped or not yet.
    pub(crate) fn row_is_live(&self, row: &SessionRow) -> bool {
        if row.ended_at_ms.is_some() {
            return false;
        }
        let waiting = self.waits().has_session(&row.session_id);
        self.death(row, self.clock.now_ms(), waiting).is_none()
    }

    /// Reaps every session whose process exited or whose lease lapsed (docs/protocol.md 7.3).
    /// The daemon runs it about once a second.
    pub fn reap_dead_sessions(&self) -> Result<Vec<ReapedSession>> {
        let shared = self.store.is_shared();
        let (rows, queued) = self.store.read(|r| {
            let rows = r.sessions_with_pulse()?;
            // With a shared store a session may wait through another daemon, and the hosts
            // are read fresh: a daemon that started since the last beat counts.
            let queued = if shared && !rows.is_empty() {
                let since = self.clock.now_ms() - super::hosts::HOST_SILENCE_MS;
                self.set_live_hosts(r.live_hosts(since)?);
                r.waiters()?
            } else {
                Vec::new()
            };
            Ok::<_, CoordError>((rows, queued))
        })?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.clock.now_ms();
        let mut waiting: HashSet<String> = queued.into_iter().map(|q| q.session_id).collect();
        {
            let waits = self.waits();
            waiting.extend(
                rows.iter()
                    .filter(|r| waits.has_session(&r.session_id))
                    .map(|r| r.session_id.clone()),
            );
        }
        let mut reaped = Vec::new();
        for row in rows {
            if let Some(reason) = self.death(&row, now, waiting.contains(&row.session_id)) {
                let ended = self.finish_session(&row.session_id, reason)?;
                reaped.push(ReapedSession {
                    session_id: row.session_id,
                    reason,
                    ended,
                });
            }
        }
        Ok(reaped)
    }

    /// Whether the session is live in the sense of docs/protocol.md 7.3 (not ended, process
    /// running, lease not lapsed), whether or not the reaper has run yet.
    pub fn session_is_live(&self, summary: &SessionSummary) -> bool {
        self.row_is_live(&row_of(summary))
    }

    /// `session.list`: every session registered or holding a live lock or a declared/active
    /// intent (or seen at all), live ones first, then by first appearance.
    pub fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let now = self.clock.now_ms();
        let summaries = self.store.read(|r| r.session_summaries(now))?;
        let mut list: Vec<SessionInfo> = summaries
            .into_iter()
            .map(|mut summary| {
                summary.last_seen_ms = self.last_seen(&summary.session_id, summary.last_seen_ms);
                let live = self.session_is_live(&summary);
                let pid_unknown = live && self.pid_unknown(&summary);
                SessionInfo {
                    summary,
                    live,
                    pid_unknown,
                }
            })
            .collect();
        // Stable: first appearance is kept within the live and the dead.
        list.sort_by_key(|s| !s.live);
        Ok(list)
    }

    /// Records a registration's pulse and its event, inside `register`'s transaction.
    pub(crate) fn write_registration(
        &self,
        w: &Writer<'_>,
        registration: &Registration<'_>,
        now: i64,
    ) -> Result<()> {
        let session_id = registration.session_id;
        w.touch_session(session_id, now)?;
        w.set_session_pulse(
            session_id,
            registration.pid,
            &self.host_id,
            registration.lease_ms,
        )?;
        events::append(
            w,
            now,
            EventKind::SessionRegistered,
            Some(session_id),
            session_id,
            json!({
                "name": registration.name,
                "agentId": registration.agent_id,
                "pid": registration.pid.map(|p| p.0),
                "leaseMs": registration.lease_ms,
            }),
        )?;
        Ok(())
    }

    /// Marks a session's row as known to be open and seen now (after `register`).
    pub(crate) fn note_open(&self, session_id: &str, now: i64) {
        let mut sightings = self.sightings();
        sightings.open_rows.insert(session_id.to_owned());
        sightings.saw(session_id, now);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use crate::coord::events::EventKind;
    use crate::coord::testing::Harness;
    use crate::coord::{CoordError, IntentStatus};

    fn kinds(h: &Harness, since: i64) -> Vec<String> {
        let polled = h.coord.poll_events(since, Some(1000), None).unwrap();
        polled.events.into_iter().map(|e| e.kind).collect()
    }

    #[test]
    fn pid_must_exist_and_lease_must_be_in_range() {
        let h = Harness::new();
        let err = h
            .coord
            .register_with_pulse("a", "s1", Some(42), None)
            .unwrap_err();
        assert!(
            matches!(err, CoordError::InvalidInput { field: "pid", .. }),
            "{err:?}"
        );
        for lease in [999, 86_400_001] {
            let err = h
                .coord
                .register_with_pulse("a", "s1", None, Some(lease))
                .unwrap_err();
            assert!(matches!(
                err,
                CoordError::InvalidInput {
                    field: "leaseMs",
                    ..
                }
            ));
        }
        h.processes.start(42, 1000);
        assert!(h
            .coord
            .register_with_pulse("a", "s1", Some(42), Some(1000))
            .is_ok());
    }

    #[test]
    fn a_dead_pid_is_reaped_with_its_locks_and_intents() {
        let h = Harness::new();
        h.processes.start(42, 1000);
        h.coord
            .register_with_pulse("a", "s1", Some(42), None)
            .unwrap();
        h.coord.acquire_lock("a.ts:f", "s1", None).unwrap();
        h.coord.acquire_lock("a.ts:g", "s1", None).unwrap();
        let intent = h
            .coord
            .declare_intent(&h.coord.vantage(Some("s1")), "work", &["a.ts".into()], None)
            .unwrap();
        h.coord.acquire_lock("b.ts:f", "s2", None).unwrap();
        let before = h.coord.newest_event_seq().unwrap();
        assert!(
            h.coord.reap_dead_sessions().unwrap().is_empty(),
            "alive: not reaped"
        );

        h.processes.kill(42);
        let reaped = h.coord.reap_dead_sessions().unwrap();
        assert_eq!(reaped.len(), 1);
        assert_eq!(reaped[0].ended.locks_released, 2);
        assert_eq!(reaped[0].ended.intents_abandoned, 1);
        assert_eq!(
            kinds(&h, before),
            [
                "session.reaped",
                "lock.released",
                "lock.released",
                "intent.updated"
            ]
        );
        assert!(h.coord.query_locks(Some("s1")).unwrap().is_empty());
        assert_eq!(h.coord.query_locks(Some("s2")).unwrap().len(), 1);
        let stored = h
            .coord
            .store()
            .read(|r| r.intent(&intent.intent.id))
            .unwrap()
            .unwrap();
        assert_eq!(stored.status, IntentStatus::Abandoned);
        // Reaped once: nothing more to do.
        assert!(h.coord.reap_dead_sessions().unwrap().is_empty());
        let list = h.coord.list_sessions().unwrap();
        let s1 = list.iter().find(|s| s.summary.session_id == "s1").unwrap();
        assert!(!s1.live);
        // Live first.
        assert!(list[0].live);
    }

    /// A process table that cannot tell never reaps: the session lives on its lease, or
    /// stays live without one, and says so; once the table tells again, the dead are reaped.
    #[test]
    fn an_unknown_pid_is_never_taken_for_dead() {
        let h = Harness::new();
        h.processes.start(42, 1000);
        h.processes.start(43, 1000);
        h.coord
            .register_with_pulse("a", "s1", Some(42), None)
            .unwrap();
        h.coord
            .register_with_pulse("b", "s2", Some(43), Some(5000))
            .unwrap();
        h.processes.kill(42);
        h.processes.kill(43);
        h.processes.set_unknown(42, true);
        h.processes.set_unknown(43, true);
        h.clock.advance(4000);
        assert!(h.coord.reap_dead_sessions().unwrap().is_empty());
        let list = h.coord.list_sessions().unwrap();
        assert!(list.iter().all(|s| s.live && s.pid_unknown), "{list:?}");
        // The lease still ends the one that has one.
        h.clock.advance(2000);
        let reaped = h.coord.reap_dead_sessions().unwrap();
        assert_eq!(reaped.len(), 1);
        assert_eq!(reaped[0].session_id, "s2");
        assert_eq!(reaped[0].reason, super::EndReason::LeaseLapsed);
        // Without a lease it stays live for as long as the table cannot tell.
        h.clock.advance(3_600_000);
        assert!(h.coord.reap_dead_sessions().unwrap().is_empty());
        h.processes.set_unknown(42, false);
        let reaped = h.coord.reap_dead_sessions().unwrap();
        assert_eq!(reaped.len(), 1);
        assert_eq!(reaped[0].reason, super::EndReason::ProcessExited);
        assert!(h
            .coord
            .list_sessions()
            .unwrap()
            .iter()
            .all(|s| !s.pid_unknown));
    }

    /// Registering while the table cannot tell keeps the pid without a start stamp: the
    /// session is live while any process has that pid, and reaped once none has.
    #[test]
    fn a_pid_registered_while_unknown_ends_when_the_pid_is_gone() {
        let h = Harness::new();
        h.processes.set_unknown(42, true);
        h.coord
            .register_with_pulse("a", "s1", Some(42), None)
            .unwrap();
        let row = h.coord.store().read(|r| r.session("s1")).unwrap().unwrap();
        assert_eq!(
            (row.pid, row.pid_start),
            (Some(42), Some(crate::platform::process::START_UNKNOWN))
        );
        assert!(h.coord.reap_dead_sessions().unwrap().is_empty());
        h.processes.set_unknown(42, false);
        h.processes.start(42, 7);
        assert!(h.coord.reap_dead_sessions().unwrap().is_empty());
        assert!(h.coord.list_sessions().unwrap()[0].live);
        h.processes.kill(42);
        assert_eq!(h.coord.reap_dead_sessions().unwrap().len(), 1);
    }

    #[test]
    fn a_reused_pid_is_not_the_same_process() {
        let h = Harness::new();
        h.processes.start(42, 1000);
        h.coord
            .register_with_pulse("a", "s1", Some(42), None)
            .unwrap();
        h.coord.acquire_lock("a.ts:f", "s1", None).unwrap();
        // The process exits and another one gets its pid.
        h.processes.start(42, 2000);
        let reaped = h.coord.reap_dead_sessions().unwrap();
        assert_eq!(reaped.len(), 1);
        assert_eq!(reaped[0].reason.as_str(), "process exited");
    }

    #[test]
    fn leases_lapse_without_calls_and_any_call_renews_them() {
        let h = Harness::new();
        h.coord
            .register_with_pulse("a", "s1", None, Some(5000))
            .unwrap();
        h.coord.acquire_lock("a.ts:f", "s1", None).unwrap();
        h.clock.advance(4000);
        // A call naming the session is a sign of life...
        h.coord.acquire_lock("a.ts:g", "s1", None).unwrap();
        h.clock.advance(4000);
        assert!(h.coord.reap_dead_sessions().unwrap().is_empty());
        // ...a query about it is not.
        h.coord.query_locks(Some("s1")).unwrap();
        h.clock.advance(1001);
        let beat = h.coord.heartbeat("s1");
        assert!(beat.is_ok(), "heartbeat is a call: it renews");
        assert_eq!(
            beat.unwrap().lease_expires_at_ms,
            Some(h.coord.now_ms() + 5000)
        );
        h.clock.advance(5001);
        let reaped = h.coord.reap_dead_sessions().unwrap();
        assert_eq!(reaped.len(), 1);
        assert_eq!(reaped[0].reason.as_str(), "lease lapsed");
        assert_eq!(reaped[0].ended.locks_released, 2);
        // A reaped session that calls again is simply a session again.
        h.coord.acquire_lock("a.ts:f", "s1", None).unwrap();
        let list = h.coord.list_sessions().unwrap();
        assert!(list.iter().any(|s| s.summary.session_id == "s1" && s.live));
        h.clock.advance(100_000);
        assert!(
            h.coord.reap_dead_sessions().unwrap().is_empty(),
            "no lease any more"
        );
    }

    #[test]
    fn sightings_are_flushed() {
        let h = Harness::new();
        h.coord
            .register_with_pulse("a", "s1", None, Some(5000))
            .unwrap();
        h.clock.advance(3000);
        h.coord.acquire_lock("a.ts:f", "s1", None).unwrap();
        assert_eq!(h.coord.flush_sightings().unwrap(), 1);
        assert_eq!(h.coord.flush_sightings().unwrap(), 0);
        let row = h.coord.store().read(|r| r.session("s1")).unwrap().unwrap();
        assert_eq!(row.last_seen_ms, h.coord.now_ms());
    }

    #[test]
    fn heartbeat_of_an_unknown_session() {
        let h = Harness::new();
        let err = h.coord.heartbeat("ghost").unwrap_err();
        assert!(matches!(err, CoordError::SessionNotFound { session_id } if session_id == "ghost"));
        // It did not create the session either.
        assert!(h.coord.heartbeat("ghost").is_err());
        h.coord.register("a", "s1").unwrap();
        assert_eq!(h.coord.heartbeat("s1").unwrap().lease_expires_at_ms, None);
    }

    #[test]
    fn end_is_idempotent_and_ends_unregistered_sessions_too() {
        let h = Harness::new();
        assert_eq!(h.coord.end_session("ghost").unwrap().locks_released, 0);
        h.coord.acquire_lock("a.ts:f", "s1", None).unwrap();
        let before = h.coord.newest_event_seq().unwrap();
        let ended = h.coord.end_session("s1").unwrap();
        assert_eq!(ended.locks_released, 1);
        assert_eq!(kinds(&h, before), ["session.ended", "lock.released"]);
        let again = h.coord.end_session("s1").unwrap();
        assert_eq!((again.locks_released, again.intents_abandoned), (0, 0));
        assert_eq!(kinds(&h, before).len(), 2, "no event for an ended session");
        assert_eq!(
            EventKind::parse("session.ended"),
            Some(EventKind::SessionEnded)
        );
    }

    #[test]
    fn list_counts_and_orders() {
        let h = Harness::new();
        h.coord.register("alice", "a").unwrap();
        h.clock.advance(1);
        h.coord.acquire_lock("x.ts:f", "b", None).unwrap();
        h.coord.acquire_lock("x.ts:g", "b", None).unwrap();
        h.clock.advance(1);
        h.coord
            .declare_intent(&h.coord.vantage(Some("c")), "d", &["x.ts".into()], None)
            .unwrap();
        let list = h.coord.list_sessions().unwrap();
        let ids: Vec<&str> = list.iter().map(|s| s.summary.session_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(list[0].summary.name.as_deref(), Some("alice"));
        assert_eq!(list[1].summary.locks, 2);
        assert_eq!(list[2].summary.intents, 1);
        h.coord.end_session("a").unwrap();
        let list = h.coord.list_sessions().unwrap();
        let ids: Vec<&str> = list.iter().map(|s| s.summary.session_id.as_str()).collect();
        assert_eq!(ids, ["b", "c", "a"], "live first");
        // A session that held something once and nothing now, never registered, is not listed.
        h.coord.release_lock("x.ts:f", "b").unwrap();
        h.coord.release_lock("x.ts:g", "b").unwrap();
        let list = h.coord.list_sessions().unwrap();
        assert!(list.iter().all(|s| s.summary.session_id != "b"));
        // And is forgotten once idle past retention.
        h.clock
            .advance(crate::coord::events::EVENT_RETENTION_MS + 1);
        h.coord.prune_events().unwrap();
        assert!(h.coord.store().read(|r| r.session("b")).unwrap().is_none());
        assert!(
            h.coord.store().read(|r| r.session("a")).unwrap().is_some(),
            "registered"
        );
    }
}
