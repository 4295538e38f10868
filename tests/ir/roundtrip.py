#!/usr/bin/env python3
"""Printed Tile IR read back by `tilec opt` prints again identically, for every stdlib export.

For each stdlib/kernels/*.tile file:
  - tile level: `tilec FILE --emit=tir` -> `tilec opt --passes=` (read, verify, print)
    must give back the same text;
  - thread level: the IR that `tilec FILE --target=ARCH --print-after-all` shows after
    every pass (sm_80: --emit=ptx, gfx942: --emit=amdgcn; the eight GPU passes of
    build_gpu_passes; exports too large for the arch, tests/stdlib/exports.py ONLY_ON,
    left out with --export), split on its `// ---- IR after <pass> (<func>) ----` header
    lines, is read back the same way and must print identically. Any other
    `// ---- ...` section is not IR and is skipped, and so are the `// layout ...`
    comment lines inside a function (from layout-inference to lower-tile-ops): the
    reader skips them (running layout-inference again recomputes the layouts), so the
    comparison is made with them removed from the expected text.
This is what proves that the text determines the IR (the reader's and the printer's
contract): a name bound to the wrong Var, a lost type or a misread literal shows here.
Exit status 0 when every text comes back identical, 1 otherwise.
"""

import argparse
import concurrent.futures
import difflib
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stdlib"))
from exports import EXPORT_RE, fits  # noqa: E402  (tests/stdlib/exports.py)

ARCHS = [("sm_80", "ptx"), ("gfx942", "amdgcn")]
HEADER = re.compile(r"^// ---- (.*) ----$")
LAYOUT_LINE = re.compile(r"^\s*// layout ")


def opt_roundtrip(tilec, text):
    """(ok, printed or error) of `tilec opt - --passes=` on text."""
    p = subprocess.run([tilec, "opt", "-", "--passes="], input=text, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return False, p.stderr
    return True, p.stdout


def ir_sections(stderr):
    """The function texts after each `// ---- IR after ... ----` header."""
    sections, current = [], None
    for line in stderr.splitlines(keepends=True):
        m = HEADER.match(line.rstrip("\n"))
        if m:
            current = [] if m.group(1).startswith("IR after ") else None
            if current is not None:
                sections.append((m.group(1), current))
            continue
        if current is not None and not LAYOUT_LINE.match(line):
            current.append(line)
    return [(h, "".join(lines)) for h, lines in sections]


def compare(label, expected, tilec):
    ok, got = opt_roundtrip(tilec, expected)
    if not ok:
        return f"FAIL {label}: tilec opt could not read it:\n{got}"
    if got != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), got.splitlines(True), "printed", "re-read",
                                            n=2))
        return f"FAIL {label}: re-printed text differs:\n{diff[:4000]}"
    return None


def check_file(tilec, path):
    name = os.path.basename(path)
    failures, count = [], 0
    p = subprocess.run([tilec, path, "--emit=tir"], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return [f"FAIL {name}: --emit=tir failed:\n{p.stderr}"], 0
    err = compare(f"{name} tile level", p.stdout, tilec)
    count += 1
    if err:
        failures.append(err)
    with open(path, encoding="utf-8") as f:
        names = EXPORT_RE.findall(f.read())
    for arch, emit in ARCHS:
        only = [] if all(fits(n, arch) for n in names) else [a for n in names if fits(n, arch) for a in ("--export", n)]
        p = subprocess.run([tilec, path, f"--target={arch}", f"--emit={emit}", "-o", os.devnull,
                            "--print-after-all", *only], capture_output=True, text=True, timeout=300)
        sections = ir_sections(p.stderr)
        if not sections:
            failures.append(f"FAIL {name} {arch}: no IR printed by --print-after-all:\n{p.stderr[:2000]}")
            continue
        # One `tilec opt` run per file and arch: the functions one after another, as
        # print(Module) separates them (a blank line).
        module = "\n".join(text for _, text in sections)
        err = compare(f"{name} {arch} ({len(sections)} functions after passes)", module, tilec)
        count += len(sections)
        if err:
            # Narrow it down to the first section that fails alone.
            for header, text in sections:
                e = compare(f"{name} {arch} after {header}", text, tilec)
                if e:
                    err = e
                    break
            failures.append(err)
    return failures, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--root", required=True, help="the repository (stdlib/kernels is read from it)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.root, "stdlib", "kernels", "*.tile")))
    if not files:
        print("no stdlib kernels found", file=sys.stderr)
        return 1
    total, failed = 0, 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for path, (failures, count) in zip(files, pool.map(lambda f: check_file(args.tilec, f), files)):
            total += count
            status = "ok" if not failures else "FAIL"
            print(f"{status:4} {os.path.basename(path)}: {count} function texts")
            for f in failures:
                print(f)
            failed += len(failures)
    print(f"{total} function texts read back; {failed} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
