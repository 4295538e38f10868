#!/usr/bin/env python3
"""Robustness test: tilec answers every broken source with a located error, never a crash.

For every .tile file of the repository (stdlib/, samples/, tests/), this makes
deterministic mutants (truncations at token boundaries and inside tokens, token
deletions, adjacent-token swaps, token duplications, inserted bytes), compiles each with

    tilec MUTANT --emit=tir -o /dev/null -I DIR_OF_THE_ORIGINAL

and fails when a run
  - is killed by a signal, times out, or exits with a code other than 0 or 1,
  - exits 1 without a located error (a line `FILE:LINE:COL: error: ...`),
  - exits 0 after printing a located error,
  - prints "internal compiler error" or a sanitizer report (ASan, UBSan, LSan).
The unmutated files are compiled too, under the same rules.

Failing mutants are kept (--keep-dir), each with a command line that reproduces it.
The last line reads `robustness: N passed, N failed`. Exit status: 0 when all runs
pass, 1 when any fails, 2 on a usage error, 77 when the binary is missing and
--skip-if-missing was given (ctest reports that as skipped).
"""

import argparse
import collections
import concurrent.futures
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEARCH_DIRS = ("stdlib", "samples", "tests")
KEEP_MARKER = ".robustness-failures"
EXIT_SKIPPED = 77

# How a file's mutant budget is shared among the kinds of mutation.
KIND_WEIGHTS = (
    ("truncate-at-token", 0.15),
    ("truncate-in-token", 0.15),
    ("delete-token", 0.20),
    ("swap-tokens", 0.175),
    ("duplicate-token", 0.15),
    ("insert-byte", 0.175),
)

