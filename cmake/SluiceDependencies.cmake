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

# Google Highway (libhwy-dev): the resample kernel's SIMD, dispatched at run
# time over the targets the CPU has.
find_package(hwy REQUIRED)

pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET spng)
# libcurl (libcurl4-openssl-dev): s3:// and http(s):// sources, with its
# own SigV4 signing (CURLOPT_AWS_SIGV4, 7.75+; bookworm has 7.88).
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl>=7.75)

# Debian's libopencv-imgproc-dev ships headers and libraries but no CMake
# package (that comes with the full libopencv-dev), so find the two
# libraries we use directly.
find_path(OPENCV_INCLUDE_DIR opencv2/imgproc.hpp PATH_SUFFIXES opencv4 REQUIRED)
find_library(OPENCV_CORE_LIBRARY opencv_core REQUIRED)
find_library(OPENCV_IMGPROC_LIBRARY opencv_imgproc REQUIRED)
add_library(sluice_opencv INTERFACE)
target_include_directories(sluice_opencv SYSTEM INTERFACE ${OPENCV_INCLUDE_DIR})
target_link_libraries(sluice_opencv INTERFACE ${OPENCV_IMGPROC_LIBRARY} ${OPENCV_CORE_LIBRARY})
set_property(GLOBAL APPEND PROPERTY SLUICE_MODULES sluice_opencv)

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

# LibTorch for the trainer, never for the rest. Debian's libtorch-dev
# installs a CMake package; a pip-installed PyTorch (the CUDA build on GPU
# machines) names its own with torch.utils.cmake_prefix_path.
set(SLUICE_WITH_TORCH OFF)
if(NOT SLUICE_TORCH STREQUAL "OFF")
  # A CUDA LibTorch checks nvcc with a test program in the project's C++
  # standard (20), which CMake before 3.26 cannot ask of nvcc; sluice's own
  # CUDA code is C++17 (src/cuda).
  if(NOT DEFINED CMAKE_CUDA_STANDARD)
    set(CMAKE_CUDA_STANDARD 17)
  endif()
  find_package(Torch QUIET)
  if(NOT Torch_FOUND)
    foreach(py python3 /usr/bin/python3)
      execute_process(COMMAND ${py} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
        OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
        RESULT_VARIABLE _torch_rc)
      if(_torch_rc EQUAL 0 AND _torch_prefix)
        find_package(Torch QUIET PATHS ${_torch_prefix} NO_DEFAULT_PATH)
        if(Torch_FOUND)
          break()
        endif()
      endif()
    endforeach()
  endif()
  # c10d's Gloo process group (CPU data parallel, --procs) needs Gloo's
  # headers: Debian's libgloo-dev has them, pip's PyTorch wheels do not
  # (their libtorch has Gloo inside, but no header to reach it). Without
  # them the trainer is built all the same, with NCCL for GPUs only.
  if(Torch_FOUND)
    find_path(GLOO_INCLUDE_DIR gloo/rendezvous/store.h HINTS ${TORCH_INCLUDE_DIRS})
  endif()
  if(Torch_FOUND)
    set(SLUICE_WITH_TORCH ON)
    if(GLOO_INCLUDE_DIR)
      set(SLUICE_WITH_GLOO ON)
      message(STATUS "sluice: LibTorch ${Torch_VERSION} found, building sluice-train")
    else()
      set(SLUICE_WITH_GLOO OFF)
      message(STATUS "sluice: LibTorch ${Torch_VERSION} found, building sluice-train without "
        "Gloo (no gloo/ headers: CPU data parallel off, NCCL on GPUs)")
    endif()
  elseif(SLUICE_TORCH STREQUAL "ON")
    message(FATAL_ERROR "SLUICE_TORCH=ON but LibTorch was not found: install libtorch-dev "
      "(and libgloo-dev), or PyTorch, or configure with -DSLUICE_TORCH=OFF")
  else()
    message(STATUS "sluice: LibTorch not found, building without sluice-train")
  endif()
endif()
# Recorded for `make demo`, which builds sluice-train only where it exists.
set(SLUICE_WITH_TORCH_BUILT ${SLUICE_WITH_TORCH} CACHE INTERNAL "sluice-train is built")

# CUDA for the kernels (src/cuda): sm_80 and sm_90 code plus PTX for later
# GPUs. Optional: a machine without nvcc builds the CPU data path only.
set(SLUICE_WITH_CUDA OFF)
if(NOT SLUICE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  # The usual place as a hint only, so that check_language really tries
  # nvcc with this host compiler (an nvcc that cannot must not fail AUTO).
  if(NOT DEFINED ENV{CUDACXX} AND NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit)
    # sm_80 and sm_90 code plus PTX, set on the target (a CUDA LibTorch may
    # already have enabled CUDA with its own default architectures).
    if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 11.8)
      set(SLUICE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual" CACHE STRING
        "CUDA architectures of sluice's kernels")
      if(CUDAToolkit_FOUND)
        set(SLUICE_WITH_CUDA ON)
        message(STATUS "sluice: CUDA ${CUDAToolkit_VERSION} found, building the CUDA kernels")
      endif()
    else()
      message(STATUS "sluice: nvcc ${CMAKE_CUDA_COMPILER_VERSION} is older than 11.8 (no sm_90): CUDA kernels not built")
    endif()
  endif()
  if(NOT SLUICE_WITH_CUDA AND SLUICE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SLUICE_CUDA=ON but no CUDA toolkit (nvcc) was found")
  endif()
endif()
