#include "train/optim.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "base/enum_names.h"

namespace sluice::training {

namespace {
constexpr detail::EnumName<OptimizerKind> kOptimizers[] = {
    {OptimizerKind::kSgd, "sgd"}, {OptimizerKind::kAdam, "adam"}, {OptimizerKind::kAdamW, "adamw"}};
constexpr detail::EnumName<ScheduleKind> kSchedules[] = {{ScheduleKind::kCosine, "cosine"},
                                                         {ScheduleKind::kStep, "step"},
                                                         {ScheduleKind::kConstant, "constant"}};
}  // namespace

Result<OptimizerKind> parse_optimizer(std::string_view name) {
  return detail::parse_enum_name(name, kOptimizers, "--optimizer: unknown value");
}

Result<ScheduleKind> parse_schedule(std::string_view name) {
  return detail::parse_enum_name(name, kSchedules, "--schedule: unknown value");
}

Result<LrSchedule> LrSchedule::create(const TrainOptions& o) {
  LrSchedule s;
  SLUICE_ASSIGN_OR_RETURN(s.kind_, parse_schedule(o.schedule));
  s.lr_ = o.lr;
  s.warmup_ = o.warmup_epochs;
  s.epochs_ = o.epochs;
  s.gamma_ = o.step_gamma;
  s.step_size_ = std::max(1, o.step_size);
  return s;
}

double LrSchedule::at(double t) const {
  if (warmup_ > 0 && t < warmup_) return lr_ * (0.1 + 0.9 * t / warmup_);
  switch (kind_) {
    case ScheduleKind::kCosine: {
      const double span = std::max(1e-9, epochs_ - warmup_);
      return lr_ * 0.5 * (1 + std::cos(std::numbers::pi * std::min(1.0, (t - warmup_) / span)));
    }
    case ScheduleKind::kStep: return lr_ * std::pow(gamma_, std::floor(t / step_size_));
    case ScheduleKind::kConstant: break;
  }
  return lr_;
}

namespace {

// One parameter group per decay: make_options(wd) gives the optimiser's
// options (SGDOptions, AdamOptions or AdamWOptions) with weight decay wd.
template <typename Optim, typename MakeOptions>
std::unique_ptr<torch::optim::Optimizer> grouped(const TrainOptions& o,
                                                 const std::vector<torch::Tensor>& params,
                                                 MakeOptions make_options) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const torch::Tensor& p : params)
    (p.dim() <= 1 && !o.decay_all ? no_decay : decay).push_back(p);
  using Options = decltype(make_options(0.0));
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty())
    groups.emplace_back(decay, std::make_unique<Options>(make_options(o.weight_decay)));
  if (!no_decay.empty())
    groups.emplace_back(no_decay, std::make_unique<Options>(make_options(0.0)));
  return std::make_unique<Optim>(std::move(groups), make_options(o.weight_decay));
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(OptimizerKind kind, const TrainOptions& o,
                                                        const std::vector<torch::Tensor>& params) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return grouped<torch::optim::SGD>(o, params, [&](double wd) {
        return torch::optim::SGDOptions(o.lr)
            .momentum(o.momentum)
            .weight_decay(wd)
            .nesterov(o.nesterov);
      });
    case OptimizerKind::kAdam:
      return grouped<torch::optim::Adam>(
          o, params, [&](double wd) { return torch::optim::AdamOptions(o.lr).weight_decay(wd); });
    case OptimizerKind::kAdamW:
      return grouped<torch::optim::AdamW>(
          o, params, [&](double wd) { return torch::optim::AdamWOptions(o.lr).weight_decay(wd); });
  }
  return nullptr;
}

}  // namespace sluice::training
