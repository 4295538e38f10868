#!/usr/bin/env bash
# tools/bench/gpu-static.sh: what can be measured of the GPU code without a GPU, for the
# stdlib's gemm and flash attention on sm_80 (issue 11):
#   - per export: registers, shared memory and spills, from ptxas (--verbose-resources);
#   - the simulator's memory counters of one run per kernel (gemm_f16 128 x 128 x 32 with
#     its 3-stage pipeline; attn_fwd and attn_fwd_d64 on one block of queries): for each
#     source line, shared-memory wavefronts against the ideal (bank conflicts: the cp.async
#     fills are the copies' shared stores, the ldmatrix reads the gemms' shared loads) and
#     global sectors per ideal;
#   - the instruction mix of the PTX (mma.sync, ldmatrix, cp.async, bar.sync per kernel).
# It prints figures; it passes or fails nothing (tests/lit/gpu-tensor-cores.tile checks).
#
#   tools/bench/gpu-static.sh [BUILD]     BUILD (default build/) holds a built tilec
set -euo pipefail
# shellcheck source=tools/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$tilec_root"
case "${1:-}" in
-h | --help)
    sed -n '2,13s/^# \{0,1\}//p' "$0"
    exit 0
    ;;
esac
build="${1:-build}"
tilec="$build/compiler/driver/tilec"
[[ -x "$tilec" ]] || die "$tilec not found: build tilec in $build first (tools/setup.sh)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== ptxas resources, sm_80"
for k in gemm flash_attn; do
    "$tilec" "stdlib/kernels/$k.tile" --target=sm_80 --emit=cubin -o "$tmp/$k.cubin" --verbose-resources 2>&1 |
        sed 's/^/  /'
done

echo "== PTX instruction mix, sm_80 (per kernel, static counts)"
printf '  %-22s %9s %9s %9s %9s\n' kernel mma.sync ldmatrix cp.async bar.sync
for k in gemm flash_attn; do
    "$tilec" "stdlib/kernels/$k.tile" --target=sm_80 --emit=ptx -o "$tmp/$k.ptx"
    awk '/^\.visible \.entry/ { if (name) printf "  %-22s %9d %9d %9d %9d\n", name, m, l, c, b;
                               name = $3; sub(/\(.*/, "", name); m = l = c = b = 0 }
         /mma\.sync/ { m++ } /ldmatrix/ { l++ } /cp\.async\.(ca|cg)/ { c++ } /bar\.sync/ { b++ }
         END { if (name) printf "  %-22s %9d %9d %9d %9d\n", name, m, l, c, b }' "$tmp/$k.ptx"
done

profile() {
    echo "== simulator counters: $*"
    "$tilec" run "$@" --target=sim:sm_80 --profile | sed -n '/memory counters/,/^reference/p' | grep -v '^reference' |
        sed 's/^/  /'
}
profile stdlib/kernels/gemm.tile -k gemm_f16 --size M=128,N=128,K=32
profile stdlib/kernels/gemm.tile -k gemm_f16_tt --size M=128,N=128,K=32
profile stdlib/kernels/flash_attn.tile -k attn_fwd --size B=1,H=1,S=128 --scalar scale=0.088
profile stdlib/kernels/flash_attn.tile -k attn_fwd_d64 --size B=1,H=1,S=256 --scalar scale=0.125
