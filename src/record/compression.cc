#include <cstring>

#include "base/enum_names.h"
#include "base/file_util.h"
#include "record/format.h"
#include "record/stream.h"
#include "sluice/record.h"

namespace sluice {

namespace {
// TensorFlow's TFRecordOptions spell them "GZIP", "ZLIB" and "" (none).
constexpr detail::EnumName<Compression> kCompressions[] = {
    {Compression::kNone, "none"}, {Compression::kNone, "", true},
    {Compression::kGzip, "gzip"}, {Compression::kGzip, "GZIP", true},
    {Compression::kZlib, "zlib"}, {Compression::kZlib, "ZLIB", true},
    {Compression::kAuto, "auto"}};
}  // namespace

std::string_view compression_name(Compression c) {
  return detail::enum_name(c, kCompressions);
}

Result<Compression> parse_compression(std::string_view name) {
  return detail::parse_enum_name(name, kCompressions, "unknown compression");
}

Result<Compression> detect_compression(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto f, detail::open_input_stream(path, Compression::kNone));
  unsigned char head[record_format::kHeaderBytes];
  SLUICE_ASSIGN_OR_RETURN(size_t n, f->pread(0, head, sizeof(head)));
  // A valid TFRecord header wins: a plain record whose length happens to
  // begin with gzip or zlib magic bytes (e.g. 40056 = 78 9c) is still plain.
  if (n == sizeof(head)) {
    uint32_t stored;
    std::memcpy(&stored, head + 8, 4);
    if (mask_crc(crc32c(std::string_view(reinterpret_cast<char*>(head), 8))) == stored) {
      return Compression::kNone;
    }
  }
  if (n >= 2 && head[0] == record_format::kGzipMagic0 && head[1] == record_format::kGzipMagic1) {
    return Compression::kGzip;
  }
  // RFC 1950: CM = 8 (deflate), CINFO <= 7, (CMF*256 + FLG) divisible by 31.
  if (n >= 2 && (head[0] & 0x0f) == 8 && (head[0] >> 4) <= 7 &&
      ((head[0] << 8) | head[1]) % 31 == 0) {
    return Compression::kZlib;
  }
  return Compression::kNone;
}

}  // namespace sluice
