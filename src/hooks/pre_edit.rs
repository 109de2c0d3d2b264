//! `wit hook pre-edit --agent claude|codex|gemini|cursor|copilot|opencode`: the edit gate's
//! shared flow.
//!
//! payload (the harness adapter reads it) → the files and their changes → one
//! `edit.preflight` per file (`record` as the policy says) → each conflict and violation
//! weighed by the `[gate]` policy → a verdict → the harness's own answer on stdout, exit 0.
//!
//! The gate fails open, fast: a payload it cannot read, a file outside the repository or in
//! a language wit does not know, a repository without `.wit/`, a broken policy file, an edit
//! whose old text is not in the file, or no answer by the deadline (1 s in all: reading the
//! payload, daemon auto-start and the calls, [`super::hook_input`]) lets the edit through,
//! with a note on stderr where something is wrong. It never panics and never exits non-zero.
//! On a session's first contact it gives the session its pulse ([`HarnessSession`]).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use futures_util::future::join_all;
use serde_json::Value;

use super::harness_session::HarnessSession;
pub use super::hook_input::find_root;
use super::hook_input::{self, hook_session, relative_path, working_dir, Deadline};
use super::policy::{self, Action, Policy};
use super::{claude, cline, codex, copilot, cursor, gemini, kiro, opencode, windsurf};
use crate::cli::agent_config::Agent;
use crate::cli::contracts::is_supported_path;
use crate::cli::duration::format_left;
use crate::cli::output::Report;
use crate::doorway::{self, clock, Doorway, Failure, Unavailable};
use crate::protocol::{
    ConflictItem, EditPreflightParams, EditPreflightParamsEditsItem, EditPreflightResult,
    RelatedItem, SessionRecord, Violation,
};

pub use super::hook_input::PayloadError;

/// A file edit the harness is about to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditRequest {
    /// The harness's session id for the editing agent, when the payload has one.
    pub session: Option<String>,
    /// The harness's working directory, when the payload has one.
    pub cwd: Option<PathBuf>,
    /// The files and their changes, in the order of the tool call.
    pub files: Vec<FileChange>,
}

/// One file's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The path as the harness gave it (absolute, or relative to its directory).
    pub path: String,
    /// What changes.
    pub change: Change,
}

/// What an edit does to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Find-and-replace edits, applied in order.
    Edits(Vec<TextEdit>),
    /// The whole new content (empty: the file is deleted).
    Content(String),
}

/// One find-and-replace edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    /// The text replaced (must occur once unless `replace_all`).
    pub old_text: String,
    /// Its replacement.
    pub new_text: String,
    /// Replace every occurrence.
    pub replace_all: bool,
}

/// What the gate answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing against the edit (a warning may go along).
    Allow,
    /// A person should decide.
    Ask,
    /// Refused.
    Deny,
}

/// The gate's answer, before a harness's adapter shapes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The decision.
    pub decision: Decision,
    /// For deny and ask: one actionable line per finding.
    pub reason: Option<String>,
    /// Warnings for the agent (policy `warn`).
    pub context: Option<String>,
}

impl Verdict {
    /// Nothing to say.
    pub fn allow() -> Self {
        Self {
            decision: Decision::Allow,
            reason: None,
            context: None,
        }
    }

    /// The reason as a refusal for harnesses without an "ask" answer: an ask becomes a deny
    /// whose reason asks the agent to get the person's go-ahead.
    pub fn refusal(&self) -> String {
        let reason = self.reason.as_deref().unwrap_or_default();
        match self.decision {
            Decision::Ask => format!(
                "{reason} (wit asks for a person's go-ahead: ask the user before making this edit)"
            ),
            _ => reason.to_string(),
        }
    }
}

/// Runs the gate for `agent` on the payload on stdin; always exit code 0.
pub fn run(agent: Agent, repo: Option<&Path>, session_flag: Option<&str>) -> Report {
    let deadline = Deadline::from_env(Instant::now());
    let mut notes = Vec::new();
    let payload = hook_input::read_payload(deadline).map(|payload| normalise(agent, payload));
    // A shell tool's call goes to the shell gate (it answers in the same harness's shape).
    if let Some(request) = payload.as_ref().ok().and_then(super::shell::shell_request) {
        return super::shell::run(agent, request, repo, session_flag, deadline);
    }
    // Gemini CLI shows hook context to the model only after the tool ran (AfterTool): the
    // same command answers there with what the gate kept for it.
    if let (Agent::Gemini, Ok(payload)) = (agent, &payload) {
        if let Some(delivered) = gemini::after_tool(payload, repo) {
            return raw_answer(Some(delivered));
        }
    }
    let verdict = gate(agent, &payload, repo, session_flag, deadline, &mut notes);
    if let (Agent::Gemini, Ok(payload)) = (agent, &payload) {
        gemini::keep_for_after_tool(payload, repo, &verdict);
    }
    let mut report = report(agent, &verdict);
    for note in notes {
        report = report.with_note(note);
    }
    report
}

