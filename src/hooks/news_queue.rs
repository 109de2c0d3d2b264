//! When the news hook tells what ([`super::post_tool`]): news not told before waits in its
//! topic's list in the session's state (at most [`WAITING_KEPT`] pieces, the rest counted); a
//! topic whose last line is at least [`TOPIC_WINDOW_MS`] old gets one line with everything
//! waiting. Expiry and waiter news waits only while it is still true (it is found again each
//! time), and only it is remembered as told: the cursor reads each event once.
//!
//! News about another session is told only if that session is not one of the agent's own
//! (the daemon's same-agent rule, asked through `work.changes` of the files the news is
//! about). The rule is asked when a line is due ([`due_files`]), not when the news arrives:
//! most news arrives while its topic's window is closed, and a call that tells nothing needs
//! no second round of requests. News whose actor turns out to be the agent's own is dropped
//! then, untold.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::harness_session::{HarnessSession, Waiting};
use super::post_tool::{Item, Topic};

/// At most one line per topic in this window.
pub const TOPIC_WINDOW_MS: i64 = 5 * 60_000;

/// How long a told piece of news is remembered (longer than any lock or event it names
/// stays news).
const TOLD_KEPT_MS: i64 = 24 * 60 * 60_000;

/// The most items one line names; the rest are counted.
const ITEMS_PER_LINE: usize = 3;

/// The most pieces of news a topic keeps waiting; more are only counted (and asked no
/// same-agent rule): the state file is read and written on every call, and its line names
/// three.
const WAITING_KEPT: usize = 32;

/// Every topic, in the order its lines are told.
const TOPICS: [Topic; 4] = [
    Topic::Expiry,
    Topic::Waiter,
    Topic::Collision,
    Topic::Contract,
];

/// Puts the news in `items` not told before on its topic's waiting list (news found each
/// time replaces what waited of its topic; past [`WAITING_KEPT`] it is counted), and forgets
/// what was told long ago.
pub fn enqueue(state: &mut HarnessSession, items: Vec<Item>, now_ms: i64) {
    state.told.retain(|_, at| now_ms - *at < TOLD_KEPT_MS);
    for topic in TOPICS.into_iter().filter(|t| t.found_each_time()) {
        state.pending.remove(topic.as_str());
        state.more.remove(topic.as_str());
    }
    for Item { topic, news } in items {
        if state.told.contains_key(&news.key) {
            continue;
        }
        let name = topic.as_str();
        let waiting = state.pending.entry(name.to_string()).or_default();
        if waiting.len() >= WAITING_KEPT {
            *state.more.entry(name.to_string()).or_default() += 1;
            continue;
        }
        if !waiting.iter().any(|w| w.key == news.key) {
            waiting.push(news);
        }
    }
}

/// The topics with a line due at `now_ms`: nothing told within the window, something waiting.
fn due(state: &HarnessSession, now_ms: i64) -> impl Iterator<Item = (Topic, &[Waiting])> {
    TOPICS.into_iter().filter_map(move |topic| {
        let name = topic.as_str();
        let open = state
            .topics
            .get(name)
            .is_none_or(|last| now_ms - *last >= TOPIC_WINDOW_MS);
        let waiting = state.pending.get(name).filter(|w| !w.is_empty())?;
        open.then_some((topic, waiting.as_slice()))
    })
}

/// Whether a line is due that tells news about other sessions, and the files that news is
/// about: where the same-agent rule must be asked before [`tell`]. `None`: nothing to ask.
pub fn due_files(state: &HarnessSession, now_ms: i64) -> Option<Vec<String>> {
    let mut files = BTreeSet::new();
    let mut others = false;
    for (_, waiting) in due(state, now_ms) {
        for news in waiting.iter().filter(|w| w.actor.is_some()) {
            others = true;
            files.extend(news.files.iter().cloned());
        }
    }
    others.then(|| files.into_iter().collect())
}

