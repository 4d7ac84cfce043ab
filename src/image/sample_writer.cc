// write_sample: resize + flip + normalise + dtype + layout in one pass over
// the output, and the float16/bfloat16 conversions it uses.
//
// The resize is separable. Each axis gets a table of taps (a start index
// and a fixed count of weights per output position): bilinear with
// half-pixel centres (align_corners=False, as torchvision and PIL) while the
// axis shrinks by at most 2x, box-filter area averaging over each output
// pixel's source footprint beyond that (as cv::INTER_AREA), because
// bilinear would then skip source pixels and alias. The two agree at
// exactly 2x. Indices are clamped into the crop's pixels, which is edge
// replication, as resizing a cut-out crop does.
//
// Rows are filtered horizontally on demand into a ring of as many rows as
// the vertical filter has taps: output rows need non-decreasing source rows,
// so a row is computed once and the ring stays small enough for L1/L2
// whatever the window size.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "base/enum_names.h"
#include "image/fast_resize.h"
#include "image/resample_kernel.h"
#include "image/sample_kernel.h"
#include "sluice/image_ops.h"

namespace sluice {

// ---- dtype / layout names ----

namespace {
constexpr detail::EnumName<DType> kDTypes[] = {{DType::kUint8, "uint8"},
                                               {DType::kFloat32, "float32"},
                                               {DType::kFloat16, "float16"},
                                               {DType::kBFloat16, "bfloat16"}};
constexpr detail::EnumName<Layout> kLayouts[] = {{Layout::kNHWC, "NHWC"}, {Layout::kNCHW, "NCHW"}};
}  // namespace

std::string_view dtype_name(DType dtype) {
  return detail::enum_name(dtype, kDTypes, "unknown");
}

Result<DType> parse_dtype(std::string_view name) {
  return detail::parse_enum_name(name, kDTypes, "unknown dtype");
}

std::string_view layout_name(Layout layout) {
  return detail::enum_name(layout, kLayouts);
}

Result<Layout> parse_layout(std::string_view name) {
  return detail::parse_enum_name(name, kLayouts, "unknown layout");
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kUint8: return 1;
    case DType::kFloat32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
  }
  return 0;
}

size_t sample_bytes(const SampleSpec& spec) {
  if (spec.width <= 0 || spec.height <= 0) return 0;
  return static_cast<size_t>(spec.width) * static_cast<size_t>(spec.height) * 3 *
         dtype_size(spec.dtype);
}

// ---- conversions ----

