"""The stdlib's exports, and those the GPU lowering does not cover yet (tests/stdlib)."""

import os
import re

# Exports the GPU lowering refuses today (issue 4 is widening it).
PENDING = set()

EXPORT_RE = re.compile(r"^\s*export\s+[^;]*\bas\s+([A-Za-z_][A-Za-z_0-9]*)\s*;", re.M)

# How tilec refuses a construct the GPU lowering does not cover.
REFUSED_RE = re.compile(r"^[^\s:]+:\d+:\d+: error: .* is not supported for GPU targets yet", re.M)


def stdlib_exports(root):
    """[(path of a stdlib/kernels file, [its export names])], files in name order."""
    kdir = os.path.join(root, "stdlib", "kernels")
    out = []
    for fname in sorted(os.listdir(kdir)):
        if fname.endswith(".tile"):
            path = os.path.join(kdir, fname)
            with open(path, encoding="utf-8") as f:
                names = EXPORT_RE.findall(f.read())
            if names:
                out.append((path, names))
    return out
