//! `wit hook post-tool --agent claude|codex|gemini|cursor`: news at the next tool call.
//!
//! Nothing can push into a running agent on every harness, but each runs a hook after every
//! tool call (Claude Code and Codex `PostToolUse`, Gemini CLI `AfterTool`, Cursor
//! `postToolUse`) whose answer may carry context for the model. This hook tells the agent
//! what changed for it since its last tool call, one line per topic:
//!
//! - `expiry`: a lock of its session expires within a minute;
//! - `collision`: another session declared, or was observed doing, work on a file the agent
//!   declared, edits (its observed work) or holds a lock in, on the same symbols (or the
//!   whole file);
//! - `contract`: a contract on a symbol of such a file was proposed, or rejected;
//! - `waiter`: another session waits for a lock of its session (`lock.waits`): who, on
//!   which symbol, for how long.
//!
//! Each piece of news is told once; a topic gets at most one line per five minutes (news
//! that arrives meanwhile waits for the next line of its topic; expiry and waiter news waits
//! only while it is still true: [`super::news_queue`]); nothing at all when nothing
//! changed. The hook never starts a daemon and never gets in the way: past its deadline, or
//! on any failure, it says nothing (exit 0).
//!
//! Where "since the last tool call" starts: the `next` of the session's last `events.poll`,
//! kept with what it told in the harness session's small state file under `.wit/harness/`
//! ([`HarnessSession`]). The hook is a fresh process each time, so the cursor must outlive it;
//! a file beside the daemon's socket costs a read and a rename (well under a millisecond),
//! survives daemon restarts (event `seq`s are never reused), and needs no protocol method of
//! its own, which keeping it in the daemon would.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};

use super::harness_session::{HarnessSession, Waiting};
use super::hook_input::{self, find_root, hook_session, working_dir, Deadline};
use super::news_queue;
use crate::cli::agent_config::Agent;
use crate::cli::output::Report;
use crate::cli::owners::OwnerView;
use crate::client::Batch;
use crate::daemon::paths::WitPaths;
use crate::doorway::{self, clock, Doorway, Failure};
use crate::protocol::{
    EventRecord, EventRecordType, EventsPollParams, EventsPollParamsTypesItem, IntentQueryParams,
    IntentRecord, LockQueryParams, LockRecord, LockWait, SessionRecord,
};

/// How close to its expiry a lock is news.
pub const EXPIRY_WARNING_MS: i64 = 60_000;

/// The most events read per tool call.
const POLL_LIMIT: i64 = 1000;

/// The most sessions' names kept in the state file past a registration: every harness
/// session registers under its agent's name, and ended ones are never told apart here, so
/// a registration that takes the names past this drops them, to be taken anew from
/// `session.list` (which lists the sessions there are now).
const MAX_NAMES_KEPT: usize = 256;

/// What a piece of news is about; one line per topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Topic {
    /// A lock of the session expires soon.
    Expiry,
    /// Another session started work that meets the session's.
    Collision,
    /// A contract on the session's code was proposed or rejected.
    Contract,
    /// Another session waits for a lock the session holds.
    Waiter,
}

impl Topic {
    /// The topic's name in the state file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Expiry => "expiry",
            Self::Collision => "collision",
            Self::Contract => "contract",
            Self::Waiter => "waiter",
        }
    }

    /// The heading of its line.
    pub(super) fn heading(self) -> &'static str {
        match self {
            Self::Expiry => "your lock expires soon",
            Self::Collision => "another agent started work that meets yours",
            Self::Contract => "a contract on code you work on changed",
            Self::Waiter => "someone waits for your lock",
        }
    }

    /// Whether its news is found again on every call while it is true (so news that is no
    /// longer true is dropped rather than told late).
    pub(super) fn found_each_time(self) -> bool {
        matches!(self, Self::Expiry | Self::Waiter)
    }
}

/// One piece of news, and its topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Its topic.
    pub topic: Topic,
    /// What it is, as it waits for its topic's line.
    pub news: Waiting,
}

/// What the session works on: its locks and open intents, and who waits for its locks.
#[derive(Debug, Default)]
pub struct Work {
    /// Its live locks.
    pub locks: Vec<LockRecord>,
    /// Its declared and active intents.
    pub intents: Vec<IntentRecord>,
    /// The waits for locks (`lock.waits`): [`news`] tells those for the session's own.
    pub waiters: Vec<LockWait>,
}

