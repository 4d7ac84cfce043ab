// The project's own minimal declarations of the few NVML entry points that
// doctor (ops) and the GPU monitor (telemetry) use. NVML is loaded at run
// time from device/libraries.h's search list; sluice never links it.
#pragma once

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

}  // namespace sluice::detail
