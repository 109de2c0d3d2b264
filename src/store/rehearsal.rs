//! The writes an agent's first call makes, rehearsed once after a start in a transaction that
//! is rolled back: SQLite prepares their statements and reads their pages then, not while an
//! agent waits (issue 32.3: a new session's first `lock.acquire` after a restart spent a
//! quarter of its time preparing the session row's statements). Nothing is kept.

use super::records::{Lock, NewEvent};
use super::{Backend, Store, StoreError};

/// The session, symbol and event the rehearsal writes (and rolls back).
const REHEARSAL: &str = "wit:rehearsal";

/// Why the rehearsal's transaction ended: always rolled back.
enum Ended {
    /// It wrote everything it meant to.
    Rehearsed,
    /// The store refused a write.
    Store(StoreError),
}

impl From<StoreError> for Ended {
    fn from(error: StoreError) -> Ended {
        Ended::Store(error)
    }
}

impl Store {
    /// Writes, in one transaction rolled back at its end, a new session's row and worktree, a
    /// lock and its event, as of `now_ms`. Only the embedded store: a shared one (PostgreSQL)
    /// prepares per pooled connection, and a rolled-back insert there still takes event
    /// numbers.
    pub fn rehearse_first_writes(&self, now_ms: i64) -> Result<(), StoreError> {
        let Backend::Sqlite(db) = &self.backend else {
            return Ok(());
        };
        let ended = db.write(|w| {
            w.session(REHEARSAL)?;
            w.touch_session(REHEARSAL, now_ms)?;
            w.set_session_worktree(REHEARSAL, REHEARSAL)?;
            w.record_last_seen(REHEARSAL, now_ms)?;
            w.lock(REHEARSAL)?;
            w.put_lock(&Lock {
                symbol_path: REHEARSAL.to_owned(),
                session_id: REHEARSAL.to_owned(),
                acquired_at_ms: now_ms,
                expires_at_ms: now_ms,
                token: 0,
            })?;
            w.append_event(
                now_ms,
                &NewEvent {
                    kind: "lock.acquired",
                    session_id: Some(REHEARSAL),
                    subject: REHEARSAL,
                    data: serde_json::Value::Object(serde_json::Map::new()),
                },
            )?;
            Err::<(), _>(Ended::Rehearsed)
        });
        match ended {
            Err(Ended::Store(error)) => Err(error),
            Ok(_) | Err(Ended::Rehearsed) => Ok(()),
        }
    }
}
