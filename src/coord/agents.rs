//! Agent registration (docs/protocol.md 3, `register`).

use super::sessions::Registration;
use super::{check_len, check_session, Coord, CoordError, Result, MAX_SESSION_ID_BYTES};

impl Coord {
    /// Registers an agent without a pulse (see [`Coord::register_with_pulse`]).
    pub fn register(&self, name: &str, session_id: &str) -> Result<i64> {
        self.register_with_pulse(name, session_id, None, None)
    }

    /// Registers an agent. Idempotent per session: registering again updates the name,
    /// replaces the pulse (`pid`, `lease_ms`) and returns the same agent id. A `pid` must be a
    /// running process (its start time is recorded with it); `lease_ms` lies in
    /// `MIN_LEASE_MS..=MAX_LEASE_MS` (docs/protocol.md 7.1).
    pub fn register_with_pulse(
        &self,
        name: &str,
        session_id: &str,
        pid: Option<i64>,
        lease_ms: Option<i64>,
    ) -> Result<i64> {
        if name.is_empty() {
            return Err(CoordError::invalid("name", "must not be empty"));
        }
        check_len("name", name, MAX_SESSION_ID_BYTES)?;
        self.check_storable("name", name)?;
        check_session("sessionId", session_id)?;
        self.check_storable("sessionId", session_id)?;
        Self::check_lease(lease_ms)?;
        let pid = self.register_pid(pid)?;
        let mut now = 0;
        let agent_id = self.store.write(|w| {
            now = self.clock.now_ms();
            let agent_id = w.upsert_agent(session_id, name, now)?;
            let registration = Registration {
                session_id,
                name,
                agent_id,
                pid,
                lease_ms,
            };
            self.write_registration(w, &registration, now)?;
            Ok::<_, CoordError>(agent_id)
        })?;
        self.note_open(session_id, now);
        Ok(agent_id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use crate::coord::testing::Harness;
    use crate::coord::CoordError;

    #[test]
    fn register_is_idempotent_per_session() {
        let h = Harness::new();
        let a = h.coord.register("alice", "s1").unwrap();
        let b = h.coord.register("bob", "s2").unwrap();
        assert_ne!(a, b);
        let again = h.coord.register("alice-renamed", "s1").unwrap();
        assert_eq!(again, a);
        let (id, name) = h.coord.store().read(|r| r.agent("s1")).unwrap().unwrap();
        assert_eq!((id, name.as_str()), (a, "alice-renamed"));
        // A new session after a re-registration still gets a fresh id.
        let c = h.coord.register("carol", "s3").unwrap();
        assert!(c > b);
    }

    #[test]
    fn register_validates() {
        let h = Harness::new();
        for (name, session, field) in [
            ("", "s", "name"),
            ("n", "", "sessionId"),
            (&*"x".repeat(257), "s", "name"),
            ("n", &*"x".repeat(257), "sessionId"),
        ] {
            let err = h.coord.register(name, session).unwrap_err();
            assert!(
                matches!(err, CoordError::InvalidInput { field: f, .. } if f == field),
                "{err:?}"
            );
        }
        assert!(h.coord.register(&"x".repeat(256), "s").is_ok());
    }
}
