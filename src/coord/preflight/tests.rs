#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use super::spans::Edit;
use super::*;
use crate::coord::testing::Harness;
use crate::coord::CodeIndex;
use crate::coord::IntentStatus;
use spans::Change;

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
        .declare_intent(
            &h.coord.vantage(Some("other")),
            "rework n",
            &[FILE.into()],
            Some(&["n".into()]),
        )
        .unwrap();
    assert!(run(&h, "s1", &edit("one", "uno")).conflicts.is_empty());
    let p = run(&h, "s1", &edit("two", "zwei"));
    assert!(
        matches!(&p.conflicts[..], [Conflict::IntentOverlap { session_id, .. }] if session_id == "other")
    );
    // A file-level intent meets every edit.
    h.coord
        .declare_intent(
            &h.coord.vantage(Some("third")),
            "whole file",
            &[FILE.into()],
            None,
        )
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
    assert_eq!(intent.kind, crate::store::IntentKind::ObservedEdit);
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

fn record(h: &Harness, session: &str, edits: &[Edit]) -> Preflight {
    let p = h
        .coord
        .preflight(session, FILE, NewText::Edits(edits), true)
        .unwrap();
    assert!(p.conflicts.is_empty(), "{:?}", p.conflicts);
    p
}

fn regions(h: &Harness, session: &str) -> Vec<(i64, i64)> {
    let intents = h.coord.query_intents(Some(session), None, None).unwrap();
    assert_eq!(intents.len(), 1, "{intents:?}");
    intents[0]
        .regions
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|r| (r.start_line, r.end_line))
        .collect()
}

/// Writes what a recorded edit makes of the file, as its editor would.
fn write(h: &Harness, edits: &[Edit]) {
    let text = h.index.file_text(FILE).unwrap().text;
    let applied =
        spans::apply_edits(&text, edits, crate::protocol::params::MAX_BODY_BYTES).unwrap();
    h.index.set_text(FILE, &applied.text);
}

#[test]
fn observed_work_is_its_changed_lines_and_grows_with_the_session() {
    let h = harness();
    let first = edit("one", "uno");
    record(&h, "s1", &first);
    write(&h, &first);
    assert_eq!(regions(&h, "s1"), [(3, 3)]);
    let second = edit("three", "drei");
    let p = record(&h, "s1", &second);
    assert_eq!(p.recorded_intent, None, "the same intent grows");
    write(&h, &second);
    assert_eq!(regions(&h, "s1"), [(3, 3), (10, 10)]);
    let intent = &h.coord.query_intents(Some("s1"), None, None).unwrap()[0];
    assert_eq!((intent.start_byte, intent.end_byte), (None, None));
}

#[test]
fn regions_collide_where_a_change_meets_them_and_are_context_elsewhere_in_the_symbol() {
    let h = harness();
    let first = edit("one", "uno");
    record(&h, "s1", &first);
    write(&h, &first);
    let id = h.coord.query_intents(Some("s1"), None, None).unwrap()[0]
        .id
        .clone();
    // Line 4 (`end` of A.m) is next to line 3: a collision.
    let p = run(&h, "s2", &edit("  end\n  def n", "  end \n  def n"));
    assert!(
        matches!(&p.conflicts[..], [Conflict::IntentOverlap { intent_id, .. }] if *intent_id == id)
    );
    assert!(p.related.is_empty());
    // Line 6, inside A (A.n): no collision; A.n is no symbol of s1's lines; A is a container.
    let p = run(&h, "s2", &edit("two", "zwei"));
    assert!(p.conflicts.is_empty(), "{:?}", p.conflicts);
    assert!(p.related.is_empty(), "{:?}", p.related);
    // The declaration line of A.m (line 2): next to line 3, a collision.
    assert_eq!(
        run(&h, "s2", &edit("def m(a)", "def m(a, b)"))
            .conflicts
            .len(),
        1
    );
}

