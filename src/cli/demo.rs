//! `wit demo`: two agents play the whole protocol in a throwaway repository.
//!
//! It creates a git repository under /tmp with TypeScript and Python files, installs the
//! hooks, starts a daemon, and narrates each step with its JSON: register, intents with a
//! conflict, locks with a caller warning and a LOCK_CONFLICT, contracts proposed and accepted,
//! a commit blocked by the pre-commit hook, then fixed. It checks every outcome it narrates,
//! so a zero exit status means the protocol works end to end, and it always cleans up.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};

use super::context::block_on;
use super::output::{self, CliError, Report};
use crate::client::{ClientError, WitClient};
use crate::daemon::launcher;
use crate::daemon::paths::WitPaths;
use crate::git::Git;

/// `wit demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the temporary repository afterwards (its daemon is stopped either way).
    #[arg(long)]
    pub keep: bool,
}

const AUTH_TS: &str = r#"// Token checks used by every request handler.
export function validateToken(token: string): boolean {
  return token.length > 10;
}
"#;

const AUTH_TS_BROKEN: &str = r#"// Token checks used by every request handler.
export function validateToken(token: string, strict: boolean): boolean {
  return strict ? token.startsWith("wit_") : token.length > 10;
}
"#;

const AUTH_TS_FIXED: &str = r#"// Token checks used by every request handler.
export function validateToken(token: string): boolean {
  return token.startsWith("wit_") && token.length > 10;
}
"#;

const API_TS: &str = r#"import { validateToken } from "./auth";

export function handleRequest(token: string, body: string): string {
  if (!validateToken(token)) {
    return "401 Unauthorized";
  }
  return "200 OK: " + body;
}
"#;

const TAX_PY: &str = r#"def compute_tax(amount: float, rate: float = 0.2) -> float:
    return round(amount * rate, 2)
"#;

const INVOICE_PY: &str = r#"from billing.tax import compute_tax


def total(amount: float) -> float:
    return amount + compute_tax(amount)
"#;

const ALICE: &str = "alice";
const BOB: &str = "bob";

/// Plays the demo; the repository and daemon are removed whatever happens.
pub fn run(args: &DemoArgs, json_mode: bool) -> Result<Report, CliError> {
    let started = Instant::now();
    let root = make_temp_dir()?;
    let paths = WitPaths::for_root(&root);
    let mut narrator = Narrator::new(json_mode);
    let outcome = block_on(play(&mut narrator, &paths));
    let stopped = block_on(async {
        launcher::stop(&paths, Duration::from_secs(10))
            .await
            .map_err(|error| CliError::Failed(error.to_string()))
    });
    if args.keep {
        narrator.say(&format!("kept the repository in {}", root.display()));
    } else {
        let _ = fs::remove_dir_all(&root);
    }
    outcome?;
    stopped?;
    narrator.say(&format!(
        "\nDone in {} ms: daemon stopped{}.\nSet wit up in your own repository with `wit init`.",
        started.elapsed().as_millis(),
        if args.keep {
            ""
        } else {
            ", temporary repository removed"
        }
    ));
    Ok(Report::new(
        json!({"ok": true, "steps": narrator.steps, "root": root.display().to_string()}),
        String::new(),
    ))
}

fn make_temp_dir() -> Result<PathBuf, CliError> {
    let base = Path::new("/tmp");
    let base = if base.is_dir() {
        base.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!(
            "wit-demo-{}-{:x}",
            std::process::id(),
            nanos ^ attempt
        ));
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return dir.canonicalize().map_err(|e| failed("temp dir", e)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(failed("creating a temporary directory", error)),
        }
    }
    Err(CliError::Failed(
        "cannot create a temporary directory".into(),
    ))
}

fn failed(what: &str, error: impl std::fmt::Display) -> CliError {
    CliError::Failed(format!("demo: {what}: {error}"))
}

/// Prints the story as it goes (human mode) and records it (JSON mode).
struct Narrator {
    json_mode: bool,
    number: usize,
    steps: Vec<Value>,
}

impl Narrator {
    fn new(json_mode: bool) -> Self {
        Self {
            json_mode,
            number: 0,
            steps: Vec::new(),
        }
    }

    fn say(&self, text: &str) {
        if !self.json_mode {
            output::out_text(text);
        }
    }

    fn title(&mut self, title: &str) {
        self.number += 1;
        self.say(&format!("\n{}. {title}", self.number));
    }

