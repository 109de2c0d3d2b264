//! The owner map (docs/protocol.md 15): for one file with uncommitted work, how its current
//! bytes came from HEAD's, line by line, and who made each change.
//!
//! Every line of the current text is either a line of HEAD's text left as it was, or a line
//! some sessions wrote; every line of HEAD's text that is gone records who deleted it. The map
//! is kept *incrementally*: each change the daemon sees (a recorded edit, or a change on disk
//! it attributes) is one small line diff of the last text it knew and the new one (13.7's
//! diff), so "which lines did this session change" is never re-derived from a diff of HEAD
//! against the current text, which need not line up with the edits in repetitive code.
//!
//! A file is bytes and a line ends at `\n` (15.4). A file that is not valid UTF-8 (on either
//! side) is binary: its work is file-level, one mark for the whole file.
//!
//! Pure data and functions: no store, no git. The daemon feeds it bytes.

use similar::DiffOp;

use super::preflight::line_ops::{line_starts, lines_sharing, split_lines, text_line_ops};

/// Who made a change and when: the sessions (sorted, each once; none for unowned work) and
/// the time of the newest change, unix ms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Mark {
    /// The sessions that made the change (empty: nobody known).
    pub owners: Vec<String>,
    /// When the newest of them made it.
    pub at_ms: i64,
}

impl Mark {
    /// A mark of `owners` at `at_ms` (sorted, deduplicated).
    pub fn new(owners: &[String], at_ms: i64) -> Mark {
        let mut owners = owners.to_vec();
        owners.sort();
        owners.dedup();
        Mark { owners, at_ms }
    }

    /// This mark and `other` together: both sets of owners, the later time.
    fn joined(&self, other: &Mark) -> Mark {
        let mut owners = self.owners.clone();
        owners.extend(other.owners.iter().cloned());
        owners.sort();
        owners.dedup();
        Mark {
            owners,
            at_ms: self.at_ms.max(other.at_ms),
        }
    }
}

/// One entry of a text file's map, in the order of the text: a line of the current text
/// (kept from HEAD, or written), or a line of HEAD's text that is gone (a tombstone, where it
/// was).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// Line `n` (0-based) of HEAD's text, unchanged.
    Base(usize),
    /// A current line written by the marked sessions.
    Added(Mark),
    /// Line `n` (0-based) of HEAD's text, deleted by the marked sessions.
    Deleted(usize, Mark),
}

impl Entry {
    fn is_line(&self) -> bool {
        !matches!(self, Entry::Deleted(..))
    }

    fn mark(&self) -> Option<&Mark> {
        match self {
            Entry::Base(_) => None,
            Entry::Added(mark) | Entry::Deleted(_, mark) => Some(mark),
        }
    }
}

/// What the file's work is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Work {
    /// Text: its entries.
    Lines(Vec<Entry>),
    /// Binary: the whole file's change, with everyone who changed it.
    File(Option<Mark>),
}

/// One hunk of the owner map: HEAD's `old_lines` lines from `old_start` replaced by the
/// current text's `new_lines` lines from `new_start`, git's `-U0` numbering (1-based; with a
/// count of 0 the start is the line after which the point lies), made by `mark`'s owners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedHunk {
    /// First replaced line of HEAD's text (or the line after which the insertion lies).
    pub old_start: usize,
    /// How many lines of HEAD's text it replaces.
    pub old_lines: usize,
    /// First line of the current text it wrote (or the line after which the deletion lies).
    pub new_start: usize,
    /// How many lines of the current text it wrote.
    pub new_lines: usize,
    /// Who made it.
    pub mark: Mark,
}

/// A run of current lines with the same owners, or a deletion point, as `work.owners` shows it
/// (15.7): 1-based, inclusive; a point after line `n` is `start_line: n + 1, end_line: n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedLines {
    /// First line.
    pub start_line: usize,
    /// Last line (one less than `start_line` for a deletion point).
    pub end_line: usize,
    /// Who changed them.
    pub mark: Mark,
}

/// One file's owner map.
#[derive(Debug, Clone)]
pub struct FileOwners {
    base: Vec<u8>,
    /// Where each of `base`'s lines starts (none for a binary file): split once, not at
    /// each change.
    base_starts: Vec<usize>,
    current: Vec<u8>,
    work: Work,
}

