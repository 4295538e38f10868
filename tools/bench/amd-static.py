#!/usr/bin/env python3
"""What can be measured of the AMD code without a GPU, for every stdlib export (issue 13).

Per export and gfx target (gfx90a, gfx942, gfx1100 by default):
  - registers, VGPR / SGPR spills, scratch and LDS bytes, from the code object's metadata
    (tilec --verbose-resources reads .vgpr_count, .agpr_count, .vgpr_spill_count,
    .sgpr_spill_count, .private_segment_fixed_size and .group_segment_fixed_size of
    NT_AMDGPU_METADATA);
  - the occupancy LLVM computes for it, waves a SIMD runs (its registers, LDS and
    workgroup size together): the "; Occupancy: N" comment of llc's assembly of the
    export's optimised module (TILEC_DEBUG_GPU_IR); "-" without llc ($LLC, llc-19, llc,
    or /usr/lib/llvm-19/bin/llc);
  - one simulator run (tilec run --target=sim:ARCH --profile) on the ragged sizes of
    tests/stdlib/sim.py, and one on its second sizes (rows a multiple of 16 bytes) where
    the file has them: PASS or not (both), and the LDS bank conflicts (wavefronts beyond
    the ideal) summed over the export's shared stores (the fills) and its shared loads
    (the operand reads), from the simulator's counters (sim/lds_banks.h).
It prints one table; it passes or fails nothing (the lit tests check).

  tools/bench/amd-static.py [--build BUILD] [--targets gfx942,...] [--filter NAME]
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "stdlib"))
from exports import fits, stdlib_exports  # noqa: E402
from sim import SIZES, TMA_SIZES  # noqa: E402

RES_RE = re.compile(r"^(\w+) (gfx\w+): (\d+) VGPRs, (?:(\d+) AGPRs, )?(\d+) SGPRs, .*?(\d+) VGPRs and (\d+) SGPRs "
                    r"spilled, (\d+) bytes scratch", re.M)
LDS_RE = re.compile(r"^(\w+) (gfx\w+): .*?(\d+) bytes shared", re.M)
OCCUPANCY_RE = re.compile(r"^\s*; Occupancy: (\d+)", re.M)
COUNTER_RE = re.compile(r"shared (load|store): .*bank conflicts (\d+)")


def find_llc():
    for c in (os.environ.get("LLC"), "llc-19", "llc", "/usr/lib/llvm-19/bin/llc"):
        found = shutil.which(c) if c else None
        if found:
            return found
    return None


def resources(tilec, path, names, targets, tmp, llc):
    # One target at a time, with the exports that fit it (exports.py's ONLY_ON: one that
    # does not would fail the whole compilation). Returns {(export, target): (the
    # resources' match, LDS bytes, occupancy or None)}.
    found = {}
    for t in targets:
        picked = [n for n in names if fits(n, t)]
        if not picked:
            continue
        # Fresh for each compilation: a module left by an earlier run is not read as this one's.
        ir_dir = os.path.join(tmp, "ir")
        shutil.rmtree(ir_dir, ignore_errors=True)
        os.makedirs(ir_dir)
        out = subprocess.run([tilec, path, f"--target={t}", *[f"--export={n}" for n in picked], "--emit=hsaco", "-o",
                              os.path.join(tmp, f"{os.path.basename(path)}.{t}.hsaco"), "--verbose-resources"],
                             capture_output=True, text=True, env=dict(os.environ, TILEC_DEBUG_GPU_IR=ir_dir)).stderr
        lds = {(m[1], m[2]): m[3] for m in LDS_RE.finditer(out)}
        for m in RES_RE.finditer(out):
            occupancy = None
            module = os.path.join(ir_dir, f"{t}.{m[1]}.opt.ll")
            if llc and os.path.exists(module):
                asm = subprocess.run([llc, "-O3", "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={t}", module, "-o", "-"],
                                     capture_output=True, text=True).stdout
                o = OCCUPANCY_RE.search(asm)
                occupancy = o[1] if o else None
            found[(m[1], m[2])] = (m, lds.get((m[1], m[2]), "?"), occupancy)
    return found


def simulate(tilec, path, name, arch, sizes):
    p = subprocess.run([tilec, "run", path, "--kernel", name, *sizes,
                        f"--target=sim:{arch}", "--profile"], capture_output=True, text=True, errors="replace")
    out = p.stdout + p.stderr
    conflicts = {"load": 0, "store": 0}
    for kind, n in COUNTER_RE.findall(out):
        conflicts[kind] += int(n)
    ok = p.returncode == 0 and re.search(rf"^PASS: {name}\b", out, re.M) is not None
    return ok, conflicts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--targets", default="gfx90a,gfx942,gfx1100")
    ap.add_argument("--filter", default="")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    tilec = os.path.join(args.build, "compiler", "driver", "tilec")
    targets = args.targets.split(",")
    tmp = os.path.join(args.build, "amd-static")
    os.makedirs(tmp, exist_ok=True)
    llc = find_llc()
    rows = []
    for path, names in stdlib_exports(ROOT):
        names = [n for n in names if args.filter in n]
        if not names:
            continue
        res = resources(tilec, path, names, targets, tmp, llc)
        rows += [(path, n, t, res.get((n, t))) for n in names for t in targets if fits(n, t)]
    # Each export at sim.py's ragged sizes, and where the file has them at its second sizes,
    # whose rows are a multiple of 16 bytes (the aligned fills' path; "-" where none).
    def both(r):
        base = os.path.basename(r[0])
        ragged = simulate(tilec, r[0], r[1], r[2], SIZES[base])
        aligned = simulate(tilec, r[0], r[1], r[2], TMA_SIZES[base]) if base in TMA_SIZES else None
        return ragged, aligned
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        sims = list(pool.map(both, rows))
    print(f"{'export':24} {'target':8} {'VGPR':>5} {'AGPR':>5} {'spill v/s':>10} {'scratch':>8} {'LDS':>6} "
          f"{'waves':>5} {'sim':>5} {'fill conf':>10} {'read conf':>10} {'16B rows: fill':>15} {'read':>6}")
    for (path, name, t, r), ((ok, conf), aligned) in zip(rows, sims):
        if r is None:
            reg = f"{'?':>5} {'?':>5} {'?':>10} {'?':>8} {'?':>6} {'?':>5}"
        else:
            m, lds, occupancy = r
            reg = f"{m[3]:>5} {m[4] or '-':>5} {m[6] + '/' + m[7]:>10} {m[8]:>8} {lds:>6} {occupancy or '-':>5}"
        if aligned is None:
            extra = f"{'-':>15} {'-':>6}"
        else:
            ok = ok and aligned[0]
            extra = f"{aligned[1]['store']:>15} {aligned[1]['load']:>6}"
        print(f"{name:24} {t:8} {reg} {'PASS' if ok else 'FAIL':>5} {conf['store']:>10} {conf['load']:>10} {extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
