#!/usr/bin/env bash
# tools/bench/gpu-static.sh: what can be measured of the GPU code without a GPU, for the
# stdlib's gemm, flash attention and MLA decode on sm_80 (issue 11; MLA: issue 12):
#   - per export: registers, shared memory and spills, from ptxas (--verbose-resources);
#   - the simulator's memory counters of one run per kernel (gemm_f16 128 x 128 x 32 with
#     its 3-stage pipeline; attn_fwd and attn_fwd_d64 on one block of queries;
#     mla_decode_f16 on one block of 64 heads over 3 pages): for each
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
    sed -n '2,14s/^# \{0,1\}//p' "$0"
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

# MLA decode's _sm90a exports do not fit sm_80's shared memory: they are listed for sm_90a.
mla_sm80=(--export mla_decode_f16 --export mla_decode_bf16 --export mla_decode_h16_f16 --export mla_decode_h16_bf16)
"$tilec" stdlib/kernels/mla_decode.tile --target=sm_80 --emit=cubin -o "$tmp/mla.cubin" --verbose-resources \
    "${mla_sm80[@]}" 2>&1 | sed 's/^/  /'
echo "== ptxas resources, sm_90a (MLA decode)"
"$tilec" stdlib/kernels/mla_decode.tile --target=sm_90a --emit=cubin -o "$tmp/mla90.cubin" --verbose-resources 2>&1 |
    sed 's/^/  /'

echo "== PTX instruction mix, sm_80 (per kernel, static counts)"
printf '  %-22s %9s %9s %9s %9s\n' kernel mma.sync ldmatrix cp.async bar.sync
for k in gemm flash_attn mla_decode; do
    only=()
    [[ $k == mla_decode ]] && only=("${mla_sm80[@]}")
    "$tilec" "stdlib/kernels/$k.tile" --target=sm_80 --emit=ptx -o "$tmp/$k.ptx" ${only[@]+"${only[@]}"}
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
profile stdlib/kernels/mla_decode.tile -k mla_decode_f16 --size B=1,H=64,NP=3,MP=3 \
    --int-range block_table=0:2,cache_seqlens=192:192 --scalar scale=0.0417
