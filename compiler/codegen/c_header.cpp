// The generated C header: what a C or C++ caller needs to call each entry point, with
// every argument documented (dtype, shape in size names, layout, direction).
#include "codegen/c_header.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "ir/printer.h"

namespace tilec::codegen {

using ir::DataType;
using ir::ParamKind;
using ir::TypeKind;

const char* c_scalar_type(DataType t) {
    if (t.is_bool()) return "int32_t";
    if (t.is_int()) {
        switch (t.bits) {
        case 4:
        case 8: return "int8_t";
        case 16: return "int16_t";
        case 32: return "int32_t";
        default: return "int64_t";
        }
    }
    if (t.is_uint()) {
        switch (t.bits) {
        case 4:
        case 8: return "uint8_t";
        case 16: return "uint16_t";
        case 32: return "uint32_t";
        default: return "uint64_t";
        }
    }
    if (t.kind == TypeKind::Float && t.bits == 64) return "double";
    return "float";
}

namespace {

// How an element type that C has no plain type for is stored ("" for the others).
std::string storage_note(DataType t) {
    switch (t.kind) {
    case TypeKind::Bool: return "bool: 1 byte, 0 or 1 (nonzero reads as true)";
    case TypeKind::Float:
        return t.bits == 16 ? "f16: IEEE binary16, 2 bytes (uint16_t bits, or _Float16)" : "";
    case TypeKind::BFloat: return "bf16: bfloat16, 2 bytes (uint16_t: the high half of a float's bits)";
    case TypeKind::Float8E4M3: return "f8e4m3: OCP FP8 E4M3FN, 1 byte (max 448, no infinities)";
    case TypeKind::Float8E5M2: return "f8e5m2: OCP FP8 E5M2, 1 byte";
    case TypeKind::Int:
    case TypeKind::UInt:
        if (t.bits == 4)
            return t.str() +
                   ": 4 bits, packed two per byte, low nibble first (strides and offsets count elements)";
        return "";
    }
    return "";
}

std::string scalar_doc(DataType t) {
    std::string c = c_scalar_type(t);
    if (t.is_bool()) return "int32_t (0 or 1; nonzero is true)";
    if (t.bits == 4) return c + " (its low 4 bits, as " + t.str() + ")";
    if (t.is_float() && t.bits < 32) return "float, rounded to " + t.str() + " (nearest even)";
    return c;
}

// Parameter names that are C or C++ keywords get a trailing underscore.
std::string c_name(const std::string& n) {
    static const std::set<std::string> reserved = {
        "auto",     "break",  "case",      "char",      "const",    "continue", "default",  "do",
        "double",   "else",   "enum",      "extern",    "float",    "for",      "goto",     "if",
        "inline",   "int",    "long",      "register",  "restrict", "return",   "short",    "signed",
        "sizeof",   "static", "struct",    "switch",    "typedef",  "union",    "unsigned", "void",
        "volatile", "while",  "bool",      "class",     "delete",   "new",      "this",     "template",
        "private",  "public", "protected", "namespace", "opt"};
    return reserved.count(n) ? n + "_" : n;
}

std::string join_exprs(const std::vector<ir::Expr>& es) {
    std::string s;
    for (auto& e : es) s += (s.empty() ? "" : ", ") + ir::print(e);
    return s;
}

// "K must be a multiple of 2" for each division in a shape expression.
void collect_divisors(const ir::Expr& e, std::vector<std::string>& out) {
    if (auto* bin = e->as<ir::BinaryNode>()) {
        collect_divisors(bin->a, out);
        collect_divisors(bin->b, out);
        if (bin->op != ir::BinaryOp::FloorDiv) return;
        if (auto c = ir::as_const_int(bin->b))
            out.push_back(ir::print(bin->a) + " must be a multiple of " + std::to_string(*c));
        else
            out.push_back(ir::print(bin->b) + " must be positive and " + ir::print(bin->a) +
                          " a multiple of it");
    }
}

std::string guard_of(const std::string& header_name) {
    std::string g = "TILEC_";
    auto slash = header_name.find_last_of('/');
    for (char c : header_name.substr(slash == std::string::npos ? 0 : slash + 1))
        g += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
    return g + "_";
}

// Appends `text` to the comment as lines of at most 96 columns, each starting with " * "
// (continuations indented by `hang` more spaces).
void comment_wrapped(std::ostringstream& o, const std::string& text, size_t hang = 0) {
    std::string line;
    std::istringstream words(text);
    std::string w;
    while (words >> w) {
        if (!line.empty() && 3 + line.size() + 1 + w.size() > 96) {
            o << " * " << line << "\n";
            line = std::string(hang, ' ') + w;
        } else {
            line += (line.empty() ? "" : " ") + w;
        }
    }
    if (!line.empty()) o << " * " << line << "\n";
}

// The entry points a header declares per export: NAME_cpu, NAME_cuda, NAME_hip.
enum class Entry { Cpu, Cuda, Hip };

// "sm_80, sm_90 and compute_80".
std::string list_and(const std::vector<std::string>& items) {
    std::string s;
    for (size_t i = 0; i < items.size(); ++i)
        s += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
    return s;
}

void write_function(std::ostringstream& o, const ir::PrimFunc& f, Entry kind, const HeaderOptions& options) {
    const bool cuda = kind == Entry::Cuda;
    const bool hip = kind == Entry::Hip;
    const bool gpu = cuda || hip;
    std::string entry = f.name + (cuda ? "_cuda" : hip ? "_hip" : "_cpu");
    std::string consts;
    for (auto& [k, v] : f.constants) consts += (consts.empty() ? "" : ", ") + k + " = " + v;
    o << "/*\n";
    comment_wrapped(o, entry + ": kernel " + f.kernel + (consts.empty() ? "" : "<" + consts + ">") +
                           (cuda ? " on an NVIDIA GPU (CUDA)." : hip ? " on an AMD GPU (HIP)." : " on the CPU."));
    o << " *\n";
    size_t width = 1;
    for (auto& p : f.params)
        width = std::max(width, (p.kind == ParamKind::Tensor ? p.buffer->name : p.var->name).size());
    auto pad = [&](const std::string& n) { return n + std::string(width - n.size() + 2, ' '); };
    std::vector<std::string> notes, constraints;
    auto note = [&](DataType t) {
        std::string n = storage_note(t);
        if (!n.empty() && std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
    };
    for (auto& p : f.params) {
        if (p.kind == ParamKind::Tensor) {
            const auto& b = *p.buffer;
            const char* dir = b.access == ir::Access::In    ? "in     "
                              : b.access == ir::Access::Out ? "out    "
                                                            : "inout  ";
            o << " *   " << pad(b.name) << dir << b.dtype.str() << "[" << join_exprs(b.shape) << "]";
            if (b.strides.empty())
                o << ", row-major\n";
            else
                o << ", strides (" << join_exprs(b.strides) << ")\n";
            note(b.dtype);
            for (auto& d : b.shape) {
                std::vector<std::string> divs;
                collect_divisors(d, divs);
                for (auto& rule : divs)
                    constraints.push_back(rule + " (a dimension of " + b.name + " is " + ir::print(d) + ").");
            }
        } else if (p.kind == ParamKind::Size) {
            o << " *   " << pad(p.var->name) << "size   int64_t, >= 0\n";
        } else {
            o << " *   " << pad(p.var->name) << "scalar " << p.var->type.str() << ", passed as "
              << scalar_doc(p.var->type) << "\n";
        }
    }
    o << " *\n";
    comment_wrapped(
        o,
        std::string(cuda  ? "Tensors are device pointers (cudaMalloc, cuMemAlloc) to their element 0, 16-byte "
                            "aligned; "
                    : hip ? "Tensors are device pointers (hipMalloc) to their element 0, 16-byte aligned; "
                          : "Tensors point at their element 0; ") +
            "shapes are in the size arguments; strides count elements "
            "(row-major: the last dimension is contiguous).");
    for (auto& n : notes) comment_wrapped(o, n + ".", 2);
    for (auto& c : constraints) comment_wrapped(o, "Constraint: " + c, 2);
    static const char* axis[3] = {"x", "y", "z"};
    std::string grid;
    for (size_t d = 0; d < f.grid.size() && d < 3; ++d)
        grid += std::string(d ? ", " : "") + axis[d] + " = " + ir::print(f.grid[d]);
    if (!gpu) {
        comment_wrapped(o, "Grid: " + grid + " (blocks), each block one task of the CPU thread pool.", 2);
        comment_wrapped(
            o,
            "opt: NULL for the defaults, or a tile_cpu_options set up with TILE_CPU_OPTIONS_INIT. "
            "Returns TILE_SUCCESS, or TILE_ERROR_INVALID_ARGUMENT without running anything when a size is "
            "negative, a constraint fails or a tensor with elements is NULL (tile_last_error() says "
            "which); other codes come from tile_cpu_launch.");
    } else if (cuda) {
        comment_wrapped(o, "Grid: " + grid + " (blocks of " + std::to_string(f.threads) + " threads).", 2);
        std::vector<std::string> cubins, ptx;
        for (auto& a : options.cuda_archs) (a.rfind("compute_", 0) == 0 ? ptx : cubins).push_back(a);
        comment_wrapped(o, "Images: cubins for " + list_and(cubins) +
                               (ptx.empty() ? std::string(".")
                                            : "; PTX " + list_and(ptx) +
                                                  ", which the driver compiles for GPUs no cubin runs on."));
        comment_wrapped(
            o,
            "stream: the CUstream / cudaStream_t to launch on, cast to void* (NULL: the default stream). "
            "Uses the calling thread's current CUDA context (else device 0's primary context). Returns "
            "TILE_SUCCESS once the kernel is enqueued, without waiting for it (faults while it runs surface at "
            "the stream's next synchronisation), and TILE_SUCCESS without touching the driver when the grid is "
            "empty. TILE_ERROR_INVALID_ARGUMENT, before the driver is touched: a size is negative, a constraint "
            "fails, a tensor with elements is NULL, a tensor is not 16-byte aligned, or the grid exceeds CUDA's "
            "limits. From tile_cuda_launch: TILE_ERROR_NO_DRIVER (libcuda.so.1 not found: \"no CUDA driver "
            "found\"), TILE_ERROR_NO_DEVICE, TILE_ERROR_NO_IMAGE_FOR_DEVICE (no image above runs on the "
            "current device), TILE_ERROR_DRIVER, TILE_ERROR_LAUNCH, TILE_ERROR_OUT_OF_MEMORY. tile_last_error() "
            "says which argument or which driver call and error.");
    } else {
        comment_wrapped(o, "Grid: " + grid + " (blocks of " + std::to_string(f.threads) + " work-items).", 2);
        comment_wrapped(o, "Images: HSACO code objects for " + list_and(options.hip_archs) +
                               " (wave64 on gfx9, wave32 on gfx11); the one whose target ID matches the device's "
                               "gcnArchName is loaded.");
        comment_wrapped(
            o,
            "stream: the hipStream_t to launch on, cast to void* (NULL: the null stream). Uses the calling "
            "thread's current HIP device (hipGetDevice). Returns TILE_SUCCESS once the kernel is enqueued, without "
            "waiting for it (faults while it runs surface at the stream's next synchronisation), and TILE_SUCCESS "
            "without touching the runtime when the grid is empty. TILE_ERROR_INVALID_ARGUMENT, before the runtime "
            "is touched: a size is negative, a constraint fails, a tensor with elements is NULL, a tensor is not "
            "16-byte aligned, or the grid exceeds HIP's limits (grid times block below 2^32 per axis). From "
            "tile_hip_launch: TILE_ERROR_NO_DRIVER (libamdhip64 not found: \"no HIP runtime found\"), "
            "TILE_ERROR_NO_DEVICE, TILE_ERROR_NO_IMAGE_FOR_DEVICE (no image above runs on the current device), "
            "TILE_ERROR_DRIVER, TILE_ERROR_LAUNCH, TILE_ERROR_OUT_OF_MEMORY. tile_last_error() says which argument "
            "or which runtime call and error.");
    }
    o << " */\n";
    std::ostringstream proto;
    proto << "tile_status " << entry << (gpu ? "(void* stream" : "(const tile_cpu_options* opt");
    for (auto& p : f.params) {
        proto << ", ";
        if (p.kind == ParamKind::Tensor)
            proto << (p.buffer->access == ir::Access::In ? "const void* " : "void* ")
                  << c_name(p.buffer->name);
        else if (p.kind == ParamKind::Size)
            proto << "int64_t " << c_name(p.var->name);
        else
            proto << c_scalar_type(p.var->type) << " " << c_name(p.var->name);
    }
    proto << ");";
    // Wrap the prototype at 100 columns, continuation lines aligned after the '('.
    std::string text = proto.str();
    size_t indent = text.find('(') + 1;
    std::string line, out;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t comma = text.find(", ", pos);
        std::string tok = comma == std::string::npos ? text.substr(pos) : text.substr(pos, comma - pos + 1);
        pos = comma == std::string::npos ? text.size() : comma + 2;
        if (!line.empty() && line.size() + 1 + tok.size() > 100) {
            out += line + "\n";
            line = std::string(indent, ' ') + tok;
        } else {
            line += (line.empty() ? "" : " ") + tok;
        }
    }
    o << out << line << "\n\n";
}

}  // namespace

std::string c_header(const ir::Module& module, const HeaderOptions& options) {
    std::ostringstream o;
    std::string guard = guard_of(options.header_name);
    o << "/* " << options.header_name << ": the C entry points of " << options.source_name << ".\n"
      << " * Generated by tilec " << options.tilec_version
      << "; do not edit. C99; link with the object tilec\n"
      << " * wrote beside this header and with libtile_runtime (tile/runtime.h).\n";
    const bool cuda = !options.cuda_archs.empty(), hip = !options.hip_archs.empty();
    if (!cuda && !hip) {
        o << " * Every entry point checks its arguments, runs the kernel's grid of blocks on the CPU\n"
          << " * thread pool (tile_cpu_launch) and returns when all blocks are done; it never prints\n"
          << " * and never exits. Tensors are raw pointers to element 0, sizes count elements. */\n";
    } else if (!options.cpu_entries && !hip) {
        o << " * Every entry point checks its arguments and enqueues the kernel's grid of blocks on a\n"
          << " * CUDA stream (tile_cuda_launch: libcuda is loaded at the first call, so this object\n"
          << " * links and runs without a GPU); it never prints and never exits. Tensors are device\n"
          << " * pointers to element 0, sizes count elements. */\n";
    } else if (options.cpu_entries && !hip) {
        o << " * Every entry point checks its arguments; NAME_cpu runs the kernel's grid of blocks on\n"
          << " * the CPU thread pool (tile_cpu_launch) and returns when all blocks are done, NAME_cuda\n"
          << " * enqueues it on a CUDA stream (tile_cuda_launch: libcuda is loaded at the first call,\n"
          << " * so this object links and runs without a GPU). None prints or exits. Tensors are\n"
          << " * raw pointers to element 0 (device pointers for NAME_cuda), sizes count elements. */\n";
    } else {
        // With HIP: name each kind of entry point the header has.
        std::string text = "Every entry point checks its arguments;";
        std::vector<std::string> parts, gpu_names;
        if (options.cpu_entries)
            parts.push_back("NAME_cpu runs the kernel's grid of blocks on the CPU thread pool (tile_cpu_launch) "
                            "and returns when all blocks are done");
        if (cuda) {
            parts.push_back("NAME_cuda enqueues it on a CUDA stream (tile_cuda_launch, libcuda loaded at the first "
                            "call)");
            gpu_names.push_back("NAME_cuda");
        }
        parts.push_back("NAME_hip enqueues it on a HIP stream (tile_hip_launch, libamdhip64 loaded at the first "
                        "call)");
        gpu_names.push_back("NAME_hip");
        for (size_t i = 0; i < parts.size(); ++i)
            text += std::string(i == 0 ? " " : i + 1 == parts.size() ? " and " : ", ") + parts[i];
        text += ", so this object links and runs without a GPU. None prints or exits. Tensors are ";
        text += options.cpu_entries ? "raw pointers to element 0 (device pointers for " + list_and(gpu_names) + ")"
                                    : "device pointers to element 0";
        text += ", sizes count elements. */";
        std::ostringstream banner;
        comment_wrapped(banner, text);
        o << banner.str();
    }
    o << "#ifndef " << guard << "\n#define " << guard << "\n\n"
      << "#include <stdint.h>\n\n#include \"tile/runtime.h\"\n\n"
      << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
    for (auto& f : module.funcs) {
        if (options.cpu_entries) write_function(o, f, Entry::Cpu, options);
        if (!options.cuda_archs.empty()) write_function(o, f, Entry::Cuda, options);
        if (!options.hip_archs.empty()) write_function(o, f, Entry::Hip, options);
    }
    o << "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n#endif /* " << guard << " */\n";
    return o.str();
}

}  // namespace tilec::codegen
