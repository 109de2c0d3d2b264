//! `wit-bench replay` on the committed sample of real pairs (tests/fixtures/replay/): the
//! harness replays every pair through a real daemon, every edit it derives applies, its truth
//! is git's merge, and its scores are what the pairs' outcomes give. The figures themselves
//! are the benchmark's business (BENCHMARKS.md), not this test's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::harness::wit_bin;

const PREDICTORS: [&str; 4] = ["conflicts", "related", "same file", "lines ±1"];

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay/pairs.jsonl")
}

fn fixture_pairs() -> Vec<Value> {
    std::fs::read_to_string(fixture())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs the replay on the sample (with `extra` arguments) and returns its JSON report.
fn run_replay(extra: &[&str]) -> Value {
    let out_dir = tempfile::tempdir().unwrap();
    let json = out_dir.path().join("replay.json");
    let output = Command::new(env!("CARGO_BIN_EXE_wit-bench"))
        .arg("--wit")
        .arg(wit_bin())
        .args(["replay", "--data"])
        .arg(fixture())
        .args(extra)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "wit-bench replay failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("| all |"), "no overall row:\n{stdout}");
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

/// Asserts that a reported ratio is `num / den` (`null` when `den` is 0). Compared within
/// 1e-12: serde_json reads floats back to within an ulp, not always exactly.
fn assert_ratio(reported: &Value, num: u64, den: u64, what: &str) {
    if den == 0 {
        assert_eq!(reported, &Value::Null, "{what}");
    } else {
        let got = reported.as_f64().unwrap_or(f64::NAN);
        let want = num as f64 / den as f64;
        assert!((got - want).abs() < 1e-12, "{what}: {got} != {want}");
    }
}

/// Asserts what every replayed pair must be: the fixture's pair, every recording of A and
/// every preview of B applied (the derived edits are sound), and the truth git's merge of
/// the replayed files, agreeing with the merge of the original commits the miner ran. The
/// pair's id and conflicted files.
fn assert_sound<'p>(pair: &'p Value, outcome: &Value) -> (&'p Value, &'p Vec<Value>) {
    let id = &pair["id"];
    assert_eq!(&outcome["id"], id);
    assert_eq!(outcome["notApplied"], 0, "{id}");
    let conflicted = pair["conflicted"].as_array().unwrap();
    assert_eq!(
        outcome["truth"],
        Value::Bool(!conflicted.is_empty()),
        "{id}"
    );
    (id, conflicted)
}

#[test]
fn the_replay_scores_real_pairs_against_git() {
    let pairs = fixture_pairs();
    assert!(pairs.iter().any(|p| p["truth"] == true) && pairs.iter().any(|p| p["truth"] == false));
    let report = run_replay(&[]);
    let outcomes = report["pairs"].as_array().unwrap();
    assert_eq!(outcomes.len(), pairs.len());

    for (pair, outcome) in pairs.iter().zip(outcomes) {
        let (id, conflicted) = assert_sound(pair, outcome);
        assert_eq!(
            outcome["conflicted"].as_array().unwrap(),
            conflicted,
            "{id}"
        );
        // Same file: a file both patches change.
        let shared = pair["files"]
            .as_object()
            .unwrap()
            .values()
            .any(|f| f.get("a").is_some() && f.get("b").is_some());
        let predicted = &outcome["predicted"];
        assert_eq!(predicted["same file"], Value::Bool(shared), "{id}");
        // Git conflicts only where both change lines that overlap or touch: the line check
        // (and so the same-file check) always sees a conflict.
        if outcome["truth"] == true {
            assert_eq!(predicted["lines ±1"], true, "{id}");
            assert_eq!(predicted["same file"], true, "{id}");
        }
        assert_eq!(
            predicted["related"],
            Value::Bool(outcome["relatedItems"].as_u64().unwrap() > 0),
            "{id}"
        );
    }
    // wit's own answer reaches the score: a pair where both rewrite the same lines is a
    // collision wit reports.
    assert!(outcomes
        .iter()
        .any(|o| o["truth"] == true && o["predicted"]["conflicts"] == true));
    // On this sample wit's collisions are git's conflicts, pair by pair: it holds pairs whose
    // patches share identical hunks (git takes one), a clean pair that the edits' context
    // lines made a false alarm (gin-9abb909731), and a conflict that only git's histogram
    // diff sees (gin-07fe0d9944); none of the false alarms that the rule of docs/protocol.md
    // 13.4 itself makes (BENCHMARKS.md, replay).
    for o in outcomes {
        assert_eq!(
            o["predicted"]["conflicts"], o["truth"],
            "{}: {}",
            o["id"], o["hint"]
        );
    }

    // The scores are the confusion counts of the outcomes, per language and overall.
    let mut groups: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for o in outcomes {
        groups
            .entry(o["language"].as_str().unwrap().to_owned())
            .or_default()
            .push(o);
        groups.entry("all".to_owned()).or_default().push(o);
    }
    let scores = report["scores"].as_array().unwrap();
    assert_eq!(scores.len(), groups.len());
    for score in scores {
        let group = &groups[score["language"].as_str().unwrap()];
        assert_eq!(score["pairs"], group.len());
        for name in PREDICTORS {
            let (mut tp, mut fp, mut fn_, mut tn) = (0u64, 0u64, 0u64, 0u64);
            for o in group {
                match (o["truth"] == true, o["predicted"][name] == true) {
                    (true, true) => tp += 1,
                    (false, true) => fp += 1,
                    (true, false) => fn_ += 1,
                    (false, false) => tn += 1,
                }
            }
            let s = &score["predictors"][name];
            assert_eq!(
                (&s["tp"], &s["fp"], &s["fn"], &s["tn"]),
                (&tp.into(), &fp.into(), &fn_.into(), &tn.into()),
                "{name}"
            );
            assert_ratio(&s["precision"], tp, tp + fp, name);
            assert_ratio(&s["recall"], tp, tp + fn_, name);
            assert_ratio(&s["f1"], 2 * tp, 2 * tp + fp + fn_, name);
        }
    }
}

/// Worktree mode (issue 24): A's patch written into its own worktree with no wit call is
/// seen as that worktree's work, B's previews through its own worktree's socket are scored,
/// and `worktree.forecast` between the two worktrees finds exactly git's conflicts (it asks
/// git about the same states). Three pairs of the sample: one conflicting, two clean.
#[test]
fn the_replay_in_worktrees_sees_unhooked_work_and_forecasts_gits_conflicts() {
    let pairs = fixture_pairs();
    let report = run_replay(&["--worktrees", "--limit", "3"]);
    let outcomes = report["pairs"].as_array().unwrap();
    assert_eq!(outcomes.len(), 3);
    assert!(outcomes.iter().any(|o| o["truth"] == true));
    assert!(outcomes.iter().any(|o| o["truth"] == false));
    for (pair, outcome) in pairs.iter().zip(outcomes) {
        let (id, _) = assert_sound(pair, outcome);
        // A's work was shown as the worktree's observed work (each pair changes a tracked
        // file on A's side).
        assert!(
            outcome["seenAfterMs"].is_number(),
            "{id}: {}",
            outcome["hint"]
        );
        let predicted = &outcome["predicted"];
        assert_eq!(predicted["forecast"], outcome["truth"], "{id}");
        assert_eq!(
            predicted["conflicts (worktree)"], outcome["truth"],
            "{id}: {}",
            outcome["hint"]
        );
    }
    let all = report["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["language"] == "all")
        .unwrap();
    for name in [
        "conflicts (worktree)",
        "related",
        "same file",
        "lines ±1",
        "forecast",
    ] {
        assert!(all["predictors"][name].is_object(), "{name}");
    }
}