impl Work {
    /// Per file, the symbols worked on (`None`: the whole file).
    fn files(&self) -> BTreeMap<String, Option<BTreeSet<String>>> {
        let mut files: BTreeMap<String, Option<BTreeSet<String>>> = BTreeMap::new();
        for intent in &self.intents {
            let symbols = symbol_names(&intent.symbols);
            for file in intent.files.split(',').filter(|f| !f.is_empty()) {
                merge(&mut files, file, &symbols);
            }
        }
        for lock in &self.locks {
            if let Some((file, symbol)) = lock.symbol_path.split_once(':') {
                merge(&mut files, file, &[symbol.to_string()]);
            }
        }
        files
    }
}

fn merge(files: &mut BTreeMap<String, Option<BTreeSet<String>>>, file: &str, symbols: &[String]) {
    let entry = files
        .entry(file.to_string())
        .or_insert_with(|| Some(BTreeSet::new()));
    match (entry.as_mut(), symbols.is_empty()) {
        (Some(_), true) => *entry = None,
        (Some(known), false) => known.extend(symbols.iter().cloned()),
        (None, _) => {}
    }
}

/// `"[\"f\",\"C.m\"]"` → `["f", "C.m"]`; `C.m` also counts as `C` (work in a method is work
/// in its class).
fn symbol_names(json: &str) -> Vec<String> {
    let names: Vec<String> = serde_json::from_str(json).unwrap_or_default();
    let mut all = names.clone();
    for name in &names {
        let mut rest = name.as_str();
        while let Some((outer, _)) = rest.rsplit_once('.') {
            all.push(outer.to_string());
            rest = outer;
        }
    }
    all
}

