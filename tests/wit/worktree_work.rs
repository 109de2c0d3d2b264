//! Work in worktrees observed without hooks (docs/protocol.md 14.4) and previews meeting
//! another worktree's changes (14.5): real daemons, real `git worktree add`, files written
//! to disk as a shell or an editor would, with no wit call.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use wit::client::WitClient;
use wit::protocol::{
    EditPreflightParams, EditPreflightParamsEditsItem, EditPreflightResult, IntentQueryParams,
    IntentRecord,
};

use crate::harness::*;
use crate::worktrees::{client, wait_answering, write_file, Family};

/// Twelve lines: `f` on lines 1-3, `g` on lines 9-11.
const APP: &str = "def f(x):\n    y = x + 1\n    return y\n\n\nA = 1\n\n\ndef g(x):\n    z = x * 2\n    return z\n\nB = 2\n";

/// A repository holding `APP` with the linked worktrees `names`, served by one daemon that
/// answers on every worktree's socket.
fn served(names: &[&str]) -> (Family, Vec<PathBuf>, Daemon) {
    let family = Family::new(&[("app.py", APP)]);
    let roots: Vec<PathBuf> = names.iter().map(|name| family.add(name)).collect();
    let daemon = family.daemon();
    for root in &roots {
        wait_answering(root, true);
    }
    (family, roots, daemon)
}

fn worktree_session(root: &Path) -> String {
    format!("worktree:{}", root.display())
}

async fn intents(client: &WitClient, session: &str, status: Option<&str>) -> Vec<IntentRecord> {
    client
        .intent_query(IntentQueryParams {
            session_id: Some(session.into()),
            file: None,
            status: status.map(Into::into),
        })
        .await
        .unwrap()
}

/// Waits (at most 20 s: a condition, not a timing) until `done` holds for the live intents
/// of `session`; returns them.
async fn wait_for_intents(
    client: &WitClient,
    session: &str,
    status: Option<&str>,
    done: impl Fn(&[IntentRecord]) -> bool,
) -> Vec<IntentRecord> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = intents(client, session, status).await;
        if done(&found) {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{session}: never as expected: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn regions(intent: &IntentRecord) -> Vec<[i64; 2]> {
    intent
        .regions
        .iter()
        .map(|r| [r.start_line, r.end_line])
        .collect()
}

async fn preview(client: &WitClient, session: &str, old: &str, new: &str) -> EditPreflightResult {
    preview_in(client, session, "app.py", old, new, false).await
}

async fn preview_in(
    client: &WitClient,
    session: &str,
    file: &str,
    old: &str,
    new: &str,
    record: bool,
) -> EditPreflightResult {
    let result = client
        .edit_preflight(EditPreflightParams {
            session_id: session.into(),
            file: file.into(),
            edits: vec![EditPreflightParamsEditsItem {
                old_text: old.into(),
                new_text: new.into(),
                replace_all: None,
            }],
            content: None,
            record: Some(record),
        })
        .await
        .unwrap();
    assert!(result.applies, "{:?}", result.reason);
    result
}

/// The `(session, intent)` of each INTENT_OVERLAP.
fn overlaps(result: &EditPreflightResult) -> Vec<(String, String)> {
    let conflicts = serde_json::to_value(&result.conflicts).unwrap();
    conflicts
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "INTENT_OVERLAP")
        .map(|c| {
            let field = |name: &str| c[name].as_str().unwrap_or_default().to_owned();
            (field("overlappingSessionId"), field("overlappingIntentId"))
        })
        .collect()
}

fn edited(old: &str, new: &str) -> String {
    assert!(APP.contains(old));
    APP.replacen(old, new, 1)
}

