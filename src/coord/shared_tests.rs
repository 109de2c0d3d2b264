//! Several daemons on one shared store (docs/protocol.md 12.2–12.3), played by two
//! coordination cores over one SQLite file: waits and hand-overs across daemons, one FIFO
//! order, cycles across daemons, a dead daemon's requests, and liveness by host.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::mpsc;

use super::testing::SharedPair;
use super::waits::{WaitOutcome, WaitReply};
use super::{Acquire, CoordError, EndReason};

/// A reply whose outcome the test reads from a channel.
struct ChannelReply(mpsc::Sender<WaitOutcome>);

impl WaitReply for ChannelReply {
    fn is_closed(&self) -> bool {
        false
    }
    fn send(self: Box<Self>, outcome: WaitOutcome) {
        let _ = self.0.send(outcome);
    }
}

fn wait(coord: &super::Coord, path: &str, session: &str) -> mpsc::Receiver<WaitOutcome> {
    let (tx, rx) = mpsc::channel();
    let queued = coord
        .acquire_or_wait(
            &coord.vantage(Some(session)),
            path,
            Some(60_000),
            Some(Box::new(ChannelReply(tx))),
        )
        .unwrap();
    assert!(matches!(queued, Acquire::Queued { .. }), "{queued:?}");
    rx
}

fn granted_token(rx: &mpsc::Receiver<WaitOutcome>) -> i64 {
    match rx.try_recv() {
        Ok(WaitOutcome::Granted(granted)) => granted.lock.token,
        other => panic!("not granted: {other:?}"),
    }
}

#[test]
fn a_release_on_one_daemon_hands_the_lock_to_a_waiter_on_the_other() {
    let pair = SharedPair::new();
    pair.a.acquire_lock("a.ts:f", "s1", None).unwrap();
    let rx = wait(&pair.b, "a.ts:f", "s2");
    pair.a.release_lock("a.ts:f", "s1").unwrap();
    // The lock is s2's in the store already; b answers once told.
    let held = pair.a.query_locks(None).unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].lock.session_id, "s2");
    assert!(rx.try_recv().is_err(), "not answered before b is told");
    assert_eq!(pair.b.deliver_granted().unwrap(), 1);
    assert_eq!(granted_token(&rx), held[0].lock.token);
    assert_eq!(pair.b.waiting_requests(), 0);
    assert_eq!(pair.b.deliver_granted().unwrap(), 0);
}

#[test]
fn waiters_on_both_daemons_are_served_in_arrival_order() {
    let pair = SharedPair::new();
    pair.a.acquire_lock("a.ts:f", "s0", None).unwrap();
    let first = wait(&pair.b, "a.ts:f", "s1");
    let second = wait(&pair.a, "a.ts:f", "s2");
    let third = wait(&pair.b, "a.ts:f", "s3");
    pair.a.release_lock("a.ts:f", "s0").unwrap();
    pair.b.deliver_granted().unwrap();
    let t1 = granted_token(&first);
    assert!(second.try_recv().is_err() && third.try_recv().is_err());
    pair.b.release_lock("a.ts:f", "s1").unwrap();
    // b handed the lock to s2, a's request: a answers once told.
    assert!(second.try_recv().is_err());
    pair.a.deliver_granted().unwrap();
    let t2 = granted_token(&second);
    pair.a.release_lock("a.ts:f", "s2").unwrap();
    pair.b.deliver_granted().unwrap();
    let t3 = granted_token(&third);
    assert!(t1 < t2 && t2 < t3, "{t1} {t2} {t3}");
}

#[test]
fn a_new_request_cannot_overtake_a_waiter_of_the_other_daemon() {
    let pair = SharedPair::new();
    pair.a.acquire_lock("a.ts:f", "s0", Some(1000)).unwrap();
    let rx = wait(&pair.b, "a.ts:f", "s1");
    pair.clock.advance(2000);
    // The lock expired; a request arriving on a finds it belongs to b's waiter.
    let err = pair.a.acquire_lock("a.ts:f", "s2", None).unwrap_err();
    assert!(
        matches!(&err, CoordError::LockConflict { held_by, .. } if held_by == "s1"),
        "{err:?}"
    );
    pair.b.deliver_granted().unwrap();
    granted_token(&rx);
}

