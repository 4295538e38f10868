#!/usr/bin/env bash
# The whole test suite in one command: brings build/ up to date, builds the sanitizer
# (ASan + UBSan) tilec in build-asan/, and runs ctest in build/; the robustness test
# uses the sanitizer binary too. Run tools/setup.sh once first.
#
#   tools/test.sh                  everything
#   tools/test.sh --no-asan        skip the sanitizer build (and its robustness run)
#   tools/test.sh -R lit           extra arguments go to ctest
set -euo pipefail
# shellcheck source=tools/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$tilec_root"

asan=1
ctest_args=()
for arg in "$@"; do
    case "$arg" in
    --no-asan) asan=0 ;;
    -h | --help)
        sed -n '2,9s/^# \{0,1\}//p' "$0"
        exit 0
        ;;
    *) ctest_args+=("$arg") ;;
    esac
done

start=$SECONDS
report_time() { echo "== test.sh: total time $((SECONDS - start)) s"; }
trap report_time EXIT

tilec_configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEC_BUILD_TESTS=ON -DTILEC_WITH_LLVM=ON
tilec_build build

if ((asan)); then
    tilec_configure build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEC_SANITIZE=ON -DTILEC_BUILD_TESTS=OFF -DTILEC_WITH_LLVM=OFF
    tilec_build build-asan tilec
    export TILEC_ASAN_BIN="$tilec_root/build-asan/compiler/driver/tilec"
else
    # Set but empty: the sanitizer robustness test skips, and says so.
    export TILEC_ASAN_BIN=""
fi

echo "== ctest (build/)"
cd build
ctest --output-on-failure -j2 "${ctest_args[@]}"
