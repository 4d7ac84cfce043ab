// write_sample's kernel, compiled once per Highway target and dispatched at
// run time (resample_kernel.h states the arithmetic). The vertical step
// works on int16 lanes of consecutive columns; the horizontal one on int32
// lanes of consecutive output pixels, each lane a pair of neighbouring
// 16-bit plane values (two taps) fetched by a table lookup within a few
// vectors of the plane: gathers measured 2x slower on AVX-512 (Zen 4).

#include "image/resample_kernel.h"

#include <algorithm>
#include <bit>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "image/resample_kernel.cc"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#ifndef SLUICE_RESAMPLE_KERNEL_SHARED
#define SLUICE_RESAMPLE_KERNEL_SHARED
namespace sluice::detail {

// A pair of 16-bit taps read as one 32-bit lane is (low, high) only on a
// little-endian CPU.
static_assert(std::endian::native == std::endian::little);

// One sample's work, as the per-target code sees it.
struct KernelJob {
  const uint8_t* src = nullptr;  // the window's RGB rows
  size_t src_bytes = 0;
  int src_width = 0;
  const FixedAxis* x = nullptr;
  const FixedAxis* y = nullptr;
  // The horizontal step's lookup tables, filled per target (their layout
  // depends on the vector width): per block of lanes, the first 32-bit pair
  // it reads and how many vectors of pairs it spans; per block, tap pair
  // and lane, the pair's index from there and whether it starts on an odd
  // 16-bit value. x->padded * x->taps / 2 entries each (blocks: x->padded).
  int32_t* block_base = nullptr;
  int32_t* block_vectors = nullptr;
  int32_t* pair_index = nullptr;
  int32_t* pair_odd = nullptr;
  int32_t* pair_weight = nullptr;  // the pair's two Q14 weights as int16 halves
  uint16_t* planes = nullptr;      // R, G, B, plane_stride values each
  size_t plane_stride = 0;
  // The window's last bytes, copied with kReadSlack zeros after them: rows
  // whose vector reads would pass the end of the pixels read from here.
  const uint8_t* tail = nullptr;
  size_t tail_start = 0;
  const uint8_t** rows = nullptr;  // y.taps entries of scratch
  int32_t* row_weights = nullptr;  // y.taps entries of scratch
  int width = 0, height = 0;
  float scale[3] = {};  // applied to the sums: spec scale / 2^21
  float bias[3] = {};
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;
  uint8_t* dst = nullptr;
  // float32 NCHW rows all start on 64 bytes: stored with non-temporal
  // writes, which keep the decoder's working set in cache (a batch slot is
  // far larger than the caches and is read by another thread, or a copy).
  bool stream = false;
};

// Bytes past a row's last whole vector that a source row must hold for the
// vertical step's loads (rows near the window's end are read from `tail`).
constexpr size_t kReadSlack = 256;

}  // namespace sluice::detail
#endif

HWY_BEFORE_NAMESPACE();
namespace sluice::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D32 = hn::ScalableTag<int32_t>;
using V32 = hn::Vec<D32>;

using D16 = hn::ScalableTag<int16_t>;

// Up to this many vertical taps the int16 sum of rounded products stays
// within 255 << 7 plus half a unit per tap, under 32767; beyond (an area
// shrink by more than about 14x) it could wrap, so the sums are in int32.
constexpr int kNarrowTaps = 16;

// The vertical step for many taps: exact int32 sums of pixel * Q15 weight,
// rounded once to 7 fractional bits.
void vertical_wide(const uint8_t* const* rows, const int32_t* weights, int taps, size_t columns,
                   int16_t* pr, int16_t* pg, int16_t* pb) {
  const D32 d;
  const hn::Rebind<uint8_t, D32> d8;
  const hn::Rebind<int16_t, D32> d16;
  const size_t n = hn::Lanes(d);
  for (size_t i = 0; i < columns; i += n) {
    V32 r = hn::Set(d, 1 << 7), g = r, b = r;
    for (int k = 0; k < taps; ++k) {
      hn::Vec<decltype(d8)> r8, g8, b8;
      hn::LoadInterleaved3(d8, rows[k] + 3 * i, r8, g8, b8);
      const V32 w = hn::Set(d, weights[k]);
      r = hn::Add(r, hn::Mul(hn::PromoteTo(d, r8), w));
      g = hn::Add(g, hn::Mul(hn::PromoteTo(d, g8), w));
      b = hn::Add(b, hn::Mul(hn::PromoteTo(d, b8), w));
    }
    hn::StoreU(hn::DemoteTo(d16, hn::ShiftRight<8>(r)), d16, pr + i);
    hn::StoreU(hn::DemoteTo(d16, hn::ShiftRight<8>(g)), d16, pg + i);
    hn::StoreU(hn::DemoteTo(d16, hn::ShiftRight<8>(b)), d16, pb + i);
  }
}

