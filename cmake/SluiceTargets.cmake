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

# sluice_module(NAME SOURCES ... [HEADERS ...] [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Declares the library sluice_<NAME>, aliased sluice::<NAME>: static, or
# shared with SLUICE_SHARED_MODULES. HEADERS are the public headers it owns
# (include/sluice/...); src/<NAME>/ holds its sources and internal headers.
# sluice_layering_manifest() checks the includes against the links.
function(sluice_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;HEADERS;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  sluice_layer(${name} sluice_${name} HEADERS ${ARG_HEADERS})
  if(SLUICE_SHARED_MODULES)
    add_library(sluice_${name} SHARED ${ARG_SOURCES})
  else()
    add_library(sluice_${name} STATIC ${ARG_SOURCES})
  endif()
  add_library(sluice::${name} ALIAS sluice_${name})
  # Installed and exported as sluice::<NAME> (cmake/SluiceInstall.cmake).
  set_target_properties(sluice_${name} PROPERTIES EXPORT_NAME ${name})
  set_property(GLOBAL APPEND PROPERTY SLUICE_MODULES sluice_${name})
  target_include_directories(sluice_${name}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(sluice_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  sluice_target_warnings(sluice_${name})
endfunction()

# sluice_layer(DIR TARGET [HEADERS ...]): src/DIR (and the public HEADERS)
# are compiled into TARGET, whose links decide which other modules' headers
# they may include: its own, its direct dependencies', and what those
# export PUBLIC. Recorded for sluice_layering_manifest().
function(sluice_layer dir target)
  cmake_parse_arguments(ARG "" "" "HEADERS" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY SLUICE_LAYERS "${dir}=${target}")
  set_property(GLOBAL PROPERTY SLUICE_LAYER_HEADERS_${dir} "${ARG_HEADERS}")
endfunction()

# Writes build/layering.txt once every target exists: per layer its folder,
# target, owned public headers and link edges (public, or private: a
# static library's private edges appear as $<LINK_ONLY:...>).
# scripts/check_layering.py reads it (CTest: layering).
function(sluice_layering_manifest)
  get_property(layers GLOBAL PROPERTY SLUICE_LAYERS)
  set(text "")
  foreach(entry ${layers})
    string(REPLACE "=" ";" pair "${entry}")
    list(GET pair 0 dir)
    list(GET pair 1 target)
    get_property(headers GLOBAL PROPERTY SLUICE_LAYER_HEADERS_${dir})
    get_target_property(all ${target} LINK_LIBRARIES)
    get_target_property(iface ${target} INTERFACE_LINK_LIBRARIES)
    if(NOT all)
      set(all "")
    endif()
    if(NOT iface)
      set(iface "")
    endif()
    set(public "")
    foreach(lib ${iface})
      if(NOT lib MATCHES "^\\$<LINK_ONLY:")
        list(APPEND public ${lib})
      endif()
    endforeach()
    set(private "")
    foreach(lib ${all})
      if(NOT lib IN_LIST public)
        list(APPEND private ${lib})
      endif()
    endforeach()
    list(JOIN headers " " headers)
    list(JOIN public " " public)
    list(JOIN private " " private)
    string(APPEND text "layer ${dir} ${target}\nheaders ${headers}\npublic ${public}\nprivate ${private}\n")
  endforeach()
  file(WRITE ${PROJECT_BINARY_DIR}/layering.txt "${text}")
endfunction()
