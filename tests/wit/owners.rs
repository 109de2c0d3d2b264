//! Owners (docs/protocol.md 15.1–15.3, 15.7, issue "Owners") end to end: every agent a stand-in
//! harness process of its own running the real hooks (`wit hook pre-edit`, then the tool's
//! write, then `wit hook post-tool`), a real daemon watching the tree, real git.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;
use crate::safegit::{answer, bash, edit, git_text, hook, shell_verdict, text, wit_cmd, wit_ok};
use wit::protocol::{
    IntentQueryParams, WorkBeginParams, WorkChangesParams, WorkEndParams, WorkOwnersParams,
};

const LIB_PY: &str = "\
def alpha(x):
    return x + 1


def beta(y):
    return y * 2


def gamma(z):
    return z - 3
";

/// A committed `src/lib.py`, hooks installed, a daemon; alice and bob registered.
fn repo_with_lib() -> (Repo, Daemon) {
    let repo = Repo::new();
    repo.write("src/lib.py", LIB_PY);
    git_text(repo.path(), &["add", "."]);
    git_text(repo.path(), &["commit", "-q", "-m", "init"]);
    let daemon = Daemon::start(&repo);
    wit_ok(&repo, "alice", &["register", "alice"]);
    wit_ok(&repo, "bob", &["register", "bob"]);
    wit_ok(&repo, "alice", &["hook", "install"]);
    (repo, daemon)
}

/// Claude Code's post-tool hook of `session` after a tool call.
fn post_tool(repo: &Repo, session: &str, tool: &str) {
    with_harness(repo, session, |stand_in| {
        post_tool_from(stand_in, repo, session, tool);
    });
}

