// Crop windows of decoded RGB pixels, as the GPU decode tests compare them
// (tests/device against fakes, tests/cuda on a GPU).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/image.h"
#include "sluice/image_ops.h"

namespace sluice {

// The rows of window `c` in packed RGB pixels `pitch` bytes apart.
inline std::vector<uint8_t> crop_rows(const uint8_t* rgb, size_t pitch, const CropWindow& c) {
  std::vector<uint8_t> out;
  for (int y = c.y; y < c.y + c.height; ++y) {
    const uint8_t* row = rgb + y * pitch + static_cast<size_t>(c.x) * 3;
    out.insert(out.end(), row, row + static_cast<size_t>(c.width) * 3);
  }
  return out;
}

// libjpeg-turbo's pixels for window `c` of an encoded image (the CPU
// tier's reference).
inline std::vector<uint8_t> reference_crop(const std::string& bytes, const CropWindow& c) {
  auto img = decode_image(bytes);
  EXPECT_TRUE(img.ok()) << img.status().to_string();
  if (!img.ok()) return {};
  return crop_rows(img->pixels.data(), static_cast<size_t>(img->width) * 3, c);
}

}  // namespace sluice
