//! One tree, safe git (issue 23) end to end: two sessions change different functions of one
//! file through the edit gate (so the daemon knows their regions); the shell gate
//! (`wit hook pre-edit` fed shell-tool payloads), `wit commit`, the pre-commit hook's
//! foreign-lines check and snapshots, against real daemons and real git.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;

const LIB_TS: &str = "\
export function alpha(a: number): number {
  return a + 1;
}

export function middle(): string {
  return \"m\";
}

export function beta(b: number): number {
  return b * 2;
}
";

const ALICE_OLD: &str = "  return a + 1;";
const ALICE_NEW: &str = "  return a + 100;";
const BOB_OLD: &str = "  return b * 2;";
const BOB_NEW: &str = "  return b * 200;";

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `wit` in `repo` as `session`, with a clean wit environment.
pub(crate) fn wit_cmd(repo: &Path, session: &str) -> Command {
    let mut command = Command::new(wit_bin());
    command
        .current_dir(repo)
        .envs(store_env(repo))
        .env("WIT_SESSION", session)
        .env_remove("CLAUDE_SESSION_ID")
        .env_remove("WIT_REPO_ROOT")
        .env_remove("WIT_NO_AUTOSTART")
        .env_remove("WIT_ALLOW_FOREIGN")
        .env("WIT_GATE_TIMEOUT_MS", "20000")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .stdin(Stdio::null());
    command
}

