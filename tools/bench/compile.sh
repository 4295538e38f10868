#!/usr/bin/env bash
# tools/bench/compile.sh: the compile-time rows of issue 15's table, timed with this
# build's tilec: gemm.tile -> sm_90a cubins (all exports, and one export alone), gemm.tile
# as one fat object (host, sm_80, sm_90a, gfx942), rebuilt from the compile cache after one
# export changed and unchanged, flash_attn.tile as one fat object.
# Each row: wall time and wall per export at -j1, the CPU time of the -j1 runs, and
# wall time and per export at -jN (N = the cores), medians of RUNS runs; then, per row, the stage split and the backend's longest chain from one `--time-passes` run at -j1 (work
# per stage summed over targets and exports). A benchmark that prints figures: it never
# fails on a time. Timings on a shared machine are noisy; run it when the machine is quiet.
#
#   tools/bench/compile.sh [BUILD_DIR] [--runs N] [--jobs N] [--quick]
#
# BUILD_DIR (or $BUILD; default build/): a built tilec tree (with LLVM; ptxas and ld.lld
# as tilec was configured). --quick: one run each and no flash_attn row (a smoke run).
# The compile cache is off for the runs (TILEC_CACHE_DIR is unset), but in its two rows: a
# rebuild after one export changed (its export level) and a rebuild of the unchanged file.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build}"
runs=3
jobs="$(nproc)"
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --quick) quick=1; runs=1; shift ;;
    -*) echo "compile.sh: unknown option $1 (options: --runs N, --jobs N, --quick)" >&2; exit 1 ;;
    *) build="$1"; shift ;;
  esac
done
tilec="$(cd "$build" && pwd)/compiler/driver/tilec"
[[ -x "$tilec" ]] || { echo "compile.sh: $tilec not found: build tilec in $build first" >&2; exit 1; }
unset TILEC_CACHE_DIR
out="$(mktemp -d "${TMPDIR:-/tmp}/tilec-compile-bench.XXXXXX")"
trap 'rm -rf "$out"' EXIT
gemm="$root/stdlib/kernels/gemm.tile"
attn="$root/stdlib/kernels/flash_attn.tile"

median() {
  sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f", m }'
}

# median_wall JOBS ARGS...: "WALL CPU", the median wall time and the median CPU time
# (user + system of tilec and the ptxas / ld.lld it waits for, by /usr/bin/time) in
# seconds of RUNS runs of tilec ARGS -jJOBS. On a shared machine the CPU time is the
# steadier figure: other processes' time slices stretch the wall time, not it.
median_wall() {
  local j="$1"; shift
  local walls=() cpus=()
  for ((r = 0; r < runs; r++)); do
    local t0 t1 cpu
    [[ -z "$before_run" ]] || $before_run
    t0="$(date +%s.%N)"
    cpu="$(/usr/bin/time -f '%U %S' "$tilec" "$@" -j "$j" 2>&1 >/dev/null | tail -1)"
    t1="$(date +%s.%N)"
    walls+=("$(echo "$t1 - $t0" | bc -l)")
    cpus+=("$(echo "$cpu" | awk '{ printf "%.3f", $1 + $2 }')")
  done
  echo "$(printf '%s\n' "${walls[@]}" | median) $(printf '%s\n' "${cpus[@]}" | median)"
}

# stage_split ARGS...: one -j1 --time-passes run, its tables summed per stage over targets,
# and its backend task graph's work and longest chain of dependent tasks (work / chain
# bounds what more cores can gain).
stage_split() {
  [[ -z "$before_run" ]] || $before_run
  "$tilec" "$@" -j 1 --time-passes 2>&1 >/dev/null | awk '
    /pass timing/ { table++; kind = (table == 1) ? "tile-passes" : "gpu-passes"; next }
    /backend timing/ { kind = ""; next }
    /longest chain/ { work = $3; chain = $(NF - 1); next }
    $1 == "stage" || $1 == "pass" { next }
    $1 == "total" { if (kind != "") ms[kind] += $2; next }
    kind == "" && NF >= 4 { ms[$1] += $2 }
    END {
      n = split("tile-passes gpu-passes cache-hit llvm-ir llvm-opt llvm-link llvm-codegen ptxas ld.lld", order, " ")
      for (i = 1; i <= n; i++) if (order[i] in ms) total += ms[order[i]]
      line = ""
      for (i = 1; i <= n; i++)
        if (order[i] in ms) line = line sprintf("%s %.2f s (%.0f%%), ", order[i], ms[order[i]] / 1000, 100 * ms[order[i]] / total)
      printf "    stage split (-j1): %s\n", substr(line, 1, length(line) - 2)
      if (chain > 0)
        printf "    backend tasks (-j1): %.2f s of work, longest chain %.2f s: at most %.1fx faster on more cores\n", work, chain, work / chain
    }'
}

# before_run: a command run (untimed) before each timed run of median_wall, or "".
before_run=""
# no_split: set for a row with no stage split.
no_split=""

