# tilec_llvm_libraries(OUT): what tilec's LLVM users link, after find_package(LLVM).
# LLVM's static component libraries where the package has them (Debian's llvm-19-dev
# does), else the shared libLLVM. Measured on a 2-core VM: a process linked with the
# shared library spends ~35 ms of its start-up relocating it (330k relocations), half
# of `tilec --version` (70 -> 35 ms) and a third of a compile-cache hit (0.12 ->
# 0.08 s); the static link takes ~2 s with lld. One process must not mix the two
# (LLVM's command-line options would register twice), so every LLVM user links OUT.
option(TILEC_STATIC_LLVM "Link LLVM's static component libraries where installed (else libLLVM.so)" ON)
function(tilec_llvm_libraries out)
  if(TILEC_STATIC_LLVM AND TARGET LLVMCore AND TARGET LLVMNVPTXCodeGen AND TARGET LLVMAMDGPUCodeGen)
    llvm_map_components_to_libnames(libs
      core support passes analysis transformutils scalaropts ipo vectorize instcombine
      target mc object objcopy bitreader bitwriter irreader asmparser linker
      orcjit executionengine jitlink runtimedyld
      x86codegen x86asmparser x86desc x86info nvptxcodegen nvptxdesc nvptxinfo
      amdgpucodegen amdgpuasmparser amdgpudesc amdgpuinfo amdgpuutils)
    set_property(GLOBAL PROPERTY TILEC_LLVM_IS_STATIC ON)  # tests/CMakeLists.txt checks it
  else()
    set(libs LLVM)
  endif()
  set(${out} ${libs} PARENT_SCOPE)
endfunction()
