//! git's line diff, as `git merge-tree` (merge-ort) runs it (docs/protocol.md 13.7): xdiff's
//! histogram algorithm over the whole texts, then xdiff's `xdl_change_compact` without the
//! indent heuristic (merges never turn it on), which slides every changed block as far down
//! as it goes unless it can line up with a changed block of the other side. The one place
//! wit aligns lines: what this says changed is what git's merge compares.
//!
//! A port of git's `xdiff/xhistogram.c` and the compaction of `xdiff/xdiffi.c`. Where git's
//! histogram gives up (every common line of a range repeats more than 64 times there) it
//! falls back to its classic Myers diff for that range; this falls back to `imara-diff`'s
//! Myers, the one case where the alignment may differ from git's.

use std::collections::HashMap;

use imara_diff::{Algorithm, Diff, InternedInput};
use similar::DiffOp;

/// One changed block: `old` lines replaced by `new` lines (0-based, end exclusive); an empty
/// range is the point before its start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The lines of the old text it replaces.
    pub old: std::ops::Range<usize>,
    /// The lines of the new text that replace them.
    pub new: std::ops::Range<usize>,
}

/// git's hunks between two texts split into lines (each line with its `\n`), in order.
///
/// The diffs of large texts are remembered ([`RecentDiffs`]): one recorded edit asks for the
/// same two texts' diff three times (the edit's changed lines, the regions carried onto the
/// new text, the owner map), and each costs about a millisecond on a 170 KB file.
pub fn git_hunks<T: Eq + std::hash::Hash + AsRef<[u8]> + ?Sized>(
    old_lines: &[&T],
    new_lines: &[&T],
) -> Vec<Hunk> {
    remembered_hunks(old_lines, new_lines, || {
        RecentDiffs::key(old_lines, new_lines)
    })
}

/// [`git_hunks`], remembered under `key` when the texts are large.
fn remembered_hunks<T: Eq + std::hash::Hash + ?Sized>(
    old_lines: &[&T],
    new_lines: &[&T],
    key: impl FnOnce() -> DiffKey,
) -> Vec<Hunk> {
    if old_lines.len() + new_lines.len() < RecentDiffs::WORTH_REMEMBERING {
        return diff_hunks(old_lines, new_lines);
    }
    let key = key();
    if let Some(hunks) = RECENT.get(key) {
        return hunks;
    }
    let hunks = diff_hunks(old_lines, new_lines);
    RECENT.put(key, &hunks);
    hunks
}

/// The last few diffs of large texts, by a 128-bit digest of both sides' lines.
struct RecentDiffs {
    kept: std::sync::Mutex<std::collections::VecDeque<(DiffKey, Vec<Hunk>)>>,
}

/// Both sides' digests and line counts.
type DiffKey = (u128, u128, usize, usize);

/// The diffs remembered by [`git_hunks`].
static RECENT: RecentDiffs = RecentDiffs {
    kept: std::sync::Mutex::new(std::collections::VecDeque::new()),
};

impl RecentDiffs {
    /// Texts of fewer lines (both sides together) are diffed again: cheaper than hashing.
    const WORTH_REMEMBERING: usize = 2_048;
    /// How many diffs are kept (each holds only its hunks).
    const CAPACITY: usize = 8;
    /// Diffs of more hunks are not kept (an edit's diff has a few; this bounds the memory
    /// held to a few megabytes whatever the texts).
    const MOST_HUNKS: usize = 8_192;

    fn key<T: AsRef<[u8]> + ?Sized>(old_lines: &[&T], new_lines: &[&T]) -> DiffKey {
        // Each line hashed whole (one-shot hashes of short inputs are a few nanoseconds; a
        // streaming hasher fed line by line cost more than the diff it saved), then the
        // sequence of line digests.
        let digest = |lines: &[&T]| {
            let mut digests = Vec::with_capacity(lines.len() * 16);
            for line in lines {
                digests
                    .extend_from_slice(&xxhash_rust::xxh3::xxh3_128(line.as_ref()).to_le_bytes());
            }
            xxhash_rust::xxh3::xxh3_128(&digests)
        };
        (
            digest(old_lines),
            digest(new_lines),
            old_lines.len(),
            new_lines.len(),
        )
    }

    /// The key of two whole texts split into `old_count` and `new_count` lines: one long
    /// hash of each text, at memory speed (hashing each line cost a recorded edit of a 169 KB
    /// file 8 % of its time). Its own seed keeps it apart from [`RecentDiffs::key`]'s digests.
    fn text_key(old: &[u8], new: &[u8], old_count: usize, new_count: usize) -> DiffKey {
        const TEXT_SEED: u64 = 0x7769_745f_7465_7874;
        (
            xxhash_rust::xxh3::xxh3_128_with_seed(old, TEXT_SEED),
            xxhash_rust::xxh3::xxh3_128_with_seed(new, TEXT_SEED),
            old_count,
            new_count,
        )
    }

