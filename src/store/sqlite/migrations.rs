//! Schema migrations, tracked by SQLite's `user_version`.
//!
//! [`MIGRATIONS`] is append-only: entry `i` takes the schema from version `i` to `i + 1`.
//! Never edit a released entry; add a new one. Each runs in its own transaction together with
//! the version bump, so a failure leaves the database at the previous version.

use rusqlite::{Connection, TransactionBehavior};

use crate::store::{Result, StoreError};

/// Version 1: agents, locks, intents with their per-file ranges, contracts.
const V1: &str = r#"
CREATE TABLE agents (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    registered_at INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

CREATE TABLE locks (
    symbol_path    TEXT PRIMARY KEY,
    session_id     TEXT NOT NULL,
    acquired_at_ms INTEGER NOT NULL,
    expires_at_ms  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX locks_session ON locks (session_id);
CREATE INDEX locks_expires ON locks (expires_at_ms);

-- `seq` is the creation order (ties of declared_at are broken by it); `id` is the UUID.
CREATE TABLE intents (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    session_id  TEXT NOT NULL,
    description TEXT NOT NULL,
    files       TEXT NOT NULL,
    symbols     TEXT NOT NULL,
    start_byte  INTEGER,
    end_byte    INTEGER,
    status      TEXT NOT NULL
                CHECK (status IN ('declared', 'active', 'resolved', 'abandoned')),
    declared_at INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX intents_status ON intents (status, declared_at);
CREATE INDEX intents_session ON intents (session_id);

-- One row per (intent, file, range); NULL bytes = the whole file. `live` mirrors whether the
-- intent is declared or active, so overlap detection reads only live rows of one file.
CREATE TABLE intent_ranges (
    intent_seq INTEGER NOT NULL REFERENCES intents (seq) ON DELETE CASCADE,
    file       TEXT NOT NULL,
    start_byte INTEGER,
    end_byte   INTEGER,
    live       INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX intent_ranges_file ON intent_ranges (file, live, intent_seq);
CREATE INDEX intent_ranges_intent ON intent_ranges (intent_seq);

CREATE TABLE contracts (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    proposer     TEXT NOT NULL,
    symbol_path  TEXT NOT NULL,
    file         TEXT NOT NULL,
    name         TEXT NOT NULL,
    signature    TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('proposed', 'accepted', 'rejected')),
    responder    TEXT,
    proposed_at  INTEGER NOT NULL,
    responded_at INTEGER
);
CREATE INDEX contracts_file_status ON contracts (file, status);
CREATE INDEX contracts_symbol ON contracts (symbol_path);
CREATE INDEX contracts_status ON contracts (status);
"#;

/// Version 2: no index on lock expiry. Every lock write paid for it (a fourth B-tree page in
/// each WAL commit: 15-20 % of lock throughput), and its only user, the sweep of expired
/// locks once a minute, scans a table of live locks in about a millisecond without it.
const V2: &str = r#"
DROP INDEX locks_expires;
"#;

/// Version 3: sessions with a pulse, fencing tokens, the event log (docs/protocol.md 7–9).
///
/// - `locks.token`: the fencing token of the acquisition (the `seq` of its `lock.acquired`
///   event); locks from before are 0.
/// - `sessions`: every session seen, in order of first appearance (the rowid), with the
///   pid and its process start time or the lease it registered, when it was last seen
///   (flushed from memory about once a second) and when it ended or was reaped.
/// - `locks_session` goes: with the `lock.acquired`/`lock.released` event, each lock write
///   would otherwise touch a third B-tree page (a third WAL frame: one more `pwrite` per
///   commit, about 30 % of lock throughput measured), for lookups by session that only
///   `lock.query` with a session filter and a session's end make, over a table of live locks.
/// - `events`: the log of changes. `seq` is the rowid without AUTOINCREMENT (which would write
///   the `sqlite_sequence` page in every commit): retention only ever deletes the oldest
///   events and keeps the newest 10,000, so the largest `seq` is never deleted and the next
///   one, `max(seq) + 1`, is never a reused number.
const V3: &str = r#"
ALTER TABLE locks ADD COLUMN token INTEGER NOT NULL DEFAULT 0;
DROP INDEX locks_session;

CREATE TABLE sessions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT NOT NULL UNIQUE,
    pid           INTEGER,
    pid_start     INTEGER,
    lease_ms      INTEGER,
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms  INTEGER NOT NULL,
    ended_at_ms   INTEGER
);

CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    at_ms      INTEGER NOT NULL,
    type       TEXT NOT NULL,
    session_id TEXT,
    subject    TEXT NOT NULL,
    data       TEXT NOT NULL
);
"#;

/// Version 4: the queue of waiting lock requests and the daemons (docs/protocol.md 8, 12).
///
/// - `lock_waiters`: one row per waiting `lock.acquire`; the id is the arrival order. The
///   daemon holding the request's connection answers it; `granted` is set when the lock was
///   handed over by another daemon (only with a shared store).
/// - `daemons`: the daemons serving this state, with the host they run on and their last
///   heartbeat; `sessions.host_id` is the host a session's pid lives on.
const V4: &str = r#"
ALTER TABLE sessions ADD COLUMN host_id TEXT;

CREATE TABLE lock_waiters (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    symbol_path  TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    ttl_ms       INTEGER NOT NULL,
    daemon_id    TEXT NOT NULL,
    callers      TEXT NOT NULL,
    queued_at_ms INTEGER NOT NULL,
    granted      TEXT
);
CREATE INDEX lock_waiters_symbol ON lock_waiters (symbol_path, id);
CREATE INDEX lock_waiters_daemon ON lock_waiters (daemon_id);

CREATE TABLE daemons (
    daemon_id     TEXT PRIMARY KEY,
    host_id       TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    started_at_ms INTEGER NOT NULL,
    last_beat_ms  INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// Version 5: observed work as regions (docs/protocol.md 13).
///
/// - `intents.regions`: the changed lines of an observed intent's file, as a JSON array of
///   `[startLine, endLine]` pairs (sorted, merged); NULL for declared intents and file-level
///   observed ones. An intent with regions keeps one `intent_ranges` row for its file (bytes
///   NULL), so the lookups by file find it as before.
const V5: &str = r#"
ALTER TABLE intents ADD COLUMN regions TEXT;
"#;

/// v6 (worktrees, docs/protocol.md 14.3): the root of the worktree a session last acted from.
const V6: &str = r#"
ALTER TABLE sessions ADD COLUMN worktree TEXT;
"#;

/// v7 (issue 34): what an intent records, typed (`declared`, `observed`: an observed edit,
/// `worktree`: a worktree's changes), so the daemon no longer tells observed work by its
/// description. Older rows get it from what wrote them: a `worktree:` session's, an
/// `"observed edit"` or one with regions.
const V7: &str = r#"
ALTER TABLE intents ADD COLUMN kind TEXT NOT NULL DEFAULT 'declared';
UPDATE intents SET kind = 'observed'
 WHERE description = 'observed edit' OR regions IS NOT NULL;
UPDATE intents SET kind = 'worktree' WHERE session_id LIKE 'worktree:%';
"#;

/// The migrations, oldest first. Append only.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7];

/// The schema version this build creates and understands.
pub const LATEST_VERSION: usize = MIGRATIONS.len();

/// Brings the database to [`LATEST_VERSION`].
pub(crate) fn migrate(conn: &mut Connection) -> Result<()> {
    migrate_to(conn, LATEST_VERSION)
}

/// Applies the migrations after the current version up to `target`.
fn migrate_to(conn: &mut Connection, target: usize) -> Result<()> {
    let found: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let current = usize::try_from(found).unwrap_or(usize::MAX);
    if current > LATEST_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: LATEST_VERSION,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().take(target).skip(current) {
        let version = index + 1;
        let step = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", crate::store::to_i64(version))?;
            tx.commit()
        };
        step(conn).map_err(|source| StoreError::Migration { version, source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    /// Data written at each schema version (index `v - 1` for version `v`), and a check run
    /// after upgrading to the latest version that the data is still there and readable. When a
    /// migration is appended, add an entry here: the test then covers the upgrade from it too.
    const SEEDS: &[(&str, &str)] = &[
        (SEED_V1, CHECK_V1),
        (SEED_V1, CHECK_V1),
        (SEED_V3, CHECK_V3),
        (SEED_V4, CHECK_V4),
        (SEED_V5, CHECK_V5),
        (SEED_V6, CHECK_V6),
        (SEED_V7, CHECK_V7),
    ];

    /// Intents of each kind (version 6, before kinds: they come from what wrote them).
    const SEED_V7: &str = r#"
        INSERT INTO intents (id, session_id, description, files, symbols, start_byte, end_byte,
                             status, declared_at, updated_at, regions)
            VALUES ('i1', 's1', 'observed edit', ',a.ts,', '[]', NULL, NULL, 'active', 1, 1, NULL),
                   ('i2', 's1', 'plan', ',a.ts,', '[]', NULL, NULL, 'declared', 1, 1, NULL),
                   ('i3', 'worktree:/r/w1', 'worktree w1', ',a.ts,', '[]', NULL, NULL, 'active',
                    1, 1, '[[1,2]]'),
                   ('i4', 'unowned:/r', 'observed edit', ',a.ts,', '[]', NULL, NULL, 'active',
                    1, 1, '[[3,3]]'),
                   ('i5', 's2', 'refactor', ',b.ts,', '[]', NULL, NULL, 'resolved', 1, 1, NULL);
        "#;

    /// Counts the intents of [`SEED_V7`] that got their kind: 5 when all did.
    const CHECK_V7: &str = r#"
        SELECT (SELECT count(*) FROM intents WHERE kind = 'observed' AND id IN ('i1', 'i4'))
             + (SELECT count(*) FROM intents WHERE kind = 'worktree' AND id = 'i3')
             + (SELECT count(*) FROM intents WHERE kind = 'declared' AND id IN ('i2', 'i5'))
        "#;

    /// A session with the worktree it acts from (version 6).
    const SEED_V6: &str = r#"
        INSERT INTO sessions (session_id, pid, pid_start, lease_ms, first_seen_ms, last_seen_ms,
                              host_id, worktree)
            VALUES ('s1', 42, 1234, NULL, 1, 1, 'h1', '/r/w1');
        INSERT INTO agents (session_id, name, registered_at, updated_at) VALUES ('s1', 'a', 1, 1);
        INSERT INTO locks VALUES ('src/a.ts:f', 's1', 1, 9999999999999, 7);
        INSERT INTO contracts (id, proposer, symbol_path, file, name, signature, status, proposed_at)
            VALUES ('c1', 's1', 'src/a.ts:f', 'src/a.ts', 'f', '()', 'accepted', 1);
        INSERT INTO daemons VALUES ('d1', 'h1', 7, 1, 2);
        "#;

    /// Counts the rows of [`SEED_V6`] that survived: 5 when all did.
    const CHECK_V6: &str = r#"
        SELECT (SELECT count(*) FROM sessions WHERE worktree = '/r/w1')
             + (SELECT count(*) FROM agents WHERE session_id = 's1')
             + (SELECT count(*) FROM locks WHERE token = 7)
             + (SELECT count(*) FROM contracts WHERE id = 'c1')
             + (SELECT count(*) FROM daemons WHERE daemon_id = 'd1')
        "#;

    /// An observed intent with regions (version 5).
    const SEED_V5: &str = r#"
        INSERT INTO agents (session_id, name, registered_at, updated_at) VALUES ('s1', 'a', 1, 1);
        INSERT INTO locks VALUES ('src/a.ts:f', 's1', 1, 9999999999999, 7);
        INSERT INTO intents (id, session_id, description, files, symbols, start_byte, end_byte,
                             status, declared_at, updated_at, regions)
            VALUES ('i1', 's1', 'observed edit', ',src/a.ts,', '["f"]', NULL, NULL, 'active', 1,
                    1, '[[3,5],[9,9]]');
        INSERT INTO intent_ranges (intent_seq, file, start_byte, end_byte) VALUES (1, 'src/a.ts', NULL, NULL);
        INSERT INTO contracts (id, proposer, symbol_path, file, name, signature, status, proposed_at)
            VALUES ('c1', 's1', 'src/a.ts:f', 'src/a.ts', 'f', '()', 'accepted', 1);
        "#;

    /// Counts the rows of [`SEED_V5`] that survived: 5 when all did.
    const CHECK_V5: &str = r#"
        SELECT (SELECT count(*) FROM agents WHERE session_id = 's1')
             + (SELECT count(*) FROM locks WHERE token = 7)
             + (SELECT count(*) FROM intents WHERE regions = '[[3,5],[9,9]]')
             + (SELECT count(*) FROM intent_ranges WHERE file = 'src/a.ts')
             + (SELECT count(*) FROM contracts WHERE id = 'c1')
        "#;

    /// Rows in the tables of version 4.
    const SEED_V4: &str = r#"
        INSERT INTO sessions (session_id, pid, pid_start, lease_ms, first_seen_ms, last_seen_ms,
                              host_id)
            VALUES ('s1', 42, 1234, NULL, 1, 1, 'h1');
        INSERT INTO lock_waiters (symbol_path, session_id, ttl_ms, daemon_id, callers,
                                  queued_at_ms)
            VALUES ('src/a.ts:f', 's1', 1000, 'd1', '[]', 1);
        INSERT INTO daemons VALUES ('d1', 'h1', 7, 1, 2);
        INSERT INTO agents (session_id, name, registered_at, updated_at) VALUES ('s1', 'a', 1, 1);
        INSERT INTO locks VALUES ('src/a.ts:f', 's1', 1, 9999999999999, 7);
        "#;

    /// Counts the rows of [`SEED_V4`] that survived: 5 when all did.
    const CHECK_V4: &str = r#"
        SELECT (SELECT count(*) FROM sessions WHERE host_id = 'h1')
             + (SELECT count(*) FROM agents WHERE session_id = 's1')
             + (SELECT count(*) FROM locks WHERE token = 7)
             + (SELECT count(*) FROM lock_waiters WHERE daemon_id = 'd1')
             + (SELECT count(*) FROM daemons WHERE host_id = 'h1')
        "#;

    /// Rows in every table of version 1 (version 2 only dropped an index).
    const SEED_V1: &str = r#"
        INSERT INTO agents (session_id, name, registered_at, updated_at) VALUES ('s1', 'a', 1, 1);
        INSERT INTO locks VALUES ('src/a.ts:f', 's1', 1, 9999999999999);
        INSERT INTO intents (id, session_id, description, files, symbols, start_byte, end_byte,
                             status, declared_at, updated_at)
            VALUES ('i1', 's1', 'd', ',src/a.ts,', '["f"]', 0, 10, 'active', 1, 1);
        INSERT INTO intent_ranges (intent_seq, file, start_byte, end_byte) VALUES (1, 'src/a.ts', 0, 10);
        INSERT INTO contracts (id, proposer, symbol_path, file, name, signature, status, proposed_at)
            VALUES ('c1', 's1', 'src/a.ts:f', 'src/a.ts', 'f', '()', 'accepted', 1);
        "#;

    /// Rows in every table of version 3 (its new tables and the new lock column included).
    const SEED_V3: &str = r#"
        INSERT INTO agents (session_id, name, registered_at, updated_at) VALUES ('s1', 'a', 1, 1);
        INSERT INTO locks VALUES ('src/a.ts:f', 's1', 1, 9999999999999, 7);
        INSERT INTO sessions (session_id, pid, pid_start, lease_ms, first_seen_ms, last_seen_ms)
            VALUES ('s1', 42, 1234, NULL, 1, 1);
        INSERT INTO events (at_ms, type, session_id, subject, data)
            VALUES (1, 'lock.acquired', 's1', 'src/a.ts:f', '{}');
        INSERT INTO contracts (id, proposer, symbol_path, file, name, signature, status, proposed_at)
            VALUES ('c1', 's1', 'src/a.ts:f', 'src/a.ts', 'f', '()', 'accepted', 1);
        "#;

    /// Counts the rows of [`SEED_V3`] that survived: 5 when all did.
    const CHECK_V3: &str = r#"
        SELECT (SELECT count(*) FROM agents WHERE session_id = 's1')
             + (SELECT count(*) FROM locks WHERE symbol_path = 'src/a.ts:f' AND token = 7)
             + (SELECT count(*) FROM sessions WHERE session_id = 's1' AND pid_start = 1234)
             + (SELECT count(*) FROM events WHERE type = 'lock.acquired')
             + (SELECT count(*) FROM contracts WHERE id = 'c1')
        "#;

    /// Counts the rows of [`SEED_V1`] that survived: 5 when all did.
    const CHECK_V1: &str = r#"
        SELECT (SELECT count(*) FROM agents WHERE session_id = 's1')
             + (SELECT count(*) FROM locks WHERE symbol_path = 'src/a.ts:f')
             + (SELECT count(*) FROM intents WHERE id = 'i1')
             + (SELECT count(*) FROM intent_ranges WHERE file = 'src/a.ts')
             + (SELECT count(*) FROM contracts WHERE id = 'c1')
        "#;

    fn schema(conn: &Connection) -> Vec<(String, String)> {
        let mut stmt = conn
            .prepare(
                "SELECT name, coalesce(sql, '') FROM sqlite_master \
                 WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    fn version(conn: &Connection) -> usize {
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        usize::try_from(v).unwrap()
    }

    #[test]
    fn every_version_has_a_seed() {
        assert_eq!(SEEDS.len(), LATEST_VERSION);
    }

    #[test]
    fn upgrades_from_every_earlier_version() {
        let mut fresh = Connection::open_in_memory().unwrap();
        migrate(&mut fresh).unwrap();
        let expected = schema(&fresh);
        assert_eq!(version(&fresh), LATEST_VERSION);

        for start in 0..LATEST_VERSION {
            let mut conn = Connection::open_in_memory().unwrap();
            conn.pragma_update(None, "foreign_keys", "ON").unwrap();
            migrate_to(&mut conn, start).unwrap();
            assert_eq!(version(&conn), start);
            if start > 0 {
                conn.execute_batch(SEEDS[start - 1].0).unwrap();
            }
            migrate(&mut conn).unwrap();
            assert_eq!(version(&conn), LATEST_VERSION, "from {start}");
            assert_eq!(schema(&conn), expected, "schema after upgrade from {start}");
            if start > 0 {
                let n: i64 = conn
                    .query_row(SEEDS[start - 1].1, [], |r| r.get(0))
                    .unwrap();
                assert_eq!(n, 5, "seed data written at version {start} survives");
            }
            // Migrating again is a no-op.
            migrate(&mut conn).unwrap();
            assert_eq!(schema(&conn), expected);
        }
    }

    #[test]
    fn refuses_a_newer_schema() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", 999).unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(matches!(err, StoreError::SchemaTooNew { found: 999, .. }));
    }

    #[test]
    fn failed_migration_leaves_previous_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        // A table that the first migration wants to create makes it fail.
        conn.execute_batch("CREATE TABLE locks (x)").unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(matches!(err, StoreError::Migration { version: 1, .. }));
        assert_eq!(version(&conn), 0);
        let agents: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'agents'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(agents, 0, "the partial migration was rolled back");
    }
}
