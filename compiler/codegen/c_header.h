// The C header that goes with a compiled object: C99, includes only <stdint.h> and
// "tile/runtime.h", one documented prototype per export and backend. No LLVM here.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tilec::codegen {

struct HeaderOptions {
    std::string header_name = "kernels.h";  // for the include guard and the banner
    std::string source_name = "kernels.tile";
    std::string tilec_version = "0.0.0";
    bool cpu_entries = true;  // declare NAME_cpu
    // The CUDA images in the object ("sm_80", ..., "compute_80"): declare NAME_cuda,
    // documented with these. Empty: no CUDA entry points (the header of a host object).
    std::vector<std::string> cuda_archs;
    // The HSACO images in the object ("gfx90a", "gfx942", ...): declare NAME_hip.
    std::vector<std::string> hip_archs;
};

// The header text for `module` (deterministic).
std::string c_header(const ir::Module& module, const HeaderOptions& options);

// The C type a scalar parameter of type `t` is passed as ("float", "int64_t", ...).
const char* c_scalar_type(ir::DataType t);

}  // namespace tilec::codegen