    fn get(&self, key: DiffKey) -> Option<Vec<Hunk>> {
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, hunks)| hunks.clone())
    }

    fn put(&self, key: DiffKey, hunks: &[Hunk]) {
        if hunks.len() > Self::MOST_HUNKS {
            return;
        }
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() >= Self::CAPACITY {
            kept.pop_front();
        }
        kept.push_back((key, hunks.to_vec()));
    }
}

/// [`git_hunks`], computed.
fn diff_hunks<T: Eq + std::hash::Hash + ?Sized>(old_lines: &[&T], new_lines: &[&T]) -> Vec<Hunk> {
    let (a, b) = intern(old_lines, new_lines);
    let mut sides = Sides {
        a: &a,
        b: &b,
        changed_a: vec![false; a.len() + 2],
        changed_b: vec![false; b.len() + 2],
    };
    sides.histogram(1, a.len(), 1, b.len());
    let (mut changed_a, mut changed_b) = (sides.changed_a, sides.changed_b);
    compact(&a, &mut changed_a, &mut changed_b);
    compact(&b, &mut changed_b, &mut changed_a);
    hunks_of(&changed_a, &changed_b, a.len(), b.len())
}

/// The bytes of a short source line: a list of lines is made room for as if every line were
/// this short, so that growing it (copying it, for a large file) is rare.
const LINE_BYTES_GUESS: usize = 16;

/// The lines of `bytes`, each with its `\n` (the last may lack one): what every line diff
/// of a file's bytes compares.
pub fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut lines = Vec::with_capacity(bytes.len() / LINE_BYTES_GUESS + 1);
    lines.extend(line_bounds(bytes).map(|line| &bytes[line]));
    lines
}

/// The lines of `text`, each with its `\n` (the last may lack one): [`split_lines`] of a
/// text (a line ends at an ASCII byte, so each is a `str`).
pub fn text_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::with_capacity(text.len() / LINE_BYTES_GUESS + 1);
    lines.extend(line_bounds(text.as_bytes()).map(|line| &text[line]));
    lines
}

/// [`text_lines`] of `text` when it has at most `most` lines (one pass: it stops at the
/// first line past them); `None` when it has more.
pub fn lines_at_most(text: &str, most: usize) -> Option<Vec<&str>> {
    let lines: Vec<&str> = line_bounds(text.as_bytes())
        .take(most.saturating_add(1))
        .map(|line| &text[line])
        .collect();
    (lines.len() <= most).then_some(lines)
}

/// Where each line of `bytes` starts ([`split_lines`]' lines as offsets).
pub fn line_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(bytes.len() / LINE_BYTES_GUESS + 1);
    starts.extend(line_bounds(bytes).map(|line| line.start));
    starts
}

/// How many lines `bytes` has ([`split_lines`]'s count, without the list).
pub fn line_count(bytes: &[u8]) -> usize {
    line_bounds(bytes).count()
}

/// Where each line of `bytes` lies, its `\n` included: the one rule of what a line is.
fn line_bounds(bytes: &[u8]) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut ends = newlines(bytes);
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let end = ends.next().map_or(bytes.len(), |at| at + 1);
        let line = start..end;
        start = end;
        Some(line)
    })
}

/// A text split into lines: a `str` or bytes.
pub trait LineText {
    /// Its bytes.
    fn bytes(&self) -> &[u8];
    /// The part of it at `range` (which starts and ends at line boundaries).
    fn part(&self, range: std::ops::Range<usize>) -> &Self;
}

impl LineText for str {
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
    fn part(&self, range: std::ops::Range<usize>) -> &str {
        // A line boundary follows a `\n`: a char boundary.
        self.get(range).unwrap_or_default()
    }
}

impl LineText for [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn part(&self, range: std::ops::Range<usize>) -> &[u8] {
        self.get(range).unwrap_or_default()
    }
}

