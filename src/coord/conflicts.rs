//! Every conflict rule, in one place (docs/protocol.md 3, 10, 13): what is a collision, what is
//! context, whose work counts (the liveness filter and the same-agent rule) and in which
//! order items are reported. `intent.declare`, `edit.preflight` and `lock.acquire` (its
//! ownership test and its caller warnings) ask here; the edit gate only weighs what the
//! daemon reports.
//!
//! - **Whose work**: another session's, unless both sessions are registered with the same
//!   live process (one agent, two identities: the harness and its `wit mcp` server), and only
//!   while that session is live (docs/protocol.md 7.3, whether or not it has been reaped yet).
//!   [`Others`] answers it. A worktree's observed work (`worktree:<root>`, 14.4) stands
//!   against every session except those acting from that worktree. Ownership of a lock is narrower: a lock belongs to its session
//!   until it expires or is released ([`held_by_another`]); liveness and the same-agent rule
//!   only decide what is *reported*.
//! - **Collisions** ([`collides`]): a declared intent's byte ranges (3), an observed intent's
//!   line regions (13.4), file-level work; against a declaration's ranges or an edit's
//!   changes.
//! - **Context** ([`Related`]): SAME_SYMBOL and COUPLED (13.5), never a collision.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;

use super::preflight::spans::{meets, Change};
use super::regions::{meets_region, replaced_lines, shares_lines, Lines, Written};
use super::worktree_work::worktree_of_session;
use super::{Coord, Lock, Result, Vantage};
use crate::store::{RangeHit, SessionRow};

/// One collision: work of another session that this work meets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// Another session's declared or active intent covers what this work covers.
    IntentOverlap {
        /// That intent's id.
        intent_id: String,
        /// Its session.
        session_id: String,
        /// Its description.
        description: String,
    },
    /// A touched or declared `file:symbol` is locked by another session.
    LockIntersection {
        /// The locked symbol path.
        symbol_path: String,
        /// The holder.
        held_by: String,
        /// The lock's expiry (unix ms).
        expires_at_ms: i64,
    },
    /// A callee of a declared symbol is locked by another session.
    DepChain {
        /// The declared symbol (`file:name`).
        intent_symbol: String,
        /// The locked callee's symbol path.
        locked_callee: String,
        /// The holder.
        held_by: String,
    },
}

/// How a touched symbol and another session's symbol are coupled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Relation {
    /// The touched symbol calls the other.
    Calls,
    /// The touched symbol is called by the other.
    CalledBy,
}

impl Relation {
    /// The protocol's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Calls => "calls",
            Relation::CalledBy => "called-by",
        }
    }
}

/// Context about another live session's work near an edit (docs/protocol.md 13.5).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Related {
    /// The edit touches a symbol in which the other session works, meeting none of its lines.
    SameSymbol {
        /// The touched symbol (`file:Qualified`).
        symbol_path: String,
        /// The other session.
        session_id: String,
        /// Its intent.
        intent_id: String,
    },
    /// A touched symbol calls, or is called by, a symbol the other session works in.
    Coupled {
        /// The touched symbol (`file:Qualified`).
        symbol_path: String,
        /// The other session's symbol (`file:Qualified`).
        other_symbol: String,
        /// Which way the call goes.
        relation: Relation,
        /// The other session.
        session_id: String,
        /// Its intent.
        intent_id: String,
    },
}

/// Orders related items as 13.5 says (SAME_SYMBOL items, then COUPLED ones) and keeps each
/// once, otherwise in the order found.
pub fn order_related(items: Vec<Related>) -> Vec<Related> {
    let mut seen = std::collections::HashSet::new();
    let (same, coupled): (Vec<Related>, Vec<Related>) = items
        .into_iter()
        .filter(|item| seen.insert(item.clone()))
        .partition(|item| matches!(item, Related::SameSymbol { .. }));
    same.into_iter().chain(coupled).collect()
}

/// One file of a worktree's observed work as the rules across worktrees weigh it (14.5): the
/// symbols its changed lines touch, and the calls made in its text.
#[derive(Debug, Clone)]
pub struct FileWork {
    /// The file.
    pub file: String,
    /// The session holding the work (`worktree:<root>`).
    pub session_id: String,
    /// Its intent.
    pub intent_id: String,
    /// The innermost symbols its changed lines touch.
    pub touched: Vec<String>,
    /// The calls made in its text: (caller's qualified name, callee's simple name).
    pub calls: std::collections::HashSet<(String, String)>,
}

