// A random decoded window with a random fractional crop inside it, for the
// kernel tests (CPU and CUDA) that sweep sizes and crops.
#pragma once

#include <cstdint>
#include <random>

#include "sluice/image_ops.h"

namespace sluice {

inline DecodedWindow random_window(std::mt19937_64& rng, int max_side) {
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  DecodedWindow w;
  w.width = integer(1, max_side);
  w.height = integer(1, max_side);
  w.pixels.resize(static_cast<size_t>(w.width) * w.height * 3);
  for (auto& p : w.pixels) p = static_cast<uint8_t>(integer(0, 255));
  w.crop_width = uniform(0.5, w.width);
  w.crop_height = uniform(0.5, w.height);
  w.crop_x = uniform(0, w.width - w.crop_width);
  w.crop_y = uniform(0, w.height - w.crop_height);
  return w;
}

}  // namespace sluice
