# runtime/exports: the dynamic symbols that libtile_runtime.so defines are exactly the
# functions tile/runtime.h declares with TILE_API (hidden visibility hides the rest).
# cmake -DNM=nm -DLIBRARY=libtile_runtime.so -DHEADER=runtime.h -P check_exports.cmake
execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${LIBRARY}: ${err}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(exported)
foreach(line ${lines})
    # "<address> <type> <name>"; undefined and absolute (A) symbols are not ours
    if(line MATCHES "^[0-9a-fA-F]+ +([A-Za-z]) +([^ @]+)")
        set(type ${CMAKE_MATCH_1})
        set(name ${CMAKE_MATCH_2})  # saved: the MATCHES below resets CMAKE_MATCH_<n>
        if(NOT type STREQUAL "A" AND NOT name MATCHES "^_(init|fini|edata|end|_bss_start)$")
            list(APPEND exported ${name})
        endif()
    endif()
endforeach()

file(READ ${HEADER} header)
string(REGEX MATCHALL "TILE_API( TILE_PRINTF_FORMAT\\([0-9, ]+\\))?[^;(]*[ *](tile_[a-z0-9_]+)\\(" declarations
       "${header}")
set(declared)
foreach(declaration ${declarations})
    string(REGEX MATCH "(tile_[a-z0-9_]+)\\($" name "${declaration}")
    string(REGEX REPLACE "\\($" "" name "${name}")
    list(APPEND declared ${name})
endforeach()

list(SORT exported)
list(SORT declared)
message(STATUS "exported: ${exported}")
message(STATUS "declared: ${declared}")
if(NOT declared)
    message(FATAL_ERROR "no TILE_API declaration found in ${HEADER}")
endif()
if(NOT exported STREQUAL declared)
    message(FATAL_ERROR "the exports of ${LIBRARY} differ from the TILE_API functions of ${HEADER}")
endif()
