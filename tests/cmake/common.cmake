# common.cmake: what the check_*.cmake scripts of tests/cmake share.

# tilec_check_require(VAR...): each -DVAR=... was given on the command line.
function(tilec_check_require)
  foreach(_var ${ARGN})
    if(NOT DEFINED ${_var})
      message(FATAL_ERROR "${CMAKE_SCRIPT_MODE_FILE} needs -D${_var}=...")
    endif()
  endforeach()
endfunction()

# tilec_check_run(OUT_VAR COMMAND...): runs the command, fails the test with its output
# if it fails, else stores the output (stdout and stderr together) in OUT_VAR.
function(tilec_check_run out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  list(JOIN ARGN " " _command)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "failed (${_rc}): ${_command}\n${_out}")
  endif()
  message(STATUS "ok: ${_command}")
  set(${out_var} "${_out}" PARENT_SCOPE)
endfunction()

# The -D options that make a scratch project use the compilers (and ccache) of the build.
set(TILEC_CHECK_COMPILER_ARGS)
foreach(_lang C CXX)
  if(${_lang}_COMPILER)
    list(APPEND TILEC_CHECK_COMPILER_ARGS -DCMAKE_${_lang}_COMPILER=${${_lang}_COMPILER})
  endif()
  if(LAUNCHER)
    list(APPEND TILEC_CHECK_COMPILER_ARGS -DCMAKE_${_lang}_COMPILER_LAUNCHER=${LAUNCHER})
  endif()
endforeach()
