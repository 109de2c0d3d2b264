//! The work map end to end (docs/protocol.md 13, issue 21): observed work recorded as regions
//! and kept true as the file changes, symbols added inside containers named with them, and
//! collisions told apart from context (`related`); declared intents keep their rules.

use serde_json::{json, Value};
use wit::client::WitClient;
use wit::protocol::{
    EditPreflightParams, EditPreflightParamsEditsItem, EditPreflightResult, IntentQueryParams,
    IntentRecord,
};

use crate::harness::*;
use crate::intents::declare;
use crate::locks::acquire;

/// A Python module: imports (lines 1-2), a constant (4), `alpha` (7-11), `beta` calling it
/// (14-15), classes `Child` (18-20) and `Other` (23-25).
const APP: &str = "\
import os
import sys

LIMIT = 10


def alpha(x):
    a = x + 1
    b = a * 2
    c = b - 3
    return c


def beta(y):
    return alpha(y) + 1


class Child:
    def run(self):
        return 1


class Other:
    def process(self):
        return 2
";

fn setup(files: &[(&str, &str)]) -> (Repo, Daemon) {
    let repo = Repo::new();
    for (path, text) in files {
        repo.write(path, text);
    }
    let daemon = Daemon::start(&repo);
    (repo, daemon)
}

fn params(session: &str, file: &str, edits: &[(&str, &str)], record: bool) -> EditPreflightParams {
    EditPreflightParams {
        session_id: session.into(),
        file: file.into(),
        edits: edits
            .iter()
            .map(|(old, new)| EditPreflightParamsEditsItem {
                old_text: (*old).into(),
                new_text: (*new).into(),
                replace_all: None,
            })
            .collect(),
        content: None,
        record: Some(record),
    }
}

async fn preflight(
    client: &WitClient,
    session: &str,
    file: &str,
    edits: &[(&str, &str)],
    record: bool,
) -> EditPreflightResult {
    let result = client
        .edit_preflight(params(session, file, edits, record))
        .await
        .unwrap();
    assert!(result.applies, "{:?}", result.reason);
    result
}

/// Previews and records a clean edit, then writes it to disk as the agent would.
async fn edit_and_write(
    repo: &Repo,
    client: &WitClient,
    session: &str,
    file: &str,
    edits: &[(&str, &str)],
) -> EditPreflightResult {
    let result = preflight(client, session, file, edits, true).await;
    assert!(result.conflicts.is_empty(), "{:?}", result.conflicts);
    let mut text = std::fs::read_to_string(repo.path().join(file)).unwrap();
    for (old, new) in edits {
        text = text.replacen(old, new, 1);
    }
    repo.write(file, &text);
    result
}

async fn intents_of(client: &WitClient, session: &str) -> Vec<IntentRecord> {
    client
        .intent_query(IntentQueryParams {
            session_id: Some(session.into()),
            file: None,
            status: None,
        })
        .await
        .unwrap()
}

/// The regions of the session's only live intent, as `[[start, end], ..]`.
async fn regions_of(client: &WitClient, session: &str) -> Vec<[i64; 2]> {
    let intents = intents_of(client, session).await;
    assert_eq!(intents.len(), 1, "{intents:?}");
    intents[0]
        .regions
        .iter()
        .map(|r| [r.start_line, r.end_line])
        .collect()
}

fn json_of<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

fn overlap_sessions(result: &EditPreflightResult) -> Vec<String> {
    json_of(&result.conflicts)
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "INTENT_OVERLAP")
        .map(|c| c["overlappingSessionId"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_added_function_is_its_lines_not_the_whole_file() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        let added = edit_and_write(
            &repo,
            &client,
            "a",
            "app.py",
            &[(
                "\n\nclass Other:",
                "\n\ndef gamma(z):\n    return z\n\n\nclass Other:",
            )],
        )
        .await;
        assert!(
            added.symbols.contains(&"app.py:gamma".to_string()),
            "{:?}",
            added.symbols
        );
        // The changed lines, not the file: the four inserted (the edit's context lines, which
        // it carries to be unique, are no change).
        assert_eq!(regions_of(&client, "a").await, [[23, 26]]);
        let record = json_of(&intents_of(&client, "a").await[0]);
        assert_eq!(record["description"], "observed edit");
        assert_eq!(record["status"], "active");
        // B's edit of alpha meets nothing of A's.
        let b = preflight(&client, "b", "app.py", &[("b = a * 2", "b = a * 3")], false).await;
        assert!(b.conflicts.is_empty(), "{:?}", b.conflicts);
        // B's edit inside gamma collides.
        let b = preflight(&client, "b", "app.py", &[("return z", "return -z")], false).await;
        assert_eq!(overlap_sessions(&b), ["a"]);
    });
}

