// What one GPU type does on one model: the published measurement when a
// named public source has one (data/gpus.json "measurements"), otherwise a
// stated estimate from the measurements of other GPUs. advise builds its
// table from these figures; `sluice advise --leave-one-out` reports how well
// the estimator reproduces each published figure it was not given.
//
// The estimator, in words (it is also what `how` says):
//  - one GPU, no measurement of it: the geometric mean, over every 1-GPU
//    measurement of the same model, task and precision class on another
//    GPU, of that figure x sqrt(peak ratio x memory bandwidth ratio). The
//    "off" class (fp32/tf32) uses sqrt(tf32 x fp32) as the peak of a GPU
//    with TF32, since TF32 speeds the convolutions only;
//  - no measurement of the model: the same from the other models, x the
//    ratio of forward FLOPs;
//  - only an n-GPU measurement of this GPU: that figure / (n x the sourced
//    n-GPU efficiency);
//  - n GPUs: the 1-GPU figure x n x efficiency(n), where efficiency comes
//    from sourced n-GPU / 1-GPU pairs of one table (this GPU's when sourced,
//    else the median over GPUs), interpolated in log2(n) between sourced
//    counts; past the largest sourced count, the efficiency of that count
//    (an estimate; across nodes no further loss is assumed).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ops/advise_types.h"
#include "sluice/status.h"

namespace sluice {

// data/gpus.json's "measurements" (absent = none). Every entry needs every
// field; batch_per_gpu may be null (0 here).
Result<std::vector<Measurement>> parse_measurements(std::string_view json, std::string_view name);
Result<std::vector<Measurement>> builtin_measurements();

// "off" for fp32/tf32, "mixed", "int8"; "" for anything else.
std::string precision_class(std::string_view precision);
// advise's --amp to a precision class: off -> off, fp16/bf16 -> mixed, int8.
std::string amp_class(std::string_view amp);

struct Figure {
  double images_per_second = 0;         // all n GPUs together
  bool measured = false;                // exactly a published figure
  const Measurement* source = nullptr;  // the figure shown, when measured
  std::string how;                      // one sentence
};

struct FigureQuery {
  std::string gpu, model, task = "train", cls = "mixed";
  int count = 1;
};

Result<Figure> gpu_figure(const std::vector<GpuType>& catalog,
                          const std::vector<Measurement>& measurements, const FigureQuery& q);

// Per-GPU efficiency of n GPUs against one, and how it was found.
struct Efficiency {
  double value = 1;
  bool sourced = false;
  std::string how;
};
Efficiency scaling_efficiency(const std::vector<Measurement>& measurements, const std::string& gpu,
                              const std::string& cls, int n);

// Each 1-GPU measurement estimated from the measurements of the other GPUs
// only (every measurement of its own GPU hidden).
struct LeaveOneOut {
  const Measurement* measurement = nullptr;
  double estimate = 0;
  double error_percent = 0;  // |estimate / measured - 1| x 100
};
struct LeaveOneOutReport {
  std::vector<LeaveOneOut> rows;
  double median_error_percent = 0, max_error_percent = 0;
};
Result<LeaveOneOutReport> leave_one_out(const std::vector<GpuType>& catalog,
                                        const std::vector<Measurement>& measurements);
std::string format_leave_one_out(const LeaveOneOutReport& report);

}  // namespace sluice
