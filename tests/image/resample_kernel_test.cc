// write_sample's SIMD kernel: the same bytes on every Highway target this
// CPU runs, and close to the float reference (write_sample_precise).

#include "image/resample_kernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "sluice/image_ops.h"
#include "tests/test_seed.h"

namespace sluice {
namespace {

struct Case {
  int src_w, src_h;
  double x, y, w, h;  // crop rectangle
  int out_w, out_h;
};

// Bilinear shrinks, enlargements, area shrinks whose blocks span several
// vectors, row ends that are not a whole vector, and degenerate windows.
const Case kCases[] = {
    {300, 300, 1.5, 2.25, 296, 294.5, 224, 224},  // the benchmark's window
    {97, 131, 4, 9, 80, 100, 40, 50},
    {150, 120, 0, 0, 150, 120, 224, 224},           // enlarging
    {1000, 700, 3.3, 5.6, 990.3, 692.8, 224, 224},  // area, 4.4x
    {640, 480, 10, 0, 600, 480, 223, 225},
    {4000, 3, 0, 0, 4000, 3, 7, 5},  // area, 571x across
    {1, 1, 0, 0, 1, 1, 3, 3},
    {17, 1, 0, 0, 17, 1, 5, 9},
    {33, 65, 0.25, 0.75, 32.5, 63.5, 17, 31},  // just under 2x
    {64, 64, 0, 0, 64, 64, 32, 32},            // exactly 2x
    {5, 1024, 0, 0, 5, 1024, 4, 4},            // area, 256x down: 258 vertical taps
};

DecodedWindow random_window(const Case& c, CounterRng& rng) {
  DecodedWindow w;
  w.width = c.src_w;
  w.height = c.src_h;
  // Exactly the pixels and no more: reads past the last row would show
  // under AddressSanitizer.
  w.pixels.resize(static_cast<size_t>(c.src_w) * c.src_h * 3);
  w.pixels.shrink_to_fit();
  for (auto& p : w.pixels) p = static_cast<uint8_t>(rng.below(256));
  w.crop_x = c.x;
  w.crop_y = c.y;
  w.crop_width = c.w;
  w.crop_height = c.h;
  return w;
}

SampleSpec spec_for(const Case& c, DType dtype, Layout layout) {
  SampleSpec spec;
  spec.width = c.out_w;
  spec.height = c.out_h;
  spec.dtype = dtype;
  spec.layout = layout;
  return spec;
}

// float32 NHWC whose values are on the 0..255 scale (mean 0, std 1/255).
SampleSpec levels_spec(const Case& c) {
  SampleSpec spec = spec_for(c, DType::kFloat32, Layout::kNHWC);
  for (int ch = 0; ch < 3; ++ch) {
    spec.mean[ch] = 0;
    spec.std[ch] = 1.0f / 255.0f;
  }
  return spec;
}

std::vector<uint8_t> run(const DecodedWindow& src, bool flip, const SampleSpec& spec) {
  std::vector<uint8_t> out(sample_bytes(spec), 0xAB);
  const Status s = detail::write_sample_fixed(src, flip, spec, out.data());
  EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

// FNV-1a, 64 bits.
uint64_t digest(const std::vector<uint8_t>& bytes, uint64_t h = 1469598103934665603ull) {
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

struct RestoreTarget {
  ~RestoreTarget() { EXPECT_TRUE(detail::force_resample_target("").ok()); }
};

TEST(ResampleKernel, EveryTargetWritesTheSameBytes) {
  RestoreTarget restore;
  const std::vector<std::string> targets = detail::resample_targets();
  ASSERT_FALSE(targets.empty());
  CounterRng rng(hash_key(run_seed("resample_kernel_test"), 1));
  for (const Case& c : kCases) {
    const DecodedWindow src = random_window(c, rng);
    for (DType dtype : {DType::kUint8, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
        for (bool flip : {false, true}) {
          const SampleSpec spec = spec_for(c, dtype, layout);
          std::vector<uint8_t> first;
          for (const std::string& t : targets) {
            ASSERT_TRUE(detail::force_resample_target(t).ok()) << t;
            std::vector<uint8_t> out = run(src, flip, spec);
            if (first.empty()) {
              first = std::move(out);
            } else {
              ASSERT_TRUE(out == first)
                  << t << " differs from " << targets[0] << ": " << c.src_w << "x" << c.src_h
                  << " -> " << c.out_w << "x" << c.out_h << " " << dtype_name(dtype) << " "
                  << layout_name(layout) << (flip ? " flipped" : "");
            }
          }
        }
      }
    }
  }
}

// The bytes on every CPU, not only on every target of this one: a fixed
// window's samples hash to a constant computed once (on AVX-512). A change
// of the arithmetic must change this constant, in the same commit.
TEST(ResampleKernel, DigestIsTheSameOnEveryMachine) {
  RestoreTarget restore;
  for (const std::string& t : detail::resample_targets()) {
    ASSERT_TRUE(detail::force_resample_target(t).ok()) << t;
    uint64_t h = 1469598103934665603ull;
    for (const Case& c : kCases) {
      DecodedWindow src;
      src.width = c.src_w;
      src.height = c.src_h;
      src.pixels.resize(static_cast<size_t>(c.src_w) * c.src_h * 3);
      for (size_t i = 0; i < src.pixels.size(); ++i) {
        src.pixels[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
      }
      src.crop_x = c.x;
      src.crop_y = c.y;
      src.crop_width = c.w;
      src.crop_height = c.h;
      for (DType dtype : {DType::kUint8, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
        h = digest(run(src, true, spec_for(c, dtype, Layout::kNCHW)), h);
      }
    }
    EXPECT_EQ(h, 0x71772ff780f6439full) << t << std::hex << ": 0x" << h;
  }
}

// Against the float reference, on the 0..255 scale: Q14 horizontal and Q15
// vertical weights (each within one unit, runs of taps within half a unit),
// one rounding to 1/128 per vertical tap up to 16 taps (one in all beyond),
// a vertical weight of 1 stored as 1 - 2^-15, and the horizontal sum rounded
// to float. For the bilinear cases that is under 0.05; area shrinks add taps.
TEST(ResampleKernel, CloseToTheFloatReference) {
  CounterRng rng(hash_key(run_seed("resample_kernel_test"), 2));
  for (const Case& c : kCases) {
    const DecodedWindow src = random_window(c, rng);
    const SampleSpec spec = levels_spec(c);
    for (bool flip : {false, true}) {
      std::vector<float> fast(sample_bytes(spec) / 4), precise(fast.size()), scratch;
      ASSERT_TRUE(detail::write_sample_fixed(src, flip, spec, fast.data()).ok());
      ASSERT_TRUE(write_sample_precise(src, flip, spec, precise.data(), &scratch).ok());
      double worst = 0, sum = 0;
      for (size_t i = 0; i < fast.size(); ++i) {
        const double d = std::abs(static_cast<double>(fast[i]) - precise[i]);
        worst = std::max(worst, d);
        sum += d;
      }
      const bool area = c.w / c.out_w > 2 || c.h / c.out_h > 2;
      std::printf("%dx%d -> %dx%d%s: max %.4f mean %.5f\n", c.src_w, c.src_h, c.out_w, c.out_h,
                  flip ? " flipped" : "", worst, sum / fast.size());
      EXPECT_LE(worst, area ? 0.25 : 0.05)
          << c.src_w << "x" << c.src_h << " -> " << c.out_w << "x" << c.out_h;
      EXPECT_LE(sum / fast.size(), area ? 0.05 : 0.02) << c.src_w << "x" << c.src_h;
    }
  }
}

// uint8 is the float value on the 0..255 scale, rounded (half up).
TEST(ResampleKernel, Uint8IsTheRoundedValue) {
  CounterRng rng(hash_key(run_seed("resample_kernel_test"), 3));
  for (const Case& c : kCases) {
    const DecodedWindow src = random_window(c, rng);
    const SampleSpec f = levels_spec(c);
    const SampleSpec u = spec_for(c, DType::kUint8, Layout::kNHWC);
    std::vector<float> values(sample_bytes(f) / 4);
    ASSERT_TRUE(detail::write_sample_fixed(src, false, f, values.data()).ok());
    const std::vector<uint8_t> bytes = run(src, false, u);
    for (size_t i = 0; i < bytes.size(); ++i) {
      ASSERT_LE(std::abs(bytes[i] - static_cast<double>(values[i])), 0.5 + 1e-4) << i;
    }
  }
}

// float32 NCHW into 64-byte aligned rows takes non-temporal stores; any
// other address, plain ones. Same bytes either way, on every target.
TEST(ResampleKernel, AlignedAndUnalignedDestinationsGetTheSameBytes) {
  RestoreTarget restore;
  CounterRng rng(hash_key(run_seed("resample_kernel_test"), 4));
  const Case c = kCases[0];
  const DecodedWindow src = random_window(c, rng);
  const SampleSpec spec = spec_for(c, DType::kFloat32, Layout::kNCHW);
  const size_t bytes = sample_bytes(spec);
  std::vector<uint8_t> storage(bytes + 128);
  uint8_t* aligned = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64);
  for (const std::string& t : detail::resample_targets()) {
    ASSERT_TRUE(detail::force_resample_target(t).ok()) << t;
    ASSERT_TRUE(detail::write_sample_fixed(src, true, spec, aligned).ok());
    const std::vector<uint8_t> a(aligned, aligned + bytes);
    ASSERT_TRUE(detail::write_sample_fixed(src, true, spec, aligned + 4).ok());
    const std::vector<uint8_t> b(aligned + 4, aligned + 4 + bytes);
    EXPECT_TRUE(a == b) << t;
  }
}

// A white window shrunk by hundreds vertically stays white: rounded int16
// terms of 258 taps would add up past 32767 and wrap to black (and differ
// between targets that read the wrapped sum as signed or not).
TEST(ResampleKernel, WhiteStaysWhiteThroughATallShrink) {
  RestoreTarget restore;
  DecodedWindow src;
  src.width = 4;
  src.height = 1024;
  src.pixels.assign(4 * 1024 * 3, 255);
  src.crop_width = 4;
  src.crop_height = 1024;
  SampleSpec spec;
  spec.width = spec.height = 4;
  spec.dtype = DType::kUint8;
  spec.layout = Layout::kNHWC;
  for (const std::string& t : detail::resample_targets()) {
    ASSERT_TRUE(detail::force_resample_target(t).ok()) << t;
    const std::vector<uint8_t> out = run(src, false, spec);
    EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 255)) << t;
  }
}

TEST(ResampleKernel, UnknownTargetIsRefused) {
  EXPECT_EQ(detail::force_resample_target("PENTIUM").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(detail::force_resample_target("").ok());
}

}  // namespace
}  // namespace sluice
