// The per-sample CPU work of the input pipeline: choosing the augmentation,
// decoding only what it needs, and writing the result straight into a batch
// slot. Compute apart from plumbing (as DALI's kernels): these are pure
// functions and per-thread objects; the pipeline (src/pipeline) adapts them.
//
// Per sample, in order:
//   1. plan_augment()      crop window (full-resolution source pixels) + flip
//   2. choose_scale_denom() the smallest JPEG DCT scale in {1,2,4,8} that
//                          still gives at least the output's pixels
//   3. CropDecoder::decode() decodes just that window at that scale
//   4. write_sample()      resize + flip + normalise + dtype + layout, once,
//                          into the caller's memory
//
// Thread safety: functions are reentrant. A CropDecoder is owned by one
// thread (it keeps libjpeg/libspng state and scratch between calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "sluice/crop_window.h"
#include "sluice/image.h"
#include "sluice/random.h"
#include "sluice/status.h"

namespace sluice {

enum class AugmentMode {
  kTrain,   // RandomResizedCrop (torchvision semantics) + horizontal flip
  kEval,    // resize the shorter side to size/0.875, centre crop size x size
  kResize,  // plain resize of the whole image to size x size
};

struct RandomResizedCropParams {
  double scale_min = 0.08, scale_max = 1.0;             // share of the source area
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;  // width / height
  int attempts = 10;                                    // then the centre fallback
  friend bool operator==(const RandomResizedCropParams&, const RandomResizedCropParams&) = default;
};

// torchvision.transforms.RandomResizedCrop.get_params, exactly: up to
// `attempts` tries of area ~ U(scale) and log-ratio ~ U(log ratio); a try
// fits when w <= width and h <= height (w = round(sqrt(area*ratio)), h =
// round(sqrt(area/ratio))), then x ~ U{0..width-w}, y ~ U{0..height-h}.
// Otherwise the centre crop with the ratio clamped into range. Rounding is
// Python's (half to even); the row is drawn before the column, as there.
// An empty image (width or height <= 0) gives an empty window.
CropWindow random_resized_crop(int width, int height, const RandomResizedCropParams& params,
                               CounterRng& rng);

// The source window that `eval` keeps: the centre square whose side is
// crop_fraction (0.875) of the shorter side, so that resizing it to
// size x size equals resizing the shorter side to size/0.875 and taking the
// centre size x size.
CropWindow center_crop_window(int width, int height, double crop_fraction = 0.875);

struct AugmentPlan {
  CropWindow crop;  // full-resolution source coordinates
  bool flip = false;
};

// Everything random about one sample, drawn from `rng` (keyed by the
// pipeline from seed, epoch and sample id).
AugmentPlan plan_augment(AugmentMode mode, int width, int height, CounterRng& rng,
                         const RandomResizedCropParams& params = {}, double flip_probability = 0.5);

// The largest denominator d in {1, 2, 4, 8} such that the crop decoded at
// 1/d is still at least out_width x out_height (so downscaling, never
// upscaling, remains): crop.width >= d * out_width and likewise for height.
// libjpeg-turbo has SIMD IDCTs only at these scales.
int choose_scale_denom(const CropWindow& crop, int out_width, int out_height);

// Pixels decoded from a window of an image, plus where the requested crop
// lies inside them (a decoded window is aligned to iMCU boundaries, so it
// may be larger; coordinates are in this buffer's pixels, fractional
// because of the DCT scale).
struct DecodedWindow {
  std::vector<uint8_t> pixels;  // RGB, rows packed; capacity reused
  int width = 0, height = 0;
  double crop_x = 0, crop_y = 0, crop_width = 0, crop_height = 0;
  int scale_denom = 1;
};

// Decodes crop windows of JPEGs (libjpeg: jpeg_crop_scanline for columns,
// jpeg_skip_scanlines for rows above, stops after the crop's last row) and
// PNGs (whole image, then the window). Grayscale and CMYK/YCCK become RGB.
// Corrupt data fails with kDataLoss as in image.h, but only damage the
// decode reaches: a baseline JPEG is read down to the crop's last row, so a
// truncation or corruption below it goes unseen (check_image at convert
// time is what proves a file whole). Progressive JPEGs are read whole.
// The window's pixels in the crop equal decode_image's at the same scale
// (the decoder decodes a margin so libjpeg's cropped-edge chroma upsampling
// stays outside the crop). A PNG window is the whole image, with the crop
// as its rectangle. kInvalidArgument for a crop not inside the image or a
// bad scale_denom; kResourceExhausted above max_pixels (checked before any
// pixel memory); kUnimplemented as decode_image.
class CropDecoder {
 public:
  CropDecoder();
  ~CropDecoder();
  CropDecoder(const CropDecoder&) = delete;
  CropDecoder& operator=(const CropDecoder&) = delete;