// F. Giesen's float_to_half_fast3_rtne: exact round to nearest even with
// integer arithmetic for normal results, and one float addition that lets
// the FPU round subnormal results (the default rounding mode is RNE; the
// library never changes it).
uint16_t float_to_half(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  uint32_t h;
  if (u >= 0x47800000u) {  // >= 65536: infinity, NaN, or overflow
    // NaN keeps its top payload bits and becomes quiet, so a half NaN makes
    // the round trip through float unchanged when it was already quiet.
    h = u > 0x7f800000u ? 0x7e00u | ((u >> 13) & 0x3ffu) : 0x7c00u;
  } else if (u < 0x38800000u) {  // below 2^-14: subnormal or zero half
    constexpr uint32_t kDenormMagic = ((127 - 15) + (23 - 10) + 1) << 23;  // 0.5f
    const float sum = std::bit_cast<float>(u) + std::bit_cast<float>(kDenormMagic);
    h = std::bit_cast<uint32_t>(sum) - kDenormMagic;
  } else {
    const uint32_t mant_odd = (u >> 13) & 1u;
    // Rebias the exponent and add 0x0fff (+1 if odd): carries propagate into
    // the exponent, so 65520 and up round to infinity as they should.
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mant_odd;
    h = u >> 13;
  }
  return static_cast<uint16_t>(h | sign);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float mag = static_cast<float>(mant) * 0x1p-24f;
    return std::bit_cast<float>(std::bit_cast<uint32_t>(mag) | sign);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_bfloat16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  // Rounding a NaN could carry into the exponent and make it infinity.
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float bfloat16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// ---- the resampler ----

namespace {

// One axis of the resize: output position o reads `taps` consecutive source
// pixels from start[o] with weights weight[o * taps ...]. Both live in the
// caller's scratch (start indices stored as the bits of a float: they are
// small non-negative ints, never NaN patterns, and are only copied).
struct AxisFilter {
  int taps = 0;
  int count = 0;
  float* start = nullptr;   // count entries
  float* weight = nullptr;  // count * taps entries
  int start_at(int o) const { return std::bit_cast<int32_t>(start[o]); }
};

struct AxisPlan {
  double crop_start = 0, crop_size = 0;
  int out = 0;
  int lo = 0, hi = 0;  // the source pixels the crop touches, clamped
  int taps = 0;
  bool area = false;
};

// std::floor and std::ceil to int without a libm call (x86-64's baseline
// has no rounding instruction); exact for |x| < 2^31, as coordinates are.
int floor_int(double x) {
  const int i = static_cast<int>(x);
  return i > x ? i - 1 : i;
}

int ceil_int(double x) {
  const int i = static_cast<int>(x);
  return i < x ? i + 1 : i;
}

AxisPlan plan_axis(double crop_start, double crop_size, int src_size, int out) {
  AxisPlan p;
  p.crop_start = crop_start;
  p.crop_size = crop_size;
  p.out = out;
  p.lo = std::clamp(static_cast<int>(std::floor(crop_start)), 0, src_size - 1);
  p.hi = std::clamp(static_cast<int>(std::ceil(crop_start + crop_size)) - 1, p.lo, src_size - 1);
  const double scale = crop_size / out;
  p.area = scale > 2.0;
  const int max_taps = p.area ? static_cast<int>(std::ceil(scale)) + 2 : 2;
  p.taps = std::min(max_taps, p.hi - p.lo + 1);
  return p;
}

// Both axes of the window's crop rectangle, clamped into the window.
std::pair<AxisPlan, AxisPlan> plan_axes(const DecodedWindow& src, const SampleSpec& spec) {
  const double cx = std::max(0.0, src.crop_x), cy = std::max(0.0, src.crop_y);
  return {plan_axis(cx, std::min(src.crop_width, src.width - cx), src.width, spec.width),
          plan_axis(cy, std::min(src.crop_height, src.height - cy), src.height, spec.height)};
}

// Adds weight w for source pixel i (clamped) to output o's row of weights.
void add_tap(const AxisPlan& p, int start, int i, float w, float* weights) {
  weights[std::clamp(i, p.lo, p.hi) - start] += w;
}

void build_filter(const AxisPlan& p, AxisFilter* f) {
  f->taps = p.taps;
  f->count = p.out;
  const double scale = p.crop_size / p.out;
  for (int o = 0; o < p.out; ++o) {
    float* w = f->weight + static_cast<size_t>(o) * p.taps;
    if (p.area) {
      std::fill(w, w + p.taps, 0.0f);
      const double a = p.crop_start + o * scale;
      const double b = a + scale;
      const int first = floor_int(a);
      const int last = ceil_int(b) - 1;
      const int start = std::min(std::clamp(first, p.lo, p.hi), p.hi - p.taps + 1);
      for (int i = first; i <= last; ++i) {
        const double overlap = std::min(b, i + 1.0) - std::max(a, static_cast<double>(i));
        if (overlap > 0) add_tap(p, start, i, static_cast<float>(overlap / scale), w);
      }
      f->start[o] = std::bit_cast<float>(static_cast<int32_t>(start));
    } else {
      const double s = p.crop_start + (o + 0.5) * scale - 0.5;
      const int i0 = floor_int(s);
      const float t = static_cast<float>(s - i0);
      const int start = std::min(std::clamp(i0, p.lo, p.hi), p.hi - p.taps + 1);
      // add_tap's sums written directly (the same float operations): adding
      // into just-zeroed memory stalled on store forwarding, half the time
      // of planning a sample.
      const int c0 = std::clamp(i0, p.lo, p.hi) - start;
      const int c1 = std::clamp(i0 + 1, p.lo, p.hi) - start;
      for (int k = 0; k < p.taps; ++k) {
        w[k] = c0 == k ? (c1 == k ? (1.0f - t) + t : 1.0f - t) : (c1 == k ? t : 0.0f);
      }
      f->start[o] = std::bit_cast<float>(static_cast<int32_t>(start));
    }
  }
}

// One source row (RGB bytes) filtered to out_width RGB floats.
template <int kTaps>
void filter_row_fixed(const uint8_t* src, const AxisFilter& f, float* out) {
  for (int o = 0; o < f.count; ++o) {
    const uint8_t* p = src + static_cast<size_t>(f.start_at(o)) * 3;
    const float* w = f.weight + static_cast<size_t>(o) * kTaps;
    float r = 0, g = 0, b = 0;
    for (int k = 0; k < kTaps; ++k) {
      r += w[k] * p[3 * k];
      g += w[k] * p[3 * k + 1];
      b += w[k] * p[3 * k + 2];
    }
    out[3 * o] = r;
    out[3 * o + 1] = g;
    out[3 * o + 2] = b;
  }
}

void filter_row(const uint8_t* src, const AxisFilter& f, float* out) {
  switch (f.taps) {
    case 1: return filter_row_fixed<1>(src, f, out);
    case 2: return filter_row_fixed<2>(src, f, out);
    case 3: return filter_row_fixed<3>(src, f, out);
    case 4: return filter_row_fixed<4>(src, f, out);
    default: break;
  }
  for (int o = 0; o < f.count; ++o) {
    const uint8_t* p = src + static_cast<size_t>(f.start_at(o)) * 3;
    const float* w = f.weight + static_cast<size_t>(o) * f.taps;
    float r = 0, g = 0, b = 0;
    for (int k = 0; k < f.taps; ++k) {
      r += w[k] * p[3 * k];
      g += w[k] * p[3 * k + 1];
      b += w[k] * p[3 * k + 2];
    }
    out[3 * o] = r;
    out[3 * o + 1] = g;
    out[3 * o + 2] = b;
  }
}

// Per channel out = v * scale + bias (v on the 0..255 scale).
struct Affine {
  float scale[3];
  float bias[3];
};

template <DType kD>
inline void store(uint8_t* dst, size_t index, float v) {
  if constexpr (kD == DType::kUint8) {
    dst[index] = static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f) + 0.5f);
  } else if constexpr (kD == DType::kFloat32) {
    std::memcpy(dst + 4 * index, &v, 4);
  } else {
    const uint16_t h = kD == DType::kFloat16 ? float_to_half(v) : float_to_bfloat16(v);
    std::memcpy(dst + 2 * index, &h, 2);
  }
}

