//! The records the database holds. They double as the domain types of `coord`, which
//! re-exports them: a lock, an intent or a contract is exactly what is stored about it.
//! Times are unix milliseconds.

use std::fmt;
use std::str::FromStr;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

/// An exclusive lock on a symbol path. It is live while `expires_at_ms` is in the future;
/// an expired lock no longer exists for any purpose, whether or not a sweep has deleted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    /// Normalised `file:name`.
    pub symbol_path: String,
    /// The holder.
    pub session_id: String,
    /// First acquisition (kept across refreshes by the same session).
    pub acquired_at_ms: i64,
    /// Expiry; the lock is live while this is greater than the current time.
    pub expires_at_ms: i64,
    /// Fencing token: grows with every new acquisition, kept by a refresh.
    pub token: i64,
}

impl Lock {
    /// Whether the lock still exists at `now_ms`.
    pub fn is_live(&self, now_ms: i64) -> bool {
        self.expires_at_ms > now_ms
    }
}

/// Lifecycle of an intent; transitions only go forward
/// (`declared → active|resolved|abandoned`, `active → resolved|abandoned`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntentStatus {
    /// Declared, work not started.
    Declared,
    /// Work in progress.
    Active,
    /// Finished (terminal).
    Resolved,
    /// Given up (terminal).
    Abandoned,
}

impl IntentStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [IntentStatus; 4] = [
        IntentStatus::Declared,
        IntentStatus::Active,
        IntentStatus::Resolved,
        IntentStatus::Abandoned,
    ];

    /// The protocol's spelling (`"declared"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            IntentStatus::Declared => "declared",
            IntentStatus::Active => "active",
            IntentStatus::Resolved => "resolved",
            IntentStatus::Abandoned => "abandoned",
        }
    }

    /// Whether the intent still takes part in conflict detection (declared or active).
    pub fn is_live(self) -> bool {
        matches!(self, IntentStatus::Declared | IntentStatus::Active)
    }

    /// Whether `self → to` is an allowed transition.
    pub fn can_become(self, to: IntentStatus) -> bool {
        use IntentStatus::*;
        matches!(
            (self, to),
            (Declared, Active | Resolved | Abandoned) | (Active, Resolved | Abandoned)
        )
    }
}

/// What an intent records: work a session declared, or work the daemon observed (never on
/// the wire: the protocol tells them apart by description, 10.3 and 14.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IntentKind {
    /// Declared by its session (`intent.declare`).
    #[default]
    Declared,
    /// An edit observed for its session (10.3, 13, 15.1–15.3): recorded by
    /// `edit.preflight`, or attributed from a change on disk; description `"observed edit"`.
    ObservedEdit,
    /// A worktree's changes, observed without hooks (14.4), of session `worktree:<root>`.
    Worktree,
}

impl IntentKind {
    /// Every kind.
    pub const ALL: [IntentKind; 3] = [
        IntentKind::Declared,
        IntentKind::ObservedEdit,
        IntentKind::Worktree,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            IntentKind::Declared => "declared",
            IntentKind::ObservedEdit => "observed",
            IntentKind::Worktree => "worktree",
        }
    }
}

/// Status of a contract: proposed, then accepted or rejected once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContractStatus {
    /// Waiting for another session's answer.
    Proposed,
    /// Accepted: `check_contracts` guards it.
    Accepted,
    /// Rejected.
    Rejected,
}

impl ContractStatus {
    /// Every status.
    pub const ALL: [ContractStatus; 3] = [
        ContractStatus::Proposed,
        ContractStatus::Accepted,
        ContractStatus::Rejected,
    ];

    /// The protocol's spelling (`"proposed"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ContractStatus::Proposed => "proposed",
            ContractStatus::Accepted => "accepted",
            ContractStatus::Rejected => "rejected",
        }
    }
}

/// A status string that is not one of the record's statuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown status {0:?}")]
pub struct UnknownStatus(pub String);

macro_rules! status_conversions {
    ($ty:ty) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = UnknownStatus;

            /// Exact, case-sensitive match of the protocol's spelling.
            fn from_str(s: &str) -> Result<Self, UnknownStatus> {
                <$ty>::ALL
                    .into_iter()
                    .find(|status| status.as_str() == s)
                    .ok_or_else(|| UnknownStatus(s.to_owned()))
            }
        }

        impl ToSql for $ty {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.as_str()))
            }
        }

        impl FromSql for $ty {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                value
                    .as_str()?
                    .parse()
                    .map_err(|e: UnknownStatus| FromSqlError::Other(Box::new(e)))
            }
        }
    };
}

status_conversions!(IntentStatus);
status_conversions!(ContractStatus);
status_conversions!(IntentKind);

