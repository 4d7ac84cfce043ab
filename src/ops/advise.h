// sluice advise: which machine to rent. From a measured input-pipeline rate
// (a `sluice bench --json` file: images/s per CPU core on the user's own
// data and augmentation) and a model (or a measured step time), it
// estimates for each GPU type and count how many images/s the GPUs could
// consume, how many cores it takes to feed them, whether that would be
// input-bound, the epoch time, and the cost where a price is given.
//
// Every estimate carries a sentence saying how it was derived. The GPU
// model is deliberately simple: one anchor measurement scaled by the
// geometric mean of the ratios of peak tensor throughput (for the chosen
// precision) and memory bandwidth, and by the ratio of training FLOPs per
// image between models. It is a planning estimate, not a benchmark.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sluice/status.h"

namespace sluice {

struct GpuType {
  std::string name;
  double memory_gb = 0, bandwidth_gbs = 0;
  double fp16_tflops = 0, bf16_tflops = 0, tf32_tflops = 0, fp32_tflops = 0;
  std::string source;
};

// The catalogue shipped with sluice (data/gpus.json, built in), or a file
// of the same form.
Result<std::vector<GpuType>> builtin_gpu_catalog();
Result<std::vector<GpuType>> parse_gpu_catalog(std::string_view json, std::string_view name);
// {"per_gpu_hour": {"H100": 2.5, ...}}; null entries mean no price.
Result<std::map<std::string, double>> parse_prices(std::string_view json, std::string_view name);

// Forward FLOPs per image at 224x224 (2 x multiply-adds) of the models
// sluice trains: seed-cnn, resnet18, resnet50. Training costs about 3x.
Result<double> model_forward_gflops(std::string_view model);

struct AdviseInput {
  std::vector<GpuType> catalog;
  std::map<std::string, double> prices;  // per GPU-hour
  std::string model = "resnet50";
  std::string amp = "bf16";  // off | fp16 | bf16
  // Input pipeline, measured: images/s per busy CPU core.
  double cpu_images_per_core = 0;
  // Cores the machine would have for the pipeline (0 = judge by need only).
  int cores = 0;
  uint64_t images = 1'281'167;  // per epoch (ImageNet-1k's train split)
  std::vector<int> counts = {1, 2, 4, 8};
  std::vector<std::string> only;  // GPU types to list (empty = all)
  // The anchor: a measured training rate on one GPU type. Default: ResNet-50
  // in bf16 on an H100 at about 2,800 images/s.
  std::string anchor_gpu = "H100";
  std::string anchor_model = "resnet50";
  std::string anchor_amp = "bf16";
  double anchor_images_per_second = 2800;
};

struct AdviseRow {
  std::string gpu;
  int count = 0;
  double gpu_images_per_second = 0;  // what the GPUs could consume together
  double cores_needed = 0;           // to feed them with this pipeline
  bool input_bound = false;          // with `cores` cores
  double epoch_seconds = 0;          // at the slower of GPU and input
  std::optional<double> cost_per_epoch;
  std::string precision;  // what the estimate used, e.g. "bf16"
};

struct AdviseReport {
  std::vector<AdviseRow> rows;
  std::vector<std::string> derivation;  // how every column was computed
};

Result<AdviseReport> advise(const AdviseInput& input);
std::string format_advise_text(const AdviseReport& report);

}  // namespace sluice