/// Claude Code's post-tool hook of `session`, run by the harness process `stand_in`: the news
/// it told (`None`: nothing).
fn post_tool_from(
    stand_in: &mut StandIn,
    repo: &Repo,
    session: &str,
    tool: &str,
) -> Option<String> {
    let payload = json!({
        "session_id": session,
        "cwd": repo.path().display().to_string(),
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": {},
        "tool_response": {},
    })
    .to_string();
    let out = stand_in.run(&["hook", "post-tool", "--agent", "claude"], &payload, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value = answer(&out);
    value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map(str::to_owned)
}

/// The shell gate's verdict on `command` of `session`, run by the harness process
/// `stand_in`: `(decision or "", what it said)`.
fn verdict_from(
    stand_in: &mut StandIn,
    repo: &Repo,
    session: &str,
    command: &str,
) -> (String, String) {
    let payload = bash(repo, session, command).to_string();
    let out = stand_in.run(&["hook", "pre-edit", "--agent", "claude"], &payload, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value = answer(&out);
    let output = &value["hookSpecificOutput"];
    let said = output["permissionDecisionReason"]
        .as_str()
        .or(output["additionalContext"].as_str())
        .unwrap_or("")
        .to_string();
    (
        output["permissionDecision"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        format!("{said}{}", text(&out.stderr)),
    )
}

/// `session` runs `command` through its harness's Bash tool: the gate lets it through (or
/// not), the tool runs it in the repository, the post-tool hook closes the call.
fn run_bash(repo: &Repo, session: &str, command: &str) {
    let (decision, said) = shell_verdict(repo, session, command);
    assert_eq!(decision, "", "{command}: {said}");
    let status = std::process::Command::new("bash")
        .args(["-c", command])
        .current_dir(repo.path())
        .status()
        .unwrap();
    assert!(status.success(), "{command}");
    post_tool(repo, session, "Bash");
}

fn owners(repo: &Repo, file: &str) -> wit::protocol::WorkOwnersResult {
    let client = repo.client();
    block_on(client.work_owners(WorkOwnersParams { file: file.into() })).unwrap()
}

/// Waits (at most 5 s) until `check` holds of the file's owners.
pub(crate) fn owners_until(
    repo: &Repo,
    file: &str,
    check: impl Fn(&wit::protocol::WorkOwnersResult) -> bool,
) -> wit::protocol::WorkOwnersResult {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let found = owners(repo, file);
        if check(&found) || Instant::now() > until {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sessions_of(result: &wit::protocol::WorkOwnersResult) -> Vec<Vec<String>> {
    result.lines.iter().map(|l| l.session_ids.clone()).collect()
}

fn observed_intents(repo: &Repo) -> Vec<Value> {
    let client = repo.client();
    let intents = block_on(client.intent_query(IntentQueryParams::default())).unwrap();
    intents
        .into_iter()
        .map(|i| serde_json::to_value(i).unwrap())
        .collect()
}

#[test]
fn a_shell_edit_is_its_sessions_and_anothers_stash_is_denied_naming_it() {
    let (repo, _daemon) = repo_with_lib();
    run_bash(&repo, "bob", "sed -i 's/y \\* 2/y * 20/' src/lib.py");
    let found = owners_until(&repo, "src/lib.py", |o| !o.lines.is_empty());
    assert_eq!(
        sessions_of(&found),
        vec![vec!["bob".to_owned()]],
        "{found:?}"
    );
    assert_eq!((found.lines[0].start_line, found.lines[0].end_line), (6, 6));
    let intents = observed_intents(&repo);
    assert!(
        intents
            .iter()
            .any(|i| i["sessionId"] == "bob" && i["regions"].is_array()),
        "{intents:?}"
    );
    let (decision, said) = shell_verdict(&repo, "alice", "git stash");
    assert_eq!(decision, "deny", "{said}");
    assert!(said.contains("bob"), "{said}");
}

/// Session `one-b` of the harness process `agent` rewrites a line of `beta` with `sed`
/// through its Bash tool (the gate lets it through, the post-tool hook closes the call), and
/// the daemon comes to own the line to it.
fn one_b_rewrites_beta_by_shell(agent: &mut StandIn, repo: &Repo) {
    let command = "sed -i 's/y \\* 2/y * 20/' src/lib.py";
    let (decision, said) = verdict_from(agent, repo, "one-b", command);
    assert_eq!(decision, "", "{said}");
    let status = std::process::Command::new("bash")
        .args(["-c", command])
        .current_dir(repo.path())
        .status()
        .unwrap();
    assert!(status.success());
    post_tool_from(agent, repo, "one-b", "Bash");
    let found = owners_until(repo, "src/lib.py", |o| !o.lines.is_empty());
    assert_eq!(
        sessions_of(&found),
        vec![vec!["one-b".to_owned()]],
        "{found:?}"
    );
}

/// One answer to "whose lines are these, seen from me" (issue 34.5): the shell gate asks the
/// daemon, whose same-agent rule says two sessions registered by one harness process (here
/// one stand-in runs both sessions' hooks, and its pulse registers each with its pid) are one
/// agent: the other session's shell edit is its own to stash. From another harness process
/// the same lines are another agent's, and the stash is denied naming that session.
#[test]
fn two_sessions_of_one_harness_process_are_one_agent_to_the_shell_gate() {
    let (repo, _daemon) = repo_with_lib();
    let mut agent = StandIn::spawn(&repo, "agent-one");
    post_tool_from(&mut agent, &repo, "one-a", "Read");
    one_b_rewrites_beta_by_shell(&mut agent, &repo);
    for command in [
        "git stash",
        "git add -A && git commit -m mine",
        "git checkout -- src/lib.py",
    ] {
        let (decision, said) = verdict_from(&mut agent, &repo, "one-a", command);
        assert_eq!(decision, "", "{command} by the same agent: {said}");
    }
    let (decision, said) = shell_verdict(&repo, "bob", "git stash");
    assert_eq!(decision, "deny", "{said}");
    assert!(
        said.contains("session one-b") && said.contains("src/lib.py (line 6)"),
        "{said}"
    );
    // The agent's own pre-commit check agrees: nothing of another agent is staged.
    git_text(repo.path(), &["add", "src/lib.py"]);
    let out = crate::safegit::git(repo.path(), "one-a", &["commit", "-q", "-m", "mine"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// The news hook's same-agent rule, asked when a line is due: work declared by another
/// session of the same harness process (which wrote lines of the file, so the daemon knows it
/// as the agent's own) is never news to the agent; another agent's work on the same file is,
/// by itself.
#[test]
fn the_news_hook_never_tells_the_agent_of_its_own_sessions_work() {
    let (repo, _daemon) = repo_with_lib();
    let mut agent = StandIn::spawn(&repo, "agent-one");
    assert_eq!(post_tool_from(&mut agent, &repo, "one-a", "Read"), None);
    wit_ok(
        &repo,
        "one-a",
        &["declare", "-d", "Tune", "-f", "src/lib.py"],
    );
    one_b_rewrites_beta_by_shell(&mut agent, &repo);
    wit_ok(
        &repo,
        "one-b",
        &["declare", "-d", "Mine too", "-f", "src/lib.py"],
    );
    assert_eq!(
        post_tool_from(&mut agent, &repo, "one-a", "Read"),
        None,
        "the agent's own session's work"
    );
    wit_ok(
        &repo,
        "bob",
        &["declare", "-d", "Theirs", "-f", "src/lib.py"],
    );
    let told = post_tool_from(&mut agent, &repo, "one-a", "Read").expect("bob's work");
    assert!(
        told.contains("bob (session bob) works on src/lib.py") && !told.contains("one-b"),
        "{told}"
    );
}

/// 15.2: `work.end` answers with what the call wrote just before it, every time: the flush it
/// asks for takes in every file-system event queued before it (the observer's cookie), with
/// no fixed wait to hope they arrived in.
#[test]
fn work_end_right_after_a_write_names_the_change_every_time() {
    let (repo, _daemon) = repo_with_lib();
    let client = repo.client();
    let path = repo.path().join("src/lib.py");
    for round in 0..20 {
        let window = block_on(client.work_begin(WorkBeginParams {
            session_id: "bob".into(),
            tool: "Bash".into(),
            file: None,
            edits: Vec::new(),
            ttl_ms: None,
        }))
        .unwrap();
        let current = std::fs::read_to_string(&path).unwrap();
        let next = current.replacen("return x", &format!("return x + {round} or x"), 1);
        std::fs::write(&path, &next).unwrap();
        let ended = block_on(client.work_end(WorkEndParams {
            session_id: "bob".into(),
            window_id: window.window_id,
        }))
        .unwrap();
        assert!(
            ended.changed.iter().any(|c| c.file == "src/lib.py"
                && c.regions
                    .iter()
                    .any(|r| r.start_line <= 2 && 2 <= r.end_line)),
            "round {round}: {ended:?}"
        );
    }
}

#[test]
fn a_warned_adjacent_edit_is_recorded_and_protected() {
    let (repo, _daemon) = repo_with_lib();
    repo.write(".wit/config.toml", "[gate]\nintents = \"warn\"\n");
    edit(
        &repo,
        "alice",
        "src/lib.py",
        "def beta(y):",
        "def beta(y, k=1):",
    );
    // Bob changes the line right below alice's: the gate warns and lets it through.
    let payload = json!({
        "session_id": "bob",
        "cwd": repo.path().display().to_string(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {
            "file_path": repo.path().join("src/lib.py").display().to_string(),
            "old_string": "    return y * 2",
            "new_string": "    return y * 3",
        },
    });
    let verdict = answer(&hook(&repo, "claude", &payload));
    let context = verdict["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        context.contains("alice"),
        "a warning naming alice: {verdict}"
    );
    let path = repo.path().join("src/lib.py");
    let current = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        current.replacen("    return y * 2", "    return y * 3", 1),
    )
    .unwrap();
    post_tool(&repo, "bob", "Edit");
    let found = owners_until(&repo, "src/lib.py", |o| {
        o.lines
            .iter()
            .any(|l| l.session_ids.contains(&"bob".to_owned()))
    });
    assert!(
        found
            .lines
            .iter()
            .any(|l| l.session_ids == ["bob"] && l.start_line == 6),
        "{found:?}"
    );
    let (decision, said) = shell_verdict(&repo, "alice", "git add -A && git commit -m mine");
    assert_eq!(decision, "deny", "{said}");
    assert!(said.contains("bob"), "{said}");
}

#[test]
fn two_overlapping_shell_commands_both_own_the_change() {
    let (repo, _daemon) = repo_with_lib();
    // Both calls are let through (windows open), then one command writes, then both end.
    let (a, _) = shell_verdict(&repo, "alice", "make fmt");
    let (b, _) = shell_verdict(&repo, "bob", "make test");
    assert_eq!((a.as_str(), b.as_str()), ("", ""));
    let path = repo.path().join("src/lib.py");
    let current = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, current.replace("z - 3", "z - 30")).unwrap();
    post_tool(&repo, "alice", "Bash");
    post_tool(&repo, "bob", "Bash");
    let found = owners_until(&repo, "src/lib.py", |o| !o.lines.is_empty());
    assert_eq!(
        sessions_of(&found),
        vec![vec!["alice".to_owned(), "bob".to_owned()]],
        "{found:?}"
    );
}

#[test]
fn a_change_with_no_window_is_unowned() {
    let (repo, _daemon) = repo_with_lib();
    let path = repo.path().join("src/lib.py");
    let current = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, current.replace("x + 1", "x + 2")).unwrap();
    let found = owners_until(&repo, "src/lib.py", |o| !o.lines.is_empty());
    assert_eq!(sessions_of(&found), vec![Vec::<String>::new()], "{found:?}");
    let client = repo.client();
    let changes = block_on(client.work_changes(WorkChangesParams {
        session_id: Some("alice".into()),
        files: Vec::new(),
    }))
    .unwrap();
    let root = std::fs::canonicalize(repo.path()).unwrap();
    let hunk = &changes.files[0].hunks[0];
    assert_eq!(hunk.mine, Some(false));
    assert_eq!(
        hunk.others,
        vec![format!("unowned:{}", root.display())],
        "{changes:?}"
    );
    let intents = observed_intents(&repo);
    assert!(
        intents.iter().any(|i| i["sessionId"]
            .as_str()
            .is_some_and(|s| s.starts_with("unowned:"))),
        "{intents:?}"
    );
}

/// `work.changes` seen from `session`: per hunk of `file`, its first new line, whether it is
/// the session's own and the others'.
fn changes_seen_by(
    repo: &Repo,
    session: &str,
    file: &str,
) -> Vec<(i64, Option<bool>, Vec<String>)> {
    let client = repo.client();
    let changes = block_on(client.work_changes(WorkChangesParams {
        session_id: Some(session.into()),
        files: vec![file.into()],
    }))
    .unwrap();
    changes
        .files
        .iter()
        .flat_map(|f| f.hunks.iter())
        .map(|h| (h.new_start, h.mine, h.others.clone()))
        .collect()
}

#[test]
fn a_dead_sessions_lines_are_neither_mine_nor_anothers() {
    let (repo, _daemon) = repo_with_lib();
    run_bash(&repo, "alice", "sed -i 's/x + 1/x + 10/' src/lib.py");
    run_bash(&repo, "bob", "sed -i 's/z - 3/z - 30/' src/lib.py");
    let found = owners_until(&repo, "src/lib.py", |o| o.lines.len() == 2);
    assert_eq!(
        sessions_of(&found),
        vec![vec!["alice".to_owned()], vec!["bob".to_owned()]],
        "{found:?}"
    );
    assert_eq!(
        changes_seen_by(&repo, "alice", "src/lib.py"),
        [
            (2, Some(true), vec![]),
            (10, Some(false), vec!["bob".to_owned()])
        ]
    );
    // Bob's harness exits: once its session is reaped, its line is nobody's to commit.
    end_harness(&repo, "bob");
    let until = Instant::now() + Duration::from_secs(10);
    let mut seen = changes_seen_by(&repo, "alice", "src/lib.py");
    while seen.get(1).is_some_and(|h| !h.2.is_empty()) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
        seen = changes_seen_by(&repo, "alice", "src/lib.py");
    }
    assert_eq!(
        seen,
        [(2, Some(true), vec![]), (10, Some(false), vec![])],
        "bob's line is neither alice's nor a live agent's"
    );
}

#[test]
fn an_edit_of_a_latin1_file_is_recorded_file_level_with_its_bytes() {
    let (repo, _daemon) = repo_with_lib();
    std::fs::write(repo.path().join("notes.txt"), b"caf\xe9\n").unwrap();
    git_text(repo.path(), &["add", "notes.txt"]);
    git_text(repo.path(), &["commit", "-q", "-m", "latin-1"]);
    let (decision, _) = shell_verdict(&repo, "bob", "printf 'na\\xefve\\n' >> notes.txt");
    assert_eq!(decision, "");
    std::fs::write(repo.path().join("notes.txt"), b"caf\xe9\nna\xefve\n").unwrap();
    post_tool(&repo, "bob", "Bash");
    let found = owners_until(&repo, "notes.txt", |o| !o.lines.is_empty());
    assert!(found.binary, "{found:?}");
    assert_eq!(sessions_of(&found), vec![vec!["bob".to_owned()]]);
}

/// `wit commit` from the owner map (15.4, 15.6): a latin-1 file's bytes and a symlink's new
/// target are committed as they are, the symlink as a symlink, and a second commit right
/// after finds nothing left (the map follows the new HEAD).
#[test]
fn wit_commit_keeps_a_latin1_files_bytes_and_a_symlink_as_a_symlink() {
    let (repo, _daemon) = repo_with_lib();
    std::fs::write(repo.path().join("notes.txt"), b"caf\xe9\n").unwrap();
    std::fs::write(repo.path().join("a.txt"), "a\n").unwrap();
    std::fs::write(repo.path().join("b.txt"), "b\n").unwrap();
    std::os::unix::fs::symlink("a.txt", repo.path().join("link")).unwrap();
    git_text(repo.path(), &["add", "."]);
    git_text(repo.path(), &["commit", "-q", "-m", "bytes"]);
    run_bash(
        &repo,
        "bob",
        "printf 'na\\357ve\\n' >> notes.txt && ln -sfn b.txt link",
    );
    assert_eq!(
        std::fs::read(repo.path().join("notes.txt")).unwrap(),
        b"caf\xe9\nna\xefve\n"
    );
    owners_until(&repo, "link", |o| !o.lines.is_empty());
    let out = wit_ok(&repo, "bob", &["commit", "-m", "bytes and a link"]);
    assert!(
        text(&out.stdout).contains("2 files"),
        "{}",
        text(&out.stdout)
    );
    let blob = std::process::Command::new("git")
        .args(["cat-file", "blob", "HEAD:notes.txt"])
        .current_dir(repo.path())
        .output()
        .unwrap()
        .stdout;
    assert_eq!(blob, b"caf\xe9\nna\xefve\n");
    let listed = git_text(repo.path(), &["ls-tree", "HEAD", "link"]);
    assert!(listed.starts_with("120000 blob "), "{listed}");
    assert_eq!(
        git_text(repo.path(), &["cat-file", "-p", "HEAD:link"]),
        "b.txt"
    );
    assert!(repo.path().join("link").is_symlink());
    let again = wit_cmd(repo.path(), "bob")
        .args(["commit", "-m", "again"])
        .output()
        .unwrap();
    assert!(!again.status.success(), "{}", text(&again.stdout));
    assert_eq!(git_text(repo.path(), &["status", "--porcelain"]), "");
}

#[test]
fn wit_blame_names_the_owners_of_three_sessions_lines() {
    let (repo, _daemon) = repo_with_lib();
    wit_ok(&repo, "carol", &["register", "carol"]);
    edit(&repo, "alice", "src/lib.py", "x + 1", "x + 10");
    run_bash(&repo, "bob", "sed -i 's/y \\* 2/y * 20/' src/lib.py");
    run_bash(&repo, "carol", "sed -i 's/z - 3/z - 33/' src/lib.py");
    owners_until(&repo, "src/lib.py", |o| o.lines.len() == 3);
    let out = wit_ok(&repo, "alice", &["blame", "src/lib.py"]);
    let shown = text(&out.stdout);
    for (line, who, code) in [
        (2, "alice", "x + 10"),
        (6, "bob", "y * 20"),
        (10, "carol", "z - 33"),
    ] {
        let row = shown
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{line} ")))
            .unwrap_or_else(|| panic!("line {line} in {shown}"));
        assert!(row.contains(who) && row.contains(code), "{row}");
    }
}

/// docs/protocol.md 15.3: unowned work is shown as such by `wit status` and `wit sessions` —
/// a section of its own naming the file and lines, a row named as unowned work — never as an
/// agent's intent or a live or ended session.
#[test]
fn wit_status_and_wit_sessions_show_unowned_work_as_such() {
    let (repo, _daemon) = repo_with_lib();
    // Nobody's change first (no window open), then alice's through her gate.
    let path = repo.path().join("src/lib.py");
    std::fs::write(&path, LIB_PY.replace("x + 1", "x + 2")).unwrap();
    owners_until(&repo, "src/lib.py", |o| !o.lines.is_empty());
    edit(&repo, "alice", "src/lib.py", "z - 3", "z - 30");
    let until = Instant::now() + Duration::from_secs(5);
    while !observed_intents(&repo).iter().any(|i| {
        i["sessionId"]
            .as_str()
            .is_some_and(|s| s.starts_with("unowned:"))
    }) {
        assert!(Instant::now() < until, "no unowned intent");
        std::thread::sleep(Duration::from_millis(50));
    }
    let root = std::fs::canonicalize(repo.path()).unwrap();
    let unowned_id = format!("unowned:{}", root.display());

    let status = text(&wit_ok(&repo, "alice", &["status"]).stdout);
    let (before, work) = status
        .split_once("UNOWNED WORK (1)\n")
        .unwrap_or_else(|| panic!("no unowned work section:\n{status}"));
    let (work, after) = work.split_once("\n\n").unwrap_or((work, ""));
    assert!(work.contains("a person's editor"), "{status}");
    let row = work
        .lines()
        .find(|l| l.contains("src/lib.py"))
        .unwrap_or_else(|| panic!("no row of src/lib.py:\n{status}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells.get(1), Some(&"2"), "its line: {row}");
    // Alice's own work stays among the intents; the unowned work is no agent's intent and
    // no session.
    let intents = before.split_once("INTENTS").map_or("", |(_, rest)| rest);
    assert!(intents.contains("alice"), "{status}");
    assert!(
        !before.contains("unowned:"),
        "unowned work as an intent:\n{status}"
    );
    assert!(
        !after.contains("unowned:"),
        "unowned work as a session:\n{status}"
    );
    let json: Value =
        serde_json::from_slice(&wit_ok(&repo, "alice", &["--json", "status"]).stdout).unwrap();
    assert_eq!(
        json["unowned"][0]["sessionId"],
        unowned_id.as_str(),
        "{json}"
    );

    let sessions = text(&wit_ok(&repo, "alice", &["sessions"]).stdout);
    let row = sessions
        .lines()
        .find(|l| l.contains(&unowned_id))
        .unwrap_or_else(|| panic!("unowned work not listed:\n{sessions}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(row.contains("(unowned work)"), "{sessions}");
    assert!(
        cells.contains(&"unowned") && !cells.contains(&"live") && !cells.contains(&"ended"),
        "{row}"
    );
    assert!(sessions.contains("a person's editor"), "{sessions}");
    let alice = sessions
        .lines()
        .find(|l| l.split_whitespace().next() == Some("alice") || l.contains("alice (you)"))
        .unwrap_or_else(|| panic!("alice not listed:\n{sessions}"));
    assert!(alice.contains("live"), "{alice}");
}

/// A tiny deterministic generator for the property test (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// One line of the model: its text and who put it there (`None`: HEAD's), and who deleted it.
#[derive(Clone)]
struct ModelLine {
    text: String,
    added_by: Option<usize>,
    deleted_by: Option<usize>,
}

/// Whose change a model line is, if anybody's.
fn changed_by(line: &ModelLine) -> Option<usize> {
    line.deleted_by.or(line.added_by)
}

/// Whether two sessions' changes touch (no unchanged line between them): where they meet,
/// which one comes first is git's guess, not a fact of either change (a merge conflicts).
fn changes_meet(model: &[ModelLine]) -> bool {
    let changed: Vec<Option<usize>> = model.iter().map(changed_by).collect();
    let mut last: Option<usize> = None;
    for (i, who) in changed.iter().enumerate() {
        match who {
            Some(who) => {
                if last.is_some_and(|l| l != *who) {
                    return true;
                }
                last = Some(*who);
            }
            // A line that is still HEAD's, unchanged, separates changes.
            None if model[i].deleted_by.is_none() => last = None,
            None => {}
        }
    }
    false
}

/// What `session`'s commit must hold: HEAD's lines it did not delete, and its own.
fn expected_commit(model: &[ModelLine], session: usize) -> String {
    model
        .iter()
        .filter(|l| match l.added_by {
            None => l.deleted_by != Some(session),
            Some(by) => by == session && l.deleted_by.is_none(),
        })
        .map(|l| format!("{}\n", l.text))
        .collect()
}

/// 15.6, as a property (issue "Nothing lost"): random interleaved shell changes of two or
/// three agents (each its own harness process) — replacements, insertions, deletions, in
/// repetitive and in distinct code, adjacent and apart — then `wit commit` of one of them:
/// the commit is HEAD plus exactly that agent's changes, and the working tree is untouched.
/// `WIT_FUZZ_CASES` sets the number of trials (12 by default, seed fixed).
#[test]
fn wit_commit_is_head_plus_exactly_the_sessions_changes() {
    let trials: u64 = std::env::var("WIT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let mut rng = Rng(0x5eed_1234_abcd_0042);
    for trial in 0..trials {
        let repo = Repo::new();
        let head: Vec<String> = (0..16)
            .map(|i| match i % 4 {
                0 => format!("def f{i}():"),
                1 | 2 => "    pass".to_owned(),
                _ => String::new(),
            })
            .collect();
        let head_text: String = head.iter().map(|l| format!("{l}\n")).collect();
        repo.write("src/f.py", &head_text);
        git_text(repo.path(), &["add", "."]);
        git_text(repo.path(), &["commit", "-q", "-m", "init"]);
        let _daemon = Daemon::start(&repo);
        let sessions: Vec<String> = (0..2 + rng.below(2)).map(|s| format!("s{s}")).collect();
        for s in &sessions {
            wit_ok(&repo, s, &["register", s]);
        }
        let mut model: Vec<ModelLine> = head
            .iter()
            .map(|text| ModelLine {
                text: text.clone(),
                added_by: None,
                deleted_by: None,
            })
            .collect();
        let scratch = tempfile::tempdir().unwrap();
        let mut log = Vec::new();
        for step in 0..8 {
            let who = rng.below(sessions.len());
            let live: Vec<usize> = (0..model.len())
                .filter(|&i| model[i].deleted_by.is_none())
                .collect();
            let at = live[rng.below(live.len())];
            let line = &model[at];
            let untouched_head = line.added_by.is_none() && line.deleted_by.is_none();
            let unique = head.iter().filter(|t| **t == line.text).count() == 1;
            let tag = format!("x = {who}_{step}  # {}", sessions[who]);
            let kept = model.clone();
            match rng.below(3) {
                0 if untouched_head => {
                    // Replace a line of HEAD's.
                    model[at].deleted_by = Some(who);
                    model.insert(
                        at + 1,
                        ModelLine {
                            text: tag,
                            added_by: Some(who),
                            deleted_by: None,
                        },
                    );
                    log.push(format!("{who} replaces {at}"));
                }
                1 if untouched_head && unique && !line.text.is_empty() => {
                    model[at].deleted_by = Some(who);
                    log.push(format!("{who} deletes {at}"));
                }
                _ => {
                    model.insert(
                        at + 1,
                        ModelLine {
                            text: tag,
                            added_by: Some(who),
                            deleted_by: None,
                        },
                    );
                    log.push(format!("{who} inserts after {at}"));
                }
            }
            if changes_meet(&model) {
                model = kept;
                log.pop();
                continue;
            }
            let now: String = model
                .iter()
                .filter(|l| l.deleted_by.is_none())
                .map(|l| format!("{}\n", l.text))
                .collect();
            let next = scratch.path().join(format!("next-{step}"));
            std::fs::write(&next, &now).unwrap();
            run_bash(
                &repo,
                &sessions[who],
                &format!("cp {} src/f.py", next.display()),
            );
        }
        let committer = rng.below(sessions.len());
        let before = std::fs::read(repo.path().join("src/f.py")).unwrap();
        let expected = expected_commit(&model, committer);
        let out = wit_cmd(repo.path(), &sessions[committer])
            .args(["commit", "-m", "mine"])
            .output()
            .unwrap();
        if expected == head_text {
            assert!(!out.status.success(), "trial {trial}: {log:?}");
        } else {
            assert!(
                out.status.success(),
                "trial {trial}: {log:?}: {}",
                text(&out.stderr)
            );
            let committed = git_text(repo.path(), &["show", "HEAD:src/f.py"]);
            assert_eq!(
                committed, expected,
                "trial {trial}, commit of s{committer}: {log:?}"
            );
        }
        assert_eq!(
            std::fs::read(repo.path().join("src/f.py")).unwrap(),
            before,
            "trial {trial}: the working tree changed"
        );
    }
}

/// `wit commit` keeps every kind of file as git would (15.4, 15.6): a new symlink, an exec
/// bit set with a change, CRLF lines, a file with no final newline, a deleted file, a rename
/// staged with `git mv`, and a submodule beside them whose gitlink stays as it is.
#[test]
fn wit_commit_keeps_each_kind_of_file_as_git_would() {
    let repo = Repo::new();
    let inner = tempfile::tempdir().unwrap();
    git_text(inner.path(), &["init", "-q"]);
    std::fs::write(inner.path().join("f.txt"), "inner\n").unwrap();
    git_text(inner.path(), &["add", "."]);
    git_text(inner.path(), &["commit", "-q", "-m", "inner"]);
    repo.write("crlf.txt", "one\r\ntwo\r\n");
    repo.write("tail.txt", "no newline");
    repo.write("run.sh", "echo hi\n");
    repo.write("gone.txt", "bye\n");
    repo.write("old.txt", "moved\n");
    git_text(repo.path(), &["add", "."]);
    let added = std::process::Command::new("git")
        .args(["-c", "protocol.file.allow=always", "submodule", "add", "-q"])
        .arg(inner.path())
        .arg("sub")
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(added.status.success(), "{}", text(&added.stderr));
    git_text(repo.path(), &["commit", "-q", "-m", "init"]);
    let gitlink = git_text(repo.path(), &["ls-tree", "HEAD", "sub"]);
    assert!(gitlink.starts_with("160000 commit "), "{gitlink}");
    let _daemon = Daemon::start(&repo);
    wit_ok(&repo, "bob", &["register", "bob"]);
    run_bash(
        &repo,
        "bob",
        "printf 'one\\r\\nTWO\\r\\n' > crlf.txt && printf 'no newline, still' > tail.txt \
         && printf 'echo hello\\n' > run.sh && chmod +x run.sh && rm gone.txt \
         && ln -s crlf.txt link && git mv old.txt new.txt && echo changed > sub/f.txt",
    );
    owners_until(&repo, "link", |o| !o.lines.is_empty());
    let out = wit_ok(&repo, "bob", &["--json", "commit", "-m", "kinds"]);
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    let files: Vec<&str> = done["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert!(!files.contains(&"sub"), "{done}");
    let blob = |path: &str| {
        std::process::Command::new("git")
            .args(["cat-file", "blob", &format!("HEAD:{path}")])
            .current_dir(repo.path())
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(blob("crlf.txt"), b"one\r\nTWO\r\n");
    assert_eq!(blob("tail.txt"), b"no newline, still");
    assert_eq!(blob("new.txt"), b"moved\n");
    assert_eq!(blob("link"), b"crlf.txt");
    let tree = git_text(repo.path(), &["ls-tree", "HEAD"]);
    let mode_of = |name: &str| {
        tree.lines()
            .find(|l| l.ends_with(&format!("\t{name}")))
            .map(|l| l.split(' ').next().unwrap_or_default().to_owned())
    };
    assert_eq!(mode_of("run.sh").as_deref(), Some("100755"), "{tree}");
    assert_eq!(mode_of("link").as_deref(), Some("120000"), "{tree}");
    assert_eq!(mode_of("gone.txt"), None, "{tree}");
    assert_eq!(mode_of("old.txt"), None, "{tree}");
    assert_eq!(git_text(repo.path(), &["ls-tree", "HEAD", "sub"]), gitlink);
    // Nothing of bob's is left; the submodule's own change is its own repository's.
    let status = git_text(repo.path(), &["status", "--porcelain"]);
    assert_eq!(status.trim(), "M sub", "{status}");
}
