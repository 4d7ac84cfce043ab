#include "sluice/gpu_monitor.h"

#include <fmt/format.h>

#include "device/libraries.h"
#include "device/nvml.h"

namespace sluice {

using detail::NVML_SUCCESS;
using detail::nvmlDevice_t;
using detail::nvmlMemory_t;
using detail::nvmlReturn_t;
using detail::nvmlUtilization_t;

struct GpuMonitor::Api {
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  std::vector<nvmlDevice_t> devices;
};

Result<std::unique_ptr<GpuMonitor>> GpuMonitor::open() {
  std::string which;
  void* h = detail::open_first(detail::nvml_candidates(), &which);
  if (!h) return not_found_error("no NVIDIA driver found (libnvidia-ml.so.1 did not load)");
  // NVML stays loaded even on failure: unloading a driver library
  // mid-process is not safe (as in doctor).
  auto init = detail::sym<nvmlReturn_t (*)()>(h, "nvmlInit_v2");
  auto count = detail::sym<nvmlReturn_t (*)(unsigned*)>(h, "nvmlDeviceGetCount_v2");
  auto handle =
      detail::sym<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(h, "nvmlDeviceGetHandleByIndex_v2");
  auto name = detail::sym<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>(h, "nvmlDeviceGetName");
  if (!init || !count || !handle) return not_found_error(which + ": not an NVML library");
  if (int rc = init(); rc != NVML_SUCCESS)
    return not_found_error(fmt::format("{}: nvmlInit failed (NVML error {})", which, rc));
  std::unique_ptr<GpuMonitor> m(new GpuMonitor);
  m->api_ = std::make_unique<Api>();
  Api& api = *m->api_;
  api.shutdown = detail::sym<nvmlReturn_t (*)()>(h, "nvmlShutdown");
  api.utilization = detail::sym<nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*)>(
      h, "nvmlDeviceGetUtilizationRates");
  api.memory =
      detail::sym<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(h, "nvmlDeviceGetMemoryInfo");
  unsigned n = 0;
  if (count(&n) != NVML_SUCCESS) n = 0;
  for (unsigned i = 0; i < n && i < 64; ++i) {
    nvmlDevice_t d = nullptr;
    if (handle(i, &d) != NVML_SUCCESS) continue;
    char nm[96] = {};
    if (!name || name(d, nm, sizeof(nm)) != NVML_SUCCESS) nm[0] = '\0';
    api.devices.push_back(d);
    m->names_.push_back(fmt::format("GPU {}: {}", i, nm[0] ? nm : "unnamed"));
  }
  if (api.devices.empty()) return not_found_error("the NVIDIA driver (" + which + ") sees no GPU");
  return m;
}

GpuMonitor::~GpuMonitor() {
  if (api_ && api_->shutdown) api_->shutdown();
}

std::vector<GpuSample> GpuMonitor::sample() const {
  std::vector<GpuSample> out(api_->devices.size());
  for (size_t i = 0; i < out.size(); ++i) {
    nvmlUtilization_t u{};
    if (api_->utilization && api_->utilization(api_->devices[i], &u) == NVML_SUCCESS)
      out[i].utilization = u.gpu;
    nvmlMemory_t m{};
    if (api_->memory && api_->memory(api_->devices[i], &m) == NVML_SUCCESS) {
      out[i].memory_used_bytes = m.used;
      out[i].memory_total_bytes = m.total;
    }
  }
  return out;
}

}  // namespace sluice
