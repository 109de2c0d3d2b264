//! Whose uncommitted lines are whose: the work map (PROTOCOL-NOTES 13) as `wit commit`, the
//! pre-commit check and the shell gate read it. The daemon answers which live session's
//! observed intents cover which regions of which file; git says which lines differ from the
//! commit; [`crate::cli::hunks`] matches the two.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::hooks::git::OBSERVED_EDIT;
use super::hunks::Region;
use crate::client::{ClientError, WitClient};
use crate::protocol::{IntentQueryParams, IntentRecord, SessionRecord};

/// One live session's observed work on one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Work {
    /// The session.
    pub session_id: String,
    /// Its observed intent.
    pub intent_id: String,
    /// The file (relative to the root).
    pub file: String,
    /// The symbols it touched, innermost first.
    pub symbols: Vec<String>,
    /// The lines it changed in the working text; `None`: the whole file.
    pub regions: Option<Vec<Region>>,
}

impl Work {
    /// Whether 1-based line `line` of the working text is inside this work's regions.
    pub fn covers_line(&self, line: usize) -> bool {
        match &self.regions {
            None => true,
            Some(regions) => regions.iter().any(|r| r.start <= line && line <= r.end),
        }
    }
}

/// The observed work of every live session, and the sessions.
#[derive(Debug, Default)]
pub struct WorkMap {
    /// Live sessions' observed work, one item per intent and file.
    pub work: Vec<Work>,
    /// Every session the daemon knows (names for messages).
    pub sessions: Vec<SessionRecord>,
}

impl WorkMap {
    /// Asks the daemon (`session.list`, `intent.query`).
    pub async fn load(client: &WitClient) -> Result<Self, ClientError> {
        // Both questions at once (two connections of the client's pool); the default
        // intent filter: declared and active.
        let (sessions, intents) = tokio::join!(
            client.session_list(),
            client.intent_query(IntentQueryParams {
                session_id: None,
                file: None,
                status: None,
            })
        );
        Ok(Self::from_parts(sessions?, intents?))
    }

    fn from_parts(sessions: Vec<SessionRecord>, intents: Vec<IntentRecord>) -> Self {
        let live: HashSet<&str> = sessions
            .iter()
            .filter(|s| s.live)
            .map(|s| s.session_id.as_str())
            .collect();
        let mut work = Vec::new();
        for intent in intents {
            if intent.description != OBSERVED_EDIT || !live.contains(intent.session_id.as_str()) {
                continue;
            }
            let symbols: Vec<String> = serde_json::from_str(&intent.symbols).unwrap_or_default();
            for file in intent.files.split(',').filter(|f| !f.is_empty()) {
                work.push(Work {
                    session_id: intent.session_id.clone(),
                    intent_id: intent.intent_id.clone(),
                    file: file.to_string(),
                    symbols: symbols
                        .iter()
                        .filter_map(|s| s.strip_prefix(&format!("{file}:")).or(Some(s.as_str())))
                        .map(str::to_string)
                        .collect(),
                    // No regions: file-level work (PROTOCOL-NOTES 13.1).
                    regions: (!intent.regions.is_empty()).then(|| {
                        intent
                            .regions
                            .iter()
                            .map(|r| Region {
                                start: usize::try_from(r.start_line).unwrap_or(0),
                                end: usize::try_from(r.end_line).unwrap_or(0),
                            })
                            .collect()
                    }),
                });
            }
        }
        Self { work, sessions }
    }

    /// The sessions that are `me`: the session itself and the agent's other sessions (its
    /// `wit mcp` server registers with the same harness pid).
    pub fn selves(&self, me: &str) -> HashSet<String> {
        let harness = crate::harness::harness_pid();
        let mut selves: HashSet<String> = self
            .sessions
            .iter()
            .filter(|s| s.live && s.pid.is_some() && s.pid == harness)
            .map(|s| s.session_id.clone())
            .collect();
        selves.insert(me.to_string());
        selves
    }