/// The lines of `new` when `old_lines` are `old`'s, if it has at most `most`: the whole
/// lines the two texts begin and end with in common are taken from `old_lines` (equal lines,
/// wherever their bytes lie, are what a diff compares), so only the middle is split.
pub fn lines_sharing<'t, T: LineText + ?Sized>(
    old: &T,
    old_lines: &[&'t T],
    new: &'t T,
    most: usize,
) -> Option<Vec<&'t T>> {
    let (old_bytes, new_bytes) = (old.bytes(), new.bytes());
    let head = common_head_lines(old_bytes, new_bytes);
    let tail = common_tail_lines(&old_bytes[head..], &new_bytes[head..]);
    let count_to = |lines: &mut dyn Iterator<Item = &&'t T>, bytes: usize| {
        let (mut sum, mut count) = (0, 0);
        for line in lines {
            if sum >= bytes {
                break;
            }
            sum += line.bytes().len();
            count += 1;
        }
        count
    };
    let head_lines = count_to(&mut old_lines.iter(), head);
    let tail_lines = count_to(&mut old_lines.iter().rev(), tail);
    let middle = new.part(head..new_bytes.len() - tail);
    let mut lines =
        Vec::with_capacity(head_lines + middle.bytes().len() / LINE_BYTES_GUESS + tail_lines + 1);
    lines.extend_from_slice(&old_lines[..head_lines]);
    for line in line_bounds(middle.bytes()) {
        if lines.len() >= most {
            return None;
        }
        lines.push(middle.part(line));
    }
    if lines.len() + tail_lines > most {
        return None;
    }
    lines.extend_from_slice(&old_lines[old_lines.len() - tail_lines..]);
    Some(lines)
}

/// The length of the whole lines `a` and `b` begin with in common.
pub fn common_head_lines(a: &[u8], b: &[u8]) -> usize {
    let same = common_prefix(a, b);
    if same == a.len() && same == b.len() {
        return same;
    }
    // Back to the end of the last whole common line (a line break: a char boundary).
    a[..same]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |at| at + 1)
}

/// The length of the whole lines `a` and `b` end with in common.
pub fn common_tail_lines(a: &[u8], b: &[u8]) -> usize {
    let same = common_suffix(a, b);
    let starts_line = |s: &[u8]| same == s.len() || s[s.len() - same - 1] == b'\n';
    if starts_line(a) && starts_line(b) {
        return same;
    }
    // Forward to the first line start inside the common tail (just after a line break).
    a[a.len() - same..]
        .iter()
        .position(|&byte| byte == b'\n')
        .map_or(0, |at| same - at - 1)
}

/// Bytes compared a block at a time (slice equality is `memcmp`) before the last block is
/// compared byte by byte: a byte loop over a large file cost a preflight tens of µs.
const COMPARED_BLOCK: usize = 64;

