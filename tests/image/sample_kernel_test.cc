// The GPU kernel's arithmetic (src/kernels/sample_math.h), run on the CPU
// against write_sample_precise on fresh random inputs: sizes that enlarge,
// shrink by up to 2x and by more (area averaging), fractional crops, every
// dtype and layout, flipped or not. The CUDA kernel runs this same code per
// thread, so what is checked here is its arithmetic; the device run itself
// needs a GPU (bench/gpu).
#include "image/sample_kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "sluice/image_ops.h"
#include "tests/image/random_window.h"
#include "tests/test_seed.h"

namespace sluice {
namespace {

TEST(SampleKernelTest, MatchesWriteSamplePreciseOverASweep) {
  std::mt19937_64 rng(run_seed("SampleKernelTest"));
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const DType dtypes[] = {DType::kUint8, DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  const Layout layouts[] = {Layout::kNCHW, Layout::kNHWC};
  int cases = 0;
  for (int trial = 0; trial < 120; ++trial) {
    DecodedWindow w = random_window(rng, 300);
    SampleSpec spec;
    // Enlarging, shrinking up to 2x, and beyond (area averaging).
    const int pick = trial % 3;
    spec.width = pick == 0 ? integer(1, 64) : integer(1, 200);
    spec.height = pick == 1 ? integer(1, 32) : integer(1, 200);
    spec.dtype = dtypes[trial % 4];
    spec.layout = layouts[(trial / 4) % 2];
    for (int c = 0; c < 3; ++c) {
      spec.mean[c] = static_cast<float>(uniform(0, 1));
      spec.std[c] = static_cast<float>(uniform(0.05, 1));
    }
    const bool flip = (trial / 8) % 2 == 1;
    std::vector<uint8_t> want(sample_bytes(spec)), got(sample_bytes(spec), 0xAB);
    std::vector<float> scratch;
    ASSERT_TRUE(write_sample_precise(w, flip, spec, want.data(), &scratch).ok());
    detail::SampleTables tables;
    detail::SampleJob job;
    ASSERT_TRUE(detail::plan_sample_job(w, flip, spec, got.data(), &tables, &job).ok());
    detail::run_sample_job_on_host(job);
    // The same arithmetic in the same order: bit for bit.
    ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0)
        << "trial " << trial << ": " << w.width << "x" << w.height << " -> " << spec.width << "x"
        << spec.height << " dtype " << dtype_name(spec.dtype) << " layout "
        << layout_name(spec.layout) << " flip " << flip;
    ++cases;
  }
  EXPECT_EQ(cases, 120);
}

TEST(SampleKernelTest, HalfAndBfloat16MatchTheCpuConversionsExhaustively) {
  // Every float32 bit pattern's top 16 bits times a few low patterns: the
  // kernel's conversions equal image_ops.h's.
  for (uint32_t hi = 0; hi < 0x10000u; ++hi) {
    for (uint32_t lo : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1000u}) {
      const float f = detail::bits_float((hi << 16) | lo);
      ASSERT_EQ(detail::hd_float_to_half(f), float_to_half(f)) << std::hex << ((hi << 16) | lo);
      ASSERT_EQ(detail::hd_float_to_bfloat16(f), float_to_bfloat16(f))
          << std::hex << ((hi << 16) | lo);
    }
  }
}

TEST(SampleKernelTest, RefusesWhatWriteSampleRefuses) {
  DecodedWindow w;
  w.width = w.height = 4;
  w.pixels.assign(48, 0);
  w.crop_width = w.crop_height = 8;  // outside the window
  SampleSpec spec;
  spec.width = spec.height = 2;
  std::vector<uint8_t> out(sample_bytes(spec));
  detail::SampleTables t;
  detail::SampleJob j;
  EXPECT_EQ(detail::plan_sample_job(w, false, spec, out.data(), &t, &j).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
