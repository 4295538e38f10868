// The tilec executable's entry point; the command line is tilec_main (main.cpp).
#include "driver/main.h"

int main(int argc, char** argv) { return tilec::driver::tilec_main(argc, argv); }