// Writes output row y from `row` (out_width RGB floats): flip, affine,
// convert, lay out. Every value of the row is written exactly once.
template <DType kD, Layout kL>
void emit_row(const float* row, int width, int height, int y, bool flip, const Affine& aff,
              uint8_t* dst) {
  const size_t plane = static_cast<size_t>(width) * height;
  const size_t row_start = static_cast<size_t>(y) * width;
  for (int x = 0; x < width; ++x) {
    const float* px = row + 3 * static_cast<size_t>(flip ? width - 1 - x : x);
    for (int c = 0; c < 3; ++c) {
      const float v = px[c] * aff.scale[c] + aff.bias[c];
      const size_t index =
          kL == Layout::kNHWC ? (row_start + x) * 3 + c : c * plane + row_start + x;
      store<kD>(dst, index, v);
    }
  }
}

using EmitFn = void (*)(const float*, int, int, int, bool, const Affine&, uint8_t*);

template <DType kD>
EmitFn emit_for_layout(Layout layout) {
  return layout == Layout::kNHWC ? emit_row<kD, Layout::kNHWC> : emit_row<kD, Layout::kNCHW>;
}

EmitFn emit_for(const SampleSpec& spec) {
  switch (spec.dtype) {
    case DType::kUint8: return emit_for_layout<DType::kUint8>(spec.layout);
    case DType::kFloat32: return emit_for_layout<DType::kFloat32>(spec.layout);
    case DType::kFloat16: return emit_for_layout<DType::kFloat16>(spec.layout);
    case DType::kBFloat16: return emit_for_layout<DType::kBFloat16>(spec.layout);
  }
  return nullptr;
}

