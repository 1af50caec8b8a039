# `cmake --install <build> --prefix P`: the libraries and the INTERFACE target recbole as the
# CMake package `recbole` (P/lib/cmake/recbole), the public headers in the layout the sources
# use (P/include/recbole/..., models/..., tasks/..., run/...), the tools (P/bin), the default configs
# and the shipped datasets (P/share/recbole/{configs,datasets}). A consumer does
#   find_package(recbole REQUIRED)
#   target_link_libraries(app PRIVATE recbole::recbole)
# tests/install/ builds and runs such a consumer against an installed copy.
include(CMakePackageConfigHelpers)

set(RECBOLE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/recbole)

get_property(RECBOLE_AREAS GLOBAL PROPERTY RECBOLE_AREAS)
install(TARGETS ${RECBOLE_AREAS} recbole
        EXPORT recboleTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT recboleTargets NAMESPACE recbole:: DESTINATION ${RECBOLE_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_SOURCE_DIR}/cmake/recboleConfig.cmake.in
  ${CMAKE_BINARY_DIR}/generated/recboleConfig.cmake
  INSTALL_DESTINATION ${RECBOLE_INSTALL_CMAKEDIR}
  PATH_VARS RECBOLE_INSTALL_SHAREDIR)
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/generated/recboleConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/generated/recboleConfig.cmake
              ${CMAKE_BINARY_DIR}/generated/recboleConfigVersion.cmake
        DESTINATION ${RECBOLE_INSTALL_CMAKEDIR})

# Every header of the library (every floor of layers.txt but tools/), tools and tests excepted;
# the generated version header beside the others.
foreach(dir recbole kernels models tasks trainer serving run)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES ${CMAKE_BINARY_DIR}/generated/recbole/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/recbole)

# The defaults are compiled into the library; these copies are for reading and for reference.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/configs/ DESTINATION ${RECBOLE_INSTALL_SHAREDIR}/configs)
install(FILES ${CMAKE_SOURCE_DIR}/datasets/registry.yaml
        DESTINATION ${RECBOLE_INSTALL_SHAREDIR}/datasets)
if(RECBOLE_INSTALL_DATASETS)
  # Where recbole/data/dataset_location.cpp looks for them (RECBOLE_DATASETS_FROM_BINDIR).
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/datasets/ml-100k
          DESTINATION ${RECBOLE_INSTALL_SHAREDIR}/datasets)
endif()
