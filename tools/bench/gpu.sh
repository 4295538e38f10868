#!/usr/bin/env bash
# tools/bench/gpu.sh: the GPU benchmark of tilec-compiled kernels on a real NVIDIA GPU,
# each next to PyTorch's own kernel for the same problem in the same run (cuBLAS for
# GEMM, torch.softmax, scaled_dot_product_attention for attention, and for MLA decode
# SDPA over the pages gathered through the block table): time per call,
# TFLOP/s or GB/s, the ratio tilec / torch, and the max error against torch's result.
#
#   tools/bench/gpu.sh [BUILD]              build here, then run (needs a GPU and torch)
#   tools/bench/gpu.sh --build-only [BUILD] build BUILD/bench/gpu only
#   tools/bench/gpu.sh --run-only [BUILD]   run what BUILD/bench/gpu holds (no LLVM needed:
#                                           python3 with torch, and the CUDA driver)
#   ... -- ARGS                             ARGS go to gpu_bench.py, e.g. -- --quick, or
#                                           -- --sweep (tile-shape variants of GEMM,
#                                           tools/bench/gemm_sweep.tile, next to cuBLAS)
#
# BUILD (default build/) is a configured and built tilec tree. The kernels are the
# stdlib's gemm, softmax, flash_attn and mla_decode exports, compiled with --target=host,sm_80,sm_90a
# (host code for any x86-64-v2 CPU) and linked with libtile_runtime.so into BUILD/bench/gpu/libtilec_bench_gpu.so, which
# gpu_bench.py loads with ctypes and calls on torch's tensors and current stream. On a
# GPU machine lent by the workplace (no LLVM there): build here, then
#   run  command="tools/bench/gpu.sh --run-only build"  carry=["build/bench/gpu"]
# Exit status: 0 ran, 77 skipped (no torch, no GPU), 1 failed, 2 usage or build errors.
# Not part of ctest. Results on real GPUs: docs/gpu-results.md.
set -euo pipefail
# shellcheck source=tools/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$tilec_root"

tilec_build_run_args 20 "$@"

out="$build/bench/gpu"
lib="$out/libtilec_bench_gpu.so"
if [[ "$mode" != run ]]; then
    tilec="$build/compiler/driver/tilec"
    runtime="$build/runtime/libtile_runtime.so.0"
    for f in "$tilec" "$runtime"; do
        [[ -e "$f" ]] || { echo "error: $f not found: build tilec in $build first" >&2; exit 2; }
    done
    mkdir -p "$out"
    for k in gemm softmax flash_attn mla_decode; do
        echo "== tilec $k.tile (host, sm_80, sm_90a)"
        only=()
        [[ $k == mla_decode ]] && only=(--export mla_decode_f16 --export mla_decode_bf16 --export mla_decode_h16_f16)
        "$tilec" "stdlib/kernels/$k.tile" --target=host,sm_80,sm_90a --cpu=x86-64-v2 -o "$out/$k.o" ${only[@]+"${only[@]}"}
    done
    echo "== tilec mla_decode.tile _sm90a exports (host, sm_90a): two stages, 226 KiB of shared memory"
    "$tilec" stdlib/kernels/mla_decode.tile --target=host,sm_90a --cpu=x86-64-v2 -o "$out/mla_decode_sm90a.o" \
        --export mla_decode_f16_sm90a --export mla_decode_bf16_sm90a
    echo "== tilec tools/bench/gemm_sweep.tile (host, sm_90a): tile-shape variants for --sweep"
    "$tilec" tools/bench/gemm_sweep.tile --target=host,sm_90a --cpu=x86-64-v2 -o "$out/gemm_sweep.o"
    grep -o 'sweep_[0-9a-z_]*_cuda' "$out/gemm_sweep.h" | sed 's/_cuda$//' | sort -u >"$out/gemm_sweep.txt"
    cp -L "$runtime" "$out/libtile_runtime.so.0"
    # shellcheck disable=SC2016  # $ORIGIN is for the dynamic linker, not the shell
    "${CC:-cc}" -shared -o "$lib" "$out/gemm.o" "$out/softmax.o" "$out/flash_attn.o" "$out/mla_decode.o" "$out/mla_decode_sm90a.o" \
        "$out/gemm_sweep.o" "$out/libtile_runtime.so.0" -Wl,-rpath,'$ORIGIN' -lm
    cp tools/bench/gpu_bench.py "$out/"
    echo "== built $lib"
    if [[ "$mode" == build ]]; then
        echo "run it where the GPU is: tools/bench/gpu.sh --run-only $build   (carry $out)"
        exit 0
    fi
fi
[[ -e "$lib" ]] || { echo "error: $lib is not built (tools/bench/gpu.sh --build-only $build first)" >&2; exit 2; }
exec python3 "$out/gpu_bench.py" --lib "$lib" "${passthrough_args[@]}"
