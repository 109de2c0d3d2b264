//! What the property tests of hostile input share (issue 20, "keep it from coming back"): a
//! runner with a fixed seed, so that every CI run checks the same cases and a failure
//! reproduces, bounded to `WIT_FUZZ_CASES` cases (default 256; raise it to fuzz longer),
//! and a generator of arbitrary JSON.
//!
//! The targets live next to what they check: the params decoders (`protocol::tests`),
//! `edit.preflight`'s edits (`coord::preflight::spans`), the harness payload parsers
//! (`hooks::fuzz_tests`); the envelope and every method against a real daemon, with its
//! memory bounded, in `tests/wit/hostile.rs`.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

/// The fixed seed.
const SEED: [u8; 32] = *b"wit issue 20: keep it from again";

/// How many cases each target runs.
pub fn cases() -> u32 {
    std::env::var("WIT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// A runner with the fixed seed and no failure files.
pub fn runner() -> TestRunner {
    TestRunner::new_with_rng(
        Config {
            cases: cases(),
            failure_persistence: None,
            max_shrink_iters: 256,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &SEED),
    )
}

/// Arbitrary JSON whose objects use `keys` now and then, so that random values often reach
/// real fields.
pub fn json(keys: Vec<&'static str>) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,24}".prop_map(Value::from),
        "[a-z./]{0,12}(:[A-Za-z.]{0,8})?".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, move |inner| {
        let keys = keys.clone();
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(keys), inner.clone()), 0..8).prop_map(
                |entries| {
                    Value::Object(
                        entries
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v))
                            .collect(),
                    )
                }
            ),
            prop::collection::vec((".{0,6}", inner), 0..3)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

#[cfg(test)]
mod targets {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::coord::preflight::spans::{apply_edits, Edit, EditError, MAX_CHANGES};
    use crate::protocol::params::ParamDecoder;
    use crate::protocol::METHODS;

    /// Every method's params decoder takes any JSON: an answer (the params or every problem),
    /// never a panic.
    #[test]
    fn params_decoders_take_any_json() {
        let keys: Vec<&'static str> = METHODS
            .iter()
            .flat_map(|m| m.params.iter().copied())
            .collect();
        let strategy = (prop::sample::select(METHODS.to_vec()), json(keys));
        runner()
            .run(&strategy, |(method, params)| {
                let Ok(mut decoder) = ParamDecoder::new(Some(&params)) else {
                    prop_assert!(!params.is_object() && !params.is_null(), "{params}");
                    return Ok(());
                };
                for rule in method.rules {
                    let _ = decoder.optional::<Value>(rule);
                }
                let ok = decoder.is_ok();
                prop_assert_eq!(ok, decoder.finish(()).is_ok(), "{}", method.name);
                Ok(())
            })
            .unwrap();
    }

    /// Edits from a small alphabet (so that `oldText` often occurs, many times), with
    /// `replaceAll` multiplying the text: the result is refused past the limit, otherwise
    /// its text is what an editor gives, and its changes are few, ordered, within both texts,
    /// and the text outside them is unchanged.
    #[test]
    fn preflight_edits_are_bounded_and_their_changes_hold() {
        const LIMIT: usize = 1 << 16;
        let edit =
            ("[ab\n]{0,3}", "[ab\n]{0,40}", any::<bool>()).prop_map(|(old, new, all)| Edit {
                old_text: old,
                new_text: new,
                replace_all: all,
            });
        let strategy = ("[ab\n]{0,200}", prop::collection::vec(edit, 1..6));
        runner()
            .run(&strategy, |(current, edits)| {
                match apply_edits(&current, &edits, LIMIT) {
                    Err(EditError::TooLarge { bytes, limit, .. }) => {
                        prop_assert!(bytes > limit as u128);
                    }
                    Err(EditError::DoesNotApply(_)) => {}
                    Ok(applied) => {
                        prop_assert!(applied.text.len() <= LIMIT);
                        prop_assert!(applied.changes.len() <= 2 * MAX_CHANGES);
                        let mut old_at = 0;
                        let mut new_at = 0;
                        for change in &applied.changes {
                            prop_assert!(change.old.0 >= old_at && change.old.0 <= change.old.1);
                            prop_assert!(change.new.0 >= new_at && change.new.0 <= change.new.1);
                            // Unchanged text between changes maps one to one.
                            prop_assert_eq!(change.old.0 - old_at, change.new.0 - new_at);
                            prop_assert_eq!(
                                &current[old_at..change.old.0],
                                &applied.text[new_at..change.new.0]
                            );
                            old_at = change.old.1;
                            new_at = change.new.1;
                        }
                        prop_assert!(old_at <= current.len() && new_at <= applied.text.len());
                        prop_assert_eq!(&current[old_at..], &applied.text[new_at..]);
                        // What an editor gives, edit by edit.
                        let mut expected = current.clone();
                        for edit in &edits {
                            expected = if edit.old_text.is_empty() {
                                edit.new_text.clone()
                            } else if edit.replace_all {
                                expected.replace(&edit.old_text, &edit.new_text)
                            } else {
                                expected.replacen(&edit.old_text, &edit.new_text, 1)
                            };
                        }
                        prop_assert_eq!(&applied.text, &expected);
                    }
                }
                Ok(())
            })
            .unwrap();
    }
}