/// The payload of a harness whose shape is its own (Cline, Windsurf, Kiro) in the shape the
/// shared gate and the shell gate read (`{session_id, cwd, tool_name, tool_input}`); every
/// other harness's as it is.
pub fn normalise(agent: Agent, payload: Value) -> Value {
    match agent {
        Agent::Cline => cline::normalise(&payload).unwrap_or(payload),
        Agent::Windsurf => windsurf::normalise(&payload).unwrap_or(payload),
        Agent::Kiro => kiro::normalise(&payload),
        _ => payload,
    }
}

/// What the gate prints and exits with for `verdict`: the harness's answer on stdout, or
/// (Windsurf, Kiro) an exit code that blocks and the reason on stderr.
pub fn report(agent: Agent, verdict: &Verdict) -> Report {
    match agent {
        Agent::Windsurf => windsurf::report(verdict),
        Agent::Kiro => kiro::report(verdict),
        _ => raw_answer(answer(agent, verdict)),
    }
}

/// The harness's answer as one JSON line, or nothing.
fn raw_answer(answer: Option<Value>) -> Report {
    match answer {
        Some(value) => {
            let mut bytes = value.to_string().into_bytes();
            bytes.push(b'\n');
            Report::raw(bytes)
        }
        None => Report::nothing(),
    }
}

/// The harness's answer for `verdict`.
pub fn answer(agent: Agent, verdict: &Verdict) -> Option<Value> {
    match agent {
        Agent::Claude => claude::answer(verdict),
        Agent::Codex => codex::answer(verdict),
        Agent::Gemini => gemini::answer(verdict),
        Agent::Cursor => cursor::answer(verdict),
        Agent::Copilot => copilot::answer(verdict),
        Agent::Opencode => opencode::answer(verdict),
        Agent::Cline => cline::answer(verdict),
        // They answer by exit code ([`report`]).
        Agent::Windsurf | Agent::Kiro => None,
    }
}

/// Reads the harness's payload for `agent`; `Ok(None)` when the tool is not a file edit.
pub fn parse(agent: Agent, payload: &Value) -> Result<Option<EditRequest>, PayloadError> {
    match agent {
        Agent::Claude => claude::parse(payload),
        Agent::Codex => codex::parse(payload),
        Agent::Gemini => gemini::parse(payload),
        Agent::Cursor => cursor::parse(payload),
        Agent::Copilot => copilot::parse(payload),
        Agent::Opencode => opencode::parse(payload),
        Agent::Cline => cline::parse(payload),
        Agent::Windsurf => windsurf::parse(payload),
        Agent::Kiro => kiro::parse(payload),
    }
}

fn allowed(note: &str) -> String {
    format!("wit: {note}; edit allowed")
}