/// Line `line` (0-based, with its `\n`) of `text`, whose lines start at `starts`.
fn base_line_at<'t>(text: &'t [u8], starts: &[usize], line: usize) -> Option<&'t [u8]> {
    let start = *starts.get(line)?;
    let end = starts.get(line + 1).copied().unwrap_or(text.len());
    text.get(start..end)
}

fn is_text(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok()
}

/// The work of a map at HEAD's text: each of its `lines` unchanged, or for a binary file
/// none at all.
fn work_at_base(text: bool, lines: usize) -> Work {
    if text {
        Work::Lines((0..lines).map(Entry::Base).collect())
    } else {
        Work::File(None)
    }
}

/// The runs of changes in `entries` (between two kept base lines), with the line of the
/// current text each starts at.
fn change_runs(entries: &[Entry]) -> impl Iterator<Item = (std::ops::Range<usize>, usize)> + '_ {
    let (mut at, mut line) = (0, 0);
    std::iter::from_fn(move || {
        while let Some(Entry::Base(_)) = entries.get(at) {
            at += 1;
            line += 1;
        }
        if at >= entries.len() {
            return None;
        }
        let (start, first_line) = (at, line);
        while at < entries.len() && !matches!(entries[at], Entry::Base(_)) {
            line += usize::from(entries[at].is_line());
            at += 1;
        }
        Some((start..at, first_line))
    })
}

/// Where a run of changes in `entries` holds exactly the lines of HEAD's text (`base`) it
/// replaced, as the current text has them (`current_line`), they are base lines again (a
/// change undone, or rewritten as it was). HEAD's lines are looked at (`base_line`, by
/// 0-based number) and the current text's (`current_line`) only when some run replaced as
/// many lines as it wrote, and the entries rebuilt only when one is restored.
fn restore_unchanged_runs<'b, 'c>(
    entries: &mut Vec<Entry>,
    base_line: impl Fn(usize) -> Option<&'b [u8]>,
    current_line: impl Fn(usize) -> Option<&'c [u8]>,
) {
    let gone_of = |run: &[Entry]| -> Vec<usize> {
        run.iter()
            .filter_map(|e| match e {
                Entry::Deleted(n, _) => Some(*n),
                _ => None,
            })
            .collect()
    };
    let balanced = |run: &[Entry]| {
        let written = run.iter().filter(|e| e.is_line()).count();
        written > 0 && written == run.len() - written
    };
    let balanced_runs: Vec<_> = change_runs(entries)
        .filter(|(run, _)| balanced(&entries[run.clone()]))
        .collect();
    if balanced_runs.is_empty() {
        return;
    }
    let restored: Vec<(std::ops::Range<usize>, Vec<usize>)> = balanced_runs
        .into_iter()
        .filter_map(|(run, line)| {
            let gone = gone_of(&entries[run.clone()]);
            let same = gone
                .iter()
                .zip(line..line + gone.len())
                .all(|(&b, c)| base_line(b) == current_line(c));
            same.then_some((run, gone))
        })
        .collect();
    if restored.is_empty() {
        return;
    }
    let mut rebuilt = Vec::with_capacity(entries.len());
    let mut kept_to = 0;
    for (run, gone) in restored {
        rebuilt.extend(entries[kept_to..run.start].iter().cloned());
        rebuilt.extend(gone.into_iter().map(Entry::Base));
        kept_to = run.end;
    }
    rebuilt.extend(entries[kept_to..].iter().cloned());
    *entries = rebuilt;
}

