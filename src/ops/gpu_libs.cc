#include "ops/gpu_libs.h"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>

#include "device/nvjpeg.h"

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

// The first runtime on the search list that answers for its version (one
// that loads but cannot, a stub say, is passed over).
void probe_cudart(DoctorReport* r) {
  for (const std::string& c : cudart_candidates()) {
    void* h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    auto runtime = sym<int (*)(int*)>(h, "cudaRuntimeGetVersion");
    auto driver = sym<int (*)(int*)>(h, "cudaDriverGetVersion");
    int v = 0;
    if (!runtime || runtime(&v) != 0 || v <= 0) {
      ::dlclose(h);
      continue;
    }
    r->cudart_library = c;
    r->cuda_runtime_version = v;
    int d = 0;
    if (r->cuda_driver_version == 0 && driver && driver(&d) == 0) r->cuda_driver_version = d;
    return;
  }
}

// nvJPEG as the GPU decoder would choose it: the search of nvjpeg.h for
// the runtime found above (any version without one), with what it passed
// over. nvjpegGetProperty needs no GPU.
void probe_nvjpeg(DoctorReport* r) {
  device::detail::NvjpegSearch s = device::detail::search_nvjpeg(r->cuda_runtime_version / 1000);
  r->nvjpeg_refused = s.refused;
  if (!s.handle) return;
  r->nvjpeg_library = s.library;
  r->nvjpeg_major = s.major;
  r->nvjpeg_minor = s.minor;
  r->nvjpeg_patch = s.patch;
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