fn gate(
    agent: Agent,
    payload: &Result<Value, PayloadError>,
    repo: Option<&Path>,
    session_flag: Option<&str>,
    deadline: Deadline,
    notes: &mut Vec<String>,
) -> Verdict {
    let parsed = match payload {
        Ok(payload) => parse(agent, payload),
        Err(PayloadError::TimedOut(budget)) => Err(PayloadError::TimedOut(*budget)),
        Err(error) => Err(PayloadError::Shape(error.to_string())),
    };
    let request = match parsed {
        Ok(Some(request)) => request,
        Ok(None) => return Verdict::allow(),
        Err(error @ PayloadError::TimedOut(_)) => {
            notes.push(allowed(&error.to_string()));
            return Verdict::allow();
        }
        Err(error) => {
            notes.push(allowed(&format!(
                "unreadable {} hook payload ({error})",
                agent.name()
            )));
            return Verdict::allow();
        }
    };
    let Some(cwd) = working_dir(request.cwd.clone()) else {
        return Verdict::allow();
    };
    let Some(root) = find_root(repo, &cwd) else {
        return Verdict::allow();
    };
    let Some(paths) = hook_input::gated_paths(&root) else {
        return Verdict::allow();
    };
    let policy = match policy::load(&root) {
        Ok((policy, _)) => policy,
        Err(error) => {
            notes.push(allowed(&format!("gate policy ignored ({error})")));
            return Verdict::allow();
        }
    };
    let files: Vec<(String, Change)> = request
        .files
        .into_iter()
        .filter_map(|file| {
            let relative = relative_path(&root, &cwd, &file.path)?;
            is_supported_path(&relative).then_some((relative, file.change))
        })
        .collect();
    if files.is_empty() {
        return Verdict::allow();
    }
    let Some(session) = hook_session(session_flag, request.session.as_deref(), &paths) else {
        notes.push(allowed("no session id"));
        return Verdict::allow();
    };
    let doorway = deadline.doorway(paths.clone(), doorway::autostart_from_env());
    let names: Vec<(String, Vec<String>)> = files
        .iter()
        .map(|(file, change)| {
            let texts = match change {
                Change::Edits(edits) => edits.iter().map(|e| e.new_text.clone()).collect(),
                Change::Content(content) => vec![content.clone()],
            };
            (file.clone(), texts)
        })
        .collect();
    let checked = doorway::block_on(async {
        let checked = check(&doorway, &session, files, policy).await;
        // The call's window (15.2): what it writes is this session's, warned or not.
        if matches!(&checked, Ok((verdict, _)) if verdict.decision == Decision::Allow) {
            super::windows::open(&doorway, &paths, &session, "edit", &names).await;
        }
        // The harness's pulse, once per session; the verdict does not wait on its failure.
        let mut state = HarnessSession::load(&paths, &session);
        if let Ok(true) = state
            .ensure_pulse(&doorway, crate::harness::harness_pid(), agent.name())
            .await
        {
            state.save(&paths);
        }
        checked
    })
    .unwrap_or_else(|error| {
        Err(Failure::Unavailable(Unavailable::StartFailed {
            reason: format!("cannot start the async runtime: {error}"),
        }))
    });
    match checked {
        Ok((verdict, file_notes)) => {
            notes.extend(file_notes);
            verdict
        }
        Err(error) => {
            let text = error.to_string();
            let first = text.lines().next().unwrap_or_default();
            notes.push(allowed(&format!("edit not checked ({first})")));
            Verdict::allow()
        }
    }
}

