#include "ops/gpu_libs.h"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>

namespace sluice::detail {
namespace {

void probe_nvml(DoctorReport* r) {
  std::string which;
  void* h = open_first(nvml_candidates(), &which);
  if (!h) return;
  auto init = sym<nvmlReturn_t (*)()>(h, "nvmlInit_v2");
  auto shutdown = sym<nvmlReturn_t (*)()>(h, "nvmlShutdown");
  auto driver = sym<nvmlReturn_t (*)(char*, unsigned)>(h, "nvmlSystemGetDriverVersion");
  auto cuda = sym<nvmlReturn_t (*)(int*)>(h, "nvmlSystemGetCudaDriverVersion_v2");
  auto count = sym<nvmlReturn_t (*)(unsigned*)>(h, "nvmlDeviceGetCount_v2");
  auto handle = sym<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(h, "nvmlDeviceGetHandleByIndex_v2");
  auto name = sym<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>(h, "nvmlDeviceGetName");
  auto memory = sym<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(h, "nvmlDeviceGetMemoryInfo");
  auto cc =
      sym<nvmlReturn_t (*)(nvmlDevice_t, int*, int*)>(h, "nvmlDeviceGetCudaComputeCapability");
  if (!init || !count || !handle || init() != NVML_SUCCESS) {
    ::dlclose(h);
    return;
  }
  r->nvml_library = which;
  char buf[96] = {};
  if (driver && driver(buf, sizeof(buf)) == NVML_SUCCESS) r->driver_version = buf;
  int v = 0;
  if (cuda && cuda(&v) == NVML_SUCCESS) r->cuda_driver_version = v;
  unsigned n = 0;
  if (count(&n) == NVML_SUCCESS) {
    for (unsigned i = 0; i < n && i < 64; ++i) {
      nvmlDevice_t d = nullptr;
      if (handle(i, &d) != NVML_SUCCESS) continue;
      GpuInfo g;
      char nm[96] = {};
      if (name && name(d, nm, sizeof(nm)) == NVML_SUCCESS) g.name = nm;
      nvmlMemory_t m{};
      if (memory && memory(d, &m) == NVML_SUCCESS) g.memory_bytes = m.total;
      if (cc) cc(d, &g.compute_major, &g.compute_minor);
      r->gpus.push_back(g);
    }
  }
  if (shutdown) shutdown();
  // NVML stays loaded: unloading a driver library mid-process is not safe.
}

void probe_cudart(DoctorReport* r) {
  std::string which;
  void* h = open_first(cudart_candidates(), &which);
  if (!h) return;
  auto runtime = sym<int (*)(int*)>(h, "cudaRuntimeGetVersion");
  auto driver = sym<int (*)(int*)>(h, "cudaDriverGetVersion");
  int v = 0;
  if (runtime && runtime(&v) == 0) {
    r->cudart_library = which;
    r->cuda_runtime_version = v;
  }
  int d = 0;
  if (r->cuda_driver_version == 0 && driver && driver(&d) == 0) r->cuda_driver_version = d;
}

// nvJPEG's version through nvjpegGetProperty (libraryPropertyType:
// MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2), which needs no GPU.
void probe_nvjpeg(DoctorReport* r) {
  std::string which;
  void* h = open_first(nvjpeg_candidates(), &which);
  if (!h) return;
  auto property = sym<int (*)(int, int*)>(h, "nvjpegGetProperty");
  int major = 0, minor = 0, patch = 0;
  if (property && property(0, &major) == 0 && property(1, &minor) == 0 &&
      property(2, &patch) == 0 && major > 0) {
    r->nvjpeg_library = which;
    r->nvjpeg_major = major;
    r->nvjpeg_minor = minor;
    r->nvjpeg_patch = patch;
  }
  ::dlclose(h);
}

void probe_nccl(DoctorReport* r) {
  std::string which;
  void* h = open_first(nccl_candidates(), &which);
  if (!h) return;
  auto version = sym<int (*)(int*)>(h, "ncclGetVersion");
  int v = 0;
  if (version && version(&v) == 0) r->nccl_version = v;
}

}  // namespace

void probe_gpu_libraries(DoctorReport* report) {
  probe_nvml(report);
  probe_cudart(report);
  probe_nccl(report);
  probe_nvjpeg(report);
}

}  // namespace sluice::detail
