#!/usr/bin/env bash
# Writes every stdlib kernel's compiled outputs into DIR, so that two builds of tilec can
# be compared byte for byte (a refactor that must not change the generated code):
#   tools/snapshot-outputs.sh TILEC DIR      then   diff -r DIR_before DIR_after
# Per kernel file: the Tile IR, the PTX for sm_80 / sm_89 / sm_90a, the AMDGPU assembly
# for gfx90a / gfx942 / gfx1100 and the gfx942 HSACO (each arch with the exports that fit it),
# the host LLVM IR (for the x86-64-v3 CPU, so
# the result does not depend on the machine), and the C header.
set -euo pipefail
tilec="${1:?usage: snapshot-outputs.sh TILEC DIR}"
out="${2:?usage: snapshot-outputs.sh TILEC DIR}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$out"
cd "$root"
# exports_for FILE ARCH: --export=NAME for each export tests/stdlib/exports.py expects to
# compile for ARCH (some need more shared memory than an arch has).
exports_for() {
    python3 - "$1" "$2" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "stdlib"))
from exports import EXPORT_RE, fits
for name in EXPORT_RE.findall(open(sys.argv[1]).read()):
    if fits(name, sys.argv[2]):
        print("--export=" + name)
PY
}
for k in stdlib/kernels/*.tile; do
    n="$(basename "$k" .tile)"
    "$tilec" "$k" --emit=tir >"$out/$n.tir"
    "$tilec" "$k" --emit=llvm --cpu=x86-64-v3 >"$out/$n.host.ll"
    "$tilec" "$k" --emit=header -o "$out/$n.h"
    for arch in sm_80 sm_89 sm_90a gfx90a gfx942 gfx1100; do
        mapfile -t picked < <(exports_for "$k" "$arch")
        case "$arch" in
        sm_*) "$tilec" "$k" --target="$arch" "${picked[@]}" --emit=ptx -o "$out/$n.$arch.ptx" ;;
        *) "$tilec" "$k" --target="$arch" "${picked[@]}" --emit=amdgcn -o "$out/$n.$arch.s" ;;
        esac
    done
    mapfile -t picked < <(exports_for "$k" gfx942)
    "$tilec" "$k" --target=gfx942 "${picked[@]}" --emit=hsaco -o "$out/$n.gfx942.hsaco"
done
echo "snapshot of $(ls "$out" | wc -l) files in $out"
