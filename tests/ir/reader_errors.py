#!/usr/bin/env python3
"""Broken IR text gives located errors from `tilec opt`, never a crash or a silent failure.

Starts from printed IR (the tile-level IR of stdlib/kernels/gemm.tile and softmax.tile,
and, where tilec has the GPU passes, their thread-level IR for sm_80) and feeds
`tilec opt - --passes=` with: the text cut at many points; single lines deleted,
duplicated or swapped; characters replaced by punctuation, digits, letters; tokens
doubled. Seeded, so a failure reproduces. Each run must exit 0 (the text was still
valid IR) or 1 with an error message on stderr, which for a syntax error is located
(<stdin>:LINE:COL: error: ...) and for IR that reads but does not verify names the
line of the offending node. Exit status 2 (internal error), a signal, or exit 1
without a message fails the test.
Exit status 0 when every case behaves, 1 otherwise.
"""

import argparse
import os
import random
import re
import subprocess
import sys

LOCATED = re.compile(r"^<stdin>:\d+:\d+: error: ", re.M)
NOT_VERIFIED = re.compile(r"tilec: error: <stdin>: the IR does not verify")


def run_opt(tilec, text):
    p = subprocess.run([tilec, "opt", "-", "--passes="], input=text, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr


def mutations(text, rng, count):
    lines = text.splitlines(True)
    for k in range(count):
        kind = k % 6
        if kind == 0:  # cut
            yield "cut", text[: rng.randrange(len(text))]
        elif kind == 1:  # delete a line
            i = rng.randrange(len(lines))
            yield "delete line %d" % (i + 1), "".join(lines[:i] + lines[i + 1 :])
        elif kind == 2:  # duplicate a line
            i = rng.randrange(len(lines))
            yield "duplicate line %d" % (i + 1), "".join(lines[: i + 1] + lines[i:])
        elif kind == 3:  # swap two lines
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            ls = list(lines)
            ls[i], ls[j] = ls[j], ls[i]
            yield "swap lines %d and %d" % (i + 1, j + 1), "".join(ls)
        elif kind == 4:  # replace one character
            i = rng.randrange(len(text))
            c = rng.choice("(){}[]<>,:=+-*/%?!~&|^@\"\\.0123456789azAZ_ #\x01é")
            yield "char %d -> %r" % (i, c), text[:i] + c + text[i + 1 :]
        else:  # double a span
            i = rng.randrange(len(text))
            j = min(len(text), i + rng.randrange(1, 12))
            yield "double span %d..%d" % (i, j), text[:j] + text[i:j] + text[j:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--cases", type=int, default=120, help="mutations per input text")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    texts = []
    for name in ["gemm.tile", "softmax.tile"]:
        path = os.path.join(args.root, "stdlib", "kernels", name)
        p = subprocess.run([args.tilec, path, "--emit=tir"], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"FAIL: tilec {name} --emit=tir:\n{p.stderr}")
            return 1
        texts.append((name + " tile level", p.stdout))
        p = subprocess.run([args.tilec, path, "--target=sm_80", "--emit=ptx", "-o", os.devnull,
                            "--print-after=place-barriers"], capture_output=True, text=True)
        if p.returncode == 0 and "// ---- IR after" in p.stderr:
            texts.append((name + " thread level (sm_80)", p.stderr))
        else:
            print(f"note: no thread-level IR of {name} (a build without the GPU passes?); skipped")

    rng = random.Random(args.seed)
    bad, total = 0, 0
    for label, text in texts:
        rc, err = run_opt(args.tilec, text)
        if rc != 0:
            print(f"FAIL {label}: the unmutated text does not read:\n{err}")
            bad += 1
            continue
        for what, mutated in mutations(text, rng, args.cases):
            total += 1
            rc, err = run_opt(args.tilec, mutated)
            ok = rc == 0 or (rc == 1 and (LOCATED.search(err) or NOT_VERIFIED.search(err)))
            if not ok:
                bad += 1
                print(f"FAIL {label}, {what}: exit status {rc}\n{err[:2000]}")
    print(f"{total} mutated texts; {bad} failure(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
