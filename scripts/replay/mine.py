#!/usr/bin/env python3
"""Mines pairs of real, parallel patches for `wit-bench replay` from merge commits.

A merge commit M with parents P1, P2 and one merge base B gives a pair: patch A = B..P1,
patch B = B..P2 (two agents who started from the same tree), and the truth: whether
`git merge-tree --write-tree P1 P2` reports a conflict in a file the pair keeps.

Usage:
    mine.py --out /work/replay-data/pairs.jsonl \
        --repo requests=/work/.mirror/psf+requests/repo [--repo ...] \
        [--merges 1500] [--per-repo 120] [--seed 1]

Each output line is one pair:
    {"id", "repo", "merge", "base", "a", "b", "language", "truth", "conflicted": [paths],
     "files": {path: {"base": text|null, "a": text|null, "b": text|null}}}
with `a`/`b` present only for the files that side changed (null = deleted or absent).

Filters (each pair is skipped, never trimmed, so the truth stays git's):
- merges with exactly two parents and exactly one merge base (no criss-cross merges);
- only files of languages wit analyses (docs/protocol.md 2.3, 11.1); other files of the merge
  are ignored, and the truth counts only conflicts in the kept files;
- both sides change at least one kept file;
- no rename or copy of a kept file on either side (git's rename detection would pair texts
  the replay sends as separate files), no type changes, no submodules;
- vendored or generated paths (vendor/, node_modules/, third_party/, dist/, *.min.js);
- every kept text at most 200 KB, valid UTF-8, no line over 2,000 characters;
- at most 30 kept files and 2,000 changed lines a side;
- the same pair of patches once per repository (repeated merges of one branch).
Pairs are taken newest merge first; `--per-repo` keeps every conflicting pair found and fills
up with clean ones, so positives are not drowned (the report gives the class balance).
"""

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys

LANGUAGES = {
    ".py": "python", ".pyi": "python",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescript",
    ".js": "typescript", ".jsx": "typescript", ".mjs": "typescript", ".cjs": "typescript",
}
SKIPPED_DIRS = ("vendor/", "node_modules/", "third_party/", "dist/")
MAX_FILE_BYTES = 200_000
MAX_LINE_CHARS = 2_000
MAX_FILES = 30
MAX_CHANGED_LINES = 2_000


def language_of(path):
    """The language family of `path`, or None when wit does not analyse it."""
    if path.endswith(".min.js") or any(("/" + path).find("/" + d) >= 0 for d in SKIPPED_DIRS):
        return None
    return LANGUAGES.get(os.path.splitext(path)[1])