#[test]
fn a_module_level_import_edit_is_its_line() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(
            &repo,
            &client,
            "a",
            "app.py",
            &[("import sys", "import sys, re")],
        )
        .await;
        assert_eq!(regions_of(&client, "a").await, [[2, 2]]);
        let b = preflight(&client, "b", "app.py", &[("return 2", "return 3")], false).await;
        assert!(b.conflicts.is_empty(), "{:?}", b.conflicts);
        let b = preflight(
            &client,
            "b",
            "app.py",
            &[("import sys, re", "import sys")],
            false,
        )
        .await;
        assert_eq!(overlap_sessions(&b), ["a"]);
    });
}

#[test]
fn a_mixed_edit_keeps_the_import_and_the_function() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        let content = APP
            .replace("import os", "import os.path")
            .replace("c = b - 3", "c = b - 4");
        let result = client
            .edit_preflight(EditPreflightParams {
                content: Some(content.clone()),
                edits: Vec::new(),
                ..params("a", "app.py", &[], true)
            })
            .await
            .unwrap();
        assert!(result.conflicts.is_empty());
        repo.write("app.py", &content);
        assert_eq!(regions_of(&client, "a").await, [[1, 1], [10, 10]]);
        // The missed case of issue 21: B's edit of the same import line is a collision.
        let b = preflight(
            &client,
            "b",
            "app.py",
            &[("import os.path", "import os")],
            false,
        )
        .await;
        assert_eq!(overlap_sessions(&b), ["a"]);
    });
}

#[test]
fn two_edits_of_one_session_are_one_intent_with_merged_regions() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "app.py", &[("a = x + 1", "a = x + 2")]).await;
        edit_and_write(&repo, &client, "a", "app.py", &[("b = a * 2", "b = a * 5")]).await;
        edit_and_write(&repo, &client, "a", "app.py", &[("return 2", "return 7")]).await;
        assert_eq!(regions_of(&client, "a").await, [[8, 9], [25, 25]]);
    });
}

#[test]
fn a_further_edit_adds_its_symbols_to_the_intent() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "app.py", &[("a = x + 1", "a = x + 2")]).await;
        let poll = |since| wit::protocol::EventsPollParams {
            since,
            wait_ms: None,
            limit: Some(1000),
            types: Vec::new(),
        };
        let since = client.events_poll(poll(None)).await.unwrap().next;
        edit_and_write(&repo, &client, "a", "app.py", &[("return 2", "return 7")]).await;
        let intents = intents_of(&client, "a").await;
        assert_eq!(intents.len(), 1, "{intents:?}");
        let symbols: Vec<String> = serde_json::from_str(&intents[0].symbols).unwrap();
        assert_eq!(symbols, ["alpha", "Other.process", "Other"]);
        // The update tells the new symbols with the regions.
        let events = json_of(&client.events_poll(poll(Some(since))).await.unwrap().events);
        let update = events
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == "intent.updated")
            .cloned()
            .unwrap();
        assert_eq!(update["data"]["symbols"], json!(symbols));
        assert_eq!(update["data"]["regions"].as_array().unwrap().len(), 2);
    });
}

#[test]
fn regions_follow_another_sessions_edit_above_them_and_the_disk() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "app.py", &[("return 2", "return 7")]).await;
        assert_eq!(regions_of(&client, "a").await, [[25, 25]]);
        // B adds two lines at the top: A's region moves down by two.
        edit_and_write(
            &repo,
            &client,
            "b",
            "app.py",
            &[("import sys\n", "import sys\nimport re\nimport json\n")],
        )
        .await;
        assert_eq!(regions_of(&client, "a").await, [[27, 27]]);
        assert_eq!(
            regions_of(&client, "b").await,
            [[3, 4]],
            "the inserted lines"
        );
        // A change the index sees on disk (no preflight): one line removed above.
        let text = std::fs::read_to_string(repo.path().join("app.py")).unwrap();
        repo.write("app.py", &text.replace("LIMIT = 10\n", ""));
        assert_eq!(regions_of(&client, "a").await, [[26, 26]]);
        // And the region still collides where it now is.
        let c = preflight(&client, "c", "app.py", &[("return 7", "return 8")], false).await;
        assert_eq!(overlap_sessions(&c), ["a"]);
    });
}

