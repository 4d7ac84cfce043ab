// The fused sample kernel's arithmetic, written once for the CPU and the
// GPU (issue: the GPU data path). One output value = a separable filter over
// the decoded window (bilinear while shrinking by at most 2x or enlarging,
// area averaging beyond: write_sample_precise's filter, as tables), the
// horizontal flip, normalisation and the cast, written in the layout.
//
// The per-value function is __host__ __device__: the CUDA kernel
// (src/cuda/fused_kernel.cu) runs it per thread, and the tests run the same
// code on the CPU against write_sample_precise, so the kernel's arithmetic
// is checked on machines without a GPU. Summation order follows
// write_sample_precise (rows filtered in x, then combined in y), so on the
// CPU the two agree bit for bit.
//
// Header-only and free of every other sluice header (target
// sluice::kernel_math): the image module plans jobs with it, the device
// module hands them to the kernel library, and nvcc compiles it alone.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__CUDACC__)
#define SLUICE_HD __host__ __device__
#else
#define SLUICE_HD
#endif

namespace sluice::detail {

// One axis of the filter: output o reads `taps` source pixels from start[o]
// with weight[o * taps + k].
struct AxisTable {
  int taps = 0;
  std::vector<int32_t> start;
  std::vector<float> weight;
};

// Everything one sample needs, as plain pointers (host or device memory).
struct SampleJob {
  const uint8_t* src = nullptr;  // RGB, rows packed
  int src_width = 0;
  const int32_t* x_start = nullptr;
  const float* x_weight = nullptr;
  int x_taps = 0;
  const int32_t* y_start = nullptr;
  const float* y_weight = nullptr;
  int y_taps = 0;
  int out_width = 0, out_height = 0;
  bool flip = false;
  float scale[3] = {1, 1, 1};  // out = v * scale + bias, v on the 0..255 scale
  float bias[3] = {0, 0, 0};
  int dtype = 0;   // DType as int: 0 uint8, 1 float32, 2 float16, 3 bfloat16
  int layout = 0;  // Layout as int: 0 NCHW, 1 NHWC
  uint8_t* dst = nullptr;
};

// The filtered value of channel c at output (ox, oy), before normalisation.
SLUICE_HD inline float sample_value(const SampleJob& j, int ox, int oy, int c) {
  const int sx = j.flip ? j.out_width - 1 - ox : ox;
  const int32_t x0 = j.x_start[sx];
  const float* xw = j.x_weight + static_cast<size_t>(sx) * j.x_taps;
  const int32_t y0 = j.y_start[oy];
  const float* yw = j.y_weight + static_cast<size_t>(oy) * j.y_taps;
  const size_t row_bytes = static_cast<size_t>(j.src_width) * 3;
  float acc = 0;
  for (int ky = 0; ky < j.y_taps; ++ky) {
    const uint8_t* p =
        j.src + static_cast<size_t>(y0 + ky) * row_bytes + static_cast<size_t>(x0) * 3 + c;
    float r = 0;
    for (int kx = 0; kx < j.x_taps; ++kx) r += xw[kx] * p[3 * kx];
    acc = ky == 0 ? yw[0] * r : acc + yw[ky] * r;
  }
  return acc;
}

SLUICE_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

SLUICE_HD inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, as float_to_half / float_to_bfloat16 (image_ops.h).
SLUICE_HD inline uint16_t hd_float_to_half(float f) {
  uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  uint32_t h;
  if (u >= 0x47800000u) {
    h = u > 0x7f800000u ? 0x7e00u | ((u >> 13) & 0x3ffu) : 0x7c00u;
  } else if (u < 0x38800000u) {
    const uint32_t magic = ((127 - 15) + (23 - 10) + 1) << 23;
    h = float_bits(bits_float(u) + bits_float(magic)) - magic;
  } else {
    const uint32_t odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
    h = u >> 13;
  }
  return static_cast<uint16_t>(h | sign);
}

SLUICE_HD inline uint16_t hd_float_to_bfloat16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Normalises, converts and stores channel c of output (ox, oy).
SLUICE_HD inline void store_value(const SampleJob& j, int ox, int oy, int c, float v) {
  const size_t plane = static_cast<size_t>(j.out_width) * j.out_height;
  const size_t pixel = static_cast<size_t>(oy) * j.out_width + ox;
  const size_t index = j.layout == 1 ? pixel * 3 + c : c * plane + pixel;
  const float x = v * j.scale[c] + j.bias[c];
  switch (j.dtype) {
    case 0: {
      const float clamped = x < 0.0f ? 0.0f : (x > 255.0f ? 255.0f : x);
      j.dst[index] = static_cast<uint8_t>(clamped + 0.5f);
      break;
    }
    case 1: memcpy(j.dst + 4 * index, &x, 4); break;
    default: {
      const uint16_t h = j.dtype == 2 ? hd_float_to_half(x) : hd_float_to_bfloat16(x);
      memcpy(j.dst + 2 * index, &h, 2);
      break;
    }
  }
}

// The whole sample on the CPU: what one GPU thread block does, in a loop.
inline void run_sample_job_on_host(const SampleJob& j) {
  for (int oy = 0; oy < j.out_height; ++oy) {
    for (int ox = 0; ox < j.out_width; ++ox) {
      for (int c = 0; c < 3; ++c) store_value(j, ox, oy, c, sample_value(j, ox, oy, c));
    }
  }
}

}  // namespace sluice::detail
