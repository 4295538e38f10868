# The AMDGPU backend (amdgpu_backend.cpp): thread-level Tile IR -> code object (LLVM's
# AMDGPU target) -> HSACO (ld.lld -shared). Included by nvptx.cmake, beside the NVPTX
# backend whose lowering it shares.
find_program(TILEC_LD_LLD NAMES ld.lld-19 ld.lld PATHS /usr/lib/llvm-19/bin /usr/bin NO_DEFAULT_PATH)
find_program(TILEC_LD_LLD NAMES ld.lld-19 ld.lld
             DOC "ld.lld, which links AMDGPU code objects into HSACO (overridable; $TILEC_LD_LLD at run time)")
if(TILEC_LD_LLD)
  message(STATUS "AMDGPU backend: ld.lld ${TILEC_LD_LLD}")
else()
  message(STATUS "AMDGPU backend: ld.lld not found (--emit=hsaco and the HSACO tests need -DTILEC_LD_LLD=...)")
endif()
tilec_llvm_library(tilec_amdgpu ${CMAKE_CURRENT_LIST_DIR}/amdgpu_backend.cpp)
target_compile_definitions(tilec_amdgpu PRIVATE "TILEC_LD_LLD_PATH=\"$<$<BOOL:${TILEC_LD_LLD}>:${TILEC_LD_LLD}>\"")
target_link_libraries(tilec_amdgpu PUBLIC tilec_ir tilec_support tilec_target PRIVATE tilec_gpu_lowering tilec_codegen ${TILEC_LLVM_LIBS})