#[test]
fn an_edit_in_one_worktree_without_hooks_is_seen_by_a_preview_in_another() {
    let (family, roots, _daemon) = served(&["w1", "w2"]);
    let [one, two] = [roots[0].clone(), roots[1].clone()];
    // An editor in w1 changes f's body; w2 has three lines of its own above f.
    write_file(
        &one,
        "app.py",
        &edited("    y = x + 1\n", "    y = x + 100\n"),
    );
    write_file(&two, "app.py", &format!("import os\nimport re\n\n{APP}"));
    block_on(async {
        let main = client(&family.main());
        let session = worktree_session(&one);
        let found = wait_for_intents(&main, &session, None, |i| i.len() == 1).await;
        let intent = &found[0];
        assert_eq!(intent.description, "worktree w1");
        assert_eq!(serde_json::to_value(intent.status).unwrap(), "active");
        assert_eq!(intent.files, ",app.py,");
        assert_eq!(regions(intent), [[2, 2]]);
        assert_eq!(intent.symbols, r#"["f"]"#, "the symbol its lines touch");
        // w2's own work is its lines, in its text.
        let theirs = wait_for_intents(&main, &worktree_session(&two), None, |i| i.len() == 1).await;
        assert_eq!(regions(&theirs[0]), [[1, 3]]);

        // Previewed in w2, f's body (line 5 there) meets w1's change, through the merge-base.
        let w2 = client(&two);
        let hit = preview(&w2, "b", "    y = x + 1\n", "    y = x + 2\n").await;
        assert_eq!(
            overlaps(&hit),
            [(session.clone(), intent.intent_id.clone())]
        );
        // g does not; neither does a preview in w1 itself (its own worktree's work).
        let clear = preview(&w2, "b", "    z = x * 2\n", "    z = x * 3\n").await;
        assert!(overlaps(&clear).is_empty(), "{:?}", clear.conflicts);
        let own = preview(&client(&one), "c", "    return y\n", "    return -y\n").await;
        assert!(overlaps(&own).is_empty(), "{:?}", own.conflicts);
        // From the main worktree too.
        let from_main = preview(&main, "d", "    return y\n", "    return -y\n").await;
        assert_eq!(overlaps(&from_main).len(), 1, "{:?}", from_main.conflicts);

        // Saved again: the regions follow the worktree's text.
        write_file(
            &one,
            "app.py",
            &edited("    z = x * 2\n", "    z = x * 5\n"),
        );
        let moved = wait_for_intents(&main, &session, None, |i| {
            i.len() == 1 && regions(&i[0]) == [[10, 10]]
        })
        .await;
        assert_eq!(moved[0].intent_id, intent.intent_id, "the same intent");
        assert_eq!(moved[0].symbols, r#"["g"]"#, "its symbols follow its lines");
        let now_clear = preview(&w2, "b", "    y = x + 1\n", "    y = x + 2\n").await;
        assert!(overlaps(&now_clear).is_empty(), "{:?}", now_clear.conflicts);

        // Reverted: resolved.
        write_file(&one, "app.py", APP);
        wait_for_intents(&main, &session, None, |i| i.is_empty()).await;
        let resolved = intents(&main, &session, Some("resolved")).await;
        assert_eq!(resolved.len(), 1, "{resolved:?}");
    });
}

#[test]
fn a_branch_merged_into_the_main_worktree_resolves_its_observed_work() {
    let (family, roots, _daemon) = served(&["w1"]);
    let one = roots[0].clone();
    // Committed on the branch: still its work against the merge-base.
    write_file(
        &one,
        "app.py",
        &edited("    return z\n", "    return z + 1\n"),
    );
    family.git(&one, &["commit", "-qam", "g"]);
    block_on(async {
        let main = client(&family.main());
        let session = worktree_session(&one);
        let found = wait_for_intents(&main, &session, None, |i| i.len() == 1).await;
        assert_eq!(regions(&found[0]), [[11, 11]]);
        family.git(&family.main(), &["merge", "-q", "--no-edit", "w1"]);
        wait_for_intents(&main, &session, None, |i| i.is_empty()).await;
        let resolved = intents(&main, &session, Some("resolved")).await;
        assert_eq!(resolved.len(), 1);
        assert_eq!(resolved[0].intent_id, found[0].intent_id);
    });
}

#[test]
fn a_removed_worktree_takes_its_observed_work_with_it() {
    let (family, roots, _daemon) = served(&["w1"]);
    let one = roots[0].clone();
    write_file(&one, "app.py", &edited("A = 1\n", "A = 2\n"));
    block_on(async {
        let main = client(&family.main());
        let session = worktree_session(&one);
        wait_for_intents(&main, &session, None, |i| i.len() == 1).await;
        family.remove("w1");
        wait_for_intents(&main, &session, None, |i| i.is_empty()).await;
        assert_eq!(intents(&main, &session, Some("resolved")).await.len(), 1);
    });
}

#[test]
fn a_shell_session_with_no_wit_calls_is_seen_through_its_worktree() {
    let (family, roots, _daemon) = served(&["w1"]);
    let one = roots[0].clone();
    // A shell in w1 writes a new module and appends to another: no wit anywhere.
    let shell = Command::new("sh")
        .args([
            "-c",
            "mkdir -p pkg && printf 'def h():\\n    return 1\\n' > pkg/new.py && printf 'C = 3\\n' >> app.py",
        ])
        .current_dir(&one)
        .status()
        .unwrap();
    assert!(shell.success());
    let session = worktree_session(&one);
    block_on(async {
        let main = client(&family.main());
        let found = wait_for_intents(&main, &session, None, |i| i.len() == 2).await;
        let by_file = |file: &str| {
            found
                .iter()
                .find(|i| i.files == format!(",{file},"))
                .unwrap()
        };
        assert_eq!(regions(by_file("app.py")), [[14, 14]]);
        // A new file is the whole file's work (13.1).
        assert!(by_file("pkg/new.py").regions.is_empty());
        // Previewed from the main worktree, appending to app.py meets it.
        let hit = preview(&main, "agent", "B = 2\n", "B = 2\nD = 4\n").await;
        assert_eq!(overlaps(&hit).len(), 1, "{:?}", hit.conflicts);
    });
    // `wit status` in the main worktree shows the worktree's work.
    let output = Command::new(wit_bin())
        .args(["status"])
        .current_dir(family.main())
        .envs(store_env(&family.main()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("worktree w1"), "{stdout}");
}

#[test]
fn lines_a_session_recorded_are_not_reported_twice() {
    let (family, roots, _daemon) = served(&["w1"]);
    let one = roots[0].clone();
    block_on(async {
        let w1 = client(&one);
        // An agent in w1 edits f through the gate (recorded), and writes it.
        let recorded = preview_in(
            &w1,
            "agent",
            "app.py",
            "    y = x + 1\n",
            "    y = x + 7\n",
            true,
        )
        .await;
        assert!(recorded.conflicts.is_empty(), "{:?}", recorded.conflicts);
        assert_eq!(intents(&w1, "agent", None).await.len(), 1);
        // A shell in the same worktree changes g too.
        write_file(
            &one,
            "app.py",
            &edited("    y = x + 1\n", "    y = x + 7\n").replacen(
                "    z = x * 2\n",
                "    z = x * 9\n",
                1,
            ),
        );
        let main = client(&family.main());
        let session = worktree_session(&one);
        let found = wait_for_intents(&main, &session, None, |i| i.len() == 1).await;
        // Only g's line: f's is the agent's, reported under its intent.
        assert_eq!(regions(&found[0]), [[10, 10]]);
        let hit = preview(&main, "other", "    y = x + 1\n", "    y = x + 2\n").await;
        let sessions: Vec<String> = overlaps(&hit).into_iter().map(|(s, _)| s).collect();
        assert_eq!(sessions, ["agent"]);
        let json: Value = serde_json::to_value(&hit.conflicts).unwrap();
        assert_eq!(json.as_array().unwrap().len(), 1, "{json}");
    });
}

#[test]
fn the_forecast_relates_worktrees_whose_changes_meet_without_conflicting() {
    let (family, roots, _daemon) = served(&["w1", "w2"]);
    let [one, two] = [roots[0].clone(), roots[1].clone()];
    // w1 changes f's signature and makes g call f; w2 changes f's last line: f's lines
    // apart (git merges them cleanly), and g calls the f w2 changes.
    let w1_text = edited("def f(x):\n", "def f(x, k=0):\n").replacen(
        "    z = x * 2\n",
        "    z = f(x) * 2\n",
        1,
    );
    write_file(&one, "app.py", &w1_text);
    write_file(
        &two,
        "app.py",
        &edited("    return y\n", "    return y + 1\n"),
    );
    block_on(async {
        let main = client(&family.main());
        let w1_session = worktree_session(&one);
        let w1_work = wait_for_intents(&main, &w1_session, None, |i| i.len() == 1).await;
        wait_for_intents(&main, &worktree_session(&two), None, |i| i.len() == 1).await;
        let forecast = main.worktree_forecast().await.unwrap();
        let pairs = serde_json::to_value(&forecast.pairs).unwrap();
        let pairs = pairs.as_array().unwrap();
        assert_eq!(pairs.len(), 1, "{pairs:?}");
        let pair = &pairs[0];
        assert_eq!(pair["a"], one.display().to_string());
        assert_eq!(pair["b"], two.display().to_string());
        assert_eq!(pair["collisions"], serde_json::json!([]));
        let intent = &w1_work[0].intent_id;
        assert_eq!(
            pair["related"],
            serde_json::json!([
                {"type": "SAME_SYMBOL", "symbolPath": "app.py:f",
                 "sessionId": w1_session, "intentId": intent},
                {"type": "COUPLED", "symbolPath": "app.py:f", "otherSymbol": "app.py:g",
                 "relation": "called-by", "sessionId": w1_session, "intentId": intent},
            ])
        );

        // w2 now changes f's signature too: the next forecast reads w2 again (what it keeps
        // of an unchanged worktree must not hide a change) and the two collide there.
        write_file(
            &two,
            "app.py",
            &edited("def f(x):\n", "def f(x, strict=False):\n"),
        );
        wait_for_intents(&main, &worktree_session(&two), None, |i| {
            i.len() == 1 && regions(&i[0]) == [[1, 1]]
        })
        .await;
        let again = main.worktree_forecast().await.unwrap();
        assert_eq!(again.pairs.len(), 1);
        let collisions = serde_json::to_value(&again.pairs[0].collisions).unwrap();
        assert_eq!(collisions[0]["file"], "app.py", "{collisions}");
        // The symbols either side's changed lines of the file touch.
        assert_eq!(
            collisions[0]["symbols"],
            serde_json::json!(["f", "g"]),
            "{collisions}"
        );
    });
}

/// A block deleted in one worktree is a collision for a change of its lines in another: the
/// deletion's region (its join line) goes back through the merge-base to the lines it
/// deleted (replay in worktree mode, requests-c0d4b23cea: git conflicts there).
#[test]
fn a_change_of_lines_another_worktree_deleted_meets_the_deletion() {
    let (family, roots, _daemon) = served(&["w1", "w2"]);
    let [one, two] = [roots[0].clone(), roots[1].clone()];
    // w1 deletes g (lines 9-12): its region is the point where the sides join (after 8).
    write_file(
        &one,
        "app.py",
        &edited("def g(x):\n    z = x * 2\n    return z\n\n", ""),
    );
    block_on(async {
        let main = client(&family.main());
        let session = worktree_session(&one);
        let found = wait_for_intents(&main, &session, None, |i| {
            i.len() == 1 && regions(&i[0]) == [[9, 8]]
        })
        .await;
        // w2, still at the base, changes a line inside the deleted block.
        let w2 = client(&two);
        let hit = preview(&w2, "b", "    z = x * 2\n", "    z = x * 3\n").await;
        assert_eq!(
            overlaps(&hit),
            [(session.clone(), found[0].intent_id.clone())]
        );
        // A line well above the deletion does not meet it.
        let clear = preview(&w2, "b", "    y = x + 1\n", "    y = x + 2\n").await;
        assert!(overlaps(&clear).is_empty(), "{:?}", clear.conflicts);
    });
}

#[test]
fn a_worktrees_regions_stay_true_when_previews_there_saw_an_older_text() {
    let (family, roots, _daemon) = served(&["w1"]);
    let one = roots[0].clone();
    let session = worktree_session(&one);
    let g_changed = edited("    z = x * 2\n", "    z = x * 4\n");
    write_file(&one, "app.py", &g_changed);
    block_on(async {
        let main = client(&family.main());
        let w1 = client(&one);
        wait_for_intents(&main, &session, None, |i| {
            i.len() == 1 && regions(&i[0]) == [[10, 10]]
        })
        .await;
        // A preview in w1 reads the worktree's regions against the text it sees now.
        preview(&w1, "c", "    return y\n", "    return -y\n").await;
        // Two lines inserted at the top: the worktree's regions are git's lines of the new text.
        write_file(
            &one,
            "app.py",
            &format!("import os\nimport re\n{g_changed}"),
        );
        wait_for_intents(&main, &session, None, |i| {
            i.len() == 1 && regions(&i[0]) == [[1, 2], [12, 12]]
        })
        .await;
        // Another preview there, and the regions are still those lines (not carried twice).
        preview(&w1, "c", "    return y\n", "    return -y\n").await;
        let found = intents(&main, &session, None).await;
        assert_eq!(regions(&found[0]), [[1, 2], [12, 12]], "{found:?}");
    });
}

/// 13.4 across worktrees (14.5): a change that writes over the same base lines exactly what
/// another worktree wrote there meets nothing (git's merge applies one copy); other text
/// there, or the line next to it, still meets it.
#[test]
fn an_identical_change_in_another_worktree_meets_nothing() {
    let (family, roots, _daemon) = served(&["w1", "w2"]);
    let [one, two] = [roots[0].clone(), roots[1].clone()];
    write_file(
        &one,
        "app.py",
        &edited("    y = x + 1\n", "    y = x + 100\n"),
    );
    block_on(async {
        let main = client(&family.main());
        let session = worktree_session(&one);
        wait_for_intents(&main, &session, None, |i| {
            i.len() == 1 && regions(&i[0]) == [[2, 2]]
        })
        .await;
        let w2 = client(&two);
        let same = preview(&w2, "b", "    y = x + 1\n", "    y = x + 100\n").await;
        assert!(overlaps(&same).is_empty(), "{:?}", same.conflicts);
        let other = preview(&w2, "b", "    y = x + 1\n", "    y = x + 101\n").await;
        assert_eq!(overlaps(&other).len(), 1, "{:?}", other.conflicts);
        let next = preview(&w2, "b", "    return y\n", "    return -y\n").await;
        assert_eq!(overlaps(&next).len(), 1, "{:?}", next.conflicts);
        // The same change plus the line next to it is one hunk that differs: it meets.
        let more = preview(
            &w2,
            "b",
            "    y = x + 1\n    return y\n",
            "    y = x + 100\n    return -y\n",
        )
        .await;
        assert_eq!(overlaps(&more).len(), 1, "{:?}", more.conflicts);
    });
}

/// Issue 35 (13.4, 14.5): a file both worktrees add with the same text is one change (git's
/// merge adds it once): its preview meets nothing, while adding it with other text meets
/// the other worktree's file-level work.
#[test]
fn a_file_added_alike_in_two_worktrees_meets_nothing() {
    let (family, roots, _daemon) = served(&["w1", "w2"]);
    let [one, two] = [roots[0].clone(), roots[1].clone()];
    let text = "def helper(x):\n    return x * 2\n";
    write_file(&one, "helpers.py", text);
    block_on(async {
        let main = client(&family.main());
        let session = worktree_session(&one);
        wait_for_intents(&main, &session, None, |i| {
            i.iter().any(|i| i.files.contains(",helpers.py,"))
        })
        .await;
        let w2 = client(&two);
        let same = preview_in(&w2, "b", "helpers.py", "", text, false).await;
        assert!(overlaps(&same).is_empty(), "{:?}", same.conflicts);
        let other = preview_in(
            &w2,
            "b",
            "helpers.py",
            "",
            "def helper(x):\n    return x\n",
            false,
        )
        .await;
        assert_eq!(overlaps(&other).len(), 1, "{:?}", other.conflicts);
    });
}

/// Issue 35: worktrees of a deep tree added while the daemon runs (the checkout still
/// writing directories when the daemon first lists the new worktree) keep no directory
/// without a watch: a save in the deepest directory of each is seen, with no hook.
#[test]
fn a_save_in_the_deepest_directory_of_a_worktree_added_while_the_daemon_runs_is_seen() {
    // 40 directories deep, and 120 side directories with a file each.
    let deep: String = (0..40).map(|i| format!("d{i}/")).collect();
    let deepest = format!("{deep}leaf.py");
    let mut files: Vec<(String, String)> = (0..120)
        .map(|i| {
            (
                format!("side{}/s{i}/m{i}.py", i % 12),
                format!("X{i} = {i}\n"),
            )
        })
        .collect();
    files.push((deepest.clone(), "def leaf():\n    return 1\n".into()));
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let family = Family::new(&borrowed);
    let _daemon = family.daemon();
    block_on(async {
        let main = client(&family.main());
        for name in ["n1", "n2", "n3"] {
            let root = family.add(name);
            wait_answering(&root, true);
            write_file(&root, &deepest, "def leaf():\n    return 2\n");
            let found = wait_for_intents(&main, &worktree_session(&root), None, |i| {
                i.iter().any(|i| i.files.contains(&deepest))
            })
            .await;
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(regions(&found[0]), [[2, 2]]);
        }
    });
}

/// Issue 35: a renamed branch renames the worktree's observed work (its description names
/// the worktree by its branch as it is now).
#[test]
fn a_renamed_branch_updates_the_worktrees_intent_description() {
    let (family, roots, _daemon) = served(&["w1"]);
    let one = roots[0].clone();
    write_file(
        &one,
        "app.py",
        &edited("    y = x + 1\n", "    y = x + 7\n"),
    );
    block_on(async {
        let main = client(&family.main());
        let session = worktree_session(&one);
        let found = wait_for_intents(&main, &session, None, |i| i.len() == 1).await;
        assert_eq!(found[0].description, "worktree w1");
        family.git(&one, &["branch", "-m", "w1", "renamed"]);
        let renamed = wait_for_intents(&main, &session, None, |i| {
            i.len() == 1 && i[0].description == "worktree renamed"
        })
        .await;
        assert_eq!(renamed[0].intent_id, found[0].intent_id, "the same intent");
    });
}

/// Issue 35: when worktrees are polled instead of watched (here forced with `WIT_WATCH=poll`,
/// as on a file system without notification), saves are still seen and `wit status` says so,
/// not only `daemon.log`.
#[test]
fn wit_status_reports_the_polling_fallback() {
    let family = Family::new(&[("app.py", APP)]);
    let one = family.add("w1");
    let mut env = store_env(&family.main());
    env.push(("WIT_WATCH", "poll".to_owned()));
    let mut daemon = Daemon::spawn_at(&family.main(), &env);
    daemon.wait_ready();
    wait_answering(&one, true);
    write_file(
        &one,
        "app.py",
        &edited("    y = x + 1\n", "    y = x + 3\n"),
    );
    block_on(async {
        let main = client(&family.main());
        wait_for_intents(&main, &worktree_session(&one), None, |i| i.len() == 1).await;
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let output = Command::new(wit_bin())
            .args(["--json", "status"])
            .current_dir(family.main())
            .envs(store_env(&family.main()))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let status: Value = serde_json::from_slice(&output.stdout).unwrap();
        let polled = status["watch"]["polled"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if polled
            .iter()
            .any(|p| p.as_str() == Some(one.to_str().unwrap()))
        {
            assert_eq!(status["watch"]["reason"], "WIT_WATCH=poll", "{status}");
            let human = Command::new(wit_bin())
                .arg("status")
                .current_dir(family.main())
                .envs(store_env(&family.main()))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&human.stdout);
            assert!(text.contains("watch: polling"), "{text}");
            break;
        }
        assert!(Instant::now() < deadline, "never reported: {status}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
