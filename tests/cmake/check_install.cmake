# cmake/install: `cmake --install BUILD_DIR --prefix PREFIX` gives the compiler, its
# stdlib, the runtime and the CMake package, and the installed tilec reads the installed
# stdlib (not the source tree's it was built from). Later tests use PREFIX (a fixture).
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
tilec_check_require(BUILD_DIR PREFIX LIBDIR)

file(REMOVE_RECURSE ${PREFIX})
tilec_check_run(_ ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})

set(_cmakedir ${PREFIX}/${LIBDIR}/cmake/tilec)
foreach(_file bin/tilec share/tilec/stdlib/std/math.tile share/tilec/stdlib/kernels/softmax.tile
              include/tile/runtime.h ${LIBDIR}/libtile_runtime.a ${LIBDIR}/libtile_runtime.so)
  if(NOT EXISTS ${PREFIX}/${_file})
    message(FATAL_ERROR "not installed: ${PREFIX}/${_file}")
  endif()
endforeach()
foreach(_file TilecConfig.cmake TilecConfigVersion.cmake TilecTargets.cmake TilecAddLibrary.cmake)
  if(NOT EXISTS ${_cmakedir}/${_file})
    message(FATAL_ERROR "not installed: ${_cmakedir}/${_file}")
  endif()
endforeach()

# The depfile names every imported file as tilec found it: std/math.tile must come from
# PREFIX. --emit=tir stops before code generation, which this does not need.
set(_work ${PREFIX}-work)
file(REMOVE_RECURSE ${_work})
file(WRITE ${_work}/uses_std.tile "import \"std/math.tile\";\n"
     "kernel k<B: int = 64>(X: f32[N], Y: out f32[N]) grid(cdiv(N, B)) threads(32) {\n"
     "    fragment a: f32[B];\n"
     "    copy(X[block.x * B], a);\n"
     "    for i in parallel(B) { a[i] = relu(a[i]); }\n"
     "    copy(a, Y[block.x * B]);\n"
     "}\n")
tilec_check_run(_ ${PREFIX}/bin/tilec ${_work}/uses_std.tile --emit=tir -o ${_work}/uses_std.tir
                -MD -MF ${_work}/uses_std.d)
file(READ ${_work}/uses_std.d _deps)
file(REAL_PATH ${PREFIX} _real_prefix)
string(REGEX MATCH "[^ \\\n]*std/math.tile" _math "${_deps}")
if(_math)
  file(REAL_PATH ${_math} _math)
endif()
if(NOT _math STREQUAL "${_real_prefix}/share/tilec/stdlib/std/math.tile")
  message(FATAL_ERROR "the installed tilec did not read ${_real_prefix}/share/tilec/stdlib/std/math.tile "
                      "but '${_math}'; its depfile:\n${_deps}")
endif()
message(STATUS "the installed tilec reads its stdlib from ${_real_prefix}/share/tilec/stdlib")