/// Tells the lines due at `now_ms`, in topic order: each due topic's waiting news but that of
/// the agent's own sessions (`same_agent`, dropped untold), its actors named from `names`
/// where known (`names`: none known yet), and what was only counted. A topic whose news was all the agent's own tells
/// nothing and keeps its window as it was. Only news found each time is remembered as told:
/// the cursor reads each event once.
pub fn tell(
    state: &mut HarnessSession,
    now_ms: i64,
    same_agent: &HashSet<String>,
    names: Option<&BTreeMap<String, String>>,
) -> Vec<String> {
    let topics: Vec<Topic> = due(state, now_ms).map(|(topic, _)| topic).collect();
    let mut lines = Vec::new();
    for topic in topics {
        let name = topic.as_str();
        let waiting: Vec<Waiting> = state
            .pending
            .remove(name)
            .unwrap_or_default()
            .into_iter()
            .filter(|w| w.actor.as_ref().is_none_or(|a| !same_agent.contains(a)))
            .collect();
        let counted = state.more.remove(name).unwrap_or_default();
        if waiting.is_empty() {
            continue;
        }
        let mut texts: Vec<String> = waiting
            .iter()
            .take(ITEMS_PER_LINE)
            .map(|w| told_text(w, names))
            .collect();
        let more = waiting.len().saturating_sub(ITEMS_PER_LINE) + counted;
        if more > 0 {
            texts.push(format!("and {more} more (`wit status`)"));
        }
        lines.push(format!("{}: {}", topic.heading(), texts.join("; ")));
        if topic.found_each_time() {
            for news in &waiting {
                state.told.insert(news.key.clone(), now_ms);
            }
        }
        state.topics.insert(name.to_string(), now_ms);
    }
    lines
}