/// A declared intent as stored and reported. `files` and `symbols` keep the protocol's
/// record shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    /// UUID.
    pub id: String,
    /// Declaring session.
    pub session_id: String,
    /// Free text.
    pub description: String,
    /// Normalised files, comma-delimited with leading and trailing commas: `,a.ts,b.ts,`.
    pub files: String,
    /// The declared symbol names as a JSON array string: `["f","C.m"]`.
    pub symbols: String,
    /// Smallest start of the first listed file that is not file-level, if any.
    pub start_byte: Option<i64>,
    /// Largest end of that file's ranges, if any.
    pub end_byte: Option<i64>,
    /// Current status.
    pub status: IntentStatus,
    /// Declaration time.
    pub declared_at_ms: i64,
    /// Last status change (equals `declared_at_ms` until the first update).
    pub updated_at_ms: i64,
    /// The changed lines of an observed intent's file (docs/protocol.md 13.1), sorted and
    /// merged; `None` for declared intents and file-level observed ones.
    pub regions: Option<Vec<LineRegion>>,
    /// Declared, or observed (and how).
    pub kind: IntentKind,
}

/// Lines `start_line..=end_line` (1-based) of a file's current text: one region of observed
/// work (docs/protocol.md 13.1). With `end_line == start_line - 1` it holds no line: it is the
/// *point* after line `end_line` (13.4: a pure insertion, a pure deletion's region).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineRegion {
    /// First line, 1-based.
    pub start_line: i64,
    /// Last line, inclusive.
    pub end_line: i64,
}

impl LineRegion {
    /// The region of lines `start_line..=end_line`.
    pub fn new(start_line: i64, end_line: i64) -> LineRegion {
        LineRegion {
            start_line,
            end_line,
        }
    }

    /// The point after line `line` (0: before the first line), `{line + 1, line}`.
    pub fn point_after(line: i64) -> LineRegion {
        LineRegion::new(line + 1, line)
    }

    /// Whether the region is a point between two lines (it holds no line).
    pub fn is_point(&self) -> bool {
        self.end_line < self.start_line
    }
}

/// Regions as a backend stores them: a compact JSON array of `[start, end]` pairs.
pub fn encode_regions(regions: Option<&[LineRegion]>) -> Option<String> {
    regions.map(|regions| {
        let pairs: Vec<[i64; 2]> = regions.iter().map(|r| [r.start_line, r.end_line]).collect();
        serde_json::to_string(&pairs).unwrap_or_else(|_| "[]".to_owned())
    })
}

/// Regions read back from [`encode_regions`]' form (`None` for NULL; malformed text, which no
/// backend writes, reads as no regions).
pub fn decode_regions(stored: Option<&str>) -> Option<Vec<LineRegion>> {
    stored.map(|text| {
        serde_json::from_str::<Vec<[i64; 2]>>(text)
            .unwrap_or_default()
            .into_iter()
            .map(|[start, end]| LineRegion::new(start, end))
            .collect()
    })
}

/// One region an intent covers in one file: a byte range `[start, end)`, or the whole file
/// (`range == None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentRange {
    /// Normalised file path.
    pub file: String,
    /// `Some((start, end))`, end exclusive; `None` = file-level.
    pub range: Option<(i64, i64)>,
}

/// A signature contract on one symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    /// UUID.
    pub id: String,
    /// Proposing session.
    pub proposer_session_id: String,
    /// Normalised `file:name`.
    pub symbol_path: String,
    /// The file part of `symbol_path`.
    pub file: String,
    /// The name part of `symbol_path` (possibly qualified, `Class.method`).
    pub name: String,
    /// The signature captured at proposal time.
    pub signature: String,
    /// Current status.
    pub status: ContractStatus,
    /// The session that accepted or rejected it.
    pub responder_session_id: Option<String>,
    /// Proposal time.
    pub proposed_at_ms: i64,
    /// Response time.
    pub responded_at_ms: Option<i64>,
}

/// A row of the `sessions` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    /// The session id.
    pub session_id: String,
    /// The registered pid, while the session has one.
    pub pid: Option<i64>,
    /// That process's start stamp ([`crate::platform::process::ProcessInfo::start`]: clock
    /// ticks since boot on Linux, seconds since the epoch elsewhere; -1 when the table could
    /// not tell at registration).
    pub pid_start: Option<i64>,
    /// The registered lease, while the session has one.
    pub lease_ms: Option<i64>,
    /// When the session was first seen.
    pub first_seen_ms: i64,
    /// Its last sighting as last flushed (the daemon keeps newer ones in memory).
    pub last_seen_ms: i64,
    /// When it ended or was reaped; `None` while it is a session.
    pub ended_at_ms: Option<i64>,
    /// The host the pid lives on (`None` for rows written before hosts were recorded: the
    /// daemon's own host).
    pub host_id: Option<String>,
    /// The root of the worktree it last acted from (docs/protocol.md 14.3).
    pub worktree: Option<String>,
}

/// One session as `session.list` needs it: its row (if any), registration and counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session id.
    pub session_id: String,
    /// Registered name.
    pub name: Option<String>,
    /// Registered agent id.
    pub agent_id: Option<i64>,
    /// Registered pid.
    pub pid: Option<i64>,
    /// The pid's process start time.
    pub pid_start: Option<i64>,
    /// Registered lease.
    pub lease_ms: Option<i64>,
    /// Last sighting as stored.
    pub last_seen_ms: i64,
    /// When it ended, if it did.
    pub ended_at_ms: Option<i64>,
    /// Live locks.
    pub locks: i64,
    /// Declared and active intents.
    pub intents: i64,
    /// First appearance (the order of the list).
    pub first_seen_ms: i64,
    /// The host its pid lives on.
    pub host_id: Option<String>,
    /// The root of the worktree it last acted from (docs/protocol.md 14.3).
    pub worktree: Option<String>,
}