/// Issue 35: a writer that truncates a file and writes it a while later (an agent's tool
/// preempted on a loaded machine) is not read in between: the empty file is not taken for the
/// deletion of every line, nor the text after it for new lines over the whole file (which
/// made another session's region the whole file: the replay's false alarms under load).
#[test]
fn a_file_truncated_and_written_later_is_read_only_once_written() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "app.py", &[("return 2", "return 7")]).await;
        assert_eq!(regions_of(&client, "a").await, [[25, 25]]);
        let path = repo.path().join("app.py");
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("LIMIT = 10\n", "");
        let next = repo.path().join("next.txt");
        std::fs::write(&next, &text).unwrap();
        // Open with truncation, wait 1.5 s (past the observer's settle time and its longest
        // delay), then write and close.
        let mut writer = std::process::Command::new("python3")
            .args([
                "-c",
                "import sys, time\nf = open(sys.argv[1], 'w')\nf.flush()\ntime.sleep(1.5)\nf.write(open(sys.argv[2]).read())\nf.close()",
            ])
            .arg(&path)
            .arg(&next)
            .spawn()
            .unwrap();
        // While the file is empty (and was truncated long enough ago to look settled), a
        // query and another session's declaration read it: they keep nothing of that text.
        let truncated = std::time::Instant::now();
        while std::fs::metadata(&path).unwrap().len() > 0 {
            assert!(
                truncated.elapsed() < std::time::Duration::from_secs(10),
                "never truncated"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(std::time::Duration::from_millis(400));
        intents_of(&client, "a").await;
        client
            .intent_declare(declare("b", "rework", &["app.py"], None))
            .await
            .unwrap();
        assert!(writer.wait().unwrap().success());
        assert_eq!(regions_of(&client, "a").await, [[24, 24]]);
    });
}

#[test]
fn a_region_whose_lines_are_replaced_maps_to_the_replacement() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "app.py", &[("b = a * 2", "b = a * 9")]).await;
        assert_eq!(regions_of(&client, "a").await, [[9, 9]]);
        // Lines 8-10 rewritten into four lines on disk.
        let text = std::fs::read_to_string(repo.path().join("app.py")).unwrap();
        repo.write(
            "app.py",
            &text.replace(
                "    a = x + 1\n    b = a * 9\n    c = b - 3\n",
                "    a = x\n    a += 1\n    b = a * 9  # nine\n    c = b - 3 + 0\n",
            ),
        );
        assert_eq!(regions_of(&client, "a").await, [[8, 11]]);
    });
}

#[test]
fn a_preview_before_the_recorded_edit_is_written_sees_its_lines_where_they_are() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        // A records an edit that adds lines at the top and one inside Other; not written yet.
        let a = preflight(
            &client,
            "a",
            "app.py",
            &[
                ("import os\n", "import os\nimport re\nimport json\n"),
                ("return 2", "return 7"),
            ],
            true,
        )
        .await;
        assert!(a.conflicts.is_empty());
        // B previews against the file as it still is: `return 2` is on line 25 there.
        let b = preflight(&client, "b", "app.py", &[("return 2", "return 3")], false).await;
        assert_eq!(overlap_sessions(&b), ["a"]);
        let b = preflight(&client, "b", "app.py", &[("return 1", "return 3")], false).await;
        assert!(b.conflicts.is_empty(), "{:?}", b.conflicts);
    });
}

/// The touched symbols of a whole-content write of `file` (held as `text` in a fresh
/// repository) that replaces `old` with `new`: the line diff makes an added member a pure
/// insertion between symbols, the case that used to lose its container.
fn touched(file: &str, text: &str, old: &str, new: &str) -> Vec<String> {
    let (repo, _daemon) = setup(&[(file, text)]);
    let client = repo.client();
    let content = text.replacen(old, new, 1);
    assert_ne!(content, text);
    block_on(async {
        let result = client
            .edit_preflight(EditPreflightParams {
                content: Some(content),
                edits: Vec::new(),
                ..params("a", file, &[], false)
            })
            .await
            .unwrap();
        assert!(result.applies);
        result.symbols
    })
}

