// The bottleneck verdict: which side of the batch ring waits. The consumer
// waiting means the input pipeline is too slow; workers idle while the
// consumer never waits means the consumer (the model) is the limit.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sluice/telemetry.h"

namespace sluice {
namespace {

// Above this share of wall time spent waiting, the consumer is starved.
// 10 %: below it, prefetch jitter alone can explain the waits.
constexpr double kInputBoundWait = 0.10;
// "Never waited": 1 % leaves room for the first batch's cold start.
constexpr double kConsumerNeverWaited = 0.01;
// Workers "mostly idle": the busiest stage works less than half the time.
constexpr double kWorkersMostlyIdle = 0.50;

struct Busiest {
  const StageSnapshot* stage = nullptr;
  double share = 0;  // busy / (wall * workers)
};

// Ties go to the earlier stage: stages are listed in pipeline order, and
// the earlier one is the cause of the later one's waits.
Busiest busiest_stage(const VerdictInput& in, int workers) {
  Busiest b;
  for (const StageSnapshot& s : in.stages) {
    if (b.stage == nullptr || s.busy_ns > b.stage->busy_ns) b.stage = &s;
  }
  if (b.stage != nullptr) {
    b.share = static_cast<double>(b.stage->busy_ns) * 1e-9 / (in.wall_seconds * workers);
  }
  return b;
}

long percent(double share) {
  return std::lround(share * 100);
}

std::string describe(const Busiest& b, int workers) {
  if (b.stage == nullptr) return "no worker stages measured";
  return fmt::format("{} is {} % busy on {} worker{}", b.stage->name, percent(b.share), workers,
                     workers == 1 ? "" : "s");
}

}  // namespace

bool is_worker_stage(std::string_view name) {
  return name != "batch" && name != "idle";
}

Verdict bottleneck_verdict(const VerdictInput& input) {
  Verdict v;
  // !(x > 0) also catches NaN: with no time measured there is nothing to
  // judge, which is not the same as a problem.
  if (!(input.wall_seconds > 0)) {
    v.kind = "balanced";
    v.text = "balanced: no time measured yet";
    return v;
  }
  int workers = std::max(input.workers, 1);
  double wait = std::clamp(input.consumer_wait_seconds / input.wall_seconds, 0.0, 1.0);
  Busiest b = busiest_stage(input, workers);
  if (wait > kInputBoundWait) {
    v.kind = "input-bound";
  } else if (wait < kConsumerNeverWaited && b.stage != nullptr && b.share < kWorkersMostlyIdle) {
    v.kind = "consumer-bound";
  } else {
    v.kind = "balanced";
  }
  if (b.stage != nullptr) v.bottleneck = b.stage->name;
  v.text = fmt::format("{}: the consumer waited {} % of the time; {}", v.kind, percent(wait),
                       describe(b, workers));
  return v;
}

}  // namespace sluice