# A lexer close enough to the tile language's for choosing mutation points. Sources are
# read as latin-1 so that any byte survives the round trip unchanged.
TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:\\.|[^"\\\n])*"?)
  | (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op><<=|>>=|<<|>>|&&|\|\||==|!=|<=|>=|->|\+=|-=|\*=|/=|::)
  | (?P<punct>.)
    """,
    re.S | re.X,
)
# Bytes an author might type by mistake; the rest of the time, any byte at all.
TYPO_BYTES = b"{}()[]<>;,:.=+-*/%&|^~!?@#$\"'\\`_0aZ\n\t "

LOCATED_ERROR_RE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): error: ", re.M)
CRASH_MARKERS = (
    "internal compiler error",
    "runtime error:",  # UBSan
    "AddressSanitizer",
    "LeakSanitizer",
    "UndefinedBehaviorSanitizer",
    "ThreadSanitizer",
)


class Token:
    __slots__ = ("kind", "start", "end")

    def __init__(self, kind, start, end):
        self.kind, self.start, self.end = kind, start, end


def tokenize(text):
    """All tokens but whitespace, comments included (kind "comment")."""
    return [Token(m.lastgroup, m.start(), m.end()) for m in TOKEN_RE.finditer(text) if m.lastgroup != "ws"]


def share_budget(total):
    """Splits `total` mutants among KIND_WEIGHTS (largest remainders), each kind >= 1 when possible."""
    raw = [(kind, total * w) for kind, w in KIND_WEIGHTS]
    counts = {kind: int(x) for kind, x in raw}
    left = total - sum(counts.values())
    for kind, x in sorted(raw, key=lambda kx: kx[1] - int(kx[1]), reverse=True)[:left]:
        counts[kind] += 1
    for kind, _ in KIND_WEIGHTS:  # no kind left out while another has two or more
        if counts[kind] == 0:
            donor = max(counts, key=counts.get)
            if counts[donor] > 1:
                counts[donor] -= 1
                counts[kind] += 1
    return counts


def stratified(rng, items, k):
    """k items spread over the whole sequence: one random pick from each of k equal slices."""
    if not items or k <= 0:
        return []
    if k >= len(items):
        return list(items)
    picks = []
    for i in range(k):
        lo, hi = i * len(items) // k, (i + 1) * len(items) // k
        picks.append(items[rng.randrange(lo, max(hi, lo + 1))])
    return picks


def mutate(text, count, rng):
    """Up to `count` distinct mutants of `text`, as (kind, description, new_text)."""
    tokens = tokenize(text)
    code = [t for t in tokens if t.kind != "comment"]
    wide = [t for t in tokens if t.end - t.start >= 2]
    seen = {text}
    out = []

    def add(kind, what, new):
        if new not in seen:
            seen.add(new)
            out.append((kind, what, new))
            return True
        return False

    def line_col(pos):
        line_start = text.rfind("\n", 0, pos) + 1
        return f"{text.count(chr(10), 0, pos) + 1}:{pos - line_start + 1}"

    def make_one(kind):
        if kind == "delete-token" and code:
            t = rng.choice(code)
            return add(kind, f"deleted {text[t.start:t.end]!r} at {line_col(t.start)}",
                       text[:t.start] + text[t.end:])
        if kind == "swap-tokens" and len(code) >= 2:
            i = rng.randrange(len(code) - 1)
            a, b = code[i], code[i + 1]
            return add(kind, f"swapped {text[a.start:a.end]!r} and {text[b.start:b.end]!r} at {line_col(a.start)}",
                       text[:a.start] + text[b.start:b.end] + text[a.end:b.start] + text[a.start:a.end] + text[b.end:])
        if kind == "duplicate-token" and code:
            t = rng.choice(code)
            return add(kind, f"duplicated {text[t.start:t.end]!r} at {line_col(t.start)}",
                       text[:t.end] + text[t.start:t.end] + text[t.end:])
        if kind == "insert-byte":
            pos = rng.randrange(len(text) + 1)
            byte = rng.choice(TYPO_BYTES) if rng.random() < 0.5 else rng.randrange(256)
            return add(kind, f"inserted byte 0x{byte:02x} at {line_col(pos)}", text[:pos] + chr(byte) + text[pos:])
        return False

    budget = share_budget(count)
    # Truncations: at token ends spread over the file (empty file included), and inside tokens.
    ends = [0] + [t.end for t in tokens]
    for pos in sorted(set(stratified(rng, ends, budget["truncate-at-token"]))):
        add("truncate-at-token", f"cut after {line_col(pos) if pos else 'nothing'}", text[:pos])
    for t in sorted(stratified(rng, wide, budget["truncate-in-token"]), key=lambda t: t.start):
        pos = rng.randrange(t.start + 1, t.end)
        add("truncate-in-token", f"cut inside {t.kind} {text[t.start:t.end][:20]!r} at {line_col(pos)}", text[:pos])
    for kind, n in budget.items():
        if kind.startswith("truncate"):
            continue
        made, tries = 0, 0
        while made < n and tries < 10 * n:
            tries += 1
            if make_one(kind):
                made += 1
    return out[:count]


def find_sources(root):
    """Every .tile file under root's stdlib/, samples/ and tests/, skipping build output."""
    found = []
    for top in SEARCH_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(
                d for d in dirnames
                if not (d.startswith(("build", ".")) or d in ("Output", "__pycache__", "lit-output"))
            )
            found.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".tile"))
    return found


def file_contains(path, needle):
    """Whether a (possibly large) binary file contains `needle`."""
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            if needle in tail + chunk:
                return True
            tail = chunk[-len(needle):]
    return False


def describe_exit(code):
    if code is None:
        return "timeout"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit {code}"


def judge(code, output):
    """Why a run failed, or None when it passed."""
    for marker in CRASH_MARKERS:
        if marker in output:
            return f"output contains {marker!r}"
    if code is None or code < 0 or code not in (0, 1):
        return describe_exit(code)
    located = [m for m in LOCATED_ERROR_RE.finditer(output) if os.path.isfile(m.group("path"))]
    if code == 1 and not located:
        return "exit 1 without a located error (FILE:LINE:COL: error: ...)"
    if code == 0 and located:
        return "exit 0 after reporting an error"
    return None


