// The GPUs as `sluice top`'s status file lists them (bench --status and
// train --status write the same array). Header-only: the callers use
// nlohmann::json or ordered_json.
#pragma once

#include <vector>

#include "sluice/gpu_monitor.h"

namespace sluice::detail {

template <typename Json>
Json gpus_status_json(const GpuMonitor* gpus) {
  Json out = Json::array();
  if (gpus == nullptr) return out;
  std::vector<GpuSample> samples = gpus->sample();
  for (size_t i = 0; i < samples.size() && i < gpus->names().size(); ++i) {
    out.push_back({{"name", gpus->names()[i]},
                   {"utilization", samples[i].utilization},
                   {"memory_used_bytes", samples[i].memory_used_bytes},
                   {"memory_total_bytes", samples[i].memory_total_bytes}});
  }
  return out;
}

}  // namespace sluice::detail
