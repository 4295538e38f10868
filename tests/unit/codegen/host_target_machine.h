// The host's LLVM target machine (generic CPU), for codegen unit tests that need one.
#pragma once

#include <catch2/catch.hpp>

#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>

#include <memory>
#include <string>

inline std::unique_ptr<llvm::TargetMachine> host_target_machine() {
    llvm::InitializeNativeTarget();
    std::string triple = llvm::sys::getDefaultTargetTriple(), error;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
    REQUIRE(target);
    return std::unique_ptr<llvm::TargetMachine>(
        target->createTargetMachine(triple, "generic", "", llvm::TargetOptions(), std::nullopt));
}
