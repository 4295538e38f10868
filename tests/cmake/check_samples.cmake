# cmake/samples: samples/ (a standalone project) configured against the install of
# cmake/install through find_package(Tilec CONFIG), built, and both programs run; with
# GPU_IMAGES, the fat object too: its header lists cubins for sm_80 and sm_90a and HSACO for
# gfx90a, gfx942 and gfx1100, and check_fat_c runs.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
tilec_check_require(PREFIX LIBDIR SAMPLES_DIR WORK GENERATOR)

file(REMOVE_RECURSE ${WORK})
tilec_check_run(_ ${CMAKE_COMMAND} -S ${SAMPLES_DIR} -B ${WORK} -G ${GENERATOR}
                -DTilec_DIR=${PREFIX}/${LIBDIR}/cmake/tilec -DSAMPLES_GPU_IMAGES=${GPU_IMAGES}
                ${TILEC_CHECK_COMPILER_ARGS})
tilec_check_run(_ ${CMAKE_COMMAND} --build ${WORK})
set(_programs check_kernels_c check_kernels_cpp)
if(GPU_IMAGES)
  list(APPEND _programs check_fat_c)
  file(READ ${WORK}/sample_fat.tilec/saxpy.h _header)
  foreach(_want "Images: cubins for sm_80 and sm_90a;" "Images: HSACO code objects for gfx90a, gfx942 and gfx1100")
    string(FIND "${_header}" "${_want}" _at)
    if(_at EQUAL -1)
      message(FATAL_ERROR "sample_fat's saxpy.h does not say \"${_want}\"")
    endif()
  endforeach()
endif()
foreach(_program ${_programs})
  tilec_check_run(_out ${WORK}/${_program})
  message(STATUS "${_out}")
endforeach()
