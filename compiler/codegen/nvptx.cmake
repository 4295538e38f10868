# The GPU backends: the shared lowering of thread-level Tile IR to LLVM IR
# (gpu_lowering*.cpp), the NVPTX backend (nvptx_backend.cpp): PTX (LLVM's NVPTX target) ->
# cubin (ptxas), and the AMDGPU backend (amdgpu.cmake). Their own libraries so the CPU
# backend's target list stays as is; they reuse the CPU backend's optimisation pipeline
# (optimize_module).
find_program(TILEC_PTXAS NAMES ptxas PATHS /usr/local/cuda/bin 
             DOC "ptxas, for --emit=cubin and the ptxas tests (overridable; $TILEC_PTXAS at run time)")
if(TILEC_PTXAS)
  message(STATUS "NVPTX backend: ptxas ${TILEC_PTXAS}")
else()
  message(STATUS "NVPTX backend: ptxas not found (--emit=cubin and the ptxas tests need -DTILEC_PTXAS=...)")
endif()
tilec_llvm_library(tilec_gpu_lowering
  ${CMAKE_CURRENT_LIST_DIR}/gpu_address_constants.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_lowering.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_lowering_amd_matrix.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_lowering_expr.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_lowering_f8.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_lowering_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_lowering_machine.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_lowering_stmt.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_lowering_values.cpp)
target_link_libraries(tilec_gpu_lowering PUBLIC tilec_ir tilec_support tilec_target PRIVATE tilec_codegen tilec_lower tilec_ops tilec_scalar ${TILEC_LLVM_LIBS})

tilec_llvm_library(tilec_nvptx ${CMAKE_CURRENT_LIST_DIR}/nvptx_backend.cpp)
target_compile_definitions(tilec_nvptx PRIVATE "TILEC_PTXAS_PATH=\"$<$<BOOL:${TILEC_PTXAS}>:${TILEC_PTXAS}>\"")
target_link_libraries(tilec_nvptx PUBLIC tilec_ir tilec_support tilec_target PRIVATE tilec_gpu_lowering tilec_codegen ${TILEC_LLVM_LIBS})

include(${CMAKE_CURRENT_LIST_DIR}/amdgpu.cmake)  # tilec_amdgpu: the AMDGPU backend
