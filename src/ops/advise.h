// sluice advise: which machine to rent. From a measured input-pipeline rate
// (a `sluice bench --json` file: images/s per CPU core on the user's own
// data and augmentation) and a model (or a measured step time), it
// estimates for each GPU type and count how many images/s the GPUs could
// consume, how many cores it takes to feed them, whether that would be
// input-bound, the epoch time, and the cost where a price is given.
//
// Every figure says where it came from: a published measurement (shown
// exactly, with its source), the user's own run (--train-summary), or the
// estimator of gpu_figures.h for what no source covers. It is a planning
// aid, not a benchmark.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ops/advise_types.h"
#include "ops/gpu_figures.h"
#include "sluice/status.h"

namespace sluice {

// The catalogue shipped with sluice (data/gpus.json, built in), or a file
// of the same form.
Result<std::vector<GpuType>> builtin_gpu_catalog();
Result<std::vector<GpuType>> parse_gpu_catalog(std::string_view json, std::string_view name);
// {"per_gpu_hour": {"H100": 2.5, ...}}; null entries mean no price.
Result<std::map<std::string, double>> parse_prices(std::string_view json, std::string_view name);

// One `sluice bench --json` file: busy CPU cores, images/s, and the encoded
// bytes per image its read stage saw (0 when it does not say).
struct BenchPoint {
  double cores = 0, images_per_second = 0, image_bytes = 0;
};
Result<BenchPoint> parse_bench_point(std::string_view json, std::string_view name);
// A `sluice doctor --data DIR --json` report: the data folder's read speed in MB/s.
Result<double> parse_disk_report(std::string_view json, std::string_view name);

// Forward FLOPs per image at 224x224 (2 x multiply-adds) of the models
// sluice trains: seed-cnn, resnet18, resnet50. Training costs about 3x.
Result<double> model_forward_gflops(std::string_view model);

// A measured run on the user's own machine: every other figure is scaled
// from it (re-anchoring), and the row for this GPU, model, precision and
// count is exactly it.
struct UserAnchor {
  std::string gpu;         // a catalogue name
  std::string model, amp;  // what ran
  int world_size = 1;      // GPUs that made images_per_second together
  double images_per_second = 0;
  std::string from;  // the file or flag it came from, for the report
};

// Input images/s as a function of busy CPU cores: intercept + per_core x
// cores, fitted by least squares over several `sluice bench --json` files
// (one file: the line through the origin).
struct CpuFit {
  double intercept = 0, per_core = 0;
  int points = 1;
};
Result<CpuFit> fit_cpu(const std::vector<std::pair<double, double>>& cores_and_images_per_second);

struct AdviseInput {
  std::vector<GpuType> catalog;
  std::vector<Measurement> measurements;
  std::map<std::string, double> prices;  // per GPU-hour
  std::string model = "resnet50";
  std::string amp = "bf16";    // off | fp16 | bf16 | int8 (int8: task infer only)
  std::string task = "train";  // train | infer (feature extraction)
  // Whose figures: pytorch (sluice trains with LibTorch) | mxnet |
  // tensorflow | tensorrt | any (gpu_figures.h).
  std::string framework = "pytorch";
  CpuFit cpu;  // the input pipeline, measured
  // Cores the machine would have for the pipeline (0 = judge by need only).
  int cores = 0;
  uint64_t images = 1'281'167;    // per epoch (ImageNet-1k's train split)
  int epochs = 100;               // for the total cost and the deadline
  double deadline_hours = 0;      // 0 = none
  int batch = 256;                // per GPU, for the memory fit
  double disk_mb_per_second = 0;  // 0 = not judged
  double image_bytes = 110e3;     // encoded bytes read per image
  std::vector<int> counts = {1, 2, 4, 8};
  std::vector<std::string> only;  // GPU types to list (empty = all)
  std::optional<UserAnchor> anchor;
};

struct AdviseRow {
  std::string gpu;
  int count = 0;
  double gpu_images_per_second = 0;  // what the GPUs could consume together
  bool measured = false;             // a published figure, shown exactly
  bool reanchored = false;           // scaled from the user's own run
  Basis basis = Basis::kMeasured;    // of the catalogue figure (gpu_figures.h)
  int source_note = 0;               // index into AdviseReport::sources + 1 (0 = none)
  std::vector<int> used_notes;       // an estimate's published figures, likewise
  std::string how;                   // how the GPU figure was found
  double cores_needed = 0;           // to feed them with this pipeline
  bool input_bound = false;          // with `cores` cores
  std::string bound_by;              // gpu | cpu | disk: the slowest of the three
  double epoch_seconds = 0;          // at the slowest
  bool fits = true;                  // batch fits the GPU's memory (estimate)
  int max_batch = 0;                 // largest batch per GPU that fits (estimate)
  std::optional<double> cost_per_epoch, cost_total;  // total: `epochs` epochs
  std::string precision;                             // what the estimate used, e.g. "bf16"
};

struct AdviseReport {
  std::vector<AdviseRow> rows;
  std::vector<std::string> sources;     // numbered notes the rows point to
  std::vector<std::string> derivation;  // how every column was computed
  std::string deadline;                 // the cheapest row meeting it, in words
  int epochs = 100;
};

// Bytes of GPU memory one image of `model` needs in training (activations
// kept for the backward pass) and the fixed part (weights, gradients,
// momentum, CUDA context); see advise.cc for the count.
struct MemoryModel {
  double bytes_per_image = 0, fixed_bytes = 0;
};
Result<MemoryModel> memory_model(std::string_view model, std::string_view task,
                                 std::string_view amp);

Result<AdviseReport> advise(const AdviseInput& input);
std::string format_advise_text(const AdviseReport& report);

}  // namespace sluice
