// tilec's whole command line as a function: what main() does, for tilec.cpp and for the
// fuzzers' fork server (tools/fuzz/fork_server.cpp), whose children run it.
#pragma once

namespace tilec::driver {

// Parses argv as tilec does (argv[0] locates the stdlib), runs the command, flushes
// standard output and returns the exit status: 0, 1 (errors in the input or a write
// error) or 2 (an internal compiler error).
int tilec_main(int argc, char** argv);

}  // namespace tilec::driver