// Output row y's vertical step: columns x.lo .. x.hi + 1 of its source rows
// into the three planes, with 7 fractional bits. Each tap is one rounded
// Q15 product (MulFixedPoint15) of the pixel in Q7.
void vertical(const KernelJob& j, int y) {
  const D16 d;
  const size_t n = hn::Lanes(d);
  const FixedAxis& ay = *j.y;
  const int first = ay.start[static_cast<size_t>(y)];
  const size_t columns = static_cast<size_t>(j.x->hi - j.x->lo + 2);
  const size_t row_bytes = static_cast<size_t>(j.src_width) * 3;
  const size_t from = static_cast<size_t>(j.x->lo) * 3;
  const size_t read = (columns + 2 * n - 1) / (2 * n) * (2 * n) * 3;
  const uint8_t** rows = j.rows;
  int32_t* weights = j.row_weights;
  const int taps = ay.taps;
  for (int k = 0; k < taps; ++k) {
    const size_t at = static_cast<size_t>(first + k) * row_bytes + from;
    rows[k] = at + read + kReadSlack > j.src_bytes ? j.tail + (at - j.tail_start) : j.src + at;
    weights[k] = ay.weight[static_cast<size_t>(k) * ay.padded + static_cast<size_t>(y)];
  }
  int16_t* pr = reinterpret_cast<int16_t*>(j.planes);
  int16_t* pg = pr + j.plane_stride;
  int16_t* pb = pg + j.plane_stride;
  if (taps > kNarrowTaps) return vertical_wide(rows, weights, taps, columns, pr, pg, pb);
#if HWY_TARGET == HWY_SCALAR  // one lane: no halves to split
  const hn::Rebind<uint8_t, D16> d8;
  for (size_t i = 0; i < columns; ++i) {
    auto r = hn::Zero(d), g = r, b = r;
    for (int k = 0; k < taps; ++k) {
      hn::Vec<decltype(d8)> r8, g8, b8;
      hn::LoadInterleaved3(d8, rows[k] + 3 * i, r8, g8, b8);
      const auto w = hn::Set(d, static_cast<int16_t>(weights[k]));
      r = hn::Add(r, hn::MulFixedPoint15(hn::ShiftLeft<7>(hn::PromoteTo(d, r8)), w));
      g = hn::Add(g, hn::MulFixedPoint15(hn::ShiftLeft<7>(hn::PromoteTo(d, g8)), w));
      b = hn::Add(b, hn::MulFixedPoint15(hn::ShiftLeft<7>(hn::PromoteTo(d, b8)), w));
    }
    hn::StoreU(r, d, pr + i);
    hn::StoreU(g, d, pg + i);
    hn::StoreU(b, d, pb + i);
  }
#else
  // Deinterleaving is the costly part: a whole vector of bytes at a time,
  // widened in two halves.
  const hn::Repartition<uint8_t, D16> du8;
  const hn::Half<decltype(du8)> dh8;
  for (size_t i = 0; i < columns; i += 2 * n) {
    auto r0 = hn::Zero(d), g0 = r0, b0 = r0, r1 = r0, g1 = r0, b1 = r0;
    for (int k = 0; k < taps; ++k) {
      hn::Vec<decltype(du8)> r8, g8, b8;
      hn::LoadInterleaved3(du8, rows[k] + 3 * i, r8, g8, b8);
      const auto w = hn::Set(d, static_cast<int16_t>(weights[k]));
      auto add = [&](auto acc, auto half8) {
        return hn::Add(acc, hn::MulFixedPoint15(hn::ShiftLeft<7>(hn::PromoteTo(d, half8)), w));
      };
      r0 = add(r0, hn::LowerHalf(dh8, r8));
      g0 = add(g0, hn::LowerHalf(dh8, g8));
      b0 = add(b0, hn::LowerHalf(dh8, b8));
      r1 = add(r1, hn::UpperHalf(dh8, r8));
      g1 = add(g1, hn::UpperHalf(dh8, g8));
      b1 = add(b1, hn::UpperHalf(dh8, b8));
    }
    hn::StoreU(r0, d, pr + i);
    hn::StoreU(g0, d, pg + i);
    hn::StoreU(b0, d, pb + i);
    hn::StoreU(r1, d, pr + i + n);
    hn::StoreU(g1, d, pg + i + n);
    hn::StoreU(b1, d, pb + i + n);
  }
#endif
}

