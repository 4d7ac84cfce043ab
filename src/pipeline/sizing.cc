#include "pipeline/sizing.h"

#include <fmt/format.h>

#include <algorithm>

#include "device/cuda_runtime.h"

namespace sluice::detail {

size_t arena_per_sample(const SampleSpec& spec) {
  const size_t w = static_cast<size_t>(spec.width), h = static_cast<size_t>(spec.height);
  return (4 * w * h * 3 + 64 * (w + h) + 4096 + 255) / 256 * 256;
}

Result<RingSize> size_ring(const PipelineOptions& o, uint64_t slot_bytes, uint64_t device_fit,
                           int cores, uint64_t reserved) {
  RingSize r;
  r.workers = o.workers > 0 ? o.workers : std::max(1, cores);
  const char* how = o.workers > 0 ? "set" : "one per core";
  if (o.prefetch > 0) {
    r.prefetch = o.prefetch;
    r.tuning = fmt::format("workers {} ({}), prefetch {} (set)", r.workers, how, r.prefetch);
    return r;
  }
  const uint64_t scratch = static_cast<uint64_t>(r.workers) * kWorkerScratchBytes + reserved;
  const uint64_t room = o.memory_budget > scratch ? o.memory_budget - scratch : 0;
  const uint64_t fit = std::min(room / std::max<uint64_t>(1, slot_bytes), device_fit);
  if (fit < 2) {
    return invalid_argument_error(fmt::format(
        "memory budget of {} MB is too small: two batch slots of {} MB plus {} MB of "
        "worker scratch and read-ahead "
        "need {} MB (raise the budget, or lower batch size or image size)",
        o.memory_budget >> 20, slot_bytes >> 20, scratch >> 20, (2 * slot_bytes + scratch) >> 20));
  }
  r.prefetch = static_cast<int>(std::min<uint64_t>(fit, std::max(2, 2 * r.workers)));
  r.tuning = fmt::format(
      "workers {} ({}), prefetch {} (of {} slots of {:.1f} MB that fit the {} MB budget{})",
      r.workers, how, r.prefetch, fit, slot_bytes / 1e6, o.memory_budget >> 20,
      o.device >= 0 ? fmt::format(" and {} MB on {}", o.device_memory_budget >> 20,
                                  device::device_name(o.device))
                    : "");
  return r;
}

}  // namespace sluice::detail