    /// Work of sessions other than `selves`.
    pub fn others<'a>(&'a self, selves: &'a HashSet<String>) -> impl Iterator<Item = &'a Work> {
        self.work.iter().filter(|w| !selves.contains(&w.session_id))
    }

    /// `name (session 7f3a9c2e…)`, or `session 7f3a9c2e…`.
    pub fn who(&self, session_id: &str) -> String {
        let short = short_id(session_id);
        match self
            .sessions
            .iter()
            .find(|s| s.session_id == session_id)
            .and_then(|s| s.name.as_deref())
        {
            Some(name) => format!("{name} (session {short})"),
            None => format!("session {short}"),
        }
    }
}

/// A session id cut to 8 characters when long.
pub fn short_id(id: &str) -> String {
    if id.chars().count() <= 12 {
        return id.to_string();
    }
    let head: String = id.chars().take(8).collect();
    format!("{head}…")
}

/// Other sessions' uncommitted work that something would take or drop: per session, per
/// file, the symbols.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct AtStake {
    /// session → file → symbols.
    pub by_session: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

impl AtStake {
    /// Adds `work` (all its symbols).
    pub fn add(&mut self, work: &Work) {
        self.by_session
            .entry(work.session_id.clone())
            .or_default()
            .entry(work.file.clone())
            .or_default()
            .extend(work.symbols.iter().cloned());
    }

    /// Nothing at stake.
    pub fn is_empty(&self) -> bool {
        self.by_session.is_empty()
    }

    /// One line per session: `NAME (session …): src/a.ts (f, g), src/b.ts`.
    pub fn lines(&self, map: &WorkMap) -> Vec<String> {
        self.by_session
            .iter()
            .map(|(session, files)| {
                let files: Vec<String> = files
                    .iter()
                    .map(|(file, symbols)| {
                        if symbols.is_empty() {
                            file.clone()
                        } else {
                            let names: Vec<&str> = symbols.iter().map(String::as_str).collect();
                            format!("{file} ({})", names.join(", "))
                        }
                    })
                    .collect();
                format!("{}: {}", map.who(session), files.join(", "))
            })
            .collect()
    }

    /// The names of the sessions, for a short sentence.
    pub fn names(&self, map: &WorkMap) -> String {
        let names: Vec<String> = self.by_session.keys().map(|s| map.who(s)).collect();
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::protocol::{IntentRecordStatus, LineRegion};

    fn session(id: &str, live: bool) -> SessionRecord {
        SessionRecord {
            agent_id: None,
            branch: None,
            intents: 1,
            last_seen_at: 0,
            live,
            pid_unknown: None,
            locks: 0,
            name: Some(format!("agent-{id}")),
            pid: None,
            session_id: id.into(),
            worktree: None,
        }
    }

    fn intent(id: &str, session: &str, regions: Vec<(i64, i64)>) -> IntentRecord {
        IntentRecord {
            intent_id: id.into(),
            session_id: session.into(),
            description: OBSERVED_EDIT.into(),
            files: ",src/a.ts,".into(),
            symbols: "[\"src/a.ts:f\"]".into(),
            regions: regions
                .into_iter()
                .map(|(start_line, end_line)| LineRegion {
                    start_line,
                    end_line,
                })
                .collect(),
            start_byte: None,
            end_byte: None,
            status: IntentRecordStatus::Active,
            declared_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn only_live_sessions_observed_work_counts() {
        let map = WorkMap::from_parts(
            vec![session("a", true), session("b", false)],
            vec![intent("i1", "a", vec![(2, 3)]), intent("i2", "b", vec![])],
        );
        assert_eq!(map.work.len(), 1);
        assert_eq!(map.work[0].symbols, vec!["f"]);
        assert!(map.work[0].covers_line(2) && !map.work[0].covers_line(8));
        let mut stake = AtStake::default();
        stake.add(&map.work[0]);
        assert_eq!(stake.lines(&map), vec!["agent-a (session a): src/a.ts (f)"]);
    }
}