/// How many bytes `a` and `b` begin with in common.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut at = 0;
    while at + COMPARED_BLOCK <= n && a[at..at + COMPARED_BLOCK] == b[at..at + COMPARED_BLOCK] {
        at += COMPARED_BLOCK;
    }
    at + a[at..n]
        .iter()
        .zip(&b[at..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many bytes `a` and `b` end with in common.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut end = n;
    while end >= COMPARED_BLOCK && a[end - COMPARED_BLOCK..end] == b[end - COMPARED_BLOCK..end] {
        end -= COMPARED_BLOCK;
    }
    (n - end)
        + a[..end]
            .iter()
            .rev()
            .zip(b[..end].iter().rev())
            .take_while(|(x, y)| x == y)
            .count()
}

/// Every byte of a word equal to `\n`.
const NEWLINES: u64 = 0x0a0a_0a0a_0a0a_0a0a;
/// The low seven bits of every byte of a word.
const LOW_SEVEN: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// Where each `\n` of `bytes` lies, in order. Eight bytes at a time: a word's newline bytes
/// are the zero bytes of the word XOR [`NEWLINES`], found exactly (no carry between bytes) by
/// bit arithmetic. On source text, a line every 20 to 40 bytes, this takes two thirds of the
/// time of a `memchr` call per line, and every line index of a large file is built on it.
pub fn newlines(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let (words, rest) = bytes.as_chunks::<8>();
    let rest_at = words.len() * 8;
    words
        .iter()
        .enumerate()
        .flat_map(|(index, word)| {
            let x = u64::from_le_bytes(*word) ^ NEWLINES;
            // The high bit of each byte that is zero in `x`.
            let mut zeros = !(((x & LOW_SEVEN) + LOW_SEVEN) | x | LOW_SEVEN);
            std::iter::from_fn(move || {
                if zeros == 0 {
                    return None;
                }
                let at = index * 8 + (zeros.trailing_zeros() / 8) as usize;
                zeros &= zeros - 1;
                Some(at)
            })
        })
        .chain(
            rest.iter()
                .enumerate()
                .filter(|(_, byte)| **byte == b'\n')
                .map(move |(at, _)| rest_at + at),
        )
}

/// The lines of `new` that changed since `old` (git's hunks between the two), 1-based and
/// inclusive, in order; a pure deletion is the point where the two sides now join,
/// `(n + 1, n)` after line `n` (docs/protocol.md 13.4).
pub fn changed_lines(old: &[u8], new: &[u8]) -> Vec<(i64, i64)> {
    let line = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let (old_lines, new_lines) = (split_lines(old), split_lines(new));
    remembered_hunks(&old_lines, &new_lines, || {
        RecentDiffs::text_key(old, new, old_lines.len(), new_lines.len())
    })
    .into_iter()
    .map(|hunk| (line(hunk.new.start) + 1, line(hunk.new.end)))
    .collect()
}

/// [`git_hunks`] as diff operations (equal runs between the hunks) of two texts whose lines
/// (by [`split_lines`] or [`text_lines`]) are `old_lines` and `new_lines`: what every line
/// mapping of `coord` is built on. A large pair is remembered by the texts' digests.
pub(crate) fn text_line_ops<T: Eq + std::hash::Hash + AsRef<[u8]> + ?Sized>(
    (old, old_lines): (&[u8], &[&T]),
    (new, new_lines): (&[u8], &[&T]),
) -> Vec<DiffOp> {
    let hunks = remembered_hunks(old_lines, new_lines, || {
        RecentDiffs::text_key(old, new, old_lines.len(), new_lines.len())
    });
    ops_of(hunks, old_lines.len())
}

/// The diff operations of `hunks` over texts of which the old has `old_count` lines.
fn ops_of(hunks: Vec<Hunk>, old_count: usize) -> Vec<DiffOp> {
    let mut ops = Vec::new();
    let (mut old_at, mut new_at) = (0usize, 0usize);
    for Hunk { old, new } in hunks {
        if old.start > old_at {
            ops.push(DiffOp::Equal {
                old_index: old_at,
                new_index: new_at,
                len: old.start - old_at,
            });
        }
        ops.push(match (old.is_empty(), new.is_empty()) {
            (true, _) => DiffOp::Insert {
                old_index: old.start,
                new_index: new.start,
                new_len: new.len(),
            },
            (false, true) => DiffOp::Delete {
                old_index: old.start,
                old_len: old.len(),
                new_index: new.start,
            },
            (false, false) => DiffOp::Replace {
                old_index: old.start,
                old_len: old.len(),
                new_index: new.start,
                new_len: new.len(),
            },
        });
        (old_at, new_at) = (old.end, new.end);
    }
    if old_count > old_at {
        ops.push(DiffOp::Equal {
            old_index: old_at,
            new_index: new_at,
            len: old_count - old_at,
        });
    }
    ops
}

/// Each line as a small number, equal lines equal numbers.
fn intern<'t, T: Eq + std::hash::Hash + ?Sized>(
    old_lines: &[&'t T],
    new_lines: &[&'t T],
) -> (Vec<u32>, Vec<u32>) {
    let mut ids: rustc_hash::FxHashMap<&'t T, u32> =
        rustc_hash::FxHashMap::with_capacity_and_hasher(
            old_lines.len() + new_lines.len(),
            rustc_hash::FxBuildHasher,
        );
    let mut id_of = |line: &'t T| -> u32 {
        let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        *ids.entry(line).or_insert(next)
    };
    let a = old_lines.iter().map(|line| id_of(line)).collect();
    let b = new_lines.iter().map(|line| id_of(line)).collect();
    (a, b)
}

/// git's `max_chain_length`: a range whose common lines all repeat more often than this is
/// diffed by the classic algorithm.
const MAX_CHAIN_LENGTH: usize = 64;

/// The two texts and which of their lines changed. `changed_*[i + 1]` is line `i` (0-based),
/// with a `false` sentinel on either side, as xdiff's `rchg`.
struct Sides<'t> {
    a: &'t [u32],
    b: &'t [u32],
    changed_a: Vec<bool>,
    changed_b: Vec<bool>,
}

/// The longest common region found, 1-based inclusive line numbers (`begin1 == 0`: none).
#[derive(Default)]
struct Region {
    begin1: usize,
    end1: usize,
    begin2: usize,
    end2: usize,
}

/// What `find_lcs` decided.
enum Lcs {
    /// Diff the range with the classic algorithm.
    Fallback,
    /// The region (its `begin1 == 0` when nothing is common).
    Found(Region),
}