/// A stored event (docs/protocol.md 9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Sequence number: increasing, never reused.
    pub seq: i64,
    /// When (unix ms).
    pub at_ms: i64,
    /// The type (`lock.acquired`, ...).
    pub kind: String,
    /// The session the change belongs to.
    pub session_id: Option<String>,
    /// Symbol path, intent id, contract id or session id.
    pub subject: String,
    /// The rest of the change, a JSON object as text.
    pub data: String,
}

/// An event about to be appended.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent<'a> {
    /// The type (`lock.acquired`, ...).
    pub kind: &'static str,
    /// The session the change belongs to.
    pub session_id: Option<&'a str>,
    /// Symbol path, intent id, contract id or session id.
    pub subject: &'a str,
    /// The rest of the change (a JSON object).
    pub data: serde_json::Value,
}

/// Filters of [`IntentsRead::intents`](super::IntentsRead::intents); each given one is applied literally.
#[derive(Debug, Clone, Copy, Default)]
pub struct IntentFilter<'a> {
    /// Only intents of this session.
    pub session_id: Option<&'a str>,
    /// Only intents whose file list contains exactly this (normalised) file.
    pub file: Option<&'a str>,
    /// Only this status; `None` means declared and active.
    pub status: Option<IntentStatus>,
}

/// A live range of another session's intent in one file, as overlap detection needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeHit {
    /// Creation order of the intent (the tie-breaker of `declared_at_ms`).
    pub intent_seq: i64,
    /// The intent's UUID.
    pub intent_id: String,
    /// Its session.
    pub session_id: String,
    /// Its description.
    pub description: String,
    /// Its declaration time.
    pub declared_at_ms: i64,
    /// The byte range, `None` when the intent is file-level in this file or has regions.
    pub range: Option<(i64, i64)>,
    /// The intent's regions (observed work, docs/protocol.md 13.1): with them, the intent
    /// covers these lines of the file rather than the whole file.
    pub regions: Option<Vec<LineRegion>>,
}

/// What [`EventsRead::events_after`](super::EventsRead::events_after) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPage {
    /// The events, oldest first.
    pub events: Vec<Event>,
    /// The newest `seq` in the table when the page was read (0 when it is empty).
    pub newest_seq: i64,
    /// The oldest `seq` still kept, if any.
    pub oldest_seq: Option<i64>,
}

/// A queued `lock.acquire` that waits (docs/protocol.md 8), as the store keeps it: the queue
/// order is shared by every daemon on the store; the reply channel stays with the daemon that
/// took the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaiterRow {
    /// Its id; ids grow with arrival, so they are the queue order.
    pub id: i64,
    /// The normalised symbol path it waits for.
    pub symbol_path: String,
    /// The waiting session.
    pub session_id: String,
    /// The lifetime of the lock it asks for.
    pub ttl_ms: i64,
    /// The daemon holding the request's connection.
    pub daemon_id: String,
    /// Callers of the symbol (for the caller warnings of the grant), as a JSON array.
    pub callers: String,
    /// When it was queued.
    pub queued_at_ms: i64,
    /// The grant, once another daemon handed the lock over (serialised for its daemon).
    pub granted: Option<String>,
}

/// One waiting lock request as `lock.waits` shows it
/// ([`super::WaitersRead::lock_waits`]): who waits, for what, since when, and who holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockWait {
    /// The normalised symbol path it waits for.
    pub symbol_path: String,
    /// The waiting session.
    pub session_id: String,
    /// When it was queued (Unix milliseconds).
    pub since_ms: i64,
    /// The session holding the live lock on the symbol, if any.
    pub holder: Option<String>,
}

/// A lock request to queue ([`super::WaitersWrite::insert_waiter`]).
#[derive(Debug, Clone, Copy)]
pub struct NewWaiter<'a> {
    /// The normalised symbol path.
    pub symbol_path: &'a str,
    /// The waiting session.
    pub session_id: &'a str,
    /// The lifetime of the lock it asks for.
    pub ttl_ms: i64,
    /// The daemon that holds the request.
    pub daemon_id: &'a str,
    /// Callers of the symbol, as a JSON array.
    pub callers: &'a str,
    /// Now.
    pub queued_at_ms: i64,
}

/// A daemon's heartbeat (docs/protocol.md 12.3).
#[derive(Debug, Clone, Copy)]
pub struct DaemonBeat<'a> {
    /// The daemon's id (random per run).
    pub daemon_id: &'a str,
    /// The host it runs on.
    pub host_id: &'a str,
    /// Its process id.
    pub pid: i64,
    /// When it started.
    pub started_at_ms: i64,
    /// Now.
    pub now_ms: i64,
}
