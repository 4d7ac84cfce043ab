// Image headers, decoding, encoding and resizing on the CPU.
//
// JPEG goes through libjpeg-turbo, PNG through libspng, resizing through
// OpenCV's imgproc (single-threaded: sluice runs its own workers). These
// calls allocate their outputs; the pipeline's allocation-free crop decode
// builds on the same decoders later.
//
// Errors (Status codes):
//   kDataLoss           corrupt or truncated data (bad marker, bad CRC,
//                       premature end of the entropy-coded data)
//   kUnimplemented      well-formed but unsupported (12-bit or lossless
//                       JPEG, unknown format)
//   kResourceExhausted  more pixels than the limit (decompression bombs)
// Messages state the reason only; callers add the file or record name.
//
// Thread safety: all functions are reentrant; they share no state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice {

enum class ImageFormat : uint8_t { kUnknown, kJpeg, kPng };

// "jpeg", "png" or "unknown" (the values of the image/format feature).
std::string_view image_format_name(ImageFormat format);

// Default pixel-count limit: 100 megapixels (PIL warns at 89 MP). An image
// declaring more is refused before any pixel memory is allocated.
inline constexpr uint64_t kDefaultMaxPixels = 100'000'000;

// What the header of an encoded image says, read without decoding pixels.
struct ImageInfo {
  ImageFormat format = ImageFormat::kUnknown;
  int width = 0;
  int height = 0;
  int components = 0;  // JPEG: 1, 3 or 4; PNG: channels after expansion
  // PNG: a tRNS chunk (palette or single-colour transparency) before the
  // image data, which decoders that keep alpha expand to an alpha channel.
  bool transparency = false;
  int bit_depth = 8;
  bool progressive = false;  // JPEG progressive, or PNG Adam7 interlaced
  bool arithmetic = false;   // JPEG arithmetic coding
  bool lossless = false;     // JPEG SOF3 (lossless): not supported
  // JPEG: "4:4:4", "4:2:2", "4:2:0", "4:4:0", "4:1:1", "gray" or "other";
  // PNG: "" .
  std::string subsampling;
  // JPEG: each component's sampling factors "HxV", joined by commas, e.g.
  // "2x2,1x1,1x1" (what "other" above hides); PNG: "".
  std::string sampling_factors;
  // JPEG Adobe APP14 transform (-1 = no APP14 marker): with 4 components,
  // 2 means YCCK, otherwise CMYK.
  int adobe_transform = -1;
  // JPEG: n of the SOFn frame marker: 0 baseline, 1 extended sequential,
  // 2 progressive, 3 lossless, 9-11 their arithmetic-coded twins; 5-7 and
  // 13-15 (hierarchical) are reported but not decoded. PNG: -1.
  int jpeg_sof = -1;
};

// Reads the header: JPEG markers up to the first SOF (the scan data is not
// touched), or the PNG signature and IHDR (with its CRC). Fails with
// kDataLoss on damaged headers, kUnimplemented on other formats, and
// kResourceExhausted when width x height is over `max_pixels`.
Result<ImageInfo> probe_image(std::string_view bytes, uint64_t max_pixels = kDefaultMaxPixels);

// An 8-bit interleaved image, rows top to bottom, no padding between rows.
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;             // 1 (gray) or 3 (RGB)
  std::vector<uint8_t> pixels;  // height * width * channels bytes

  size_t row_bytes() const { return static_cast<size_t>(width) * channels; }
};

struct DecodeOptions {
  // JPEG only: decode at 1/scale_denom of full size (1, 2, 4 or 8), using
  // libjpeg-turbo's reduced-size IDCT. The result is ceil(w / denom) wide.
  int scale_denom = 1;
  // Expand gray (and gray+alpha, palette, 16-bit) to 8-bit RGB. CMYK and
  // YCCK JPEGs always become RGB. Alpha is dropped.
  bool force_rgb = true;
  uint64_t max_pixels = kDefaultMaxPixels;
};

// Decodes a JPEG or PNG completely. A JPEG whose entropy-coded data ends
// early fails with kDataLoss ("premature end of data"), as does a PNG
// whose chunks or zlib stream are damaged or that ends before IEND; extraneous bytes before a JPEG
// marker are tolerated, as libjpeg does.
Result<Image> decode_image(std::string_view bytes, const DecodeOptions& options = {});

// Decodes just enough to prove the file is whole and decodable: a JPEG at
// 1/8 scale (the Huffman decoding, where damage shows, is still done in
// full; the IDCT is not), a PNG completely. Returns the header's info.
Result<ImageInfo> check_image(std::string_view bytes, uint64_t max_pixels = kDefaultMaxPixels);

// Encodes a baseline JPEG, 4:2:0 for RGB (gray stays gray), with optimised
// Huffman tables. quality 1..100.
Result<std::string> encode_jpeg(const Image& image, int quality);

// Rewrites a JPEG losslessly as sequential (baseline or extended) with
// Huffman tables optimised for it, as `jpegtran -optimize` does: the DCT
// coefficients are copied untouched, so every decoder yields the same
// pixels, but a progressive file then decodes without buffering the whole
// image and crop decoding helps it. Metadata markers (EXIF, ICC) are
// dropped. Damaged input fails with kDataLoss; a progressive file whose
// scans leave coefficients incomplete (decoders smooth those, a sequential
// copy would not be smoothed) with kFailedPrecondition: keep it as it is.
Result<std::string> transcode_jpeg_baseline(std::string_view bytes,
                                            uint64_t max_pixels = kDefaultMaxPixels);

// Encodes a PNG (8-bit gray or RGB).
Result<std::string> encode_png(const Image& image);

// Resizes to width x height: area averaging when shrinking (no aliasing),
// bilinear when enlarging. Deterministic for the same input. Needs width,
// height > 0 and a well-formed 1- or 3-channel image; otherwise (or if
// OpenCV cannot allocate its scratch) returns an empty Image.
Image resize_image(const Image& image, int width, int height);

// Renders one image of a learnable synthetic dataset: class `label` of
// `num_classes` decides the shape (disc, square, triangle, ring, cross,
// horizontal stripes, vertical stripes, checks, diamond, dots, star, hollow
// square: 12 shapes, cycling for more classes) and, past 12 classes, a hue
// family that tells apart classes sharing a shape; `seed` and `index` decide everything else
// (position, size, rotation, colours, background texture, noise). Pure: the
// same arguments give the same pixels. RGB, width x height (an empty Image
// when either is not positive).
Image render_synthetic_image(int label, int num_classes, uint64_t seed, uint64_t index, int width,
                             int height);

}  // namespace sluice
