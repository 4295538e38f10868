# cmake/samples: samples/ (a standalone project) configured against the install of
# cmake/install through find_package(Tilec CONFIG), built, and both programs run.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
tilec_check_require(PREFIX LIBDIR SAMPLES_DIR WORK GENERATOR)

file(REMOVE_RECURSE ${WORK})
tilec_check_run(_ ${CMAKE_COMMAND} -S ${SAMPLES_DIR} -B ${WORK} -G ${GENERATOR}
                -DTilec_DIR=${PREFIX}/${LIBDIR}/cmake/tilec ${TILEC_CHECK_COMPILER_ARGS})
tilec_check_run(_ ${CMAKE_COMMAND} --build ${WORK})
foreach(_program check_kernels_c check_kernels_cpp)
  tilec_check_run(_out ${WORK}/${_program})
  message(STATUS "${_out}")
endforeach()
