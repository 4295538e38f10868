# cmake/rebuild_on_import/<generator>: in a project built with tilec_add_library, editing
# a file that a .tile source imports (through INCLUDE_DIRS) reruns tilec on that source at
# the next build, by the depfile tilec writes; a build with nothing changed runs nothing.
# The project passes -DTILEC_CACHE_DIR, which tilec_add_library hands to tilec: each
# version of the kernel leaves one cache entry, and a fresh build folder compiles from
# the cache (no new entry) into the same bytes.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
tilec_check_require(PREFIX LIBDIR PROJECT_DIR WORK GENERATOR)

file(REMOVE_RECURSE ${WORK})
file(COPY ${PROJECT_DIR}/ DESTINATION ${WORK}/src)
tilec_check_run(_ ${CMAKE_COMMAND} -S ${WORK}/src -B ${WORK}/build -G ${GENERATOR}
                -DTilec_DIR=${PREFIX}/${LIBDIR}/cmake/tilec -DTILEC_CACHE_DIR=${WORK}/cache
                ${TILEC_CHECK_COMPILER_ARGS})

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

function(expect_cache_entries n)
  file(GLOB_RECURSE _entries ${WORK}/cache/*)
  list(LENGTH _entries _count)
  if(NOT _count EQUAL n)
    message(FATAL_ERROR "expected ${n} compile cache entries in ${WORK}/cache, found ${_count}: ${_entries}")
  endif()
endfunction()
expect_cache_entries(2)
tilec_check_run(_ ${CMAKE_COMMAND} -S ${WORK}/src -B ${WORK}/fresh -G ${GENERATOR}
                -DTilec_DIR=${PREFIX}/${LIBDIR}/cmake/tilec -DTILEC_CACHE_DIR=${WORK}/cache
                ${TILEC_CHECK_COMPILER_ARGS})
tilec_check_run(_ ${CMAKE_COMMAND} --build ${WORK}/fresh)
expect_cache_entries(2)
foreach(_file scaled.tilec/kernel.o scaled.tilec/kernel.h)
  file(SHA256 ${WORK}/build/${_file} _built)
  file(SHA256 ${WORK}/fresh/${_file} _cached)
  if(NOT _built STREQUAL _cached)
    message(FATAL_ERROR "${_file} from the compile cache differs from the one compiled")
  endif()
endforeach()
