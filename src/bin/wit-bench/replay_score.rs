//! Scores of the replay: each predictor against git's truth, per language and overall, the
//! `related` rate, and the list of the `conflicts` predictor's false alarms and misses.

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// The predictors, in the order of [`Outcome::predicted`].
pub(crate) const PREDICTORS: [&str; 4] = ["conflicts", "related", "same file", "lines ±1"];

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
    /// Each predictor's answer, in the order of [`PREDICTORS`].
    pub predicted: [bool; 4],
    /// How many `related` items B's previews carried.
    pub related_items: usize,
    /// Previews or recordings that did not apply (a harness fault when non-zero).
    pub not_applied: usize,
    /// A short cause hint: the shared files, A's observed intent, what B touched.
    pub hint: String,
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
        c.add(o.truth, o.predicted[index]);
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

/// Prints the tables and the list of false alarms and misses.
pub(crate) fn print_report(outcomes: &[Outcome]) {
    println!("| language | pairs | conflicting | predictor | TP | FP | FN | TN | precision | recall | F1 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (language, group) in groups(outcomes) {
        let conflicting = group.iter().filter(|o| o.truth).count();
        for (index, name) in PREDICTORS.iter().enumerate() {
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
    println!();
    println!("`conflicts` false alarms and misses:");
    for o in outcomes {
        let label = match (o.truth, o.predicted[0]) {
            (false, true) => "false alarm",
            (true, false) => "miss",
            _ => continue,
        };
        println!(
            "- {label} {} ({}; lines ±1 {}): {}",
            o.id,
            o.language,
            if o.predicted[3] { "yes" } else { "no" },
            o.hint
        );
    }
}

/// The outcomes and the scores as JSON (`--json`).
pub(crate) fn to_json(outcomes: &[Outcome]) -> Value {
    let scores: Vec<Value> = groups(outcomes)
        .into_iter()
        .map(|(language, group)| {
            let predictors: serde_json::Map<String, Value> = PREDICTORS
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
                "predictors": predictors})
        })
        .collect();
    let pairs: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            json!({"id": o.id, "language": o.language, "truth": o.truth,
                "conflicted": o.conflicted, "minedAgrees": o.mined_agrees,
                "predicted": PREDICTORS.iter().zip(o.predicted).map(|(n, p)| ((*n).to_owned(), Value::Bool(p))).collect::<serde_json::Map<_, _>>(),
                "relatedItems": o.related_items, "notApplied": o.not_applied, "hint": o.hint})
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
