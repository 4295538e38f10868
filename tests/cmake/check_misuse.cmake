# cmake/misuse: wrong calls of tilec_add_library fail the configure step with a message
# that names the function and the mistake. Each case is a scratch project with no
# languages (fast), since argument errors come before any check of the environment.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
tilec_check_require(MODULE WORK GENERATOR)

# Pairs: a call, and a regular expression its message must match.
set(_cases
  "tilec_add_library(kernels)"
  "tilec_add_library\\(kernels\\): SOURCES is required"
  "tilec_add_library(kernels SOURCES)"
  "tilec_add_library\\(kernels\\): SOURCES given without a value"
  "tilec_add_library(SOURCES a.tile)"
  "tilec_add_library: the first argument is the target name"
  "tilec_add_library(kernels FOO SOURCES a.tile)"
  "tilec_add_library\\(kernels\\): unknown arguments: FOO"
  "tilec_add_library(kernels SOURCES a.tile TARGET host)"
  "tilec_add_library\\(kernels\\): unknown keyword TARGET"
  "tilec_add_library(kernels SOURCES missing.tile)"
  "tilec_add_library\\(kernels\\): source missing.tile not found"
  "tilec_add_library(kernels SOURCES a.tile sub/a.tile)"
  "tilec_add_library\\(kernels\\): two sources are named a"
  "tilec_add_library(kernels SOURCES a.tile DEFINES BM)"
  "tilec_add_library\\(kernels\\): DEFINES entry 'BM' is not NAME=VALUE"
  "tilec_add_library(kernels SOURCES a.tile RUNTIME DYNAMIC)"
  "tilec_add_library\\(kernels\\): RUNTIME is STATIC or SHARED, not DYNAMIC"
  "tilec_add_library(kernels SOURCES a.tile)"
  "tilec_add_library\\(kernels\\): there is no target tilec::tilec")

file(REMOVE_RECURSE ${WORK})
set(_failed)
list(LENGTH _cases _count)
math(EXPR _last "${_count} - 1")
foreach(_i RANGE 0 ${_last} 2)
  math(EXPR _j "${_i} + 1")
  list(GET _cases ${_i} _call)
  list(GET _cases ${_j} _expect)
  set(_dir ${WORK}/case${_i})
  file(WRITE ${_dir}/a.tile "")
  file(WRITE ${_dir}/sub/a.tile "")
  file(WRITE ${_dir}/CMakeLists.txt
       "cmake_minimum_required(VERSION 3.20)\nproject(misuse LANGUAGES NONE)\n"
       "include(${MODULE})\n${_call}\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${_dir} -B ${_dir}/build -G ${GENERATOR}
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(_rc EQUAL 0)
    string(APPEND _failed "\n${_call}: configured without an error")
  elseif(NOT _out MATCHES "${_expect}")
    string(APPEND _failed "\n${_call}: the message does not match '${_expect}':\n${_out}")
  else()
    message(STATUS "ok: ${_call} fails configure")
  endif()
endforeach()
if(_failed)
  message(FATAL_ERROR "${_failed}")
endif()
