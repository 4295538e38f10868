# shellcheck shell=bash
# Shared by tools/setup.sh and tools/test.sh (sourced, not run): configuring and
# building a CMake + Ninja build directory of tilec.

# tilec_root: the repository root (the folder above tools/).
tilec_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Prints a message to stderr and exits 1.
die() {
    echo "error: $*" >&2
    exit 1
}

# tilec_configure DIR [-DNAME=VALUE ...]
# Configures DIR with Ninja unless it is already configured with every given -D value;
# Ninja re-runs CMake by itself when a CMakeLists.txt changes, so nothing is lost.
tilec_configure() {
    local dir="$1"
    shift
    local cache="$dir/CMakeCache.txt" need=0 def name value
    if [[ ! -f "$dir/build.ninja" || ! -f "$cache" ]]; then
        need=1
    else
        for def in "$@"; do
            def="${def#-D}"
            name="${def%%=*}"
            name="${name%%:*}"
            value="${def#*=}"
            if ! grep -qxE "${name}(:[A-Z]+)?=${value}" "$cache"; then
                need=1
            fi
        done
    fi
    if ((need)); then
        echo "== configure $dir"
        cmake -S "$tilec_root" -B "$dir" -G Ninja "$@"
    fi
}

# tilec_build DIR [TARGET]: builds everything in DIR, or only TARGET.
tilec_build() {
    local dir="$1" target="${2:-}"
    echo "== build $dir${target:+ (target $target)}"
    if [[ -n "$target" ]]; then
        cmake --build "$dir" --target "$target"
    else
        cmake --build "$dir"
    fi
}

# tilec_build_run_args LAST_HELP_LINE ARGS...: the options of the scripts that build here
# and run on a lent GPU machine (tools/gpu-check.sh, tools/bench/gpu.sh):
#   --build-only | --run-only   sets mode (build / run; default all)
#   BUILD                       sets build (default build)
#   -h | --help                 prints the script's header comment (lines 2..LAST_HELP_LINE)
#   -- ARGS                     sets passthrough_args (for the program the script runs)
# Unknown options exit 2.
tilec_build_run_args() {
    local last_help_line="$1"
    shift
    mode=all
    build=build
    passthrough_args=()
    while (($#)); do
        case "$1" in
        --build-only) mode=build ;;
        --run-only) mode=run ;;
        -h | --help)
            sed -n "2,${last_help_line}s/^# \{0,1\}//p" "$0"
            exit 0
            ;;
        --)
            shift
            passthrough_args=("$@")
            break
            ;;
        -*)
            echo "error: unknown option $1 (see --help)" >&2
            exit 2
            ;;
        *) build="$1" ;;
        esac
        shift
    done
}
