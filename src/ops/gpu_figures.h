// What one GPU type does on one model: the published measurement when a
// named public source has one (data/gpus.json "measurements"), otherwise a
// stated estimate from the measurements of other GPUs. advise builds its
// table from these figures; `sluice advise --leave-one-out` reports how well
// the estimator reproduces each published figure it was not given.
//
// Frameworks differ more than GPUs do: MLPerf's tuned MXNet ResNet-50 runs
// about 1.4x NVIDIA's PyTorch recipe on the same A100. So every figure is
// for one framework (FigureQuery::framework: pytorch, mxnet, tensorflow,
// tensorrt, or "any" for the first figure listed whatever its framework);
// where no source measured the case in that framework on any GPU, "any".
//
// The estimator, in words (it is also what `how` says), first match wins:
//  - one GPU, measured in the framework: that figure ("sourced");
//  - only an n-GPU measurement of this GPU in the framework: that figure /
//    (n x the sourced n-GPU efficiency) ("own n-GPU");
//  - framework-matched ratio ("ratio"): a GPU Y measured in the framework
//    (the figure shown for it) x this GPU's per-GPU figure / Y's in a family
//    of comparable measurements that has both (one MLPerf round, one
//    container's DeepLearningExamples tables; same precision class; equal
//    GPU counts where both have one, else each's largest up to one node of
//    8). Several such (Y, family) give a geometric mean; where no family
//    links this GPU to a measured one directly, the chain goes through the
//    fewest other GPUs (e.g. H200 <- H100 <- A100 PyTorch);
//  - one GPU, nothing links it ("peak"): the geometric mean, over every
//    1-GPU measurement in the framework of the same model, task and
//    precision class on another GPU, of that figure x sqrt(peak ratio x
//    memory bandwidth ratio). The "off" class (fp32/tf32) uses
//    sqrt(tf32 x fp32) as the peak of a GPU with TF32, since TF32 speeds the
//    convolutions only;
//  - no measurement of the model: this GPU's figure for another model (by
//    the steps above), x the ratio of forward FLOPs;
//  - n GPUs: the 1-GPU figure x n x efficiency(n), where efficiency comes
//    from sourced n-GPU / 1-GPU pairs of one table in the framework (this
//    GPU's when sourced, else the median over GPUs), interpolated in
//    log2(n) between sourced counts; past the largest sourced count, the
//    efficiency of that count (an estimate; across nodes no further loss is
//    assumed).
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
// A measurement's framework as --framework names it: the framework
// string's first word, lower case ("PyTorch, NGC ..." -> "pytorch").
std::string framework_of(const Measurement& m);
// pytorch | mxnet | tensorflow | tensorrt | any; "" for anything else.
bool valid_framework(std::string_view framework);

// How a figure was found; see the header comment.
enum class Basis { kMeasured, kOwnMultiGpu, kRatio, kPeak, kScaled };
// A short tag for tables: "sourced", "est:own-n", "est:ratio", "est:peak",
// "est:scale".
const char* basis_tag(Basis b);

// The catalogue's entry named `name`, or nullptr.
const GpuType* find_gpu(const std::vector<GpuType>& catalog, const std::string& name);

struct Figure {
  double images_per_second = 0;         // all n GPUs together
  bool measured = false;                // exactly a published figure
  const Measurement* source = nullptr;  // the figure shown, when measured
  std::string how;                      // one sentence
  Basis basis = Basis::kMeasured;       // of the 1-GPU figure, or kScaled
  // The published figures an estimate rests on (for the report's notes).
  std::vector<const Measurement*> used;
};

struct FigureQuery {
  std::string gpu, model, task = "train", cls = "mixed";
  int count = 1;
  std::string framework = "any";  // see the header comment
};

Result<Figure> gpu_figure(const std::vector<GpuType>& catalog,
                          const std::vector<Measurement>& measurements, const FigureQuery& q);

// Per-GPU efficiency of n GPUs against one, and how it was found.
struct Efficiency {
  double value = 1;
  bool sourced = false;
  std::string how;
};
// From the framework's pairs where it has any, else every framework's.
Efficiency scaling_efficiency(const std::vector<Measurement>& measurements, const std::string& gpu,
                              const std::string& cls, int n, const std::string& framework = "any");

// Each 1-GPU measurement estimated, in its own framework, with some of the
// catalogue hidden:
//  - kHideGpu: every measurement of its GPU (what the estimator does for a
//    GPU no source has measured at all: the peak model);
//  - kHideGpuInFramework: its GPU's measurements in its framework only; the
//    GPU's figures in other frameworks stay (what it does for H100 in
//    PyTorch: the framework-matched ratio where a family links the GPU).
enum class Hide { kHideGpu, kHideGpuInFramework };
struct LeaveOneOut {
  const Measurement* measurement = nullptr;
  double estimate = 0;
  double error_percent = 0;  // |estimate / measured - 1| x 100
  Basis basis = Basis::kPeak;
};
struct LeaveOneOutReport {
  Hide hide = Hide::kHideGpu;
  std::vector<LeaveOneOut> rows;
  double median_error_percent = 0, max_error_percent = 0;
};
Result<LeaveOneOutReport> leave_one_out(const std::vector<GpuType>& catalog,
                                        const std::vector<Measurement>& measurements,
                                        Hide hide = Hide::kHideGpu);
std::string format_leave_one_out(const LeaveOneOutReport& report);

}  // namespace sluice
