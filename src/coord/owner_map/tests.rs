#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

fn mark(owner: &str, at: i64) -> Mark {
    Mark::new(&[owner.to_owned()], at)
}

fn own(map: &FileOwners, owner: &str) -> Vec<u8> {
    compose(map.base(), map.current(), &map.hunks(), |h| {
        h.mark.owners.iter().any(|o| o == owner)
    })
}

fn blocks(n: usize) -> String {
    (1..=n)
        .map(|k| format!("def f{k}():\n    pass\n\n"))
        .collect()
}

#[test]
fn an_unchanged_file_has_no_hunks() {
    let map = FileOwners::unchanged(b"a\nb\n".to_vec());
    assert!(map.hunks().is_empty());
    assert!(map.is_clean());
}

#[test]
fn each_session_commits_exactly_its_own_change_in_repetitive_code() {
    let base = blocks(7);
    let mut map = FileOwners::unchanged(base.clone().into_bytes());
    // B inserts a function before f4.
    let with_b = base.replace("def f4():", "def g():\n    pass\n\ndef f4():");
    map.apply(with_b.as_bytes(), &mark("B", 1));
    // A changes f2's body.
    let with_both = with_b.replace("def f2():\n    pass", "def f2():\n    return 2");
    map.apply(with_both.as_bytes(), &mark("A", 2));
    let only_a = base.replace("def f2():\n    pass", "def f2():\n    return 2");
    assert_eq!(String::from_utf8(own(&map, "A")).unwrap(), only_a);
    assert_eq!(String::from_utf8(own(&map, "B")).unwrap(), with_b);
    let everything = compose(map.base(), map.current(), &map.hunks(), |_| true);
    assert_eq!(everything, with_both.as_bytes());
}

#[test]
fn a_line_two_sessions_changed_belongs_to_both() {
    let mut map = FileOwners::unchanged(b"a\nb\nc\n".to_vec());
    map.apply(b"a\nB\nc\n", &mark("A", 1));
    map.apply(b"a\nBB\nc\n", &mark("B", 2));
    let lines = map.lines();
    assert_eq!(lines.len(), 1);
    assert_eq!((lines[0].start_line, lines[0].end_line), (2, 2));
    assert_eq!(lines[0].mark.owners, vec!["A".to_owned(), "B".to_owned()]);
    assert_eq!(lines[0].mark.at_ms, 2);
}

#[test]
fn undoing_a_change_leaves_no_mark() {
    let mut map = FileOwners::unchanged(b"a\nb\nc\nd\n".to_vec());
    map.apply(b"a\nX\nc\nd\n", &mark("A", 1));
    map.apply(b"a\nX\nc\nY\n", &mark("B", 2));
    map.apply(b"a\nb\nc\nY\n", &mark("A", 3));
    let hunks = map.hunks();
    assert_eq!(hunks.len(), 1, "{hunks:?}");
    assert_eq!(hunks[0].mark.owners, vec!["B".to_owned()]);
    map.apply(b"a\nb\nc\nd\n", &mark("B", 4));
    assert!(map.hunks().is_empty());
    assert!(map.is_clean());
}

#[test]
fn back_at_head_the_map_is_a_fresh_one() {
    for base in [&b"a\nb\nc\n"[..], b"a\nb", b"", b"\xff\x00bin"] {
        let mut map = FileOwners::unchanged(base.to_vec());
        map.apply(b"a\nX\nc\nd\n", &mark("A", 1));
        map.apply(base, &mark("B", 2));
        assert!(map.is_clean() && map.hunks().is_empty() && map.lines().is_empty());
        assert_eq!(
            map.is_binary(),
            FileOwners::unchanged(base.to_vec()).is_binary()
        );
        // The next change reads the same from it as from a map made anew.
        let mut fresh = FileOwners::unchanged(base.to_vec());
        for map in [&mut map, &mut fresh] {
            map.apply(b"a\nY\nc\n", &mark("C", 3));
        }
        assert_eq!(map.hunks(), fresh.hunks(), "{base:?}");
        assert_eq!(map.lines(), fresh.lines(), "{base:?}");
        assert_eq!(map.current(), fresh.current());
    }
}

#[test]
fn deletions_are_points_with_owners() {
    let mut map = FileOwners::unchanged(b"a\nb\nc\n".to_vec());
    map.apply(b"a\nc\n", &mark("A", 1));
    let hunks = map.hunks();
    assert_eq!(
        (
            hunks[0].old_start,
            hunks[0].old_lines,
            hunks[0].new_start,
            hunks[0].new_lines
        ),
        (2, 1, 1, 0)
    );
    let lines = map.lines();
    assert_eq!(
        (lines[0].start_line, lines[0].end_line),
        (2, 1),
        "a point after line 1"
    );
    assert_eq!(own(&map, "A"), b"a\nc\n");
    assert_eq!(own(&map, "B"), b"a\nb\nc\n");
}

#[test]
fn a_gap_changed_by_two_sessions_splits_into_their_hunks() {
    let mut map = FileOwners::unchanged(b"a\nb\nc\nd\n".to_vec());
    // A deletes b; B then inserts a line where b was.
    map.apply(b"a\nc\nd\n", &mark("A", 1));
    map.apply(b"a\nnew\nc\nd\n", &mark("B", 2));
    assert_eq!(own(&map, "A"), b"a\nc\nd\n");
    assert_eq!(own(&map, "B"), b"a\nb\nnew\nc\nd\n");
    let everything = compose(map.base(), map.current(), &map.hunks(), |_| true);
    assert_eq!(everything, map.current());
}

