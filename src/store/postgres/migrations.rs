//! Schema migrations of the shared database, tracked in `wit_schema`.
//!
//! [`MIGRATIONS`] is append-only: entry `i` takes the schema from version `i` to `i + 1`.
//! Never edit a released entry; add a new one. Each runs in one transaction together with its
//! version row, so a failure leaves the database at the previous version. Daemons that start
//! at the same moment do not race: the whole migration runs under a session-level advisory
//! lock, so the second daemon waits and then finds nothing left to do.
//!
//! Every table is keyed by `project`, so one database serves many repositories; the tables
//! carry a `wit_` prefix so they can live next to other applications' tables.

use postgres::Client;

use super::errors::StoreName;
use crate::store::{Result, StoreError};

/// Version 1: the whole coordination state of the SQLite schema version 4, keyed by project.
///
/// - `wit_projects`: one row per project; `next_seq` is the `seq` the next event gets and
///   `last_agent_id` the last agent id handed out. Every write transaction locks its
///   project's row first (see `PgStore::write`), which serialises the writers of a project.
/// - The ordering columns (`seq` of intents and contracts, `id` of waiters) are identities
///   shared by all projects: they only order rows, and writers of one project are serialised,
///   so they grow with arrival inside each project.
/// - `wit_intent_ranges.n` keeps the ranges of one intent in the order they were given.
/// - Text compares byte-wise (`COLLATE "C"`), as in SQLite: orderings by symbol path or
///   session id are the same in both backends, whatever the database's locale.
/// - The indexes mirror SQLite's: locks by symbol path (the key), intent ranges by file and
///   liveness, contracts by file and status and by symbol path, waiters by symbol path.
const V1: &str = r#"
CREATE TABLE wit_projects (
    project       TEXT COLLATE "C" PRIMARY KEY,
    next_seq      BIGINT NOT NULL DEFAULT 1,
    last_agent_id BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE wit_agents (
    project       TEXT COLLATE "C" NOT NULL,
    session_id    TEXT COLLATE "C" NOT NULL,
    id            BIGINT NOT NULL,
    name          TEXT COLLATE "C" NOT NULL,
    registered_at BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (project, session_id),
    UNIQUE (project, id)
);

CREATE TABLE wit_locks (
    project        TEXT COLLATE "C" NOT NULL,
    symbol_path    TEXT COLLATE "C" NOT NULL,
    session_id     TEXT COLLATE "C" NOT NULL,
    acquired_at_ms BIGINT NOT NULL,
    expires_at_ms  BIGINT NOT NULL,
    token          BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, symbol_path)
);

CREATE TABLE wit_intents (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project     TEXT COLLATE "C" NOT NULL,
    id          TEXT COLLATE "C" NOT NULL,
    session_id  TEXT COLLATE "C" NOT NULL,
    description TEXT COLLATE "C" NOT NULL,
    files       TEXT COLLATE "C" NOT NULL,
    symbols     TEXT COLLATE "C" NOT NULL,
    start_byte  BIGINT,
    end_byte    BIGINT,
    status      TEXT COLLATE "C" NOT NULL
                CHECK (status IN ('declared', 'active', 'resolved', 'abandoned')),
    declared_at BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    UNIQUE (project, id)
);
CREATE INDEX wit_intents_status ON wit_intents (project, status, declared_at);
CREATE INDEX wit_intents_session ON wit_intents (project, session_id);

CREATE TABLE wit_intent_ranges (
    n          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project    TEXT COLLATE "C" NOT NULL,
    intent_seq BIGINT NOT NULL REFERENCES wit_intents (seq) ON DELETE CASCADE,
    file       TEXT COLLATE "C" NOT NULL,
    start_byte BIGINT,
    end_byte   BIGINT,
    live       BOOLEAN NOT NULL DEFAULT TRUE
);
CREATE INDEX wit_intent_ranges_file ON wit_intent_ranges (project, file, live, intent_seq);
CREATE INDEX wit_intent_ranges_intent ON wit_intent_ranges (intent_seq);

CREATE TABLE wit_contracts (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project      TEXT COLLATE "C" NOT NULL,
    id           TEXT COLLATE "C" NOT NULL,
    proposer     TEXT COLLATE "C" NOT NULL,
    symbol_path  TEXT COLLATE "C" NOT NULL,
    file         TEXT COLLATE "C" NOT NULL,
    name         TEXT COLLATE "C" NOT NULL,
    signature    TEXT COLLATE "C" NOT NULL,
    status       TEXT COLLATE "C" NOT NULL CHECK (status IN ('proposed', 'accepted', 'rejected')),
    responder    TEXT COLLATE "C",
    proposed_at  BIGINT NOT NULL,
    responded_at BIGINT,
    UNIQUE (project, id)
);
CREATE INDEX wit_contracts_file_status ON wit_contracts (project, file, status);
CREATE INDEX wit_contracts_symbol ON wit_contracts (project, symbol_path);
CREATE INDEX wit_contracts_status ON wit_contracts (project, status);

