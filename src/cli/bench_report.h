// bench --report: the time series gathered while the pipeline runs, and
// the checks and writing around the page (the page itself is
// render_report_html, ops/report.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "ops/report.h"
#include "sluice/gpu_monitor.h"
#include "sluice/pipeline.h"
#include "sluice/telemetry.h"

namespace sluice::cli {

// Samples the run every kInterval (when the consumer comes back for a
// batch, so a stalled pipeline shows as one long interval rather than
// none): images, process and machine CPU, each stage's busy and wait
// deltas, queue depth, and the GPUs when `gpu` is given.
class SeriesRecorder {
 public:
  static constexpr std::chrono::milliseconds kInterval{250};

  explicit SeriesRecorder(const GpuMonitor* gpu) : gpu_(gpu) {}
  // The run starts now, from these figures.
  void start(const PipelineStats& stats);
  // After each batch, with the images consumed so far.
  void poll(const Pipeline& pipe, uint64_t images);
  // At the end: the last interval (one shorter than half kInterval joins
  // the one before, rather than plot a rate over a few milliseconds).
  void finish(const PipelineStats& stats, uint64_t images);
  std::vector<ReportSample> samples() const { return series_.samples(); }

 private:
  using Clock = std::chrono::steady_clock;
  ReportSample measure(const PipelineStats& stats, uint64_t images);

  const GpuMonitor* gpu_;
  ReportSeries series_;
  std::optional<ReportSample> held_;  // the newest interval, not yet in series_
  Clock::time_point t0_, last_;
  uint64_t images_ = 0;
  double cpu_seconds_ = 0;
  CpuTimes machine_;
  std::vector<StageSnapshot> stages_;
};

// Fails early, before a long run, when `path` cannot be written: a missing
// folder, no permission, or a folder where the file should be. Messages
// name the option as `flag`.
Status check_report_path(const std::string& path, const std::string& flag = "--report");

}  // namespace sluice::cli
