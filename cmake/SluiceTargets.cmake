# Helpers that give every sluice target the same warnings and layout.
# Flags are set per target, never globally, so third-party code compiled in
# this tree (generated protobuf sources) is not held to -Werror.

function(sluice_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  # Clang checks the lock annotations of src/base/mutex.h (GCC has no such
  # analysis; CI's fuzz build is clang).
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wthread-safety)
  endif()
  if(SLUICE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# sluice_module(NAME SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Declares the library sluice_<NAME>, aliased sluice::<NAME>: static, or
# shared with SLUICE_SHARED_MODULES.
function(sluice_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  if(SLUICE_SHARED_MODULES)
    add_library(sluice_${name} SHARED ${ARG_SOURCES})
  else()
    add_library(sluice_${name} STATIC ${ARG_SOURCES})
  endif()
  add_library(sluice::${name} ALIAS sluice_${name})
  target_include_directories(sluice_${name}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(sluice_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  sluice_target_warnings(sluice_${name})
endfunction()
