#!/usr/bin/env python3
"""The long fuzzing run: gen_programs.py, then mutate_stages.py, each for half of the time
on one worker (--jobs 1: one core), then one line of totals over both.

Both run tilec through the fork server, and both send only every K-th input through
LLVM's code generation (--backends-every K, default 10): the CPU, PTX and AMDGPU
backends with ptxas and ld.lld, and the host run. Every input goes through the frontend
and the Tile IR passes, and every program, and every mutant that compiles, runs in the
simulator against the reference interpreter (the thread-level lowering included).
The figures of each fuzzer say how many inputs reached each stage; the totals add them.

    long_run.py --minutes 52 --seed 16 --keep-dir /tmp/fuzz-long

gave on 5 December 2026 (commit 5dd15eb, one core of a loaded 2-core machine):
    long_run: inputs 33756 (programs 16200, mutants 17556), crashes 0, hangs 0,
    compile errors of valid programs 0, mismatches 0, run time-outs of mutants 50
(the run printed "programs 3000", a progress line's figure; the totals now take the
summary's). On 5 December 2026 four runs of commit d130088's tilec, side by side
(--backends-every 15; seeds 18-21), gave together 102,214 inputs (50,720 programs,
51,494 mutants) with 0 crashes, 0 hangs, 0 compile errors of valid programs and 0
mismatches. Per stage: docs/architecture.md, "Fuzzing through every stage".

Findings (crashes, hangs, internal or unlocated errors, compile errors of valid
programs, mismatches with the reference) are printed as they come and kept in
KEEP_DIR/gen and KEEP_DIR/mutate. Exit status: 0 when nothing was found, 1 otherwise.
"""

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(script, args):
    """Runs a fuzzer, echoing its output; returns (exit status, output)."""
    cmd = [sys.executable, os.path.join(HERE, script)] + args
    print("long_run: " + " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    return proc.wait(), "".join(lines)


def figure(text, name, key):
    """KEY's figure in the fuzzer's last line that has it: the summary, not a progress line."""
    found = re.findall(rf"^{name}: .*\b{re.escape(key)} (\d+)", text, re.M)
    return int(found[-1]) if found else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, required=True, help="the whole run, shared equally")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backends-every", type=int, default=10, metavar="K")
    ap.add_argument("--run-timeout", type=float, default=5.0,
                    help="mutate_stages' limit per tilec run of a mutant (a time-out is counted, not a finding)")
    ap.add_argument("--tilec", help="default: the fuzzers' (build/compiler/driver/tilec)")
    ap.add_argument("--keep-dir", required=True)
    args = ap.parse_args()
    common = ["--jobs", "1", "--seed", str(args.seed), "--minutes", f"{args.minutes / 2:g}",
              "--backends-every", str(args.backends_every)]
    if args.tilec:
        common += ["--tilec", args.tilec]
    gen_rc, gen = run("gen_programs.py", common + ["--batch", "40", "--keep-dir", os.path.join(args.keep_dir, "gen")])
    mut_rc, mut = run("mutate_stages.py", common + ["--run-timeout", f"{args.run_timeout:g}",
                                                    "--keep-dir", os.path.join(args.keep_dir, "mutate")])
    programs, mutants = figure(gen, "gen_programs", "programs"), figure(mut, "mutate_stages", "inputs")
    crashes = figure(gen, "gen_programs", "crash") + figure(mut, "mutate_stages", "crash")
    hangs = figure(gen, "gen_programs", "hang") + figure(mut, "mutate_stages", "hang")
    print(f"long_run: inputs {programs + mutants} (programs {programs}, mutants {mutants}), crashes {crashes}, "
          f"hangs {hangs}, compile errors of valid programs {figure(gen, 'gen_programs', 'compile-error')}, "
          f"mismatches {figure(gen, 'gen_programs', 'mismatch')}, "
          f"run time-outs of mutants {figure(mut, 'mutate_stages', 'run-timeouts')} (not findings)", flush=True)
    return 1 if gen_rc or mut_rc else 0


if __name__ == "__main__":
    sys.exit(main())