/// The news in `events` and `work` for `session` at `now_ms`, before the same-agent rule
/// (asked when it is told: [`super::news_queue`]).
pub fn news(session: &str, work: &Work, events: &[EventRecord], now_ms: i64) -> Vec<Item> {
    let mut items = Vec::new();
    for lock in &work.locks {
        if lock.ttl_remaining_ms > 0 && lock.ttl_remaining_ms <= EXPIRY_WARNING_MS {
            items.push(Item {
                topic: Topic::Expiry,
                news: Waiting {
                    key: format!("expiry:{}:{}", lock.symbol_path, lock.expires_at),
                    actor: None,
                    files: Vec::new(),
                    text: format!(
                        "your lock on {} expires in {}: lock it again to extend it (`wit lock {} --ttl 20m`), or release it when done",
                        lock.symbol_path,
                        clock::format_left(lock.ttl_remaining_ms),
                        lock.symbol_path
                    ),
                },
            });
        }
    }
    for wait in &work.waiters {
        let theirs = wait.session_id.as_str();
        if wait.holder.as_deref() != Some(session) || theirs == session {
            continue;
        }
        items.push(Item {
            topic: Topic::Waiter,
            news: Waiting {
                key: format!("waiter:{}:{theirs}:{}", wait.symbol_path, wait.since),
                actor: Some(theirs.to_owned()),
                files: wait
                    .symbol_path
                    .split_once(':')
                    .map(|(file, _)| vec![file.to_owned()])
                    .unwrap_or_default(),
                text: format!(
                    "waits for your lock on {} (for {} s): release it when done (`wit release {}`)",
                    wait.symbol_path,
                    (now_ms - wait.since).max(0) / 1000,
                    wait.symbol_path
                ),
            },
        });
    }
    let files = work.files();
    for event in events {
        let Some(actor) = event.session_id.as_deref() else {
            continue;
        };
        if actor == session {
            continue;
        }
        let strings = |key: &str| -> Vec<String> {
            event
                .data
                .get(key)
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let text_of = |key: &str| {
            event
                .data
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        match event.type_ {
            EventRecordType::IntentDeclared => {
                let theirs: Vec<String> = strings("symbols");
                let met: Vec<String> = strings("files")
                    .into_iter()
                    .filter(|file| match files.get(file) {
                        None => false,
                        Some(None) => true,
                        Some(Some(mine)) => {
                            theirs.is_empty() || theirs.iter().any(|s| mine.contains(s))
                        }
                    })
                    .collect();
                if met.is_empty() {
                    continue;
                }
                let what = if theirs.is_empty() {
                    met.join(", ")
                } else {
                    format!("{} ({})", met.join(", "), theirs.join(", "))
                };
                let description: String = text_of("description").chars().take(80).collect();
                items.push(Item {
                    topic: Topic::Collision,
                    news: Waiting {
                        key: format!("collision:{}", event.subject),
                        actor: Some(actor.to_owned()),
                        files: met,
                        text: format!(
                            "works on {what}, which you work on too: \"{description}\" (intent {}): coordinate, or keep clear of that code",
                            event.subject
                        ),
                    },
                });
            }
            EventRecordType::ContractProposed | EventRecordType::ContractResponded => {
                let symbol = text_of("symbolPath");
                let Some((file, _)) = symbol.split_once(':') else {
                    continue;
                };
                if !files.contains_key(file) {
                    continue;
                }
                let (key, text) = if event.type_ == EventRecordType::ContractProposed {
                    (
                        format!("contract:{}:proposed", event.subject),
                        format!(
                            "proposed contract {} on {symbol}: `{}`: accept or reject it (`wit contract accept|reject {}`), and keep that signature meanwhile",
                            event.subject,
                            text_of("signature"),
                            event.subject
                        ),
                    )
                } else if text_of("status") == "rejected" {
                    (
                        format!("contract:{}:rejected", event.subject),
                        format!(
                            "rejected contract {} on {symbol}: its signature is not agreed",
                            event.subject
                        ),
                    )
                } else {
                    continue;
                };
                items.push(Item {
                    topic: Topic::Contract,
                    news: Waiting {
                        key,
                        actor: Some(actor.to_owned()),
                        files: vec![file.to_owned()],
                        text,
                    },
                });
            }
            _ => {}
        }
    }
    items
}

/// The harness's answer carrying `context` for the model.
pub fn answer(agent: Agent, context: &str) -> Value {
    match agent {
        Agent::Claude | Agent::Codex => json!({"hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": context,
        }}),
        Agent::Gemini => json!({"hookSpecificOutput": {
            "hookEventName": "AfterTool",
            "additionalContext": context,
        }}),
        Agent::Cursor => json!({ "additional_context": context }),
        // Neither wires the news hook (`wit init` does not): Copilot CLI reads nothing a
        // postToolUse hook answers, and OpenCode's plugin appends to the tool's output itself.
        Agent::Copilot | Agent::Opencode => json!({ "additionalContext": context }),
        // Cline adds `contextModification` to the conversation.
        Agent::Cline => json!({ "cancel": false, "contextModification": context }),
        // Kiro and Windsurf read a post hook's stdout as text (Kiro gives it to the model).
        Agent::Kiro | Agent::Windsurf => json!(context),
    }
}

/// The payload's session id and working directory, whatever the harness (`session_id`,
/// Cursor's `conversation_id`; `cwd`, Cursor's first `workspace_roots`).
fn envelope(payload: &Value) -> (Option<String>, Option<PathBuf>) {
    let text = |key: &str| payload.get(key).and_then(Value::as_str);
    let session = text("session_id")
        .or_else(|| text("conversation_id"))
        .or_else(|| text("sessionId"))
        .map(str::to_string);
    let cwd = hook_input::payload_cwd(payload).map(PathBuf::from);
    (session, cwd)
}

/// Runs the news hook for `agent` on the payload on stdin; always exit code 0.
pub fn run(agent: Agent, repo: Option<&Path>, session_flag: Option<&str>) -> Report {
    let deadline = Deadline::from_env(Instant::now());
    match told(agent, repo, session_flag, deadline) {
        Some(context) => {
            let mut bytes = answer(agent, &context).to_string().into_bytes();
            bytes.push(b'\n');
            Report::raw(bytes)
        }
        None => Report::nothing(),
    }
}

/// What to tell, if anything.
fn told(
    agent: Agent,
    repo: Option<&Path>,
    session_flag: Option<&str>,
    deadline: Deadline,
) -> Option<String> {
    let payload = super::pre_edit::normalise(agent, hook_input::read_payload(deadline).ok()?);
    let (harness_session, cwd) = envelope(&payload);
    let cwd = working_dir(cwd)?;
    let root = find_root(repo, &cwd)?;
    let paths = WitPaths::for_root(&root);
    // News needs a running daemon; the hook never starts one.
    if !paths.socket.exists() {
        return None;
    }
    let session = hook_session(session_flag, harness_session.as_deref(), &paths)?;
    // The news hook never starts a daemon.
    let doorway = deadline.doorway(paths.clone(), false);
    let mut state = HarnessSession::load(&paths, &session);
    let loaded = state.clone();
    let lines = doorway::block_on(async {
        // The call's window closes (15.2: the daemon takes in what it wrote first) while the
        // news is gathered: the hook waits for the slower of the two, not for both.
        let closed = super::windows::close(&doorway, &paths, &session);
        let (_, lines) = tokio::join!(closed, gather(&doorway, &session, agent, &mut state));
        lines
    })
    .ok()?
    .ok()?;
    // Written only when it changed (a quiet call leaves it as it was): replacing the file
    // by a rename makes ext4 write the new one out first.
    if state != loaded {
        state.save(&paths);
    }
    (!lines.is_empty()).then(|| {
        format!(
            "wit news since your last tool call:\n- {}",
            lines.join("\n- ")
        )
    })
}

/// Polls the events since the cursor and the session's work, moves the cursor, and returns
/// the lines to tell now. One round of requests (the events, the session's locks and its
/// intents at once); a second only when the session holds locks (who waits for them), and
/// one when a line about other sessions is due (the same-agent rule, and the names once).
async fn gather(
    doorway: &Doorway,
    session: &str,
    agent: Agent,
    state: &mut HarnessSession,
) -> Result<Vec<String>, Failure> {
    let since = state.cursor;
    // One request on one connection: a connection costs the hook and the daemon more than
    // these three quick reads.
    let mut batch = Batch::new();
    let poll = batch.events_poll(&EventsPollParams {
        since,
        limit: Some(POLL_LIMIT),
        types: vec![
            EventsPollParamsTypesItem::IntentDeclared,
            EventsPollParamsTypesItem::ContractProposed,
            EventsPollParamsTypesItem::ContractResponded,
            EventsPollParamsTypesItem::SessionRegistered,
        ],
        wait_ms: None,
    });
    let mine = Some(session.to_string());
    let locks = batch.lock_query(&LockQueryParams {
        session_id: mine.clone(),
    });
    let intents = batch.intent_query(&IntentQueryParams {
        session_id: mine,
        file: None,
        status: None,
    });
    let mut answers = doorway.send(&batch).await?;
    let polled = answers.take(poll);
    let locks = answers.take(locks);
    let intents = answers.take(intents);
    let polled = polled?;
    let complete = !polled.gap && i64::try_from(polled.events.len()).is_ok_and(|n| n < POLL_LIMIT);
    let polled_events = take_registrations(&mut state.names, polled.events, complete);
    // The first call only sets the cursor: history is not news.
    let events = if since.is_some() {
        polled_events
    } else {
        Vec::new()
    };
    state.cursor = Some(polled.next);
    let locks = locks?;
    // Who waits for the session's locks (nothing to ask without locks; a daemon without
    // `lock.waits` tells no such news).
    let waiters = if locks.is_empty() {
        Vec::new()
    } else {
        doorway
            .call(|client| async move { client.lock_waits().await })
            .await
            .unwrap_or_default()
    };
    let work = Work {
        locks,
        intents: intents?,
        waiters,
    };
    let now = clock::now_ms();
    news_queue::enqueue(state, news(session, &work, &events, now), now);
    let mut same_agent = HashSet::new();
    if let Some(files) = news_queue::due_files(state, now) {
        // Which of the actors are this agent is the daemon's one rule: the owners of the
        // lines it counts as the caller's (`work.changes`, on the files the news is about).
        let view = doorway.call(|client| {
            let files = files.clone();
            async move { OwnerView::load(&client, Some(session), &files).await }
        });
        // The names, once: the polls keep them current after that.
        let need_names = state.names.is_none();
        let sessions = async {
            if need_names {
                Some(
                    doorway
                        .call(|client| async move { client.session_list().await })
                        .await,
                )
            } else {
                None
            }
        };
        let (view, sessions) = tokio::join!(view, sessions);
        same_agent = view.map(|v| v.same_agent(session)).unwrap_or_default();
        if let Some(Ok(sessions)) = sessions {
            state.names = Some(named(&sessions));
        }
    }
    // The names are lent to the telling, which writes the rest of the state.
    let names = state.names.take();
    let lines = news_queue::tell(state, now, &same_agent, names.as_ref());
    state.names = names;
    // The harness's pulse, once per session (the news does not wait on its failure).
    let _ = state
        .ensure_pulse(doorway, crate::harness::harness_pid(), agent.name())
        .await;
    Ok(lines)
}

/// The named sessions of a `session.list`: id → name.
fn named(sessions: &[SessionRecord]) -> BTreeMap<String, String> {
    sessions
        .iter()
        .filter_map(|record| Some((record.session_id.clone(), record.name.clone()?)))
        .collect()
}

/// Takes the `session.registered` events out of a poll's `events` (they are never news) and
/// keeps `names` current with them, in order: a registration names its session, anew each
/// time. When the poll is not `complete` (events were lost to retention, or more came than
/// one poll reads), a registration may have been missed, so `names` is dropped, to be taken
/// again when next needed; so it is when a registration takes it past [`MAX_NAMES_KEPT`].
fn take_registrations(
    names: &mut Option<BTreeMap<String, String>>,
    events: Vec<EventRecord>,
    complete: bool,
) -> Vec<EventRecord> {
    if !complete {
        *names = None;
    }
    let mut news = Vec::with_capacity(events.len());
    for event in events {
        if event.type_ != EventRecordType::SessionRegistered {
            news.push(event);
            continue;
        }
        let (Some(known), Some(id)) = (names.as_mut(), event.session_id.as_deref()) else {
            continue;
        };
        match event.data.get("name").and_then(Value::as_str) {
            Some(name) => known.insert(id.to_owned(), name.to_owned()),
            None => known.remove(id),
        };
        if known.len() > MAX_NAMES_KEPT {
            *names = None;
        }
    }
    news
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn event(type_: EventRecordType, session: &str, subject: &str, data: Value) -> EventRecord {
        EventRecord {
            at: 0,
            data: data.as_object().cloned().unwrap_or_default(),
            seq: 1,
            session_id: Some(session.into()),
            subject: subject.into(),
            type_,
        }
    }

    #[test]
    fn registrations_keep_the_names_and_are_never_news() {
        let registered = |who: &str, name: &str| {
            event(
                EventRecordType::SessionRegistered,
                who,
                who,
                json!({"name": name}),
            )
        };
        let declared = event(EventRecordType::IntentDeclared, "bob", "i1", json!({}));
        // Not taken yet: registrations are dropped, the rest kept in order.
        let mut names = None;
        let kept = take_registrations(
            &mut names,
            vec![registered("bob", "Bob"), declared.clone()],
            true,
        );
        assert_eq!(kept, vec![declared.clone()]);
        assert_eq!(names, None);
        // Taken: each registration names its session, the later one winning.
        let mut names = Some(BTreeMap::from([("bob".to_string(), "Bob".to_string())]));
        let kept = take_registrations(
            &mut names,
            vec![
                registered("carol", "Carol"),
                declared.clone(),
                registered("bob", "Robert"),
            ],
            true,
        );
        assert_eq!(kept, vec![declared.clone()]);
        let expected = BTreeMap::from([
            ("bob".to_string(), "Robert".to_string()),
            ("carol".to_string(), "Carol".to_string()),
        ]);
        assert_eq!(names, Some(expected));
        // A poll that may have missed one drops them all, to be taken again.
        take_registrations(&mut names, vec![registered("dave", "Dave")], false);
        assert_eq!(names, None);
        // So does a registration past the bound (the ended sessions' names go with them).
        let ids: Vec<String> = (0..=MAX_NAMES_KEPT).map(|n| format!("s{n}")).collect();
        let mut names = Some(BTreeMap::new());
        let (last, first) = ids.split_last().unwrap();
        take_registrations(
            &mut names,
            first.iter().map(|id| registered(id, id)).collect(),
            true,
        );
        assert_eq!(names.as_ref().map(BTreeMap::len), Some(MAX_NAMES_KEPT));
        take_registrations(&mut names, vec![registered(last, last)], true);
        assert_eq!(names, None);
    }

    #[test]
    fn work_meets_work_on_the_same_symbols_or_the_whole_file() {
        let work = Work {
            locks: Vec::new(),
            intents: vec![IntentRecord {
                intent_id: "mine".into(),
                session_id: "me".into(),
                description: "edit".into(),
                files: ",a.ts,".into(),
                symbols: "[\"C.m\"]".into(),
                start_byte: None,
                end_byte: None,
                status: crate::protocol::IntentRecordStatus::Active,
                declared_at: 0,
                updated_at: 0,
                regions: Vec::new(),
            }],
            waiters: Vec::new(),
        };
        let declared = |session: &str, symbols: Value| {
            event(
                EventRecordType::IntentDeclared,
                session,
                "i-2",
                json!({"files": ["a.ts"], "symbols": symbols, "description": "x"}),
            )
        };
        let found = |events: &[EventRecord]| news("me", &work, events, 0);
        let class = found(&[declared("bob", json!(["C"]))]);
        assert_eq!(class.len(), 1, "the class");
        assert_eq!(class[0].news.actor.as_deref(), Some("bob"));
        assert_eq!(class[0].news.files, vec!["a.ts".to_string()]);
        assert_eq!(found(&[declared("bob", json!([]))]).len(), 1, "the file");
        assert_eq!(found(&[declared("bob", json!(["D"]))]).len(), 0);
        assert_eq!(found(&[declared("me", json!(["C"]))]).len(), 0, "its own");
        let accepted = event(
            EventRecordType::ContractResponded,
            "bob",
            "c-1",
            json!({"symbolPath": "a.ts:C.m", "status": "accepted"}),
        );
        let rejected = event(
            EventRecordType::ContractResponded,
            "bob",
            "c-1",
            json!({"symbolPath": "a.ts:C.m", "status": "rejected"}),
        );
        assert_eq!(found(&[accepted]).len(), 0);
        assert_eq!(found(&[rejected]).len(), 1);
    }

    #[test]
    fn a_wait_for_the_sessions_lock_is_news_with_who_and_how_long() {
        let wait = |session: &str, holder: Option<&str>| LockWait {
            symbol_path: "a.ts:f".into(),
            session_id: session.into(),
            since: 1_000,
            holder: holder.map(str::to_owned),
        };
        let work = Work {
            waiters: vec![
                wait("bob", Some("me")),
                wait("mcp", Some("me")),
                wait("carol", Some("dave")),
                wait("erin", None),
            ],
            ..Work::default()
        };
        let names = BTreeMap::from([("bob".to_string(), "Bob".to_string())]);
        let same = HashSet::from(["mcp".to_string()]);
        let items = news("me", &work, &[], 43_500);
        let mut state = HarnessSession::default();
        news_queue::enqueue(&mut state, items.clone(), 43_500);
        let lines = news_queue::tell(&mut state, 43_500, &same, Some(&names));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(
                "someone waits for your lock: Bob (session bob) waits for your lock on a.ts:f (for 42 s)"
            ),
            "{lines:?}"
        );
        assert!(!lines[0].contains("mcp"), "{lines:?}");
        // Once it is no longer true it is dropped, not told late.
        let mut state = HarnessSession::default();
        state.topics.insert("waiter".into(), 0);
        news_queue::enqueue(&mut state, items, 1);
        assert!(news_queue::tell(&mut state, 1, &same, Some(&names)).is_empty());
        news_queue::enqueue(&mut state, Vec::new(), news_queue::TOPIC_WINDOW_MS);
        let later = news_queue::tell(&mut state, news_queue::TOPIC_WINDOW_MS, &same, Some(&names));
        assert!(later.is_empty());
    }

    #[test]
    fn each_harness_gets_its_own_answer_shape() {
        assert_eq!(
            answer(Agent::Claude, "n")["hookSpecificOutput"]["additionalContext"],
            "n"
        );
        assert_eq!(
            answer(Agent::Gemini, "n")["hookSpecificOutput"]["hookEventName"],
            "AfterTool"
        );
        assert_eq!(answer(Agent::Cursor, "n")["additional_context"], "n");
    }
}
