// The live status file of a running job (`sluice bench --status FILE`,
// `sluice train --status FILE`), which `sluice top` draws. One writer for
// both jobs, so the file has one definition (docs/formats.md, "Run status"):
// in particular consumer_wait_share is always the share of the run's wall
// time the consumer spent waiting inside Pipeline::next().
//
// Thread safety: one thread at a time per writer.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sluice/gpu_monitor.h"
#include "sluice/pipeline.h"
#include "sluice/status.h"

namespace sluice {

// What the job knows that the pipeline does not.
struct RunStatus {
  double seconds = 0;         // wall seconds since the job began
  uint64_t images = 0;        // delivered so far (all ranks, for training)
  uint64_t batches = 0;       // consumed so far (steps, for training)
  double cpu_cores_busy = 0;  // process CPU seconds / wall seconds, since the job began
  bool done = false;
  // The GPUs the job watches (GpuMonitor's names() and sample()), if any.
  std::vector<std::string> gpu_names;
  std::vector<GpuSample> gpu_samples;
  struct Training {
    int epoch = 0, epochs = 0;  // 1-based
    int64_t step = 0;
    double loss = 0, accuracy = 0, lr = 0;  // of the last step
  };
  std::optional<Training> training;
};

// The file's text (one JSON object and a newline). `job` is "bench" or
// "train"; `images_per_second` is the recent rate the writer measured.
std::string run_status_json(std::string_view job, const RunStatus& run, const PipelineStats& stats,
                            double images_per_second);

class RunStatusWriter {
 public:
  // An empty path writes nothing.
  RunStatusWriter(std::string path, std::string job)
      : path_(std::move(path)), job_(std::move(job)) {}

  bool enabled() const { return !path_.empty(); }
  // True when a write is worth doing now: the file is rewritten at most
  // twice a second while a job runs, and always at its end.
  bool due(bool done) const;
  // Writes PATH.tmp and renames it over PATH, so that a reader never sees
  // half a file. No fsync: the file is replaced twice a second from the
  // job's own loop, and worthless after a crash; a stalled disk must not
  // stall training. The rate is measured between writes. A write that
  // fails returns why and turns the writer off: the job goes on without
  // its status file, and the caller says so once.
  Status write(const RunStatus& run, const PipelineStats& stats);

 private:
  Status replace_file(const std::string& text) const;

  using Clock = std::chrono::steady_clock;
  std::string path_, job_;
  Clock::time_point last_{};
  bool wrote_ = false;
  uint64_t images_at_last_ = 0;
};

}  // namespace sluice
