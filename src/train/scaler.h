// Dynamic loss scaling for float16 training, the rule of PyTorch's
// GradScaler: multiply the loss by `scale` before backward; before the
// optimiser step, divide the gradients by it and skip the step if any is
// inf or NaN, halving the scale; after `growth_interval` clean steps in a
// row, double it. Works on any device (plain tensor ops).
#pragma once

#include <torch/types.h>

#include <vector>

namespace sluice::training {

struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  using Options = LossScalerOptions;
  LossScaler() = default;
  explicit LossScaler(bool enabled, Options options = Options()) : enabled_(enabled), o_(options) {
    scale_ = enabled ? o_.init_scale : 1.0;
  }

  bool enabled() const { return enabled_; }
  double scale() const { return scale_; }
  int64_t growth_tracker() const { return tracker_; }

  torch::Tensor scale_loss(const torch::Tensor& loss) const {
    return enabled_ ? loss * scale_ : loss;
  }

  // Divides the gradients by the scale in place. Returns false when any is
  // not finite: the caller skips the step. Then updates the scale.
  bool unscale_and_update(const std::vector<torch::Tensor>& params);

  void restore(double scale, int64_t tracker) {
    scale_ = scale;
    tracker_ = tracker;
  }

 private:
  bool enabled_ = false;
  Options o_;
  double scale_ = 1.0;
  int64_t tracker_ = 0;
};

}  // namespace sluice::training
