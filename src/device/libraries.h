// Where NVIDIA's libraries are found at run time (never needed to build).
// Each list, in order: an environment override (when set, the only
// candidate: tests and users pointing at one library must not silently get
// another), the dynamic loader's own path, the CUDA toolkit's folder, pip's
// nvidia/* wheels. The toolkit's stubs folder is never used: its stubs
// answer every call with an error.
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

namespace sluice::detail {

// SLUICE_NVML_LIBRARY, libnvidia-ml.so.1, pip's nvidia/nvml.
std::vector<std::string> nvml_candidates();
// SLUICE_CUDART_LIBRARY, libcudart.so.13 / .12, the toolkit, pip's
// nvidia/cu13 and nvidia/cuda_runtime.
std::vector<std::string> cudart_candidates();
// SLUICE_NCCL_LIBRARY, libnccl.so.2, the toolkit, pip's nvidia/nccl.
std::vector<std::string> nccl_candidates();
// SLUICE_NVJPEG_LIBRARY, the loader's path (libnvjpeg.so.13, .12), the
// toolkit, pip's nvidia/cu13 and nvidia/nvjpeg wheels, and the copy
// torchvision bundles (torchvision.libs).
std::vector<std::string> nvjpeg_candidates();

// Opens the first candidate that loads (dlopen, RTLD_NOW | RTLD_LOCAL);
// returns its handle and sets `which` to its name, or returns nullptr.
void* open_first(const std::vector<std::string>& candidates, std::string* which);

// A symbol of a loaded library as a function pointer; nullptr when absent.
template <typename F>
F sym(void* handle, const char* name) {
  return reinterpret_cast<F>(::dlsym(handle, name));
}

}  // namespace sluice::detail