class Job:
    __slots__ = ("ident", "source", "kind", "what", "text", "path", "cmd", "code", "output", "failure", "seconds")


def run_job(job, timeout, env):
    os.makedirs(os.path.dirname(job.path), exist_ok=True)
    with open(job.path, "wb") as f:
        f.write(job.text.encode("latin-1"))
    start = time.monotonic()
    proc = subprocess.Popen(job.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        job.code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group this run started, and nothing else
        out, _ = proc.communicate()
        job.code = None
    job.seconds = time.monotonic() - start
    job.output = out.decode("utf-8", errors="replace")
    job.failure = judge(job.code, job.output)
    if job.failure is None:
        os.unlink(job.path)
    return job


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help=".tile files to mutate (default: all in stdlib/, samples/, tests/)")
    ap.add_argument("--root", default=REPO, help="repository root (default: %(default)s)")
    ap.add_argument("--tilec", help="the compiler (default: ROOT/build/compiler/driver/tilec)")
    ap.add_argument("--tilec-env", metavar="VAR",
                    help="take the compiler from environment variable VAR when it is set (empty: none)")
    ap.add_argument("--skip-if-missing", action="store_true",
                    help=f"exit {EXIT_SKIPPED} (skipped) rather than fail when there is no compiler")
    ap.add_argument("--tilec-args", default="--emit=tir -o /dev/null",
                    help="arguments after the source file (default: %(default)r)")
    ap.add_argument("--mutants", type=int, default=40, help="mutants per file (default: %(default)s)")
    ap.add_argument("--max-runs", type=int, default=0,
                    help="at most this many mutants in all, fewer per file when there are many files (0: no limit)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="parallel runs (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per run (default: %(default)s)")
    ap.add_argument("--keep-dir", help="where failing mutants are kept (default: ROOT/build/robustness-failures)")
    ap.add_argument("--show", type=int, default=5, help="failures printed in full (default: %(default)s)")
    ap.add_argument("--detect-leaks", action="store_true", help="let LeakSanitizer report leaks at exit")
    args = ap.parse_args()

    root = os.path.abspath(args.root)
    tilec, origin = args.tilec or os.path.join(root, "build", "compiler", "driver", "tilec"), "--tilec"
    if args.tilec_env and args.tilec_env in os.environ:
        tilec, origin = os.environ[args.tilec_env], f"${args.tilec_env}"
    if not tilec or not (os.path.isfile(tilec) and os.access(tilec, os.X_OK)):
        why = f"no compiler at {tilec!r} (from {origin})" if tilec else f"no compiler (${args.tilec_env} is empty)"
        if args.skip_if_missing:
            print(f"robustness: SKIPPED: {why}; tools/test.sh builds the sanitizer binary", flush=True)
            return EXIT_SKIPPED
        print(f"robustness: error: {why}", file=sys.stderr)
        return 2
    tilec = os.path.abspath(tilec)
    asan = file_contains(tilec, b"__asan_init")
    print(f"robustness: binary {tilec} (from {origin}; {'ASan/UBSan build' if asan else 'no sanitizers'})",
          flush=True)

    sources = [os.path.abspath(f) for f in args.files] or find_sources(root)
    if not sources:
        print(f"robustness: error: no .tile files under {root}/{{{','.join(SEARCH_DIRS)}}}", file=sys.stderr)
        return 2
    per_file = args.mutants
    if args.max_runs and per_file * len(sources) > args.max_runs:
        per_file = max(len(KIND_WEIGHTS), args.max_runs // len(sources))

    tilec_args = shlex.split(args.tilec_args)
    help_text = subprocess.run([tilec, "--help"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               errors="replace", timeout=args.timeout).stdout
    use_include = re.search(r"(^|[\s,\[])-I\b", help_text) is not None
    if not use_include:
        print("robustness: note: `tilec --help` shows no -I option; mutants are compiled without -I", flush=True)

    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [
        f"detect_leaks={int(args.detect_leaks)}", "abort_on_error=0", "exitcode=86", env.get("ASAN_OPTIONS")]))
    env["UBSAN_OPTIONS"] = ":".join(filter(None, [
        "print_stacktrace=1", "halt_on_error=1", "exitcode=87", env.get("UBSAN_OPTIONS")]))

    keep_dir = os.path.abspath(args.keep_dir or os.path.join(root, "build", "robustness-failures"))
    work = tempfile.mkdtemp(prefix="tilec-robustness-")
    jobs = []
    for index, source in enumerate(sources):
        with open(source, "rb") as f:
            text = f.read().decode("latin-1")
        rel = os.path.relpath(source, root)
        rng = random.Random(f"{args.seed}:{rel}")
        variants = [("original", "unchanged", text)] + mutate(text, per_file, rng)
        for number, (kind, what, new) in enumerate(variants):
            job = Job()
            job.ident = f"f{index:03d}-m{number:02d}-{kind}"
            job.source, job.kind, job.what, job.text = rel, kind, what, new
            job.path = os.path.join(work, job.ident, os.path.basename(source))
            job.cmd = [tilec, job.path] + tilec_args + (["-I", os.path.dirname(source)] if use_include else [])
            jobs.append(job)

    mutants = len(jobs) - len(sources)
    print(f"robustness: {len(sources)} files, {mutants} mutants (up to {per_file} a file, seed {args.seed}) "
          f"+ {len(sources)} originals, {args.jobs} workers, timeout {args.timeout:g} s", flush=True)
    start = time.monotonic()
    done = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for job in pool.map(lambda j: run_job(j, args.timeout, env), jobs):
                done.append(job)
    finally:
        elapsed = time.monotonic() - start
    failures = [j for j in done if j.failure]

    histogram = collections.Counter(describe_exit(j.code) for j in done)
    print("robustness: results: " + ", ".join(f"{k}: {v}" for k, v in sorted(histogram.items())))
    by_kind = collections.Counter(j.kind for j in done)
    bad_kind = collections.Counter(j.kind for j in failures)
    print("robustness: by kind: " + ", ".join(f"{k} {bad_kind[k]}/{v} failed" for k, v in sorted(by_kind.items())))
    slowest = max(done, key=lambda j: j.seconds)
    print(f"robustness: time {elapsed:.1f} s (slowest run {slowest.seconds:.2f} s: {slowest.source} {slowest.kind})")

    if os.path.isdir(keep_dir) and os.path.exists(os.path.join(keep_dir, KEEP_MARKER)):
        shutil.rmtree(keep_dir)  # only a folder this script made before
    if failures:
        os.makedirs(keep_dir, exist_ok=True)
        open(os.path.join(keep_dir, KEEP_MARKER), "w").close()
        lines = ["#!/bin/sh", "# Each line reproduces one failing run of tests/fuzz/robustness.py."]
        for job in failures:
            kept = os.path.join(keep_dir, job.ident, os.path.basename(job.path))
            os.makedirs(os.path.dirname(kept), exist_ok=True)
            shutil.move(job.path, kept)
            job.cmd = [kept if part == job.path else part for part in job.cmd]
            lines.append(shlex.join(job.cmd))
        with open(os.path.join(keep_dir, "reproduce.sh"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"\nrobustness: FAILED: {len(failures)} of {len(done)} runs; "
              f"mutants kept in {keep_dir} (reproduce.sh lists every command)")
        for job in failures[:args.show]:
            print(f"\n--- {job.source}: {job.kind}: {job.what}")
            print(f"    why: {job.failure}")
            print(f"    run: {shlex.join(job.cmd)}")
            out_lines = job.output.rstrip().splitlines()
            for line in out_lines[:12]:
                print(f"    | {line}")
            if len(out_lines) > 12:
                print(f"    | ... ({len(out_lines) - 12} more lines)")
        if len(failures) > args.show:
            print(f"\n... and {len(failures) - args.show} more failures (see {keep_dir}/reproduce.sh)")
    shutil.rmtree(work, ignore_errors=True)
    print(f"robustness: {len(done) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
