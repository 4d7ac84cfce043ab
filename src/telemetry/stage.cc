// Stage counters and their registry.
#include "sluice/telemetry.h"

namespace sluice {

// Each counter is read on its own, so a snapshot taken while workers run may
// pair items from one moment with busy time from the next; the skew is one
// update at most, which rates over seconds do not notice.
StageSnapshot StageStats::snapshot() const {
  StageSnapshot s;
  s.name = name_;
  s.items = items_.load(std::memory_order_relaxed);
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.busy_ns = busy_ns_.load(std::memory_order_relaxed);
  s.wait_ns = wait_ns_.load(std::memory_order_relaxed);
  return s;
}

// Stages are registered during setup only, so the deque is never mutated
// while snapshot() walks it and needs no lock; a linear search is fine for
// the handful of stages a pipeline has.
StageStats& Telemetry::stage(std::string_view name) {
  for (StageStats& s : stages_) {
    if (s.name() == name) return s;
  }
  return stages_.emplace_back(std::string(name));
}

std::vector<StageSnapshot> Telemetry::snapshot() const {
  std::vector<StageSnapshot> out;
  out.reserve(stages_.size());
  for (const StageStats& s : stages_) out.push_back(s.snapshot());
  return out;
}

}  // namespace sluice
