// The optimiser and the learning-rate schedule, named by the user as
// strings (--optimizer, --schedule) and parsed once, into enums, before
// the first step.
#pragma once

#include <torch/optim.h>

#include <memory>
#include <string_view>
#include <vector>

#include "sluice/status.h"
#include "sluice/train.h"

namespace sluice::training {

enum class OptimizerKind { kSgd, kAdam, kAdamW };
enum class ScheduleKind { kCosine, kStep, kConstant };

// kInvalidArgument naming the flag and the values it takes.
Result<OptimizerKind> parse_optimizer(std::string_view name);
Result<ScheduleKind> parse_schedule(std::string_view name);

// The learning rate at a point of training measured in epochs (fractional):
// a linear warm-up from lr/10 over warmup_epochs, then cosine to 0 at the
// last epoch, a step decay every step_size epochs, or constant.
class LrSchedule {
 public:
  static Result<LrSchedule> create(const TrainOptions& o);
  double at(double epochs) const;

 private:
  ScheduleKind kind_ = ScheduleKind::kConstant;
  double lr_ = 0, warmup_ = 0, epochs_ = 0, gamma_ = 0;
  int step_size_ = 1;
};

// Two parameter groups: weights decay; biases and BatchNorm's scales and
// shifts (1-D tensors) do not, unless --decay-all (the common recipe: decay
// on those only hurts, and torchvision's references leave it off them).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(OptimizerKind kind, const TrainOptions& o,
                                                        const std::vector<torch::Tensor>& params);

}  // namespace sluice::training