#[test]
fn same_symbol_and_coupled_context_each_once_in_order() {
    let text = "def f(q)\n  one\n  two\n  three\n  four\nend\ndef g(r)\n  five\nend\n";
    let h = Harness::new();
    h.index.set_text(FILE, text);
    h.index
        .add_symbol(FILE, "f", 0, text.find("def g").unwrap(), None);
    h.index
        .add_symbol(FILE, "g", text.find("def g").unwrap(), text.len(), None);
    h.index.add_call("src/a.py:g", "src/a.py:f");
    let first = edit("one", "uno");
    record(&h, "s1", &first);
    write(&h, &first);
    let id = h.coord.query_intents(Some("s1"), None, None).unwrap()[0]
        .id
        .clone();
    // Line 5 of f: two lines away from line 2.
    let p = run(&h, "s2", &edit("four", "vier"));
    assert!(p.conflicts.is_empty());
    assert_eq!(
        p.related,
        [Related::SameSymbol {
            symbol_path: "src/a.py:f".into(),
            session_id: "s1".into(),
            intent_id: id.clone(),
        }]
    );
    // g calls f, in which s1 works.
    let p = run(&h, "s2", &edit("five", "fuenf"));
    assert_eq!(
        p.related,
        [Related::Coupled {
            symbol_path: "src/a.py:g".into(),
            other_symbol: "src/a.py:f".into(),
            relation: super::super::conflicts::Relation::Calls,
            session_id: "s1".into(),
            intent_id: id,
        }]
    );
}

#[test]
fn another_session_of_the_same_agent_is_its_own_and_dead_ones_do_not_count() {
    let h = harness();
    h.processes.start(50, 7);
    h.coord
        .register_with_pulse("agent", "mcp", Some(50), None)
        .unwrap();
    h.coord
        .register_with_pulse("agent", "gate", Some(50), None)
        .unwrap();
    h.coord.acquire_lock("src/a.py:A.m", "mcp", None).unwrap();
    h.coord
        .declare_intent(&h.coord.vantage(Some("mcp")), "plan", &[FILE.into()], None)
        .unwrap();
    let p = run(&h, "gate", &edit("one", "uno"));
    assert!(p.conflicts.is_empty(), "one agent: {:?}", p.conflicts);
    // Another session sees both; once the process is gone, neither.
    assert_eq!(run(&h, "other", &edit("one", "uno")).conflicts.len(), 2);
    h.processes.kill(50);
    assert!(run(&h, "other", &edit("one", "uno")).conflicts.is_empty());
}

#[test]
fn a_whole_rewrite_is_file_level() {
    let h = harness();
    let p = h
        .coord
        .preflight("s1", FILE, NewText::Content("x = 1\n"), true)
        .unwrap();
    assert!(p.recorded_intent.is_some());
    let intent = &h.coord.query_intents(Some("s1"), None, None).unwrap()[0];
    assert_eq!(intent.regions, None, "file-level");
    assert_eq!(run(&h, "s2", &edit("three", "drei")).conflicts.len(), 1);
}

#[test]
fn touched_symbols_scale_with_the_symbols_not_their_square() {
    // 100,000 flat symbols and 1,000 nested ones: a quadratic pass would not finish here.
    let mut old: Vec<SymbolSpan> = (0..100_000)
        .map(|i| SymbolSpan {
            qualified: format!("f{i}"),
            start: i * 10,
            end: i * 10 + 9,
            signature: None,
        })
        .collect();
    old.push(SymbolSpan {
        qualified: "C".into(),
        start: 1_000_000,
        end: 1_010_000,
        signature: None,
    });
    old.extend((0..1_000).map(|i| SymbolSpan {
        qualified: format!("C.m{i}"),
        start: 1_000_000 + i * 10,
        end: 1_000_000 + i * 10 + 9,
        signature: None,
    }));
    let changes = [
        Change {
            old: (500_001, 500_002),
            new: (500_001, 500_002),
        },
        Change {
            old: (1_000_011, 1_000_012),
            new: (1_000_011, 1_000_012),
        },
    ];
    let touched = touched_symbols(&old, &[], &changes);
    let names: Vec<&str> = touched.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["C.m1", "f50000", "C"]);
    assert!(touched[0].innermost && touched[1].innermost && !touched[2].innermost);
    assert_eq!(outermost_symbols(&old).len(), 100_001);
}

/// The regions as stored, without bringing them up to date (what `intent.query` would do).
fn stored_regions(h: &Harness, session: &str) -> Vec<(i64, i64)> {
    let filter = crate::store::IntentFilter {
        session_id: Some(session),
        file: None,
        status: None,
    };
    let intents = h.coord.store().read(|r| r.intents(&filter)).unwrap();
    intents
        .iter()
        .flat_map(|i| i.regions.clone().unwrap_or_default())
        .map(|r| (r.start_line, r.end_line))
        .collect()
}