CREATE TABLE wit_sessions (
    project       TEXT COLLATE "C" NOT NULL,
    session_id    TEXT COLLATE "C" NOT NULL,
    pid           BIGINT,
    pid_start     BIGINT,
    lease_ms      BIGINT,
    first_seen_ms BIGINT NOT NULL,
    last_seen_ms  BIGINT NOT NULL,
    ended_at_ms   BIGINT,
    host_id       TEXT COLLATE "C",
    PRIMARY KEY (project, session_id)
);

CREATE TABLE wit_events (
    project    TEXT COLLATE "C" NOT NULL,
    seq        BIGINT NOT NULL,
    at_ms      BIGINT NOT NULL,
    type       TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C",
    subject    TEXT COLLATE "C" NOT NULL,
    data       TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (project, seq)
);

CREATE TABLE wit_lock_waiters (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project      TEXT COLLATE "C" NOT NULL,
    symbol_path  TEXT COLLATE "C" NOT NULL,
    session_id   TEXT COLLATE "C" NOT NULL,
    ttl_ms       BIGINT NOT NULL,
    daemon_id    TEXT COLLATE "C" NOT NULL,
    callers      TEXT COLLATE "C" NOT NULL,
    queued_at_ms BIGINT NOT NULL,
    granted      TEXT COLLATE "C"
);
CREATE INDEX wit_lock_waiters_symbol ON wit_lock_waiters (project, symbol_path, id);
CREATE INDEX wit_lock_waiters_daemon ON wit_lock_waiters (project, daemon_id);

CREATE TABLE wit_daemons (
    project       TEXT COLLATE "C" NOT NULL,
    daemon_id     TEXT COLLATE "C" NOT NULL,
    host_id       TEXT COLLATE "C" NOT NULL,
    pid           BIGINT NOT NULL,
    started_at_ms BIGINT NOT NULL,
    last_beat_ms  BIGINT NOT NULL,
    PRIMARY KEY (project, daemon_id)
);
"#;

/// The SQLite schema's version 5: observed work as regions (docs/protocol.md 13).
/// `wit_intents.regions` holds the changed lines of an observed intent's file as a JSON array
/// of `[startLine, endLine]` pairs (sorted, merged); NULL for declared intents and file-level
/// observed ones. An intent with regions keeps one `wit_intent_ranges` row for its file (bytes
/// NULL), so the lookups by file find it as before.
const V5: &str = r#"
ALTER TABLE wit_intents ADD COLUMN regions TEXT COLLATE "C";
"#;

/// v7 (issue 34): what an intent records, typed, as the SQLite schema's version 7 (older rows
/// get it from what wrote them).
const V7: &str = r#"
ALTER TABLE wit_intents ADD COLUMN kind TEXT COLLATE "C" NOT NULL DEFAULT 'declared';
UPDATE wit_intents SET kind = 'observed'
 WHERE description = 'observed edit' OR regions IS NOT NULL;
UPDATE wit_intents SET kind = 'worktree' WHERE session_id LIKE 'worktree:%';
"#;

/// v6 (worktrees, docs/protocol.md 14.3): the root of the worktree a session last acted from.
const V6: &str = r#"
ALTER TABLE wit_sessions ADD COLUMN worktree TEXT COLLATE "C";
"#;

/// The migrations, oldest first. Append only.
pub(super) const MIGRATIONS: &[&str] = &[V1, V5, V6, V7];

/// The schema version this build creates and understands.
pub const LATEST_VERSION: usize = MIGRATIONS.len();

/// The advisory lock key that serialises migrations (any fixed number; "wit" in ASCII).
const MIGRATION_LOCK: i64 = 0x0077_6974;

/// Brings the database to [`LATEST_VERSION`], holding the migration lock meanwhile.
pub(super) fn migrate(client: &mut Client, name: &StoreName) -> Result<()> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .map_err(|e| name.error(&e))?;
    let result = migrate_locked(client, name);
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    result?;
    unlocked.map_err(|e| name.error(&e))?;
    Ok(())
}

/// The schema version recorded in the database (0 before the first migration).
pub(super) fn version(client: &mut Client) -> Result<i64, postgres::Error> {
    let row = client.query_one(
        "SELECT CASE WHEN to_regclass('wit_schema') IS NULL THEN 0
                ELSE (SELECT coalesce(max(version), 0) FROM wit_schema) END::bigint",
        &[],
    )?;
    row.try_get(0)
}

fn migrate_locked(client: &mut Client, name: &StoreName) -> Result<()> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS wit_schema (
                 version    BIGINT PRIMARY KEY,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
             )",
        )
        .map_err(|e| name.error(&e))?;
    let found = version(client).map_err(|e| name.error(&e))?;
    let current = usize::try_from(found).unwrap_or(usize::MAX);
    if current > LATEST_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: LATEST_VERSION,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        let version = crate::store::to_i64(index + 1);
        let step = |client: &mut Client| -> Result<(), postgres::Error> {
            let mut tx = client.transaction()?;
            tx.batch_execute(sql)?;
            tx.execute("INSERT INTO wit_schema (version) VALUES ($1)", &[&version])?;
            tx.commit()
        };
        step(client).map_err(|e| match name.error(&e) {
            unavailable @ StoreError::Unavailable { .. } => unavailable,
            _ => name.refused(&format!(
                "migration to schema version {version} failed: {}",
                name.scrub(&e.to_string())
            )),
        })?;
    }
    Ok(())
}
