# The NVPTX backend (nvptx_backend.cpp): thread-level Tile IR -> PTX (LLVM's NVPTX
# target) -> cubin (ptxas). Its own library so the CPU backend's target list stays as is;
# it reuses the CPU backend's optimisation pipeline (optimize_module).
find_program(TILEC_PTXAS NAMES ptxas PATHS /usr/local/cuda/bin 
             DOC "ptxas, for --emit=cubin and the ptxas tests (overridable; $TILEC_PTXAS at run time)")
if(TILEC_PTXAS)
  message(STATUS "NVPTX backend: ptxas ${TILEC_PTXAS}")
else()
  message(STATUS "NVPTX backend: ptxas not found (--emit=cubin and the ptxas tests need -DTILEC_PTXAS=...)")
endif()
add_library(tilec_nvptx STATIC ${CMAKE_CURRENT_LIST_DIR}/nvptx_backend.cpp)
target_include_directories(tilec_nvptx PUBLIC ${PROJECT_SOURCE_DIR}/compiler)
target_include_directories(tilec_nvptx SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(tilec_nvptx PRIVATE ${_llvm_definitions} "TILEC_PTXAS_PATH=\"$<$<BOOL:${TILEC_PTXAS}>:${TILEC_PTXAS}>\"")
target_compile_options(tilec_nvptx PRIVATE ${TILEC_COMMON_WARNINGS})
target_link_libraries(tilec_nvptx PUBLIC tilec_ir tilec_support tilec_target PRIVATE tilec_codegen LLVM)
