//! Whose uncommitted lines are whose, seen from the asking session: the daemon's owner map
//! (docs/protocol.md 15.3, 15.7) as `work.changes {sessionId, files}` answers it, for the shell
//! gate, the pre-commit foreign-lines check, `wit commit` and the news hook.
//!
//! The CLI decides nothing about ownership itself: which owners are the caller's agent
//! (`mine`) and which stand against it (`others`) is the daemon's one rule (the same-agent
//! rule and the liveness filter, `coord::conflicts`), computed per hunk in the answer. The
//! CLI only reads it: where the hunks are ([`span_of`]), which sessions' live work a hunk
//! holds ([`OwnerView::theirs`]), and how to name them ([`Names`]).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::client::{ClientError, WitClient};
use crate::coord::ownership::is_unowned_session;
use crate::protocol::{FileChanges, IntentRecord, OwnedHunk, SessionRecord, WorkChangesParams};

/// The uncommitted changes of a worktree with their owners, seen from one session.
#[derive(Debug, Default, Clone)]
pub struct OwnerView {
    /// Per dirty file, its hunks (HEAD to the current text) with their owners.
    pub files: Vec<FileChanges>,
    /// Asked from nobody's vantage: the hunks carry no `mine` and no `others`.
    pub anonymous: bool,
}

/// One hunk holding live work of sessions that are not the caller's agent.
#[derive(Debug, Clone, Copy)]
pub struct Theirs<'a> {
    /// The file (relative to the worktree's root).
    pub file: &'a str,
    /// The file is binary: the hunk is the whole file.
    pub binary: bool,
    /// The hunk.
    pub hunk: &'a OwnedHunk,
}

impl Theirs<'_> {
    /// Where the hunk is, as a message names it.
    pub fn span(&self) -> Span {
        if self.binary {
            Span::File
        } else {
            span_of(self.hunk)
        }
    }
}

impl OwnerView {
    /// Asks the daemon for the changes of `files` (every dirty file when empty) seen from
    /// `session`; `None`: seen from nobody (every owner counts as another's, live or not).
    pub async fn load(
        client: &WitClient,
        session: Option<&str>,
        files: &[String],
    ) -> Result<Self, ClientError> {
        let answer = client
            .work_changes(WorkChangesParams {
                session_id: session.map(str::to_owned),
                files: files.to_vec(),
            })
            .await?;
        Ok(Self {
            files: answer.files,
            anonymous: session.is_none(),
        })
    }

    /// Every hunk that holds live work of another agent's session, in file order. Seen from
    /// nobody, every owned hunk.
    pub fn theirs(&self) -> Vec<Theirs<'_>> {
        let anonymous = self.anonymous;
        self.hunks_where(|hunk| {
            if anonymous {
                !hunk.session_ids.is_empty()
            } else {
                hunk.others.iter().any(|o| !is_unowned_session(o))
            }
        })
    }

    /// Every hunk that holds unowned work (lines of nobody's session, `unowned:<root>`:
    /// docs/protocol.md 15.3), in file order; seen from nobody, none (it cannot tell).
    pub fn unowned(&self) -> Vec<Theirs<'_>> {
        if self.anonymous {
            return Vec::new();
        }
        self.hunks_where(|hunk| hunk.others.iter().any(|o| is_unowned_session(o)))
    }

    /// The hunks for which `keep` holds, in file order.
    fn hunks_where(&self, keep: impl Fn(&OwnedHunk) -> bool) -> Vec<Theirs<'_>> {
        self.files
            .iter()
            .flat_map(|file| {
                file.hunks.iter().map(move |hunk| Theirs {
                    file: &file.file,
                    binary: file.binary,
                    hunk,
                })
            })
            .filter(|theirs| keep(theirs.hunk))
            .collect()
    }

    /// The sessions the daemon counts as the asker's agent among the owners it knows: the
    /// other owners of the hunks it calls `mine` that it does not list among their
    /// `others` (`me` left out). A session that owns no line here is not known to be one.
    pub fn same_agent(&self, me: &str) -> HashSet<String> {
        self.files
            .iter()
            .flat_map(|f| &f.hunks)
            .filter(|h| h.mine == Some(true))
            .flat_map(|h| h.session_ids.iter().filter(|s| !h.others.contains(s)))
            .filter(|s| s.as_str() != me)
            .cloned()
            .collect()
    }
}

