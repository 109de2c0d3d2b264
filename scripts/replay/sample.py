#!/usr/bin/env python3
"""Picks a small sample of mined pairs for the committed test fixture.

Usage:
    sample.py --out tests/fixtures/replay/pairs.jsonl [--per-language 6] [--max-bytes 12000] \
        /work/replay-data/part*.jsonl

Per language: up to half conflicting pairs, the rest clean, the smallest pairs first among
those under --max-bytes (their JSON line), so the fixture stays a few hundred KB.
"""

import argparse
import json


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("inputs", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument("--per-language", type=int, default=6)
    parser.add_argument("--max-bytes", type=int, default=12_000)
    args = parser.parse_args()
    by_language = {}
    for name in args.inputs:
        with open(name) as f:
            for line in f:
                if len(line) > args.max_bytes:
                    continue
                pair = json.loads(line)
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