# row NAME EXPORTS GOAL ARGS...: one line of the table, then its stage split.
row() {
  local name="$1" exports="$2" goal="$3"; shift 3
  local w1 c1 wn cn
  read -r w1 c1 <<<"$(median_wall 1 "$@")"
  read -r wn cn <<<"$(median_wall "$jobs" "$@")"
  printf '| %-48s | %7s s | %7s s | %7s s | %7s s | %7s s | %7s s | %-36s |\n' "$name" "$w1" \
    "$(echo "$w1 / $exports" | bc -l | xargs printf '%.3f')" "$c1" \
    "$(echo "$c1 / $exports" | bc -l | xargs printf '%.3f')" "$wn" \
    "$(echo "$wn / $exports" | bc -l | xargs printf '%.3f')" "$goal"
  # (--time-passes turns the whole-output cache off: no split for a row timing its hits.)
  [[ -n "$no_split" ]] || stage_split "$@"
}

echo "tilec compile time: $tilec"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores;" \
     "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); medians of $runs run(s); -jN = -j$jobs"
printf '| %-48s | %9s | %9s | %9s | %9s | %9s | %9s | %-36s |\n' "work" "-j1 wall" "-j1 /exp" "-j1 cpu" "cpu /exp" \
  "-j$jobs wall" "-j$jobs /exp" "goal (issue 15)"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..50})" "-----------" "-----------" "-----------" \
  "-----------" "-----------" "-----------" "$(printf -- '-%.0s' {1..38})"
# Per-export figures divide by the exports each file has today (counted, not assumed).
n_gemm="$(grep -c '^export ' "$gemm")"
# flash_attn.tile's _wg2 exports (two consumer warpgroups, 72 KiB of shared memory) do not
# fit gfx942's 64 KiB LDS: the row builds the others, which every target compiles.
attn_exports=()
while read -r name; do attn_exports+=(--export "$name"); done \
  < <(grep '^export ' "$attn" | sed -E 's/.* as ([A-Za-z0-9_]+);.*/\1/' | grep -v '_wg2$')
n_attn=$((${#attn_exports[@]} / 2))
row "gemm.tile ($n_gemm exports) -> sm_90a cubins" "$n_gemm" "<= 0.15 s per export" \
  "$gemm" --target=sm_90a --emit=cubin -o "$out/gemm.cubin"
row "gemm.tile, one export (gemm_f16) -> sm_90a" 1 "<= 0.3 s" \
  "$gemm" --export gemm_f16 --target=sm_90a --emit=cubin -o "$out/gemm1.cubin"
row "gemm.tile fat object (host,sm_80,sm_90a,gfx942)" "$n_gemm" "<= 0.6 s per export on one core" \
  "$gemm" --target=host,sm_80,sm_90a,gfx942 -o "$out/gemm.o"
# The compile cache's export level (docs/cli.md): a copy of gemm.tile built once into a
# cache, then one export renamed (its LLVM module changes, the others' do not) and the
# fat object built again from that cache as the first build left it (restored before each
# run, with the whole-output entries removed): what a CI rebuild costs after a change to
# one kernel of a library file.
mkdir -p "$out/edit"
cp "$gemm" "$out/edit/gemm.tile"
TILEC_CACHE_DIR="$out/warm-cache" "$tilec" "$out/edit/gemm.tile" --target=host,sm_80,sm_90a,gfx942 \
  -o "$out/edit/gemm.o" >/dev/null
find "$out/warm-cache" -mindepth 1 -maxdepth 1 ! -name exports -exec rm -rf {} +
sed -i 's/ as gemm_f16_m64;/ as gemm_f16_m64_renamed;/' "$out/edit/gemm.tile"
grep -q 'as gemm_f16_m64_renamed;' "$out/edit/gemm.tile" || { echo "compile.sh: gemm_f16_m64 not found in $gemm" >&2; exit 1; }
restore_cache() { rm -rf "$out/cache"; cp -r "$out/warm-cache" "$out/cache"; }
before_run=restore_cache
export TILEC_CACHE_DIR="$out/cache"
row "gemm.tile fat object, 1 export changed, cached" "$n_gemm" "(the others' GPU code from the cache)" \
  "$out/edit/gemm.tile" --target=host,sm_80,sm_90a,gfx942 -o "$out/edit/gemm.o"
before_run=""
# And unchanged: the whole outputs from the cache (a CI rebuild in a fresh build folder).
TILEC_CACHE_DIR="$out/full-cache" "$tilec" "$gemm" --target=host,sm_80,sm_90a,gfx942 -o "$out/gemm.o" >/dev/null
export TILEC_CACHE_DIR="$out/full-cache"
no_split=1
row "gemm.tile fat object, unchanged, cached" "$n_gemm" "(the outputs from the cache)" \
  "$gemm" --target=host,sm_80,sm_90a,gfx942 -o "$out/gemm.o"
no_split=""
unset TILEC_CACHE_DIR
if [[ $quick -eq 0 ]]; then
  row "flash_attn.tile fat object ($n_attn exports)" "$n_attn" "<= 2 s per export" \
    "$attn" "${attn_exports[@]}" --target=host,sm_80,sm_90a,gfx942 -o "$out/attn.o"
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
