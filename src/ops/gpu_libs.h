// The project's own minimal declarations of the few NVML entry points
// doctor and the GPU monitor use (loaded at run time: device/libraries.h).
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

#include "device/libraries.h"
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

// Fills the GPU part of the report from whatever loads.
void probe_gpu_libraries(DoctorReport* report);

}  // namespace sluice::detail