Affine affine_for(const SampleSpec& spec) {
  Affine a;
  for (int c = 0; c < 3; ++c) {
    if (spec.dtype == DType::kUint8) {
      a.scale[c] = 1.0f;
      a.bias[c] = 0.0f;
    } else {
      a.scale[c] = 1.0f / (255.0f * spec.std[c]);
      a.bias[c] = -spec.mean[c] / spec.std[c];
    }
  }
  return a;
}

// Rounding in the crop arithmetic (x / d - xoff) may leave the rectangle a
// hair outside the window; more than this is a caller's mistake.
constexpr double kCropSlack = 1e-6;

// The spec and the window's geometry (and its pixels, when they are here).
Status check_window(const DecodedWindow& src, const SampleSpec& spec, bool need_pixels = true) {
  if (spec.width <= 0 || spec.height <= 0) return invalid_argument_error("empty sample size");
  if (emit_for(spec) == nullptr) return invalid_argument_error("unknown dtype");
  if (spec.layout != Layout::kNHWC && spec.layout != Layout::kNCHW) {
    return invalid_argument_error("unknown layout");
  }
  if (src.width <= 0 || src.height <= 0 ||
      (need_pixels && src.pixels.size() < static_cast<size_t>(src.width) * src.height * 3)) {
    return invalid_argument_error("decoded window is empty or smaller than its size says");
  }
  const bool crop_ok = std::isfinite(src.crop_x) && std::isfinite(src.crop_y) &&
                       std::isfinite(src.crop_width) && std::isfinite(src.crop_height) &&
                       src.crop_width > 0 && src.crop_height > 0 && src.crop_x >= -kCropSlack &&
                       src.crop_y >= -kCropSlack &&
                       src.crop_x + src.crop_width <= src.width + kCropSlack &&
                       src.crop_y + src.crop_height <= src.height + kCropSlack;
  if (!crop_ok) return invalid_argument_error("crop rectangle is not inside the decoded window");
  return ok_status();
}

Status check_inputs(const DecodedWindow& src, const SampleSpec& spec, const void* dst,
                    const std::vector<float>* scratch) {
  if (dst == nullptr || scratch == nullptr) return invalid_argument_error("null output");
  return check_window(src, spec);
}

}  // namespace