#[test]
fn a_method_appended_to_a_python_class_is_named_with_it() {
    let symbols = touched(
        "app.py",
        APP,
        "        return 1\n",
        "        return 1\n\n    def process(self):\n        return 3\n",
    );
    assert!(
        symbols.contains(&"app.py:Child.process".to_string()),
        "{symbols:?}"
    );
    assert!(
        !symbols
            .iter()
            .any(|s| s == "app.py:process" || s == "app.py:Other.process"),
        "{symbols:?}"
    );
}

#[test]
fn a_method_appended_to_a_python_class_is_not_another_class_method_of_that_name() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        client
            .lock_acquire(acquire("app.py:Other.process", "holder", None))
            .await
            .unwrap();
        let content = APP.replacen(
            "        return 1\n",
            "        return 1\n\n    def process(self):\n        return 3\n",
            1,
        );
        let a = client
            .edit_preflight(EditPreflightParams {
                content: Some(content.clone()),
                edits: Vec::new(),
                ..params("a", "app.py", &[], true)
            })
            .await
            .unwrap();
        assert!(a.conflicts.is_empty(), "{:?}", a.conflicts);
        assert!(
            a.symbols.contains(&"app.py:Child.process".to_string()),
            "{:?}",
            a.symbols
        );
        repo.write("app.py", &content);
        // B's edit of Other.process meets nothing of A's work.
        let b = preflight(&client, "b", "app.py", &[("return 2", "return 4")], false).await;
        assert!(
            !overlap_sessions(&b).contains(&"a".to_string()),
            "{:?}",
            b.conflicts
        );
    });
}

#[test]
fn a_fn_added_to_a_rust_impl_is_named_with_its_type() {
    let text = "pub struct Store;\n\nimpl Store {\n    pub fn open() -> Store {\n        Store\n    }\n}\n\npub fn open() {}\n";
    let symbols = touched(
        "src/lib.rs",
        text,
        "        Store\n    }\n",
        "        Store\n    }\n\n    pub fn close(&self) {}\n",
    );
    assert!(
        symbols.contains(&"src/lib.rs:Store.close".to_string()),
        "{symbols:?}"
    );
    assert!(
        !symbols.iter().any(|s| s == "src/lib.rs:close"),
        "{symbols:?}"
    );
}

#[test]
fn members_added_to_ts_and_java_classes_are_named_with_them() {
    let ts = "export class Cart {\n  total(): number {\n    return 0;\n  }\n}\n";
    let symbols = touched(
        "src/cart.ts",
        ts,
        "    return 0;\n  }\n",
        "    return 0;\n  }\n\n  clear(): void {}\n",
    );
    assert!(
        symbols.contains(&"src/cart.ts:Cart.clear".to_string()),
        "{symbols:?}"
    );
    let java =
        "package shop;\n\npublic class Cart {\n    int total() {\n        return 0;\n    }\n}\n";
    let symbols = touched(
        "src/shop/Cart.java",
        java,
        "        return 0;\n    }\n",
        "        return 0;\n    }\n\n    void clear() {}\n",
    );
    assert!(
        symbols.contains(&"src/shop/Cart.java:Cart.clear".to_string()),
        "{symbols:?}"
    );
}

#[test]
fn a_go_method_added_is_named_with_its_type() {
    let go = "package shop\n\ntype Cart struct{}\n\nfunc (c *Cart) Total() int {\n\treturn 0\n}\n";
    let symbols = touched(
        "shop/cart.go",
        go,
        "\treturn 0\n}\n",
        "\treturn 0\n}\n\nfunc (c *Cart) Clear() {}\n",
    );
    assert!(
        symbols.contains(&"shop/cart.go:Cart.Clear".to_string()),
        "{symbols:?}"
    );
}

