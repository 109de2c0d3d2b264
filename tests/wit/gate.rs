//! The edit gate end to end: `wit hook pre-edit --agent ..` fed the recorded harness payloads
//! of `tests/fixtures/hooks/<harness>/` on stdin, against real daemons in temporary git
//! repositories; the post-commit hook; the `[gate]` policy files; failing open.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::*;

const AUTH_TS: &str =
    "export function validateToken(token: string): boolean {\n  return token.length > 3;\n}\n";

/// `wit` in `repo` with a clean wit environment.
fn wit_cmd(repo: &Path) -> Command {
    let mut command = Command::new(wit_bin());
    command
        .current_dir(repo)
        .envs(store_env(repo))
        .env_remove("WIT_SESSION")
        .env_remove("CLAUDE_SESSION_ID")
        .env_remove("WIT_REPO_ROOT")
        .env_remove("WIT_NO_AUTOSTART")
        // A loaded CI machine must not turn a verdict into fail-open.
        .env("WIT_GATE_TIMEOUT_MS", "20000")
        .stdin(Stdio::null());
    command
}

fn wit_as(repo: &Repo, session: &str, args: &[&str]) -> Output {
    let out = wit_cmd(repo.path())
        .env("WIT_SESSION", session)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "wit {args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A recorded payload with the repository and session filled in.
fn fixture(name: &str, repo: &Repo, session: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap()
        .replace("{{ROOT}}", &repo.path().display().to_string())
        .replace("{{SESSION}}", session)
}

/// Runs the gate for `agent` with `payload` on stdin and `env`, from the stand-in harness of
/// the payload's session (from this test process when it names none); checks it exits 0.
fn gate_with(repo: &Repo, agent: &str, payload: &str, env: &[(&str, &str)]) -> Output {
    let args = ["hook", "pre-edit", "--agent", agent];
    let out = match payload_session(payload) {
        Some(session) => with_harness(repo, &session, |stand_in| stand_in.run(&args, payload, env)),
        None => {
            let mut command = wit_cmd(repo.path());
            command
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            for (key, value) in env {
                command.env(key, value);
            }
            let mut child = command.spawn().unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(payload.as_bytes())
                .unwrap();
            child.wait_with_output().unwrap()
        }
    };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    out
}

fn gate(repo: &Repo, agent: &str, payload: &str) -> Output {
    gate_with(repo, agent, payload, &[])
}

/// The answer on stdout as JSON (`Value::Null` when there is none).
fn answer(out: &Output) -> Value {
    let stdout = text(&out.stdout);
    if stdout.trim().is_empty() {
        return Value::Null;
    }
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn git(repo: &Path, args: &[&str], session: &str) -> Output {
    git_with(repo, args, session, &[])
}

/// [`git`] with `env` added.
fn git_with(repo: &Path, args: &[&str], session: &str, env: &[(&str, &str)]) -> Output {
    Command::new("git")
        .current_dir(repo)
        .envs(env.iter().copied())
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("WIT_SESSION", session)
        .env("WIT_HOOK_TIMEOUT_MS", "20000")
        .env_remove("WIT_REPO_ROOT")
        .env_remove("CLAUDE_SESSION_ID")
        .args(args)
        .output()
        .unwrap()
}

/// A repository with `src/auth.ts` committed and a daemon serving it.
fn setup() -> (Repo, Daemon) {
    let repo = Repo::new();
    repo.write("src/auth.ts", AUTH_TS);
    repo.write("README.md", "# app\n");
    git(repo.path(), &["add", "."], "setup");
    let out = git(repo.path(), &["commit", "-q", "-m", "init"], "setup");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let daemon = Daemon::start(&repo);
    (repo, daemon)
}

fn observed_intents(repo: &Repo, session: &str, status: &str) -> Vec<Value> {
    let params = format!(r#"{{"sessionId":"{session}","status":"{status}"}}"#);
    let out = wit_as(repo, session, &["--json", "call", "intent.query", &params]);
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    all.as_array()
        .unwrap()
        .iter()
        .filter(|i| i["description"] == "observed edit")
        .cloned()
        .collect()
}

#[test]
fn another_live_sessions_lock_denies_with_an_actionable_reason_and_an_own_lock_allows() {
    let (repo, _daemon) = setup();
    wit_as(&repo, "bob", &["register", "claude-backend"]);
    wit_as(
        &repo,
        "bob",
        &["lock", "src/auth.ts:validateToken", "--ttl", "10m"],
    );

    let out = gate(
        &repo,
        "claude",
        &fixture("claude/edit-body.json", &repo, "alice"),
    );
    let value = answer(&out);
    let output = &value["hookSpecificOutput"];
    assert_eq!(output["hookEventName"], "PreToolUse");
    assert_eq!(output["permissionDecision"], "deny", "{value}");
    let reason = output["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "src/auth.ts:validateToken is locked by claude-backend (session bob, live) until "
        ),
        "{reason}"
    );
    assert!(
        reason.contains("left): wait with `wit lock src/auth.ts:validateToken --wait 10m`, or change something else"),
        "{reason}"
    );
    assert_eq!(reason.lines().count(), 1);

    // The holder itself edits freely: no answer at all (the harness's own prompt decides).
    let out = gate(
        &repo,
        "claude",
        &fixture("claude/edit-body.json", &repo, "bob"),
    );
    assert_eq!(answer(&out), Value::Null, "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");

    // Tools that are not edits are not looked at.
    let out = gate(
        &repo,
        "claude",
        &fixture("claude/read.json", &repo, "alice"),
    );
    assert_eq!(answer(&out), Value::Null);
}

#[test]
fn every_harness_gets_its_own_answer_shape() {
    let (repo, _daemon) = setup();
    wit_as(
        &repo,
        "bob",
        &["lock", "src/auth.ts:validateToken", "--ttl", "10m"],
    );
    let payloads = [
        ("claude", "claude/write.json"),
        ("claude", "claude/multiedit.json"),
        ("codex", "codex/apply_patch.json"),
        ("gemini", "gemini/replace.json"),
        ("gemini", "gemini/write_file.json"),
        ("cursor", "cursor/edit.json"),
        ("cursor", "cursor/write.json"),
        ("copilot", "copilot/edit.json"),
        ("copilot", "copilot/create.json"),
        ("copilot", "copilot/apply_patch.json"),
        ("opencode", "opencode/edit.json"),
        ("opencode", "opencode/write.json"),
        ("opencode", "opencode/apply_patch.json"),
    ];
    for (agent, name) in payloads {
        let denied = answer(&gate(&repo, agent, &fixture(name, &repo, "alice")));
        let reason = match agent {
            "claude" | "codex" => {
                assert_eq!(
                    denied["hookSpecificOutput"]["permissionDecision"], "deny",
                    "{name}"
                );
                denied["hookSpecificOutput"]["permissionDecisionReason"].clone()
            }
            // Cursor's hooks answer with `permission`, the agent's text in `agent_message`.
            "cursor" => {
                assert_eq!(denied["permission"], "deny", "{name}: {denied}");
                assert!(denied["user_message"].is_string(), "{name}: {denied}");
                denied["agent_message"].clone()
            }
            // Copilot CLI reads `permissionDecision` at the top level.
            "copilot" => {
                assert_eq!(denied["permissionDecision"], "deny", "{name}: {denied}");
                denied["permissionDecisionReason"].clone()
            }
            _ => {
                assert_eq!(denied["decision"], "deny", "{name}: {denied}");
                denied["reason"].clone()
            }
        };
        assert!(
            reason.as_str().unwrap().contains("session bob"),
            "{name}: {denied}"
        );
        let allowed = answer(&gate(&repo, agent, &fixture(name, &repo, "bob")));
        let expected = match agent {
            "gemini" | "cursor" => serde_json::json!({}),
            _ => Value::Null,
        };
        assert_eq!(allowed, expected, "{name}");
    }
    // Not an edit: Codex's shell tool, Copilot CLI's too.
    for (agent, name) in [
        ("codex", "codex/exec.json"),
        ("copilot", "copilot/bash.json"),
    ] {
        assert_eq!(
            answer(&gate(&repo, agent, &fixture(name, &repo, "alice"))),
            Value::Null,
            "{name}"
        );
    }
}

/// Cline answers in JSON; Windsurf and Kiro CLI block by exit code 2, the reason on stderr.
/// Their payloads follow their published hook references.
#[test]
fn cline_windsurf_and_kiro_refuse_a_locked_function_their_own_way() {
    let (repo, _daemon) = setup();
    wit_as(
        &repo,
        "bob",
        &["lock", "src/auth.ts:validateToken", "--ttl", "10m"],
    );
    let run = |agent: &str, name: &str, session: &str| {
        let payload = fixture(name, &repo, session);
        let args = ["hook", "pre-edit", "--agent", agent];
        // Kiro's payload names no session: the agent's WIT_SESSION does.
        with_harness(&repo, session, |stand_in| {
            stand_in.run(&args, &payload, &[("WIT_SESSION", session)])
        })
    };
    let denied = run("cline", "cline/replace_in_file.json", "alice");
    assert_eq!(denied.status.code(), Some(0));
    let value = answer(&denied);
    assert_eq!(value["cancel"], true, "{value}");
    assert!(
        value["errorMessage"]
            .as_str()
            .unwrap()
            .contains("session bob"),
        "{value}"
    );
    assert_eq!(
        answer(&run("cline", "cline/replace_in_file.json", "bob")),
        serde_json::json!({"cancel": false})
    );
    assert_eq!(
        answer(&run("cline", "cline/execute_command.json", "alice")),
        serde_json::json!({"cancel": false}),
        "a command that takes no one's work"
    );
    for (agent, name) in [
        ("windsurf", "windsurf/pre_write_code.json"),
        ("kiro", "kiro/fs_write.json"),
    ] {
        let denied = run(agent, name, "alice");
        assert_eq!(
            denied.status.code(),
            Some(2),
            "{name}: {}",
            text(&denied.stderr)
        );
        assert!(text(&denied.stderr).contains("session bob"), "{name}");
        let allowed = run(agent, name, "bob");
        assert_eq!(
            allowed.status.code(),
            Some(0),
            "{name}: {}",
            text(&allowed.stderr)
        );
        assert_eq!(text(&allowed.stdout), "", "{name}");
    }
    let file = std::fs::read_to_string(repo.path().join("src/auth.ts")).unwrap();
    assert_eq!(file, AUTH_TS, "the gate never writes");
}

#[test]
fn an_overlapping_intent_warns_and_a_broken_contract_denies() {
    let (repo, _daemon) = setup();
    wit_as(
        &repo,
        "bob",
        &[
            "declare",
            "-d",
            "Audit log",
            "-f",
            "src/auth.ts",
            "-s",
            "validateToken",
        ],
    );
    let out = gate(
        &repo,
        "claude",
        &fixture("claude/edit-body.json", &repo, "alice"),
    );
    let value = answer(&out);
    let output = &value["hookSpecificOutput"];
    assert!(output.get("permissionDecision").is_none(), "{value}");
    let context = output["additionalContext"].as_str().unwrap();
    assert!(
        context.contains("src/auth.ts: this edit overlaps intent "),
        "{context}"
    );
    assert!(
        context.contains("(\"Audit log\") of session bob (live): coordinate"),
        "{context}"
    );

    // A contract on the symbol, accepted by another session: changing the signature is denied.
    let proposed = wit_as(
        &repo,
        "carol",
        &["--json", "contract", "propose", "src/auth.ts:validateToken"],
    );
    let id = serde_json::from_slice::<Value>(&proposed.stdout).unwrap()["contractId"]
        .as_str()
        .unwrap()
        .to_string();
    wit_as(&repo, "dave", &["contract", "accept", &id]);
    let out = gate(
        &repo,
        "claude",
        &fixture("claude/edit-signature.json", &repo, "alice"),
    );
    let value = answer(&out);
    let output = &value["hookSpecificOutput"];
    assert_eq!(output["permissionDecision"], "deny", "{value}");
    let reason = output["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains(&format!(
            "src/auth.ts:validateToken would break accepted contract {id}"
        )),
        "{reason}"
    );
    assert!(reason.contains("`(token: string): boolean`"), "{reason}");
    assert!(
        reason.contains("`(token: string, strict: boolean): boolean`"),
        "{reason}"
    );
    assert!(
        reason.contains("restore the signature, or propose a new contract"),
        "{reason}"
    );
    // The intent still goes along as context.
    assert!(output["additionalContext"]
        .as_str()
        .unwrap()
        .contains("Audit log"));
}

