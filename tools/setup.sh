#!/usr/bin/env bash
# Sets up a Debian 12 machine for tilec and proves it works: installs the dependencies
# from Debian packages (skipped when all are there), configures and builds build/
# (CMake + Ninja, RelWithDebInfo), then compiles the stdlib GEMM for this CPU, runs it on
# random inputs and checks it against the reference interpreter (`tilec run`).
# Run as root or as a user with sudo. Exits non-zero on any failure.
set -euo pipefail
# shellcheck source=tools/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$tilec_root"

packages=(
    ninja-build ccache cmake g++ python3
    llvm-19-dev lld-19 clang-19 llvm-19-tools
    antlr4 libantlr4-runtime-dev libcli11-dev catch2
    libamdhip64-dev libzstd-dev
)

missing=()
for p in "${packages[@]}"; do
    if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    echo "== install ${missing[*]}"
    sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null || die "not root and no sudo: cannot install ${missing[*]}"
        sudo=(sudo)
    fi
    apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q)
    # A mirror can fail for a moment; try the update a few times before giving up.
    for attempt in 1 2 3; do
        if "${apt[@]}" update; then break; fi
        ((attempt < 3)) || die "apt-get update failed"
        sleep $((attempt * 5))
    done
    "${apt[@]}" install "${missing[@]}"
else
    echo "== dependencies: all ${#packages[@]} packages installed"
fi

tilec_configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEC_WITH_LLVM=ON
tilec_build build

# The proof that it works: compile the stdlib GEMM for this CPU, run it on random
# ragged-size inputs, and check it against the float64 reference interpreter.
run_args=(run stdlib/kernels/gemm.tile --kernel gemm_f16 --size M=300,N=200,K=130)
echo "== build/compiler/driver/tilec ${run_args[*]}"
build/compiler/driver/tilec "${run_args[@]}"
echo "== setup done: run tools/test.sh for the test suite"
