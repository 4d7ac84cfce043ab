// The bench report: one self-contained HTML page about a `sluice bench`
// run (throughput over time, where the workers' and the consumer's time
// went, CPU and GPU use, queue depth, the verdict, the ablation ladder and
// the machine), for people who were not watching the terminal. Without a
// bench run it is the page of a ladder alone (`sluice train --ablation`):
// the ladder and the machine.
//
// The page needs nothing at view time: charts are inline SVG, styles and
// the one small script are inline, and a Content-Security-Policy forbids
// every fetch, so it opens offline and prints. Every piece of text from
// the input (paths, stage names, CPU model) is HTML-escaped.
//
// Thread safety: ReportSeries is one-thread; the free functions are
// reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/gpu_monitor.h"
#include "sluice/status.h"

namespace sluice {

// What one pipeline stage did over an interval (StageSnapshot differences).
struct StageDelta {
  std::string name;
  double busy_seconds = 0;  // summed over workers
  double wait_seconds = 0;
};

// One interval of a run. Counts and times are over the interval, so they
// add when intervals merge; ready_batches and gpus are sampled at its end
// and average (weighted by time) when intervals merge.
struct ReportSample {
  double end_seconds = 0;  // since the run started
  double interval_seconds = 0;
  uint64_t images = 0;
  double process_cpu_seconds = 0;  // user + system, all of this process's threads
  // Whole machine, /proc/stat ticks summed over cores; total 0 = unknown.
  uint64_t machine_busy_ticks = 0, machine_total_ticks = 0;
  std::vector<StageDelta> stages;  // in pipeline order, same names every sample
  int workers = 0;                 // worker threads (busy shares divide by these)
  double ready_batches = 0;        // prepared batches waiting for the consumer
  int prefetch = 0;                // the ring's capacity
  std::vector<GpuSample> gpus;     // empty without NVML
};

// `b` following `a`: sums, time-weighted averages, `b`'s end.
ReportSample merge_samples(const ReportSample& a, const ReportSample& b);

// A time series that stays bounded however long the run: when it holds
// `max_samples`, neighbours merge pairwise and later samples are gathered
// two (then four, ...) to a point, so points stay evenly spaced. Totals
// (images, CPU seconds, stage times) are preserved exactly.
class ReportSeries {
 public:
  explicit ReportSeries(size_t max_samples = 600);
  void add(const ReportSample& sample);
  // The points so far, the last one possibly gathered from fewer samples.
  std::vector<ReportSample> samples() const;
  // How many added samples make one point now (1, 2, 4, ...).
  size_t stride() const { return stride_; }

 private:
  size_t max_;
  size_t stride_ = 1;
  std::vector<ReportSample> points_;
  ReportSample pending_;
  size_t pending_count_ = 0;
};

// One rung of `bench --ablation` or `train --ablation`.
struct AblationRow {
  std::string rung;
  double images_per_second = 0;
  double cpu_cores_busy = 0;
  std::string skipped;  // why the rung did not run; empty when it ran
  // The training ladder's figures. bench sets none of them; a table where
  // some row has data_wait_share set is a training ladder and gets the
  // columns (an unset GPU figure there reads "n/a": no NVML).
  std::optional<double> epoch_seconds;
  bool epoch_projected = false;            // stretched from the steps run (--max-steps) to an epoch
  std::optional<double> data_wait_share;   // 0..1
  std::optional<double> cpu_busy_percent;  // of the machine's cores
  std::optional<double> gpu_busy_percent;  // mean over the GPUs used
  std::string note;                        // what the rung ran on, under its name
};

struct ReportInput {
  std::string title = "sluice bench report";
  std::string data;          // the dataset, as given
  std::string command_line;  // shown as is
  std::string generated_at;  // shown as is, e.g. "2025-12-02 14:03 UTC"
  std::string version;       // of sluice
  // The document `sluice bench --json` writes (required: images_per_second,
  // seconds, verdict, stages). Empty: a ladder-only page (header, ablation,
  // machine); `ablation` must then have rows.
  std::string bench_json;
  // The document `sluice doctor --json` prints; empty leaves the machine
  // section saying it was not examined.
  std::string doctor_json;
  std::vector<ReportSample> series;
  std::vector<std::string> gpu_names;  // one per GpuSample, e.g. "GPU 0: NVIDIA H200"
  // Why there is no GPU series (e.g. "no NVIDIA driver found"); shown in
  // place of the GPU chart when no sample has GPUs.
  std::string gpu_note;
  std::vector<AblationRow> ablation;  // empty: the section says how to get it
  std::string ablation_note;          // a paragraph above the ladder: how it was run
};

// The page. kInvalidArgument when bench_json or doctor_json is not the
// document described above (the message names the missing field), or when
// both bench_json and ablation are empty.
Result<std::string> render_report_html(const ReportInput& input);

// &, <, >, " and ' as character references; everything else unchanged
// (UTF-8 passes through).
std::string html_escape(std::string_view text);

}  // namespace sluice
