// BackendModule (compiler/codegen/module_output.h) builds every module at an address no
// other module of the process had: LLVM 19's NVPTX backend caches nvvm.annotations by
// module address and keeps the entries of modules it optimised but did not print, so a
// module at a reused address read another kernel's block size (wrong code under -j).
// Modules made one after another in one frame (where an embedded module would sit at
// the same address each time) and from several threads must all differ.
#include <catch2/catch.hpp>

#include <llvm/Support/CommandLine.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "codegen/module_output.h"
#include "host_target_machine.h"

TEST_CASE("backend modules never share an address", "[codegen][backend-module]") {
    auto tm = host_target_machine();
    std::set<const llvm::Module*> seen;
    std::mutex lock;
    auto make = [&](int count) {
        for (int i = 0; i < count; ++i) {
            tilec::codegen::BackendModule m("k.tile", tm->getTargetTriple().str(), *tm);
            CHECK(m.module.getName() == "k.tile");
            CHECK(&m.module.getContext() == &m.context);
            std::lock_guard<std::mutex> guard(lock);
            CHECK(seen.insert(&m.module).second);
        }
    };
    make(64);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) threads.emplace_back(make, 32);
    for (auto& t : threads) t.join();
    CHECK(seen.size() == 64 + 4 * 32);
}

// CodeGenPrepare walks each function as LLVM does for huge ones (once, then the blocks
// that changed): set for the process by the first backend module (module_output.cpp,
// set_llvm_codegen_options; docs/architecture.md, "Compile time"). An LLVM that renames
// the option fails here rather than compiling silently slower.
TEST_CASE("backend modules set CodeGenPrepare's huge-function threshold to 0", "[codegen][backend-module]") {
    auto tm = host_target_machine();
    tilec::codegen::BackendModule m("k.tile", tm->getTargetTriple().str(), *tm);
    auto& options = llvm::cl::getRegisteredOptions();
    auto it = options.find("cgpp-huge-func");
    REQUIRE(it != options.end());
    CHECK(static_cast<llvm::cl::opt<unsigned>*>(it->second)->getValue() == 0u);
}
