#!/usr/bin/env python3
"""Every stdlib kernel file compiled to GPU images: cubins for every sm arch, HSACO for
every gfx target, each export present with its metadata.

For each stdlib/kernels/*.tile this runs

    tilec FILE --emit=cubin --target=sm_80,sm_86,sm_89,sm_90,sm_90a -o DIR/k.cubin
    tilec FILE --emit=hsaco --target=gfx90a,gfx942,gfx1100 -o DIR/k.hsaco

(ptxas assembles the PTX of every export for every arch; ld.lld links every code
object) and checks the images with llvm-readelf: each cubin defines every export as a
function symbol; each HSACO's metadata note (amdhsa.kernels) names every export with
the wavefront size of its target (64 on gfx9, 32 on gfx11) and a kernarg segment.
Exports whose tiles need more shared memory than a target has (exports.py, ONLY_ON) are
left out of that target's image (--export lists the others; the targets are then
compiled in groups that take the same exports).
A file with an export the GPU lowering does not cover yet (exports.py, PENDING) must be
refused with a located "not supported for GPU targets yet" error instead; one that
starts to compile fails the test, so the list cannot go stale.
Exit status 0 when everything is as expected, 1 otherwise.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time

from exports import PENDING, REFUSED_RE, fits, stdlib_exports

SM_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")
GFX_TARGETS = ("gfx90a", "gfx942", "gfx1100")


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                           timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"


def check_cubin(readelf, path, names, timeout):
    rc, out = run([readelf, "--symbols", "--wide", path], timeout)
    if rc != 0:
        return [f"llvm-readelf --symbols {path} failed:\n{out}"]
    funcs = {line.split()[-1] for line in out.splitlines() if " FUNC " in line}
    return [f"{os.path.basename(path)}: no function symbol {n}" for n in names if n not in funcs]


def check_hsaco(readelf, path, names, target, timeout):
    rc, out = run([readelf, "--notes", "--wide", path], timeout)
    if rc != 0:
        return [f"llvm-readelf --notes {path} failed:\n{out}"]
    wave = 32 if target.startswith("gfx1") else 64
    problems = []
    # One metadata note for every kernel (the driver compiles each export to its own
    # object and joins their notes: codegen::link_hsaco).
    notes = len(re.findall(r"NT_AMDGPU_METADATA", out))
    if notes != 1:
        problems.append(f"{os.path.basename(path)}: {notes} NT_AMDGPU_METADATA notes, not one")
    # The kernels' metadata: one map per kernel under amdhsa.kernels, each with .name,
    # .symbol (NAME.kd), .wavefront_size and .kernarg_segment_size among its keys.
    for n in names:
        if not re.search(rf"^\s*\.symbol:\s+{re.escape(n)}\.kd\s*$", out, re.M):
            problems.append(f"{os.path.basename(path)}: no kernel descriptor symbol {n}.kd in the metadata")
    sizes = re.findall(r"^\s*\.wavefront_size:\s+(\d+)\s*$", out, re.M)
    if len(sizes) != len(names) or any(int(s) != wave for s in sizes):
        problems.append(f"{os.path.basename(path)}: wavefront sizes {sizes}, expected {wave} for each of {len(names)} kernels")
    if len(re.findall(r"^\s*\.kernarg_segment_size:\s+\d+\s*$", out, re.M)) != len(names):
        problems.append(f"{os.path.basename(path)}: not one .kernarg_segment_size per kernel")
    return problems


def check_file(tilec, readelf, path, names, kind, timeout):
    """Compile one file for one image kind ('cubin' or 'hsaco'); -> (ok, line, detail).
    Targets that take different exports (ONLY_ON) compile in separate groups."""
    all_targets = SM_ARCHS if kind == "cubin" else GFX_TARGETS
    groups = {}
    for t in all_targets:
        groups.setdefault(tuple(n for n in names if fits(n, t)), []).append(t)
    lines, details, ok_all = [], [], True
    for group_names, targets in groups.items():
        only = [] if list(group_names) == names else [a for n in group_names for a in ("--export", n)]
        ok, line, detail = check_group(tilec, readelf, path, list(group_names), kind, targets, only, timeout)
        ok_all &= ok
        lines.append(line)
        if detail:
            details.append(detail)
    return ok_all, "\n".join(lines), ("\n".join(details) or None)


def check_group(tilec, readelf, path, names, kind, targets, only, timeout):
    pending = [n for n in names if n in PENDING]
    with tempfile.TemporaryDirectory(prefix="tilec-images-") as d:
        out = os.path.join(d, "k." + kind)
        cmd = [tilec, path, f"--emit={kind}", "--target=" + ",".join(targets), "-o", out, *only]
        start = time.monotonic()
        rc, text = run(cmd, timeout)
        took = time.monotonic() - start
        label = f"{os.path.basename(path)} {kind} ({', '.join(targets)})"
        if pending:
            if rc == 1 and REFUSED_RE.search(text):
                return True, f"{label}: refused as expected ({len(pending)} exports not lowered yet)", None
            verdict = "now compiles: remove its exports from PENDING" if rc == 0 else "FAILED"
            return False, f"{label}: {verdict}", " ".join(cmd) + "\n" + text
        if rc != 0:
            return False, f"{label}: FAILED", " ".join(cmd) + "\n" + text
        problems = []
        for t in targets:
            image = out if len(targets) == 1 else os.path.join(d, f"k.{t}.{kind}")
            if not os.path.isfile(image) or os.path.getsize(image) == 0:
                problems.append(f"missing or empty {os.path.basename(image)}")
            elif kind == "cubin":
                problems += check_cubin(readelf, image, names, timeout)
            else:
                problems += check_hsaco(readelf, image, names, t, timeout)
        if problems:
            return False, f"{label}: FAILED", "\n".join(problems)
        return True, f"{label}: {len(names)} exports, {len(targets)} images ok ({took:.1f} s)", None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--readelf", required=True, help="llvm-readelf")
    ap.add_argument("--root", required=True, help="the repository (stdlib/kernels is read from it)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--filter", default="", help="only files whose name contains this")
    args = ap.parse_args()

    jobs = [(p, n, k) for p, n in stdlib_exports(args.root) if args.filter in os.path.basename(p)
            for k in ("cubin", "hsaco")]
    if not jobs:
        print("stdlib images: no kernel files found", file=sys.stderr)
        return 1
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for ok, line, detail in pool.map(lambda j: check_file(args.tilec, args.readelf, *j, args.timeout), jobs):
            print(line, flush=True)
            if not ok:
                failed += 1
                print(detail, flush=True)
    print(f"stdlib images: {len(jobs) - failed} as expected, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
