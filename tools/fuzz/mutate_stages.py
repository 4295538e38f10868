#!/usr/bin/env python3
"""Mutation fuzzing through every stage of tilec, not just the frontend.

Seeds: the stdlib kernels, the samples and the lit tests' kernels. Each mutant
changes one thing an author could plausibly get wrong or push to an extreme:
  number    a number token becomes 0, -1, 1, 3, 2^31 - 1, 2^31, 2^32, 2^63 - 1, 2^63,
            1e30, 0x7fffffffffffffff or 0xffffffffffffffff (shapes, extents, constants,
            template arguments and defaults are all numbers);
  type      an element-type name becomes another one (f8, 4-bit and bool included);
  define    a `-D NAME=VALUE` for a compile-time parameter of the file, VALUE a number
            of the list above, a type name, true/false or a misspelling;
  export    an export's template argument changed, an export dropped or duplicated;
  token     a token-level mutant (tests/fuzz/robustness.py: truncations, deletions,
            swaps, duplications, inserted bytes).
Each mutant goes through the frontend (`--emit=tir`: parsing, checks, elaboration and the
Tile IR passes); one that compiles then goes through the three backends in one tilec
(`--target=host,sm_80,gfx942 -o M.o`: the CPU object and header, sm_80's PTX and ptxas,
gfx942's code object and ld.lld; when that fails, stage by stage: `-o M.o`,
`--target=sm_80 --emit=ptx`, `--target=gfx942 --emit=hsaco`), and `tilec run` of its
first export on the host and on sim:sm_80 (--sim-blocks 2) with small sizes. A finding
is a crash, a hang (past --timeout), an internal compiler error, a compile exiting 1
without a located error or 0 after one (tests/fuzz/robustness.py's rules). A `tilec run`
may FAIL on a mutant (a mutation can make a program read out of bounds or race) or run
past --run-timeout (a loop of 2^63 iterations runs that long): only its crashes count;
its time-outs are counted apart, and the figures say how many runs passed, failed or
were refused before running (bad sizes for the mutant, say).

--backends-every K sends only every K-th mutant through the backends and the host run
(LLVM: about a second per mutant, against a few milliseconds for the rest); the others
stop after the simulator run. tilec runs in tilec-fork-server (fuzzlib.py), not in a
process of its own per run.

    mutate_stages.py --count 120 --seed 1            (bounded: what ctest runs)
    mutate_stages.py --minutes 20 --keep-dir D       (prints the figures at the end)
    long_run.py --minutes 52 --seed 16 --keep-dir D  (the long run: both fuzzers, one core)

Exit status: 0 when nothing was found, 1 otherwise, 2 on a usage error.
"""

import glob
import os
import random
import re
import shutil
import sys

import fuzzlib

NUMBERS = ("0", "-1", "1", "3", "2147483647", "2147483648", "4294967296", "9223372036854775807",
           "9223372036854775808", "1e30", "0x7fffffffffffffff", "0xffffffffffffffff")
TYPES = ("f16", "bf16", "f32", "f64", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "bool",
         "f8e4m3", "f8e5m2", "i4", "u4")
DEFINE_VALUES = NUMBERS + ("f16", "bf16", "f8e4m3", "i4", "bool", "true", "false", "f17", "", "=1")
TEMPLATE_RE = re.compile(r"\b([A-Za-z_]\w*)\s*:\s*(int|bool|type)\b")
EXPORT_RE = re.compile(r"^export\s+[^;]*;[ \t]*$", re.M)
EXPORT_ARG_RE = re.compile(r"(\b[A-Za-z_]\w*\s*=\s*)([^,>]+)")
TYPE_WORD_RE = re.compile(r"\b(" + "|".join(TYPES) + r")\b")
NUMBER_RE = re.compile(r"(?<![\w.])(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)(?![\w.])")


# What the figures count, per input that reached it ("ptxas": the cubin of the joint
# backend run; a mutant that takes the stage-by-stage path stops at --emit=ptx).
STAGES = ("frontend", "cpu", "ptx", "ptxas", "hsaco", "run host", "run sim:sm_80")


def seeds(root):
    files = sorted(glob.glob(os.path.join(root, "stdlib", "kernels", "*.tile")))
    files += sorted(glob.glob(os.path.join(root, "samples", "*.tile")))
    files += sorted(glob.glob(os.path.join(root, "tests", "lit", "*.tile")))
    files += sorted(glob.glob(os.path.join(root, "tests", "lit", "Inputs", "*.tile")))
    # Only files with a kernel of their own (some lit files only compile the stdlib's).
    return [f for f in files if re.search(r"^kernel\b", open(f, encoding="latin-1").read(), re.M)]


