#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "sluice/image.h"
#include "tests/image/image_test_util.h"

namespace sluice {
namespace {

Image constant_image(int width, int height, int channels, uint8_t value) {
  Image image{width, height, channels, {}};
  image.pixels.assign(image.row_bytes() * height, value);
  return image;
}

Image random_image(std::mt19937& rng, int width, int height, int channels) {
  Image image{width, height, channels, {}};
  image.pixels.resize(image.row_bytes() * height);
  for (auto& p : image.pixels) p = static_cast<uint8_t>(rng());
  return image;
}

uint8_t at(const Image& image, int x, int y, int c) {
  return image.pixels[(static_cast<size_t>(y) * image.width + x) * image.channels + c];
}

// Reference area average: each output pixel is the mean of the source
// area it covers, fractional source pixels weighted by their overlap.
double area_reference(const Image& src, int width, int height, int x, int y, int c) {
  const double sx = static_cast<double>(src.width) / width;
  const double sy = static_cast<double>(src.height) / height;
  const double x0 = x * sx, x1 = (x + 1) * sx, y0 = y * sy, y1 = (y + 1) * sy;
  double sum = 0;
  for (int j = static_cast<int>(y0); j < std::min<double>(y1, src.height); ++j) {
    const double wy = std::min<double>(j + 1, y1) - std::max<double>(j, y0);
    for (int i = static_cast<int>(x0); i < std::min<double>(x1, src.width); ++i) {
      const double wx = std::min<double>(i + 1, x1) - std::max<double>(i, x0);
      sum += wx * wy * at(src, i, j, c);
    }
  }
  return sum / (sx * sy);
}

// Reference bilinear with pixel centres at +0.5 and edges clamped.
double bilinear_reference(const Image& src, int width, int height, int x, int y, int c) {
  const double fx = std::clamp((x + 0.5) * src.width / width - 0.5, 0.0, src.width - 1.0);
  const double fy = std::clamp((y + 0.5) * src.height / height - 0.5, 0.0, src.height - 1.0);
  const int x0 = static_cast<int>(fx), y0 = static_cast<int>(fy);
  const int x1 = std::min(x0 + 1, src.width - 1), y1 = std::min(y0 + 1, src.height - 1);
  const double ax = fx - x0, ay = fy - y0;
  const double top = (1 - ax) * at(src, x0, y0, c) + ax * at(src, x1, y0, c);
  const double bottom = (1 - ax) * at(src, x0, y1, c) + ax * at(src, x1, y1, c);
  return (1 - ay) * top + ay * bottom;
}

TEST(ResizeImage, OutputSizes) {
  const Image src = testing::test_picture(40, 30, 3);
  for (auto [w, h] : {std::pair{20, 15}, {1, 1}, {40, 30}, {80, 60}, {13, 77}, {39, 29}}) {
    const Image out = resize_image(src, w, h);
    EXPECT_EQ(out.width, w);
    EXPECT_EQ(out.height, h);
    EXPECT_EQ(out.channels, 3);
    EXPECT_EQ(out.pixels.size(), static_cast<size_t>(w) * h * 3);
  }
}

TEST(ResizeImage, ConstantStaysConstant) {
  for (int channels : {1, 3}) {
    const Image src = constant_image(37, 23, channels, 173);
    for (auto [w, h] : {std::pair{10, 7}, {1, 1}, {36, 22}, {74, 46}, {100, 5}}) {
      const Image out = resize_image(src, w, h);
      ASSERT_FALSE(out.pixels.empty());
      for (uint8_t p : out.pixels) ASSERT_EQ(p, 173) << w << "x" << h;
    }
  }
}

TEST(ResizeImage, TwoByTwoToOneIsTheMean) {
  Image src{2, 2, 1, {10, 20, 30, 40}};
  EXPECT_EQ(resize_image(src, 1, 1).pixels, std::vector<uint8_t>{25});
  Image rgb{2, 2, 3, {0, 100, 200, 4, 100, 200, 8, 100, 200, 12, 100, 200}};
  EXPECT_EQ(resize_image(rgb, 1, 1).pixels, (std::vector<uint8_t>{6, 100, 200}));
}

TEST(ResizeImage, ShrinkingMatchesTheAreaReference) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int channels : {1, 3}) {
    const Image src = random_image(rng, 48, 36, channels);
    for (auto [w, h] : {std::pair{24, 18}, {16, 12}, {12, 9}, {30, 20}, {7, 5}, {47, 35}}) {
      const Image out = resize_image(src, w, h);
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          for (int c = 0; c < channels; ++c) {
            ASSERT_NEAR(at(out, x, y, c), area_reference(src, w, h, x, y, c), 1.0)
                << w << "x" << h << " at " << x << "," << y << " channel " << c;
          }
        }
      }
    }
  }
}

TEST(ResizeImage, EnlargingMatchesTheBilinearReference) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int channels : {1, 3}) {
    const Image src = random_image(rng, 17, 11, channels);
    for (auto [w, h] : {std::pair{34, 22}, {51, 33}, {40, 25}, {18, 12}}) {
      const Image out = resize_image(src, w, h);
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          for (int c = 0; c < channels; ++c) {
            // OpenCV's fixed-point weights and rounding add up to about a
            // level on top of the final rounding.
            ASSERT_NEAR(at(out, x, y, c), bilinear_reference(src, w, h, x, y, c), 1.5)
                << w << "x" << h << " at " << x << "," << y << " channel " << c;
          }
        }
      }
    }
  }
}

TEST(ResizeImage, Deterministic) {
  const Image src = testing::test_picture(123, 77, 3);
  EXPECT_EQ(resize_image(src, 50, 31).pixels, resize_image(src, 50, 31).pixels);
  EXPECT_EQ(resize_image(src, 250, 131).pixels, resize_image(src, 250, 131).pixels);
}

TEST(ResizeImage, SameSizeIsACopy) {
  const Image src = testing::test_picture(20, 10, 3);
  EXPECT_EQ(resize_image(src, 20, 10).pixels, src.pixels);
}

TEST(ResizeImage, BadArgumentsGiveAnEmptyImage) {
  const Image src = testing::test_picture(20, 10, 3);
  EXPECT_TRUE(resize_image(src, 0, 10).pixels.empty());
  EXPECT_TRUE(resize_image(src, 10, -1).pixels.empty());
  EXPECT_TRUE(resize_image(Image{}, 10, 10).pixels.empty());
  Image bad = src;
  bad.pixels.pop_back();
  EXPECT_TRUE(resize_image(bad, 10, 5).pixels.empty());
}

}  // namespace
}  // namespace sluice
