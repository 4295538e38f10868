#!/usr/bin/env python3
"""What can be measured of the AMD code without a GPU, for every stdlib export (issue 13).

Per export and gfx target (gfx90a, gfx942, gfx1100 by default):
  - registers, VGPR / SGPR spills and scratch bytes, from the code object's metadata
    (tilec --verbose-resources reads .vgpr_count, .agpr_count, .vgpr_spill_count,
    .sgpr_spill_count and .private_segment_fixed_size of NT_AMDGPU_METADATA);
  - one simulator run (tilec run --target=sim:ARCH --profile) on the ragged sizes of
    tests/stdlib/sim.py: PASS or not, and the LDS bank conflicts (wavefronts beyond the
    ideal) summed over the export's shared stores (the fills) and its shared loads (the
    operand reads), from the simulator's counters (sim/lds_banks.h).
It prints one table; it passes or fails nothing (the lit tests check).

  tools/bench/amd-static.py [--build BUILD] [--targets gfx942,...] [--filter NAME]
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "stdlib"))
from exports import stdlib_exports  # noqa: E402
from sim import SIZES  # noqa: E402

RES_RE = re.compile(r"^(\w+) (gfx\w+): (\d+) VGPRs, (?:(\d+) AGPRs, )?(\d+) SGPRs, .*?(\d+) VGPRs and (\d+) SGPRs "
                    r"spilled, (\d+) bytes scratch", re.M)
COUNTER_RE = re.compile(r"shared (load|store): .*bank conflicts (\d+)")


def resources(tilec, path, targets, tmp):
    out = subprocess.run([tilec, path, "--target=" + ",".join(targets), "--emit=hsaco", "-o",
                          os.path.join(tmp, os.path.basename(path) + ".hsaco"), "--verbose-resources"],
                         capture_output=True, text=True).stderr
    return {(m[1], m[2]): m for m in RES_RE.finditer(out)}


def simulate(tilec, path, name, arch):
    p = subprocess.run([tilec, "run", path, "--kernel", name, *SIZES[os.path.basename(path)],
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
    rows = []
    for path, names in stdlib_exports(ROOT):
        names = [n for n in names if args.filter in n]
        if not names:
            continue
        res = resources(tilec, path, targets, tmp)
        rows += [(path, n, t, res.get((n, t))) for n in names for t in targets]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        sims = list(pool.map(lambda r: simulate(tilec, r[0], r[1], r[2]), rows))
    print(f"{'export':24} {'target':8} {'VGPR':>5} {'AGPR':>5} {'spill v/s':>10} {'scratch':>8} "
          f"{'sim':>5} {'fill conf':>10} {'read conf':>10}")
    for (path, name, t, m), (ok, conf) in zip(rows, sims):
        if m is None:
            reg = f"{'?':>5} {'?':>5} {'?':>10} {'?':>8}"
        else:
            reg = f"{m[3]:>5} {m[4] or '-':>5} {m[6] + '/' + m[7]:>10} {m[8]:>8}"
        print(f"{name:24} {t:8} {reg} {'PASS' if ok else 'FAIL':>5} {conf['store']:>10} {conf['load']:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