// Fills the horizontal step's tables for this target's vector width;
// returns whether every block reads one tap pair from one vector (the
// bilinear case, shrinking by at most 2x).
bool plan_pairs(const KernelJob& j) {
  const size_t n = hn::Lanes(D32());
  const FixedAxis& ax = *j.x;
  const int pairs = ax.taps / 2;
  const size_t blocks = static_cast<size_t>(ax.padded) / n;
  bool simple = pairs == 1;
  for (size_t blk = 0; blk < blocks; ++blk) {
    int32_t base = INT32_MAX, top = 0;
    for (size_t l = 0; l < n; ++l) {
      const int32_t e = ax.start[blk * n + l] - ax.lo;
      base = std::min(base, e >> 1);
      top = std::max(top, (e + 2 * (pairs - 1)) >> 1);
    }
    j.block_base[blk] = base;
    j.block_vectors[blk] = static_cast<int32_t>((top - base) / static_cast<int32_t>(n)) + 1;
    simple = simple && j.block_vectors[blk] == 1;
    for (int p = 0; p < pairs; ++p) {
      for (size_t l = 0; l < n; ++l) {
        const int32_t e = ax.start[blk * n + l] - ax.lo + 2 * p;
        const size_t at = (blk * static_cast<size_t>(pairs) + static_cast<size_t>(p)) * n + l;
        j.pair_index[at] = (e >> 1) - base;
        j.pair_odd[at] = (e & 1) ? -1 : 0;
        const size_t o = blk * n + l, stride = static_cast<size_t>(ax.padded);
        const int32_t w0 = ax.weight[2 * static_cast<size_t>(p) * stride + o];
        const int32_t w1 = ax.weight[(2 * static_cast<size_t>(p) + 1) * stride + o];
        j.pair_weight[at] = static_cast<int32_t>((static_cast<uint32_t>(w0) & 0xffffu) |
                                                 (static_cast<uint32_t>(w1) << 16));
      }
    }
  }
  return simple;
}

// Beyond this many vectors a block's pairs are gathered instead of looked up
// in every vector.
constexpr int kMaxLookupVectors = 4;

// One tap pair of a block from one plane: vectors of E and O from `base`.
HWY_INLINE V32 lookup_pair(const int16_t* base, int vectors, V32 idx, hn::Mask<D32> is_odd) {
  const D32 d;
  const size_t n = hn::Lanes(d);
  if (vectors == 1) {
    const auto lanes = hn::IndicesFromVec(d, idx);
    const V32 e = hn::LoadU(d, reinterpret_cast<const int32_t*>(base));
    const V32 o = hn::LoadU(d, reinterpret_cast<const int32_t*>(base + 1));
    return hn::IfThenElse(is_odd, hn::TableLookupLanes(o, lanes), hn::TableLookupLanes(e, lanes));
  }
  if (vectors > kMaxLookupVectors) {
    // A block spanning many vectors (a shrink by a large factor: a 35,555
    // pixel wide row to 64 took 100 ms, quadratic in the factor; found by
    // crop_decode_fuzz as a timeout): gather each lane's pair straight from
    // its byte offset, 4 bytes per pair plus 2 for an odd start. The same
    // 32 bits as the lookup below, so the same bytes out.
    const V32 offsets =
        hn::Add(hn::ShiftLeft<2>(idx), hn::IfThenElseZero(is_odd, hn::Set(d, int32_t{2})));
    return hn::GatherOffset(d, reinterpret_cast<const int32_t*>(base), offsets);
  }
  const auto lanes = hn::IndicesFromVec(d, hn::And(idx, hn::Set(d, static_cast<int32_t>(n - 1))));
  V32 pair = hn::Zero(d);
  for (int v = 0; v < vectors; ++v) {
    const int16_t* at = base + 2 * n * static_cast<size_t>(v);
    const V32 e = hn::LoadU(d, reinterpret_cast<const int32_t*>(at));
    const V32 o = hn::LoadU(d, reinterpret_cast<const int32_t*>(at + 1));
    const V32 got =
        hn::IfThenElse(is_odd, hn::TableLookupLanes(o, lanes), hn::TableLookupLanes(e, lanes));
    const V32 lo = hn::Set(d, static_cast<int32_t>(n) * v);
    const auto here = hn::And(idx > hn::Sub(lo, hn::Set(d, 1)),
                              idx < hn::Add(lo, hn::Set(d, static_cast<int32_t>(n))));
    pair = hn::IfThenElse(here, got, pair);
  }
  return pair;
}