impl Sides<'_> {
    /// xhistogram's `histogram_diff` over 1-based `line1..line1 + count1` of the old text
    /// and `line2..line2 + count2` of the new.
    fn histogram(&mut self, line1: usize, count1: usize, line2: usize, count2: usize) {
        let (mut line1, mut count1, mut line2, mut count2) = (line1, count1, line2, count2);
        loop {
            if count1 == 0 && count2 == 0 {
                return;
            }
            if count1 == 0 {
                self.changed_b[line2..line2 + count2].fill(true);
                return;
            }
            if count2 == 0 {
                self.changed_a[line1..line1 + count1].fill(true);
                return;
            }
            match self.find_lcs(line1, count1, line2, count2) {
                Lcs::Fallback => {
                    self.classic(line1, count1, line2, count2);
                    return;
                }
                Lcs::Found(lcs) if lcs.begin1 == 0 && lcs.begin2 == 0 => {
                    self.changed_a[line1..line1 + count1].fill(true);
                    self.changed_b[line2..line2 + count2].fill(true);
                    return;
                }
                Lcs::Found(lcs) => {
                    self.histogram(line1, lcs.begin1 - line1, line2, lcs.begin2 - line2);
                    let (end1, end2) = (line1 + count1 - 1, line2 + count2 - 1);
                    count1 = end1 - lcs.end1;
                    line1 = lcs.end1 + 1;
                    count2 = end2 - lcs.end2;
                    line2 = lcs.end2 + 1;
                }
            }
        }
    }

    /// xhistogram's `find_lcs` (with `scanA` and `try_lcs`).
    fn find_lcs(&self, line1: usize, count1: usize, line2: usize, count2: usize) -> Lcs {
        let end1 = line1 + count1 - 1;
        let end2 = line2 + count2 - 1;
        let a = |line: usize| self.a[line - 1];
        let b = |line: usize| self.b[line - 1];
        // scanA: per distinct line, its first occurrence and count; per line, the next
        // occurrence of the same line (0: none).
        let mut records: HashMap<u32, (usize, usize)> = HashMap::new();
        let mut next = vec![0usize; count1];
        for ptr in (line1..=end1).rev() {
            let record = records.entry(a(ptr)).or_insert((0, 0));
            if record.1 > 0 {
                next[ptr - line1] = record.0;
            }
            record.0 = ptr;
            record.1 += 1;
        }
        let count_of = |ptr: usize| records.get(&a(ptr)).map_or(0, |r| r.1);
        let next_of = |ptr: usize| next[ptr - line1];
        let mut lcs = Region::default();
        let mut best_count = MAX_CHAIN_LENGTH + 1;
        let mut has_common = false;
        let mut b_ptr = line2;
        while b_ptr <= end2 {
            let mut b_next = b_ptr + 1;
            if let Some(&(first, count)) = records.get(&b(b_ptr)) {
                if count > best_count {
                    has_common = true;
                } else {
                    has_common = true;
                    let mut at = first;
                    loop {
                        let mut np = next_of(at);
                        let (mut as_, mut bs) = (at, b_ptr);
                        let (mut ae, mut be) = (at, b_ptr);
                        let mut rc = count;
                        while line1 < as_ && line2 < bs && a(as_ - 1) == b(bs - 1) {
                            as_ -= 1;
                            bs -= 1;
                            if 1 < rc {
                                rc = rc.min(count_of(as_));
                            }
                        }
                        while ae < end1 && be < end2 && a(ae + 1) == b(be + 1) {
                            ae += 1;
                            be += 1;
                            if 1 < rc {
                                rc = rc.min(count_of(ae));
                            }
                        }
                        if b_next <= be {
                            b_next = be + 1;
                        }
                        if lcs.end1 - lcs.begin1 < ae - as_ || rc < best_count {
                            lcs = Region {
                                begin1: as_,
                                end1: ae,
                                begin2: bs,
                                end2: be,
                            };
                            best_count = rc;
                        }
                        if np == 0 {
                            break;
                        }
                        while np != 0 && np <= ae {
                            np = next_of(np);
                        }
                        if np == 0 {
                            break;
                        }
                        at = np;
                    }
                }
            }
            b_ptr = b_next;
        }
        if has_common && MAX_CHAIN_LENGTH < best_count {
            Lcs::Fallback
        } else {
            Lcs::Found(lcs)
        }
    }

    /// The classic diff of a range (git: Myers through `xdl_fall_back_diff`).
    fn classic(&mut self, line1: usize, count1: usize, line2: usize, count2: usize) {
        let before = &self.a[line1 - 1..line1 - 1 + count1];
        let after = &self.b[line2 - 1..line2 - 1 + count2];
        let mut input: InternedInput<u32> = InternedInput::default();
        input.update_before(before.iter().copied());
        input.update_after(after.iter().copied());
        let diff = Diff::compute(Algorithm::Myers, &input);
        for hunk in diff.hunks() {
            for i in hunk.before {
                self.changed_a[line1 + to_usize(i)] = true;
            }
            for i in hunk.after {
                self.changed_b[line2 + to_usize(i)] = true;
            }
        }
    }
}

