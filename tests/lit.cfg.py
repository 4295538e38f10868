# lit configuration for tilec's FileCheck tests (tests/lit and tests/errors).
# Run by ctest (test `lit`), or by hand after a build:
#   python3 /usr/lib/llvm-19/build/utils/lit/lit.py -v tests/lit/some-test.tile
# Test files are *.tile (and *.tir: printed IR for `tilec opt`) with `// RUN:` lines. Substitutions:
#   %tilec   the built compiler       %stdlib  the repository's stdlib/ folder
# FileCheck, not and split-file (LLVM 19) are on PATH. Files under an Inputs/ folder are
# not tests (put imported helpers there).
# --param tilec=PATH / build_dir=DIR / llvm_tools_dir=DIR override the defaults
# (the environment variable TILEC_BIN also sets the compiler).
import os

import lit.formats

config.name = "tilec"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tile", ".tir"]
config.excludes = ["Inputs", "fuzz", "unit"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

repo = os.path.dirname(config.test_source_root)
params = lit_config.params
build_dir = params.get("build_dir") or os.path.join(repo, "build")
tilec = params.get("tilec") or os.environ.get("TILEC_BIN") or os.path.join(build_dir, "compiler", "driver", "tilec")
llvm_tools_dir = params.get("llvm_tools_dir") or "/usr/lib/llvm-19/bin"

if not os.path.isfile(tilec):
    lit_config.fatal(f"tilec not found at {tilec}: build it first (tools/test.sh), "
                     "or pass --param tilec=PATH")
if not os.path.isfile(os.path.join(llvm_tools_dir, "FileCheck")):
    lit_config.fatal(f"FileCheck not found in {llvm_tools_dir}: install llvm-19-tools (tools/setup.sh)")

# Output/ folders (%t files) go to the build folder, not next to the sources.
config.test_exec_root = os.path.join(build_dir, "tests", "lit-output")

config.substitutions.append(("%tilec", tilec))
config.substitutions.append(("%stdlib", os.path.join(repo, "stdlib")))
config.environment["PATH"] = os.pathsep.join([llvm_tools_dir, config.environment.get("PATH", "")])
# Output must not depend on the locale.
config.environment["LC_ALL"] = "C"

# `REQUIRES: ptxas`: tests that assemble PTX (tilec --emit=cubin) run where ptxas is.
import shutil
_ptxas = os.environ.get("TILEC_PTXAS") or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.path.isfile(_ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))