/// A piece of news as told: its actor named (`name (session id)`, or `session id`), then its
/// text.
fn told_text(news: &Waiting, names: Option<&BTreeMap<String, String>>) -> String {
    match news.actor.as_deref() {
        Some(actor) => match names.and_then(|names| names.get(actor)) {
            Some(name) => format!("{name} (session {actor}) {}", news.text),
            None => format!("session {actor} {}", news.text),
        },
        None => news.text.clone(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn item(topic: Topic, key: &str, actor: Option<&str>) -> Item {
        Item {
            topic,
            news: Waiting {
                key: key.into(),
                actor: actor.map(str::to_owned),
                files: vec![format!("{key}.ts")],
                text: format!("text of {key}"),
            },
        }
    }

    /// [`enqueue`] then [`tell`], the agent's own sessions being `same`.
    fn release(
        state: &mut HarnessSession,
        items: Vec<Item>,
        now: i64,
        same: &[&str],
    ) -> Vec<String> {
        enqueue(state, items, now);
        let same = same.iter().map(|s| (*s).to_owned()).collect();
        tell(state, now, &same, None)
    }

    #[test]
    fn each_piece_once_and_one_line_per_topic_per_window() {
        let mut state = HarnessSession::default();
        let lines = release(
            &mut state,
            vec![
                item(Topic::Collision, "a", Some("bob")),
                item(Topic::Contract, "c", Some("bob")),
            ],
            0,
            &[],
        );
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].ends_with("session bob text of a"), "{lines:?}");
        // Told: never again (news found again each time; an event is read once).
        let waiter = || vec![item(Topic::Waiter, "w", Some("carol"))];
        assert_eq!(release(&mut state, waiter(), 500, &[]).len(), 1);
        let later = TOPIC_WINDOW_MS + 500;
        assert!(release(&mut state.clone(), waiter(), later, &[]).is_empty());
        // New news of a topic within the window waits, and comes with the next line.
        let b = vec![item(Topic::Collision, "b", Some("bob"))];
        assert!(release(&mut state, b, 2_000, &[]).is_empty());
        assert_eq!(due_files(&state, TOPIC_WINDOW_MS - 1), None);
        assert!(release(&mut state, Vec::new(), TOPIC_WINDOW_MS - 1, &[]).is_empty());
        assert_eq!(
            due_files(&state, TOPIC_WINDOW_MS),
            Some(vec!["b.ts".to_string()])
        );
        let lines = release(&mut state, Vec::new(), TOPIC_WINDOW_MS, &[]);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].ends_with("text of b"), "{lines:?}");
        // Expiry news that is no longer true is dropped, not told late.
        let mut state = HarnessSession::default();
        state.topics.insert("expiry".into(), 0);
        assert!(release(&mut state, vec![item(Topic::Expiry, "e", None)], 1, &[]).is_empty());
        assert!(release(&mut state, Vec::new(), TOPIC_WINDOW_MS, &[]).is_empty());
    }

    #[test]
    fn many_items_make_one_line() {
        let mut state = HarnessSession::default();
        let items = (0..5)
            .map(|i| item(Topic::Collision, &i.to_string(), Some("bob")))
            .collect();
        let lines = release(&mut state, items, 0, &[]);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].ends_with("and 2 more (`wit status`)"), "{lines:?}");
        assert!(state.told.is_empty(), "news from events is read once");
    }

    /// Past the kept list a topic's news is counted, and the count told with its line.
    #[test]
    fn news_past_the_kept_list_is_counted() {
        let mut state = HarnessSession::default();
        state.topics.insert("collision".into(), 0);
        let items = (0..WAITING_KEPT + 5)
            .map(|i| item(Topic::Collision, &i.to_string(), Some("bob")))
            .collect();
        assert!(release(&mut state, items, 1, &[]).is_empty());
        assert_eq!(state.pending["collision"].len(), WAITING_KEPT);
        assert_eq!(state.more["collision"], 5);
        let lines = release(&mut state, Vec::new(), TOPIC_WINDOW_MS, &[]);
        let more = WAITING_KEPT + 5 - ITEMS_PER_LINE;
        assert!(
            lines[0].ends_with(&format!("and {more} more (`wit status`)")),
            "{lines:?}"
        );
        assert!(state.more.is_empty() && state.pending.is_empty());
    }

    /// The same-agent rule is asked only when a line about others is due, and what it names
    /// is dropped then, untold, without starting the topic's window.
    #[test]
    fn the_agents_own_sessions_are_left_out_when_the_line_is_due() {
        let mut state = HarnessSession::default();
        enqueue(&mut state, vec![item(Topic::Expiry, "e", None)], 0);
        assert_eq!(
            due_files(&state, 0),
            None,
            "an expiry names no other session"
        );
        let mut state = HarnessSession::default();
        let items = vec![
            item(Topic::Collision, "mcp", Some("mcp")),
            item(Topic::Collision, "bob", Some("bob")),
        ];
        enqueue(&mut state, items, 0);
        assert_eq!(
            due_files(&state, 0),
            Some(vec!["bob.ts".to_string(), "mcp.ts".to_string()])
        );
        let names = BTreeMap::from([("bob".to_string(), "Bob".to_string())]);
        let same = HashSet::from(["mcp".to_string()]);
        let lines = tell(&mut state, 0, &same, Some(&names));
        assert_eq!(
            lines,
            vec!["another agent started work that meets yours: Bob (session bob) text of bob"]
        );
        // Only the agent's own: nothing told, the window stays open for the next news.
        let mut state = HarnessSession::default();
        let lines = release(
            &mut state,
            vec![item(Topic::Collision, "mcp", Some("mcp"))],
            0,
            &["mcp"],
        );
        assert!(lines.is_empty());
        assert!(state.topics.is_empty() && state.told.is_empty());
        let lines = release(
            &mut state,
            vec![item(Topic::Collision, "bob", Some("bob"))],
            1,
            &["mcp"],
        );
        assert_eq!(lines.len(), 1, "{lines:?}");
    }

    /// A state file written before news named its actor still reads, its waiting news told
    /// as it was written.
    #[test]
    fn waiting_news_of_an_older_state_file_reads() {
        let old =
            r#"{"sessionId":"s","pending":{"collision":[["k","Bob (session b) works on a.ts"]]}}"#;
        let mut state: HarnessSession = serde_json::from_str(old).unwrap();
        assert_eq!(state.cursor, None);
        let lines = tell(&mut state, 0, &HashSet::new(), None);
        assert_eq!(
            lines,
            vec!["another agent started work that meets yours: Bob (session b) works on a.ts"]
        );
    }
}