/// One preflight per file, then the verdict; notes for the files that could not be checked.
async fn check(
    doorway: &Doorway,
    session: &str,
    files: Vec<(String, Change)>,
    policy: Policy,
) -> Result<(Verdict, Vec<String>), Failure> {
    // One file: the daemon records it only when it is clean, which is exactly when the gate
    // lets it through. Several files (a patch): a clean file must not be recorded when
    // another one stops the whole call, so they are checked first and recorded after.
    let record_now = policy.record && files.len() == 1;
    let mut params: Vec<EditPreflightParams> = files
        .into_iter()
        .map(|(file, change)| preflight_params(session, file, change, record_now))
        .collect();
    // The files of a patch are checked at once, each on a connection of its own.
    let answers = join_all(params.iter().map(|params| checked(doorway, params))).await;
    let mut results = Vec::with_capacity(params.len());
    for (params, answer) in params.iter().zip(answers) {
        results.push((params.file.clone(), answer?));
    }
    let needs_names = results.iter().any(|(_, r)| {
        r.conflicts.iter().any(|c| match c {
            ConflictItem::IntentOverlap { .. } => policy.intents != Action::Off,
            ConflictItem::LockIntersection { .. } => policy.locks != Action::Off,
            ConflictItem::DepChain { .. } => false,
        }) || (!r.related.is_empty() && policy.related != Action::Off)
    });
    // Names make the reason readable; without them the ids still say who.
    let sessions = if needs_names {
        doorway
            .call(|client| async move { client.session_list().await })
            .await
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    // The agent's other sessions (registered with the same process) are the agent itself:
    // the daemon's conflict rules leave their work out (coord::conflicts).
    let (verdict, notes) = decide(&results, &policy, &sessions, clock::now_ms());
    if policy.record && !record_now && verdict.decision == Decision::Allow {
        for (params, (_, result)) in params.iter_mut().zip(&results) {
            if result.applies && result.conflicts.is_empty() && result.violations.is_empty() {
                params.record = Some(true);
            }
        }
        let clean = params.iter().filter(|params| params.record == Some(true));
        let recorded = join_all(clean.map(|params| preflight(doorway, params))).await;
        for answer in recorded {
            answer?;
        }
    }
    Ok((verdict, notes))
}

/// One `edit.preflight` through the doorway.
async fn preflight(
    doorway: &Doorway,
    params: &EditPreflightParams,
) -> Result<EditPreflightResult, Failure> {
    doorway
        .call(|client| {
            let params = params.clone();
            async move { client.edit_preflight(params).await }
        })
        .await
}

/// One file's preflight; an edit whose old text occurs several times, at every occurrence.
async fn checked(
    doorway: &Doorway,
    params: &EditPreflightParams,
) -> Result<EditPreflightResult, Failure> {
    let result = preflight(doorway, params).await?;
    if result.applies {
        return Ok(result);
    }
    Ok(every_occurrence(doorway, params).await?.unwrap_or(result))
}

/// An edit whose old text occurs several times is checked at every occurrence: the same
/// edits with `replaceAll`. `None` when there is nothing to widen (the first answer stands).
async fn every_occurrence(
    doorway: &Doorway,
    params: &EditPreflightParams,
) -> Result<Option<EditPreflightResult>, Failure> {
    if params
        .edits
        .iter()
        .all(|edit| edit.replace_all == Some(true))
    {
        return Ok(None);
    }
    let mut widened = params.clone();
    for edit in &mut widened.edits {
        edit.replace_all = Some(true);
    }
    let result = preflight(doorway, &widened).await?;
    Ok(result.applies.then_some(result))
}

fn preflight_params(
    session: &str,
    file: String,
    change: Change,
    record: bool,
) -> EditPreflightParams {
    let (edits, content) = match change {
        Change::Edits(edits) => (
            edits
                .into_iter()
                .map(|edit| EditPreflightParamsEditsItem {
                    old_text: edit.old_text,
                    new_text: edit.new_text,
                    replace_all: edit.replace_all.then_some(true),
                })
                .collect(),
            None,
        ),
        Change::Content(content) => (Vec::new(), Some(content)),
    };
    EditPreflightParams {
        session_id: session.to_string(),
        file,
        edits,
        content,
        record: Some(record),
    }
}

/// Weighs every finding of `results` by `policy` (pure: the unit tests drive it); `related`
/// is context (warn or off), never a reason to stop the edit.
pub fn decide(
    results: &[(String, EditPreflightResult)],
    policy: &Policy,
    sessions: &[SessionRecord],
    now_ms: i64,
) -> (Verdict, Vec<String>) {
    let by_id: HashMap<&str, &SessionRecord> = sessions
        .iter()
        .map(|s| (s.session_id.as_str(), s))
        .collect();
    let mut findings: Vec<(Action, String)> = Vec::new();
    let mut notes = Vec::new();
    for (file, result) in results {
        if !result.applies {
            notes.push(format!(
                "wit: {file}: edit not checked ({}); edit allowed",
                result.reason.as_deref().unwrap_or("it does not apply")
            ));
            continue;
        }
        for conflict in &result.conflicts {
            match conflict {
                ConflictItem::LockIntersection {
                    symbol_path,
                    held_by,
                    expires_at,
                } => findings.push((
                    policy.locks,
                    lock_line(symbol_path, held_by, expires_at, &by_id, now_ms),
                )),
                ConflictItem::IntentOverlap {
                    overlapping_intent_id,
                    overlapping_session_id,
                    description,
                } => findings.push((
                    policy.intents,
                    intent_line(
                        file,
                        overlapping_intent_id,
                        overlapping_session_id,
                        description,
                        &by_id,
                    ),
                )),
                ConflictItem::DepChain { .. } => {}
            }
        }
        for violation in &result.violations {
            findings.push((policy.contracts, contract_line(violation)));
        }
        if policy.related != Action::Off {
            for related in &result.related {
                findings.push((Action::Warn, related_line(related, &by_id)));
            }
        }
    }
    let worst = findings
        .iter()
        .map(|(action, _)| *action)
        .max()
        .unwrap_or(Action::Off);
    let join = |wanted: &dyn Fn(Action) -> bool| {
        let lines: Vec<&str> = findings
            .iter()
            .filter(|(action, _)| wanted(*action))
            .map(|(_, line)| line.as_str())
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    };
    let decision = match worst {
        Action::Deny => Decision::Deny,
        Action::Ask => Decision::Ask,
        Action::Warn | Action::Off => Decision::Allow,
    };
    let verdict = Verdict {
        decision,
        reason: join(&|action| action >= Action::Ask),
        context: join(&|action| action == Action::Warn),
    };
    (verdict, notes)
}

/// `name (session <id>, live)`, or `session <id>` for an unregistered session. The id is
/// given in full: the agent needs all of it to wait for the holder, look it up or tell a
/// person (issue 20.10).
fn who(session_id: &str, by_id: &HashMap<&str, &SessionRecord>) -> String {
    match by_id.get(session_id) {
        Some(record) => {
            let state = if record.live { "live" } else { "ended" };
            match &record.name {
                Some(name) => format!("{name} (session {session_id}, {state})"),
                None => format!("session {session_id} ({state})"),
            }
        }
        None => format!("session {session_id}"),
    }
}

/// `HH:MM` (UTC) of unix milliseconds.
fn clock(ms: i64) -> String {
    let minutes = ms.div_euclid(60_000);
    format!(
        "{:02}:{:02} UTC",
        minutes.div_euclid(60).rem_euclid(24),
        minutes.rem_euclid(60)
    )
}

fn lock_line(
    symbol_path: &str,
    held_by: &str,
    expires_at: &str,
    by_id: &HashMap<&str, &SessionRecord>,
    now_ms: i64,
) -> String {
    let holder = who(held_by, by_id);
    let mut line = format!("{symbol_path} is locked by {holder}");
    match clock::parse_iso_ms(expires_at) {
        Some(at) => {
            let left = at - now_ms;
            // The time left, rounded down to minutes, and one more: a margin for the turn.
            let wait_minutes = left.max(0) / 60_000 + 1;
            let _ = write!(
                line,
                " until {} ({} left): wait with `wit lock {symbol_path} --wait {wait_minutes}m`, or change something else",
                clock(at),
                format_left(left)
            );
        }
        None => {
            let _ = write!(
                line,
                ": wait with `wit lock {symbol_path} --wait 10m`, or change something else"
            );
        }
    }
    line
}

fn intent_line(
    file: &str,
    intent_id: &str,
    session_id: &str,
    description: &str,
    by_id: &HashMap<&str, &SessionRecord>,
) -> String {
    let description: String = description.chars().take(120).collect();
    format!(
        "{file}: this edit overlaps intent {intent_id} (\"{description}\") of {}: coordinate with them, or keep clear of that code",
        who(session_id, by_id)
    )
}

/// One line of context for a `related` item (docs/protocol.md 13.5).
fn related_line(related: &RelatedItem, by_id: &HashMap<&str, &SessionRecord>) -> String {
    match related {
        RelatedItem::SameSymbol {
            symbol_path,
            session_id,
            intent_id,
        } => format!(
            "note: {} also works in {symbol_path} (intent {intent_id}), on other lines: not a collision; keep clear of their lines",
            who(session_id, by_id)
        ),
        RelatedItem::Coupled {
            symbol_path,
            other_symbol,
            relation,
            session_id,
            intent_id,
        } => format!(
            "note: {symbol_path} {relation} {other_symbol}, where {} works (intent {intent_id}): not a collision; check that both changes fit",
            who(session_id, by_id)
        ),
    }
}

fn contract_line(violation: &Violation) -> String {
    format!(
        "{} would break accepted contract {}: the agreed signature is `{}`, the edit makes it `{}`: restore the signature, or propose a new contract (`wit contract propose {}`) and wait for its acceptance",
        violation.symbol_path,
        violation.contract_id,
        violation.expected,
        violation.actual,
        violation.symbol_path
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn result(conflicts: Vec<ConflictItem>, violations: Vec<Violation>) -> EditPreflightResult {
        EditPreflightResult {
            applies: true,
            reason: None,
            symbols: vec!["src/auth.ts:validateToken".into()],
            conflicts,
            violations,
            related: Vec::new(),
        }
    }

    fn lock() -> ConflictItem {
        ConflictItem::LockIntersection {
            symbol_path: "src/auth.ts:validateToken".into(),
            held_by: "7f3a9c2e-1111-2222-3333-444455556666".into(),
            expires_at: "2026-01-15T10:42:00.000Z".into(),
        }
    }

    fn intent() -> ConflictItem {
        ConflictItem::IntentOverlap {
            overlapping_intent_id: "i-1".into(),
            overlapping_session_id: "bob".into(),
            description: "Audit log".into(),
        }
    }

    fn violation() -> Violation {
        Violation {
            contract_id: "c-1".into(),
            symbol_path: "src/auth.ts:validateToken".into(),
            expected: "(token: string): boolean".into(),
            actual: "(): boolean".into(),
        }
    }

    fn sessions() -> Vec<SessionRecord> {
        vec![SessionRecord {
            agent_id: None,
            intents: 0,
            last_seen_at: 0,
            live: true,
            pid_unknown: None,
            locks: 1,
            name: Some("claude-backend".into()),
            pid: None,
            session_id: "7f3a9c2e-1111-2222-3333-444455556666".into(),
            worktree: None,
            branch: None,
        }]
    }

    // 10:33:00 UTC on the lock's day: 9 minutes left.
    const NOW: i64 = 1_768_473_180_000;

    #[test]
    fn a_lock_denies_with_one_actionable_line() {
        let results = vec![("src/auth.ts".to_string(), result(vec![lock()], vec![]))];
        let (verdict, notes) = decide(&results, &Policy::default(), &sessions(), NOW);
        assert!(notes.is_empty());
        assert_eq!(verdict.decision, Decision::Deny);
        assert_eq!(
            verdict.reason.as_deref(),
            Some(
                "src/auth.ts:validateToken is locked by claude-backend \
                 (session 7f3a9c2e-1111-2222-3333-444455556666, live) \
                 until 10:42 UTC (9m 00s left): wait with `wit lock src/auth.ts:validateToken --wait 10m`, \
                 or change something else"
            )
        );
        assert_eq!(verdict.context, None);
    }

    #[test]
    fn policies_weigh_each_kind() {
        let results = vec![(
            "src/auth.ts".to_string(),
            result(vec![intent(), lock()], vec![violation()]),
        )];
        let (verdict, _) = decide(&results, &Policy::default(), &[], NOW);
        assert_eq!(verdict.decision, Decision::Deny);
        let reason = verdict.reason.unwrap();
        assert_eq!(reason.lines().count(), 2, "{reason}");
        assert!(
            reason.contains("would break accepted contract c-1"),
            "{reason}"
        );
        assert!(reason.contains("`(token: string): boolean`"), "{reason}");
        assert!(verdict
            .context
            .unwrap()
            .contains("overlaps intent i-1 (\"Audit log\") of session bob:"));

        let relaxed = Policy {
            locks: Action::Ask,
            intents: Action::Off,
            contracts: Action::Warn,
            record: true,
            related: Action::Warn,
            git: Action::Deny,
            unowned: Action::Warn,
        };
        let (verdict, _) = decide(&results, &relaxed, &[], NOW);
        assert_eq!(verdict.decision, Decision::Ask);
        assert!(verdict.reason.unwrap().contains("is locked by"));
        let context = verdict.context.unwrap();
        assert!(
            context.contains("contract") && !context.contains("intent"),
            "{context}"
        );

        let off = Policy {
            locks: Action::Off,
            intents: Action::Off,
            contracts: Action::Off,
            record: true,
            related: Action::Warn,
            git: Action::Deny,
            unowned: Action::Warn,
        };
        assert_eq!(decide(&results, &off, &[], NOW).0, Verdict::allow());
    }

    #[test]
    fn related_is_context_and_never_stops_an_edit() {
        let mut with_related = result(vec![], vec![]);
        with_related.related = vec![RelatedItem::SameSymbol {
            symbol_path: "src/auth.ts:validateToken".into(),
            session_id: "bob".into(),
            intent_id: "i-1".into(),
        }];
        let results = vec![("src/auth.ts".to_string(), with_related)];
        let strict = Policy {
            locks: Action::Deny,
            intents: Action::Deny,
            contracts: Action::Deny,
            record: true,
            related: Action::Warn,
            git: Action::Deny,
            unowned: Action::Warn,
        };
        let (verdict, _) = decide(&results, &strict, &[], NOW);
        assert_eq!(verdict.decision, Decision::Allow);
        let context = verdict.context.unwrap();
        assert!(
            context.contains("also works in src/auth.ts:validateToken"),
            "{context}"
        );
        let quiet = Policy {
            related: Action::Off,
            ..strict
        };
        assert_eq!(decide(&results, &quiet, &[], NOW).0, Verdict::allow());
    }

    #[test]
    fn an_edit_that_does_not_apply_is_allowed_with_a_note() {
        let mut missing = result(vec![lock()], vec![]);
        missing.applies = false;
        missing.reason = Some("oldText not found".into());
        let (verdict, notes) = decide(
            &[("a.ts".to_string(), missing)],
            &Policy::default(),
            &[],
            NOW,
        );
        assert_eq!(verdict, Verdict::allow());
        assert!(notes[0].contains("oldText not found"), "{notes:?}");
    }
}
