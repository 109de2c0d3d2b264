#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use super::spans::Edit;
use super::*;
use crate::coord::testing::Harness;
use crate::coord::IntentStatus;

const FILE: &str = "src/a.py";

/// `A` holds `A.m` and `A.n`; `f` is top level (the fake index's `def … end` syntax).
const TEXT: &str = "\
def A(x)
  def m(a)
    one
  end
  def n(b)
    two
  end
end
def f(q)
  three
end
";

fn harness() -> Harness {
    let h = Harness::new();
    h.index.set_text(FILE, TEXT);
    h
}

fn edit(old: &str, new: &str) -> Vec<Edit> {
    vec![Edit {
        old_text: old.into(),
        new_text: new.into(),
        replace_all: false,
    }]
}

fn run(h: &Harness, session: &str, edits: &[Edit]) -> Preflight {
    h.coord
        .preflight(session, FILE, NewText::Edits(edits), false)
        .unwrap()
}

fn names(p: &Preflight) -> Vec<&str> {
    p.symbols
        .iter()
        .map(|s| s.strip_prefix("src/a.py:").unwrap())
        .collect()
}

#[test]
fn an_edit_inside_a_method_touches_it_then_its_class() {
    let h = harness();
    let p = run(&h, "s1", &edit("one", "uno"));
    assert!(p.applies);
    assert_eq!(names(&p), ["A.m", "A"]);
    assert!(p.conflicts.is_empty() && p.violations.is_empty());
}

#[test]
fn an_edit_spanning_two_methods_touches_both() {
    let h = harness();
    let p = run(&h, "s1", &edit("one\n  end\n  def n(b)\n    two", "merged"));
    assert_eq!(names(&p), ["A.m", "A.n", "A"]);
}

#[test]
fn a_write_that_changes_one_function_touches_only_it() {
    let h = harness();
    let content = TEXT.replace("three", "drei");
    let p = h
        .coord
        .preflight("s1", FILE, NewText::Content(&content), false)
        .unwrap();
    assert_eq!(names(&p), ["f"]);
    // The region was parsed, not the whole file... and a rename shows under the new name.
    let renamed = TEXT.replace("def f(q)", "def g(q)");
    let p = h
        .coord
        .preflight("s1", FILE, NewText::Content(&renamed), false)
        .unwrap();
    assert_eq!(names(&p), ["f", "g"]);
}

#[test]
fn a_new_file_touches_what_it_defines() {
    let h = Harness::new();
    let edits = vec![Edit {
        old_text: String::new(),
        new_text: "def fresh(x)\nend\n".into(),
        replace_all: false,
    }];
    let p = h
        .coord
        .preflight("s1", "src/new.py", NewText::Edits(&edits), false)
        .unwrap();
    assert!(p.applies);
    assert_eq!(p.symbols, ["src/new.py:fresh"]);
}

#[test]
fn missing_or_ambiguous_old_text_does_not_apply() {
    let h = harness();
    let p = run(&h, "s1", &edit("nowhere", "x"));
    assert!(!p.applies);
    assert!(p.reason.unwrap().contains("does not occur"));
    assert!(p.symbols.is_empty());
    let p = run(&h, "s1", &edit("end", "x"));
    assert!(!p.applies);
    assert!(p.reason.unwrap().contains("times"));
    let all = vec![Edit {
        old_text: "end".into(),
        new_text: "end ".into(),
        replace_all: true,
    }];
    let p = run(&h, "s1", &all);
    assert!(p.applies);
    assert_eq!(names(&p), ["A.m", "A.n", "A", "f"]);
}

#[test]
fn locks_of_other_live_sessions_conflict() {
    let h = harness();
    h.coord.acquire_lock("src/a.py:A.m", "other", None).unwrap();
    h.coord.acquire_lock("src/a.py:f", "s1", None).unwrap();
    let p = run(&h, "s1", &edit("one", "uno"));
    assert!(matches!(
        &p.conflicts[..],
        [Conflict::LockIntersection { symbol_path, held_by, .. }]
            if symbol_path == "src/a.py:A.m" && held_by == "other"
    ));
    // Own lock: nothing.
    assert!(run(&h, "s1", &edit("three", "drei")).conflicts.is_empty());
    // A lock on the bare name counts too.
    h.coord.acquire_lock("src/a.py:n", "other", None).unwrap();
    assert_eq!(run(&h, "s1", &edit("two", "zwei")).conflicts.len(), 1);
    // A dead holder (its process exited, not yet reaped) does not.
    h.processes.start(77, 5);
    h.coord
        .register_with_pulse("x", "mortal", Some(77), None)
        .unwrap();
    h.coord.release_lock("src/a.py:A.m", "other").unwrap();
    h.coord
        .acquire_lock("src/a.py:A.m", "mortal", None)
        .unwrap();
    assert_eq!(run(&h, "s1", &edit("one", "uno")).conflicts.len(), 1);
    h.processes.kill(77);
    assert!(run(&h, "s1", &edit("one", "uno")).conflicts.is_empty());
}