#[test]
fn a_dead_holder_or_an_expired_lock_does_not_block() {
    let (repo, _daemon) = setup();
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id().to_string();
    wit_as(&repo, "bob", &["register", "bob-agent", "--pid", &pid]);
    wit_as(
        &repo,
        "bob",
        &["lock", "src/auth.ts:validateToken", "--ttl", "10m"],
    );
    let payload = fixture("claude/edit-body.json", &repo, "alice");
    let denied = answer(&gate(&repo, "claude", &payload));
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    // Dead at once, whether or not the pulse has reaped it yet.
    assert_eq!(answer(&gate(&repo, "claude", &payload)), Value::Null);
    wit_as(&repo, "bob", &["session", "end"]);

    wit_as(
        &repo,
        "carol",
        &[
            "call",
            "lock.acquire",
            r#"{"symbolPath":"src/auth.ts:validateToken","sessionId":"carol","ttlMs":1000}"#,
        ],
    );
    let denied = answer(&gate(&repo, "claude", &payload));
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(answer(&gate(&repo, "claude", &payload)), Value::Null);
}

#[test]
fn a_clean_edit_is_observed_once_and_resolved_by_the_commit() {
    let (repo, _daemon) = setup();
    wit_as(&repo, "alice", &["hook", "install"]);
    let payload = fixture("claude/edit-body.json", &repo, "alice");
    for _ in 0..3 {
        assert_eq!(answer(&gate(&repo, "claude", &payload)), Value::Null);
    }
    let open = observed_intents(&repo, "alice", "active");
    assert_eq!(open.len(), 1, "one intent, not one per edit: {open:?}");
    assert!(open[0]["files"].as_str().unwrap().contains("src/auth.ts"));

    // Others now see the work: bob's edit meets alice's observed intent.
    let value = answer(&gate(
        &repo,
        "claude",
        &fixture("claude/edit-body.json", &repo, "bob"),
    ));
    assert!(value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .contains("\"observed edit\""));

    // A commit of the file by alice resolves it (the post-commit hook).
    repo.write("src/auth.ts", &AUTH_TS.replace("> 3", "> 8"));
    git(repo.path(), &["add", "src/auth.ts"], "alice");
    let out = git(
        repo.path(),
        &["commit", "-q", "-m", "longer tokens"],
        "alice",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "the hooks are silent");
    assert!(observed_intents(&repo, "alice", "active").is_empty());
    assert_eq!(observed_intents(&repo, "alice", "resolved").len(), 1);

    // A commit by someone else, or of other files, leaves an observed intent alone.
    let erin = fixture("claude/edit-body.json", &repo, "erin")
        .replace("> 8;", "> 9;")
        .replace("> 3;", "> 8;");
    assert_eq!(answer(&gate(&repo, "claude", &erin)), Value::Null);
    assert_eq!(observed_intents(&repo, "erin", "active").len(), 1);
    repo.write("README.md", "# app, again\n");
    git(repo.path(), &["add", "README.md"], "erin");
    let out = git(repo.path(), &["commit", "-q", "-m", "docs"], "erin");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(observed_intents(&repo, "erin", "active").len(), 1);

    // Ending the session abandons it.
    wit_as(&repo, "erin", &["session", "end"]);
    assert!(observed_intents(&repo, "erin", "active").is_empty());
    assert_eq!(observed_intents(&repo, "erin", "abandoned").len(), 1);
}