class Git:
    """One repository: plain commands and a persistent `cat-file --batch`."""

    def __init__(self, path):
        self.path = path
        self.batch = subprocess.Popen(
            ["git", "-C", path, "cat-file", "--batch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, *args, ok=(0,)):
        done = subprocess.run(["git", "-C", self.path, *args], capture_output=True)
        if done.returncode not in ok:
            raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace')}")
        return done.returncode, done.stdout.decode("utf-8", errors="replace")

    def blob(self, sha):
        self.batch.stdin.write(sha.encode() + b"\n")
        self.batch.stdin.flush()
        header = self.batch.stdout.readline().split()
        if len(header) < 3:
            return None
        size = int(header[2])
        data = self.batch.stdout.read(size + 1)[:-1]
        return data


def side_changes(git, base, tip):
    """{path: (old_sha, new_sha, status)} of kept files, or None when the side is unusable."""
    _, raw = git.run("diff", "--raw", "-M", "--no-abbrev", base, tip)
    changes = {}
    for line in raw.splitlines():
        meta, _, paths = line.partition("\t")
        fields = meta.split()
        if len(fields) < 5:
            continue
        old_mode, new_mode, old_sha, new_sha, status = fields[0][1:], fields[1], fields[2], fields[3], fields[4]
        names = paths.split("\t")
        if any(n.startswith('"') for n in names):
            if any(language_of(n.strip('"')) for n in names):
                return None
            continue
        if not any(language_of(n) for n in names):
            continue
        if status[0] in "RCT" or "160000" in (old_mode, new_mode):
            return None
        changes[names[0]] = (old_sha, new_sha, status[0])
    return changes


def changed_lines(git, base, tip, paths):
    _, out = git.run("diff", "--numstat", "--no-renames", base, tip, "--", *paths)
    total = 0
    for line in out.splitlines():
        added, deleted, _ = line.split("\t", 2)
        if added == "-":
            return None
        total += int(added) + int(deleted)
    return total


def text_of(git, sha):
    """The blob's text, None for the null id, False when it fails a filter."""
    if set(sha) == {"0"}:
        return None
    data = git.blob(sha)
    if data is None or len(data) > MAX_FILE_BYTES:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if any(len(line) > MAX_LINE_CHARS for line in text.splitlines()):
        return False
    return text


def pair_of(git, repo_name, merge, p1, p2, seen, skipped, want_clean):
    _, bases = git.run("merge-base", "--all", p1, p2, ok=(0, 1))
    bases = bases.split()
    if len(bases) != 1:
        skipped["merge base"] += 1
        return None
    base = bases[0]
    a = side_changes(git, base, p1)
    b = side_changes(git, base, p2)
    if a is None or b is None:
        skipped["rename, type change or submodule"] += 1
        return None
    if not a or not b:
        skipped["a side changes no kept file"] += 1
        return None
    if len(a) > MAX_FILES or len(b) > MAX_FILES:
        skipped["too many files"] += 1
        return None
    key = hashlib.sha1(json.dumps([sorted(a.items()), sorted(b.items())]).encode()).hexdigest()
    if key in seen:
        skipped["duplicate"] += 1
        return None
    seen.add(key)
    for tip, side in ((p1, a), (p2, b)):
        lines = changed_lines(git, base, tip, sorted(side))
        if lines is None or lines > MAX_CHANGED_LINES:
            skipped["too many changed lines"] += 1
            return None
    code, out = git.run("merge-tree", "--write-tree", "--name-only", "--no-messages", p1, p2, ok=(0, 1))
    conflicted = sorted(set(out.splitlines()[1:])) if code == 1 else []
    kept_conflicts = [p for p in conflicted if p in set(a) | set(b)]
    if not kept_conflicts and not want_clean:
        skipped["clean, enough found"] += 1
        return None
    files = {}
    for path in sorted(set(a) | set(b)):
        old_sha = (a.get(path) or b.get(path))[0]
        entry = {"base": text_of(git, old_sha)}
        for name, side in (("a", a), ("b", b)):
            if path in side:
                entry[name] = text_of(git, side[path][1])
        if any(v is False for v in entry.values()):
            skipped["file too large, binary or minified"] += 1
            return None
        files[path] = entry
    counts = {}
    for path in files:
        lang = language_of(path)
        counts[lang] = counts.get(lang, 0) + 1
    language = max(sorted(counts), key=lambda l: counts[l])
    return {
        "id": f"{repo_name}-{merge[:10]}",
        "repo": repo_name,
        "merge": merge,
        "base": base,
        "a": p1,
        "b": p2,
        "language": language,
        "truth": bool(kept_conflicts),
        "conflicted": kept_conflicts,
        "files": files,
    }


def mine(repo_name, path, merges, per_repo, out, rng):
    git = Git(path)
    _, listing = git.run("rev-list", "--merges", "--parents", "-n", str(merges), "HEAD")
    seen = set()
    skipped = {k: 0 for k in ("merge base", "rename, type change or submodule",
                              "a side changes no kept file", "too many files", "duplicate",
                              "too many changed lines", "file too large, binary or minified",
                              "octopus", "clean, enough found",
                              "git error (object missing from the snapshot)")}
    conflicting, clean = [], []
    for line in listing.splitlines():
        ids = line.split()
        if len(ids) != 3:
            skipped["octopus"] += 1
            continue
        try:
            pair = pair_of(git, repo_name, *ids, seen, skipped, len(clean) < 3 * per_repo)
        except RuntimeError:
            skipped["git error (object missing from the snapshot)"] += 1
            continue
        if pair is None:
            continue
        (conflicting if pair["truth"] else clean).append(pair)
        if len(conflicting) >= per_repo:
            break
    keep = conflicting[:per_repo]
    rng.shuffle(clean)
    keep += clean[: max(0, per_repo - len(keep))]
    for pair in keep:
        out.write(json.dumps(pair) + "\n")
    print(f"{repo_name}: {len(conflicting)} conflicting, {len(clean)} clean found, "
          f"kept {len(keep)}; skipped {skipped}", file=sys.stderr)
    return len(keep)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--repo", action="append", required=True, metavar="NAME=PATH")
    parser.add_argument("--merges", type=int, default=1500, help="newest merges scanned a repository")
    parser.add_argument("--per-repo", type=int, default=120, help="pairs kept a repository")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    total = 0
    with open(args.out, "w") as out:
        for spec in args.repo:
            name, _, path = spec.partition("=")
            total += mine(name, path, args.merges, args.per_repo, out, rng)
    print(f"{total} pairs written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