#[test]
fn bytes_are_kept_and_a_binary_file_is_file_level() {
    let base = b"\x89PNG\r\n\x1a\n\x00\x01".to_vec();
    let mut map = FileOwners::unchanged(base.clone());
    assert!(map.is_binary());
    map.apply(b"\x89PNG\r\n\x1a\n\x00\x02", &mark("A", 1));
    map.apply(b"\x89PNG\r\n\x1a\n\x00\x03", &mark("B", 2));
    assert_eq!(
        map.file_mark().unwrap().owners,
        vec!["A".to_owned(), "B".to_owned()]
    );
    assert!(map.lines().is_empty());
    assert_eq!(map.hunks().len(), 1);
}

#[test]
fn a_text_file_that_gains_a_latin1_byte_becomes_binary_with_its_owners() {
    let mut map = FileOwners::unchanged(b"caf\n".to_vec());
    map.apply(b"caf\nx\n", &mark("A", 1));
    map.apply(b"caf\xe9\nx\n", &mark("B", 2));
    assert!(map.is_binary());
    assert_eq!(
        map.file_mark().unwrap().owners,
        vec!["A".to_owned(), "B".to_owned()]
    );
}

#[test]
fn crlf_and_a_missing_final_newline_survive_composition() {
    let base = b"one\r\ntwo\r\nthree".to_vec();
    let mut map = FileOwners::unchanged(base.clone());
    map.apply(b"one\r\nTWO\r\nthree", &mark("A", 1));
    map.apply(b"one\r\nTWO\r\nthree\r\nfour", &mark("B", 2));
    assert_eq!(own(&map, "A"), b"one\r\nTWO\r\nthree");
    let everything = compose(map.base(), map.current(), &map.hunks(), |_| true);
    assert_eq!(everything, map.current());
}

#[test]
fn rebuilt_marks_each_change_by_the_lines_it_wrote() {
    let map = FileOwners::rebuilt(b"a\nb\nc\n".to_vec(), b"A\nb\nC\n", |new, _| {
        if new.start == 0 {
            mark("first", 1)
        } else {
            Mark::default()
        }
    });
    let hunks = map.hunks();
    assert_eq!(hunks.len(), 2);
    assert_eq!(hunks[0].mark.owners, vec!["first".to_owned()]);
    assert!(hunks[1].mark.owners.is_empty(), "unowned");
}

/// A small random text change: one of insert, delete, replace at a random line.
fn random_change(text: &[u8], seed: &mut u64, tag: usize) -> Vec<u8> {
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let mut lines: Vec<Vec<u8>> = split_lines(text).into_iter().map(<[u8]>::to_vec).collect();
    let at = (next() as usize) % (lines.len() + 1);
    let pool = [&b"    pass\n"[..], b"\n", b"x = 1\n"];
    let fresh = if next() % 2 == 0 {
        pool[(next() as usize) % pool.len()].to_vec()
    } else {
        format!("line{tag}\n").into_bytes()
    };
    match next() % 3 {
        0 => lines.insert(at, fresh),
        1 if at < lines.len() => {
            lines.remove(at);
        }
        _ if at < lines.len() => lines[at] = fresh,
        _ => lines.push(fresh),
    }
    lines.concat()
}

#[test]
fn composing_every_hunk_gives_the_current_text_and_none_gives_head() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for trial in 0..200 {
        let base = blocks(4).into_bytes();
        let mut map = FileOwners::unchanged(base.clone());
        let mut text = base.clone();
        for step in 0..6 {
            text = random_change(&text, &mut seed, trial * 10 + step);
            let who = ["A", "B", "C"][step % 3];
            map.apply(&text, &mark(who, step as i64));
            let all = compose(map.base(), map.current(), &map.hunks(), |_| true);
            assert_eq!(all, text, "trial {trial} step {step}");
            let none = compose(map.base(), map.current(), &map.hunks(), |_| false);
            assert_eq!(none, base, "trial {trial} step {step}");
        }
    }
}

/// A map given a change's line diff (a recorded edit's, from its preflight) is the map that
/// makes the diff itself: the same entries, hunks and text after every step of random
/// changes by three sessions, some of which write HEAD's lines back.
#[test]
fn a_change_given_its_line_diff_maps_as_one_diffed_here() {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for trial in 0..200 {
        let base = blocks(4).into_bytes();
        let mut diffed = FileOwners::unchanged(base.clone());
        let mut given = FileOwners::unchanged(base.clone());
        let mut text = base.clone();
        for step in 0..8 {
            let next = if step % 4 == 3 {
                base.clone()
            } else {
                random_change(&text, &mut seed, trial * 10 + step)
            };
            let (old_lines, new_lines) = (split_lines(&text), split_lines(&next));
            let ops = text_line_ops::<[u8]>((&text, &old_lines), (&next, &new_lines));
            let who = mark(["A", "B", "C"][step % 3], step as i64);
            diffed.apply(&next, &who);
            given.apply_diff(next.clone(), &ops, &who);
            assert_eq!(given.work, diffed.work, "trial {trial} step {step}");
            assert_eq!(
                given.current(),
                diffed.current(),
                "trial {trial} step {step}"
            );
            assert_eq!(given.hunks(), diffed.hunks(), "trial {trial} step {step}");
            text = next;
        }
    }
}