#[test]
fn record_false_observes_nothing_and_the_post_commit_hook_is_fast_without_a_daemon() {
    let (repo, mut daemon) = setup();
    wit_as(&repo, "alice", &["hook", "install"]);
    repo.write("wit.toml", "[gate]\nrecord = false\n");
    let payload = fixture("claude/edit-body.json", &repo, "alice");
    assert_eq!(answer(&gate(&repo, "claude", &payload)), Value::Null);
    assert!(observed_intents(&repo, "alice", "active").is_empty());

    daemon.kill9();
    repo.write("src/auth.ts", &AUTH_TS.replace("> 3", "> 5"));
    git(repo.path(), &["add", "src/auth.ts"], "alice");
    let started = Instant::now();
    let out = git(
        repo.path(),
        &["commit", "-q", "--no-verify", "-m", "offline"],
        "alice",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn policy_files_choose_deny_ask_warn_or_off_with_the_local_file_winning() {
    let (repo, _daemon) = setup();
    wit_as(
        &repo,
        "bob",
        &["lock", "src/auth.ts:validateToken", "--ttl", "10m"],
    );
    let payload = fixture("claude/edit-body.json", &repo, "alice");
    let decision = |repo: &Repo| {
        let value = answer(&gate(repo, "claude", &payload));
        let output = &value["hookSpecificOutput"];
        (
            output["permissionDecision"].as_str().map(str::to_string),
            output["additionalContext"].is_string(),
        )
    };
    assert_eq!(decision(&repo), (Some("deny".into()), false));

    repo.write("wit.toml", "[gate]\nlocks = \"warn\"\n");
    assert_eq!(decision(&repo), (None, true));
    repo.write(".wit/config.toml", "[gate]\nlocks = \"ask\"\n");
    assert_eq!(decision(&repo), (Some("ask".into()), false));
    // Codex cannot ask: it denies and says why.
    let codex = answer(&gate(
        &repo,
        "codex",
        &fixture("codex/apply_patch.json", &repo, "alice"),
    ));
    assert_eq!(codex["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(codex["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("ask the user"));
    repo.write(".wit/config.toml", "[gate]\nlocks = \"off\"\n");
    assert_eq!(decision(&repo), (None, false));

    let out = wit_as(&repo, "alice", &["hook", "policy"]);
    let shown = text(&out.stdout);
    assert!(shown.contains("wit.toml, then .wit/config.toml"), "{shown}");
    assert!(shown.contains("locks     = off"), "{shown}");

    // A bad value: every edit goes through with a note, and `wit hook policy` says what is wrong.
    repo.write(".wit/config.toml", "[gate]\nlocks = \"block\"\n");
    let out = gate(&repo, "claude", &payload);
    assert_eq!(answer(&out), Value::Null);
    let note = text(&out.stderr);
    assert!(note.contains("gate policy ignored"), "{note}");
    assert!(note.contains("locks = \"block\""), "{note}");
    let out = wit_cmd(repo.path())
        .args(["hook", "policy"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("expected \"deny\", \"ask\", \"warn\" or \"off\""));
}

#[test]
fn the_gate_fails_open_fast() {
    let (repo, mut daemon) = setup();
    let payload = fixture("claude/edit-body.json", &repo, "alice");

    // Malformed payloads: allowed, with a note.
    for bad in [
        "{not json",
        "[]",
        r#"{"tool_name": "Edit", "tool_input": {}}"#,
    ] {
        let out = gate(&repo, "claude", bad);
        assert_eq!(answer(&out), Value::Null, "{bad}");
        assert!(
            text(&out.stderr).contains("edit allowed"),
            "{bad}: {}",
            text(&out.stderr)
        );
    }
    // A file outside the repository, and a file no language supports: silently allowed.
    let out = gate(
        &repo,
        "claude",
        &fixture("claude/outside.json", &repo, "alice"),
    );
    assert_eq!(
        (answer(&out), text(&out.stderr)),
        (Value::Null, String::new())
    );
    let readme = payload.replace("src/auth.ts", "README.md");
    let out = gate(&repo, "claude", &readme);
    assert_eq!(
        (answer(&out), text(&out.stderr)),
        (Value::Null, String::new())
    );

    // An old text that is not in the file: the harness will refuse it anyway.
    let stale = payload.replace("token.length > 3", "token.size > 3");
    let out = gate(&repo, "claude", &stale);
    assert_eq!(answer(&out), Value::Null);
    assert!(
        text(&out.stderr).contains("edit not checked"),
        "{}",
        text(&out.stderr)
    );

    // No daemon: allowed at once with a note, and none is started when auto-start is off.
    daemon.kill9();
    let started = Instant::now();
    let out = gate_with(
        &repo,
        "claude",
        &payload,
        &[("WIT_NO_AUTOSTART", "1"), ("WIT_GATE_TIMEOUT_MS", "1000")],
    );
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(answer(&out), Value::Null);
    assert!(
        text(&out.stderr).contains("edit not checked"),
        "{}",
        text(&out.stderr)
    );

    // A repository without `.wit/` is not gated at all.
    let bare = Repo::new();
    bare.write("src/auth.ts", AUTH_TS);
    let out = gate(
        &bare,
        "claude",
        &fixture("claude/edit-body.json", &bare, "alice"),
    );
    assert_eq!(
        (answer(&out), text(&out.stderr)),
        (Value::Null, String::new())
    );
    assert!(!bare.path().join(".wit").exists());
}

#[test]
fn the_pre_commit_hook_is_silent_without_supported_files_and_asks_no_daemon() {
    let (repo, mut daemon) = setup();
    wit_as(&repo, "alice", &["hook", "install"]);
    daemon.kill9();
    repo.write("README.md", "# docs only\n");
    git(repo.path(), &["add", "README.md"], "alice");
    let out = git(repo.path(), &["commit", "-q", "-m", "docs"], "alice");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "a docs-only commit is silent");
    assert!(
        try_post(&repo.socket(), PING).is_err(),
        "no daemon was started"
    );
}

#[test]
fn wit_init_wires_the_gate_for_every_harness_idempotently_and_removably() {
    let repo = Repo::new();
    repo.write(
        ".claude/settings.json",
        "{\n  \"permissions\": {\"deny\": [\"Read(.env)\"]}\n}\n",
    );
    let init = |args: &[&str]| {
        let out = wit_cmd(repo.path())
            .args(["init", "--no-docs", "--no-hooks"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    };
    let agents = [
        "--agent", "claude", "--agent", "codex", "--agent", "gemini", "--agent", "cursor",
    ];
    init(&agents);
    let files = [
        ".mcp.json",
        ".claude/settings.json",
        ".codex/config.toml",
        ".codex/hooks.json",
        ".gemini/settings.json",
        ".cursor/hooks.json",
    ];
    let read = |file: &str| std::fs::read_to_string(repo.path().join(file)).ok();
    let first: Vec<Option<String>> = files.iter().map(|f| read(f)).collect();
    assert!(first.iter().all(Option::is_some), "{first:?}");
    let settings: Value = serde_json::from_str(first[1].as_deref().unwrap()).unwrap();
    assert_eq!(settings["permissions"]["deny"][0], "Read(.env)");
    let gate = &settings["hooks"]["PreToolUse"][0];
    assert_eq!(gate["matcher"], "Edit|Write|NotebookEdit|Bash|PowerShell");
    assert!(gate["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .ends_with("hook pre-edit --agent claude"));
    let gemini: Value = serde_json::from_str(first[4].as_deref().unwrap()).unwrap();
    assert_eq!(
        gemini["hooks"]["BeforeTool"][0]["matcher"],
        "replace|write_file|run_shell_command"
    );

    init(&agents);
    let second: Vec<Option<String>> = files.iter().map(|f| read(f)).collect();
    assert_eq!(first, second, "a second run is byte-identical");

    let out = wit_cmd(repo.path())
        .args(["init", "--remove"])
        .args(agents)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let left: Vec<Option<String>> = files.iter().map(|f| read(f)).collect();
    assert_eq!(
        left[1]
            .as_deref()
            .map(|t| serde_json::from_str::<Value>(t).unwrap()),
        Some(serde_json::json!({"permissions": {"deny": ["Read(.env)"]}}))
    );
    assert!(
        left.iter().enumerate().all(|(i, f)| i == 1 || f.is_none()),
        "files that only held wit's entries are gone: {left:?}"
    );
    let _ = wit_cmd(repo.path()).args(["daemon", "stop"]).output();
}

#[test]
fn the_claude_plugin_runs_the_gate_on_edits() {
    let hooks: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("integrations/claude-code/hooks/hooks.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let group = &hooks["hooks"]["PreToolUse"][0];
    assert_eq!(group["matcher"], "Edit|Write|NotebookEdit|Bash|PowerShell");
    assert!(group["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .contains("wit hook pre-edit --agent claude"));
}

#[test]
fn the_agents_own_mcp_session_does_not_stop_its_edits() {
    let (repo, _daemon) = setup();
    // The agent's `wit mcp` registers with the agent's pid; the hook's harness is the same
    // process (here: alice's stand-in harness, which runs the hook).
    let me = harness_pid_of(&repo, "alice").to_string();
    wit_as(
        &repo,
        "mcp-of-alice",
        &["register", "claude-code", "--pid", &me],
    );
    // The harness's own session is registered with the same process (Claude's SessionStart
    // does it): the daemon's rules then treat both as one agent.
    wit_as(&repo, "alice", &["register", "claude-code", "--pid", &me]);
    wit_as(
        &repo,
        "mcp-of-alice",
        &["lock", "src/auth.ts:validateToken"],
    );
    let out = gate(
        &repo,
        "claude",
        &fixture("claude/edit-body.json", &repo, "alice"),
    );
    assert_eq!(answer(&out), Value::Null, "{}", text(&out.stderr));
    // Another agent's lock (another process) still denies.
    let mut other = Command::new("sleep").arg("600").spawn().unwrap();
    let pid = other.id().to_string();
    wit_as(
        &repo,
        "mcp-of-alice",
        &["release", "src/auth.ts:validateToken"],
    );
    wit_as(&repo, "mcp-of-bob", &["register", "codex", "--pid", &pid]);
    wit_as(&repo, "mcp-of-bob", &["lock", "src/auth.ts:validateToken"]);
    let out = gate(
        &repo,
        "claude",
        &fixture("claude/edit-body.json", &repo, "alice"),
    );
    assert_eq!(
        answer(&out)["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    other.kill().unwrap();
    other.wait().unwrap();
}

#[test]
fn related_work_is_context_and_never_stops_the_edit() {
    let repo = Repo::new();
    repo.write(
        "src/auth.ts",
        "export function validateToken(token: string): boolean {\n  const t = token.trim();\n  const n = t.length;\n  const ok = n > 3;\n  return ok;\n}\n",
    );
    let _daemon = Daemon::start(&repo);
    // Bob's recorded edit on the function's last statement (line 5).
    block_on(async {
        let bob = repo
            .client()
            .edit_preflight(wit::protocol::EditPreflightParams {
                session_id: "bob".into(),
                file: "src/auth.ts".into(),
                edits: vec![wit::protocol::EditPreflightParamsEditsItem {
                    old_text: "  return ok;".into(),
                    new_text: "  return ok && n < 99;".into(),
                    replace_all: None,
                }],
                content: None,
                record: Some(true),
            })
            .await
            .unwrap();
        assert!(bob.conflicts.is_empty());
    });
    let payload = serde_json::json!({
        "session_id": "alice",
        "cwd": repo.path().display().to_string(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {
            "file_path": repo.path().join("src/auth.ts").display().to_string(),
            "old_string": "  const t = token.trim();",
            "new_string": "  const t = token.trim().toLowerCase();",
        },
    })
    .to_string();
    // Strict policy for collisions: context still never denies.
    std::fs::write(
        repo.path().join("wit.toml"),
        "[gate]\nintents = \"deny\"\nlocks = \"deny\"\n",
    )
    .unwrap();
    let out = gate(&repo, "claude", &payload);
    let value = answer(&out);
    let output = &value["hookSpecificOutput"];
    assert!(output.get("permissionDecision").is_none(), "{value}");
    let context = output["additionalContext"].as_str().unwrap();
    assert!(
        context.contains("session bob (live) also works in src/auth.ts:validateToken"),
        "{context}"
    );
    // `[gate] related = "off"`: nothing to say.
    std::fs::write(
        repo.path().join("wit.toml"),
        "[gate]\nintents = \"deny\"\nrelated = \"off\"\n",
    )
    .unwrap();
    let out = gate(&repo, "claude", &payload);
    assert_eq!(answer(&out), Value::Null, "{}", text(&out.stderr));
}

/// `src/auth.ts` with the word `string` in two functions, the locked one among them.
const TWO_FUNCTIONS_TS: &str = "export function validateToken(token: string): boolean {\n  return token.length > 3;\n}\n\nexport function formatName(name: string): string {\n  return name.trim();\n}\n";

#[test]
fn an_edit_whose_text_occurs_several_times_is_checked_at_every_occurrence() {
    let (repo, _daemon) = setup();
    repo.write("src/auth.ts", TWO_FUNCTIONS_TS);
    wit_as(
        &repo,
        "bob",
        &["lock", "src/auth.ts:validateToken", "--ttl", "10m"],
    );
    // Gemini CLI 0.61's `replace` with `allow_multiple: true`: every occurrence.
    let multiple = fixture("gemini/replace_allow_multiple.json", &repo, "alice");
    let denied = answer(&gate(&repo, "gemini", &multiple));
    assert_eq!(denied["decision"], "deny", "{denied}");
    assert!(
        denied["reason"]
            .as_str()
            .unwrap()
            .contains("src/auth.ts:validateToken is locked by session bob"),
        "{denied}"
    );
    // Without it (the harness would refuse a text that is not unique, but the gate never
    // lets it through unchecked), and Claude Code's Edit alike.
    let single = multiple.replace("\"allow_multiple\": true", "\"allow_multiple\": false");
    assert_eq!(answer(&gate(&repo, "gemini", &single))["decision"], "deny");
    let claude = fixture("claude/edit-body.json", &repo, "alice")
        .replace("\"  return token.length > 3;\"", "\"string\"");
    assert!(claude.contains("\"old_string\": \"string\""), "{claude}");
    let value = answer(&gate(&repo, "claude", &claude));
    assert_eq!(
        value["hookSpecificOutput"]["permissionDecision"], "deny",
        "{value}"
    );
    // The holder's own edit of every occurrence goes through.
    assert_eq!(
        answer(&gate(
            &repo,
            "gemini",
            &fixture("gemini/replace_allow_multiple.json", &repo, "bob")
        )),
        serde_json::json!({})
    );
}

#[test]
fn gemini_gets_warnings_after_the_tool_and_asks_stay_asks() {
    let (repo, _daemon) = setup();
    wit_as(
        &repo,
        "bob",
        &[
            "declare",
            "-d",
            "Audit log",
            "-f",
            "src/auth.ts",
            "-s",
            "validateToken",
        ],
    );
    // BeforeTool: Gemini CLI ignores its additionalContext, so the person sees the warning
    // (systemMessage) and the AfterTool call of the same command gives it to the model.
    let before = answer(&gate(
        &repo,
        "gemini",
        &fixture("gemini/replace.json", &repo, "alice"),
    ));
    assert!(before.get("decision").is_none(), "{before}");
    assert!(before.get("hookSpecificOutput").is_none(), "{before}");
    assert!(
        before["systemMessage"]
            .as_str()
            .unwrap()
            .contains("overlaps intent"),
        "{before}"
    );
    let after_payload = fixture("gemini/after_tool.json", &repo, "alice");
    let after = answer(&gate(&repo, "gemini", &after_payload));
    assert_eq!(after["hookSpecificOutput"]["hookEventName"], "AfterTool");
    let context = after["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("this edit overlaps intent ") && context.contains("\"Audit log\""),
        "{context}"
    );
    // Each warning once; another session's AfterTool gets nothing of alice's.
    assert_eq!(
        answer(&gate(&repo, "gemini", &after_payload)),
        serde_json::json!({})
    );
    assert_eq!(
        answer(&gate(
            &repo,
            "gemini",
            &fixture("gemini/after_tool.json", &repo, "carol")
        )),
        serde_json::json!({})
    );

    // A lock under `locks = "ask"`: Gemini CLI and Cursor ask; Copilot CLI cannot and denies.
    wit_as(
        &repo,
        "bob",
        &["lock", "src/auth.ts:validateToken", "--ttl", "10m"],
    );
    repo.write("wit.toml", "[gate]\nlocks = \"ask\"\nintents = \"off\"\n");
    let gemini = answer(&gate(
        &repo,
        "gemini",
        &fixture("gemini/replace.json", &repo, "alice"),
    ));
    assert_eq!(gemini["decision"], "ask", "{gemini}");
    assert!(gemini["reason"].as_str().unwrap().contains("is locked by"));
    let cursor = answer(&gate(
        &repo,
        "cursor",
        &fixture("cursor/edit.json", &repo, "alice"),
    ));
    assert_eq!(cursor["permission"], "ask", "{cursor}");
    let copilot = answer(&gate(
        &repo,
        "copilot",
        &fixture("copilot/edit.json", &repo, "alice"),
    ));
    assert_eq!(copilot["permissionDecision"], "deny", "{copilot}");
    assert!(copilot["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("ask the user"));
    let opencode = answer(&gate(
        &repo,
        "opencode",
        &fixture("opencode/edit.json", &repo, "alice"),
    ));
    assert_eq!(opencode["decision"], "ask", "{opencode}");
}

/// `wit` in `repo` with `home` as HOME (the harnesses' per-user trust files live there).
fn wit_home(repo: &Repo, home: &Path, args: &[&str]) -> Output {
    wit_cmd(repo.path())
        .env("HOME", home)
        .env_remove("CODEX_HOME")
        // A budget Copilot CLI's 5 s hook timeout leaves a margin for (doctor checks it).
        .env("WIT_GATE_TIMEOUT_MS", "2000")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn wit_init_takes_a_comma_list_and_wit_doctor_says_what_each_harness_still_needs() {
    let repo = Repo::new();
    let home = tempfile::tempdir().unwrap();
    let out = wit_home(
        &repo,
        home.path(),
        &[
            "init",
            "--no-docs",
            "--no-hooks",
            "--agent",
            "claude,codex,gemini,cursor,copilot,opencode",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    // It ends with what is still needed: Codex's two trust steps, Gemini's trusted folder,
    // Claude's approval of the MCP server.
    let needed = &printed[printed.find("Still needed").expect(&printed)..];
    for expected in [
        "codex     ✗ the project is not trusted",
        "codex     ✗ Codex gate inactive: `wit hook pre-edit --agent codex` is not trusted yet",
        "gemini    ✗ the folder is not trusted",
        "claude    ✗ the wit server of .mcp.json is not approved yet",
    ] {
        assert!(needed.contains(expected), "{expected}: {needed}");
    }
    for file in [
        ".mcp.json",
        ".claude/settings.json",
        ".codex/config.toml",
        ".codex/hooks.json",
        ".gemini/settings.json",
        ".cursor/mcp.json",
        ".cursor/hooks.json",
        ".github/mcp.json",
        ".github/hooks/wit.json",
        "opencode.json",
        ".opencode/plugins/wit.js",
    ] {
        assert!(repo.path().join(file).is_file(), "{file}");
    }
    let gemini: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join(".gemini/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(gemini["mcpServers"]["wit"]["args"][0], "mcp");
    assert_eq!(
        gemini["hooks"]["AfterTool"][0]["matcher"],
        "replace|write_file"
    );
    let copilot: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join(".github/hooks/wit.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(copilot["version"], 1);
    assert!(copilot["hooks"]["preToolUse"][0]["bash"]
        .as_str()
        .unwrap()
        .ends_with("hook pre-edit --agent copilot"));

    let doctor = |home: &Path| {
        let out = wit_home(&repo, home, &["--json", "doctor"]);
        let value: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
        (out.status.code(), value)
    };
    let (code, report) = doctor(home.path());
    assert_eq!(code, Some(1), "{report}");
    // Claude's server approval, Codex's project trust and its two hooks' trust (the gate and
    // the news hook), Gemini's folder trust.
    assert_eq!(report["problems"], 5, "{report}");
    assert_eq!(report["agents"].as_array().unwrap().len(), 6);
    // Every harness's gate answered a dry run with its own payload.
    let dry_runs: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["what"].as_str().unwrap().starts_with("dry run"))
        .collect();
    assert_eq!(dry_runs.len(), 6, "{report}");
    assert!(dry_runs.iter().all(|f| f["ok"] == true), "{report}");

    // The fixes the lines give: Codex trust, Gemini trusted folder, Claude's approval.
    let root = repo.path().display().to_string();
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    std::fs::write(
        home.path().join(".codex/config.toml"),
        format!(
            "[projects.\"{root}\"]\ntrust_level = \"trusted\"\n\n[hooks.state.\"{root}/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:0\"\n\n[hooks.state.\"{root}/.codex/hooks.json:post_tool_use:0:0\"]\ntrusted_hash = \"sha256:0\"\n"
        ),
    )
    .unwrap();
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    std::fs::write(
        home.path().join(".gemini/trustedFolders.json"),
        serde_json::json!({ root.clone(): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    repo.write(
        ".claude/settings.local.json",
        "{\"enabledMcpjsonServers\": [\"wit\"]}",
    );
    let (code, report) = doctor(home.path());
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["problems"], 0);

    // Gemini's hooks turned off, or wit's hook disabled by name: said, with the fix.
    std::fs::write(
        home.path().join(".gemini/settings.json"),
        "{\"hooksConfig\": {\"disabled\": [\"wit-edit-gate\"]}}",
    )
    .unwrap();
    let (_, report) = doctor(home.path());
    let line = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["ok"] == false)
        .cloned()
        .unwrap();
    assert!(
        line["what"]
            .as_str()
            .unwrap()
            .contains("wit's hook is disabled"),
        "{line}"
    );
    assert!(line["fix"]
        .as_str()
        .unwrap()
        .contains("hooksConfig.disabled"));

    // A moved binary: the dry run of the configured command fails and says so.
    let hooks = repo.path().join(".cursor/hooks.json");
    let moved = std::fs::read_to_string(&hooks)
        .unwrap()
        .replace(&wit_bin().display().to_string(), "/nonexistent/wit");
    std::fs::write(&hooks, moved).unwrap();
    let (_, report) = doctor(home.path());
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["ok"] == false
                && f["agent"] == "cursor"
                && f["what"].as_str().unwrap().starts_with("dry run")),
        "{report}"
    );
    let _ = wit_cmd(repo.path()).args(["daemon", "stop"]).output();
}

#[test]
fn a_deny_names_the_holders_session_in_full() {
    let (repo, _daemon) = setup();
    let holder = "holder-3f1c2b7e-9d4a-4c8e-b1f0-0123456789ab";
    wit_as(&repo, holder, &["register", "codex-agent"]);
    wit_as(
        &repo,
        holder,
        &["lock", "src/auth.ts:validateToken", "--ttl", "10m"],
    );
    let out = gate(
        &repo,
        "claude",
        &fixture("claude/edit-body.json", &repo, "alice"),
    );
    let value = answer(&out);
    let reason = value["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains(&format!("codex-agent (session {holder}, live)")),
        "{reason}"
    );
    assert!(!reason.contains('…'), "{reason}");
}

/// The gate's payload on stdin of a directly spawned hook whose stdin stays open (as some
/// harnesses leave it); returns the child and the open pipe.
fn gate_keeping_stdin_open(
    repo: &Repo,
    payload: &str,
    env: &[(&str, &str)],
) -> (std::process::Child, std::process::ChildStdin) {
    let mut command = wit_cmd(repo.path());
    command
        .args(["hook", "pre-edit", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(payload.as_bytes()).unwrap();
    stdin.flush().unwrap();
    (child, stdin)
}

/// Waits for `child` (at most a minute: a hang fails the test rather than the suite) and
/// returns its output.
fn finished(mut child: std::process::Child) -> Output {
    let status = wait_with_timeout(&mut child, Duration::from_secs(60));
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    Output {
        status,
        stdout,
        stderr,
    }
}

#[test]
fn the_gate_ends_by_its_deadline_when_stdin_stays_open() {
    let (repo, _daemon) = setup();
    wit_as(
        &repo,
        "bob",
        &["lock", "src/auth.ts:validateToken", "--ttl", "10m"],
    );
    // A whole payload and stdin left open: answered at once, without waiting for EOF.
    let payload = fixture("claude/edit-body.json", &repo, "alice");
    let (child, stdin) = gate_keeping_stdin_open(&repo, &payload, &[]);
    let out = finished(child);
    drop(stdin);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        answer(&out)["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "{}",
        text(&out.stderr)
    );
    // Half a payload and stdin left open: allowed at the deadline, with the note.
    let half = &payload[..payload.len() / 2];
    let (child, stdin) = gate_keeping_stdin_open(&repo, half, &[("WIT_GATE_TIMEOUT_MS", "300")]);
    let out = finished(child);
    drop(stdin);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(answer(&out), Value::Null);
    assert!(
        text(&out.stderr).contains("no payload on stdin within 300 ms; edit allowed"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_gate_ends_by_its_deadline_while_another_process_holds_the_launch_lock() {
    let (repo, mut daemon) = setup();
    daemon.kill9();
    // Another process is starting the daemon (and never finishes): it holds the launch lock.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(repo.path().join(".wit/launch.lock"))
        .unwrap();
    lock.lock().unwrap();
    let payload = fixture("claude/edit-body.json", &repo, "alice");
    let (child, stdin) =
        gate_keeping_stdin_open(&repo, &payload, &[("WIT_GATE_TIMEOUT_MS", "300")]);
    drop(stdin);
    let out = finished(child);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(answer(&out), Value::Null);
    assert!(
        text(&out.stderr).contains("edit not checked (no answer within 300 ms); edit allowed"),
        "{}",
        text(&out.stderr)
    );
    drop(lock);
}

#[test]
fn a_harness_that_exits_takes_its_observed_work_with_it() {
    let (repo, _daemon) = setup();
    let mut claude = StandIn::spawn(&repo, "claude");
    let payload = fixture("claude/edit-body.json", &repo, "claude-1");
    let out = claude.run(&["hook", "pre-edit", "--agent", "claude"], &payload, &[]);
    assert_eq!(answer(&out), Value::Null, "{}", text(&out.stderr));
    assert_eq!(observed_intents(&repo, "claude-1", "active").len(), 1);
    // The gate gave the session its pulse: the harness's pid.
    let sessions: Value = serde_json::from_slice(
        &wit_as(&repo, "x", &["--json", "call", "session.list", "{}"]).stdout,
    )
    .unwrap();
    let session = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == "claude-1")
        .unwrap()
        .clone();
    assert_eq!(session["pid"], i64::from(claude.pid()), "{session}");
    assert_eq!(session["live"], true);

    // Claude exits: within seconds its observed work is abandoned (docs/protocol.md 7.3).
    claude.exit();
    let deadline = Instant::now() + Duration::from_secs(20);
    while observed_intents(&repo, "claude-1", "abandoned").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the observed intent was not abandoned"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(observed_intents(&repo, "claude-1", "active").is_empty());
    // A later edit of the same code by another harness is not told to coordinate with it.
    let codex = fixture("claude/edit-body.json", &repo, "codex-1");
    let out = gate(&repo, "claude", &codex);
    assert_eq!(answer(&out), Value::Null, "{}", text(&out.stderr));
}

#[test]
fn the_post_commit_hook_resolves_the_observed_work_of_the_session_that_recorded_it() {
    let (repo, _daemon) = setup();
    wit_as(&repo, "committer", &["hook", "install"]);
    // The harness's session edits (observed); a person (another session) commits the file.
    let payload = fixture("claude/edit-body.json", &repo, "claude-1");
    assert_eq!(answer(&gate(&repo, "claude", &payload)), Value::Null);
    assert_eq!(observed_intents(&repo, "claude-1", "active").len(), 1);
    repo.write("src/auth.ts", &AUTH_TS.replace("> 3", "> 8"));
    git(repo.path(), &["add", "src/auth.ts"], "committer");
    // The staged lines are the live agent's: the pre-commit hook stops a plain commit of them
    // (safe git), and a person who means it says so.
    let out = git(repo.path(), &["commit", "-q", "-m", "longer"], "committer");
    assert!(!out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("claude-1"),
        "{}",
        text(&out.stderr)
    );
    let out = git_with(
        repo.path(),
        &["commit", "-q", "-m", "longer"],
        "committer",
        &[("WIT_ALLOW_FOREIGN", "1")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(observed_intents(&repo, "claude-1", "active").is_empty());
    assert_eq!(observed_intents(&repo, "claude-1", "resolved").len(), 1);
}

/// A PostToolUse payload of Claude Code for `session` in `repo`.
fn post_tool_payload(repo: &Repo, session: &str) -> String {
    serde_json::json!({
        "session_id": session,
        "cwd": repo.path().display().to_string(),
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "README.md"},
        "tool_response": {},
    })
    .to_string()
}

/// Runs the news hook as `session`'s harness; the context it gave (`None`: nothing).
fn news(repo: &Repo, session: &str) -> Option<String> {
    let payload = post_tool_payload(repo, session);
    let out = with_harness(repo, session, |stand_in| {
        stand_in.run(&["hook", "post-tool", "--agent", "claude"], &payload, &[])
    });
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    let value = answer(&out);
    if value.is_null() {
        return None;
    }
    assert_eq!(value["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    Some(
        value["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

/// Alice's news cursor starts, then she edits `validateToken` through the gate: her own edit
/// is no news to her.
fn alice_edits_validate_token(repo: &Repo) {
    assert_eq!(news(repo, "alice"), None);
    let edit = fixture("claude/edit-body.json", repo, "alice");
    assert_eq!(answer(&gate(repo, "claude", &edit)), Value::Null);
    assert_eq!(news(repo, "alice"), None);
}

/// Bob registers as `bob-agent` and declares an audit log in `validateToken`.
fn bob_declares_an_audit_log(repo: &Repo) {
    wit_as(repo, "bob", &["register", "bob-agent"]);
    wit_as(
        repo,
        "bob",
        &[
            "declare",
            "-d",
            "Audit log",
            "-f",
            "src/auth.ts",
            "-s",
            "validateToken",
        ],
    );
}

#[test]
fn news_is_told_once_one_line_per_topic_and_nothing_when_nothing_changed() {
    let (repo, _daemon) = setup();
    alice_edits_validate_token(&repo);

    // Another agent declares work on the function alice edits: told once.
    bob_declares_an_audit_log(&repo);
    let told = news(&repo, "alice").expect("news of bob's work");
    assert!(
        told.starts_with("wit news since your last tool call:\n- "),
        "{told}"
    );
    assert!(
        told.contains("bob-agent (session bob) works on src/auth.ts (validateToken)"),
        "{told}"
    );
    assert!(told.contains("\"Audit log\""), "{told}");
    assert_eq!(told.lines().count(), 2, "{told}");
    assert_eq!(news(&repo, "alice"), None, "each piece of news once");

    // More of the same topic within five minutes waits; another topic is told at once.
    wit_as(
        &repo,
        "carol",
        &[
            "declare",
            "-d",
            "Rename",
            "-f",
            "src/auth.ts",
            "-s",
            "validateToken",
        ],
    );
    wit_as(
        &repo,
        "bob",
        &["contract", "propose", "src/auth.ts:validateToken"],
    );
    let told = news(&repo, "alice").expect("news of the contract");
    assert!(
        told.contains("proposed contract") && told.contains("src/auth.ts:validateToken"),
        "{told}"
    );
    assert!(!told.contains("carol"), "the collision topic waits: {told}");

    // Its own lock about to expire.
    wit_as(
        &repo,
        "alice",
        &["lock", "src/auth.ts:validateToken", "--ttl", "30s"],
    );
    let told = news(&repo, "alice").expect("news of the expiry");
    assert!(
        told.contains("your lock on src/auth.ts:validateToken expires in"),
        "{told}"
    );
    assert_eq!(news(&repo, "alice"), None);

    // Work elsewhere is no news to alice.
    wit_as(
        &repo,
        "dave",
        &["declare", "-d", "Docs", "-f", "src/other.ts"],
    );
    assert_eq!(news(&repo, "alice"), None);
}

#[test]
fn news_names_sessions_registered_or_renamed_after_its_first_line() {
    let (repo, _daemon) = setup();
    let symbol = "src/auth.ts:validateToken";
    alice_edits_validate_token(&repo);
    wit_as(&repo, "alice", &["lock", symbol, "--ttl", "10m"]);

    // The first news that names someone.
    bob_declares_an_audit_log(&repo);
    let told = news(&repo, "alice").expect("news of bob's work");
    assert!(told.contains("bob-agent (session bob) works on"), "{told}");

    // A session registered since, under its name; one registered again, under its new one.
    wit_as(&repo, "carol", &["register", "carol-agent"]);
    wit_as(&repo, "carol", &["contract", "propose", symbol]);
    let told = news(&repo, "alice").expect("news of carol's contract");
    assert!(
        told.contains("carol-agent (session carol) proposed contract"),
        "{told}"
    );
    wit_as(&repo, "bob", &["register", "bob-renamed"]);
    let bob = waiting_for(&repo, symbol, "bob", 1);
    let told = news(&repo, "alice").expect("news of bob's wait");
    assert!(
        told.contains("bob-renamed (session bob) waits for your lock"),
        "{told}"
    );
    drop(bob);
}

/// A raw connection holding a waiting `lock.acquire` of `session` on `symbol` (dropped: the
/// wait ends), once `lock.waits` lists `count` waits.
fn waiting_for(
    repo: &Repo,
    symbol: &str,
    session: &str,
    count: usize,
) -> std::os::unix::net::UnixStream {
    let body = serde_json::json!({"jsonrpc": "2.0", "witVersion": "1", "id": 1,
        "method": "lock.acquire",
        "params": {"symbolPath": symbol, "sessionId": session, "waitMs": 60_000}})
    .to_string();
    let mut stream = std::os::unix::net::UnixStream::connect(repo.socket()).unwrap();
    write_request(&mut stream, "POST", "/rpc", body.as_bytes()).unwrap();
    let client = repo.client();
    for _ in 0..400 {
        let waits = block_on(client.call_raw("lock.waits", serde_json::json!({}))).unwrap();
        if waits.as_array().unwrap().len() == count {
            return stream;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{session} never showed in lock.waits");
}

#[test]
fn a_wait_for_your_lock_is_news_once_and_under_the_topics_window() {
    let (repo, _daemon) = setup();
    let symbol = "src/auth.ts:validateToken";
    wit_as(&repo, "alice", &["lock", symbol, "--ttl", "10m"]);
    // The first call only starts the cursor; nobody waits yet.
    assert_eq!(news(&repo, "alice"), None);

    wit_as(&repo, "bob", &["register", "bob-agent"]);
    let bob = waiting_for(&repo, symbol, "bob", 1);
    let told = news(&repo, "alice").expect("news of bob's wait");
    let line = told
        .lines()
        .find(|l| l.starts_with("- someone waits for your lock: "))
        .unwrap_or_else(|| panic!("{told}"));
    let rest = line
        .strip_prefix(
            "- someone waits for your lock: bob-agent (session bob) waits for your lock on src/auth.ts:validateToken (for ",
        )
        .unwrap_or_else(|| panic!("{told}"));
    let (seconds, _) = rest.split_once(" s)").unwrap_or_else(|| panic!("{told}"));
    assert!(seconds.parse::<u64>().is_ok(), "{told}");
    assert_eq!(news(&repo, "alice"), None, "told once");
    // Bob's own news says nothing of his own wait.
    assert_eq!(news(&repo, "bob"), None);

    // Another waiter within five minutes waits for the topic's next line.
    let carol = waiting_for(&repo, symbol, "carol", 2);
    assert_eq!(news(&repo, "alice"), None, "one line per topic per window");
    drop((bob, carol));
}

#[test]
fn the_news_hook_never_starts_a_daemon_and_says_nothing_without_one() {
    let (repo, mut daemon) = setup();
    daemon.kill9();
    assert_eq!(news(&repo, "alice"), None);
    assert!(
        std::os::unix::net::UnixStream::connect(repo.socket()).is_err(),
        "no daemon was started"
    );
}
