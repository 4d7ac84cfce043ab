#include "train/scaler.h"

namespace sluice::training {

bool LossScaler::unscale_and_update(const std::vector<torch::Tensor>& params) {
  if (!enabled_) return true;
  // One flag for all gradients, read back once (a sync per step, as GradScaler).
  torch::Tensor bad;
  for (const torch::Tensor& p : params) {
    const torch::Tensor& g = p.grad();
    if (!g.defined()) continue;
    torch::Tensor b = g.isfinite().logical_not().any();
    bad = bad.defined() ? bad.logical_or(b) : b;
  }
  bool finite = !bad.defined() || !bad.item<bool>();
  if (finite) {
    const double inv = 1.0 / scale_;
    for (const torch::Tensor& p : params) {
      if (p.grad().defined()) p.mutable_grad().mul_(inv);
    }
    if (++tracker_ >= o_.growth_interval) {
      scale_ *= o_.growth_factor;
      tracker_ = 0;
    }
  } else {
    scale_ *= o_.backoff_factor;
    tracker_ = 0;
  }
  return finite;
}

}  // namespace sluice::training
