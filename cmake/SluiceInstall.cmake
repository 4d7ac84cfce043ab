# `cmake --install`: the sluice and sluice-train commands, the kernel
# library, the public headers and the modules as static libraries, with a
# CMake package so that another project can
#
#   find_package(sluice REQUIRED)
#   target_link_libraries(app PRIVATE sluice::pipeline)
#
# (tests/install builds such a consumer against an install). The package
# finds the same Debian packages the build used (sluiceConfig.cmake.in).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(sluice_modules GLOBAL PROPERTY SLUICE_MODULES)
install(TARGETS ${sluice_modules} EXPORT sluiceTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sluice DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The commands find the kernel library (loaded at run time, device/kernels.cc)
# through their run path.
set(commands sluice)
if(TARGET sluice-train)
  list(APPEND commands sluice-train)
endif()
set_target_properties(${commands} PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS ${commands} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET sluice_kernels)
  install(TARGETS sluice_kernels LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/sluice)
install(EXPORT sluiceTargets NAMESPACE sluice:: DESTINATION ${config_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/sluiceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/sluiceConfig.cmake INSTALL_DESTINATION ${config_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sluiceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sluiceConfig.cmake ${PROJECT_BINARY_DIR}/sluiceConfigVersion.cmake
  DESTINATION ${config_dir})