/// A text's entries (`work`) carried through `ops` (the line diff from the current text to a
/// new one, whose line `n` is `new_line(n)`; HEAD's text is `base`, its lines starting at
/// `base_starts`): kept lines moved as they are, each change marked by `mark_of` (and by the
/// earlier owners of lines it rewrote).
fn carry_entries<'n>(
    work: &mut Work,
    (base, base_starts): (&[u8], &[usize]),
    ops: &[DiffOp],
    new_line: impl Fn(usize) -> Option<&'n [u8]>,
    mark_of: impl Fn(std::ops::Range<usize>, std::ops::Range<usize>) -> Mark,
) {
    let Work::Lines(entries) = work else {
        return;
    };
    let count = entries.len();
    let mut old = Segments::new(std::mem::take(entries));
    let mut next = Vec::with_capacity(count + ops.len());
    for op in ops {
        let (gone, fresh) = (op.old_range(), op.new_range());
        if let DiffOp::Equal { .. } = op {
            old.take_to_line(gone.end, |entry| next.push(entry));
            continue;
        }
        let mut segment = Vec::new();
        old.take_to_line(gone.end, |entry| segment.push(entry));
        let mut mark = mark_of(fresh.clone(), gone);
        // Lines rewritten over others' lines stay theirs too (15.1).
        for entry in &segment {
            if let Entry::Added(earlier) = entry {
                mark = mark.joined(earlier);
            }
        }
        for entry in segment {
            match entry {
                Entry::Base(line) => next.push(Entry::Deleted(line, mark.clone())),
                Entry::Deleted(..) => next.push(entry),
                Entry::Added(_) => {}
            }
        }
        next.extend(fresh.map(|_| Entry::Added(mark.clone())));
    }
    // Whatever the diff did not reach (nothing, when it covers the text as it does).
    old.take_to_line(usize::MAX, |entry| next.push(entry));
    let base_line = |line| base_line_at(base, base_starts, line);
    restore_unchanged_runs(&mut next, base_line, new_line);
    *entries = next;
}

/// A map's entries taken in order, a line's segment at a time: the segment of line `n` is
/// its entry and the tombstones after it, up to line `n + 1`'s entry (the first line's also
/// holds the tombstones before it).
struct Segments {
    rest: std::iter::Peekable<std::vec::IntoIter<Entry>>,
    /// The number of the next line entry in `rest`.
    line: usize,
}

impl Segments {
    fn new(entries: Vec<Entry>) -> Segments {
        Segments {
            rest: entries.into_iter().peekable(),
            line: 0,
        }
    }

    /// Moves the entries before line `end`'s segment to `out` (every one left when there is
    /// no such line): the segments of the lines up to `end`.
    fn take_to_line(&mut self, end: usize, mut out: impl FnMut(Entry)) {
        if end == 0 {
            return;
        }
        while let Some(entry) = self.rest.next_if(|e| !(e.is_line() && self.line == end)) {
            self.line += usize::from(entry.is_line());
            out(entry);
        }
    }
}

impl FileOwners {
    /// A file whose current bytes are HEAD's (`base`; empty for a file not in HEAD).
    pub fn unchanged(base: Vec<u8>) -> FileOwners {
        let text = is_text(&base);
        let base_starts = if text { line_starts(&base) } else { Vec::new() };
        FileOwners {
            current: base.clone(),
            work: work_at_base(text, base_starts.len()),
            base,
            base_starts,
        }
    }

    /// A file seen for the first time with uncommitted changes: HEAD's `base` against the
    /// `current` bytes by one line diff, each change marked by `mark_of` (given the 0-based
    /// range of current lines it wrote and of base lines it replaced).
    pub fn rebuilt(
        base: Vec<u8>,
        current: &[u8],
        mark_of: impl Fn(std::ops::Range<usize>, std::ops::Range<usize>) -> Mark,
    ) -> FileOwners {
        let mut map = FileOwners::unchanged(base);
        map.apply_with(current, mark_of);
        map
    }

    /// Back to HEAD's text with nothing uncommitted: as [`FileOwners::unchanged`], keeping
    /// HEAD's line starts (a recorded edit of a file nobody wrote yet comes here first on
    /// every call, and the starts of a large file cost a pass over it).
    fn reset_to_base(&mut self) {
        self.current.clear();
        self.current.extend_from_slice(&self.base);
        self.work = work_at_base(is_text(&self.base), self.base_starts.len());
    }

    /// The bytes the map's lines are lines of.
    pub fn current(&self) -> &[u8] {
        &self.current
    }

    /// HEAD's bytes.
    pub fn base(&self) -> &[u8] {
        &self.base
    }

    /// Whether the file is binary (file-level work).
    pub fn is_binary(&self) -> bool {
        matches!(self.work, Work::File(_))
    }

    /// Whether the current bytes are HEAD's again (nothing uncommitted is left).
    pub fn is_clean(&self) -> bool {
        self.current == self.base
    }

    /// The current text changed to `new` by `mark`'s owners: lines they replaced or inserted
    /// are theirs (and still their earlier owners' where they rewrote lines others wrote);
    /// base lines they removed are marked deleted by them. A change back to HEAD's text
    /// (anywhere) leaves no mark there.
    pub fn apply(&mut self, new: &[u8], mark: &Mark) {
        self.apply_with(new, |_, _| mark.clone());
    }