/// The last segment of a dotted or `::` name (`this.run` -> `run`, `Store.open` -> `open`):
/// how a call names its callee, as COUPLED across worktrees compares it.
pub fn simple_name(name: &str) -> &str {
    name.rsplit(['.', ':']).next().unwrap_or(name)
}

/// What is related (13.5) between the work of worktree `a` and that of `b`, seen from `b`
/// (14.5): a symbol both change in separate lines (SAME_SYMBOL, in files that do not
/// collide: `colliding`), and a symbol of `b`'s that calls, or is called by, one of `a`'s
/// (COUPLED, by the callee's name: each worktree's text has its own call graph), each
/// naming `a`'s intent, in the order of [`order_related`].
pub fn related_across(
    a: &[FileWork],
    b: &[FileWork],
    colliding: &std::collections::HashSet<&str>,
) -> Vec<Related> {
    let mut items = Vec::new();
    for mine in b {
        for theirs in a {
            let same_file = mine.file == theirs.file;
            for name in &mine.touched {
                if same_file
                    && !colliding.contains(mine.file.as_str())
                    && theirs.touched.contains(name)
                {
                    items.push(Related::SameSymbol {
                        symbol_path: super::paths::join_symbol_path(&mine.file, name),
                        session_id: theirs.session_id.clone(),
                        intent_id: theirs.intent_id.clone(),
                    });
                }
                for other in &theirs.touched {
                    if same_file && other == name {
                        continue;
                    }
                    let relation = if mine
                        .calls
                        .contains(&(name.clone(), simple_name(other).to_owned()))
                    {
                        Relation::Calls
                    } else if theirs
                        .calls
                        .contains(&(other.clone(), simple_name(name).to_owned()))
                    {
                        Relation::CalledBy
                    } else {
                        continue;
                    };
                    items.push(Related::Coupled {
                        symbol_path: super::paths::join_symbol_path(&mine.file, name),
                        other_symbol: super::paths::join_symbol_path(&theirs.file, other),
                        relation,
                        session_id: theirs.session_id.clone(),
                        intent_id: theirs.intent_id.clone(),
                    });
                }
            }
        }
    }
    order_related(items)
}

/// Whether `lock` still belongs to a session other than `session_id` at `now_ms`: the
/// ownership test of `lock.acquire` (an expired lock belongs to nobody).
pub fn held_by_another(lock: &Lock, session_id: &str, now_ms: i64) -> bool {
    lock.is_live(now_ms) && lock.session_id != session_id
}

