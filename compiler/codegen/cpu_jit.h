// Loads a host object made by compile_cpu() into this process with LLVM's ORC JIT, so
// `tilec run` can call the compiled entry points. The runtime functions the object
// needs (tile_cpu_launch, tile_set_error, ...) resolve to the libtile_runtime linked
// into tilec, and libc/libm functions to the process's own.
//
// Free of LLVM, like cpu_backend.h.
#pragma once
#include <memory>
#include <string>

#include "ir/ir.h"

namespace tilec::codegen {

// An entry point with one calling convention for every export:
//   args[i] points at the value of f.params[i] in its C type (as the header declares
//   it: a tensor's data pointer, an int64_t size, a scalar as int8_t...double; bool as
//   int32_t, narrow floats as float). Returns the tile_status of NAME_cpu.
using PackedEntry = int (*)(const void* options, void* const* args);

class CpuJit {
public:
    // Loads `object` (the bytes of an ELF object from compile_cpu). Returns null and sets
    // `error` if LLVM cannot create the JIT or link the object.
    static std::unique_ptr<CpuJit> load(const std::string& object, std::string& error);
    ~CpuJit();
    CpuJit(const CpuJit&) = delete;
    CpuJit& operator=(const CpuJit&) = delete;

    // A packed wrapper of f's entry point NAME_cpu (generated here, in its own JIT
    // module, so the object tilec writes stays as it is). Null with `error` set when
    // the object lacks the entry point or a symbol it needs cannot be resolved.
    PackedEntry packed_entry(const ir::PrimFunc& f, std::string& error);

private:
    struct Impl;
    explicit CpuJit(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace tilec::codegen
