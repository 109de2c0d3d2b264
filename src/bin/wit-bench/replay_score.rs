//! Scores of the replay: each predictor against git's truth, per language and overall, the
//! `related` rate, and the list of the `conflicts` predictor's false alarms and misses.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::measure::{fmt_duration, p50_p99};

/// The hint of a pair whose A patch the daemon did not show within the deadline.
pub(crate) const NOT_SEEN: &str = "A's work never shown";

/// The predictors of the replay, in the order of [`Outcome::predicted`].
pub(crate) const PREDICTORS: [&str; 4] = ["conflicts", "related", "same file", "lines ±1"];

/// The predictors of the replay in worktree mode (`--worktrees`), in the order of
/// [`Outcome::predicted`]: the first four are those of [`PREDICTORS`], wit's collisions
/// being the ones it finds between worktrees; then `worktree.forecast`'s collisions.
pub(crate) const WORKTREE_PREDICTORS: [&str; 5] = [
    "conflicts (worktree)",
    "related",
    "same file",
    "lines ±1",
    "forecast",
];

/// One replayed pair.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub id: String,
    pub language: String,
    /// Git conflicts on the pair (merge-tree of the replayed files).
    pub truth: bool,
    /// The files git reports conflicted.
    pub conflicted: Vec<String>,
    /// Whether the miner's merge of the original commits agreed.
    pub mined_agrees: bool,
    /// Each predictor's answer, in the order of the run's predictor names
    /// ([`PREDICTORS`] or [`WORKTREE_PREDICTORS`]).
    pub predicted: Vec<bool>,
    /// How many `related` items B's previews carried.
    pub related_items: usize,
    /// Previews or recordings that did not apply (a harness fault when non-zero).
    pub not_applied: usize,
    /// A short cause hint: the shared files, A's observed intent, what B touched.
    pub hint: String,
    /// Worktree mode: how long after A's patch was written the daemon showed it as the
    /// worktree's observed work (`None`: not within the deadline, or not worktree mode).
    pub seen_after: Option<Duration>,
}

/// A confusion matrix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub tp: usize,
    pub fp: usize,
    pub false_negatives: usize,
    pub tn: usize,
}

impl Counts {
    fn add(&mut self, truth: bool, predicted: bool) {
        match (truth, predicted) {
            (true, true) => self.tp += 1,
            (false, true) => self.fp += 1,
            (true, false) => self.false_negatives += 1,
            (false, false) => self.tn += 1,
        }
    }
    /// TP / (TP + FP); `None` when nothing was predicted.
    pub(crate) fn precision(&self) -> Option<f64> {
        ratio(self.tp, self.tp + self.fp)
    }
    /// TP / (TP + FN); `None` when nothing conflicts.
    pub(crate) fn recall(&self) -> Option<f64> {
        ratio(self.tp, self.tp + self.false_negatives)
    }
    /// 2TP / (2TP + FP + FN); `None` when there is neither a conflict nor an alarm.
    pub(crate) fn f1(&self) -> Option<f64> {
        ratio(2 * self.tp, 2 * self.tp + self.fp + self.false_negatives)
    }
}

