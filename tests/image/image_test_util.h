// Shared by the image tests: reading test images, comparing pixels, and
// hand-made headers.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "sluice/image.h"
#include "tests/temp_dir.h"

namespace sluice::testing {

// The bytes of tests/data/images/<rel>; fails the test if unreadable.
inline std::string image_bytes(const std::string& rel) {
  auto bytes = detail::read_file(test_data("images/" + rel));
  EXPECT_TRUE(bytes.ok()) << rel << ": " << bytes.status().to_string();
  return bytes.ok() ? *bytes : std::string();
}

inline double mean_abs_diff(const Image& a, const Image& b) {
  if (a.pixels.size() != b.pixels.size() || a.pixels.empty()) return 1e9;
  double sum = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    sum += std::abs(static_cast<int>(a.pixels[i]) - static_cast<int>(b.pixels[i]));
  }
  return sum / static_cast<double>(a.pixels.size());
}

// sum of (i + 1) * pixels[i] mod 2^32, as the Pillow reference values in
// the tests were computed: catches misplaced rows and channels.
inline uint32_t weighted_checksum(const Image& image) {
  uint32_t sum = 0;
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    sum += static_cast<uint32_t>(i + 1) * image.pixels[i];
  }
  return sum;
}

inline uint64_t byte_sum(const Image& image) {
  uint64_t sum = 0;
  for (uint8_t p : image.pixels) sum += p;
  return sum;
}

inline void append_be16(std::string* s, uint32_t v) {
  s->push_back(static_cast<char>(v >> 8));
  s->push_back(static_cast<char>(v));
}

inline void append_be32(std::string* s, uint32_t v) {
  append_be16(s, v >> 16);
  append_be16(s, v & 0xFFFF);
}

// A JPEG up to and including its SOF0 frame header: SOI, SOF0 (8-bit,
// width x height, `components` with 1x1 sampling). Nothing after.
inline std::string jpeg_header(int width, int height, int components = 3) {
  std::string s = "\xFF\xD8\xFF\xC0";
  append_be16(&s, 8 + 3 * static_cast<uint32_t>(components));
  s.push_back(8);
  append_be16(&s, static_cast<uint32_t>(height));
  append_be16(&s, static_cast<uint32_t>(width));
  s.push_back(static_cast<char>(components));
  for (int i = 0; i < components; ++i) {
    s.push_back(static_cast<char>(i + 1));
    s.push_back(0x11);
    s.push_back(0);
  }
  return s;
}

// A PNG signature and a correctly signed IHDR (nothing after).
inline std::string png_header(uint32_t width, uint32_t height, int bit_depth = 8,
                              int color_type = 2, int interlace = 0) {
  std::string s = "\x89PNG\r\n\x1a\n";
  append_be32(&s, 13);
  std::string chunk = "IHDR";
  append_be32(&chunk, width);
  append_be32(&chunk, height);
  chunk.push_back(static_cast<char>(bit_depth));
  chunk.push_back(static_cast<char>(color_type));
  chunk.push_back(0);
  chunk.push_back(0);
  chunk.push_back(static_cast<char>(interlace));
  s += chunk;
  append_be32(&s, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(chunk.data()),
                                              static_cast<uInt>(chunk.size()))));
  return s;
}

// A deterministic gradient-plus-texture test picture.
inline Image test_picture(int width, int height, int channels) {
  Image image{width, height, channels, {}};
  image.pixels.resize(image.row_bytes() * height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const int v = x * 150 / width + y * 60 / height + c * 12 + ((x / 8 + y / 8) % 2) * 20;
        image.pixels[(static_cast<size_t>(y) * width + x) * channels + c] =
            static_cast<uint8_t>(v > 255 ? 255 : v);
      }
    }
  }
  return image;
}

}  // namespace sluice::testing