def code_spans(text):
    """(start, end) of the text outside comments, for choosing mutation points."""
    spans, pos = [], 0
    for m in re.finditer(r"//[^\n]*|/\*.*?\*/", text, re.S):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    return spans


def in_code(spans, i):
    return any(a <= i < b for a, b in spans)


def mutant(text, rng):
    """(kind, description, new text, extra tilec arguments) for one random mutation."""
    spans = code_spans(text)
    kind = rng.choice(("number", "number", "type", "define", "define", "export", "token"))
    if kind == "number":
        hits = [m for m in NUMBER_RE.finditer(text) if in_code(spans, m.start())]
        if hits:
            m = rng.choice(hits)
            v = rng.choice(NUMBERS)
            return kind, f"{m.group()!r} -> {v} at offset {m.start()}", text[:m.start()] + v + text[m.end():], []
    if kind == "type":
        hits = [m for m in TYPE_WORD_RE.finditer(text) if in_code(spans, m.start())]
        if hits:
            m = rng.choice(hits)
            v = rng.choice(TYPES)
            return kind, f"{m.group()} -> {v} at offset {m.start()}", text[:m.start()] + v + text[m.end():], []
    if kind == "define":
        names = sorted({m.group(1) for m in TEMPLATE_RE.finditer(text)})
        if names:
            n, v = rng.choice(names), rng.choice(DEFINE_VALUES)
            return kind, f"-D {n}={v}", text, ["-D", f"{n}={v}"]
    if kind == "export":
        exports = list(EXPORT_RE.finditer(text))
        if exports:
            m = rng.choice(exports)
            line = m.group()
            what = rng.choice(("arg", "drop", "duplicate"))
            args = list(EXPORT_ARG_RE.finditer(line))
            if what == "arg" and args:
                a = rng.choice(args)
                v = rng.choice(NUMBERS + TYPES + ("true", "false"))
                new = line[:a.start(2)] + v + line[a.end(2):]
                return kind, f"export argument {a.group().strip()} -> {v}", text[:m.start()] + new + text[m.end():], []
            if what == "drop":
                return kind, f"dropped {line.strip()!r}", text[:m.start()] + text[m.end():], []
            dup = re.sub(r"\bas\s+(\w+)", r"as \1_fz", line)
            return kind, f"duplicated {line.strip()!r}", text[:m.end()] + "\n" + dup + text[m.end():], []
    choices = fuzzlib.robustness.mutate(text, 6, rng) or [("none", "unchanged", text)]
    k, what, new = rng.choice(choices)
    return "token", f"{k}: {what}", new, []


