// Where NVIDIA's libraries are found at run time (never needed to build).
// Each list, in order: an environment override (when set, the only
// candidates, one path or several separated by ':': tests and users
// pointing at a library must not silently get another), the dynamic loader's own path, the CUDA
// toolkit's folder, then the nvidia/*/lib folders of pip's wheels in every Python environment in
// sight (python_site_dirs()). The toolkit's stubs folder is never used: its
// stubs answer every call with an error.
//
// A list is only where to look: callers try every candidate and keep the
// first that suits them (nvjpeg.h: the one whose major version is the CUDA
// runtime's), so a wrong library early in the list never hides a right one
// later.
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

namespace sluice::detail {

// SLUICE_NVML_LIBRARY, libnvidia-ml.so.1, pip's nvidia/*/lib.
std::vector<std::string> nvml_candidates();
// SLUICE_CUDART_LIBRARY, libcudart.so.13 / .12, the toolkit, pip's
// nvidia/*/lib (nvidia/cu13 for CUDA 13, nvidia/cuda_runtime for 12).
std::vector<std::string> cudart_candidates();
// SLUICE_NCCL_LIBRARY, libnccl.so.2, the toolkit, pip's nvidia/*/lib.
std::vector<std::string> nccl_candidates();
// SLUICE_NVJPEG_LIBRARY, the loader's path (libnvjpeg.so.13, .12), the
// toolkit, pip's nvidia/*/lib (nvidia/cu13, nvidia/nvjpeg) and the copy
// torchvision bundles (torchvision.libs).
std::vector<std::string> nvjpeg_candidates();

// The site-packages folders searched for pip's NVIDIA wheels, in order:
// those added by add_python_site_dirs() (the Python module adds its own
// interpreter's), the active virtual environment ($VIRTUAL_ENV), conda
// environment ($CONDA_PREFIX), the environment of the first python3 on
// $PATH when it is a venv or conda one, then the system's.
std::vector<std::string> python_site_dirs();
// Adds folders (site-packages of the running interpreter) to the front of
// the search; thread-safe.
void add_python_site_dirs(const std::vector<std::string>& dirs);

// Opens the first candidate that loads (dlopen, RTLD_NOW | RTLD_LOCAL);
// returns its handle and sets `which` to its name, or returns nullptr.
void* open_first(const std::vector<std::string>& candidates, std::string* which);

// A symbol of a loaded library as a function pointer; nullptr when absent.
template <typename F>
F sym(void* handle, const char* name) {
  return reinterpret_cast<F>(::dlsym(handle, name));
}

}  // namespace sluice::detail