  // `crop` in full-resolution coordinates; `scale_denom` for JPEG only
  // (PNG always decodes at full size). `info` from probe_image.
  Status decode(std::string_view bytes, const ImageInfo& info, const CropWindow& crop,
                int scale_denom, DecodedWindow* out, uint64_t max_pixels = kDefaultMaxPixels);

  // Decodes every pixel at full size (the "ceiling" benchmark: what a plain
  // loader pays). Same error rules.
  Status decode_full(std::string_view bytes, const ImageInfo& info, DecodedWindow* out,
                     uint64_t max_pixels = kDefaultMaxPixels);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

enum class DType : uint8_t { kUint8, kFloat32, kFloat16, kBFloat16 };
enum class Layout : uint8_t { kNHWC, kNCHW };

// "uint8", "float32", "float16", "bfloat16"; "NHWC", "NCHW".
std::string_view dtype_name(DType dtype);
Result<DType> parse_dtype(std::string_view name);
std::string_view layout_name(Layout layout);
Result<Layout> parse_layout(std::string_view name);
size_t dtype_size(DType dtype);

// What one sample looks like in a batch.
struct SampleSpec {
  int width = 224, height = 224;
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;
  // Per channel (RGB), on the 0..1 scale: out = (pixel/255 - mean) / std.
  // Ignored for kUint8, which stores the resized pixels unchanged.
  float mean[3] = {0.485f, 0.456f, 0.406f};
  float std[3] = {0.229f, 0.224f, 0.225f};
  friend bool operator==(const SampleSpec&, const SampleSpec&) = default;
};

// Bytes one sample occupies: width * height * 3 * dtype_size.
size_t sample_bytes(const SampleSpec& spec);

// The fused kernel: resizes the window's crop rectangle to spec.width x
// spec.height, flips horizontally if asked, normalises, converts (float16 and
// bfloat16 round to nearest even) and writes one sample in spec.layout to
// `dst` (sample_bytes(spec) bytes, any alignment).
//
// The fast path users run: the exact fractional rectangle resampled with
// write_sample_precise's filter in fixed point (src/image/resample_kernel.h
// states the arithmetic), SIMD through Google Highway on the best target
// the CPU has. The bytes are the same on every CPU and target; against
// write_sample_precise the difference is at most about 0.015 on the 0..255
// scale for bilinear (the tests state the bounds). uint8 stores the
// resampled value rounded, half up. `scratch` is not used (the kernel keeps
// per-thread buffers, grown to the largest window and then reused).
// kInvalidArgument for null pointers, an empty spec, or a rectangle that is
// not inside the window.
Status write_sample(const DecodedWindow& src, bool flip, const SampleSpec& spec, void* dst,
                    std::vector<float>* scratch);

// The reference: the same operation in float with the exact fractional
// rectangle. Per axis the filter is bilinear with half-pixel centres
// (align_corners = False) while shrinking by at most 2x or enlarging, and a
// box filter over each output pixel's source footprint (area averaging, as
// cv::INTER_AREA) beyond 2x; the two coincide at 2x. Samples are clamped to
// the pixels the rectangle touches. Slower (no SIMD): for tests and for
// checking the GPU kernels.
Status write_sample_precise(const DecodedWindow& src, bool flip, const SampleSpec& spec, void* dst,
                            std::vector<float>* scratch);

// Conversions used by write_sample, exposed for tests and the GPU reference.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace sluice