// acc += the pair's two 16-bit values times its two 16-bit weights. On x86
// that is one pmaddwd, which Highway 1.0 gives as ReorderWidenMulAccumulate
// (its "reorder" leaves other targets free to pair lanes differently, so
// they spell the products out; the sums are the same integers).
HWY_INLINE V32 multiply_pair(V32 acc, V32 pair, V32 weights) {
  const D32 d;
#if HWY_ARCH_X86 && (HWY_TARGET & (HWY_SSSE3 | HWY_SSE4 | HWY_AVX2 | HWY_AVX3 | HWY_AVX3_DL))
  const hn::Repartition<int16_t, D32> d16;
  V32 unused = hn::Zero(d);
  return hn::ReorderWidenMulAccumulate(d, hn::BitCast(d16, pair), hn::BitCast(d16, weights), acc,
                                       unused);
#else
  const V32 low16 = hn::Set(d, 0xffff);
  acc = hn::Add(acc, hn::Mul(hn::And(pair, low16), hn::And(weights, low16)));
  return hn::Add(acc, hn::Mul(hn::ShiftRight<16>(pair), hn::ShiftRight<16>(weights)));
#endif
}

// The sums of block blk's n consecutive output pixels, per channel: 7
// fractional bits of the planes times 14 of the weights.
// A tap pair is one 32-bit lane of a plane read at an even 16-bit value (E)
// or at an odd one (O); a table lookup gathers each lane's pair from the
// block's vectors of E and O.
template <bool kSimple>
HWY_INLINE void horizontal(const KernelJob& j, const int16_t* planes, size_t blk, V32* r, V32* g,
                           V32* b) {
  const D32 d;
  const size_t n = hn::Lanes(d);
  const FixedAxis& ax = *j.x;
  const int pairs = kSimple ? 1 : ax.taps / 2;
  const size_t first = 2 * static_cast<size_t>(j.block_base[blk]);
  const int16_t* pr = planes + first;
  const int16_t* pg = pr + j.plane_stride;
  const int16_t* pb = pg + j.plane_stride;
  const int vectors = kSimple ? 1 : j.block_vectors[blk];
  const int32_t* index = j.pair_index + blk * static_cast<size_t>(pairs) * n;
  const int32_t* odd = j.pair_odd + blk * static_cast<size_t>(pairs) * n;
  const int32_t* weight = j.pair_weight + blk * static_cast<size_t>(pairs) * n;
  V32 ar = hn::Zero(d), ag = ar, ab = ar;
  for (int p = 0; p < pairs; ++p) {
    const V32 idx = hn::LoadU(d, index + static_cast<size_t>(p) * n);
    const auto is_odd = hn::MaskFromVec(hn::LoadU(d, odd + static_cast<size_t>(p) * n));
    const V32 w = hn::LoadU(d, weight + static_cast<size_t>(p) * n);
    ar = multiply_pair(ar, lookup_pair(pr, vectors, idx, is_odd), w);
    ag = multiply_pair(ag, lookup_pair(pg, vectors, idx, is_odd), w);
    ab = multiply_pair(ab, lookup_pair(pb, vectors, idx, is_odd), w);
  }
  *r = ar;
  *g = ag;
  *b = ab;
}

