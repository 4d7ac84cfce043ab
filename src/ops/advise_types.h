// The GPU catalogue's records (data/gpus.json): what a GPU type is, from its
// datasheet, and what a named public source measured it doing.
#pragma once

#include <string>

namespace sluice {

struct GpuType {
  std::string name;
  double memory_gb = 0, bandwidth_gbs = 0;
  double fp16_tflops = 0, bf16_tflops = 0, tf32_tflops = 0, fp32_tflops = 0;
  std::string source;
};

// Images/s that one source measured, exactly as it printed them.
struct Measurement {
  std::string gpu;        // a GpuType name
  std::string model;      // resnet50, resnet18, ...
  std::string task;       // train | infer
  std::string precision;  // mixed | tf32 | fp32 | int8
  int gpus = 1;           // all of them together made images_per_second
  double images_per_second = 0;
  int batch_per_gpu = 0;  // 0: the source does not say
  std::string framework, source, date;
  // Measurements taken under comparable conditions (one benchmark round,
  // one code base): GPU-to-GPU ratios are only formed within one family.
  // Absent in the file = the framework string.
  std::string family;
};

}  // namespace sluice