    /// [`FileOwners::apply`] given the line diff from the current text to `new` (`ops`, as
    /// the one line diff gives it: a recorded edit's preflight has it already), so the texts
    /// are neither split nor diffed again.
    pub fn apply_diff(&mut self, new: Vec<u8>, ops: &[DiffOp], mark: &Mark) {
        let mark_of = |_, _| mark.clone();
        if self.settled(&new, &mark_of) {
            return;
        }
        // The new text's lines are read only where a change may have restored HEAD's.
        let starts = std::cell::OnceCell::new();
        let line_of = |line: usize| {
            let starts = starts.get_or_init(|| line_starts(&new));
            base_line_at(&new, starts, line)
        };
        let base = (self.base.as_slice(), self.base_starts.as_slice());
        carry_entries(&mut self.work, base, ops, line_of, mark_of);
        self.current = new;
    }

    fn apply_with(
        &mut self,
        new: &[u8],
        mark_of: impl Fn(std::ops::Range<usize>, std::ops::Range<usize>) -> Mark,
    ) {
        if self.settled(new, &mark_of) {
            return;
        }
        let old_lines = split_lines(&self.current);
        // The lines both texts begin and end with are the current text's (split once).
        let new_lines = lines_sharing(self.current.as_slice(), &old_lines, new, usize::MAX)
            .unwrap_or_else(|| split_lines(new));
        let ops = text_line_ops::<[u8]>((&self.current, &old_lines), (new, &new_lines));
        let line_of = |line: usize| new_lines.get(line).copied();
        let base = (self.base.as_slice(), self.base_starts.as_slice());
        carry_entries(&mut self.work, base, &ops, line_of, mark_of);
        self.current = new.to_vec();
    }

    /// Whatever `new` needs besides a line diff: nothing when it is the current text, the
    /// map at HEAD when it is HEAD's, one mark for the whole file when either side is binary.
    /// Whether the map took `new` so (else the caller maps its lines).
    fn settled(
        &mut self,
        new: &[u8],
        mark_of: &impl Fn(std::ops::Range<usize>, std::ops::Range<usize>) -> Mark,
    ) -> bool {
        if new == self.current.as_slice() {
            return true;
        }
        if new == self.base.as_slice() {
            self.reset_to_base();
            return true;
        }
        if matches!(self.work, Work::File(_)) || !is_text(new) {
            let whole = mark_of(0..0, 0..0);
            let mark = match &self.work {
                Work::File(Some(known)) => known.joined(&whole),
                Work::Lines(entries) => entries
                    .iter()
                    .filter_map(Entry::mark)
                    .fold(whole, |acc, m| acc.joined(m)),
                Work::File(None) => whole,
            };
            self.work = Work::File(Some(mark));
            self.current = new.to_vec();
            return true;
        }
        false
    }

    /// The map as hunks from HEAD's text to the current one, in order: each run of changes
    /// with the same owners (or with one's owners among the other's) is one hunk, so changes
    /// of different sessions side by side stay apart, in the order they stand in the text. A
    /// binary file is one hunk of zeros.
    pub fn hunks(&self) -> Vec<OwnedHunk> {
        let entries = match &self.work {
            Work::File(None) => return Vec::new(),
            Work::File(Some(mark)) => {
                return vec![OwnedHunk {
                    old_start: 0,
                    old_lines: 0,
                    new_start: 0,
                    new_lines: 0,
                    mark: mark.clone(),
                }]
            }
            Work::Lines(entries) => entries,
        };
        let mut hunks: Vec<OwnedHunk> = Vec::new();
        // Base and current lines before the entry being read.
        let (mut old, mut new) = (0, 0);
        // Whether the previous entry was a change (a hunk may go on).
        let mut open = false;
        for entry in entries {
            let Some(mark) = entry.mark() else {
                old += 1;
                new += 1;
                open = false;
                continue;
            };
            let (gone, written) = match entry {
                Entry::Deleted(..) => (1, 0),
                _ => (0, 1),
            };
            match hunks
                .last_mut()
                .filter(|h| open && mergeable(&h.mark, mark))
            {
                Some(hunk) => {
                    if hunk.old_lines == 0 && gone == 1 {
                        hunk.old_start = old + 1;
                    }
                    if hunk.new_lines == 0 && written == 1 {
                        hunk.new_start = new + 1;
                    }
                    hunk.old_lines += gone;
                    hunk.new_lines += written;
                    hunk.mark = hunk.mark.joined(mark);
                }
                None => hunks.push(OwnedHunk {
                    old_start: if gone == 1 { old + 1 } else { old },
                    old_lines: gone,
                    new_start: if written == 1 { new + 1 } else { new },
                    new_lines: written,
                    mark: mark.clone(),
                }),
            }
            open = true;
            old += gone;
            new += written;
        }
        hunks
    }