// Round to nearest even into float16 bits (float_to_half's arithmetic).
HWY_INLINE V32 to_half(hn::Vec<hn::Rebind<float, D32>> f) {
  const D32 d;
  const hn::RebindToUnsigned<D32> du;
  const hn::Rebind<float, D32> df;
  const auto bits = hn::BitCast(du, f);
  const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 0x8000u));
  const auto mag = hn::And(bits, hn::Set(du, 0x7fffffffu));
  const V32 imag = hn::BitCast(d, mag);
  const auto nan_bits =
      hn::Or(hn::Set(du, 0x7e00u), hn::And(hn::ShiftRight<13>(mag), hn::Set(du, 0x3ffu)));
  const auto big = hn::IfThenElse(hn::RebindMask(du, imag > hn::Set(d, 0x7f800000)), nan_bits,
                                  hn::Set(du, 0x7c00u));
  constexpr uint32_t kMagic = ((127 - 15) + (23 - 10) + 1) << 23;
  const auto tiny =
      hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, mag), hn::BitCast(df, hn::Set(du, kMagic)))),
              hn::Set(du, kMagic));
  const auto odd = hn::And(hn::ShiftRight<13>(mag), hn::Set(du, 1u));
  const auto normal = hn::ShiftRight<13>(
      hn::Add(hn::Add(mag, hn::Set(du, (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu)), odd));
  auto h = hn::IfThenElse(hn::RebindMask(du, imag < hn::Set(d, 0x38800000)), tiny, normal);
  h = hn::IfThenElse(hn::RebindMask(du, imag > hn::Set(d, 0x477fffff)), big, h);
  return hn::BitCast(d, hn::Or(h, sign));
}

// Round to nearest even into bfloat16 bits (float_to_bfloat16's arithmetic).
HWY_INLINE V32 to_bfloat16(hn::Vec<hn::Rebind<float, D32>> f) {
  const D32 d;
  const hn::RebindToUnsigned<D32> du;
  const auto bits = hn::BitCast(du, f);
  const V32 imag = hn::BitCast(d, hn::And(bits, hn::Set(du, 0x7fffffffu)));
  const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(bits, hn::Set(du, 0x7fffu)), odd));
  const auto quiet = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
  return hn::BitCast(
      d, hn::IfThenElse(hn::RebindMask(du, imag > hn::Set(d, 0x7f800000)), quiet, rounded));
}

// The output values of one channel from its sums v (21 fractional bits):
// rounded to 8 bits, or normalised and converted.
template <DType kD, class DT>
HWY_INLINE hn::Vec<DT> convert(DT dt, V32 v, float scale, float bias) {
  const D32 d;
  if constexpr (kD == DType::kUint8) {
    const V32 u = hn::ShiftRight<21>(hn::Add(v, hn::Set(d, 1 << 20)));
    return hn::DemoteTo(dt, hn::Min(hn::Max(u, hn::Zero(d)), hn::Set(d, 255)));
  } else {
    const hn::Rebind<float, D32> df;
    const auto f = hn::Add(hn::Mul(hn::ConvertTo(df, v), hn::Set(df, scale)), hn::Set(df, bias));
    if constexpr (kD == DType::kFloat32) {
      return f;
    } else if constexpr (kD == DType::kFloat16) {
#if HWY_ARCH_X86 && (HWY_TARGET & (HWY_AVX2 | HWY_AVX3 | HWY_AVX3_DL))
      // F16C's conversion rounds to nearest even as to_half does (the
      // cross-target test holds them to the same bytes).
      return hn::BitCast(dt, hn::DemoteTo(hn::Rebind<hwy::float16_t, D32>(), f));
#else
      return hn::DemoteTo(dt, to_half(f));
#endif
    } else {
      return hn::DemoteTo(dt, to_bfloat16(f));
    }
  }
}

template <DType kD>
using Lane = std::conditional_t<kD == DType::kUint8, uint8_t,
                                std::conditional_t<kD == DType::kFloat32, float, uint16_t>>;

