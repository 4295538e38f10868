# TilecInTree.cmake: tilec_add_library() inside the tilec build (so its own tests can use
# it with the tilec just built), and the install rules of the CMake package
# <prefix>/lib/cmake/tilec (TilecConfig.cmake, its version file, TilecTargets.cmake).
# Included by the top-level CMakeLists.txt after compiler/driver and runtime.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The same names the installed package gives: the compiler, and the stdlib for
# `SOURCES ${TILEC_STDLIB_DIR}/kernels/...`.
if(TARGET tilec AND NOT TARGET tilec::tilec)
  add_executable(tilec::tilec ALIAS tilec)
endif()
set(TILEC_STDLIB_DIR ${PROJECT_SOURCE_DIR}/stdlib)
include(${CMAKE_CURRENT_LIST_DIR}/TilecAddLibrary.cmake)

# compiler/driver installs bin/tilec and share/tilec/stdlib; the config finds both
# relative to its own folder, so the prefix can move after installing.
set(TILEC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tilec)
set(TILEC_INSTALL_EXECUTABLE bin/tilec${CMAKE_EXECUTABLE_SUFFIX})
set(TILEC_INSTALL_STDLIBDIR share/tilec/stdlib)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/TilecConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/TilecConfig.cmake
  INSTALL_DESTINATION ${TILEC_INSTALL_CMAKEDIR}
  PATH_VARS TILEC_INSTALL_EXECUTABLE TILEC_INSTALL_STDLIBDIR)
# Before 1.0 a minor version may change the language or the generated entry points.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/TilecConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/TilecConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/TilecConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/TilecAddLibrary.cmake
        DESTINATION ${TILEC_INSTALL_CMAKEDIR})
# The imported targets tilec::runtime and tilec::runtime_static (runtime/CMakeLists.txt).
# It belongs to the runtime component, which `--component runtime` installs alone; the
# compiler is not in this export set for that reason (a targets file checks that every
# file it names exists), and TilecConfig.cmake defines tilec::tilec itself.
install(EXPORT TilecTargets NAMESPACE tilec:: DESTINATION ${TILEC_INSTALL_CMAKEDIR} COMPONENT runtime)
