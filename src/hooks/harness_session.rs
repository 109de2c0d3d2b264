//! A harness session as the hooks see it: what they remember about it between two hook runs
//! (a small file per session, `.wit/harness/<session>.json`), and its pulse.
//!
//! The pulse (issue 22.4): on first contact the hook registers the harness's session with the
//! harness's pid ([`crate::harness::harness_pid`], docs/protocol.md 7.1), so the daemon reaps it
//! (locks released, observed work abandoned) within seconds of the harness exiting. A session
//! that already has a pulse (the Claude plugin's SessionStart, a `wit register --pid`) is left
//! as it is; its registered name is kept.
//!
//! The file also holds the news hook's cursor in the event log and what it last told the
//! agent (see [`super::post_tool`]): state of one harness session, kept by the hook process
//! that outlives nothing, so it lives on disk next to the daemon's socket rather than in the
//! daemon (which would need a protocol method for it).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::daemon::paths::WitPaths;
use crate::doorway::{Doorway, Failure};
use crate::protocol::RegisterParams;

/// What the hooks remember about one harness session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HarnessSession {
    /// The session id.
    pub session_id: String,
    /// The harness pid the session's pulse was settled for (registered, or found already
    /// registered with a pid).
    pub pulse_pid: Option<i64>,
    /// The news hook's cursor: the `next` of its last `events.poll`.
    pub cursor: Option<i64>,
    /// News found again on every call while it is true (an expiry, a waiter) already told,
    /// by key, with when (unix ms): each piece of news is told once. News from events needs
    /// no such record: the cursor reads each event once.
    pub told: BTreeMap<String, i64>,
    /// When each topic last had a line (unix ms): one line per topic per five minutes.
    pub topics: BTreeMap<String, i64>,
    /// News waiting for its topic's next line, by topic.
    pub pending: BTreeMap<String, Vec<Waiting>>,
    /// How much more news arrived for a topic whose waiting list was full: counted in its
    /// next line, not kept.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub more: BTreeMap<String, usize>,
    /// The names of the named sessions as the news hook knows them: one `session.list`
    /// taken when news first needed a name, kept current since by the `session.registered`
    /// events of each poll (a name is given only by `register`). `None`: not taken yet, or
    /// to be taken again because a poll may have missed a registration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub names: Option<BTreeMap<String, String>>,
}

/// A piece of news waiting for its topic's next line. Whether its actor is one of the agent's
/// own sessions (never news to it) is asked only when the line is due, of the files it is
/// about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "WaitingForm")]
pub struct Waiting {
    /// What makes it the same piece of news next time (told once).
    pub key: String,
    /// The other session it is about, named at the start of the text when told (`None`: the
    /// agent's own news, such as an expiry).
    pub actor: Option<String>,
    /// The files it is about.
    pub files: Vec<String>,
    /// What to tell (after the actor's name when there is one).
    pub text: String,
}

/// The forms a waiting piece of news is read in: this one, or the `[key, text]` of state
/// files written before news named its actor (told as they were written).
#[derive(Deserialize)]
#[serde(untagged)]
enum WaitingForm {
    Current {
        key: String,
        actor: Option<String>,
        files: Vec<String>,
        text: String,
    },
    Older(String, String),
}

impl From<WaitingForm> for Waiting {
    fn from(form: WaitingForm) -> Self {
        match form {
            WaitingForm::Current {
                key,
                actor,
                files,
                text,
            } => Waiting {
                key,
                actor,
                files,
                text,
            },
            WaitingForm::Older(key, text) => Waiting {
                key,
                actor: None,
                files: Vec::new(),
                text,
            },
        }
    }
}

/// The file of `session_id`'s state.
fn state_file(paths: &WitPaths, session_id: &str) -> PathBuf {
    paths
        .dir
        .join("harness")
        .join(format!("{}.json", file_key(session_id)))
}

/// A file name for a session id: its safe characters (at most 64), then a stable hash of the
/// whole id (FNV-1a, 64 bits), so that no two ids share a file in practice and none escapes
/// the directory.
fn file_key(session_id: &str) -> String {
    let safe: String = session_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(64)
        .collect();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in session_id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{safe}-{hash:016x}")
}

impl HarnessSession {
    /// The remembered state of `session_id` (empty when there is none or it does not read).
    pub fn load(paths: &WitPaths, session_id: &str) -> Self {
        fs::read(state_file(paths, session_id))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Self>(&bytes).ok())
            .filter(|state| state.session_id == session_id)
            .unwrap_or_else(|| Self {
                session_id: session_id.to_string(),
                ..Self::default()
            })
    }

    /// Writes the state (aside, then put in place: a reader never sees half of it, nor no
    /// file; [`crate::platform::replace`]). Failures are ignored: the state only saves calls
    /// and repetition, and a file emptied by a power loss reads as a new session's.
    pub fn save(&self, paths: &WitPaths) {
        let file = state_file(paths, &self.session_id);
        let Some(dir) = file.parent() else {
            return;
        };
        if fs::create_dir_all(dir).is_err() {
            return;
        }
        let Ok(bytes) = serde_json::to_vec(self) else {
            return;
        };
        let aside = file.with_extension(format!("json.{}.tmp", std::process::id()));
        let written = fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&aside)
            .and_then(|mut out| out.write_all(&bytes));
        if written
            .and_then(|()| crate::platform::replace::replace(&aside, &file))
            .is_err()
        {
            let _ = fs::remove_file(&aside);
        }
    }

    /// Gives the session its pulse on first contact: registers it with `harness` (the
    /// harness's pid) under `name`, unless the daemon already knows it with a pid. Returns
    /// whether the state changed (then it should be saved).
    pub async fn ensure_pulse(
        &mut self,
        doorway: &Doorway,
        harness: Option<i64>,
        name: &str,
    ) -> Result<bool, Failure> {
        let Some(harness) = harness else {
            return Ok(false);
        };
        if self.pulse_pid == Some(harness) {
            return Ok(false);
        }
        let sessions = doorway
            .call(|client| async move { client.session_list().await })
            .await?;
        let known = sessions
            .iter()
            .find(|s| s.session_id == self.session_id && s.live);
        if known.and_then(|s| s.pid).is_none() {
            let params = RegisterParams {
                name: known
                    .and_then(|s| s.name.clone())
                    .unwrap_or_else(|| name.to_string()),
                session_id: self.session_id.clone(),
                pid: Some(harness),
                lease_ms: None,
            };
            doorway
                .call(|client| {
                    let params = params.clone();
                    async move { client.register(params).await.map(|_| ()) }
                })
                .await?;
        }
        self.pulse_pid = Some(harness);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn state_round_trips_and_ids_stay_inside_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let paths = WitPaths::for_root(dir.path());
        let id = "../../etc/passwd";
        let mut state = HarnessSession::load(&paths, id);
        assert_eq!(state.cursor, None);
        state.cursor = Some(41);
        state.told.insert("k".into(), 5);
        state.save(&paths);
        assert_eq!(HarnessSession::load(&paths, id), state);
        let files: Vec<_> = fs::read_dir(paths.dir.join("harness"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(files[0].starts_with("etcpasswd-"), "{files:?}");
        assert_ne!(file_key("a/b"), file_key("ab"));
    }
}