pub(crate) fn wit_ok(repo: &Repo, session: &str, args: &[&str]) -> Output {
    let out = wit_cmd(repo.path(), session).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "wit {args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

pub(crate) fn git(repo: &Path, session: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new("git");
    command
        .current_dir(repo)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("WIT_SESSION", session)
        .env("WIT_HOOK_TIMEOUT_MS", "20000")
        .env_remove("WIT_REPO_ROOT")
        .env_remove("CLAUDE_SESSION_ID")
        .env_remove("WIT_ALLOW_FOREIGN")
        .args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

pub(crate) fn git_text(repo: &Path, args: &[&str]) -> String {
    let out = git(repo, "setup", args, &[]);
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Runs the gate (`wit hook pre-edit --agent AGENT`) with `payload` on stdin, from the
/// stand-in harness of the payload's session (each agent its own harness process, as in the
/// field); exit 0 always.
pub(crate) fn hook(repo: &Repo, agent: &str, payload: &Value) -> Output {
    let payload = payload.to_string();
    let args = ["hook", "pre-edit", "--agent", agent];
    let session = payload_session(&payload).unwrap_or_else(|| "unused".to_string());
    let out = with_harness(repo, &session, |stand_in| {
        stand_in.run(&args, &payload, &[])
    });
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    out
}

pub(crate) fn answer(out: &Output) -> Value {
    let stdout = text(&out.stdout);
    if stdout.trim().is_empty() {
        return Value::Null;
    }
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// Claude Code's tool call of `session` with its shell (or edit tool) in `cwd`.
fn tool_call_in(cwd: &Path, session: &str, tool: &str, input: Value) -> Value {
    json!({
        "session_id": session,
        "cwd": cwd.display().to_string(),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
    })
}

/// Claude Code's Bash tool call of `session` running `command`.
pub(crate) fn bash(repo: &Repo, session: &str, command: &str) -> Value {
    tool_call_in(repo.path(), session, "Bash", json!({ "command": command }))
}

/// Claude Code's verdict on `command` run by `session`: `(decision or "", reason/context)`.
pub(crate) fn shell_verdict(repo: &Repo, session: &str, command: &str) -> (String, String) {
    shell_verdict_in(repo, repo.path(), session, command)
}

/// [`shell_verdict`] with the shell in `cwd` (a linked worktree of `repo`, say).
fn shell_verdict_in(repo: &Repo, cwd: &Path, session: &str, command: &str) -> (String, String) {
    let call = tool_call_in(cwd, session, "Bash", json!({ "command": command }));
    let out = hook(repo, "claude", &call);
    let value = answer(&out);
    let output = &value["hookSpecificOutput"];
    let decision = output["permissionDecision"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let said = output["permissionDecisionReason"]
        .as_str()
        .or(output["additionalContext"].as_str())
        .unwrap_or("")
        .to_string();
    (decision, format!("{said}{}", text(&out.stderr)))
}

/// `session` edits `old` to `new` in `file` through Claude Code's edit gate (recorded as
/// observed work), then the harness writes the edit.
pub(crate) fn edit(repo: &Repo, session: &str, file: &str, old: &str, new: &str) {
    let input = json!({
        "file_path": repo.path().join(file).display().to_string(),
        "old_string": old,
        "new_string": new,
    });
    let out = hook(
        repo,
        "claude",
        &tool_call_in(repo.path(), session, "Edit", input),
    );
    assert_eq!(answer(&out), Value::Null, "{}", text(&out.stderr));
    let path = repo.path().join(file);
    let current = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, current.replacen(old, new, 1)).unwrap();
}

/// A repository with `src/lib.ts` committed, hooks installed, a daemon, and alice and bob
/// registered, each having changed one function of `src/lib.ts` through the edit gate.
fn two_agents() -> (Repo, Daemon) {
    two_agents_in(Repo::new())
}

/// [`two_agents`] in `repo`, a fresh repository.
fn two_agents_in(repo: Repo) -> (Repo, Daemon) {
    repo.write("src/lib.ts", LIB_TS);
    repo.write("README.md", "# app\n");
    git_text(repo.path(), &["add", "."]);
    git_text(repo.path(), &["commit", "-q", "-m", "init"]);
    let daemon = Daemon::start(&repo);
    wit_ok(&repo, "alice", &["register", "alice"]);
    wit_ok(&repo, "bob", &["register", "bob"]);
    wit_ok(&repo, "alice", &["hook", "install"]);
    edit(&repo, "alice", "src/lib.ts", ALICE_OLD, ALICE_NEW);
    edit(&repo, "bob", "src/lib.ts", BOB_OLD, BOB_NEW);
    (repo, daemon)
}

fn working(repo: &Repo) -> String {
    std::fs::read_to_string(repo.path().join("src/lib.ts")).unwrap()
}

#[test]
fn git_add_all_and_commit_is_denied_naming_the_other_session() {
    let (repo, _daemon) = two_agents();
    let (decision, reason) = shell_verdict(&repo, "alice", "git add -A && git commit -m 'alpha'");
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("bob (session bob)"), "{reason}");
    // The daemon's owner map names lines (its answer has no symbols): beta's body is line 10.
    assert!(reason.contains("src/lib.ts (line 10)"), "{reason}");
    assert!(reason.contains("wit commit"), "{reason}");
    // And the same for bob, naming alice.
    let (decision, reason) = shell_verdict(&repo, "bob", "git commit -am wip");
    assert_eq!(decision, "deny", "{reason}");
    assert!(
        reason.contains("alice") && reason.contains("src/lib.ts (line 2)"),
        "{reason}"
    );
}

#[test]
fn wit_commit_commits_only_the_sessions_own_function_and_leaves_the_rest_untouched() {
    let (repo, _daemon) = two_agents();
    let before = working(&repo);
    let out = wit_ok(
        &repo,
        "alice",
        &["--json", "commit", "-m", "Make alpha bigger"],
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["files"][0]["file"], "src/lib.ts", "{result}");
    assert_eq!(result["files"][0]["hunks"], 1, "{result}");
    assert_eq!(result["files"][0]["leftUncommitted"], 1, "{result}");
    // The commit holds alice's line and not bob's.
    let committed = git_text(repo.path(), &["show", "HEAD:src/lib.ts"]);
    assert!(
        committed.contains(ALICE_NEW) && committed.contains(BOB_OLD),
        "{committed}"
    );
    // The working tree is untouched; bob's line is still an unstaged change, nothing staged.
    assert_eq!(working(&repo), before);
    let diff = git_text(repo.path(), &["diff", "HEAD", "--", "src/lib.ts"]);
    assert!(
        diff.contains(&format!("+{BOB_NEW}")) && !diff.contains("alpha"),
        "{diff}"
    );
    assert_eq!(
        git_text(repo.path(), &["diff", "--cached", "--name-only"]),
        ""
    );
    // Trailers, and alice's observed intent resolved.
    let message = git_text(repo.path(), &["log", "-1", "--format=%B"]);
    let intent = result["intentsResolved"][0].as_str().unwrap().to_string();
    assert!(
        message.contains(&format!("Wit-Intent: {intent}")),
        "{message}"
    );
    let out = wit_ok(
        &repo,
        "alice",
        &["--json", "call", "intent.query", r#"{"sessionId":"alice"}"#],
    );
    let open: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(open.as_array().unwrap().len(), 0, "{open}");
    // Bob can now commit his; nothing of alice's is left for him to take.
    let (decision, reason) = shell_verdict(&repo, "bob", "git commit -am beta");
    assert_eq!(decision, "", "{reason}");
    wit_ok(&repo, "bob", &["commit", "-m", "Make beta bigger"]);
    assert_eq!(
        git_text(repo.path(), &["show", "HEAD:src/lib.ts"]),
        working(&repo)
    );
}

#[test]
fn stash_checkout_and_restore_of_the_file_are_denied() {
    let (repo, _daemon) = two_agents();
    for command in [
        "git stash",
        "git stash push -m wip",
        "git checkout -- src/lib.ts",
        "git restore src/lib.ts",
        "git reset --hard",
        "git switch other-branch",
    ] {
        let (decision, reason) = shell_verdict(&repo, "alice", command);
        assert_eq!(decision, "deny", "{command}: {reason}");
        assert!(
            reason.contains("bob") && reason.contains("throw away"),
            "{command}: {reason}"
        );
    }
    assert!(working(&repo).contains(BOB_NEW));
}

/// Issue 29.6: in a linked worktree an agent's git commands on that worktree's own files pass,
/// although another agent has uncommitted work on the same path in the main worktree (another
/// checkout's files are not at stake); the same commands in the main worktree stay denied.
#[test]
fn commands_in_a_linked_worktree_touch_only_that_worktrees_work() {
    let (repo, _daemon) = two_agents();
    let holder = tempfile::Builder::new()
        .prefix("wtg")
        .tempdir_in("/tmp")
        .unwrap();
    let linked = std::fs::canonicalize(holder.path()).unwrap().join("w1");
    let linked_arg = linked.display().to_string();
    git_text(
        repo.path(),
        &["worktree", "add", "-q", "-b", "w1", &linked_arg],
    );
    // carol changes alpha in the linked worktree's copy of src/lib.ts, through the edit gate.
    let file = linked.join("src/lib.ts");
    let input = json!({
        "file_path": file.display().to_string(),
        "old_string": ALICE_OLD,
        "new_string": "  return a + 7;",
    });
    let out = hook(
        &repo,
        "claude",
        &tool_call_in(&linked, "carol", "Edit", input),
    );
    // Not denied: alice's change of the same lines in the main worktree is a warning (14.5).
    let decision = &answer(&out)["hookSpecificOutput"]["permissionDecision"];
    assert_eq!(decision, &Value::Null, "{}", text(&out.stderr));
    let current = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, current.replacen(ALICE_OLD, "  return a + 7;", 1)).unwrap();
    for command in [
        "git stash",
        "git checkout -- src/lib.ts",
        "git add -A && git commit -m 'alpha in w1'",
    ] {
        let (decision, reason) = shell_verdict_in(&repo, &linked, "carol", command);
        assert_eq!(decision, "", "{command} in the linked worktree: {reason}");
    }
    // The main worktree's work is still at stake for a command run there.
    let (decision, reason) = shell_verdict_in(&repo, repo.path(), "carol", "git stash");
    assert_eq!(decision, "deny", "{reason}");
    assert!(
        reason.contains("bob") && reason.contains("alice"),
        "{reason}"
    );
    git_text(repo.path(), &["worktree", "remove", "--force", &linked_arg]);
}

#[test]
fn reads_and_commands_on_own_files_pass_untouched() {
    let (repo, _daemon) = two_agents();
    repo.write("src/own.ts", "export const own = 1;\n");
    for command in [
        "git status",
        "git diff",
        "git log --oneline -5",
        "git add src/own.ts && git commit -m 'own file' src/own.ts",
        "git checkout -- README.md",
        "cargo test && ls -la | wc -l",
    ] {
        let out = hook(&repo, "claude", &bash(&repo, "alice", command));
        assert_eq!(
            answer(&out),
            Value::Null,
            "{command}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stderr), "", "{command}");
    }
    // A line the gate cannot read passes with a note.
    let out = hook(
        &repo,
        "claude",
        &bash(&repo, "alice", "git commit -m 'open"),
    );
    assert_eq!(answer(&out), Value::Null);
    assert!(
        text(&out.stderr).contains("not understood"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn quoting_sequences_and_git_dash_c_are_parsed() {
    let (repo, _daemon) = two_agents();
    let root = repo.path().display().to_string();
    // A stash of the repository from elsewhere, behind `&&`, with a quoted message.
    let command = format!("cd / && git -C '{root}' -c core.pager=cat stash push -m \"a && b\"");
    let (decision, reason) = shell_verdict(&repo, "alice", &command);
    assert_eq!(decision, "deny", "{reason}");
    // Dangerous words inside a quoted message are only words.
    let command = format!("git -C \"{root}\" commit -m 'do not git stash && git add -A' README.md");
    let (decision, reason) = shell_verdict(&repo, "alice", &command);
    assert_eq!(decision, "", "{reason}");
    // An alias from the repository's configuration.
    git_text(repo.path(), &["config", "alias.save", "stash push"]);
    let (decision, reason) = shell_verdict(&repo, "alice", "git save");
    assert_eq!(decision, "deny", "{reason}");
}

#[test]
fn the_pre_commit_hook_blocks_a_foreign_hunk_staged_by_hand() {
    let (repo, _daemon) = two_agents();
    git_text(repo.path(), &["add", "src/lib.ts"]);
    let out = git(repo.path(), "alice", &["commit", "-m", "everything"], &[]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("bob (session bob): src/lib.ts (line 10)"),
        "{stderr}"
    );
    assert!(stderr.contains("WIT_ALLOW_FOREIGN=1"), "{stderr}");
    // Bob's own commit of the same staged content is blocked for alice's lines in turn.
    let out = git(repo.path(), "bob", &["commit", "-m", "everything"], &[]);
    assert!(text(&out.stderr).contains("alice"), "{}", text(&out.stderr));
    // A person who means it.
    let out = git(
        repo.path(),
        "alice",
        &["commit", "-m", "everything"],
        &[("WIT_ALLOW_FOREIGN", "1")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// The open observed intents of `session`, by status (`intent.query`).
fn intents_of(repo: &Repo, session: &str, status: &str) -> Vec<Value> {
    let params = json!({"sessionId": session, "status": status}).to_string();
    let out = wit_ok(repo, session, &["--json", "call", "intent.query", &params]);
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// post-commit resolves observed work from the owner map after the commit (issue 34.5, no
/// description string): alice commits only her line of the file both changed (a plain `git
/// commit` of a hand-staged blob); her intent is resolved, bob's, whose line is still
/// uncommitted in the same file, stays open.
#[test]
fn a_commit_of_one_sessions_lines_resolves_only_that_sessions_observed_work() {
    let (repo, _daemon) = two_agents();
    assert_eq!(intents_of(&repo, "alice", "active").len(), 1);
    assert_eq!(intents_of(&repo, "bob", "active").len(), 1);
    let hers = LIB_TS.replace(ALICE_OLD, ALICE_NEW);
    let blob = Command::new("git")
        .args(["hash-object", "-w", "--stdin"])
        .current_dir(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(hers.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    let id = text(&blob.stdout).trim().to_string();
    git_text(
        repo.path(),
        &[
            "update-index",
            "--cacheinfo",
            &format!("100644,{id},src/lib.ts"),
        ],
    );
    let out = git(repo.path(), "alice", &["commit", "-q", "-m", "alpha"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(git_text(repo.path(), &["show", "HEAD:src/lib.ts"]), hers);
    assert!(intents_of(&repo, "alice", "active").is_empty());
    assert_eq!(intents_of(&repo, "alice", "resolved").len(), 1);
    assert_eq!(
        intents_of(&repo, "bob", "active").len(),
        1,
        "bob's line is still uncommitted"
    );
}

#[test]
fn a_commit_with_nothing_foreign_staged_is_silent() {
    let (repo, _daemon) = two_agents();
    repo.write("notes.ts", "export const n = 1;\n");
    git_text(repo.path(), &["add", "notes.ts"]);
    let out = git(repo.path(), "alice", &["commit", "-q", "-m", "notes"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn a_snapshot_restores_the_work_a_forced_reset_hard_threw_away() {
    let (repo, _daemon) = two_agents();
    repo.write(".wit/config.toml", "[gate]\ngit = \"warn\"\n");
    let before = working(&repo);
    let out = hook(&repo, "claude", &bash(&repo, "alice", "git reset --hard"));
    let value = answer(&out);
    let context = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        value["hookSpecificOutput"]["permissionDecision"].is_null(),
        "{value}"
    );
    assert!(
        context.contains("bob") && context.contains("snapshot"),
        "{context}"
    );
    git_text(repo.path(), &["reset", "-q", "--hard"]);
    assert_eq!(working(&repo), LIB_TS);
    let out = wit_ok(&repo, "alice", &["--json", "snapshots"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();
    assert!(context.contains(&id), "{context}");
    assert_eq!(list[0]["files"], json!(["src/lib.ts"]));
    wit_ok(&repo, "alice", &["snapshots", "restore", &id]);
    assert_eq!(working(&repo), before);
    let refs = git_text(repo.path(), &["for-each-ref", "refs/wit/snapshots/"]);
    assert!(refs.contains(&id), "{refs}");
}

#[test]
fn a_persons_lines_are_committed_only_with_include_unowned() {
    let (repo, _daemon) = two_agents();
    // A person appends a line outside every session's regions.
    let person = format!("{}export const person = true;\n", working(&repo));
    std::fs::write(repo.path().join("src/lib.ts"), &person).unwrap();
    wit_ok(&repo, "alice", &["commit", "-m", "alpha", "src/lib.ts"]);
    let committed = git_text(repo.path(), &["show", "HEAD:src/lib.ts"]);
    assert!(committed.contains(ALICE_NEW), "{committed}");
    assert!(
        !committed.contains("person") && !committed.contains(BOB_NEW),
        "{committed}"
    );
    // Alice has nothing left of her own; with --include-unowned the person's line is hers.
    let out = wit_cmd(repo.path(), "alice")
        .args(["commit", "-m", "again"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let out = wit_cmd(repo.path(), "alice")
        .args(["commit", "-m", "person", "--include-unowned"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let committed = git_text(repo.path(), &["show", "HEAD:src/lib.ts"]);
    assert!(
        committed.contains("person") && !committed.contains(BOB_NEW),
        "{committed}"
    );
    assert_eq!(working(&repo), person);
}

#[test]
fn every_harness_shell_tool_is_gated_in_its_own_answer_shape() {
    let (repo, _daemon) = two_agents();
    let root = repo.path().display().to_string();
    let codex = json!({"session_id": "alice", "cwd": root, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": ["bash", "-lc", "git stash"]}});
    let value = answer(&hook(&repo, "codex", &codex));
    assert!(value.to_string().contains("deny"), "{value}");
    let gemini = json!({"session_id": "alice", "cwd": root, "hook_event_name": "BeforeTool",
        "tool_name": "run_shell_command", "tool_input": {"command": "git stash"}});
    let value = answer(&hook(&repo, "gemini", &gemini));
    assert_eq!(value["decision"], "deny", "{value}");
    let cursor = json!({"conversation_id": "alice", "hook_event_name": "beforeShellExecution",
        "command": "git stash", "cwd": root, "workspace_roots": [root]});
    let value = answer(&hook(&repo, "cursor", &cursor));
    assert_eq!(value["permission"], "deny", "{value}");
    assert!(
        value["agentMessage"].as_str().unwrap().contains("bob"),
        "{value}"
    );
}

/// Writes an executable hook `name` of the repository (its `.git/hooks`).
fn write_hook(repo: &Repo, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = repo.path().join(".git/hooks").join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `wit commit` runs the repository's hooks as `git commit` does (15.6): `pre-commit` sees
/// exactly the content committed (the session's lines, not the other's) and can refuse,
/// `--no-verify` skips it, `prepare-commit-msg` and `commit-msg` edit the message, and
/// `post-commit` runs once HEAD moved.
#[test]
fn wit_commit_runs_the_repositorys_hooks_on_what_it_commits() {
    let (repo, _daemon) = two_agents();
    let head = git_text(repo.path(), &["rev-parse", "HEAD"]);
    // pre-commit: refuses while alice's line is staged, and records what it saw.
    write_hook(
        &repo,
        "pre-commit",
        "git diff --cached > .git/pre-commit-saw\n\
         if git diff --cached | grep -q 'a + 100'; then echo 'no hundreds'; exit 3; fi",
    );
    let out = wit_cmd(repo.path(), "alice")
        .args(["commit", "-m", "alpha"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let said = text(&out.stderr);
    assert!(
        said.contains("pre-commit hook refused") && said.contains("no hundreds"),
        "{said}"
    );
    assert_eq!(git_text(repo.path(), &["rev-parse", "HEAD"]), head);
    let saw = std::fs::read_to_string(repo.path().join(".git/pre-commit-saw")).unwrap();
    assert!(saw.contains(ALICE_NEW) && !saw.contains(BOB_NEW), "{saw}");

    // The message hooks and post-commit; --no-verify skips pre-commit and commit-msg.
    write_hook(
        &repo,
        "prepare-commit-msg",
        "test \"$2\" = message && printf '\\nPrepared: yes\\n' >> \"$1\"",
    );
    write_hook(&repo, "commit-msg", "printf 'Checked: yes\\n' >> \"$1\"");
    write_hook(
        &repo,
        "post-commit",
        "git rev-parse HEAD > .git/post-commit-saw",
    );
    wit_ok(&repo, "alice", &["commit", "--no-verify", "-m", "alpha"]);
    let message = git_text(repo.path(), &["log", "-1", "--format=%B"]);
    assert!(message.starts_with("alpha\n"), "{message}");
    assert!(message.contains("Prepared: yes"), "{message}");
    assert!(!message.contains("Checked: yes"), "{message}");
    let committed = git_text(repo.path(), &["rev-parse", "HEAD"]);
    assert_ne!(committed, head);
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".git/post-commit-saw")).unwrap(),
        committed
    );
    // Bob's commit with every hook: commit-msg adds its line, pre-commit passes.
    wit_ok(&repo, "bob", &["commit", "-m", "beta"]);
    let message = git_text(repo.path(), &["log", "-1", "--format=%B"]);
    assert!(message.contains("Checked: yes"), "{message}");
}

/// `wit snapshots` as JSON.
fn snapshots(repo: &Repo) -> Value {
    let out = wit_ok(repo, "alice", &["--json", "snapshots"]);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The ids of alice's and bob's work snapshots, once both are listed (within 5 s).
fn work_snapshot_ids(repo: &Repo) -> (String, String) {
    let id_of = |list: &Value, session: &str| -> Option<String> {
        list.as_array()?
            .iter()
            .find(|s| s["session"] == session)
            .and_then(|s| s["id"].as_str().map(str::to_string))
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let list = snapshots(repo);
        if let (Some(a), Some(b)) = (id_of(&list, "alice"), id_of(&list, "bob")) {
            return (a, b);
        }
        assert!(Instant::now() < deadline, "no work snapshots: {list}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every session's uncommitted work is kept as git objects (15.5), so what no gate saw
/// destroy it comes back: `make clean` running `git checkout .`, a person's `git reset
/// --hard`, a script running `git stash`, `rm`.
/// `wit snapshots restore` writes back exactly each session's lines, byte for byte, onto the
/// file as it is now, and refuses where the same lines changed since.
#[test]
fn work_destroyed_behind_the_gates_back_is_restored_from_the_sessions_snapshot() {
    let (repo, _daemon) = two_agents();
    let with_both = working(&repo);
    // Within 2 s each session's work has its snapshot.
    let (alice, bob) = work_snapshot_ids(&repo);
    std::fs::write(repo.path().join("Makefile"), "clean:\n\tgit checkout .\n").unwrap();
    for destroy in [
        "make -s clean",
        "git reset -q --hard",
        "python3 -c \"import subprocess; subprocess.run(['git', 'stash', '-q'])\"",
        "rm src/lib.ts",
    ] {
        // Behind every gate: a person's terminal.
        let status = std::process::Command::new("sh")
            .args(["-c", destroy])
            .current_dir(repo.path())
            .status()
            .unwrap();
        assert!(status.success(), "{destroy}");
        assert_ne!(
            std::fs::read(repo.path().join("src/lib.ts")).ok(),
            Some(with_both.clone().into_bytes())
        );
        // Let the observer see it (the snapshots must survive the loss).
        std::thread::sleep(Duration::from_millis(600));
        wit_ok(
            &repo,
            "alice",
            &["snapshots", "restore", &alice, "--session", "alice"],
        );
        let restored =
            std::fs::read_to_string(repo.path().join("src/lib.ts")).unwrap_or_else(|e| {
                let list = snapshots(&repo);
                let at = git_text(repo.path(), &["for-each-ref", "refs/wit/work/"]);
                panic!("{destroy}: {e}: {list} {at}")
            });
        assert!(
            restored.contains(ALICE_NEW) && !restored.contains(BOB_NEW),
            "{destroy}: {restored}"
        );
        wit_ok(&repo, "bob", &["snapshots", "restore", &bob]);
        assert_eq!(working(&repo), with_both, "{destroy}");
        std::thread::sleep(Duration::from_millis(600));
    }
    // Another snapshot's session is refused by name; lines changed since refuse, writing
    // nothing.
    let out = wit_cmd(repo.path(), "alice")
        .args(["snapshots", "restore", &bob, "--session", "alice"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("bob"), "{}", text(&out.stderr));
    git_text(repo.path(), &["checkout", "-q", "--", "src/lib.ts"]);
    let moved = LIB_TS.replace(ALICE_OLD, "  return a - 1;");
    std::fs::write(repo.path().join("src/lib.ts"), &moved).unwrap();
    let out = wit_cmd(repo.path(), "alice")
        .args(["snapshots", "restore", &alice])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = text(&out.stderr);
    assert!(
        said.contains("alice") && said.contains("src/lib.ts"),
        "{said}"
    );
    assert_eq!(working(&repo), moved);
}

/// The work snapshots write their objects and refs themselves (15.5): in a SHA-256
/// repository whose refs are a reftable (git 2.45 and later; SHA-256 alone before), each
/// session's snapshot is still kept, read by git as its own (`fsck`), and restored after a
/// person's `git reset --hard`.
#[test]
fn work_snapshots_are_kept_in_a_sha256_repository_with_reftable_refs() {
    let version = git_text(Path::new("."), &["version"]);
    let numbers: Vec<u32> = version
        .trim()
        .trim_start_matches("git version ")
        .split(['.', ' '])
        .take(2)
        .filter_map(|n| n.parse().ok())
        .collect();
    let reftable = numbers.as_slice() >= [2, 45].as_slice();
    let mut options = vec!["--object-format=sha256"];
    if reftable {
        options.push("--ref-format=reftable");
    } else {
        println!("{}: no reftable (git 2.45+); SHA-256 only", version.trim());
    }
    let (repo, _daemon) = two_agents_in(Repo::init_with(&options));
    let with_both = working(&repo);
    let (alice, bob) = work_snapshot_ids(&repo);
    git_text(repo.path(), &["fsck", "--strict", "--no-dangling"]);
    git_text(repo.path(), &["reset", "-q", "--hard"]);
    std::thread::sleep(Duration::from_millis(600));
    wit_ok(&repo, "alice", &["snapshots", "restore", &alice]);
    wit_ok(&repo, "bob", &["snapshots", "restore", &bob]);
    assert_eq!(working(&repo), with_both);
}

/// agent-trace-cli (PyPI, pinned), installed once into `~/.cache/wit-agent-trace-cli`: a
/// reader of Agent Trace records nobody here wrote. Its path for `PYTHONPATH`.
fn agent_trace_cli() -> std::path::PathBuf {
    const PINNED: &str = "agent-trace-cli==0.1.3";
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, std::path::PathBuf::from);
    let dir = home.join(".cache/wit-agent-trace-cli-0.1.3");
    if !dir.join("agent_trace/cli.py").is_file() {
        let staging = home.join(format!(".cache/wit-agent-trace-cli-{}", std::process::id()));
        let out = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--no-deps", "--target"])
            .arg(&staging)
            .arg(PINNED)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pip install {PINNED}: {}",
            text(&out.stderr)
        );
        // Another test process may have won the race: either copy is the same.
        let _ = std::fs::rename(&staging, &dir);
        let _ = std::fs::remove_dir_all(&staging);
    }
    dir
}

/// `wit commit` writes an Agent Trace record of the lines it commits into
/// `refs/notes/agent-trace` (15.6): a reader nobody here wrote (agent-trace-cli's `blame`)
/// names alice's session for her line and nobody for the rest; `git log --notes=agent-trace`
/// shows it.
#[test]
fn wit_commit_writes_an_agent_trace_record_that_agent_trace_cli_reads() {
    let (repo, _daemon) = two_agents();
    let out = wit_ok(&repo, "alice", &["--json", "commit", "-m", "alpha"]);
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["agentTrace"], true, "{done}");
    let shown = git_text(repo.path(), &["log", "-1", "--notes=agent-trace"]);
    assert!(shown.contains("wit://session/alice"), "{shown}");
    let home = tempfile::tempdir().unwrap();
    let blamed = Command::new("python3")
        .args(["-m", "agent_trace.cli", "blame", "src/lib.ts", "--json"])
        .env("PYTHONPATH", agent_trace_cli())
        .env("HOME", home.path())
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(blamed.status.success(), "{}", text(&blamed.stderr));
    let blame: Value = serde_json::from_slice(&blamed.stdout).unwrap();
    let committed = git_text(repo.path(), &["show", "HEAD:src/lib.ts"]);
    let alice_line = committed
        .lines()
        .position(|l| l == ALICE_NEW)
        .map(|i| i as i64 + 1)
        .unwrap();
    let attributions = blame["attributions"].as_array().unwrap();
    let covering: Vec<&Value> = attributions
        .iter()
        .filter(|a| {
            a["start_line"].as_i64() <= Some(alice_line)
                && a["end_line"].as_i64() >= Some(alice_line)
        })
        .collect();
    assert_eq!(covering.len(), 1, "{blame}");
    assert_eq!(covering[0]["conversation_id"], "alice", "{blame}");
    assert!(
        attributions
            .iter()
            .filter(|a| a["conversation_id"].is_string())
            .all(|a| a["conversation_id"] == "alice"),
        "{blame}"
    );
}

/// `wit commit` runs wit's own pre-commit check too (15.6): an accepted contract on `alpha`
/// that alice's change breaks blocks her `wit commit` as it blocks `git commit`.
#[test]
fn wit_commit_is_blocked_by_a_contract_its_change_breaks() {
    let (repo, _daemon) = two_agents();
    let out = wit_ok(
        &repo,
        "bob",
        &["--json", "contract", "propose", "src/lib.ts:alpha"],
    );
    let proposed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let contract = proposed["contractId"].as_str().unwrap().to_string();
    wit_ok(&repo, "alice", &["contract", "accept", &contract]);
    // Past the edit gate (which would refuse it): a shell command of alice's harness.
    let broken = working(&repo).replace(
        "export function alpha(a: number): number {",
        "export function alpha(a: number, b: number): number {",
    );
    shell_change(&repo, "alice", "src/lib.ts", broken.as_bytes());
    let head = git_text(repo.path(), &["rev-parse", "HEAD"]);
    let out = wit_cmd(repo.path(), "alice")
        .args(["commit", "-m", "break alpha"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let said = text(&out.stderr);
    assert!(
        said.contains("pre-commit") && said.contains("src/lib.ts:alpha"),
        "{said}"
    );
    assert_eq!(git_text(repo.path(), &["rev-parse", "HEAD"]), head);
}

/// `session`'s harness runs a shell command (the gate lets it through, opening its window)
/// that writes `bytes` to `file`; the post-tool hook closes the window.
fn shell_change(repo: &Repo, session: &str, file: &str, bytes: &[u8]) {
    let (decision, said) = shell_verdict(repo, session, "true");
    assert_eq!(decision, "", "{said}");
    std::fs::write(repo.path().join(file), bytes).unwrap();
    let post = json!({
        "session_id": session,
        "cwd": repo.path().display().to_string(),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {},
        "tool_response": {},
    })
    .to_string();
    let out = with_harness(repo, session, |stand_in| {
        stand_in.run(&["hook", "post-tool", "--agent", "claude"], &post, &[])
    });
    assert_eq!(out.status.code(), Some(0));
}

/// A 6 MB file: `wit commit` commits the session's line of it, byte for byte.
#[test]
fn wit_commit_commits_a_line_of_a_six_megabyte_file() {
    let (repo, _daemon) = two_agents();
    let big: String = (0..180_000)
        .map(|i| format!("line {i:08} of a big generated file\n"))
        .collect();
    assert!(big.len() > 6_000_000);
    repo.write("big.txt", &big);
    git_text(repo.path(), &["add", "big.txt"]);
    git_text(repo.path(), &["commit", "-q", "-m", "big"]);
    let changed = big.replace("line 00075000 of", "line 00075000 (bob) of");
    shell_change(&repo, "bob", "big.txt", changed.as_bytes());
    let out = wit_ok(
        &repo,
        "bob",
        &["--json", "commit", "-m", "big line", "big.txt"],
    );
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["files"][0]["file"], "big.txt", "{done}");
    let blob = Command::new("git")
        .args(["cat-file", "blob", "HEAD:big.txt"])
        .current_dir(repo.path())
        .output()
        .unwrap()
        .stdout;
    assert!(blob == changed.as_bytes(), "the committed big.txt differs");
}

/// docs/protocol.md 15.3: lines no session wrote (a person's editor) are unowned work, which
/// the git guards judge under `[gate] unowned`: by default the agent is warned and the lines
/// are kept in a snapshot; under `unowned = "deny"` the command is refused, naming them.
#[test]
fn a_persons_unowned_lines_are_warned_about_by_default_and_refused_under_unowned_deny() {
    let repo = Repo::new();
    repo.write("src/lib.ts", LIB_TS);
    git_text(repo.path(), &["add", "."]);
    git_text(repo.path(), &["commit", "-q", "-m", "init"]);
    let _daemon = Daemon::start(&repo);
    wit_ok(&repo, "alice", &["register", "alice"]);
    // A person's edit: no tool-call window is open, so the lines are nobody's.
    std::fs::write(
        repo.path().join("src/lib.ts"),
        LIB_TS.replace(BOB_OLD, BOB_NEW),
    )
    .unwrap();
    let owned = crate::owners::owners_until(&repo, "src/lib.ts", |o| !o.lines.is_empty());
    assert_eq!(owned.lines.len(), 1, "{owned:?}");
    assert!(owned.lines[0].session_ids.is_empty(), "{owned:?}");

    let (decision, said) = shell_verdict(&repo, "alice", "git stash");
    assert_ne!(decision, "deny", "{said}");
    assert!(
        said.contains("uncommitted lines no session wrote"),
        "{said}"
    );
    assert!(said.contains("src/lib.ts (line 10)"), "{said}");
    assert!(said.contains("saved the uncommitted work of"), "{said}");

    std::fs::write(
        repo.path().join(".wit/config.toml"),
        "[gate]\nunowned = \"deny\"\n",
    )
    .unwrap();
    let (decision, said) = shell_verdict(&repo, "alice", "git stash");
    assert_eq!(decision, "deny", "{said}");
    assert!(said.contains("no session wrote"), "{said}");
    // A command that leaves the file alone passes.
    let (decision, said) = shell_verdict(&repo, "alice", "git status");
    assert_eq!(decision, "", "{said}");

    std::fs::write(
        repo.path().join(".wit/config.toml"),
        "[gate]\nunowned = \"off\"\n",
    )
    .unwrap();
    let (decision, said) = shell_verdict(&repo, "alice", "git stash");
    assert_ne!(decision, "deny", "{said}");
    assert!(!said.contains("no session wrote"), "{said}");
}