def check_mutant(index, seed, sources, tilec, work, timeout, run_timeout, backends_every=1):
    rng = random.Random(f"{seed}:{index}")
    source = rng.choice(sources)
    with open(source, "rb") as f:
        text = f.read().decode("latin-1")
    kind, what, new, extra = mutant(text, rng)
    d = os.path.join(work, f"m{index:06d}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, os.path.basename(source))
    with open(path, "wb") as f:
        f.write(new.encode("latin-1"))
    inc = ["-I", os.path.dirname(source)]
    findings, runs, slow, stages = [], 0, [], []

    def compile_stage(stage, args, keep=True):
        nonlocal runs
        cmd = [tilec, path] + args + extra + inc
        code, out, _ = fuzzlib.run(cmd, timeout, label=stage)
        runs += 1
        why = fuzzlib.judge_compile(code, out)
        found = ("hang" if code is None else "crash", f"{stage}: {why}", cmd, out) if why else None
        if found and keep:
            findings.append(found)
        return code, out, found

    frontend_code, tir, _ = compile_stage("frontend", ["--emit=tir"])
    stages.append("frontend")
    # --backends-every K: LLVM's code generation (about a second per mutant, against a few
    # milliseconds for the frontend) for every K-th mutant only; the simulator run for all.
    backends = index % backends_every == 0
    if frontend_code == 0 and backends:
        # The three backends in one process (one start-up, one frontend run): the object
        # holds the host code, sm_80's cubin (its PTX, then ptxas) and gfx942's code object
        # (ld.lld). Exit 0 means each of them was built. Otherwise (a located error: most
        # often a GPU-only refusal, which stops the other targets) each backend runs alone,
        # as the stages --emit=ptx and --emit=hsaco, so that every one is reached and
        # judged; a finding of the joint run is kept when those find nothing.
        code, _, joint = compile_stage(
            "backends", ["--target=host,sm_80,gfx942", "-j", "1", "-o", os.path.join(d, "m.o")], keep=False)
        if code == 0 and not joint:
            stages += ["cpu", "ptx", "hsaco", "ptxas"]
        else:
            before = len(findings)
            compile_stage("cpu", ["-j", "1", "-o", os.path.join(d, "m.o")])
            compile_stage("ptx", ["--target=sm_80", "--emit=ptx", "-j", "1", "-o", os.path.join(d, "m.ptx")])
            compile_stage("hsaco", ["--target=gfx942", "--emit=hsaco", "-j", "1", "-o", os.path.join(d, "m.hsaco")])
            stages += ["cpu", "ptx", "hsaco"]
            if joint and len(findings) == before:
                findings.append(joint)
    found = fuzzlib.exports(tir) if frontend_code == 0 else []
    if found:
        sym, sizes, scalars = found[0]
        size_arg = ",".join(f"{s}={rng.choice((1, 2, 7, 33, 130))}" for s in sizes)
        for target in ("host", "sim:sm_80") if backends else ("sim:sm_80",):
            cmd = [tilec, "run", path, "-k", sym, f"--target={target}", "--repeat", "1"]
            if target.startswith("sim:"):
                cmd += ["--sim-blocks", "2"]  # the host refuses it (and runs every block fast)
            if size_arg:
                cmd += ["--size", size_arg]
            cmd += extra + inc
            code, out, _ = fuzzlib.run(cmd, run_timeout, label=f"run {target}")
            runs += 1
            if code is None:
                # A mutant may ask for that much work (a loop of 2^63 iterations):
                # counted, not a finding. Compiles must always end.
                slow.append(target)
                continue
            stages.append(f"run {target}")
            # How far the run got: a verdict on the kernel, or an error before it ran.
            verdict = "passed" if code == 0 else "failed" if "FAIL:" in out else "refused"
            stages.append(f"run {target} {verdict}")
            why = fuzzlib.judge_run(code, out)
            if why:
                findings.append(("crash", f"run {target}: {why}", cmd, out))
    return index, path, f"{os.path.relpath(source, fuzzlib.REPO)}: {kind}: {what}", kind, findings, runs, slow, stages


def main():
    ap = fuzzlib.common_args(__doc__, 150, "mutants")
    ap.add_argument("--root", default=fuzzlib.REPO, help="where the seed files are")
    ap.add_argument("--backends-every", type=int, default=1, metavar="K",
                    help="the CPU, PTX and HSACO backends and the host run for every K-th mutant only; every "
                         "mutant goes through the frontend, and one that compiles runs on sim:sm_80 "
                         "(default %(default)s: all of them)")
    ap.add_argument("--run-timeout", type=float, default=20.0,
                    help="seconds per tilec run of a mutant (then counted as a run time-out, not a finding)")
    args = ap.parse_args()
    sources = seeds(os.path.abspath(args.root))

    def record(result, tally, keep):
        i, path, what, kind, findings, runs, slow, stages = result
        tally.add("inputs")
        for stage in stages:
            tally.add(f"stage:{stage}")
        tally.add("run-timeouts", len(slow))
        tally.add(f"kind:{kind}")
        tally.add("runs", runs)
        for fkind, fwhat, cmd, out in findings:
            kept = os.path.join(keep, f"m{i:06d}", os.path.basename(path))
            os.makedirs(os.path.dirname(kept), exist_ok=True)
            shutil.copy(path, kept)
            cmd = [kept if c == path else c for c in cmd]
            tally.finding(fkind, f"mutant {i} ({what}): {fwhat}", cmd, out)
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)

    ran = fuzzlib.drive("mutate_stages", args, "mutants",
                        lambda indices, work: [check_mutant(i, args.seed, sources, args.tilec, work, args.timeout,
                                                            args.run_timeout, max(1, args.backends_every))
                                               for i in indices],
                        record)
    if ran is None:
        return 2
    tally = ran[0]
    kinds = sorted(k for k in tally.counts if k.startswith("kind:"))
    print("mutate_stages: by kind: " + ", ".join(f"{k[5:]} {tally.counts[k]}" for k in kinds))
    c = tally.counts
    print("mutate_stages: inputs through each stage: "
          + ", ".join(f"{stage} {c['stage:' + stage]}" for stage in STAGES)
          + (f" (backends and the host run for 1 mutant in {args.backends_every} only)"
             if args.backends_every > 1 else ""))
    print("mutate_stages: tilec run verdicts: " + "; ".join(
        f"{t}: passed {c[f'stage:run {t} passed']}, failed {c[f'stage:run {t} failed']}, "
        f"refused before running {c[f'stage:run {t} refused']}" for t in ("host", "sim:sm_80")))
    return fuzzlib.finish("mutate_stages", args, *ran[:3], ("inputs", "runs", "crash", "hang", "run-timeouts"), ran[3])


if __name__ == "__main__":
    sys.exit(main())