    /// One RPC by `actor`, narrated with its request and answer.
    async fn rpc(
        &mut self,
        client: &WitClient,
        title: &str,
        method: &str,
        params: Value,
    ) -> Result<Result<Value, Value>, CliError> {
        self.title(title);
        self.say(&format!("   -> {method} {params}"));
        let answer = match client.call_raw(method, params.clone()).await {
            Ok(result) => Ok(result),
            Err(ClientError::Rpc(error)) => Err(json!({
                "code": error.code,
                "message": error.message,
                "data": error.data,
            })),
            Err(other) => return Err(CliError::from(other)),
        };
        let (key, shown) = match &answer {
            Ok(result) => ("result", result),
            Err(error) => ("error", error),
        };
        self.say(&format!("   <- {key}: {shown}"));
        let mut step = json!({
            "step": self.number,
            "title": title,
            "method": method,
            "params": params,
        });
        step[key] = shown.clone();
        self.steps.push(step);
        Ok(answer)
    }

    fn explain(&self, text: &str) {
        self.say(&format!("   {text}"));
    }
}

fn expect(condition: bool, what: &str) -> Result<(), CliError> {
    if condition {
        Ok(())
    } else {
        Err(CliError::Failed(format!("demo: expected {what}")))
    }
}

fn ok(answer: Result<Value, Value>, what: &str) -> Result<Value, CliError> {
    answer.map_err(|error| CliError::Failed(format!("demo: {what} failed: {error}")))
}