#[test]
fn a_cycle_across_daemons_is_refused() {
    let pair = SharedPair::new();
    pair.a.acquire_lock("a.ts:x", "sa", None).unwrap();
    pair.b.acquire_lock("a.ts:y", "sb", None).unwrap();
    let _rx = wait(&pair.b, "a.ts:x", "sb");
    let (tx, _keep) = mpsc::channel();
    let err = pair
        .a
        .acquire_or_wait(
            &pair.a.vantage(Some("sa")),
            "a.ts:y",
            None,
            Some(Box::new(ChannelReply(tx))),
        )
        .unwrap_err();
    match err {
        CoordError::LockConflict { cycle, .. } => {
            assert_eq!(cycle, Some(vec!["sa".to_owned(), "sb".to_owned()]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_cancelled_wait_gives_back_a_grant_it_never_received() {
    let pair = SharedPair::new();
    pair.a.acquire_lock("a.ts:f", "s0", None).unwrap();
    let (tx, rx) = mpsc::channel();
    let Acquire::Queued { id, .. } = pair
        .b
        .acquire_or_wait(
            &pair.b.vantage(Some("s1")),
            "a.ts:f",
            None,
            Some(Box::new(ChannelReply(tx))),
        )
        .unwrap()
    else {
        panic!("not queued");
    };
    let next = wait(&pair.a, "a.ts:f", "s2");
    pair.a.release_lock("a.ts:f", "s0").unwrap();
    // b's request times out before b heard of the grant: the lock goes on to s2.
    assert!(matches!(
        pair.b.cancel_wait(id),
        super::Cancelled::Removed { .. }
    ));
    assert!(rx.try_recv().is_err());
    pair.a.deliver_granted().unwrap();
    granted_token(&next);
    let held = pair.a.query_locks(None).unwrap();
    assert_eq!(held[0].lock.session_id, "s2");
}

#[test]
fn a_silent_daemon_loses_its_waiters_and_the_locks_granted_to_them() {
    let pair = SharedPair::new();
    pair.a.acquire_lock("a.ts:f", "s0", None).unwrap();
    let _lost = wait(&pair.b, "a.ts:f", "s1");
    let next = wait(&pair.a, "a.ts:f", "s2");
    pair.a.release_lock("a.ts:f", "s0").unwrap();
    // b never answers (it died). Within 30 s nothing changes...
    pair.clock.advance(20_000);
    assert!(pair.a.beat_daemon().unwrap().is_empty());
    assert!(next.try_recv().is_err());
    // ...after 30 s of silence a drops b, gives its granted lock back and serves s2.
    pair.clock.advance(11_000);
    let gone = pair.a.beat_daemon().unwrap();
    assert_eq!(gone, [pair.b.store().daemon_id().to_owned()]);
    granted_token(&next);
}

#[test]
fn pid_sessions_are_checked_on_their_own_host_and_reaped_by_others_when_it_is_silent() {
    let pair = SharedPair::new();
    // s1 registers through b (host-b) with a pid that only host-b can look up.
    pair.processes.start(4242, 77);
    pair.b
        .register_with_pulse("agent", "s1", Some(4242), None)
        .unwrap();
    pair.a.acquire_lock("a.ts:f", "s1", None).unwrap();
    // a cannot see host-b's processes: it never judges the pid itself.
    pair.processes.kill(4242);
    assert!(pair.a.reap_dead_sessions().unwrap().is_empty());
    // b can, and reaps.
    let reaped = pair.b.reap_dead_sessions().unwrap();
    assert_eq!(reaped.len(), 1);
    assert_eq!(reaped[0].reason, EndReason::ProcessExited);

    // s2 on host-b, alive; then host-b goes silent for 30 s: a reaps it.
    pair.processes.start(4343, 88);
    pair.b
        .register_with_pulse("agent", "s2", Some(4343), None)
        .unwrap();
    pair.b.beat_daemon().unwrap();
    pair.a.beat_daemon().unwrap();
    pair.clock.advance(29_000);
    pair.a.beat_daemon().unwrap();
    assert!(pair.a.reap_dead_sessions().unwrap().is_empty());
    pair.clock.advance(2_000);
    pair.a.beat_daemon().unwrap();
    let reaped = pair.a.reap_dead_sessions().unwrap();
    assert_eq!(reaped.len(), 1);
    assert_eq!(reaped[0].session_id, "s2");
    assert_eq!(reaped[0].reason, EndReason::HostSilent);
}

#[test]
fn a_shared_store_refuses_nul_characters_it_cannot_keep() {
    let pair = SharedPair::new();
    let err = pair.a.acquire_lock("a.ts:f", "s\0", None).unwrap_err();
    assert!(
        matches!(
            err,
            CoordError::InvalidInput {
                field: "sessionId",
                ..
            }
        ),
        "{err:?}"
    );
    let err = pair.a.register("a\0", "s1").unwrap_err();
    assert!(
        matches!(err, CoordError::InvalidInput { field: "name", .. }),
        "{err:?}"
    );
    // The embedded store keeps them, as it always did.
    let h = super::testing::Harness::new();
    h.coord.acquire_lock("a.ts:f", "s\0", None).unwrap();
}
