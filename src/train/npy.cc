#include "train/npy.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace sluice::training {

std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape,
                       size_t min_bytes) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    dims += std::to_string(shape[i]);
    if (i + 1 < shape.size() || shape.size() == 1) dims += ",";
    if (i + 1 < shape.size()) dims += " ";
  }
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  // magic (6) + version (2) + header length (2) + dict + padding + '\n'
  size_t total = 10 + dict.size() + 1;
  size_t padded = std::max((total + 63) / 64 * 64, (min_bytes + 63) / 64 * 64);
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(dict.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  return out + dict;
}

namespace {
constexpr size_t kReservedHeader = 128;  // room for any 2-D shape
}

Result<NpyWriter> NpyWriter::create(const std::string& path, std::string descr, int64_t cols,
                                    int item_bytes) {
  NpyWriter w;
  w.path_ = path;
  w.tmp_ = path + ".tmp." + std::to_string(::getpid());
  w.descr_ = std::move(descr);
  w.cols_ = cols;
  w.item_bytes_ = item_bytes;
  SLUICE_ASSIGN_OR_RETURN(w.file_, detail::File::create(w.tmp_));
  std::string header = npy_header(w.descr_, w.shape(), kReservedHeader);
  SLUICE_RETURN_IF_ERROR(w.file_.write_all(header.data(), header.size()));
  w.at_ = header.size();
  return w;
}

NpyWriter::~NpyWriter() {
  if (!finished_ && !tmp_.empty() && file_.is_open()) {
    (void)file_.close();
    std::remove(tmp_.c_str());
  }
}

Status NpyWriter::append(const void* rows, int64_t count) {
  SLUICE_RETURN_IF_ERROR(file_.write_all(
      rows, static_cast<size_t>(count * std::max<int64_t>(1, cols_) * item_bytes_)));
  rows_ += count;
  return Status();
}

Status NpyWriter::finish() {
  std::string header = npy_header(descr_, shape(), kReservedHeader);
  if (header.size() != kReservedHeader) {
    return internal_error(fmt::format("{}: npy header grew to {} bytes", path_, header.size()));
  }
  if (::pwrite(file_.fd(), header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()))
    return errno_error(tmp_, "cannot rewrite the npy header", errno);
  SLUICE_RETURN_IF_ERROR(file_.sync());
  SLUICE_RETURN_IF_ERROR(file_.close());
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    return errno_error(path_, "cannot rename the finished file into", errno);
  }
  finished_ = true;
  return Status();
}

namespace {

// UTF-8 to code points; a malformed sequence gives U+FFFD and moves on one byte.
std::u32string decode_utf8(const std::string& s) {
  std::u32string out;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc >> 6) == 2;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) {
      ok = false;  // overlong or not a scalar value
    }
    out += ok ? cp : U'\xfffd';
    i += ok ? len : 1;
  }
  return out;
}

}  // namespace

Status write_npy_strings(const std::string& path, const std::vector<std::string>& values) {
  std::vector<std::u32string> decoded;
  size_t width = 1;
  for (const std::string& v : values) {
    decoded.push_back(decode_utf8(v));
    width = std::max(width, decoded.back().size());
  }
  std::string out = npy_header(fmt::format("<U{}", width), {static_cast<int64_t>(values.size())});
  for (const std::u32string& d : decoded) {
    std::u32string padded = d;
    padded.resize(width, U'\0');
    for (char32_t cp : padded) {
      uint32_t v = cp;
      for (int b = 0; b < 4; ++b) out += static_cast<char>((v >> (8 * b)) & 0xff);
    }
  }
  return detail::write_file_atomic(path, out);
}

}  // namespace sluice::training
