#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sluice/image_ops.h"
#include "tests/image/image_test_util.h"
#include "tests/test_seed.h"

namespace sluice {
namespace {

using testing::image_bytes;

uint64_t test_seed() {
  return run_seed("crop_decode_test");
}

// One of each JPEG structure the corpus has: baseline 4:2:0 (libjpeg's
// testorig; mjpeg without Huffman tables), 4:4:4, 4:2:2, gray, progressive
// (with and without interleaved MCUs), arithmetic, extended sequential,
// CMYK (Adobe), restart markers, and odd sampling factors.
const char* const kJpegs[] = {
    "jpeg/libjpeg-turbo-testorig.jpg",      "jpeg/jpeg-decoder-mjpeg.jpg",
    "jpeg/wuffs-peacock.default.jpeg",      "jpeg/wuffs-peacock.s1x1-444.jpeg",
    "jpeg/wuffs-peacock.s2x1-422.jpeg",     "jpeg/wuffs-peacock.grayscale.jpeg",
    "jpeg/wuffs-peacock.progressive.jpeg",  "jpeg/jpeg-decoder-non-interleaved-mcu.jpg",
    "jpeg/libjpeg-turbo-testimgari.jpg",    "jpeg/jpeg-decoder-jpg-cmyk-1.jpg",
    "jpeg/pillow-pil_sample_cmyk.jpg",      "jpeg/jpeg-decoder-restarts.jpg",
    "jpeg/wuffs-peacock.s1x3.jpeg",         "jpeg/wuffs-peacock.s-weird.jpeg",
    "jpeg/wuffs-peacock.s-very-weird.jpeg", "jpeg/pillow-hopper.jpg",
};

CropWindow random_crop(int width, int height, CounterRng& rng) {
  const int w = 1 + static_cast<int>(rng.below(width));
  const int h = 1 + static_cast<int>(rng.below(height));
  return {static_cast<int>(rng.below(width - w + 1)), static_cast<int>(rng.below(height - h + 1)),
          w, h};
}

struct Comparison {
  int max_diff = 0;
  size_t differing = 0;
  size_t compared = 0;
};

// Compares the window's pixels covering the crop with the same pixels of
// `full` (a full decode at the same scale), after checking the geometry.
Comparison compare_window(const DecodedWindow& win, const Image& full, const CropWindow& crop,
                          int d) {
  Comparison c;
  EXPECT_EQ(win.scale_denom, d);
  EXPECT_EQ(win.pixels.size(), static_cast<size_t>(win.width) * win.height * 3);
  EXPECT_NEAR(win.crop_width, crop.width / static_cast<double>(d), 1e-12);
  EXPECT_NEAR(win.crop_height, crop.height / static_cast<double>(d), 1e-12);
  EXPECT_GE(win.crop_x, 0);
  EXPECT_GE(win.crop_y, 0);
  EXPECT_LE(win.crop_x + win.crop_width, win.width + 1e-9);
  EXPECT_LE(win.crop_y + win.crop_height, win.height + 1e-9);
  // Where the window starts in the scaled image (an integer by design).
  const double ox = crop.x / static_cast<double>(d) - win.crop_x;
  const double oy = crop.y / static_cast<double>(d) - win.crop_y;
  EXPECT_EQ(ox, std::round(ox));
  EXPECT_EQ(oy, std::round(oy));
  const int x0 = static_cast<int>(ox), y0 = static_cast<int>(oy);
  EXPECT_LE(x0 + win.width, full.width);
  EXPECT_LE(y0 + win.height, full.height);
  if (::testing::Test::HasFailure()) return c;
  const int cx0 = static_cast<int>(std::floor(win.crop_x));
  const int cy0 = static_cast<int>(std::floor(win.crop_y));
  const int cx1 = static_cast<int>(std::ceil(win.crop_x + win.crop_width));
  const int cy1 = static_cast<int>(std::ceil(win.crop_y + win.crop_height));
  for (int y = cy0; y < cy1; ++y) {
    for (int x = cx0; x < cx1; ++x) {
      for (int ch = 0; ch < 3; ++ch) {
        const int a = win.pixels[(static_cast<size_t>(y) * win.width + x) * 3 + ch];
        const int b = full.pixels[(static_cast<size_t>(y + y0) * full.width + x + x0) * 3 + ch];
        const int diff = std::abs(a - b);
        c.max_diff = std::max(c.max_diff, diff);
        c.differing += diff != 0;
        ++c.compared;
      }
    }
  }
  return c;
}

TEST(CropDecoder, WindowsEqualTheSameRegionOfAFullDecodeAtEveryScale) {
  CropDecoder decoder;  // one decoder for everything: state reuse is under test too
  DecodedWindow win;
  for (const char* name : kJpegs) {
    const std::string bytes = image_bytes(name);
    auto info = probe_image(bytes);
    ASSERT_TRUE(info.ok()) << name << ": " << info.status().to_string();
    for (int d : {1, 2, 4, 8}) {
      auto full = decode_image(bytes, DecodeOptions{.scale_denom = d});
      ASSERT_TRUE(full.ok()) << name << ": " << full.status().to_string();
      ASSERT_EQ(full->channels, 3);
      Comparison total;
      for (uint64_t k = 0; k < 40; ++k) {
        CounterRng rng(hash_key(test_seed(), d, k, std::hash<std::string>{}(name)));
        // The first few are the whole image and its corners; then random.
        CropWindow crop = random_crop(info->width, info->height, rng);
        if (k == 0) crop = {0, 0, info->width, info->height};
        if (k == 1) crop = {0, 0, 1, 1};
        if (k == 2) crop = {info->width - 1, info->height - 1, 1, 1};
        const Status s = decoder.decode(bytes, *info, crop, d, &win);
        ASSERT_TRUE(s.ok()) << name << " 1/" << d << ": " << s.to_string();
        const Comparison c = compare_window(win, *full, crop, d);
        ASSERT_FALSE(HasFailure()) << name << " 1/" << d << " crop " << crop.width << "x"
                                   << crop.height << "+" << crop.x << "+" << crop.y;
        total.max_diff = std::max(total.max_diff, c.max_diff);
        total.differing += c.differing;
        total.compared += c.compared;
      }
      // libjpeg.txt: cropped rows may upsample chroma differently at the
      // cropped edges; the decoder asks for margin columns to keep those
      // outside the crop, so in practice the region is identical. Allow the
      // documented +-2 in case a libjpeg build treats an edge differently.
      EXPECT_LE(total.max_diff, 2) << name << " 1/" << d;
      std::printf("%-45s 1/%d: %zu of %zu values differ, max %d\n", name, d, total.differing,
                  total.compared, total.max_diff);
    }
  }
}

TEST(CropDecoder, DecodeFullEqualsDecodeImage) {
  CropDecoder decoder;
  DecodedWindow win;
  for (const char* name : kJpegs) {
    const std::string bytes = image_bytes(name);
    auto info = probe_image(bytes);
    ASSERT_TRUE(info.ok());
    auto full = decode_image(bytes);
    ASSERT_TRUE(full.ok());
    ASSERT_TRUE(decoder.decode_full(bytes, *info, &win).ok()) << name;
    EXPECT_EQ(win.width, full->width);
    EXPECT_EQ(win.height, full->height);
    EXPECT_EQ(win.crop_x, 0);
    EXPECT_EQ(win.crop_width, full->width);
    EXPECT_TRUE(win.pixels == full->pixels) << name;
  }
}

TEST(CropDecoder, TruncatedJpegIsDataLossAndTheDecoderRecovers) {
  CropDecoder decoder;
  DecodedWindow win;
  for (const char* name : {"jpeg/wuffs-peacock.default.truncated.jpeg",
                           "jpeg/wuffs-peacock.progressive.truncated.jpeg"}) {
    const std::string bytes = image_bytes(name);
    auto info = probe_image(bytes);
    ASSERT_TRUE(info.ok());
    const Status s = decoder.decode_full(bytes, *info, &win);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << name << ": " << s.to_string();
    for (int d : {1, 2, 4, 8}) {
      const Status bottom =
          decoder.decode(bytes, *info, {0, info->height - 8, info->width, 8}, d, &win);
      EXPECT_EQ(bottom.code(), StatusCode::kDataLoss) << name << " 1/" << d;
    }
  }
  // Truncated by hand, anywhere in the scan: damage above the crop's
  // bottom row is always seen.
  const std::string whole = image_bytes("jpeg/libjpeg-turbo-testorig.jpg");
  auto info = probe_image(whole);
  ASSERT_TRUE(info.ok());
  for (size_t cut = whole.size() / 3; cut < whole.size() - 2; cut += whole.size() / 7) {
    const Status s = decoder.decode_full(whole.substr(0, cut), *info, &win);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << "cut at " << cut;
  }
  // And the same decoder still decodes whole files afterwards.
  auto full = decode_image(whole);
  ASSERT_TRUE(full.ok());
  ASSERT_TRUE(decoder.decode_full(whole, *info, &win).ok());
  EXPECT_TRUE(win.pixels == full->pixels);
  // Garbage where the header was probed: a JPEG error, not a crash.
  std::string garbled = whole;
  for (size_t i = 2; i < 200; ++i) garbled[i] = static_cast<char>(0x5a);
  EXPECT_FALSE(decoder.decode_full(garbled, *info, &win).ok());
}

TEST(CropDecoder, RejectsBadArgumentsAndTooManyPixels) {
  CropDecoder decoder;
  DecodedWindow win;
  const std::string bytes = image_bytes("jpeg/pillow-hopper.jpg");
  auto info = probe_image(bytes);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(decoder.decode(bytes, *info, {0, 0, 129, 10}, 1, &win).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(decoder.decode(bytes, *info, {-1, 0, 10, 10}, 1, &win).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(decoder.decode(bytes, *info, {0, 0, 0, 10}, 1, &win).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(decoder.decode(bytes, *info, {0, 0, 10, 10}, 3, &win).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(decoder.decode(bytes, *info, {0, 0, 10, 10}, 1, &win, 128 * 128 - 1).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(decoder.decode_full(bytes, *info, &win, 100).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(decoder.decode(bytes, *info, {0, 0, 10, 10}, 1, &win, 128 * 128).ok());
  // Unsupported variants say so, as decode_image does.
  const std::string twelve = image_bytes("jpeg/libjpeg-turbo-monkey12.jpg");
  auto twelve_info = probe_image(twelve);
  ASSERT_TRUE(twelve_info.ok());
  EXPECT_EQ(decoder.decode_full(twelve, *twelve_info, &win).code(), StatusCode::kUnimplemented);
}

TEST(CropDecoder, PngWindowsAreExact) {
  CropDecoder decoder;
  DecodedWindow win;
  for (const char* name :
       {"png/pngsuite-basn2c16.png", "png/pngsuite-basi2c08.png", "png/pngsuite-basn0g01.png",
        "png/pngsuite-tbbn3p08.png", "png/pngsuite-basn6a16.png"}) {
    const std::string bytes = image_bytes(name);
    auto info = probe_image(bytes);
    ASSERT_TRUE(info.ok()) << name;
    auto full = decode_image(bytes);  // force_rgb by default
    ASSERT_TRUE(full.ok()) << name;
    for (uint64_t k = 0; k < 20; ++k) {
      CounterRng rng(hash_key(test_seed(), 99, k));
      const CropWindow crop = random_crop(info->width, info->height, rng);
      ASSERT_TRUE(decoder.decode(bytes, *info, crop, 4, &win).ok()) << name;
      EXPECT_EQ(win.scale_denom, 1);  // PNG has no reduced decode
      const Comparison c = compare_window(win, *full, crop, 1);
      EXPECT_EQ(c.max_diff, 0) << name;
      EXPECT_EQ(c.compared, static_cast<size_t>(crop.width) * crop.height * 3);
    }
  }
  const std::string broken = image_bytes("png/wuffs-hippopotamus.regular.truncated.png");
  auto info = probe_image(broken);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(decoder.decode_full(broken, *info, &win).code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace sluice
