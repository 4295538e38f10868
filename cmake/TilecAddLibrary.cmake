# TilecAddLibrary.cmake: tilec_add_library(), which compiles .tile files with tilec at
# build time into a static library and a folder of C headers (docs/cmake.md).
# Included by the tilec build itself (cmake/TilecInTree.cmake) and by the installed
# package (TilecConfig.cmake); both define the executable target tilec::tilec first.
include_guard(GLOBAL)

if(CMAKE_VERSION VERSION_LESS 3.20)
  # DEPFILE with the Makefile generators, and CMP0116, came in 3.20.
  message(FATAL_ERROR "tilec_add_library needs CMake 3.20 or newer (this is ${CMAKE_VERSION})")
endif()

# A function keeps the policies in force where it was defined, so the callers' own
# cmake_minimum_required cannot switch off CMP0116 (depfile paths made relative to the
# binary dir for Ninja), on which the rebuild-on-import behaviour depends.
cmake_policy(PUSH)
cmake_policy(VERSION 3.20...3.25)

# tilec_add_library(<target> SOURCES a.tile ...
#                   [TARGETS host ...] [DEFINES NAME=VALUE ...] [INCLUDE_DIRS dir ...]
#                   [OPTIONS flag ...] [RUNTIME STATIC|SHARED] [HEADER_DIR <var>]
#                   [CACHE_DIR dir])
function(tilec_add_library)
  set(_keywords SOURCES TARGETS DEFINES INCLUDE_DIRS OPTIONS RUNTIME HEADER_DIR CACHE_DIR)
  if(ARGC EQUAL 0)
    message(FATAL_ERROR "tilec_add_library: missing the target name; "
                        "usage: tilec_add_library(<target> SOURCES a.tile ...)")
  endif()
  set(target "${ARGV0}")
  set(_fn "tilec_add_library(${target})")
  if(target IN_LIST _keywords)
    message(FATAL_ERROR "tilec_add_library: the first argument is the target name, not "
                        "${target}; usage: tilec_add_library(<target> SOURCES a.tile ...)")
  endif()
  if(TARGET "${target}")
    message(FATAL_ERROR "${_fn}: a target named ${target} already exists")
  endif()

  list(JOIN _keywords " " _known)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "RUNTIME;HEADER_DIR;CACHE_DIR"
                        "SOURCES;TARGETS;DEFINES;INCLUDE_DIRS;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    list(JOIN arg_UNPARSED_ARGUMENTS " " _unknown)
    message(FATAL_ERROR "${_fn}: unknown arguments: ${_unknown} (the keywords are ${_known})")
  endif()
  if(arg_KEYWORDS_MISSING_VALUES)
    list(JOIN arg_KEYWORDS_MISSING_VALUES " " _missing)
    message(FATAL_ERROR "${_fn}: ${_missing} given without a value")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "${_fn}: SOURCES is required: the .tile files to compile, "
                        "e.g. tilec_add_library(${target} SOURCES kernels.tile)")
  endif()
  if(NOT DEFINED arg_RUNTIME)
    set(arg_RUNTIME STATIC)
  endif()
  if(arg_RUNTIME STREQUAL "STATIC")
    set(_runtime tilec::runtime_static)
  elseif(arg_RUNTIME STREQUAL "SHARED")
    set(_runtime tilec::runtime)
  else()
    message(FATAL_ERROR "${_fn}: RUNTIME is STATIC or SHARED, not ${arg_RUNTIME}")
  endif()
  # The tilec arguments common to every source.
  set(_flags)
  if(arg_TARGETS)
    list(JOIN arg_TARGETS "," _joined)
    list(APPEND _flags "--target=${_joined}")
  endif()
  foreach(_d IN LISTS arg_DEFINES)
    if(NOT _d MATCHES "^[A-Za-z_][A-Za-z0-9_]*=.")
      message(FATAL_ERROR "${_fn}: DEFINES entry '${_d}' is not NAME=VALUE, e.g. BM=64")
    endif()
    list(APPEND _flags -D "${_d}")
  endforeach()
  foreach(_i IN LISTS arg_INCLUDE_DIRS)
    get_filename_component(_i "${_i}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND _flags -I "${_i}")
  endforeach()
  list(APPEND _flags ${arg_OPTIONS})
  # The compile cache: CACHE_DIR, else the variable TILEC_CACHE_DIR (-DTILEC_CACHE_DIR=...),
  # else whatever TILEC_CACHE_DIR the build's environment has (tilec reads it itself).
  if(NOT DEFINED arg_CACHE_DIR AND DEFINED TILEC_CACHE_DIR)
    set(arg_CACHE_DIR "${TILEC_CACHE_DIR}")
  endif()
  set(_launcher)
  if(DEFINED arg_CACHE_DIR AND NOT arg_CACHE_DIR STREQUAL "")
    get_filename_component(_cache "${arg_CACHE_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
    set(_launcher ${CMAKE_COMMAND} -E env "TILEC_CACHE_DIR=${_cache}")
  endif()

  # Absolute paths, and the stem of each: it names the object and the header.
  set(_sources)
  set(_names)
  foreach(_src IN LISTS arg_SOURCES)
    get_filename_component(_abs "${_src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_source_file_property(_generated "${_abs}" GENERATED)
    if(NOT EXISTS "${_abs}" AND NOT _generated AND _src MATCHES "^[A-Z][A-Z_]*$")
      # A keyword after SOURCES reads as one more source: a misspelt keyword lands here.
      message(FATAL_ERROR "${_fn}: unknown keyword ${_src} (the keywords are ${_known})")
    elseif(NOT EXISTS "${_abs}" AND NOT _generated)
      message(FATAL_ERROR "${_fn}: source ${_src} not found (looked for ${_abs})")
    endif()
    get_filename_component(_name "${_abs}" NAME_WLE)
    if(_name IN_LIST _names)
      message(FATAL_ERROR "${_fn}: two sources are named ${_name}: their headers would "
                          "both be ${_name}.h; rename one or use two libraries")
    endif()
    list(APPEND _sources "${_abs}")
    list(APPEND _names "${_name}")
  endforeach()

  # Arguments first, then the environment: misuse is reported as such wherever it runs.
  foreach(_t tilec::tilec ${_runtime})
    if(NOT TARGET ${_t})
      message(FATAL_ERROR "${_fn}: there is no target ${_t}: use find_package(Tilec CONFIG) "
                          "or the tilec source tree before calling tilec_add_library")
    endif()
  endforeach()
  # The archive needs a linker language, and the static runtime is C++ (its users link
  # the C++ standard library, which CMake does only with CXX enabled).
  get_property(_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(arg_RUNTIME STREQUAL "STATIC" AND NOT "CXX" IN_LIST _languages)
    message(FATAL_ERROR "${_fn}: the static runtime (libtile_runtime.a) is C++: enable CXX "
                        "in project() or enable_language(), or pass RUNTIME SHARED")
  endif()
  if("C" IN_LIST _languages)
    set(_linker_language C)
  elseif("CXX" IN_LIST _languages)
    set(_linker_language CXX)
  else()
    message(FATAL_ERROR "${_fn}: enable C or CXX in project() first")
  endif()

  # Rerun tilec when tilec itself changes: the executable is a file dependency (a target
  # named in COMMAND only orders the builds). In-tree that is the target's name.
  get_target_property(_tilec_real tilec::tilec ALIASED_TARGET)
  if(_tilec_real)
    set(_tilec_dep ${_tilec_real})
  else()
    set(_tilec_dep $<TARGET_FILE:tilec::tilec>)
  endif()

  # tilec writes k.h beside k.o, so objects, headers and depfiles share one folder,
  # which is the include directory the target exports.
  set(_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}.tilec")
  file(MAKE_DIRECTORY "${_dir}")
  set(_objects)
  set(_headers)
  foreach(_abs _name _src IN ZIP_LISTS _sources _names arg_SOURCES)
    set(_obj "${_dir}/${_name}.o")
    set(_hdr "${_dir}/${_name}.h")
    set(_dep "${_dir}/${_name}.d")
    add_custom_command(
      OUTPUT "${_obj}" "${_hdr}"
      COMMAND ${_launcher} $<TARGET_FILE:tilec::tilec> "${_abs}" ${_flags} -o "${_obj}" -MD -MF "${_dep}"
      DEPENDS "${_abs}" ${_tilec_dep}
      DEPFILE "${_dep}"
      COMMENT "tilec: ${_name}.o and ${_name}.h from ${_src}"
      VERBATIM)
    list(APPEND _objects "${_obj}")
    list(APPEND _headers "${_hdr}")
  endforeach()
  set_source_files_properties(${_objects} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set_source_files_properties(${_headers} PROPERTIES GENERATED TRUE HEADER_FILE_ONLY TRUE)

  add_library(${target} STATIC ${_objects} ${_headers})
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE ${_linker_language})
  # BUILD_INTERFACE: an install(TARGETS) of the library must not export a build path.
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${_dir}>")
  target_link_libraries(${target} PUBLIC ${_runtime})
  if(UNIX AND NOT APPLE)
    target_link_libraries(${target} PUBLIC m)  # kernels call libm (expf, tanhf, ...)
  endif()
  if(arg_HEADER_DIR)
    set(${arg_HEADER_DIR} "${_dir}" PARENT_SCOPE)
  endif()
endfunction()

cmake_policy(POP)