/// Strict intersection of half-open byte ranges: touching ranges do not intersect.
pub fn intersects(a: (i64, i64), b: (i64, i64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// The work a collision is checked for, in one file.
#[derive(Debug, Clone, Copy)]
pub enum Work<'a> {
    /// A declaration: its byte ranges in the file (`None`: file-level there), and the file's
    /// lines when another intent there has regions.
    Declared {
        /// The declared symbols' ranges.
        ranges: Option<&'a [(i64, i64)]>,
        /// The lines of the file's current text.
        lines: Option<&'a Lines>,
    },
    /// An edit: its changes of the current text, and that text's lines.
    Edit {
        /// The replaced spans and their replacements, exact (against declared ranges).
        changes: &'a [Change],
        /// The changed lines as git aligns them (against regions, 13.4, 13.7).
        line_changes: &'a [Change],
        /// The new text (`line_changes`' new spans are in it).
        new_text: &'a str,
        /// The lines of the current text.
        lines: &'a Lines,
    },
}

/// Whether `work` collides with another intent's row `theirs` in the same file: file-level
/// work on either side always does; a declaration's byte ranges against a declared intent's
/// ranges strictly intersect (3); against an observed intent, a declared range contains a
/// line of a region (13.4); an edit meets a declared range (10.2) or a region (13.4), as
/// git's merge finds two changes conflicting, except by a change that writes over the same
/// lines exactly what `written` says the region's owner wrote there (git applies one copy).
pub fn collides(work: Work<'_>, theirs: &RangeHit, written: &[Written]) -> bool {
    if let Some(regions) = &theirs.regions {
        return match work {
            Work::Declared { ranges: None, .. } => true,
            Work::Declared {
                ranges: Some(ranges),
                lines,
            } => lines.is_none_or(|lines| {
                ranges.iter().any(|&(start, end)| {
                    let (first, last) = lines.lines_of(to_usize(start), to_usize(end));
                    regions.iter().any(|r| shares_lines(first, last, r))
                })
            }),
            Work::Edit {
                line_changes,
                new_text,
                lines,
                ..
            } => line_changes.iter().any(|change| {
                let replaced = replaced_lines(change, lines);
                let same = |w: &Written| {
                    w.at == replaced && new_text.get(change.new.0..change.new.1) == Some(&w.text)
                };
                !written.iter().any(same) && regions.iter().any(|r| meets_region(&replaced, r))
            }),
        };
    }
    let Some(range) = theirs.range else {
        // File-level work: an edit leaving the file exactly as the other side wrote it whole
        // is the same change (13.4).
        return match work {
            Work::Edit { new_text, .. } => !written.iter().any(|w| w.text == new_text),
            Work::Declared { .. } => true,
        };
    };
    match work {
        Work::Declared { ranges: None, .. } => true,
        Work::Declared {
            ranges: Some(ranges),
            ..
        } => ranges.iter().any(|&mine| intersects(mine, range)),
        Work::Edit { changes, .. } => changes
            .iter()
            .any(|c| meets(to_usize(range.0), to_usize(range.1), c.old)),
    }
}

/// Whether another intent's row works inside the symbol at bytes `symbol` of the same file
/// (13.5): one of its regions has a line in the symbol's lines, or one of its declared
/// symbols contains it. File-level rows say nothing about symbols (they collide instead).
/// This is the test of SAME_SYMBOL (the touched symbol) and of COUPLED (the other symbol).
pub fn works_in(row: &RangeHit, symbol: (usize, usize), lines: Option<&Lines>) -> bool {
    match (&row.regions, row.range) {
        (Some(regions), _) => lines.is_some_and(|lines| {
            let (first, last) = lines.lines_of(symbol.0, symbol.1);
            regions.iter().any(|r| shares_lines(first, last, r))
        }),
        (None, Some((start, end))) => to_usize(start) <= symbol.0 && symbol.1 <= to_usize(end),
        (None, None) => false,
    }
}

fn to_usize(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// Where another session's work stands, seen from the acting session ([`Others::standing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The acting agent's own: the acting session, or a live session of the same agent.
    Mine,
    /// Another live agent's: it collides, and the git guards keep it.
    Theirs,
    /// Neither: a dead or ended session's, nobody's (`unowned:`), or the asking worktree's
    /// own observed work.
    Aside,
}

/// The acting session and whose work stands against it: other sessions that are live and
/// are not the same agent, seen from the request's [`Vantage`] (its session and worktree).
/// This is the one place of the same-agent rule and the liveness filter. Answers are kept
/// for the life of one request.
pub struct Others<'c> {
    coord: &'c Coord,
    at: Vantage,
    /// The acting session's process, when it registered one: `(pid, start, host)`; read
    /// when first needed.
    my_process: OnceCell<Option<(i64, i64, Option<String>)>>,
    verdicts: RefCell<HashMap<String, Standing>>,
}

