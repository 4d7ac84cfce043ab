# Every third-party dependency, found once here. All come from Debian
# packages installed by scripts/bootstrap.sh (DESIGN.md, Dependencies).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(Protobuf REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(libjpeg-turbo REQUIRED)

pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET spng)

# Debian's libopencv-imgproc-dev ships headers and libraries but no CMake
# package (that comes with the full libopencv-dev), so find the two
# libraries we use directly.
find_path(OPENCV_INCLUDE_DIR opencv2/imgproc.hpp PATH_SUFFIXES opencv4 REQUIRED)
find_library(OPENCV_CORE_LIBRARY opencv_core REQUIRED)
find_library(OPENCV_IMGPROC_LIBRARY opencv_imgproc REQUIRED)
add_library(sluice_opencv INTERFACE)
target_include_directories(sluice_opencv SYSTEM INTERFACE ${OPENCV_INCLUDE_DIR})
target_link_libraries(sluice_opencv INTERFACE ${OPENCV_IMGPROC_LIBRARY} ${OPENCV_CORE_LIBRARY})

if(SLUICE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

if(SLUICE_BUILD_PYTHON)
  # Debian's python3 explicitly (another python3 may come first on PATH),
  # and pybind11 from libpybind11/pybind11-dev.
  set(Python_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python for the sluice module")
  find_package(Python 3 REQUIRED COMPONENTS Interpreter Development.Module)
  find_package(pybind11 CONFIG REQUIRED)
endif()