#[test]
fn the_same_function_in_separate_hunks_is_context_not_a_collision() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "app.py", &[("a = x + 1", "a = x + 2")]).await;
        // Line 11 is two lines away from A's line 8: same function, no collision.
        let b = preflight(
            &client,
            "b",
            "app.py",
            &[("return c", "return c * 2")],
            false,
        )
        .await;
        assert!(b.conflicts.is_empty(), "{:?}", b.conflicts);
        let a_intent = intents_of(&client, "a").await[0].intent_id.clone();
        assert_eq!(
            json_of(&b.related),
            json!([{"type": "SAME_SYMBOL", "symbolPath": "app.py:alpha", "sessionId": "a", "intentId": a_intent}])
        );
    });
}

#[test]
fn an_edits_context_lines_are_not_its_work() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        // A inserts a line, carrying the lines around it as an Edit tool does.
        edit_and_write(
            &repo,
            &client,
            "a",
            "app.py",
            &[(
                "    a = x + 1\n    b = a * 2\n",
                "    a = x + 1\n    a += 1\n    b = a * 2\n",
            )],
        )
        .await;
        assert_eq!(
            regions_of(&client, "a").await,
            [[9, 9]],
            "the inserted line"
        );
        // B changes line 11, two lines below A's line 9: same function, no collision.
        let b = preflight(&client, "b", "app.py", &[("c = b - 3", "c = b - 4")], false).await;
        assert!(b.conflicts.is_empty(), "{:?}", b.conflicts);
        // B's edit carries A's line as its context and changes line 12 only.
        let b = preflight(
            &client,
            "b",
            "app.py",
            &[(
                "    a += 1\n    b = a * 2\n    c = b - 3\n    return c\n",
                "    a += 1\n    b = a * 2\n    c = b - 3\n    return -c\n",
            )],
            false,
        )
        .await;
        assert!(b.conflicts.is_empty(), "{:?}", b.conflicts);
        assert_eq!(b.symbols, ["app.py:alpha"]);
        // Changing the line next to A's collides.
        let b = preflight(&client, "b", "app.py", &[("b = a * 2", "b = a * 3")], false).await;
        assert_eq!(overlap_sessions(&b), ["a"]);
    });
}

#[test]
fn an_edit_that_changes_nothing_meets_nothing() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "app.py", &[("a = x + 1", "a = x + 2")]).await;
        // B makes A's change again (its own patch had it too): no line changes.
        let b = preflight(&client, "b", "app.py", &[("a = x + 2", "a = x + 2")], false).await;
        assert!(b.conflicts.is_empty(), "{:?}", b.conflicts);
        assert!(b.symbols.is_empty(), "{:?}", b.symbols);
    });
}

/// Eight one-line statements, `s1`..`s8`, lines 1-8.
const LINES: &str = "s1 = 1\ns2 = 2\ns3 = 3\ns4 = 4\ns5 = 5\ns6 = 6\ns7 = 7\ns8 = 8\n";

/// A records `a_edit` on `LINES` and writes it; then B previews `b_edit`: whether it meets A.
fn meets_after(a_edit: (&str, &str), b_edit: (&str, &str)) -> (Vec<[i64; 2]>, bool) {
    let (repo, _daemon) = setup(&[("m.py", LINES)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "m.py", &[a_edit]).await;
        let regions = regions_of(&client, "a").await;
        let b = preflight(&client, "b", "m.py", &[b_edit], false).await;
        (regions, !overlap_sessions(&b).is_empty())
    })
}

/// 13.4, wave 4: an insertion directly after a region meets it; with one unchanged line
/// between, git merges the two, and so they do not meet.
#[test]
fn an_insertion_meets_a_region_it_touches_not_one_a_line_away() {
    let change = ("s3 = 3\n", "s3 = 30\n");
    let (regions, meets) = meets_after(change, ("s3 = 30\n", "s3 = 30\nnew = 0\n"));
    assert_eq!(regions, [[3, 3]]);
    assert!(meets, "an insertion right after the region");
    let (_, meets) = meets_after(change, ("s2 = 2\n", "new = 0\ns2 = 2\n"));
    assert!(!meets, "an insertion before s2: s2 lies between");
    let (_, meets) = meets_after(change, ("s4 = 4\n", "s4 = 4\nnew = 0\n"));
    assert!(!meets, "an insertion after s4: s4 lies between");
    let (_, meets) = meets_after(change, ("s5 = 5\n", "s5 = 50\n"));
    assert!(!meets, "a change with one unchanged line between");
}