/// The sessions of a hunk that stand against the asker: its live other agents' sessions, or
/// seen from nobody, all its owners.
pub fn against<'a>(theirs: &Theirs<'a>) -> Vec<&'a str> {
    if theirs.hunk.mine.is_none() {
        return theirs.hunk.session_ids.iter().map(String::as_str).collect();
    }
    theirs
        .hunk
        .others
        .iter()
        .map(String::as_str)
        .filter(|s| !is_unowned_session(s))
        .collect()
}

/// Where a hunk is in the file's current text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Span {
    /// Lines `start..=end` (1-based).
    Lines(usize, usize),
    /// Lines deleted after line `n` (0: at the top).
    DeletedAfter(usize),
    /// The whole file (a binary file's work).
    File,
}

/// The span of `hunk` in the current text (git's `-U0` numbering: a count of 0 is a point
/// after its start line).
pub fn span_of(hunk: &OwnedHunk) -> Span {
    let start = usize::try_from(hunk.new_start).unwrap_or(0);
    let count = usize::try_from(hunk.new_lines).unwrap_or(0);
    if count == 0 {
        Span::DeletedAfter(start)
    } else {
        Span::Lines(start, start + count - 1)
    }
}

/// The 1-based lines of the current text a hunk covers: its new lines, or for a pure
/// deletion the two lines where the sides now join (as `cli::hunks::Hunk::new_lines`).
pub fn covered_lines(span: Span) -> Option<(usize, usize)> {
    match span {
        Span::Lines(start, end) => Some((start, end)),
        Span::DeletedAfter(n) => Some((n.max(1), n + 1)),
        Span::File => None,
    }
}

/// The names of the sessions the daemon knows, for messages (`session.list`).
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// Every session the daemon knows.
    pub sessions: Vec<SessionRecord>,
}

impl Names {
    /// Asks the daemon (`session.list`).
    pub async fn load(client: &WitClient) -> Result<Self, ClientError> {
        Ok(Self {
            sessions: client.session_list().await?,
        })
    }

    /// `name (session 7f3a9c2e…)`, or `session 7f3a9c2e…`; unowned work `nobody's (unowned:
    /// …)`.
    pub fn who(&self, session_id: &str) -> String {
        if is_unowned_session(session_id) {
            return "nobody's session (unowned: a person's editor, a formatter or an unhooked tool)"
                .to_owned();
        }
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

/// Whether an intent is observed work as the wire tells it: the daemon records observed
/// work with regions (docs/protocol.md 13.1), and finds it by them. A file-level observed
/// intent carries none and is not told apart from a declared one here.
pub fn has_regions(intent: &IntentRecord) -> bool {
    !intent.regions.is_empty()
}

/// Other sessions' uncommitted work that something would take or drop: per session, per
/// file, where.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct AtStake {
    /// session → file → spans.
    pub by_session: BTreeMap<String, BTreeMap<String, BTreeSet<Span>>>,
}

impl AtStake {
    /// Adds `theirs` for each session standing against the asker.
    pub fn add(&mut self, theirs: &Theirs<'_>) {
        for session in against(theirs) {
            self.add_span(session, theirs.file, theirs.span());
        }
    }

    /// Adds `unowned` under its unowned session (`unowned:<root>`).
    pub fn add_unowned(&mut self, unowned: &Theirs<'_>) {
        for session in unowned.hunk.others.iter().filter(|o| is_unowned_session(o)) {
            self.add_span(session, unowned.file, unowned.span());
        }
    }

    /// Adds one span of `session`'s work on `file`.
    pub fn add_span(&mut self, session: &str, file: &str, span: Span) {
        self.by_session
            .entry(session.to_owned())
            .or_default()
            .entry(file.to_owned())
            .or_default()
            .insert(span);
    }

    /// Nothing at stake.
    pub fn is_empty(&self) -> bool {
        self.by_session.is_empty()
    }

    /// One line per session: `NAME (session …): src/a.ts (lines 3-5, 9), b.png`.
    pub fn lines(&self, names: &Names) -> Vec<String> {
        self.by_session
            .iter()
            .map(|(session, files)| {
                let files: Vec<String> = files
                    .iter()
                    .map(|(file, spans)| match describe(spans) {
                        Some(lines) => format!("{file} ({lines})"),
                        None => file.clone(),
                    })
                    .collect();
                format!("{}: {}", names.who(session), files.join(", "))
            })
            .collect()
    }

