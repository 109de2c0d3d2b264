//! `wit demo`: three agents share a throwaway repository and wit keeps their work apart.
//!
//! It creates a git repository under /tmp with a linked worktree, installs the hooks, starts
//! a daemon, and starts each agent as a process of its own ([`agent`]: a stand-in for its
//! Claude Code, whose tool calls go through the real hooks with Claude Code's payloads).
//! The story: an edit refused by the gate, `git add -A && git commit` refused by the shell
//! gate naming the other agent and `wit commit` committing only the agent's own lines, a
//! `sed -i` attributed to its session (`wit blame`), two worktrees' forecast (`wit
//! worktrees`), and work restored after a `git reset --hard` (`wit snapshots restore`). It
//! checks every outcome it narrates, so a zero exit status means all of it works end to end,
//! and it always cleans up. `--ui` opens `wit ui` on the repository and paces the steps.

mod agent;
mod narrator;

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};

use super::context::block_on;
use super::output::{CliError, Report};
use crate::client::WitClient;
use crate::daemon::launcher;
use crate::daemon::paths::WitPaths;
use crate::git::Git;
use agent::Agent;
use narrator::Narrator;

/// `wit demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the temporary repository afterwards (its daemon is stopped either way).
    #[arg(long)]
    pub keep: bool,
    /// Open `wit ui` on the demo's repository, pace the steps, and keep it all until Ctrl-C.
    #[arg(long)]
    pub ui: bool,
    /// The pause between steps with `--ui` (e.g. 2s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = super::duration::parse_duration)]
    pub pace: Duration,
}

const LIB_TS: &str = "export function alpha(a: number): number {
  return a + 1;
}

export function beta(b: number): number {
  return b * 2;
}

export function gamma(c: number): number {
  return c - 3;
}
";

const ALICE_OLD: &str = "return a + 1;";
const ALICE_NEW: &str = "return a + 10;";
const BOB_TRY: &str = "return a + 100;";
const BOB_OLD: &str = "return b * 2;";
const BOB_NEW: &str = "return b * 20;";
const BOB_SED: &str = "sed -i 's/c - 3/c - 30/' src/lib.ts";
const BOB_SED_NEW: &str = "return c - 30;";
const CAROL_NEW: &str = "return b * 3;";

/// How long the demo waits for something the daemon observes on its own.
const OBSERVED: Duration = Duration::from_secs(10);