/// Two insertions at one point meet; one line apart they do not. An insertion's region is
/// its lines; what B inserts is a point between two lines of A's text.
#[test]
fn two_insertions_meet_at_one_point_not_one_line_apart() {
    let insert = ("s4 = 4\n", "s4 = 4\nmine = 1\n");
    let (regions, meets) = meets_after(insert, ("mine = 1\n", "mine = 1\ntheirs = 2\n"));
    assert_eq!(regions, [[5, 5]]);
    assert!(meets, "inserted at the same point (after A's line)");
    let (_, meets) = meets_after(insert, ("s4 = 4\n", "theirs = 2\ns4 = 4\n"));
    assert!(!meets, "one line (s4) apart");
}

/// A pure deletion's region is the point where the text joins, `{startLine: n + 1,
/// endLine: n}`; a change of a line next to the point meets it, one a line away does not.
#[test]
fn a_deletions_region_is_the_point_where_the_text_joins() {
    let delete = ("s4 = 4\ns5 = 5\n", "");
    let (regions, meets) = meets_after(delete, ("s3 = 3\n", "s3 = 30\n"));
    assert_eq!(regions, [[4, 3]], "the point after line 3");
    assert!(meets, "the line before the point");
    let (_, meets) = meets_after(delete, ("s6 = 6\n", "s6 = 60\n"));
    assert!(meets, "the line after the point (now line 4)");
    let (_, meets) = meets_after(delete, ("s2 = 2\n", "s2 = 20\n"));
    assert!(!meets, "s3 lies between");
    let (_, meets) = meets_after(delete, ("s7 = 7\n", "s7 = 70\n"));
    assert!(!meets, "s6 lies between");
}

/// Identical changes in one tree: B writing the text A already wrote changes no line, so it
/// meets nothing — as a whole-content write too.
#[test]
fn an_identical_change_in_one_tree_meets_nothing() {
    let (repo, _daemon) = setup(&[("m.py", LINES)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "m.py", &[("s3 = 3\n", "s3 = 30\n")]).await;
        let mut same = params("b", "m.py", &[], false);
        same.edits = Vec::new();
        same.content = Some(LINES.replace("s3 = 3\n", "s3 = 30\n"));
        let b = client.edit_preflight(same).await.unwrap();
        assert!(b.conflicts.is_empty(), "{:?}", b.conflicts);
    });
}

/// git's unified diff of two texts as merge-ort aligns them (histogram, no indent
/// heuristic): the new-side lines of each hunk, `[start, end]` (a point for a deletion).
fn gits_new_lines(old: &str, new: &str) -> Vec<[i64; 2]> {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&a, old).unwrap();
    std::fs::write(&b, new).unwrap();
    let out = std::process::Command::new("git")
        .args(["diff", "--no-index", "--no-color", "--histogram"])
        .args(["--no-indent-heuristic", "-U0", "--"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("@@ -"))
        .map(|rest| {
            let new = rest.split(' ').nth(1).unwrap().trim_start_matches('+');
            let (start, count) = match new.split_once(',') {
                Some((s, c)) => (s.parse::<i64>().unwrap(), c.parse::<i64>().unwrap()),
                None => (new.parse::<i64>().unwrap(), 1),
            };
            if count == 0 {
                [start + 1, start]
            } else {
                [start, start + count - 1]
            }
        })
        .collect()
}

/// The ambiguous insertion of issue 35: a method inserted between two methods whose tails
/// are alike, written as an edit that carries the previous method's tail as context. The
/// region is where git's merge puts the inserted lines, not where the edit's own texts
/// would align them; B's change of the previous method's last line, which git merges
/// cleanly, meets nothing.
#[test]
fn an_ambiguous_insertion_is_placed_where_git_places_it() {
    let before = "\
class C:
    def a(self):
        x = 1
        return None

    def c(self):
        return None
";
    let old = "        x = 1\n        return None\n\n    def c(self):\n";
    let new = "        x = 1\n        return None\n\n    def b(self):\n        return None\n\n    def c(self):\n";
    let after = before.replacen(old, new, 1);
    let (repo, _daemon) = setup(&[("c.py", before)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "c.py", &[(old, new)]).await;
        let regions = regions_of(&client, "a").await;
        assert_eq!(regions, gits_new_lines(before, &after), "git's placement");
        assert_eq!(
            regions,
            [[6, 8]],
            "after the blank line, slid down as git slides it"
        );
        let tail = (
            "        return None\n\n    def b",
            "        return 0\n\n    def b",
        );
        let b = preflight(&client, "b", "c.py", &[tail], false).await;
        assert!(overlap_sessions(&b).is_empty(), "{:?}", b.conflicts);
    });
}