/// 10.3: a preview (`record: false`) writes nothing, also when the file changed on disk
/// since the regions were last true (they are carried for its answer only), and a recorded
/// edit that collides writes nothing either.
#[test]
fn a_preview_writes_nothing_even_when_regions_must_be_carried() {
    let h = harness();
    let first = edit("one", "uno");
    record(&h, "s1", &first);
    write(&h, &first);
    assert_eq!(stored_regions(&h, "s1"), [(3, 3)]);
    // Two lines appear above on disk (a change nobody recorded yet).
    let text = h.index.file_text(FILE).unwrap().text;
    h.index.set_text(FILE, &format!("# a\n# b\n{text}"));
    let events = h.coord.newest_event_seq().unwrap();
    // The preview sees s1's line where it is now (line 5)...
    let p = run(&h, "s2", &edit("uno", "eins"));
    assert_eq!(p.conflicts.len(), 1, "{:?}", p.conflicts);
    assert!(run(&h, "s2", &edit("two", "zwei")).conflicts.is_empty());
    // ...and so does a colliding recorded edit, and neither stores anything.
    let p = h
        .coord
        .preflight("s2", FILE, NewText::Edits(&edit("uno", "eins")), true)
        .unwrap();
    assert_eq!((p.conflicts.len(), p.recorded_intent), (1, None));
    assert_eq!(stored_regions(&h, "s1"), [(3, 3)], "nothing stored");
    assert_eq!(h.coord.newest_event_seq().unwrap(), events, "no event");
    // What reads the work map for keeps (a query) brings them up to date.
    assert_eq!(regions(&h, "s1"), [(5, 5)]);
}

/// 13.3: regions are carried only to a text read at rest. A file read in the middle of its
/// write (truncated, its new text not yet written) is no text to keep them in: carried to the
/// empty text and then to the written one, a one-line region would become the whole file.
#[test]
fn regions_are_not_carried_to_a_file_being_written() {
    let h = harness();
    let first = edit("two", "zwei");
    record(&h, "s1", &first);
    write(&h, &first);
    assert_eq!(regions(&h, "s1"), [(6, 6)]);
    let text = h.index.file_text(FILE).unwrap().text;
    // Another editor truncates the file, and a query and a declaration read it then: they
    // answer about the file as it is, and keep nothing.
    h.index.set_text_being_written(FILE, "");
    assert_ne!(regions(&h, "s1"), [(6, 6)], "carried for the answer");
    h.coord
        .declare_intent(&h.coord.vantage(Some("s2")), "rework", &[FILE.into()], None)
        .unwrap();
    assert_eq!(stored_regions(&h, "s1"), [(6, 6)], "nothing carried to it");
    // Its text is written: one line above.
    h.index.set_text(FILE, &format!("# a\n{text}"));
    assert_eq!(regions(&h, "s1"), [(7, 7)]);
}

/// Sessions read together (`Others::learn`, one store transaction) stand where each read
/// alone stands: the acting session and a session of its process its own, another live
/// agent's and an unknown session's against it, a dead one's aside.
#[test]
fn sessions_read_together_stand_where_each_read_alone_stands() {
    let h = harness();
    h.processes.start(50, 7);
    h.processes.start(60, 8);
    h.processes.start(70, 9);
    for (session, pid) in [("gate", 50), ("mcp", 50), ("bob", 60), ("gone", 70)] {
        h.coord
            .register_with_pulse("agent", session, Some(pid), None)
            .unwrap();
    }
    h.processes.kill(70);
    let sessions = ["gate", "mcp", "bob", "gone", "never-registered", "mcp"];
    let at = h.coord.vantage(Some("gate"));
    let alone = crate::coord::conflicts::Others::of(&h.coord, &at).unwrap();
    let one_by_one: Vec<_> = sessions
        .iter()
        .map(|s| alone.standing(s).unwrap())
        .collect();
    let together = crate::coord::conflicts::Others::of(&h.coord, &at).unwrap();
    together.learn(sessions).unwrap();
    let learnt: Vec<_> = sessions
        .iter()
        .map(|s| together.standing(s).unwrap())
        .collect();
    assert_eq!(learnt, one_by_one);
    use crate::coord::conflicts::Standing::{Aside, Mine, Theirs};
    assert_eq!(one_by_one, [Mine, Mine, Theirs, Aside, Theirs, Mine]);
}