namespace detail {

namespace {
AxisTable axis_table(const AxisPlan& p) {
  std::vector<float> buf(static_cast<size_t>(p.out) * (1 + p.taps));
  AxisFilter f{p.taps, p.out, buf.data(), buf.data() + p.out};
  build_filter(p, &f);
  AxisTable t;
  t.taps = p.taps;
  t.start.resize(static_cast<size_t>(p.out));
  for (int o = 0; o < p.out; ++o) t.start[static_cast<size_t>(o)] = f.start_at(o);
  t.weight.assign(buf.begin() + p.out, buf.end());
  return t;
}
}  // namespace

Status plan_sample_job(const DecodedWindow& src, bool flip, const SampleSpec& spec, void* dst,
                       SampleTables* tables, SampleJob* job) {
  if (dst == nullptr) return invalid_argument_error("null output");
  SLUICE_RETURN_IF_ERROR(check_window(src, spec, /*need_pixels=*/!src.pixels.empty()));
  if (tables == nullptr || job == nullptr) return invalid_argument_error("null tables or job");
  const auto [px, py] = plan_axes(src, spec);
  tables->x = axis_table(px);
  tables->y = axis_table(py);
  const Affine aff = affine_for(spec);
  SampleJob j;
  j.src = src.pixels.empty() ? nullptr : src.pixels.data();
  j.src_width = src.width;
  j.x_start = tables->x.start.data();
  j.x_weight = tables->x.weight.data();
  j.x_taps = tables->x.taps;
  j.y_start = tables->y.start.data();
  j.y_weight = tables->y.weight.data();
  j.y_taps = tables->y.taps;
  j.out_width = spec.width;
  j.out_height = spec.height;
  j.flip = flip;
  for (int c = 0; c < 3; ++c) {
    j.scale[c] = aff.scale[c];
    j.bias[c] = aff.bias[c];
  }
  j.dtype = spec.dtype == DType::kUint8     ? 0
            : spec.dtype == DType::kFloat32 ? 1
            : spec.dtype == DType::kFloat16 ? 2
                                            : 3;
  j.layout = spec.layout == Layout::kNHWC ? 1 : 0;
  j.dst = static_cast<uint8_t*>(dst);
  *job = j;
  return ok_status();
}

namespace {

// Horizontal weights are Q14 int32 factors; vertical ones are Q15 int16
// factors of MulFixedPoint15, so a weight of exactly 1 becomes 32767.
constexpr int kXWeightBits = 14;
constexpr int kYWeightBits = 15;
// Tables are padded to a multiple of this many outputs: the widest vector
// of int32 lanes any Highway target has here (AVX-512: 16) times four.
constexpr int kPadOutputs = 64;

// Quantises output o's float weights to `bits` by rounding their running
// sum: each weight moves by less than one unit, none turns negative, they
// sum to exactly 1 << bits, and the error of any run of taps stays within
// half a unit (so a long box filter of equal weights stays even).
void quantise(const float* w, int taps, int bits, int32_t* q, int stride) {
  // The float weights sum to one within float rounding; the last tap takes
  // what is left, so the fixed-point ones sum to exactly one.
  const double unit = 1 << bits;
  double run = 0;
  int32_t before = 0;
  for (int k = 0; k < taps; ++k) {
    run += w[k];
    const int32_t upto = k == taps - 1 ? (1 << bits) : static_cast<int32_t>(run * unit + 0.5);
    q[k * stride] = upto - before;
    before = upto;
  }
  if (bits == kYWeightBits) {
    for (int k = 0; k < taps; ++k) q[k * stride] = std::min(q[k * stride], 32767);
  }
}

void fixed_axis(const AxisPlan& p, bool reverse, bool vertical, FixedAxis* a) {
  thread_local std::vector<float> buf;
  buf.resize(static_cast<size_t>(p.out) * (1 + p.taps));
  AxisFilter f{p.taps, p.out, buf.data(), buf.data() + p.out};
  build_filter(p, &f);
  // The horizontal step reads taps in pairs: an odd count gets a zero tap.
  a->taps = vertical ? p.taps : (p.taps + 1) / 2 * 2;
  a->count = p.out;
  a->padded = vertical ? p.out : (p.out + kPadOutputs - 1) / kPadOutputs * kPadOutputs;
  a->lo = p.lo;
  a->hi = p.hi;
  a->start.assign(static_cast<size_t>(a->padded), 0);
  a->weight.assign(static_cast<size_t>(a->padded) * a->taps, 0);
  for (int o = 0; o < a->padded; ++o) {
    const int from = std::min(o, p.out - 1);
    const int src = reverse ? p.out - 1 - from : from;
    a->start[static_cast<size_t>(o)] = f.start_at(src);
    quantise(f.weight + static_cast<size_t>(src) * p.taps, p.taps,
             vertical ? kYWeightBits : kXWeightBits, a->weight.data() + o, a->padded);
  }
}

}  // namespace

Status plan_fixed_sample(const DecodedWindow& src, bool flip, const SampleSpec& spec,
                         FixedSample* plan) {
  SLUICE_RETURN_IF_ERROR(check_window(src, spec));
  const auto [px, py] = plan_axes(src, spec);
  fixed_axis(px, flip, /*vertical=*/false, &plan->x);
  fixed_axis(py, false, /*vertical=*/true, &plan->y);
  const Affine aff = affine_for(spec);
  for (int c = 0; c < 3; ++c) {
    plan->scale[c] = aff.scale[c];
    plan->bias[c] = aff.bias[c];
  }
  return ok_status();
}

}  // namespace detail

