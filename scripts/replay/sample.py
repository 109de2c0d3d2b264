#!/usr/bin/env python3
"""Picks a small sample of mined pairs for the committed test fixture.

Usage:
    sample.py --out tests/fixtures/replay/pairs.jsonl [--per-language 6] [--max-bytes 12000] \
        /work/replay-data/part*.jsonl

Each file is first trimmed to the lines around what the two patches change: the leading and
trailing lines that are the same in every state of the file (base, A, B) are dropped but for
--keep lines of context, which leaves git's merge of the pair as it was (the replay recomputes
the truth and the fixture's test checks that it still agrees with the original merge).
Per language: up to half conflicting pairs, the rest clean ones that share a file (the pairs a
predictor can get wrong) before the others, smallest first among those under --max-bytes
(their trimmed JSON line), so the fixture stays a few hundred KB.
"""

import argparse
import json


def trim(pair, keep):
    """`pair` with each file cut to the lines its states do not share at both ends, ± keep."""
    for states in pair["files"].values():
        texts = [t for t in states.values() if t is not None]
        if len(texts) < 2:
            continue
        split = [t.splitlines(keepends=True) for t in texts]
        shortest = min(len(lines) for lines in split)
        head = 0
        while head < shortest and all(lines[head] == split[0][head] for lines in split):
            head += 1
        tail = 0
        while tail < shortest - head and all(lines[-1 - tail] == split[0][-1 - tail] for lines in split):
            tail += 1
        cut_head = max(0, head - keep)
        cut_tail = max(0, tail - keep)
        for key, text in states.items():
            if text is None:
                continue
            lines = text.splitlines(keepends=True)
            states[key] = "".join(lines[cut_head:len(lines) - cut_tail])
    return pair


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("inputs", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument("--per-language", type=int, default=6)
    parser.add_argument("--max-bytes", type=int, default=12_000)
    parser.add_argument("--keep", type=int, default=15, help="context lines kept at each end")
    args = parser.parse_args()
    by_language = {}
    for name in args.inputs:
        with open(name) as f:
            for line in f:
                pair = trim(json.loads(line), args.keep)
                line = json.dumps(pair) + "\n"
                if len(line) > args.max_bytes:
                    continue
                by_language.setdefault(pair["language"], []).append((len(line), pair["id"], line))
    chosen = []
    for language in sorted(by_language):
        pairs = sorted(by_language[language])
        conflicting = [p for p in pairs if json.loads(p[2])["truth"]]
        clean = [p for p in pairs if not json.loads(p[2])["truth"]]
        take = conflicting[: args.per_language // 2]
        # Clean pairs that share a file are the ones a predictor can get wrong: prefer them.
        sharing = [p for p in clean if any(
            "a" in f and "b" in f for f in json.loads(p[2])["files"].values())]
        rest = [p for p in clean if p not in sharing]
        take += (sharing + rest)[: args.per_language - len(take)]
        chosen += take
    with open(args.out, "w") as out:
        for _, _, line in chosen:
            out.write(line if line.endswith("\n") else line + "\n")
    print(f"{len(chosen)} pairs, {sum(len(c[2]) for c in chosen)} bytes")


if __name__ == "__main__":
    main()
