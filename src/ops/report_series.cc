// The report's time series: intervals that merge without losing totals,
// so a run of hours keeps as few points as a run of minutes.
#include <algorithm>

#include "ops/report.h"

namespace sluice {
namespace {

double weighted(double a, double wa, double b, double wb) {
  return wa + wb > 0 ? (a * wa + b * wb) / (wa + wb) : (a + b) / 2;
}

}  // namespace

ReportSample merge_samples(const ReportSample& a, const ReportSample& b) {
  ReportSample m = b;
  double wa = a.interval_seconds, wb = b.interval_seconds;
  m.interval_seconds = wa + wb;
  m.images = a.images + b.images;
  m.process_cpu_seconds = a.process_cpu_seconds + b.process_cpu_seconds;
  m.machine_busy_ticks = a.machine_busy_ticks + b.machine_busy_ticks;
  m.machine_total_ticks = a.machine_total_ticks + b.machine_total_ticks;
  // Stages match by name: an autotuned run keeps its stage list, but a
  // stage missing from one side must not shift the others.
  for (const StageDelta& s : a.stages) {
    auto it = std::find_if(m.stages.begin(), m.stages.end(),
                           [&](const StageDelta& t) { return t.name == s.name; });
    if (it == m.stages.end()) {
      m.stages.push_back(s);
    } else {
      it->busy_seconds += s.busy_seconds;
      it->wait_seconds += s.wait_seconds;
    }
  }
  m.ready_batches = weighted(a.ready_batches, wa, b.ready_batches, wb);
  m.workers = std::max(a.workers, b.workers);
  m.prefetch = std::max(a.prefetch, b.prefetch);
  for (size_t i = 0; i < m.gpus.size() && i < a.gpus.size(); ++i) {
    // Unknown (-1) on one side: the other side's figure stands alone.
    double ua = a.gpus[i].utilization, ub = b.gpus[i].utilization;
    m.gpus[i].utilization = ua < 0 ? ub : ub < 0 ? ua : weighted(ua, wa, ub, wb);
    m.gpus[i].memory_used_bytes =
        static_cast<uint64_t>(weighted(static_cast<double>(a.gpus[i].memory_used_bytes), wa,
                                       static_cast<double>(b.gpus[i].memory_used_bytes), wb));
  }
  return m;
}

// An even bound, so that halving pairs every point.
ReportSeries::ReportSeries(size_t max_samples)
    : max_(std::max<size_t>(2, max_samples & ~size_t{1})) {
  points_.reserve(max_);
}

void ReportSeries::add(const ReportSample& sample) {
  pending_ = pending_count_ == 0 ? sample : merge_samples(pending_, sample);
  if (++pending_count_ < stride_) return;
  points_.push_back(pending_);
  pending_count_ = 0;
  if (points_.size() < max_) return;
  for (size_t i = 0; i < max_ / 2; ++i)
    points_[i] = merge_samples(points_[2 * i], points_[2 * i + 1]);
  points_.resize(max_ / 2);
  stride_ *= 2;
}

std::vector<ReportSample> ReportSeries::samples() const {
  std::vector<ReportSample> out = points_;
  if (pending_count_ > 0) out.push_back(pending_);
  return out;
}

}  // namespace sluice
