# runtime/install: `cmake --install BUILD_DIR --component runtime --prefix PREFIX` installs
# the header and both libraries, and programs build against them three ways: the C
# compiler by hand with the shared library, the same with the static library (and the
# link line docs/c-api.md gives), and a CMake project through TilecTargets.cmake.
foreach(var BUILD_DIR PREFIX LIBDIR INCLUDEDIR CONSUMER_DIR C_COMPILER CXX_COMPILER GENERATOR)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "check_install.cmake needs -D${var}=...")
    endif()
endforeach()

function(run)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 0)
        string(REPLACE ";" " " command "${ARGN}")
        message(FATAL_ERROR "failed (${rc}): ${command}\n${out}")
    endif()
    message(STATUS "ok: ${ARGV0} ... ${out}")
endfunction()

file(REMOVE_RECURSE ${PREFIX})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --component runtime --prefix ${PREFIX})

set(lib ${PREFIX}/${LIBDIR})
foreach(file ${PREFIX}/${INCLUDEDIR}/tile/runtime.h ${lib}/libtile_runtime.so ${lib}/libtile_runtime.a
             ${lib}/cmake/tilec/TilecTargets.cmake)
    if(NOT EXISTS ${file})
        message(FATAL_ERROR "not installed: ${file}")
    endif()
endforeach()
file(GLOB_RECURSE installed RELATIVE ${PREFIX} ${PREFIX}/*)
message(STATUS "installed: ${installed}")

set(work ${PREFIX}-work)
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
set(cflags -std=c99 -Wall -Wextra -Werror -pedantic -I${PREFIX}/${INCLUDEDIR})

# The shared library, found through an rpath.
run(${C_COMPILER} ${cflags} ${CONSUMER_DIR}/consumer.c -o ${work}/by_hand_shared
    -L${lib} -ltile_runtime -Wl,-rpath,${lib})
run(${work}/by_hand_shared)

# The static library: a C program links the C++ standard library and threads itself.
run(${C_COMPILER} ${cflags} ${CONSUMER_DIR}/consumer.c -o ${work}/by_hand_static
    ${lib}/libtile_runtime.a -lstdc++ -lpthread)
run(${work}/by_hand_static)

# A CMake project with the exported targets tilec::runtime and tilec::runtime_static.
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${work}/cmake -G ${GENERATOR}
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DTILEC_PREFIX=${PREFIX} -DTILEC_LIBDIR=${LIBDIR})
run(${CMAKE_COMMAND} --build ${work}/cmake)
run(${work}/cmake/consumer_shared)
run(${work}/cmake/consumer_static)