fn to_usize(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// A group of changed lines of one side: `[start, end)`, 0-based.
#[derive(Clone, Copy)]
struct Group {
    start: usize,
    end: usize,
}

/// `changed[i + 1]` of line `i`.
fn is_changed(changed: &[bool], line: usize) -> bool {
    changed[line + 1]
}

fn set_changed(changed: &mut [bool], line: usize, value: bool) {
    changed[line + 1] = value;
}

fn group_init(changed: &[bool]) -> Group {
    let mut end = 0;
    while changed[end + 1] {
        end += 1;
    }
    Group { start: 0, end }
}

/// The next group (false at the end).
fn group_next(changed: &[bool], lines: usize, g: &mut Group) -> bool {
    if g.end == lines {
        return false;
    }
    g.start = g.end + 1;
    g.end = g.start;
    while changed[g.end + 1] {
        g.end += 1;
    }
    true
}

/// The previous group (false at the start).
fn group_previous(changed: &[bool], g: &mut Group) -> bool {
    if g.start == 0 {
        return false;
    }
    g.end = g.start - 1;
    g.start = g.end;
    while changed[g.start] {
        g.start -= 1;
    }
    true
}

fn slide_down(lines: &[u32], changed: &mut [bool], g: &mut Group) -> bool {
    if g.end < lines.len() && lines[g.start] == lines[g.end] {
        set_changed(changed, g.start, false);
        set_changed(changed, g.end, true);
        g.start += 1;
        g.end += 1;
        while changed[g.end + 1] {
            g.end += 1;
        }
        true
    } else {
        false
    }
}

fn slide_up(lines: &[u32], changed: &mut [bool], g: &mut Group) -> bool {
    if g.start > 0 && lines[g.start - 1] == lines[g.end - 1] {
        g.start -= 1;
        g.end -= 1;
        set_changed(changed, g.start, true);
        set_changed(changed, g.end, false);
        while changed[g.start] {
            g.start -= 1;
        }
        true
    } else {
        false
    }
}

/// xdiff's `xdl_change_compact` of side `lines` against the other side, no heuristic.
fn compact(lines: &[u32], changed: &mut [bool], other: &mut [bool]) {
    let other_lines = other.len() - 2;
    let mut g = group_init(changed);
    let mut go = group_init(other);
    loop {
        if g.end != g.start {
            let mut earliest_end;
            let mut end_matching_other: Option<usize>;
            loop {
                let size = g.end - g.start;
                end_matching_other = None;
                while slide_up(lines, changed, &mut g) {
                    group_previous(other, &mut go);
                }
                earliest_end = g.end;
                if go.end > go.start {
                    end_matching_other = Some(g.end);
                }
                while slide_down(lines, changed, &mut g) {
                    group_next(other, other_lines, &mut go);
                    if go.end > go.start {
                        end_matching_other = Some(g.end);
                    }
                }
                if size == g.end - g.start {
                    break;
                }
            }
            if g.end != earliest_end && end_matching_other.is_some() {
                while go.end == go.start {
                    slide_up(lines, changed, &mut g);
                    group_previous(other, &mut go);
                }
            }
        }
        if !group_next(changed, lines.len(), &mut g) {
            break;
        }
        group_next(other, other_lines, &mut go);
    }
}

/// The hunks of the two sides' changed lines.
fn hunks_of(changed_a: &[bool], changed_b: &[bool], n: usize, m: usize) -> Vec<Hunk> {
    let mut hunks = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        let a_changed = i < n && is_changed(changed_a, i);
        let b_changed = j < m && is_changed(changed_b, j);
        if !a_changed && !b_changed {
            i += 1;
            j += 1;
            continue;
        }
        let (start_i, start_j) = (i, j);
        while i < n && is_changed(changed_a, i) {
            i += 1;
        }
        while j < m && is_changed(changed_b, j) {
            j += 1;
        }
        hunks.push(Hunk {
            old: start_i..i,
            new: start_j..j,
        });
    }
    hunks
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::git::Git;

    /// git's `-U0` hunks of two texts, as `git diff --histogram` without the indent heuristic
    /// (the diff merge-ort runs; texts under 1 KiB, so `-U0`'s tail trimming never applies).
    fn gits(old: &str, new: &str, dir: &std::path::Path) -> Vec<Hunk> {
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, old).unwrap();
        std::fs::write(&b, new).unwrap();
        // `diff --no-index` exits 1 when the files differ.
        let out = Git::new(dir)
            .ok_codes(&[1])
            .text(&[
                "diff",
                "--no-index",
                "--no-color",
                "--histogram",
                "--no-indent-heuristic",
                "-U0",
                "--",
                "a",
                "b",
            ])
            .expect("git runs");
        let side = |part: &str| {
            let (start, count) = match part.split_once(',') {
                Some((s, c)) => (s.parse::<usize>().unwrap(), c.parse::<usize>().unwrap()),
                None => (part.parse::<usize>().unwrap(), 1),
            };
            let start = if count == 0 { start } else { start - 1 };
            start..start + count
        };
        out.lines()
            .filter_map(|line| line.strip_prefix("@@ -"))
            .map(|rest| {
                let mut parts = rest.split(' ');
                let old = side(parts.next().unwrap());
                let new = side(parts.next().unwrap().trim_start_matches('+'));
                Hunk { old, new }
            })
            .collect()
    }

    #[test]
    fn changed_lines_are_the_new_side_of_each_hunk_and_a_deletion_is_a_point() {
        assert_eq!(changed_lines(b"a\nb\nc\n", b"a\nB\nX\nc\n"), [(2, 3)]);
        assert_eq!(changed_lines(b"a\nb\nc\n", b"a\nc\n"), [(2, 1)]);
        assert_eq!(changed_lines(b"a\nb\n", b""), [(1, 0)], "all deleted");
        assert_eq!(changed_lines(b"", b"x\n\xff"), [(1, 2)], "bytes, not text");
        assert!(changed_lines(b"same\n", b"same\n").is_empty());
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            usize::try_from(self.0 % n as u64).unwrap()
        }
    }

    /// Random texts of few distinct lines (so that alignments are ambiguous) and random
    /// insertions, deletions and replacements: the hunks are git's, every one.
    #[test]
    fn the_hunks_are_gits_on_random_texts() {
        let dir = tempfile::tempdir().unwrap();
        let alphabet = [
            "a\n",
            "b\n",
            "}\n",
            "\n",
            "    x = 1\n",
            "def f():\n",
            "    return None\n",
            "c\n",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut differ = Vec::new();
        for case in 0..400 {
            let len = 3 + rng.below(40);
            let old: Vec<&str> = (0..len).map(|_| alphabet[rng.below(8)]).collect();
            let mut new = old.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(new.len() + 1);
                match rng.below(3) {
                    0 => {
                        for _ in 0..1 + rng.below(4) {
                            new.insert(at, alphabet[rng.below(8)]);
                        }
                    }
                    1 if at < new.len() => {
                        new.remove(at);
                    }
                    _ if at < new.len() => new[at] = alphabet[rng.below(8)],
                    _ => {}
                }
            }
            let ours = git_hunks(&old, &new);
            let theirs = gits(&old.concat(), &new.concat(), dir.path());
            if ours != theirs {
                differ.push((case, old.concat(), new.concat(), ours, theirs));
            }
        }
        assert!(
            differ.is_empty(),
            "{} differ: {:?}",
            differ.len(),
            differ.first()
        );
    }

    /// The ambiguous insertion of issue 35: a method inserted between two methods whose
    /// tails are alike. Histogram, then the slide, put it where git's merge does.
    #[test]
    fn a_remembered_diff_is_the_diff_of_those_texts() {
        let old: String = (0..3_000).map(|n| format!("line {}\n", n % 700)).collect();
        let mut new = old.replacen("line 5\n", "line five\n", 3);
        let (old_lines, new_lines) = (text_lines(&old), text_lines(&new));
        let computed = diff_hunks(&old_lines, &new_lines);
        assert_eq!(git_hunks(&old_lines, &new_lines), computed);
        assert_eq!(git_hunks(&old_lines, &new_lines), computed, "remembered");
        new.push_str("one more\n");
        let new_lines = text_lines(&new);
        assert_eq!(
            git_hunks(&old_lines, &new_lines),
            diff_hunks(&old_lines, &new_lines),
            "another text is another diff"
        );
    }

    /// Keyed by the whole texts, a large diff is the same diff, remembered or not, and two
    /// texts whose lines differ only where they are split are never taken for each other.
    #[test]
    fn a_diff_remembered_by_its_texts_is_the_diff_of_their_lines() {
        let old: String = (0..3_000).map(|n| format!("row {}\n", n % 900)).collect();
        let new = old.replacen("row 7\n", "row seven\n", 2);
        let (old_lines, new_lines) = (text_lines(&old), text_lines(&new));
        let expected = ops_of(diff_hunks(&old_lines, &new_lines), old_lines.len());
        for round in ["computed", "remembered"] {
            let ops = text_line_ops((old.as_bytes(), &old_lines), (new.as_bytes(), &new_lines));
            assert_eq!(ops, expected, "{round}");
        }
        let expected = changed_lines(old.as_bytes(), new.as_bytes());
        assert_eq!(changed_lines(old.as_bytes(), new.as_bytes()), expected);
        let fresh: Vec<(i64, i64)> = diff_hunks(&old_lines, &new_lines)
            .into_iter()
            .map(|h| (h.new.start as i64 + 1, h.new.end as i64))
            .collect();
        assert_eq!(expected, fresh);
    }

    #[test]
    fn lines_split_as_split_inclusive_splits_them_and_are_counted() {
        for text in ["", "a", "a\n", "a\nb", "a\nb\n", "\n\n", "\n", "x\n\ny"] {
            let expected: Vec<&str> = text.split_inclusive('\n').collect();
            assert_eq!(text_lines(text), expected, "{text:?}");
            let bytes: Vec<&[u8]> = expected.iter().map(|l| l.as_bytes()).collect();
            assert_eq!(split_lines(text.as_bytes()), bytes, "{text:?}");
            for count in 0..4 {
                assert_eq!(
                    lines_at_most(text, count).is_none(),
                    expected.len() > count,
                    "{text:?} more than {count}"
                );
            }
            assert_eq!(lines_at_most(text, 4), Some(expected.clone()), "{text:?}");
        }
    }

    /// The lines of a new text taken partly from the old text's are its own lines.
    #[test]
    fn shared_lines_are_the_new_texts_lines() {
        let long: String = (0..200).map(|n| format!("line {n}\n")).collect();
        let cases: Vec<(String, String)> = vec![
            ("a\nb\nc\n".into(), "a\nB\nc\n".into()),
            ("a\nb\nc".into(), "a\nb\nc\n".into()),
            ("a\nb\nc".into(), "x\na\nb\nc".into()),
            ("".into(), "x\n".into()),
            ("x\n".into(), "".into()),
            ("same\nsame\n".into(), "same\nsame\nsame\n".into()),
            (
                long.clone(),
                long.replace("line 100\n", "line hundred\nmore\n"),
            ),
            (long.clone(), long.replace("line 7\n", "")),
            (long.clone(), format!("{long}tail without newline")),
            (format!("{long}x"), format!("{long}y")),
        ];
        for (old, new) in cases {
            let old_lines = text_lines(&old);
            assert_eq!(
                lines_sharing(old.as_str(), &old_lines, new.as_str(), usize::MAX),
                Some(text_lines(&new)),
                "{old:?} -> {new:?}"
            );
        }
    }

    /// Block-wise prefix and suffix lengths are the byte-wise ones.
    #[test]
    fn common_prefix_and_suffix_by_blocks() {
        let base: Vec<u8> = (0..300u32).map(|n| (n % 251) as u8).collect();
        for at in [0, 1, 63, 64, 65, 128, 200, 299] {
            let mut other = base.clone();
            other[at] ^= 0xff;
            assert_eq!(common_prefix(&base, &other), at, "prefix, change at {at}");
            assert_eq!(
                common_suffix(&base, &other),
                299 - at,
                "suffix, change at {at}"
            );
            assert_eq!(common_prefix(&base, &base[..at]), at);
            assert_eq!(common_suffix(&base, &base[at..]), 300 - at);
        }
    }

    /// The word-at-a-time newline finder finds exactly the `\n` bytes, whatever the bytes
    /// around them (bytes that differ from `\n` in one bit, the high bit included).
    #[test]
    fn newlines_are_every_newline_byte() {
        let mut bytes: Vec<u8> = (0..=255u8).cycle().take(1_000).collect();
        bytes.extend_from_slice(b"\n\n\x8a\x0b\n\x09\n");
        for len in [0, 1, 7, 8, 9, 15, 16, 17, bytes.len()] {
            let slice = &bytes[..len];
            let expected: Vec<usize> = (0..len).filter(|&at| slice[at] == b'\n').collect();
            assert_eq!(newlines(slice).collect::<Vec<_>>(), expected, "{len} bytes");
        }
    }

    #[test]
    fn an_ambiguous_insertion_is_placed_where_git_places_it() {
        let dir = tempfile::tempdir().unwrap();
        let old = "class C:\n    def a(self):\n        x = 1\n        return None\n\n    def c(self):\n        return None\n";
        let new = "class C:\n    def a(self):\n        x = 1\n        return None\n\n    def b(self):\n        y = 2\n        return None\n\n    def c(self):\n        return None\n";
        let lines = |t: &'static str| t.split_inclusive('\n').collect::<Vec<_>>();
        let ours = git_hunks(&lines(old), &lines(new));
        assert_eq!(ours, gits(old, new, dir.path()));
        assert_eq!(
            ours,
            [Hunk {
                old: 5..5,
                new: 5..9
            }],
            "{ours:?}"
        );
    }
}