async fn play(narrator: &mut Narrator, paths: &WitPaths) -> Result<(), CliError> {
    let root = &paths.root;
    narrator.say(&format!(
        "wit demo: two agents, alice and bob, share the repository {}",
        root.display()
    ));
    set_up_repository(root)?;
    let exe = std::env::current_exe().map_err(|e| failed("finding the wit binary", e))?;
    super::hooks::install(root, &exe)?;
    launcher::ensure_running(paths, &launcher::LaunchOptions::default())
        .await
        .map_err(|error| {
            CliError::Unreachable(format!("demo: cannot start the daemon: {error}"))
        })?;
    narrator.say(
        "files: src/auth.ts (validateToken), src/api.ts (handleRequest calls validateToken),\n\
         billing/tax.py (compute_tax), billing/invoice.py (total calls compute_tax);\n\
         git hooks installed, daemon started.",
    );
    let client = WitClient::new(&paths.socket);

    let answer = narrator
        .rpc(
            &client,
            "alice registers",
            "register",
            json!({"name": "alice", "sessionId": ALICE}),
        )
        .await?;
    ok(answer, "register")?;
    let answer = narrator
        .rpc(
            &client,
            "bob registers",
            "register",
            json!({"name": "bob", "sessionId": BOB}),
        )
        .await?;
    ok(answer, "register")?;

    let answer = narrator
        .rpc(
            &client,
            "alice declares her plan: tighten validateToken",
            "intent.declare",
            json!({"sessionId": ALICE, "description": "Tighten token validation",
                   "files": ["src/auth.ts"], "symbols": ["validateToken"]}),
        )
        .await?;
    let alice_intent = ok(answer, "intent.declare")?["intentId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    narrator.explain("No conflicts: nobody else works there yet.");

    let answer = narrator
        .rpc(
            &client,
            "bob declares a plan touching the same function",
            "intent.declare",
            json!({"sessionId": BOB, "description": "Log every token check",
                   "files": ["src/auth.ts", "src/api.ts"], "symbols": ["validateToken"]}),
        )
        .await?;
    let bob_declared = ok(answer, "intent.declare")?;
    let bob_intent = bob_declared["intentId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    expect(
        bob_declared["conflicts"]["items"][0]["type"] == "INTENT_OVERLAP",
        "an INTENT_OVERLAP conflict for bob",
    )?;
    narrator.explain("INTENT_OVERLAP: bob learns that alice is already changing validateToken.");

    let answer = narrator
        .rpc(
            &client,
            "bob locks the caller, handleRequest, instead",
            "lock.acquire",
            json!({"symbolPath": "src/api.ts:handleRequest", "sessionId": BOB, "ttlMs": 600000}),
        )
        .await?;
    ok(answer, "lock.acquire")?;

    let answer = narrator
        .rpc(
            &client,
            "alice locks validateToken",
            "lock.acquire",
            json!({"symbolPath": "src/auth.ts:validateToken", "sessionId": ALICE, "ttlMs": 600000}),
        )
        .await?;
    let locked = ok(answer, "lock.acquire")?;
    expect(
        locked["warnings"][0]["lockedSymbol"] == "src/api.ts:handleRequest",
        "a caller warning about src/api.ts:handleRequest",
    )?;
    narrator.explain(
        "The lock is hers, with a caller warning: handleRequest (src/api.ts) calls validateToken\n   \
         and is locked by bob, so a signature change would break his work.",
    );

    let answer = narrator
        .rpc(
            &client,
            "bob tries to lock validateToken too",
            "lock.acquire",
            json!({"symbolPath": "src/auth.ts:validateToken", "sessionId": BOB}),
        )
        .await?;
    expect(
        answer
            .as_ref()
            .err()
            .is_some_and(|e| e["message"] == "LOCK_CONFLICT"),
        "LOCK_CONFLICT for bob",
    )?;
    narrator.explain(
        "LOCK_CONFLICT with heldBy and expiresAt: the CLI exits with code 1 so scripts can branch.",
    );

    let answer = narrator
        .rpc(
            &client,
            "alice proposes a contract: validateToken keeps its signature",
            "contract.propose",
            json!({"sessionId": ALICE, "symbolPath": "src/auth.ts:validateToken"}),
        )
        .await?;
    let contract = ok(answer, "contract.propose")?;
    let contract_id = contract["contractId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let answer = narrator
        .rpc(
            &client,
            "bob accepts it",
            "contract.respond",
            json!({"contractId": contract_id, "sessionId": BOB, "accept": true}),
        )
        .await?;
    ok(answer, "contract.respond")?;

    let answer = narrator
        .rpc(
            &client,
            "bob proposes a contract on the Python side: compute_tax",
            "contract.propose",
            json!({"sessionId": BOB, "symbolPath": "billing/tax.py:compute_tax"}),
        )
        .await?;
    let tax = ok(answer, "contract.propose")?;
    let tax_id = tax["contractId"].as_str().unwrap_or_default().to_string();
    let answer = narrator
        .rpc(
            &client,
            "alice accepts it",
            "contract.respond",
            json!({"contractId": tax_id, "sessionId": ALICE, "accept": true}),
        )
        .await?;
    ok(answer, "contract.respond")?;

    narrator.title("alice adds a `strict` parameter to validateToken and commits");
    write(root, "src/auth.ts", AUTH_TS_BROKEN)?;
    let (code, text) = commit(root, ALICE, "Make token validation strict")?;
    narrator.say(&indent(&format!(
        "$ git commit -m \"Make token validation strict\"\n{text}"
    )));
    expect(code != 0, "the pre-commit hook to block the commit")?;
    narrator.explain(&format!(
        "Blocked (exit {code}): the accepted contract names the symbol, the expected and the actual signature."
    ));
    narrator.steps.push(
        json!({"step": narrator.number, "command": "git commit", "exitCode": code, "output": text}),
    );

    narrator.title("alice keeps the signature, changes only the body, and commits again");
    write(root, "src/auth.ts", AUTH_TS_FIXED)?;
    let (code, text) = commit(root, ALICE, "Require the wit_ token prefix")?;
    narrator.say(&indent(&format!(
        "$ git commit -m \"Require the wit_ token prefix\"\n{text}"
    )));
    expect(
        code == 0,
        &format!("the fixed commit to go through (git said: {text})"),
    )?;
    let message = git_output(root, &["log", "-1", "--format=%B"])?;
    narrator.say(&indent(&format!(
        "$ git log -1 --format=%B\n{}",
        message.trim_end()
    )));
    expect(
        message.contains(&format!("Wit-Intent: {alice_intent}")),
        "a Wit-Intent trailer in the commit message",
    )?;
    narrator
        .explain("Committed; prepare-commit-msg added a Wit-Intent trailer for alice's intent.");
    narrator.steps.push(json!({"step": narrator.number, "command": "git commit", "exitCode": code, "message": message}));

    // bob waits his turn for validateToken while alice still holds it.
    narrator.title("bob asks for validateToken again, this time waiting up to 10 s for it");
    let wait_params = json!({"symbolPath": "src/auth.ts:validateToken", "sessionId": BOB,
                             "ttlMs": 600000, "waitMs": 10000});
    narrator.say(&format!("   -> lock.acquire {wait_params}"));
    let waiting = {
        let client = WitClient::new(&paths.socket);
        let params = wait_params.clone();
        tokio::spawn(async move { client.call_raw("lock.acquire", params).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    narrator.explain("(no answer yet: bob's request waits in the daemon, first in line)");
    let answer = narrator
        .rpc(
            &client,
            "alice releases her lock",
            "lock.release",
            json!({"symbolPath": "src/auth.ts:validateToken", "sessionId": ALICE}),
        )
        .await?;
    ok(answer, "lock.release")?;
    narrator.title("bob's wait ends: the lock was handed to him in the same step as the release");
    let handed = waiting
        .await
        .map_err(|e| failed("waiting for bob's lock", e))?
        .map_err(CliError::from)?;
    narrator.say(&format!("   <- result: {handed}"));
    expect(handed["sessionId"] == BOB, "the lock handed to bob")?;
    narrator.explain(
        "A fresh fencing token comes with it; no other request could take the lock in between.",
    );
    narrator
        .steps
        .push(json!({"step": narrator.number, "method": "lock.acquire",
                               "params": wait_params, "result": handed}));
    let answer = narrator
        .rpc(
            &client,
            "bob releases validateToken",
            "lock.release",
            json!({"symbolPath": "src/auth.ts:validateToken", "sessionId": BOB}),
        )
        .await?;
    ok(answer, "lock.release")?;
    let answer = narrator
        .rpc(
            &client,
            "alice resolves her intent",
            "intent.update",
            json!({"intentId": alice_intent, "sessionId": ALICE, "status": "resolved"}),
        )
        .await?;
    ok(answer, "intent.update")?;
    let answer = narrator
        .rpc(
            &client,
            "bob releases his lock and drops his plan",
            "lock.release",
            json!({"symbolPath": "src/api.ts:handleRequest", "sessionId": BOB}),
        )
        .await?;
    ok(answer, "lock.release")?;
    let answer = narrator
        .rpc(
            &client,
            "bob abandons his intent",
            "intent.update",
            json!({"intentId": bob_intent, "sessionId": BOB, "status": "abandoned"}),
        )
        .await?;
    ok(answer, "intent.update")?;
    let answer = narrator
        .rpc(
            &client,
            "anyone reads the log of lock changes (what `wit log -f` follows)",
            "events.poll",
            json!({"since": 0, "types": ["lock.acquired", "lock.released"]}),
        )
        .await?;
    let log = ok(answer, "events.poll")?;
    let count = log["events"].as_array().map_or(0, Vec::len);
    expect(count >= 6, "the lock changes in the log")?;
    narrator.explain(&format!(
        "{count} lock events, oldest first, each written in the same transaction as its change."
    ));
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("   | {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn write(root: &Path, rel: &str, content: &str) -> Result<(), CliError> {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| failed("creating a directory", e))?;
    }
    fs::write(&path, content).map_err(|e| failed(&format!("writing {rel}"), e))
}

/// git in the demo repository, isolated from the caller's wit environment and from global
/// hook settings.
fn git<'a>(root: &'a Path, session: &'a str) -> Git<'a> {
    Git::new(root)
        .env("WIT_REPO_ROOT", root)
        .env("WIT_SESSION", session)
        // The demo shows the hook blocking: give it room on a loaded machine instead of
        // failing open after the usual 2 s.
        .env(super::contracts::HOOK_BUDGET_ENV, "20000")
        .without("CLAUDE_SESSION_ID")
        .without("WIT_NO_AUTOSTART")
        .without("GIT_DIR")
        .without("GIT_INDEX_FILE")
        .without("GIT_WORK_TREE")
        .env("GIT_AUTHOR_NAME", session)
        .env("GIT_AUTHOR_EMAIL", format!("{session}@example.com"))
        .env("GIT_COMMITTER_NAME", session)
        .env("GIT_COMMITTER_EMAIL", format!("{session}@example.com"))
}

fn git_output(root: &Path, args: &[&str]) -> Result<String, CliError> {
    git(root, ALICE)
        .text(args)
        .map_err(|e| failed("running git", e))
}

fn set_up_repository(root: &Path) -> Result<(), CliError> {
    git_output(root, &["init", "-q"])?;
    // Keep the hooks in this repository even when a global core.hooksPath is set.
    git_output(root, &["config", "core.hooksPath", ".git/hooks"])?;
    git_output(root, &["config", "commit.gpgsign", "false"])?;
    write(root, "src/auth.ts", AUTH_TS)?;
    write(root, "src/api.ts", API_TS)?;
    write(root, "billing/__init__.py", "")?;
    write(root, "billing/tax.py", TAX_PY)?;
    write(root, "billing/invoice.py", INVOICE_PY)?;
    git_output(root, &["add", "."])?;
    git_output(
        root,
        &["commit", "-q", "--no-verify", "-m", "Initial commit"],
    )?;
    Ok(())
}

/// Stages everything and commits as `session`: (exit code, combined output).
fn commit(root: &Path, session: &str, message: &str) -> Result<(i32, String), CliError> {
    git_output(root, &["add", "-A"])?;
    let output = git(root, session)
        .output(&["commit", "-q", "-m", message])
        .map_err(|e| failed("running git commit", e))?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok((
        output.status.code().unwrap_or(-1),
        text.trim_end().to_string(),
    ))
}