#[test]
fn intents_of_other_sessions_overlap_where_their_ranges_meet_the_edit() {
    let h = harness();
    let n_start = TEXT.find("  def n").unwrap();
    let n_end = TEXT.find("def f").unwrap();
    h.index.add_symbol(FILE, "A.n", n_start, n_end, None);
    h.coord
        .declare_intent("other", "rework n", &[FILE.into()], Some(&["n".into()]))
        .unwrap();
    assert!(run(&h, "s1", &edit("one", "uno")).conflicts.is_empty());
    let p = run(&h, "s1", &edit("two", "zwei"));
    assert!(
        matches!(&p.conflicts[..], [Conflict::IntentOverlap { session_id, .. }] if session_id == "other")
    );
    // A file-level intent meets every edit.
    h.coord
        .declare_intent("third", "whole file", &[FILE.into()], None)
        .unwrap();
    assert_eq!(run(&h, "s1", &edit("one", "uno")).conflicts.len(), 1);
}

#[test]
fn contracts_broken_by_the_new_text_are_violations() {
    let h = harness();
    h.index.add_symbol(FILE, "f", 0, 1, Some("(q)"));
    let proposed = h.coord.propose_contract("s1", "src/a.py:f").unwrap();
    h.coord.respond_contract(&proposed.id, "s2", true).unwrap();
    assert!(run(&h, "s3", &edit("three", "drei")).violations.is_empty());
    let p = run(&h, "s3", &edit("def f(q)", "def f(q, r)"));
    assert_eq!(p.violations.len(), 1);
    assert_eq!(p.violations[0].expected, "(q)");
    assert_eq!(p.violations[0].actual, "(q, r)");
    let p = run(&h, "s3", &edit("def f(q)\n  three\nend\n", ""));
    assert_eq!(p.violations[0].actual, SYMBOL_NOT_IN_STAGED_CONTENT);
    // An edit elsewhere leaves f's signature as it is.
    assert!(run(&h, "s3", &edit("one", "uno")).violations.is_empty());
}

#[test]
fn record_declares_one_observed_intent_and_the_session_end_abandons_it() {
    let h = harness();
    let edits = edit("one", "uno");
    let first = h
        .coord
        .preflight("s1", FILE, NewText::Edits(&edits), true)
        .unwrap();
    let id = first.recorded_intent.clone().expect("an observed intent");
    let intent = h.coord.store().read(|r| r.intent(&id)).unwrap().unwrap();
    assert_eq!(intent.description, OBSERVED_EDIT);
    assert_eq!(intent.status, IntentStatus::Active);
    let again = h
        .coord
        .preflight("s1", FILE, NewText::Edits(&edits), true)
        .unwrap();
    assert_eq!(again.recorded_intent, None, "covered by the first one");
    // Nothing is written without record, nor when there is a conflict.
    h.coord.acquire_lock("src/a.py:f", "other", None).unwrap();
    let blocked = h
        .coord
        .preflight("s2", FILE, NewText::Edits(&edit("three", "x")), true)
        .unwrap();
    assert!(blocked.recorded_intent.is_none());
    h.coord.end_session("s1").unwrap();
    let intent = h.coord.store().read(|r| r.intent(&id)).unwrap().unwrap();
    assert_eq!(intent.status, IntentStatus::Abandoned);
}

#[test]
fn the_file_is_validated_and_one_of_edits_or_content_is_needed() {
    let h = harness();
    let err = h
        .coord
        .preflight("s1", "../x.py", NewText::Content(""), false)
        .unwrap_err();
    assert!(matches!(
        err,
        CoordError::InvalidInput { field: "file", .. }
    ));
    // Content equal to the file touches nothing.
    let p = h
        .coord
        .preflight("s1", FILE, NewText::Content(TEXT), false)
        .unwrap();
    assert!(p.applies && p.symbols.is_empty());
}
