// Fuzzes what the pipeline does to each sample's bytes: probe_image, a crop
// window and DCT scale drawn from the input's tail (as random as the
// RandomResizedCrop the pipeline draws, including windows at the edges and
// of one pixel), CropDecoder::decode into a reused window, then the fused
// write_sample kernel into a sample of a drawn size, dtype and layout. Also
// decode_full, decode_image with its options, and convert's sequential
// rewrite (transcode_jpeg_baseline). JPEG and PNG alike.
#include <vector>

#include "sluice/image.h"
#include "sluice/image_ops.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::FuzzInput in(data, size);
  // Parameters first (from the tail), then the image is what is left.
  const int pick_x = static_cast<int>(in.take(0, 1 << 16));
  const int pick_y = static_cast<int>(in.take(0, 1 << 16));
  const int pick_w = static_cast<int>(in.take(0, 1 << 16));
  const int pick_h = static_cast<int>(in.take(0, 1 << 16));
  const int denom = 1 << in.take(0, 3);
  const bool flip = in.take_bool();
  sluice::SampleSpec spec;
  spec.width = static_cast<int>(in.take(1, 64));
  spec.height = static_cast<int>(in.take(1, 64));
  spec.dtype = static_cast<sluice::DType>(in.take(0, 3));
  spec.layout = in.take_bool() ? sluice::Layout::kNCHW : sluice::Layout::kNHWC;
  const std::string_view bytes = in.rest();

  // A small cap keeps a hostile header from making one run slow.
  constexpr uint64_t kMaxPixels = 4'000'000;
  const auto info = sluice::probe_image(bytes, kMaxPixels);
  if (!info.ok()) return 0;
  if (info->width <= 0 || info->height <= 0) __builtin_trap();

  // A window inside the image (x + width <= image width), any size from 1.
  sluice::CropWindow crop;
  crop.x = pick_x % info->width;
  crop.y = pick_y % info->height;
  crop.width = 1 + pick_w % (info->width - crop.x);
  crop.height = 1 + pick_h % (info->height - crop.y);

  static sluice::CropDecoder decoder;  // reused, as a worker reuses its own
  static sluice::DecodedWindow window;
  static std::vector<float> scratch;
  std::vector<uint8_t> sample(sluice::sample_bytes(spec));
  if (decoder.decode(bytes, *info, crop, denom, &window, kMaxPixels).ok()) {
    if (window.crop_x < 0 || window.crop_y < 0 || window.crop_width <= 0 ||
        window.crop_height <= 0 || window.crop_x + window.crop_width > window.width + 1e-6 ||
        window.crop_y + window.crop_height > window.height + 1e-6 ||
        window.pixels.size() < static_cast<size_t>(window.width) * window.height * 3) {
      __builtin_trap();
    }
    if (!sluice::write_sample(window, flip, spec, sample.data(), &scratch).ok()) __builtin_trap();
  }
  if (decoder.decode_full(bytes, *info, &window, kMaxPixels).ok()) {
    if (!sluice::write_sample(window, flip, spec, sample.data(), &scratch).ok()) __builtin_trap();
  }
  sluice::DecodeOptions options;
  options.scale_denom = denom;
  options.force_rgb = flip;
  options.max_pixels = kMaxPixels;
  const auto image = sluice::decode_image(bytes, options);
  if (image.ok() && image->pixels.size() != image->row_bytes() * image->height) __builtin_trap();

  // convert's lossless rewrite of a JPEG as sequential: when it succeeds,
  // the result decodes to the same pixels as the original.
  if (info->format == sluice::ImageFormat::kJpeg && bytes.size() < 256 * 1024) {
    const auto rewritten = sluice::transcode_jpeg_baseline(bytes, kMaxPixels);
    if (rewritten.ok() && image.ok()) {
      const auto again = sluice::decode_image(*rewritten, options);
      if (!again.ok() || again->pixels != image->pixels) __builtin_trap();
    }
  }
  return 0;
}
