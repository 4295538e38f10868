#!/usr/bin/env bash
# The end-to-end checks on a real NVIDIA GPU (tests/gpu): every stdlib export the GPU path
# lowers, built into objects with --target=host,sm_80,sm_90a, run through NAME_cuda on
# device memory and compared with NAME_cpu (random inputs, ragged shapes, poisoned
# outputs). Exit status: 0 passed, 1 failed, 77 skipped (no CUDA driver or device; the
# harness prints "SKIP: <reason>"), 2 usage or build errors.
#
#   tools/gpu-check.sh [BUILD]              build here (tilec, the objects, the harness),
#                                           then run; BUILD defaults to build
#   tools/gpu-check.sh --build-only [BUILD] build only, and print how to run it elsewhere
#   tools/gpu-check.sh --run-only [BUILD]   run the harness already built in
#                                           BUILD/tests/gpu (no CMake, no LLVM, no CUDA
#                                           toolkit needed: only the driver)
#   ... -- ARGS                             ARGS go to the harness, e.g. -- --filter gemm
#
# On a GPU machine lent by the workplace (its `run` tool copies the worktree and the
# ignored paths named in `carry` to a machine with the GPU, CUDA 13 and a driver, but no
# LLVM, so it cannot build tilec): build here, then run there, e.g.
#   tools/gpu-check.sh --build-only build
#   run  command="tools/gpu-check.sh --run-only build"  carry=["build/tests/gpu"]  timeout_s=300
# The harness links libtile_runtime and the C++ runtime statically and its host code is
# built for any x86-64-v2 CPU, so build/tests/gpu is all it needs (well under the 64 MiB
# that `carry` takes). Record the output (one PASS/FAIL line per export and shape).
set -euo pipefail
# shellcheck source=tools/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$tilec_root"

tilec_build_run_args 24 "$@"

harness="$build/tests/gpu/tilec_gpu_e2e"

if [[ "$mode" != run ]]; then
    tilec_configure "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEC_BUILD_TESTS=ON -DTILEC_WITH_LLVM=ON
    if ! grep -q '^TILEC_PTXAS:FILEPATH=/' "$build/CMakeCache.txt"; then
        echo "error: $build was configured without ptxas (-DTILEC_PTXAS=/path/to/ptxas): no cubins, no tests/gpu" >&2
        exit 2
    fi
    tilec_build "$build" tilec_gpu_e2e
    if [[ "$mode" == build ]]; then
        echo "== built $harness"
        echo "run it where the GPU is: tools/gpu-check.sh --run-only $build   (carry $build/tests/gpu)"
        exit 0
    fi
fi

if [[ ! -x "$harness" ]]; then
    echo "error: $harness is not built (tools/gpu-check.sh --build-only $build first)" >&2
    exit 2
fi
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | sed 's/^/== GPU: /' || true
fi
echo "== run $harness ${passthrough_args[*]}"
set +e
"$harness" "${passthrough_args[@]}"
status=$?
set -e
case "$status" in
0) echo "== gpu-check: passed" ;;
77) echo "== gpu-check: skipped (see the SKIP line above)" ;;
*) echo "== gpu-check: FAILED (exit status $status)" ;;
esac
exit "$status"
