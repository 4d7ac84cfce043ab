// Choosing each sample's crop and flip, and the JPEG scale that serves it.
// Everything random comes from the caller's CounterRng, so a sample's plan
// is a pure function of its key (DESIGN.md invariant 1).

#include <algorithm>
#include <cmath>

#include "sluice/image_ops.h"

namespace sluice {
namespace {

// Python's round(): half to even. std::nearbyint rounds that way in the
// default floating-point environment, which the library never changes.
int round_half_even(double v) {
  return static_cast<int>(std::nearbyint(v));
}

// torchvision's fallback: the largest centred crop whose ratio is the
// input's clamped into [ratio_min, ratio_max].
CropWindow clamped_ratio_center(int width, int height, double ratio_min, double ratio_max) {
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_min) {
    h = round_half_even(w / ratio_min);
  } else if (in_ratio > ratio_max) {
    w = round_half_even(h * ratio_max);
  }
  // Rounding cannot push past the image, but a zero side (a 1-pixel-wide
  // image with a huge ratio bound) would be an empty crop.
  w = std::clamp(w, 1, width);
  h = std::clamp(h, 1, height);
  return {(width - w) / 2, (height - h) / 2, w, h};
}

}  // namespace

CropWindow random_resized_crop(int width, int height, const RandomResizedCropParams& params,
                               CounterRng& rng) {
  if (width <= 0 || height <= 0) return {};
  const double area = static_cast<double>(width) * height;
  const double log_min = std::log(params.ratio_min);
  const double log_max = std::log(params.ratio_max);
  for (int attempt = 0; attempt < params.attempts; ++attempt) {
    const double target_area = area * rng.uniform(params.scale_min, params.scale_max);
    const double aspect = std::exp(rng.uniform(log_min, log_max));
    const int w = round_half_even(std::sqrt(target_area * aspect));
    const int h = round_half_even(std::sqrt(target_area / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      // torchvision draws the row (i) before the column (j).
      const int y = static_cast<int>(rng.below(static_cast<uint64_t>(height - h) + 1));
      const int x = static_cast<int>(rng.below(static_cast<uint64_t>(width - w) + 1));
      return {x, y, w, h};
    }
  }
  // torchvision uses min(ratio) and max(ratio), so reversed bounds work.
  return clamped_ratio_center(width, height, std::min(params.ratio_min, params.ratio_max),
                              std::max(params.ratio_min, params.ratio_max));
}

CropWindow center_crop_window(int width, int height, double crop_fraction) {
  if (width <= 0 || height <= 0) return {};
  const int side = std::clamp(round_half_even(crop_fraction * std::min(width, height)), 1,
                              std::min(width, height));
  return {(width - side) / 2, (height - side) / 2, side, side};
}

AugmentPlan plan_augment(AugmentMode mode, int width, int height, CounterRng& rng,
                         const RandomResizedCropParams& params, double flip_probability) {
  AugmentPlan plan;
  switch (mode) {
    case AugmentMode::kResize:
      plan.crop = width > 0 && height > 0 ? CropWindow{0, 0, width, height} : CropWindow{};
      break;
    case AugmentMode::kEval: plan.crop = center_crop_window(width, height); break;
    case AugmentMode::kTrain:
      plan.crop = random_resized_crop(width, height, params, rng);
      plan.flip = rng.uniform() < flip_probability;
      break;
  }
  return plan;
}

int choose_scale_denom(const CropWindow& crop, int out_width, int out_height) {
  // Compared in integers: crop.width / d >= out_width exactly.
  for (int d : {8, 4, 2}) {
    if (static_cast<int64_t>(crop.width) >= static_cast<int64_t>(d) * out_width &&
        static_cast<int64_t>(crop.height) >= static_cast<int64_t>(d) * out_height) {
      return d;
    }
  }
  return 1;
}

}  // namespace sluice
