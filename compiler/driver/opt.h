// `tilec opt`: read printed Tile IR (a .tir file), run named passes on it, print the
// result, so that one pass can be run and tested alone (as LLVM's opt does).
#pragma once

namespace tilec::driver {

// `tilec opt ARGS...` (argv[0] is "opt"): parses its options with CLI11, reads the IR,
// runs the passes; returns the exit status (0; 1 for an error in the input or the
// options). Internal errors throw tilec::InternalError as in the main pipeline.
int opt_command(int argc, char** argv);

}  // namespace tilec::driver
