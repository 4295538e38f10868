#!/usr/bin/env python3
"""Every stdlib export, lowered to thread level and run in the GPU simulator.

For each `export ... as NAME;` of stdlib/kernels/*.tile this runs

    tilec run FILE --kernel NAME --size SIZES --target=sim:ARCH

for a warp of 32 (sm_80: tensor cores, cp.async, software pipelining; sm_89 likewise;
sm_90a: wgmma, and TMA pipelines at the TMA_SIZES below; gfx1100: WMMA) and of 64
(gfx90a, gfx942: MFMA), on the ragged sizes of SIZES below (seeded
random inputs, poisoned outputs), and requires PASS: the simulator's results match the
float64 reference interpreter within the output type's tolerance, and its checks (races,
out-of-bounds, uninitialised reads, divergent barriers) found nothing, since any finding
fails the run.

Exports whose tiles need more shared memory than an arch has (exports.py, ONLY_ON) must
be refused there with a located error.
Exports the GPU lowering does not cover yet are listed in exports.py (PENDING): they must still be
refused with a located "not supported for GPU targets yet" error (anything else fails),
and one that starts to pass fails the test too, so the list cannot go stale.
Exit status 0 when every run is as expected, 1 otherwise.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import time

from exports import LOCATED_ERROR_RE, PENDING, REFUSED_RE, fits, stdlib_exports

# Ragged sizes per kernel file: no dimension a multiple of the tiles, small enough for
# the simulator (it runs every block of the grid).
SIZES = {
    "activations.tile": ["--size", "N=2500"],
    "vector_add.tile": ["--size", "N=3001"],
    "softmax.tile": ["--size", "M=37,N=1000"],
    "rmsnorm.tile": ["--size", "M=5,N=777", "--scalar", "eps=1e-5"],
    "layernorm.tile": ["--size", "M=5,N=777", "--scalar", "eps=1e-5"],
    # K: 6 steps of BK = 32, so the 3-stage pipeline reaches its steady state (prefetch
    # in the loop) and its ragged last step.
    "gemm.tile": ["--size", "M=100,N=70,K=170"],
    "gemm_splitk.tile": ["--size", "M=70,N=90,K=200"],
    "cumsum.tile": ["--size", "M=9,N=2100"],
    "flash_attn.tile": ["--size", "B=1,H=2,S=100", "--scalar", "scale=0.125"],
    # 20 heads (ragged against 64 and 16 heads a block); 3 pages of 64 a sequence, 6 in
    # the cache, pages drawn at random (shared between batches too); lengths drawn from
    # [1, 192] (seed 1: 156 and 132, ragged in their third page).
    "mla_decode.tile": ["--size", "B=2,H=20,NP=6,MP=3", "--int-range", "block_table=0:5,cache_seqlens=1:192",
                        "--scalar", "scale=0.0417"],
}

ARCHS = ("sm_80", "sm_89", "sm_90a", "gfx90a", "gfx942", "gfx1100")

# Second sizes for the files whose sm_90a pipelines copy through TMA: still ragged against
# the tiles, but with rows a multiple of 16 bytes, which TMA tensor maps need (at the
# sizes above every kernel takes its cp.async path).
TMA_SIZES = {
    "gemm.tile": ["--size", "M=100,N=72,K=168"],
    "gemm_splitk.tile": ["--size", "M=70,N=88,K=200"],
}



def run_one(tilec, path, name, arch, sizes, timeout):
    cmd = [tilec, "run", path, "--kernel", name, *sizes, f"--target=sim:{arch}"]
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                           timeout=timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        out, rc = f"timed out after {timeout} s", None
    took = time.monotonic() - start
    passed = rc == 0 and re.search(rf"^PASS: {name}\b", out, re.M) is not None
    refused = rc == 1 and REFUSED_RE.search(out) is not None
    if not fits(name, arch):
        ok = rc == 1 and LOCATED_ERROR_RE.search(out) is not None
        verdict = "refused as expected (tiles too large)" if ok else ("now PASSES: update ONLY_ON" if passed else "FAILED")
    elif name in PENDING:
        ok = refused
        verdict = "refused as expected" if ok else ("now PASSES: remove it from PENDING" if passed else "FAILED")
    else:
        ok = passed
        verdict = "PASS" if ok else "FAILED"
    label = "" if sizes == SIZES[os.path.basename(path)] else " (" + sizes[1] + ")"
    return ok, f"{name} sim:{arch}{label}: {verdict} ({took:.1f} s)", (None if ok else " ".join(cmd) + "\n" + out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--root", required=True, help="the repository (stdlib/kernels is read from it)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--filter", default="", help="only exports whose name contains this")
    args = ap.parse_args()

    jobs = []
    for path, names in stdlib_exports(args.root):
        if os.path.basename(path) not in SIZES:
            print(f"stdlib sim: no sizes for {path}: add it to SIZES", file=sys.stderr)
            return 1
        base = os.path.basename(path)
        jobs += [(path, n, a, SIZES[base]) for n in names for a in ARCHS if args.filter in n]
        if base in TMA_SIZES:
            jobs += [(path, n, "sm_90a", TMA_SIZES[base]) for n in names if args.filter in n]
    if not jobs:
        print("stdlib sim: no exports found", file=sys.stderr)
        return 1
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for ok, line, detail in pool.map(lambda j: run_one(args.tilec, *j, args.timeout), jobs):
            print(line, flush=True)
            if not ok:
                failed += 1
                print(detail, flush=True)
    print(f"stdlib sim: {len(jobs) - failed} as expected, {failed} failed "
          f"({len([j for j in jobs if j[1] in PENDING])} runs of exports not lowered yet)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
