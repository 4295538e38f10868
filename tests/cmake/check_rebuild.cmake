# cmake/rebuild_on_import/<generator>: in a project built with tilec_add_library, editing
# a file that a .tile source imports (through INCLUDE_DIRS) reruns tilec on that source at
# the next build, by the depfile tilec writes; a build with nothing changed runs nothing.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
tilec_check_require(PREFIX LIBDIR PROJECT_DIR WORK GENERATOR)

file(REMOVE_RECURSE ${WORK})
file(COPY ${PROJECT_DIR}/ DESTINATION ${WORK}/src)
tilec_check_run(_ ${CMAKE_COMMAND} -S ${WORK}/src -B ${WORK}/build -G ${GENERATOR}
                -DTilec_DIR=${PREFIX}/${LIBDIR}/cmake/tilec ${TILEC_CHECK_COMPILER_ARGS})

# build(EXPECT_TILEC yes|no FACTOR f): builds; tilec ran iff yes; the program prints f.
function(build expect_tilec factor)
  tilec_check_run(_log ${CMAKE_COMMAND} --build ${WORK}/build)
  string(FIND "${_log}" "tilec: kernel.o" _at)
  if(expect_tilec AND _at EQUAL -1)
    message(FATAL_ERROR "tilec was not rerun on kernel.tile; the build said:\n${_log}")
  elseif(NOT expect_tilec AND NOT _at EQUAL -1)
    message(FATAL_ERROR "tilec ran though nothing changed; the build said:\n${_log}")
  endif()
  tilec_check_run(_out ${WORK}/build/print_factor)
  if(NOT _out MATCHES "factor=${factor}\n")
    message(FATAL_ERROR "expected factor=${factor}, got: ${_out}")
  endif()
endfunction()

build(yes 2)
build(no 2)
file(READ ${WORK}/src/inc/factor.tile _text)
string(REPLACE "return 2.0;" "return 3.0;" _text "${_text}")
file(WRITE ${WORK}/src/inc/factor.tile "${_text}")
build(yes 3)