impl<'c> Others<'c> {
    /// The view from `at` (nothing is read until a question needs it). Without an acting
    /// session nothing is anybody's own.
    pub fn of(coord: &'c Coord, at: &Vantage) -> Result<Others<'c>> {
        Ok(Others {
            coord,
            at: at.clone(),
            my_process: OnceCell::new(),
            verdicts: RefCell::new(HashMap::new()),
        })
    }

    /// The acting session (`""` without one).
    pub fn me(&self) -> &str {
        self.at.session().unwrap_or_default()
    }

    /// Where the request stands.
    pub fn vantage(&self) -> &Vantage {
        &self.at
    }

    /// Whether work of `session_id` stands against the acting session: another session, not
    /// the same agent (both registered with the same live process), and live.
    pub fn against(&self, session_id: &str) -> Result<bool> {
        Ok(self.standing(session_id)? == Standing::Theirs)
    }

    /// Where work of `session_id` stands, seen from the acting session: its own (the acting
    /// session, or a live session of the same agent), another live agent's, or neither (a
    /// dead or ended session, nobody's lines, the asking worktree's own observed work).
    pub fn standing(&self, session_id: &str) -> Result<Standing> {
        if let Some(known) = self.known_standing(session_id) {
            return Ok(known);
        }
        self.learn([session_id])?;
        Ok(self.known_standing(session_id).unwrap_or(Standing::Theirs))
    }

    /// Reads at once, in one store transaction, the sessions among `sessions` whose
    /// [`Others::standing`] needs their row and is not known yet: a request that weighs the
    /// work of many sessions (hundreds on one file) reads them together rather than a
    /// transaction each.
    pub fn learn<'s>(&self, sessions: impl IntoIterator<Item = &'s str>) -> Result<()> {
        let mut wanted: Vec<&str> = sessions
            .into_iter()
            .filter(|id| self.known_standing(id).is_none())
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() {
            return Ok(());
        }
        let rows = self.coord.store.read(|r| {
            wanted
                .iter()
                .map(|id| r.session(id))
                .collect::<std::result::Result<Vec<_>, _>>()
        })?;
        for (id, row) in wanted.into_iter().zip(rows) {
            let verdict = self.verdict_of(row.as_ref())?;
            self.verdicts.borrow_mut().insert(id.to_owned(), verdict);
        }
        Ok(())
    }

    /// Where work of `session_id` stands when that needs no session row: the acting
    /// session's, nobody's, a worktree's observed work, or a verdict already reached.
    fn known_standing(&self, session_id: &str) -> Option<Standing> {
        if self.at.session() == Some(session_id) {
            return Some(Standing::Mine);
        }
        if super::ownership::is_unowned_session(session_id) {
            // 15.3: a person's or an unhooked tool's lines are for the git guards to weigh
            // (`[gate] unowned`); they are no agent's work that an edit or a lock collides with.
            return Some(Standing::Aside);
        }
        if let Some(root) = worktree_of_session(session_id) {
            // 14.4: a worktree's own observed work never stands against work from it.
            return Some(if self.at.worktree() == Some(root) {
                Standing::Aside
            } else {
                Standing::Theirs
            });
        }
        self.verdicts.borrow().get(session_id).copied()
    }

    /// Where work of a session whose row is `row` stands (`None`: no such session).
    fn verdict_of(&self, row: Option<&SessionRow>) -> Result<Standing> {
        Ok(match row {
            None => Standing::Theirs,
            Some(row) if !self.coord.row_is_live(row) => Standing::Aside,
            Some(row) => {
                let theirs = process_of(row);
                if theirs.is_some() && theirs == *self.my_process()? {
                    Standing::Mine
                } else {
                    Standing::Theirs
                }
            }
        })
    }

    fn my_process(&self) -> Result<&Option<(i64, i64, Option<String>)>> {
        if let Some(known) = self.my_process.get() {
            return Ok(known);
        }
        let Some(me) = self.at.session() else {
            return Ok(self.my_process.get_or_init(|| None));
        };
        let row = self.coord.store.read(|r| r.session(me))?;
        Ok(self
            .my_process
            .get_or_init(|| row.as_ref().and_then(process_of)))
    }

    /// The LOCK_INTERSECTION items of `locks` whose holder stands against the acting
    /// session.
    pub fn lock_items(&self, locks: Vec<Lock>) -> Result<Vec<Conflict>> {
        Ok(self
            .filter(locks, |l| l.session_id.as_str())?
            .into_iter()
            .map(lock_item)
            .collect())
    }

    /// `items` whose session (as `session_of` names it) stands against the acting one.
    pub fn filter<T>(&self, items: Vec<T>, session_of: impl Fn(&T) -> &str) -> Result<Vec<T>> {
        self.learn(items.iter().map(&session_of))?;
        let mut kept = Vec::with_capacity(items.len());
        for item in items {
            if self.against(session_of(&item))? {
                kept.push(item);
            }
        }
        Ok(kept)
    }
}

/// The process a session row is registered with, as the same-agent rule compares it.
fn process_of(row: &SessionRow) -> Option<(i64, i64, Option<String>)> {
    if row.ended_at_ms.is_some() {
        return None;
    }
    Some((row.pid?, row.pid_start?, row.host_id.clone()))
}

