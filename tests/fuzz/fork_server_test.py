#!/usr/bin/env python3
"""tilec-fork-server (tools/fuzz/fork_server.cpp) answers as tilec itself does.

The fuzzers judge tilec by its exit status and output; through the fork server they
must see what a tilec process gives. For a few command lines (a compile, a user error,
an internal error, `tilec run` on two targets, arguments with spaces and an empty one)
this runs tilec as a process and through the server (fuzzlib.run) and compares the exit
status and the output (`tilec run`'s timings masked); then a run past its time-out must
come back as a time-out (None), with every process it started killed (the compiled
kernel's included), and the next request must still be answered. Exit status 0 when all agree, 1 otherwise.
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "fuzz"))
import fuzzlib  # noqa: E402

SPIN = """kernel spin(X: f32[N], Y: out f32[N]) grid(1) threads(1)
{
    fragment a: f32[1];
    fill(a, 0);
    for i in range(4000000000000) {
        a[0] = a[0] + 1.0;
    }
    copy(a, Y[0]);
}
export spin as spin;
"""


def masked(text):
    """The output without what differs from run to run: times, and the temporary paths."""
    return re.sub(r"\d+(\.\d+)? (ms|us|s|ns)\b", "T", text)


def session_members(sid):
    """The live processes of session `sid` (from /proc), as pids."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command's closing parenthesis: state, ppid, pgrp, session, ...
        if fields[0] != "Z" and int(fields[3]) == sid:
            found.append(int(name))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--server", required=True)
    args = ap.parse_args()
    tilec = args.tilec
    work = tempfile.mkdtemp(prefix="tilec-fork-server-test-")
    good = os.path.join(REPO, "stdlib", "kernels", "vector_add.tile")
    bad = os.path.join(work, "bad.tile")
    with open(bad, "w") as f:
        f.write("kernel k(A: f32[N]) grid(1) threads(32) {\n    fill(A, ;\n}\n")
    spin = os.path.join(work, "spin.tile")
    with open(spin, "w") as f:
        f.write(SPIN)
    cases = [
        [tilec, "--version"],
        [tilec, good, "--emit=tir"],
        [tilec, good, "--target=host,sm_80,gfx942", "-j", "1", "-o", os.path.join(work, "v.o")],
        [tilec, bad, "--emit=tir"],
        [tilec, good, "--emit=tir", "--debug-internal-error"],
        [tilec, good, "--emit=tir", "-D", "a b=", "-D", ""],
        [tilec, "run", good, "-k", "vector_add_f16", "-s", "N=1000", "--target=host,sim:sm_80", "--repeat", "1"],
        [tilec, "run", good, "-k", "vector_add_f16", "-s", "N=10", "--sim-blocks", "2"],
    ]
    direct = [fuzzlib.run(c, 120) for c in cases]
    fuzzlib.use_fork_server(tilec, args.server)
    served = [fuzzlib.run(c, 120) for c in cases]
    failures = 0
    for cmd, (dc, do, _), (sc, so, _) in zip(cases, direct, served):
        if dc != sc or masked(do) != masked(so):
            failures += 1
            print(f"DIFFERENT: {' '.join(cmd[1:])}\n  process: exit {dc}\n{do}\n  server: exit {sc}\n{so}")
        else:
            print(f"same: exit {dc}: {' '.join(cmd[1:])}")
    # Sanity of the cases themselves: each of 0, 1 and 2 was seen.
    codes = {c for c, _, _ in direct}
    if not {0, 1, 2} <= codes:
        failures += 1
        print(f"FAILED: the cases should exit 0, 1 and 2 between them, not only {sorted(codes)}")
    start = time.monotonic()
    code, out, _ = fuzzlib.run([tilec, "run", spin, "-s", "N=4", "--repeat", "1"], 2)
    took = time.monotonic() - start
    if code is not None or took > 30:
        failures += 1
        print(f"FAILED: a run past its 2 s time-out came back as exit {code} after {took:.1f} s\n{out}")
    else:
        print(f"time-out: reported after {took:.1f} s")
    # The compiled kernel ran in a grandchild of the server (tilec run's isolation): the
    # time-out must have killed it too, not left it spinning outside any process group.
    server = fuzzlib._local.server.pid
    time.sleep(0.5)
    left = [p for p in session_members(os.getsid(server)) if p != server]
    if left:
        failures += 1
        print(f"FAILED: processes of the timed-out run still alive: {left}")
    code, out, _ = fuzzlib.run([tilec, "--version"], 60)
    if code != 0 or "tilec" not in out:
        failures += 1
        print(f"FAILED: after the time-out, --version gave exit {code}: {out}")
    shutil.rmtree(work, ignore_errors=True)
    return failures, len(cases) + 3


if __name__ == "__main__":
    failed, checks = main()
    print(f"fork_server_test: {checks - failed} passed, {failed} failed")
    sys.exit(min(failed, 1))
