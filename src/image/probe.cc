// probe_image: our own reader of JPEG markers and the PNG IHDR. It sees
// untrusted bytes, so every read is bounded by the bytes held first; the
// decoders run only after it has vetted the header and the pixel count.

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "sluice/image.h"

namespace sluice {
namespace {

constexpr uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
constexpr uint8_t kJpegSoi[2] = {0xFF, 0xD8};
// Signature, then IHDR's length, type, 13 data bytes and CRC.
constexpr size_t kPngIhdrEnd = 8 + 4 + 4 + 13 + 4;
// libjpeg reads the transform only from an APP14 of at least this many data
// bytes ("Adobe", version, flags0, flags1, transform); we match it.
constexpr size_t kAdobeDataBytes = 12;

class Bytes {
 public:
  explicit Bytes(std::string_view s)
      : data_(reinterpret_cast<const uint8_t*>(s.data())), size_(s.size()) {}
  size_t size() const { return size_; }
  uint8_t at(size_t i) const { return data_[i]; }
  const uint8_t* ptr(size_t i) const { return data_ + i; }
  // Callers check `i + 2 <= size()` (or 4) first.
  uint32_t be16(size_t i) const { return (uint32_t{data_[i]} << 8) | data_[i + 1]; }
  uint32_t be32(size_t i) const { return (be16(i) << 16) | be16(i + 2); }
  bool starts_with(const uint8_t* prefix, size_t n) const {
    return size_ >= n && std::memcmp(data_, prefix, n) == 0;
  }
  // True when all of the bytes held are the start of `prefix`.
  bool is_prefix_of(const uint8_t* prefix, size_t n) const {
    return size_ < n && std::memcmp(data_, prefix, size_) == 0;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

Status jpeg_error(size_t offset, std::string_view reason) {
  return data_loss_error("JPEG: offset " + std::to_string(offset) + ": " + std::string(reason));
}

bool is_sof(uint8_t marker) {
  // C4 (DHT), C8 (reserved JPG) and CC (DAC) share the SOF range.
  return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

bool is_standalone(uint8_t marker) {
  return marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7);  // TEM, RSTn
}

std::string subsampling_name(const int* h, const int* v, int n) {
  if (n == 1) return "gray";
  if (n != 3 && n != 4) return "other";
  if (h[1] != h[2] || v[1] != v[2]) return "other";
  if (n == 4 && (h[3] != h[0] || v[3] != v[0])) return "other";
  if (h[0] % h[1] != 0 || v[0] % v[1] != 0) return "other";
  const int rh = h[0] / h[1];
  const int rv = v[0] / v[1];
  if (rh == 1 && rv == 1) return "4:4:4";
  if (rh == 2 && rv == 1) return "4:2:2";
  if (rh == 2 && rv == 2) return "4:2:0";
  if (rh == 1 && rv == 2) return "4:4:0";
  if (rh == 4 && rv == 1) return "4:1:1";
  return "other";
}

// `seg` is the segment after its length field: P, Y, X, Nf, Nf x (C, HV, Tq).
Status parse_sof(const Bytes& b, size_t seg, size_t seg_len, uint8_t marker, ImageInfo* info) {
  if (seg_len < 6) return jpeg_error(seg, "frame header too short");
  const int precision = b.at(seg);
  const int height = static_cast<int>(b.be16(seg + 1));
  const int width = static_cast<int>(b.be16(seg + 3));
  const int n = b.at(seg + 5);
  if (n == 0) return jpeg_error(seg, "frame header with no components");
  if (seg_len != 6 + 3 * static_cast<size_t>(n)) {
    return jpeg_error(seg, "frame header length does not match its component count");
  }
  if (width == 0) return jpeg_error(seg, "zero image width");
  // A zero height defers to a DNL marker after the first scan: rare, and
  // libjpeg does not support it either.
  if (height == 0) return jpeg_error(seg, "zero image height (DNL marker not supported)");
  if (precision < 2 || precision > 16) return jpeg_error(seg, "bad sample precision");
  if (n != 1 && n != 3 && n != 4) {
    return unimplemented_error("JPEG with " + std::to_string(n) + " components");
  }
  int h[4];
  int v[4];
  info->sampling_factors.clear();
  for (int i = 0; i < n; ++i) {
    const uint8_t hv = b.at(seg + 6 + 3 * static_cast<size_t>(i) + 1);
    h[i] = hv >> 4;
    v[i] = hv & 0xF;
    if (h[i] < 1 || h[i] > 4 || v[i] < 1 || v[i] > 4) {
      return jpeg_error(seg, "bad sampling factors");
    }
    if (i > 0) info->sampling_factors += ',';
    info->sampling_factors += std::to_string(h[i]) + "x" + std::to_string(v[i]);
  }
  const int sof = marker - 0xC0;
  info->width = width;
  info->height = height;
  info->components = n;
  info->bit_depth = precision;
  info->jpeg_sof = sof;
  info->progressive = (sof & 3) == 2;
  info->lossless = (sof & 3) == 3;
  info->arithmetic = sof >= 8;
  info->subsampling = subsampling_name(h, v, n);
  return ok_status();
}

void parse_app14(const Bytes& b, size_t seg, size_t seg_len, ImageInfo* info) {
  static constexpr uint8_t kAdobe[5] = {'A', 'd', 'o', 'b', 'e'};
  if (seg_len >= kAdobeDataBytes && std::memcmp(b.ptr(seg), kAdobe, 5) == 0) {
    info->adobe_transform = b.at(seg + 11);
  }
}

// Walks markers from after SOI to the first SOF, as libjpeg's next_marker
// does: bytes before an 0xFF are skipped (libjpeg warns about them and goes
// on), runs of 0xFF are fill, and FF 00 outside a scan is garbage.
Status probe_jpeg(const Bytes& b, ImageInfo* info) {
  info->format = ImageFormat::kJpeg;
  size_t pos = 2;
  for (;;) {
    while (pos < b.size() && b.at(pos) != 0xFF) ++pos;
    while (pos < b.size() && b.at(pos) == 0xFF) ++pos;
    if (pos >= b.size()) return jpeg_error(pos, "end of data before the frame header");
    const size_t marker_at = pos - 1;
    const uint8_t marker = b.at(pos++);
    if (marker == 0x00 || is_standalone(marker)) continue;
    if (marker == 0xD8) return jpeg_error(marker_at, "second SOI marker");
    if (marker == 0xD9) return jpeg_error(marker_at, "EOI before the frame header");
    if (marker == 0xDA) return jpeg_error(marker_at, "scan before the frame header");
    if (b.size() - pos < 2) return jpeg_error(pos, "truncated marker segment length");
    const size_t length = b.be16(pos);
    if (length < 2) return jpeg_error(pos, "bad marker segment length");
    if (b.size() - pos < length) return jpeg_error(pos, "marker segment runs past the end of data");
    const size_t seg = pos + 2;
    const size_t seg_len = length - 2;
    if (is_sof(marker)) return parse_sof(b, seg, seg_len, marker, info);
    if (marker == 0xEE) parse_app14(b, seg, seg_len, info);
    pos += length;
  }
}

Status png_error(std::string_view reason) {
  return data_loss_error("PNG: " + std::string(reason));
}

bool valid_png_depth(int color_type, int depth) {
  switch (color_type) {
    case 0: return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
    case 3: return depth == 1 || depth == 2 || depth == 4 || depth == 8;
    case 2:
    case 4:
    case 6: return depth == 8 || depth == 16;
    default: return false;
  }
}

int png_components(int color_type) {
  switch (color_type) {
    case 0: return 1;
    case 4: return 2;
    case 6: return 4;
    default: return 3;  // truecolour, and palette expanded
  }
}

// Whether a tRNS chunk comes before the first IDAT. Walks the chunk
// headers only; a list cut short just ends the walk (the decoder reports it).
bool png_has_trns(const Bytes& b) {
  static constexpr uint8_t kTrns[4] = {'t', 'R', 'N', 'S'};
  static constexpr uint8_t kIdat[4] = {'I', 'D', 'A', 'T'};
  for (size_t pos = kPngIhdrEnd; pos + 8 <= b.size();) {
    const uint32_t length = b.be32(pos);
    if (std::memcmp(b.ptr(pos + 4), kTrns, 4) == 0) return true;
    if (std::memcmp(b.ptr(pos + 4), kIdat, 4) == 0) return false;
    if (length > b.size() - pos - 8) return false;
    pos += size_t{12} + length;
  }
  return false;
}

Status probe_png(const Bytes& b, ImageInfo* info) {
  info->format = ImageFormat::kPng;
  if (b.size() < kPngIhdrEnd) return png_error("truncated before the end of IHDR");
  static constexpr uint8_t kIhdr[4] = {'I', 'H', 'D', 'R'};
  if (std::memcmp(b.ptr(12), kIhdr, 4) != 0) return png_error("first chunk is not IHDR");
  if (b.be32(8) != 13) return png_error("IHDR length is not 13");
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), b.ptr(12), 4 + 13);
  if (crc != b.be32(29)) return png_error("IHDR CRC mismatch");
  const uint32_t width = b.be32(16);
  const uint32_t height = b.be32(20);
  const int depth = b.at(24);
  const int color_type = b.at(25);
  if (width == 0 || height == 0) return png_error("zero width or height");
  if (width > 0x7FFFFFFFu || height > 0x7FFFFFFFu) return png_error("width or height over 2^31-1");
  if (!valid_png_depth(color_type, depth)) return png_error("bad bit depth or colour type");
  if (b.at(26) != 0 || b.at(27) != 0) return png_error("unknown compression or filter method");
  if (b.at(28) > 1) return png_error("unknown interlace method");
  info->width = static_cast<int>(width);
  info->height = static_cast<int>(height);
  info->components = png_components(color_type);
  info->transparency = png_has_trns(b);
  info->bit_depth = depth;
  info->progressive = b.at(28) == 1;
  return ok_status();
}

// Signatures a byte or more off (PngSuite's xs1n0g01 and xcrn0g04: bit 7
// stripped, CR/LF translated) are damaged PNGs, not some other format.
bool looks_like_damaged_png(const Bytes& b) {
  static constexpr uint8_t kPng[3] = {'P', 'N', 'G'};
  return b.size() >= 4 && std::memcmp(b.ptr(1), kPng, 3) == 0;
}

}  // namespace

std::string_view image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg: return "jpeg";
    case ImageFormat::kPng: return "png";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

Result<ImageInfo> probe_image(std::string_view bytes, uint64_t max_pixels) {
  const Bytes b(bytes);
  ImageInfo info;
  Status status;
  if (b.size() == 0) return data_loss_error("empty input");
  if (b.starts_with(kJpegSoi, 2)) {
    status = probe_jpeg(b, &info);
  } else if (b.starts_with(kPngSignature, 8)) {
    status = probe_png(b, &info);
  } else if (b.is_prefix_of(kJpegSoi, 2) || b.is_prefix_of(kPngSignature, 8)) {
    return data_loss_error("truncated inside the signature");
  } else if (looks_like_damaged_png(b)) {
    return data_loss_error("PNG: damaged signature");
  } else {
    return unimplemented_error("unknown image format (neither JPEG nor PNG)");
  }
  if (!status.ok()) return status;
  const uint64_t pixels = static_cast<uint64_t>(info.width) * static_cast<uint64_t>(info.height);
  if (pixels > max_pixels) {
    return resource_exhausted_error(std::to_string(info.width) + "x" + std::to_string(info.height) +
                                    " is over the limit of " + std::to_string(max_pixels) +
                                    " pixels");
  }
  return info;
}

}  // namespace sluice