/// Plays the demo; the repository and daemon are removed whatever happens.
pub fn run(args: &DemoArgs, json_mode: bool) -> Result<Report, CliError> {
    let started = Instant::now();
    let base = make_temp_dir()?;
    let root = base.join("app");
    let paths = WitPaths::for_root(&root);
    let pace = if args.ui { args.pace } else { Duration::ZERO };
    let mut narrator = Narrator::new(json_mode, pace);
    let mut ui = None;
    let outcome = play(&mut narrator, &base, &paths, args.ui.then_some(&mut ui));
    if outcome.is_ok() && ui.is_some() {
        narrator.say(&format!(
            "\nThe repository stays in {} with its agents' work; Ctrl-C ends the demo.",
            root.display()
        ));
        let _ = block_on(async {
            tokio::signal::ctrl_c()
                .await
                .map_err(|e| failed("waiting for Ctrl-C", e))
        });
    }
    if let Some(mut ui) = ui {
        let _ = ui.kill();
        let _ = ui.wait();
    }
    let stopped = block_on(async {
        launcher::stop(&paths, Duration::from_secs(10))
            .await
            .map_err(|error| CliError::Failed(error.to_string()))
    });
    if args.keep {
        narrator.say(&format!("kept the repository in {}", root.display()));
    } else {
        let _ = fs::remove_dir_all(&base);
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

fn expect(condition: bool, what: &str) -> Result<(), CliError> {
    if condition {
        Ok(())
    } else {
        Err(CliError::Failed(format!("demo: expected {what}")))
    }
}

/// Waits up to [`OBSERVED`] for `check` to give something, polling every 50 ms.
fn until<T>(
    what: &str,
    mut check: impl FnMut() -> Result<Option<T>, CliError>,
) -> Result<T, CliError> {
    until_seen(what, || Ok(check()?.ok_or_else(String::new)))
}

/// [`until`] for a `check` that says what it saw instead (the last of which the failure
/// shows).
fn until_seen<T>(
    what: &str,
    mut check: impl FnMut() -> Result<Result<T, String>, CliError>,
) -> Result<T, CliError> {
    let deadline = Instant::now() + OBSERVED;
    loop {
        let seen = match check()? {
            Ok(found) => return Ok(found),
            Err(seen) => seen,
        };
        if Instant::now() > deadline {
            let last = if seen.is_empty() {
                String::new()
            } else {
                format!(" (last seen: {seen})")
            };
            return Err(CliError::Failed(format!(
                "demo: waited in vain for {what}{last}"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One protocol call of the demo itself.
fn call(client: &WitClient, method: &str, params: Value) -> Result<Value, CliError> {
    block_on(async {
        client
            .call_raw(method, params)
            .await
            .map_err(|e| failed(method, e))
    })
}

/// A person's `wit --json ARGS` in `cwd`: its exit code and the JSON on its stdout (`Null`
/// when there is none), or what it printed instead.
fn person_wit_json(exe: &Path, cwd: &Path, args: &[&str]) -> Result<(i32, Value), CliError> {
    let mut json_args = vec!["--json"];
    json_args.extend_from_slice(args);
    let output = person_command(exe, cwd, &json_args)?;
    let value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    Ok((output.status.code().unwrap_or(-1), value))
}

/// A person's `wit ARGS` in `cwd` (no session of their own): (exit code, stdout + stderr).
fn person_wit(exe: &Path, cwd: &Path, args: &[&str]) -> Result<(i32, String), CliError> {
    let output = person_command(exe, cwd, args)?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok((output.status.code().unwrap_or(-1), text))
}

/// Runs a person's `wit ARGS` in `cwd`: no session of their own, the daemon started if need be.
fn person_command(exe: &Path, cwd: &Path, args: &[&str]) -> Result<std::process::Output, CliError> {
    Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .env_remove("WIT_SESSION")
        .env_remove("CLAUDE_SESSION_ID")
        .env_remove("WIT_REPO_ROOT")
        .env_remove("WIT_NO_AUTOSTART")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed("running wit", e))
}

fn play(
    narrator: &mut Narrator,
    base: &Path,
    paths: &WitPaths,
    ui: Option<&mut Option<Child>>,
) -> Result<(), CliError> {
    let root = &paths.root;
    let carol_root = base.join("app-carol");
    let exe = std::env::current_exe().map_err(|e| failed("finding the wit binary", e))?;
    narrator.say(&format!(
        "wit demo: alice and bob (each its own Claude Code) share the repository {};\n\
         carol works in a linked worktree of it, {}.",
        root.display(),
        carol_root.display()
    ));
    set_up_repository(root, &carol_root)?;
    crate::hooks::install(root, &exe)?;
    block_on(async {
        launcher::ensure_running(paths, &launcher::LaunchOptions::default())
            .await
            .map_err(|error| {
                CliError::Unreachable(format!("demo: cannot start the daemon: {error}"))
            })
    })?;
    let client = WitClient::new(&paths.socket);
    for name in ["alice", "bob"] {
        call(
            &client,
            "register",
            json!({"name": name, "sessionId": name}),
        )?;
    }
    // The gate's policy for work of another live session: refuse (the default warns).
    write(root, ".wit/config.toml", "[gate]\nintents = \"deny\"\n")?;
    narrator.say(
        "src/lib.ts has alpha, beta and gamma; git hooks installed, daemon started;\n\
         .wit/config.toml: [gate] intents = \"deny\" (refuse edits of another agent's work).",
    );
    if let Some(slot) = ui {
        let child = Command::new(&exe)
            .args(["ui", "--repo"])
            .arg(root)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| failed("starting wit ui", e))?;
        *slot = Some(child);
        // Let the page open before the story starts.
        std::thread::sleep(Duration::from_secs(2));
    }
    let agents = base.join("agents");
    let mut alice = Agent::spawn("alice", root, &agents, &exe)?;
    let mut bob = Agent::spawn("bob", root, &agents, &exe)?;

    // 1. The edit gate.
    narrator.title("alice changes alpha with Claude Code's Edit tool");
    let verdict = alice.edit("src/lib.ts", ALICE_OLD, ALICE_NEW)?;
    narrator.shown(
        "wit hook pre-edit --agent claude   # PreToolUse Edit src/lib.ts, by alice",
        if verdict.allowed() {
            "(let through)"
        } else {
            &verdict.said
        },
        json!({"decision": verdict.decision}),
    );
    expect(
        verdict.allowed(),
        &format!("alice's edit let through ({})", verdict.said),
    )?;
    narrator.explain("Let through, then written; the post-tool hook records alpha as hers.");

    narrator.title("bob's Claude Code tries to change alpha too: the gate refuses");
    let verdict = bob.edit("src/lib.ts", ALICE_NEW, BOB_TRY)?;
    narrator.shown(
        "wit hook pre-edit --agent claude   # PreToolUse Edit src/lib.ts, by bob",
        &verdict.said,
        json!({"decision": verdict.decision, "reason": verdict.said}),
    );
    expect(
        verdict.decision == "deny" && verdict.said.contains("alice"),
        &format!("bob's edit of alpha denied naming alice ({verdict:?})"),
    )?;
    narrator.explain("Denied, naming alice: bob's agent reads why, and works elsewhere.");

    narrator.title("bob changes beta instead");
    let verdict = bob.edit("src/lib.ts", BOB_OLD, BOB_NEW)?;
    narrator.shown(
        "wit hook pre-edit --agent claude   # PreToolUse Edit src/lib.ts, by bob, on beta",
        "(let through)",
        json!({"decision": verdict.decision}),
    );
    expect(
        verdict.allowed(),
        &format!("bob's edit of beta let through ({})", verdict.said),
    )?;
    narrator.explain("Let through: nobody else works on beta.");

    // 2. The shell gate and `wit commit`.
    narrator.title("alice runs `git add -A && git commit` through her Bash tool");
    let command = "git add -A && git commit -m 'Make alpha bigger'";
    let (verdict, ran) = alice.bash(command)?;
    narrator.shown(
        command,
        &verdict.said,
        json!({"decision": verdict.decision, "reason": verdict.said}),
    );
    expect(
        ran.is_none()
            && verdict.decision == "deny"
            && verdict.said.contains("bob")
            && verdict.said.contains("wit commit"),
        &format!("git add -A denied naming bob and wit commit ({verdict:?})"),
    )?;
    narrator.explain("Refused by the shell gate: it would have committed bob's beta as hers.");

    narrator.title("alice runs `wit commit` instead");
    let command = "wit commit -m 'Make alpha bigger'";
    let (verdict, ran) = alice.bash(command)?;
    let ran = ran.ok_or_else(|| failed("wit commit", format!("refused: {}", verdict.said)))?;
    expect(
        ran.code == 0,
        &format!("wit commit to succeed ({})", ran.stderr),
    )?;
    let committed = git_output(root, &["show", "HEAD:src/lib.ts"])?;
    let stat = git_output(root, &["show", "--stat", "--format=%an: %s", "HEAD"])?;
    narrator.shown(
        command,
        &format!("{}{}", ran.stdout, ran.stderr),
        json!({"exitCode": ran.code}),
    );
    narrator.shown(
        "git show --stat HEAD",
        &stat,
        json!({"committed": committed}),
    );
    expect(
        committed.contains(ALICE_NEW) && committed.contains(BOB_OLD),
        &format!("the commit to hold alpha and not beta:\n{committed}"),
    )?;
    let working = read(root, "src/lib.ts")?;
    expect(
        working.contains(BOB_NEW),
        "bob's beta left in the working tree",
    )?;
    narrator
        .explain("The commit holds alice's alpha only; bob's beta stays uncommitted, untouched.");

    // 3. A shell edit attributed.
    narrator.title(&format!("bob runs `{BOB_SED}` through his Bash tool"));
    let (verdict, ran) = bob.bash(BOB_SED)?;
    expect(
        ran.is_some_and(|ran| ran.code == 0),
        &format!("bob's sed to run ({})", verdict.said),
    )?;
    let client_ref = &client;
    until("bob's sed to be attributed", || {
        let owners = call(client_ref, "work.owners", json!({"file": "src/lib.ts"}))?;
        let lines = owners["lines"].as_array().cloned().unwrap_or_default();
        Ok(
            (lines.len() >= 2 && lines.iter().all(|l| l["sessionIds"] == json!(["bob"])))
                .then_some(()),
        )
    })?;
    let (code, blame) = person_wit(&exe, root, &["blame", "src/lib.ts"])?;
    narrator.shown("wit blame src/lib.ts", &blame, json!({"exitCode": code}));
    let sed_row = blame
        .lines()
        .find(|l| l.contains(BOB_SED_NEW))
        .unwrap_or("");
    expect(
        code == 0 && sed_row.contains("bob"),
        &format!("wit blame to name bob on the sed's line:\n{blame}"),
    )?;
    narrator.explain(
        "The pre-tool hook opened a window for bob's command, the post-tool hook closed it:\n   \
         what changed in between is bob's, though no Edit tool wrote it.",
    );

    // 4. Two worktrees and their forecast.
    narrator.title("carol, in her own worktree, changes beta as well");
    let carol_file = carol_root.join("src/lib.ts");
    let theirs = fs::read_to_string(&carol_file).map_err(|e| failed("reading", e))?;
    fs::write(&carol_file, theirs.replacen(BOB_OLD, CAROL_NEW, 1))
        .map_err(|e| failed("writing", e))?;
    let forecast = until_seen("the forecast of carol's worktree", || {
        let (code, value) = person_wit_json(&exe, root, &["worktrees"])?;
        let collides = code == 0
            && value["pairs"].as_array().is_some_and(|pairs| {
                pairs.iter().any(|pair| {
                    pair["collisions"].as_array().is_some_and(|c| {
                        c.iter().any(|c| c["symbols"].to_string().contains("beta"))
                    })
                })
            });
        Ok(if collides {
            Ok(value)
        } else {
            Err(format!("exit {code}, {value}"))
        })
    })?;
    let (_, shown) = person_wit(&exe, root, &["worktrees"])?;
    narrator.shown("wit worktrees", &shown, json!({"forecast": forecast}));
    narrator.explain(
        "Before anyone merges: the forecast names the file and the functions where the two\n   \
         worktrees will collide (beta, changed in both; and what main changed since carol branched).",
    );

    // 5. A restore after `git reset --hard`.
    narrator.title("a person runs `git reset --hard` in the main worktree");
    let snapshot = until("bob's work snapshot", || {
        let (_, list) = person_wit_json(&exe, root, &["snapshots"])?;
        Ok(list.as_array().and_then(|list| {
            list.iter()
                .find(|s| s["session"] == "bob")
                .and_then(|s| s["id"].as_str().map(str::to_owned))
        }))
    })?;
    git_output(root, &["reset", "-q", "--hard"])?;
    let lost = read(root, "src/lib.ts")?;
    expect(
        !lost.contains(BOB_NEW),
        "the reset to throw bob's work away",
    )?;
    narrator.shown("git reset --hard", "", json!({"lostBobsWork": true}));
    narrator.explain("No hook sees a person's terminal: bob's beta and gamma are gone from disk.");

    narrator.title("bob restores his work from its snapshot");
    let (_, list) = person_wit(&exe, root, &["snapshots"])?;
    narrator.shown("wit snapshots", &list, json!({"id": snapshot}));
    let ran = bob.wit(&["snapshots", "restore", &snapshot], "")?;
    let restored = read(root, "src/lib.ts")?;
    narrator.shown(
        &format!("wit snapshots restore {snapshot}"),
        &format!("{}{}", ran.stdout, ran.stderr),
        json!({"exitCode": ran.code, "restored": restored}),
    );
    expect(
        ran.code == 0 && restored.contains(BOB_NEW) && restored.contains(BOB_SED_NEW),
        &format!("bob's work restored ({}):\n{restored}", ran.stderr),
    )?;
    narrator.explain("wit kept a snapshot of each agent's uncommitted work: nothing was lost.");
    Ok(())
}

fn read(root: &Path, rel: &str) -> Result<String, CliError> {
    fs::read_to_string(root.join(rel)).map_err(|e| failed(&format!("reading {rel}"), e))
}

fn write(root: &Path, rel: &str, content: &str) -> Result<(), CliError> {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| failed("creating a directory", e))?;
    }
    fs::write(&path, content).map_err(|e| failed(&format!("writing {rel}"), e))
}

/// git in the demo repository, isolated from the caller's wit environment.
fn git(root: &Path) -> Git<'_> {
    Git::new(root)
        .env("WIT_REPO_ROOT", root)
        .without("WIT_SESSION")
        .without("CLAUDE_SESSION_ID")
        .without("WIT_NO_AUTOSTART")
        .without("GIT_DIR")
        .without("GIT_INDEX_FILE")
        .without("GIT_WORK_TREE")
        .env("GIT_AUTHOR_NAME", "demo")
        .env("GIT_AUTHOR_EMAIL", "demo@example.com")
        .env("GIT_COMMITTER_NAME", "demo")
        .env("GIT_COMMITTER_EMAIL", "demo@example.com")
}

fn git_output(root: &Path, args: &[&str]) -> Result<String, CliError> {
    git(root).text(args).map_err(|e| failed("running git", e))
}

fn set_up_repository(root: &Path, carol: &Path) -> Result<(), CliError> {
    fs::create_dir(root).map_err(|e| failed("creating the repository", e))?;
    git_output(root, &["init", "-q", "-b", "main"])?;
    // Keep the hooks in this repository even when a global core.hooksPath is set.
    git_output(root, &["config", "core.hooksPath", ".git/hooks"])?;
    git_output(root, &["config", "commit.gpgsign", "false"])?;
    write(root, "src/lib.ts", LIB_TS)?;
    write(root, ".gitignore", ".wit/\n")?;
    git_output(root, &["add", "."])?;
    git_output(
        root,
        &["commit", "-q", "--no-verify", "-m", "Initial commit"],
    )?;
    let carol = carol.display().to_string();
    git_output(root, &["worktree", "add", "-q", "-b", "carol", &carol])?;
    Ok(())
}
