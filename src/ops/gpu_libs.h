// Run-time loading of NVIDIA's libraries (never needed to build): the
// project's own minimal declarations of the few entry points doctor uses.
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

#include "sluice/doctor.h"

namespace sluice::detail {

// NVML's ABI, as far as sluice needs it (nvml.h, stable since CUDA 8).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;  // percent of the last sample period (1/6 s to 1 s)
};
constexpr nvmlReturn_t NVML_SUCCESS = 0;

// Where each library is looked for, in order: an environment override
// (SLUICE_NVML_LIBRARY, SLUICE_CUDART_LIBRARY, SLUICE_NCCL_LIBRARY: when
// set, the only candidate), the dynamic loader's own path, the CUDA toolkit's folder, pip's
// nvidia/cu13 wheels. The toolkit's stubs folder is never used: its NVML
// stub answers every call with an error.
std::vector<std::string> nvml_candidates();
std::vector<std::string> cudart_candidates();
std::vector<std::string> nccl_candidates();
// nvJPEG: SLUICE_NVJPEG_LIBRARY, the loader's path (libnvjpeg.so.13, .12),
// the CUDA toolkit's folder, pip's nvidia/cu13 and nvidia/nvjpeg wheels,
// and the copy torchvision bundles (torchvision.libs).
std::vector<std::string> nvjpeg_candidates();

// Opens the first candidate that loads (dlopen, RTLD_NOW | RTLD_LOCAL);
// returns its handle and sets `which` to its name, or returns nullptr.
void* open_first(const std::vector<std::string>& candidates, std::string* which);

// A symbol of a loaded library as a function pointer; nullptr when absent.
template <typename F>
F sym(void* handle, const char* name) {
  return reinterpret_cast<F>(::dlsym(handle, name));
}

// Fills the GPU part of the report from whatever loads.
void probe_gpu_libraries(DoctorReport* report);

}  // namespace sluice::detail
