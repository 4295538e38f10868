#!/usr/bin/env python3
"""Checks the harness's view of each export against the generated headers: for every
case `tilec_gpu_e2e --list` prints (name and the parameters its family passes, in order),
the header's NAME_cuda prototype must take exactly those tensors and sizes in that order,
then that many scalars. The harness passes arguments by position, so this is what makes
a family's order right. Usage: check_signatures.py HARNESS HEADER_DIR"""
import glob
import re
import subprocess
import sys


def main():
    harness, header_dir = sys.argv[1], sys.argv[2]
    listed = subprocess.run([harness, "--list"], check=True, capture_output=True, text=True).stdout.split("\n")
    prototypes = {}
    for header in glob.glob(header_dir + "/gpu_*.h"):
        text = open(header).read()
        for name, params in re.findall(r"tile_status (\w+)_cuda\(void\* stream,([^;]*)\);", text):
            names = []
            for p in params.split(","):
                p = " ".join(p.split())
                kind = "tensor" if "*" in p else ("size" if p.startswith("int64_t ") else "scalar")
                names.append((kind, p.split(" ")[-1].lstrip("*")))
            prototypes[name] = names
    failures, checked = 0, 0
    for line in listed:
        if not line.strip():
            continue
        name, params = line.split(" ")
        want = params.split(",")
        have = prototypes.get(name)
        if have is None:
            print(f"FAIL {name}: no {name}_cuda in the headers of {header_dir}")
            failures += 1
            continue
        got = [n if kind != "scalar" else "<scalar>" for kind, n in have]
        if got != want:
            print(f"FAIL {name}: the harness passes ({', '.join(want)}), {name}_cuda takes ({', '.join(got)})")
            failures += 1
        checked += 1
    print(f"{checked} cases checked against their prototypes, {failures} failed")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