fn ratio(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

fn fmt(value: Option<f64>) -> String {
    value.map_or("n/a".to_owned(), |v| format!("{v:.3}"))
}

/// The confusion matrix of predictor `index` over `outcomes`.
pub(crate) fn counts(outcomes: &[&Outcome], index: usize) -> Counts {
    let mut c = Counts::default();
    for o in outcomes {
        c.add(o.truth, o.predicted.get(index).copied().unwrap_or(false));
    }
    c
}

/// The outcomes by language, then all of them under "all".
fn groups(outcomes: &[Outcome]) -> Vec<(String, Vec<&Outcome>)> {
    let mut by: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
    for o in outcomes {
        by.entry(&o.language).or_default().push(o);
    }
    let mut out: Vec<(String, Vec<&Outcome>)> =
        by.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    out.push(("all".to_owned(), outcomes.iter().collect()));
    out
}

/// Prints the tables of `predictors` (the names of [`Outcome::predicted`]) and the list of
/// false alarms and misses of the first one and of `forecast`.
pub(crate) fn print_report(predictors: &[&str], outcomes: &[Outcome]) {
    println!("| language | pairs | conflicting | predictor | TP | FP | FN | TN | precision | recall | F1 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (language, group) in groups(outcomes) {
        let conflicting = group.iter().filter(|o| o.truth).count();
        for (index, name) in predictors.iter().enumerate() {
            let c = counts(&group, index);
            println!(
                "| {language} | {} | {conflicting} | {name} | {} | {} | {} | {} | {} | {} | {} |",
                group.len(),
                c.tp,
                c.fp,
                c.false_negatives,
                c.tn,
                fmt(c.precision()),
                fmt(c.recall()),
                fmt(c.f1())
            );
        }
    }
    println!();
    println!("| language | pairs with `related` | rate | related items per pair |");
    println!("|---|---|---|---|");
    for (language, group) in groups(outcomes) {
        let with = group.iter().filter(|o| o.related_items > 0).count();
        let items: usize = group.iter().map(|o| o.related_items).sum();
        println!(
            "| {language} | {with} | {} | {} |",
            fmt(ratio(with, group.len())),
            fmt(ratio(items, group.len()))
        );
    }
    let not_applied: usize = outcomes.iter().map(|o| o.not_applied).sum();
    let disagree = outcomes.iter().filter(|o| !o.mined_agrees).count();
    println!();
    println!(
        "edits that did not apply: {not_applied}; pairs where the replayed merge and the original merge disagree: {disagree}"
    );
    print_visibility(outcomes);
    for (index, name) in predictors.iter().enumerate() {
        if index == 0 || *name == "forecast" {
            print_misses(predictors, outcomes, index);
        }
    }
}

/// Worktree mode: how long the daemon took to show A's patch as observed work (p50, p99,
/// max over the pairs where A changed a file wit observes), and how often it did not within
/// the deadline.
fn print_visibility(outcomes: &[Outcome]) {
    let mut seen: Vec<Duration> = outcomes.iter().filter_map(|o| o.seen_after).collect();
    let unseen = outcomes
        .iter()
        .filter(|o| o.hint.contains(NOT_SEEN))
        .count();
    if seen.is_empty() && unseen == 0 {
        return;
    }
    let max = seen.iter().max().copied().unwrap_or_default();
    let count = seen.len();
    let (p50, p99) = p50_p99(&mut seen);
    println!(
        "A's patch written → shown as worktree work ({count} pairs): p50 {}  p99 {}  max {}; not shown within the deadline: {unseen}",
        fmt_duration(p50),
        fmt_duration(p99),
        fmt_duration(max)
    );
}

/// Prints the false alarms and misses of predictor `index`, with whether the line check
/// fired and the pair's hint.
fn print_misses(predictors: &[&str], outcomes: &[Outcome], index: usize) {
    let lines = predictors.iter().position(|n| *n == "lines ±1");
    println!();
    println!("`{}` false alarms and misses:", predictors[index]);
    for o in outcomes {
        let label = match (o.truth, o.predicted.get(index).copied().unwrap_or(false)) {
            (false, true) => "false alarm",
            (true, false) => "miss",
            _ => continue,
        };
        let line_check = lines.and_then(|l| o.predicted.get(l)).copied();
        println!(
            "- {label} {} ({}; lines ±1 {}): {}",
            o.id,
            o.language,
            if line_check == Some(true) {
                "yes"
            } else {
                "no"
            },
            o.hint
        );
    }
}

/// The outcomes and the scores of `predictors` as JSON (`--json`).
pub(crate) fn to_json(predictors: &[&str], outcomes: &[Outcome]) -> Value {
    let scores: Vec<Value> = groups(outcomes)
        .into_iter()
        .map(|(language, group)| {
            let scores: serde_json::Map<String, Value> = predictors
                .iter()
                .enumerate()
                .map(|(index, name)| {
                    let c = counts(&group, index);
                    (
                        (*name).to_owned(),
                        json!({"tp": c.tp, "fp": c.fp, "fn": c.false_negatives, "tn": c.tn,
                            "precision": c.precision(), "recall": c.recall(), "f1": c.f1()}),
                    )
                })
                .collect();
            json!({"language": language, "pairs": group.len(),
                "conflicting": group.iter().filter(|o| o.truth).count(),
                "withRelated": group.iter().filter(|o| o.related_items > 0).count(),
                "predictors": scores})
        })
        .collect();
    let pairs: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            json!({"id": o.id, "language": o.language, "truth": o.truth,
                "conflicted": o.conflicted, "minedAgrees": o.mined_agrees,
                "predicted": predictors.iter().zip(&o.predicted).map(|(n, p)| ((*n).to_owned(), Value::Bool(*p))).collect::<serde_json::Map<_, _>>(),
                "relatedItems": o.related_items, "notApplied": o.not_applied, "hint": o.hint,
                "seenAfterMs": o.seen_after.map(|d| d.as_secs_f64() * 1e3)})
        })
        .collect();
    json!({"scores": scores, "pairs": pairs})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_follow_their_definitions() {
        let mut c = Counts::default();
        for (truth, predicted) in [(true, true), (true, true), (true, false), (false, true)] {
            c.add(truth, predicted);
        }
        c.add(false, false);
        assert_eq!(c.precision(), Some(2.0 / 3.0));
        assert_eq!(c.recall(), Some(2.0 / 3.0));
        assert_eq!(c.f1(), Some(4.0 / 6.0));
        assert_eq!(Counts::default().precision(), None);
    }
}
