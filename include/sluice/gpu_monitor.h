// GPU utilisation and memory over time, for `sluice bench --report`.
//
// NVML (the NVIDIA driver's management library) is loaded at run time from
// doctor's search list (SLUICE_NVML_LIBRARY overrides it); sluice never
// needs it to build, and on a machine without a driver open() says why and
// nothing else changes. Thread safety: one thread at a time per monitor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/status.h"

namespace sluice {

// One GPU at one moment.
struct GpuSample {
  // Percent of NVML's last sample period (1/6 s to 1 s, by GPU) in which a
  // kernel ran: "busy", not how much of the GPU it used. -1: the driver
  // would not say (some boards refuse the query).
  double utilization = -1;
  uint64_t memory_used_bytes = 0;
  uint64_t memory_total_bytes = 0;
};

class GpuMonitor {
 public:
  // Loads NVML and finds the GPUs. kNotFound, with the reason in words,
  // when no driver loads or it sees no GPU.
  static Result<std::unique_ptr<GpuMonitor>> open();
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // "GPU 0: NVIDIA H200", one per GPU, in NVML's order.
  const std::vector<std::string>& names() const { return names_; }
  // One sample per GPU, same order as names(). A memory query the driver
  // refuses leaves both memory figures 0.
  std::vector<GpuSample> sample() const;

 private:
  GpuMonitor() = default;
  struct Api;
  std::unique_ptr<Api> api_;
  std::vector<std::string> names_;
};

}  // namespace sluice