Status write_sample_precise(const DecodedWindow& src, bool flip, const SampleSpec& spec, void* dst,
                            std::vector<float>* scratch) {
  SLUICE_RETURN_IF_ERROR(check_inputs(src, spec, dst, scratch));
  const auto [px, py] = plan_axes(src, spec);
  const size_t out_w = static_cast<size_t>(spec.width);
  const size_t row_floats = out_w * 3;
  const size_t ring_rows = static_cast<size_t>(py.taps);
  // Scratch: x filter | y filter | ring of filtered rows | one output row.
  const size_t x_floats = out_w * (1 + px.taps);
  const size_t y_floats = static_cast<size_t>(spec.height) * (1 + py.taps);
  const size_t need = x_floats + y_floats + (ring_rows + 1) * row_floats;
  if (scratch->size() < need) scratch->resize(need);
  float* s = scratch->data();
  AxisFilter fx{px.taps, spec.width, s, s + out_w};
  s += x_floats;
  AxisFilter fy{py.taps, spec.height, s, s + spec.height};
  s += y_floats;
  float* ring = s;
  float* out_row = ring + ring_rows * row_floats;
  build_filter(px, &fx);
  build_filter(py, &fy);

  const EmitFn emit = emit_for(spec);
  const Affine aff = affine_for(spec);
  auto* out = static_cast<uint8_t*>(dst);
  const size_t src_row_bytes = static_cast<size_t>(src.width) * 3;
  int next_row = py.lo;  // the first source row not yet filtered
  for (int y = 0; y < spec.height; ++y) {
    const int start = fy.start_at(y);
    next_row = std::max(next_row, start);
    for (; next_row < start + fy.taps; ++next_row) {
      filter_row(src.pixels.data() + next_row * src_row_bytes, fx,
                 ring + (next_row % ring_rows) * row_floats);
    }
    const float* w = fy.weight + static_cast<size_t>(y) * fy.taps;
    const float* first = ring + (start % ring_rows) * row_floats;
    for (size_t i = 0; i < row_floats; ++i) out_row[i] = w[0] * first[i];
    for (int k = 1; k < fy.taps; ++k) {
      const float* r = ring + ((start + k) % ring_rows) * row_floats;
      for (size_t i = 0; i < row_floats; ++i) out_row[i] += w[k] * r[i];
    }
    emit(out_row, spec.width, spec.height, y, flip, aff, out);
  }
  return ok_status();
}

namespace {

// Output values for each of the 256 input levels of each channel, in the
// output dtype: normalise + convert become one lookup per value.
template <typename T>
struct Lut {
  T v[3][256];
};

template <typename T>
void fill_lut(const SampleSpec& spec, Lut<T>* lut) {
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 256; ++i) {
      if constexpr (std::is_same_v<T, uint8_t>) {
        lut->v[c][i] = static_cast<uint8_t>(i);
      } else {
        float f = (static_cast<float>(i) / 255.0f - spec.mean[c]) / spec.std[c];
        if constexpr (std::is_same_v<T, float>) {
          lut->v[c][i] = f;
        } else {
          lut->v[c][i] = spec.dtype == DType::kFloat16 ? float_to_half(f) : float_to_bfloat16(f);
        }
      }
    }
  }
}