/// The INTENT_OVERLAP items of `hits` (rows of other sessions' intents, already filtered by
/// [`Others`]), each intent once, oldest first.
pub fn overlap_items(mut hits: Vec<RangeHit>) -> Vec<Conflict> {
    hits.sort_by_key(|h| (h.declared_at_ms, h.intent_seq));
    let mut seen = std::collections::HashSet::new();
    hits.into_iter()
        .filter(|hit| seen.insert(hit.intent_seq))
        .map(|hit| Conflict::IntentOverlap {
            intent_id: hit.intent_id,
            session_id: hit.session_id,
            description: hit.description,
        })
        .collect()
}

/// The LOCK_INTERSECTION item for a lock that stands against the acting session.
fn lock_item(lock: Lock) -> Conflict {
    Conflict::LockIntersection {
        symbol_path: lock.symbol_path,
        held_by: lock.session_id,
        expires_at_ms: lock.expires_at_ms,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::store::LineRegion;

    fn hit(range: Option<(i64, i64)>, regions: Option<Vec<LineRegion>>) -> RangeHit {
        RangeHit {
            intent_seq: 1,
            intent_id: "i".into(),
            session_id: "s".into(),
            description: "d".into(),
            declared_at_ms: 0,
            range,
            regions,
        }
    }

    #[test]
    fn declared_work_against_each_kind() {
        let lines = Lines::of("a\nb\nc\nd\n");
        let mine = [(2, 4)]; // line 2
        let work = Work::Declared {
            ranges: Some(&mine),
            lines: Some(&lines),
        };
        assert!(collides(work, &hit(None, None), &[]), "file-level");
        assert!(collides(work, &hit(Some((3, 9)), None), &[]));
        assert!(!collides(work, &hit(Some((4, 9)), None), &[]), "touching");
        let region = |a, b| Some(vec![LineRegion::new(a, b)]);
        assert!(collides(work, &hit(None, region(2, 3)), &[]));
        assert!(
            !collides(work, &hit(None, region(3, 4)), &[]),
            "next to it is no line of it"
        );
        let whole = Work::Declared {
            ranges: None,
            lines: None,
        };
        assert!(collides(whole, &hit(None, region(9, 9)), &[]));
    }

    /// One edit of "a".."g" (one line each) against one region, as git's merge would find
    /// the two changes: the table of 13.4.
    #[test]
    fn an_edit_against_regions() {
        let current = "a\nb\nc\nd\ne\nf\ng\n";
        let lines = Lines::of(current);
        // (what the edit does, the region, whether they meet)
        let table: [(&str, (i64, i64), bool); 12] = [
            ("a\nB\nc\nd\ne\nf\ng\n", (3, 4), true), // a replaced line before it
            ("a\nb\nc\nd\nE\nf\ng\n", (3, 4), true), // after it
            ("a\nb\nC\nd\ne\nf\ng\n", (3, 4), true), // inside it
            ("A\nb\nc\nd\ne\nf\ng\n", (3, 4), false), // one unchanged line between
            ("a\nb\nc\nd\ne\nF\ng\n", (3, 4), false),
            ("a\nb\nx\nc\nd\ne\nf\ng\n", (3, 4), true), // an insertion at its top
            ("a\nb\nc\nd\nx\ne\nf\ng\n", (3, 4), true), // at its bottom
            ("a\nb\nc\nd\ne\nx\nf\ng\n", (3, 4), false), // one line below it
            ("a\nb\nc\nx\nd\ne\nf\ng\n", (4, 3), true), // two insertions at one point
            ("a\nb\nc\nd\nx\ne\nf\ng\n", (4, 3), false), // one line apart
            ("a\nb\nc\ne\nf\ng\n", (5, 4), true),       // a deletion's point at a point
            ("a\nb\nc\nd\nf\ng\n", (3, 4), true),       // deleting the line after it
        ];
        for (new, (start, end), meets) in table {
            let changes = super::super::preflight::spans::diff_lines(current, new);
            let work = Work::Edit {
                changes: &changes,
                line_changes: &changes,
                new_text: new,
                lines: &lines,
            };
            let theirs = hit(None, Some(vec![LineRegion::new(start, end)]));
            assert_eq!(
                collides(work, &theirs, &[]),
                meets,
                "{new:?} against {start}-{end}"
            );
        }
    }

    #[test]
    fn an_identical_change_meets_nothing() {
        let current = "a\nb\nc\n";
        let new = "a\nB\nc\n";
        let lines = Lines::of(current);
        let changes = super::super::preflight::spans::diff_lines(current, new);
        let work = Work::Edit {
            changes: &changes,
            line_changes: &changes,
            new_text: new,
            lines: &lines,
        };
        let theirs = hit(None, Some(vec![LineRegion::new(2, 2)]));
        let wrote = |text: &str| Written {
            at: LineRegion::new(2, 2),
            text: text.into(),
        };
        assert!(!collides(work, &theirs, &[wrote("B\n")]), "the same text");
        assert!(collides(work, &theirs, &[wrote("b2\n")]), "other text");
        assert!(collides(work, &theirs, &[]));
    }

    #[test]
    fn a_file_written_alike_by_both_sides_meets_nothing_at_file_level() {
        let current = "";
        let new = "pub mod a;\n";
        let lines = Lines::of(current);
        let changes = super::super::preflight::spans::diff_lines(current, new);
        let work = Work::Edit {
            changes: &changes,
            line_changes: &changes,
            new_text: new,
            lines: &lines,
        };
        let file_level = hit(None, None);
        let wrote = |text: &str| Written {
            at: LineRegion::new(1, 0),
            text: text.into(),
        };
        assert!(!collides(work, &file_level, &[wrote("pub mod a;\n")]));
        assert!(collides(work, &file_level, &[wrote("pub mod b;\n")]));
        assert!(collides(work, &file_level, &[]));
    }

    /// Across worktrees (14.5): SAME_SYMBOL where both change a symbol of a file that does not
    /// collide, COUPLED by the callee's simple name either way.
    #[test]
    fn related_across_worktrees() {
        let work = |file: &str, session: &str, touched: &[&str], calls: &[(&str, &str)]| FileWork {
            file: file.into(),
            session_id: session.into(),
            intent_id: format!("i-{session}"),
            touched: touched.iter().map(|t| (*t).to_owned()).collect(),
            calls: calls
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect(),
        };
        let a = [work("x.py", "worktree:/a", &["C.run"], &[])];
        let b = [
            work("x.py", "worktree:/b", &["C.run"], &[]),
            work("y.py", "worktree:/b", &["go"], &[("go", "run")]),
        ];
        let none = std::collections::HashSet::new();
        assert_eq!(
            related_across(&a, &b, &none),
            [
                Related::SameSymbol {
                    symbol_path: "x.py:C.run".into(),
                    session_id: "worktree:/a".into(),
                    intent_id: "i-worktree:/a".into(),
                },
                Related::Coupled {
                    symbol_path: "y.py:go".into(),
                    other_symbol: "x.py:C.run".into(),
                    relation: Relation::Calls,
                    session_id: "worktree:/a".into(),
                    intent_id: "i-worktree:/a".into(),
                },
            ]
        );
        // A colliding file's shared symbol is a collision, not context.
        let colliding: std::collections::HashSet<&str> = ["x.py"].into_iter().collect();
        assert_eq!(related_across(&a, &b, &colliding).len(), 1);
        // Seen from a: called by b's `go`.
        assert!(matches!(
            &related_across(&b, &a, &colliding)[..],
            [Related::Coupled {
                relation: Relation::CalledBy,
                ..
            }]
        ));
        assert_eq!(simple_name("this.run"), "run");
        assert_eq!(simple_name("store::open"), "open");
    }

    #[test]
    fn related_items_are_ordered_and_unique() {
        let same = Related::SameSymbol {
            symbol_path: "a:f".into(),
            session_id: "s".into(),
            intent_id: "i".into(),
        };
        let coupled = Related::Coupled {
            symbol_path: "a:f".into(),
            other_symbol: "b:g".into(),
            relation: Relation::Calls,
            session_id: "s".into(),
            intent_id: "i".into(),
        };
        assert_eq!(
            order_related(vec![
                coupled.clone(),
                same.clone(),
                coupled.clone(),
                same.clone()
            ]),
            [same, coupled]
        );
    }
}
