#!/usr/bin/env bash
# tools/bench/cpu.sh: builds and runs tile_bench, the CPU table of issue 15 in one run:
# softmax / rmsnorm / layernorm f32 at 4096 x 4096 in GB/s next to memcpy of the same
# bytes; GEMM f32 and f16 at 1024^3, 2048^3 and 2000^3 (ragged: edge blocks) in GFLOP/s next to OpenBLAS's sgemm
# (dlopen'ed when libopenblas.so.0 is installed, e.g. Debian's libopenblas0-pthread;
# column skipped otherwise) and as a share of the measured FMA peak. See bench.cpp.
#
#   tools/bench/cpu.sh [BUILD_DIR] [tile_bench options: --quick --reps N --threads T --only rows|gemm --cpu-time --offset B]
#
# BUILD_DIR (or $BUILD; default build/) is a configured and built tilec tree: its tilec
# compiles the kernels and its libtile_runtime.a is linked. Outputs go to
# BUILD_DIR/bench/. Not part of ctest (minutes); ctest runs `tile_bench --quick` only.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build}"
if [[ $# -gt 0 && "$1" != -* ]]; then
  build="$1"
  shift
fi
build="$(cd "$build" && pwd)"
tilec="$build/compiler/driver/tilec"
runtime="$build/runtime/libtile_runtime.a"
for f in "$tilec" "$runtime"; do
  [[ -e "$f" ]] || { echo "cpu.sh: $f not found: build tilec in $build first" >&2; exit 1; }
done

out="$build/bench"
mkdir -p "$out"
# The same kernels the stdlib exports, compiled by this tilec, plus bench.tile's f32 GEMM.
"$tilec" "$root/stdlib/kernels/gemm.tile" -o "$out/gemm.o"
for k in softmax rmsnorm layernorm; do
  "$tilec" "$root/stdlib/kernels/$k.tile" -o "$out/$k.o"
done
"$tilec" "$root/tools/bench/bench.tile" -o "$out/bench.o"
"${CXX:-c++}" -std=c++17 -O3 -march=native -Wall -Wextra -I"$out" -I"$root/runtime/include" \
  "$root/tools/bench/bench.cpp" "$out/gemm.o" "$out/softmax.o" "$out/rmsnorm.o" "$out/layernorm.o" "$out/bench.o" "$runtime" \
  -lpthread -ldl -o "$out/tile_bench"

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//') ($(nproc) threads available)"
exec "$out/tile_bench" "$@"
