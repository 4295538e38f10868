# determinism.cmake: the ctest e2e/determinism. Compiles each .tile of SOURCES twice
# (object + header, --emit=llvm, --emit=asm) and compares the outputs byte for byte.
# The two compilations differ in everything that must not matter: the output folder,
# the working directory, and the spelling of the input path (absolute, then relative).
# Reproducible outputs are what make ccache, build caches and binary diffs work.
#
#   cmake -DTILEC=path/to/tilec -DWORK=scratch/dir -DSOURCES="a.tile;b.tile"
#         [-DREFERENCE_DIR=dir] -P determinism.cmake
#
# REFERENCE_DIR: where the build already wrote NAME.o and NAME.h for NAME.tile (from
# yet another directory, with -MD); those are used as the first object compilation, so
# the test costs one object compilation less per file.
foreach(_v TILEC WORK SOURCES)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "determinism.cmake: -D${_v}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
set(_run1 ${WORK}/run1)             # cwd of the first compilation; outputs in out/
set(_run2 ${WORK}/run2/deeper/cwd)  # cwd of the second; outputs in ../../other-out/
set(_out1 ${_run1}/out)
set(_out2 ${WORK}/run2/other-out)
file(MAKE_DIRECTORY ${_out1} ${_run2} ${_out2})

set(_failures 0)

# tilec(CWD ARGS...): runs tilec in CWD, fails the test on a non-zero exit.
function(tilec cwd)
  execute_process(COMMAND ${TILEC} ${ARGN} WORKING_DIRECTORY ${cwd} RESULT_VARIABLE _rc
                  OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "tilec ${ARGN} (in ${cwd}) failed with ${_rc}:\n${_out}${_err}")
  endif()
endfunction()

foreach(_src ${SOURCES})
  get_filename_component(_name ${_src} NAME_WE)
  file(RELATIVE_PATH _src_rel ${_run2} ${_src})

  # First compilation: absolute paths, from run1/ (or the build's object).
  if(DEFINED REFERENCE_DIR AND EXISTS ${REFERENCE_DIR}/${_name}.o AND EXISTS ${REFERENCE_DIR}/${_name}.h)
    file(COPY ${REFERENCE_DIR}/${_name}.o ${REFERENCE_DIR}/${_name}.h DESTINATION ${_out1})
  else()
    tilec(${_run1} ${_src} -o ${_out1}/${_name}.o)
  endif()
  tilec(${_run1} ${_src} --emit=llvm -o ${_out1}/${_name}.ll)
  tilec(${_run1} ${_src} --emit=asm -o ${_out1}/${_name}.s)

  # Second: a relative input path and relative outputs, from a deeper directory.
  tilec(${_run2} ${_src_rel} -o ../../other-out/${_name}.o)
  tilec(${_run2} ${_src_rel} --emit=llvm -o ../../other-out/${_name}.ll)
  tilec(${_run2} ${_src_rel} --emit=asm -o ../../other-out/${_name}.s)

  foreach(_ext o h ll s)
    set(_a ${_out1}/${_name}.${_ext})
    set(_b ${_out2}/${_name}.${_ext})
    file(SIZE ${_a} _size)
    if(_size EQUAL 0)
      message(SEND_ERROR "${_a} is empty")
      math(EXPR _failures "${_failures} + 1")
      continue()
    endif()
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${_a} ${_b} RESULT_VARIABLE _same)
    if(_same EQUAL 0)
      message(STATUS "same: ${_name}.${_ext} (${_size} bytes)")
    else()
      message(SEND_ERROR "${_name}.${_ext} differs between two compilations:\n  ${_a}\n  ${_b}")
      math(EXPR _failures "${_failures} + 1")
    endif()
  endforeach()
endforeach()

if(_failures GREATER 0)
  message(FATAL_ERROR "e2e/determinism: ${_failures} output(s) differ (kept in ${WORK})")
endif()
file(REMOVE_RECURSE ${WORK})
message(STATUS "e2e/determinism: all outputs identical")