// Stores n values of each channel at output pixel (x, y), or the first
// `valid` of them through a staging buffer at the row's end.
template <DType kD, Layout kL>
HWY_INLINE void emit(const KernelJob& j, V32 r, V32 g, V32 b, size_t x, int y, size_t valid) {
  using T = Lane<kD>;
  const hn::Rebind<T, D32> dt;
  const auto cr = convert<kD>(dt, r, j.scale[0], j.bias[0]);
  const auto cg = convert<kD>(dt, g, j.scale[1], j.bias[1]);
  const auto cb = convert<kD>(dt, b, j.scale[2], j.bias[2]);
  T* out = reinterpret_cast<T*>(j.dst);
  const size_t pixel = static_cast<size_t>(y) * static_cast<size_t>(j.width) + x;
  const size_t plane = static_cast<size_t>(j.width) * static_cast<size_t>(j.height);
  if (valid == hn::Lanes(dt)) {
    if constexpr (kL == Layout::kNHWC) {
      hn::StoreInterleaved3(cr, cg, cb, dt, out + 3 * pixel);
    } else if (kD == DType::kFloat32 && j.stream) {
      hn::Stream(cr, dt, out + pixel);
      hn::Stream(cg, dt, out + plane + pixel);
      hn::Stream(cb, dt, out + 2 * plane + pixel);
    } else {
      hn::StoreU(cr, dt, out + pixel);
      hn::StoreU(cg, dt, out + plane + pixel);
      hn::StoreU(cb, dt, out + 2 * plane + pixel);
    }
    return;
  }
  constexpr size_t kLanes = hn::MaxLanes(decltype(dt)());
  HWY_ALIGN T staged[3 * kLanes];
  if constexpr (kL == Layout::kNHWC) {
    hn::StoreInterleaved3(cr, cg, cb, dt, staged);
    std::memcpy(out + 3 * pixel, staged, 3 * valid * sizeof(T));
  } else {
    hn::StoreU(cr, dt, staged);
    hn::StoreU(cg, dt, staged + kLanes);
    hn::StoreU(cb, dt, staged + 2 * kLanes);
    for (int k = 0; k < 3; ++k) {
      std::memcpy(out + k * plane + pixel, staged + k * kLanes, valid * sizeof(T));
    }
  }
}

template <DType kD, Layout kL>
void run_typed(const KernelJob& j) {
  const D32 d;
  const size_t n = hn::Lanes(d);
  const size_t width = static_cast<size_t>(j.width);
  const int16_t* planes = reinterpret_cast<const int16_t*>(j.planes);
  const bool simple = plan_pairs(j);
  for (int y = 0; y < j.height; ++y) {
    vertical(j, y);
    for (size_t x = 0, blk = 0; x < width; x += n, ++blk) {
      V32 r, g, b;
      if (simple) {
        horizontal<true>(j, planes, blk, &r, &g, &b);
      } else {
        horizontal<false>(j, planes, blk, &r, &g, &b);
      }
      emit<kD, kL>(j, r, g, b, x, y, std::min(n, width - x));
    }
  }
}

template <DType kD>
void run_layout(const KernelJob& j) {
  if (j.layout == Layout::kNHWC) return run_typed<kD, Layout::kNHWC>(j);
  run_typed<kD, Layout::kNCHW>(j);
}

// Returns Lanes(D16), the vertical step's unit, so the caller sizes the
// planes; runs when j.dst is set.
size_t RunKernel(const KernelJob& j) {
  if (j.dst == nullptr) return hn::Lanes(D16());
  switch (j.dtype) {
    case DType::kUint8: run_layout<DType::kUint8>(j); break;
    case DType::kFloat32: run_layout<DType::kFloat32>(j); break;
    case DType::kFloat16: run_layout<DType::kFloat16>(j); break;
    case DType::kBFloat16: run_layout<DType::kBFloat16>(j); break;
  }
  return hn::Lanes(D16());
}

}  // namespace HWY_NAMESPACE
}  // namespace sluice::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace sluice::detail {

HWY_EXPORT(RunKernel);