    /// The names of the sessions, for a short sentence.
    pub fn names(&self, names: &Names) -> String {
        let all: Vec<String> = self.by_session.keys().map(|s| names.who(s)).collect();
        all.join(", ")
    }
}

/// `line 4`, `lines 3-5, 9`, `lines deleted after line 7`; `None` for the whole file.
fn describe(spans: &BTreeSet<Span>) -> Option<String> {
    if spans.contains(&Span::File) {
        return None;
    }
    let mut parts = Vec::new();
    let mut lines = 0;
    for span in spans {
        match *span {
            Span::Lines(start, end) if start == end => {
                lines += 1;
                parts.push(start.to_string());
            }
            Span::Lines(start, end) => {
                lines += 2;
                parts.push(format!("{start}-{end}"));
            }
            Span::DeletedAfter(n) => parts.push(format!("lines deleted after line {n}")),
            Span::File => {}
        }
    }
    let (numbered, deleted): (Vec<String>, Vec<String>) =
        parts.into_iter().partition(|p| !p.starts_with("lines"));
    let mut out = Vec::new();
    if !numbered.is_empty() {
        let word = if lines == 1 { "line" } else { "lines" };
        out.push(format!("{word} {}", numbered.join(", ")));
    }
    out.extend(deleted);
    Some(out.join(", "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn hunk(
        start: i64,
        count: i64,
        owners: &[&str],
        mine: Option<bool>,
        others: &[&str],
    ) -> OwnedHunk {
        OwnedHunk {
            old_start: start,
            old_lines: 1,
            new_start: start,
            new_lines: count,
            session_ids: owners.iter().map(|s| s.to_string()).collect(),
            mine,
            others: others.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn view(hunks: Vec<OwnedHunk>) -> OwnerView {
        OwnerView {
            files: vec![FileChanges {
                file: "src/a.ts".into(),
                binary: false,
                hunks,
            }],
            anonymous: false,
        }
    }

    #[test]
    fn only_hunks_with_other_agents_live_work_are_theirs() {
        let seen = view(vec![
            hunk(2, 1, &["me", "mcp"], Some(true), &[]),
            hunk(5, 2, &["bob"], Some(false), &["bob"]),
            hunk(9, 0, &[], Some(false), &["unowned:/r"]),
            hunk(12, 1, &["me", "bob"], Some(true), &["bob"]),
        ]);
        let theirs = seen.theirs();
        assert_eq!(theirs.len(), 2);
        let mut stake = AtStake::default();
        for t in &theirs {
            stake.add(t);
        }
        let names = Names {
            sessions: Vec::new(),
        };
        assert_eq!(
            stake.lines(&names),
            vec!["session bob: src/a.ts (lines 5-6, 12)"]
        );
    }

    #[test]
    fn unowned_hunks_are_found_apart_and_named_as_nobodys() {
        let seen = view(vec![
            hunk(5, 2, &["bob"], Some(false), &["bob"]),
            hunk(9, 1, &[], Some(false), &["unowned:/r"]),
        ]);
        let unowned = seen.unowned();
        assert_eq!(unowned.len(), 1);
        let mut stake = AtStake::default();
        stake.add_unowned(&unowned[0]);
        let names = Names::default();
        assert_eq!(
            stake.lines(&names),
            vec!["nobody's session (unowned: a person's editor, a formatter or an unhooked tool): src/a.ts (line 9)"]
        );
        let anonymous = OwnerView {
            anonymous: true,
            ..seen
        };
        assert!(anonymous.unowned().is_empty());
    }

    #[test]
    fn seen_from_nobody_every_owner_is_anothers() {
        let mut seen = view(vec![
            hunk(3, 0, &["bob"], None, &[]),
            hunk(7, 1, &[], None, &[]),
        ]);
        seen.anonymous = true;
        let theirs = seen.theirs();
        assert_eq!(theirs.len(), 1);
        assert_eq!(against(&theirs[0]), vec!["bob"]);
        assert_eq!(theirs[0].span(), Span::DeletedAfter(3));
        assert_eq!(covered_lines(theirs[0].span()), Some((3, 4)));
        let mut stake = AtStake::default();
        stake.add(&theirs[0]);
        assert_eq!(
            stake.lines(&Names::default()),
            vec!["session bob: src/a.ts (lines deleted after line 3)"]
        );
    }
}
