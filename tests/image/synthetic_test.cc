#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sluice/image.h"
#include "tests/image/image_test_util.h"

namespace sluice {
namespace {

TEST(SyntheticImage, SameArgumentsSamePixels) {
  for (int label = 0; label < 12; ++label) {
    const Image a = render_synthetic_image(label, 12, 7, 42, 64, 48);
    const Image b = render_synthetic_image(label, 12, 7, 42, 64, 48);
    EXPECT_EQ(a.pixels, b.pixels);
  }
}

TEST(SyntheticImage, SizesAndLayout) {
  for (auto [w, h] : {std::pair{64, 64}, {160, 120}, {1, 1}, {3, 200}, {200, 3}, {224, 224}}) {
    const Image image = render_synthetic_image(3, 10, 1, 2, w, h);
    EXPECT_EQ(image.width, w);
    EXPECT_EQ(image.height, h);
    EXPECT_EQ(image.channels, 3);
    EXPECT_EQ(image.pixels.size(), static_cast<size_t>(w) * h * 3);
  }
  EXPECT_TRUE(render_synthetic_image(0, 10, 1, 2, 0, 10).pixels.empty());
}

TEST(SyntheticImage, LabelsSeedsAndIndicesAllMatter) {
  const Image base = render_synthetic_image(0, 10, 1, 1, 64, 64);
  for (int label = 1; label < 30; ++label) {
    EXPECT_NE(render_synthetic_image(label, 30, 1, 1, 64, 64).pixels, base.pixels) << label;
  }
  EXPECT_NE(render_synthetic_image(0, 10, 2, 1, 64, 64).pixels, base.pixels);
  EXPECT_NE(render_synthetic_image(0, 10, 1, 2, 64, 64).pixels, base.pixels);
}

// The shape must stand out: a good share of pixels in the foreground, and
// a clear split between the two colour populations.
TEST(SyntheticImage, ShapeIsVisible) {
  for (int label = 0; label < 24; ++label) {
    for (uint64_t index = 0; index < 20; ++index) {
      const Image image = render_synthetic_image(label, 24, 99, index, 64, 64);
      std::vector<int> luma;
      for (size_t i = 0; i < image.pixels.size(); i += 3) {
        luma.push_back(
            (299 * image.pixels[i] + 587 * image.pixels[i + 1] + 114 * image.pixels[i + 2]) / 1000);
      }
      std::sort(luma.begin(), luma.end());
      // Darkest and brightest 1 %: one is the shape (3 % of the image at
      // the least), the other background.
      const int low = luma[luma.size() / 100];
      const int high = luma[luma.size() - 1 - luma.size() / 100];
      EXPECT_GT(high - low, 60) << "label " << label << " index " << index;
    }
  }
}

// Pixels that look like the foreground colour, over all of an image.
double foreground_share(const Image& image) {
  std::vector<int> luma;
  for (size_t i = 0; i < image.pixels.size(); i += 3) {
    luma.push_back((299 * image.pixels[i] + 587 * image.pixels[i + 1] + 114 * image.pixels[i + 2]) /
                   1000);
  }
  const auto [lo, hi] = std::minmax_element(luma.begin(), luma.end());
  const int mid = (*lo + *hi) / 2;
  const size_t above = std::count_if(luma.begin(), luma.end(), [&](int l) { return l > mid; });
  const double share = static_cast<double>(above) / static_cast<double>(luma.size());
  return std::min(share, 1 - share);
}

TEST(SyntheticImage, ShapesCoverAReasonableArea) {
  for (int label = 0; label < 12; ++label) {
    double total = 0;
    for (uint64_t index = 0; index < 20; ++index) {
      total += foreground_share(render_synthetic_image(label, 12, 5, index, 64, 64));
    }
    const double mean = total / 20;
    EXPECT_GT(mean, 0.03) << "label " << label;
  }
}

TEST(SyntheticImage, NegativeArgumentsStillRender) {
  const Image image = render_synthetic_image(-3, 0, 0, 0, 16, 16);
  EXPECT_EQ(image.pixels.size(), 16u * 16 * 3);
}

}  // namespace
}  // namespace sluice
