#!/usr/bin/env bash
# Writes every stdlib kernel's compiled outputs into DIR, so that two builds of tilec can
# be compared byte for byte (a refactor that must not change the generated code):
#   tools/snapshot-outputs.sh TILEC DIR      then   diff -r DIR_before DIR_after
# Per kernel file: the Tile IR, the PTX for sm_80 / sm_89 / sm_90a, the AMDGPU assembly
# and HSACO for gfx90a / gfx942 / gfx1100, the host LLVM IR (for the x86-64-v3 CPU, so
# the result does not depend on the machine), and the C header.
set -euo pipefail
tilec="${1:?usage: snapshot-outputs.sh TILEC DIR}"
out="${2:?usage: snapshot-outputs.sh TILEC DIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$out"
cd "$root"
for k in stdlib/kernels/*.tile; do
    n="$(basename "$k" .tile)"
    "$tilec" "$k" --emit=tir >"$out/$n.tir"
    "$tilec" "$k" --emit=llvm --cpu=x86-64-v3 >"$out/$n.host.ll"
    "$tilec" "$k" --emit=header -o "$out/$n.h"
    "$tilec" "$k" --target=sm_80,sm_89,sm_90a --emit=ptx -o "$out/$n.ptx"
    "$tilec" "$k" --target=gfx90a,gfx942,gfx1100 --emit=amdgcn -o "$out/$n.s"
    "$tilec" "$k" --target=gfx942 --emit=hsaco -o "$out/$n.gfx942.hsaco"
done
echo "snapshot of $(ls "$out" | wc -l) files in $out"