#[test]
fn adjacent_lines_collide() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "app.py", &[("a = x + 1", "a = x + 2")]).await;
        let b = preflight(&client, "b", "app.py", &[("b = a * 2", "b = a * 3")], false).await;
        assert_eq!(overlap_sessions(&b), ["a"]);
        assert!(
            b.related.is_empty(),
            "a collision is not repeated as context: {:?}",
            b.related
        );
    });
}

#[test]
fn a_caller_of_a_changed_symbol_is_coupled() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        edit_and_write(&repo, &client, "a", "app.py", &[("c = b - 3", "c = b - 4")]).await;
        let a_intent = intents_of(&client, "a").await[0].intent_id.clone();
        // beta calls alpha, in which A works.
        let b = preflight(
            &client,
            "b",
            "app.py",
            &[("alpha(y) + 1", "alpha(y) + 2")],
            false,
        )
        .await;
        assert!(b.conflicts.is_empty(), "{:?}", b.conflicts);
        assert_eq!(
            json_of(&b.related),
            json!([{"type": "COUPLED", "symbolPath": "app.py:beta", "otherSymbol": "app.py:alpha",
                    "relation": "calls", "sessionId": "a", "intentId": a_intent}])
        );
        // And the other way round: an edit of alpha is called by beta, where B now works.
        edit_and_write(
            &repo,
            &client,
            "b",
            "app.py",
            &[("alpha(y) + 1", "alpha(y) + 2")],
        )
        .await;
        let b_intent = intents_of(&client, "b").await[0].intent_id.clone();
        let c = preflight(&client, "c", "app.py", &[("b = a * 2", "b = a * 7")], false).await;
        let related = json_of(&c.related);
        assert!(
            related.as_array().unwrap().contains(&json!(
                {"type": "COUPLED", "symbolPath": "app.py:alpha", "otherSymbol": "app.py:beta",
                 "relation": "called-by", "sessionId": "b", "intentId": b_intent}
            )),
            "{related}"
        );
    });
}

#[test]
fn declared_intents_keep_their_rules() {
    let (repo, _daemon) = setup(&[("app.py", APP)]);
    let client = repo.client();
    block_on(async {
        let declared = client
            .intent_declare(declare("a", "rework alpha", &["app.py"], Some(&["alpha"])))
            .await
            .unwrap();
        assert!(
            intents_of(&client, "a").await[0].regions.is_empty(),
            "declared: no regions"
        );
        // Anywhere in alpha's range collides, far from any changed line.
        let b = preflight(
            &client,
            "b",
            "app.py",
            &[("return c", "return c * 2")],
            false,
        )
        .await;
        assert_eq!(overlap_sessions(&b), ["a"]);
        let b = preflight(&client, "b", "app.py", &[("return 2", "return 3")], false).await;
        assert!(b.conflicts.is_empty());
        // intent.declare against observed work: a declared symbol containing a changed line.
        edit_and_write(&repo, &client, "d", "app.py", &[("return 1", "return 5")]).await;
        let e = client
            .intent_declare(declare("e", "child", &["app.py"], Some(&["Child.run"])))
            .await
            .unwrap();
        let hits: Vec<Value> = json_of(&e.conflicts.items).as_array().unwrap().clone();
        assert!(
            hits.iter().any(|c| c["overlappingSessionId"] == "d"),
            "{hits:?}"
        );
        let f = client
            .intent_declare(declare("f", "other", &["app.py"], Some(&["Other.process"])))
            .await
            .unwrap();
        let hits = json_of(&f.conflicts.items);
        assert!(
            !hits
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["overlappingSessionId"] == "d"),
            "{hits}"
        );
        // A file-level declaration meets every edit.
        client
            .intent_declare(declare("c", "whole file", &["app.py"], None))
            .await
            .unwrap();
        let b = preflight(&client, "b", "app.py", &[("return 2", "return 3")], false).await;
        assert!(overlap_sessions(&b).contains(&"c".to_string()));
        let _ = declared;
    });
}