    /// The current lines with their owners, runs of the same owners merged, and the points
    /// where base lines were deleted (15.7). Empty for a binary file (its owners are the
    /// file's: [`FileOwners::file_mark`]).
    pub fn lines(&self) -> Vec<OwnedLines> {
        let mut out: Vec<OwnedLines> = Vec::new();
        for hunk in self.hunks() {
            if self.is_binary() {
                break;
            }
            let (start_line, end_line) = if hunk.new_lines == 0 {
                (hunk.new_start + 1, hunk.new_start)
            } else {
                (hunk.new_start, hunk.new_start + hunk.new_lines - 1)
            };
            match out.last_mut() {
                Some(last)
                    if hunk.new_lines > 0
                        && last.end_line >= last.start_line
                        && last.end_line + 1 == start_line
                        && last.mark.owners == hunk.mark.owners =>
                {
                    last.end_line = end_line;
                    last.mark.at_ms = last.mark.at_ms.max(hunk.mark.at_ms);
                }
                _ => out.push(OwnedLines {
                    start_line,
                    end_line,
                    mark: hunk.mark,
                }),
            }
        }
        out
    }

    /// The owners of a binary file's change (`None` for text or no change).
    pub fn file_mark(&self) -> Option<&Mark> {
        match &self.work {
            Work::File(mark) => mark.as_ref(),
            Work::Lines { .. } => None,
        }
    }

    /// Every session with work in the file.
    pub fn owners(&self) -> Vec<String> {
        let mut owners: Vec<String> = self
            .hunks()
            .into_iter()
            .flat_map(|h| h.mark.owners)
            .collect();
        owners.sort();
        owners.dedup();
        owners
    }
}

/// Whether two neighbouring changes are one hunk: the same owners, or one's owners among
/// the other's (a session that rewrote another's change). Unowned work stays apart.
fn mergeable(a: &Mark, b: &Mark) -> bool {
    let within =
        |x: &Mark, y: &Mark| !x.owners.is_empty() && x.owners.iter().all(|o| y.owners.contains(o));
    a.owners == b.owners || within(a, b) || within(b, a)
}

/// HEAD's bytes with the hunks `keep` chooses applied, their new lines taken from `current`:
/// "HEAD plus exactly these changes" (15.6), byte for byte. Hunks are in the order
/// [`FileOwners::hunks`] gives.
pub fn compose(
    base: &[u8],
    current: &[u8],
    hunks: &[OwnedHunk],
    keep: impl Fn(&OwnedHunk) -> bool,
) -> Vec<u8> {
    let base_lines = split_lines(base);
    let current_lines = split_lines(current);
    let mut out = Vec::with_capacity(base.len());
    let mut next_base = 0; // 0-based: base lines before it are written (or dropped)
    for hunk in hunks.iter().filter(|h| keep(h)) {
        let old_from = if hunk.old_lines == 0 {
            hunk.old_start
        } else {
            hunk.old_start - 1
        };
        let old_from = old_from.min(base_lines.len());
        if old_from < next_base {
            continue;
        }
        for line in &base_lines[next_base..old_from] {
            out.extend_from_slice(line);
        }
        let new_from = if hunk.new_lines == 0 {
            hunk.new_start
        } else {
            hunk.new_start - 1
        };
        let new_to = (new_from + hunk.new_lines).min(current_lines.len());
        for line in &current_lines[new_from.min(new_to)..new_to] {
            out.extend_from_slice(line);
        }
        next_base = (old_from + hunk.old_lines).min(base_lines.len());
    }
    for line in &base_lines[next_base..] {
        out.extend_from_slice(line);
    }
    out
}

#[cfg(test)]
mod tests;
