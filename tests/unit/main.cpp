// The one Catch2 main shared by every unit test, compiled once: it takes ~12 s to build.
// Test files are tests/unit/*_test.cpp; they include <catch2/catch.hpp> and define no main.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
