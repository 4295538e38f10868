"""The stdlib's exports, and those the GPU lowering does not cover yet (tests/stdlib)."""

import os
import re

# Exports the GPU lowering refuses today (issue 4 is widening it).
PENDING = set()

# Exports whose tiles need more shared memory than some GPU targets have, and the
# targets they are for: MLA decode with DeepSeek's tiles takes 144 KiB a block (226 KiB
# with two stages, sm_90a only), which the data-center parts allow (sm_80: 163 KiB,
# sm_90/sm_90a: 227 KiB) but not sm_86/sm_89 (99 KiB) nor AMD's 64 KiB of LDS. The other targets must refuse them with a located
# error (sim.py) and are built without them (images.py). Their files export smaller
# tiles for every target too.
ONLY_ON = {
    "mla_decode_f16": {"sm_80", "sm_90", "sm_90a"},
    "mla_decode_bf16": {"sm_80", "sm_90", "sm_90a"},
    # Two stages: 226 KiB with wgmma; sm_90's mma.sync path keeps p and the reductions'
    # scratch apart from the k_pe stages, 232 KiB, above its 227.
    "mla_decode_f16_sm90a": {"sm_90a"},
    "mla_decode_bf16_sm90a": {"sm_90a"},
}


def fits(name, target):
    """Whether export `name` is expected to compile for `target` (see ONLY_ON)."""
    return name not in ONLY_ON or target in ONLY_ON[name]


# How tilec refuses an export it cannot compile for a target: any located error.
LOCATED_ERROR_RE = re.compile(r"^[^\s:]+:\d+:\d+: error: ", re.M)

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
