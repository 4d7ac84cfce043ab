// write_sample's kernel: resample, flip, normalise, cast and lay out in one
// pass, in integer arithmetic that gives the same bytes on every CPU.
//
// The filter is write_sample_precise's (bilinear with half-pixel centres
// while an axis shrinks by at most 2x or enlarges, area averaging over each
// output pixel's footprint beyond, which is the antialiasing), as
// per-output tables of fixed-point weights: the running sum of the float
// weights rounded, so they sum to exactly one. Each output row is made in
// two steps:
//
//   1. vertical: the row's source rows are combined column by column into
//      three planes (R, G, B) of int16 with 7 fractional bits; each tap adds
//      (pixel * 128 * w + 2^14) >> 15 for a Q15 weight w (MulFixedPoint15; a
//      weight of exactly one is stored as 32767); beyond 16 taps (where
//      those rounded terms could add up past int16) the sum is exact in
//      int32, (sum(pixel * w) + 2^7) >> 8;
//   2. horizontal: each output pixel sums plane * w over its taps with Q14
//      weights, in int32: 21 fractional bits, exact.
//
// The sum s then becomes the output: uint8 is (s + 2^20) >> 21; the float
// types compute float(s) * (scale * 2^-21) + bias as a multiplication and
// an addition, each rounded once (never fused: the kernel and the tables
// are compiled with -ffp-contract=off), and round to nearest even into
// float16 (F16C where the target has it, the same integer rounding as
// float_to_half elsewhere) or bfloat16. Every step is exact integer
// arithmetic or one IEEE-754 operation, so Highway's targets (scalar, SSSE3,
// SSE4, AVX2, AVX-512, NEON, ...) agree bit for bit; the tests compare
// every target this CPU runs and pin a digest.
//
// Against the float reference the difference is about 0.015 on the 0..255
// scale at most (0.002 on average) for bilinear, more for area shrinks by
// hundreds (0.15): resample_kernel_test asserts the bounds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/image_ops.h"

namespace sluice::detail {

// The fixed-point tables of one axis: output o reads `taps` source pixels
// from start[o] with weights weight[k * padded + o] (tap-major, so one load
// gives a tap's weights for consecutive outputs). The horizontal axis has
// an even tap count (a zero tap added) and is padded to a multiple of 64
// outputs by repeating the last; starts never exceed hi - taps + 1 for the
// filter's own tap count.
struct FixedAxis {
  int taps = 0;
  int count = 0;
  int padded = 0;
  int lo = 0, hi = 0;  // the source pixels any output reads
  std::vector<int32_t> start;
  std::vector<int32_t> weight;
};

// One sample's plan: both axes (flip folded into the x table) and the
// normalisation, value * scale + bias for a value on the 0..255 scale
// (write_sample_precise's; scale 1 and bias 0 for uint8).
struct FixedSample {
  FixedAxis x, y;
  float scale[3] = {}, bias[3] = {};
};

// Plans a sample after the same checks as write_sample_precise.
Status plan_fixed_sample(const DecodedWindow& src, bool flip, const SampleSpec& spec,
                         FixedSample* plan);

// Runs the kernel on Highway's best target for this CPU (or the one
// forced with force_resample_target). Buffers are per thread, grown to the
// largest window met and then reused.
Status write_sample_fixed(const DecodedWindow& src, bool flip, const SampleSpec& spec, void* dst);

// The previous write_sample (OpenCV's 8-bit resize of the rectangle rounded
// to whole pixels, then one table lookup per value), for the benchmark that
// measures the kernel against it.
Status write_sample_opencv(const DecodedWindow& src, bool flip, const SampleSpec& spec, void* dst,
                           std::vector<float>* scratch);

// For tests and benchmarks: the targets this build has and this CPU runs,
// by name ("AVX3", "AVX2", "SSE4", "EMU128", ...), and forcing one (an
// empty name restores the best). Not thread-safe against running kernels.
std::vector<std::string> resample_targets();
Status force_resample_target(const std::string& name);

}  // namespace sluice::detail