namespace {

// Per thread, grown to the largest sample seen and then reused: the kernel
// allocates nothing once a worker has met its largest window.
struct Scratch {
  FixedSample plan;
  std::vector<int32_t> block_base, block_vectors, pair_index, pair_odd, pair_weight;
  std::vector<uint16_t> planes;
  std::vector<uint8_t> tail;
  std::vector<const uint8_t*> rows;
  std::vector<int32_t> row_weights;
};

}  // namespace

Status write_sample_fixed(const DecodedWindow& src, bool flip, const SampleSpec& spec, void* dst) {
  if (dst == nullptr) return invalid_argument_error("null output");
  thread_local Scratch s;
  SLUICE_RETURN_IF_ERROR(plan_fixed_sample(src, flip, spec, &s.plan));
  const FixedAxis& x = s.plan.x;
  const FixedAxis& y = s.plan.y;
  KernelJob j;
  const size_t n = HWY_DYNAMIC_DISPATCH(RunKernel)(j);
  const size_t columns = static_cast<size_t>(x.hi - x.lo + 2);
  // The horizontal step reads up to two vectors past a block's last pair.
  j.plane_stride = (columns + 2 * n - 1) / (2 * n) * (2 * n) + 4 * n + 4;
  s.planes.resize(3 * j.plane_stride);
  // A row's reads span at most `read` bytes from its first column.
  const size_t read = (columns + 2 * n - 1) / (2 * n) * (2 * n) * 3;
  const size_t keep = std::min(src.pixels.size(), read + kReadSlack);
  j.tail_start = src.pixels.size() - keep;
  s.tail.assign(keep + read + kReadSlack, 0);
  std::memcpy(s.tail.data(), src.pixels.data() + j.tail_start, keep);
  s.rows.resize(static_cast<size_t>(y.taps));
  s.row_weights.resize(static_cast<size_t>(y.taps));
  const size_t entries = static_cast<size_t>(x.padded) * static_cast<size_t>(x.taps / 2);
  s.block_base.resize(static_cast<size_t>(x.padded));
  s.block_vectors.resize(static_cast<size_t>(x.padded));
  s.pair_index.resize(entries);
  s.pair_odd.resize(entries);
  s.pair_weight.resize(entries);
  j.src = src.pixels.data();
  j.src_bytes = src.pixels.size();
  j.src_width = src.width;
  j.x = &x;
  j.y = &y;
  j.block_base = s.block_base.data();
  j.block_vectors = s.block_vectors.data();
  j.pair_index = s.pair_index.data();
  j.pair_odd = s.pair_odd.data();
  j.pair_weight = s.pair_weight.data();
  j.planes = s.planes.data();
  j.tail = s.tail.data();
  j.rows = s.rows.data();
  j.row_weights = s.row_weights.data();
  j.width = spec.width;
  j.height = spec.height;
  for (int c = 0; c < 3; ++c) {
    j.scale[c] = s.plan.scale[c] * 0x1p-21f;  // the sums carry 21 fractional bits
    j.bias[c] = s.plan.bias[c];
  }
  j.dtype = spec.dtype;
  j.layout = spec.layout;
  j.dst = static_cast<uint8_t*>(dst);
  const size_t plane_bytes = static_cast<size_t>(spec.width) * spec.height * sizeof(float);
  j.stream = spec.dtype == DType::kFloat32 && spec.layout == Layout::kNCHW &&
             reinterpret_cast<uintptr_t>(dst) % 64 == 0 && (spec.width * sizeof(float)) % 64 == 0 &&
             plane_bytes % 64 == 0;
  HWY_DYNAMIC_DISPATCH(RunKernel)(j);
  // Non-temporal stores are not ordered with the stores that publish the
  // sample to another thread: fence them first.
  if (j.stream) hwy::FlushStream();
  return ok_status();
}

std::vector<std::string> resample_targets() {
  std::vector<std::string> names;
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) names.emplace_back(hwy::TargetName(t));
  return names;
}

Status force_resample_target(const std::string& name) {
  hwy::SetSupportedTargetsForTest(0);
  if (name.empty()) return ok_status();
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    if (name == hwy::TargetName(t)) {
      hwy::SetSupportedTargetsForTest(t);
      return ok_status();
    }
  }
  return invalid_argument_error("SIMD target '" + name + "' is not built or not supported here");
}

}  // namespace sluice::detail
#endif