// Writes the 8-bit interleaved image `rgb` (w x h) through the table, in
// the spec's layout, mirrored if `flip`. Each output value written once.
template <typename T>
void emit_lut(const uint8_t* rgb, int w, int h, bool flip, Layout layout, const Lut<T>& lut,
              void* dst) {
  T* out = static_cast<T*>(dst);
  const size_t plane = static_cast<size_t>(w) * h;
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = rgb + static_cast<size_t>(y) * w * 3;
    if (layout == Layout::kNHWC) {
      T* o = out + static_cast<size_t>(y) * w * 3;
      for (int x = 0; x < w; ++x) {
        const uint8_t* p = row + 3 * (flip ? w - 1 - x : x);
        o[0] = lut.v[0][p[0]];
        o[1] = lut.v[1][p[1]];
        o[2] = lut.v[2][p[2]];
        o += 3;
      }
    } else {
      T* r = out + static_cast<size_t>(y) * w;
      T* g = r + plane;
      T* b = g + plane;
      for (int x = 0; x < w; ++x) {
        const uint8_t* p = row + 3 * (flip ? w - 1 - x : x);
        r[x] = lut.v[0][p[0]];
        g[x] = lut.v[1][p[1]];
        b[x] = lut.v[2][p[2]];
      }
    }
  }
}

template <typename T>
void emit_with(const SampleSpec& spec, const uint8_t* rgb, bool flip, void* dst) {
  // A table per call costs 768 conversions (about a microsecond); caching
  // it per spec would save that at the price of shared state.
  Lut<T> lut;
  fill_lut(spec, &lut);
  emit_lut(rgb, spec.width, spec.height, flip, spec.layout, lut, dst);
}

}  // namespace

// The kernel before the integer one (8-bit OpenCV resize of the rounded
// rectangle, then a table per value), kept for the benchmark's side by side.
Status detail::write_sample_opencv(const DecodedWindow& src, bool flip, const SampleSpec& spec,
                                   void* dst, std::vector<float>* scratch) {
  SLUICE_RETURN_IF_ERROR(check_inputs(src, spec, dst, scratch));
  // Whole-pixel rectangle nearest to the fractional one, inside the window.
  int x0 = std::clamp(static_cast<int>(std::lround(src.crop_x)), 0, src.width - 1);
  int y0 = std::clamp(static_cast<int>(std::lround(src.crop_y)), 0, src.height - 1);
  int x1 =
      std::clamp(static_cast<int>(std::lround(src.crop_x + src.crop_width)), x0 + 1, src.width);
  int y1 =
      std::clamp(static_cast<int>(std::lround(src.crop_y + src.crop_height)), y0 + 1, src.height);
  const size_t bytes = static_cast<size_t>(spec.width) * spec.height * 3;
  const size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
  if (scratch->size() < floats) scratch->resize(floats);
  auto* resized = reinterpret_cast<uint8_t*>(scratch->data());
  SLUICE_RETURN_IF_ERROR(detail::resize_rgb8(src.pixels.data(), src.width, src.height, x0, y0,
                                             x1 - x0, y1 - y0, resized, spec.width, spec.height));
  switch (spec.dtype) {
    case DType::kUint8: emit_with<uint8_t>(spec, resized, flip, dst); break;
    case DType::kFloat32: emit_with<float>(spec, resized, flip, dst); break;
    case DType::kFloat16:
    case DType::kBFloat16: emit_with<uint16_t>(spec, resized, flip, dst); break;
  }
  return ok_status();
}

Status write_sample(const DecodedWindow& src, bool flip, const SampleSpec& spec, void* dst,
                    std::vector<float>* scratch) {
  if (scratch == nullptr) return invalid_argument_error("null output");
  return detail::write_sample_fixed(src, flip, spec, dst);  // checks the rest
}

}  // namespace sluice
