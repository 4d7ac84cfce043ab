// Sequential TFRecord reading over a plain or inflated stream.
//
// Records are parsed in place from one read-ahead buffer; only a record that
// straddles the buffer's end is moved to the front. For plain files every
// length is checked against the bytes the file actually holds before the
// buffer grows, so a corrupt length cannot cause a huge allocation; for
// compressed streams the buffer grows only as inflated bytes arrive.
#include <bit>
#include <cstring>
#include <vector>

#include "record/format.h"
#include "record/stream.h"
#include "sluice/record.h"

namespace sluice {
namespace {

static_assert(std::endian::native == std::endian::little,
              "TFRecord framing is little-endian; this build assumes a little-endian host");

using record_format::kFooterBytes;
using record_format::kFramingBytes;
using record_format::kHeaderBytes;

uint64_t load_u64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t load_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

class StreamRecordReader final : public RecordReader {
 public:
  StreamRecordReader(std::string path, Compression c, std::unique_ptr<detail::InputStream> in,
                     const RecordReaderOptions& options)
      : path_(std::move(path)),
        compression_(c),
        in_(std::move(in)),
        options_(options),
        buf_(std::max<size_t>(options.buffer_bytes, 4096)) {}

  Status next(std::string_view* record) override {
    if (!sticky_.ok()) return sticky_;
    record_offset_ = pos_;
    SLUICE_ASSIGN_OR_RETURN(size_t have, fill(kHeaderBytes));
    if (have == 0) return out_of_range_error(path_ + ": end of file");
    if (have < kHeaderBytes) {
      return fail(data_loss_error(where() + "truncated record header: " + std::to_string(have) +
                                  " of 12 bytes before the end of the file"));
    }
    const char* h = buf_.data() + begin_;
    uint64_t length = load_u64(h);
    if (mask_crc(crc32c(std::string_view(h, 8))) != load_u32(h + 8)) {
      return fail(data_loss_error(where() + "length CRC mismatch (length field reads " +
                                  std::to_string(length) + ")"));
    }
    if (length > options_.max_record_bytes) {
      return fail(resource_exhausted_error(where() + "record of " + std::to_string(length) +
                                           " bytes is over the limit of " +
                                           std::to_string(options_.max_record_bytes)));
    }
    int64_t known = in_->known_size();
    if (known >= 0 && length + kFramingBytes > static_cast<uint64_t>(known) - pos_) {
      return fail(data_loss_error(
          where() + "truncated record: header says " + std::to_string(length) +
          " data bytes, the file holds only " +
          std::to_string(static_cast<uint64_t>(known) - pos_ - kHeaderBytes) + " more"));
    }
    size_t framed = static_cast<size_t>(length) + kFramingBytes;
    SLUICE_ASSIGN_OR_RETURN(have, fill(framed));
    if (have < framed) {
      return fail(data_loss_error(where() + "truncated record: header says " +
                                  std::to_string(length) + " data bytes, the stream holds only " +
                                  std::to_string(have - std::min(have, kHeaderBytes)) + " more"));
    }
    const char* d = buf_.data() + begin_ + kHeaderBytes;
    std::string_view data(d, static_cast<size_t>(length));
    begin_ += framed;
    pos_ += framed;
    if (options_.verify_data_crc && mask_crc(crc32c(data)) != load_u32(d + length)) {
      return data_loss_error(path_ + ": offset " + std::to_string(record_offset_) +
                             ": data CRC mismatch (" + std::to_string(length) + " data bytes)");
    }
    *record = data;
    return Status();
  }

  bool stuck() const override { return !sticky_.ok(); }
  uint64_t record_offset() const override { return record_offset_; }
  uint64_t position() const override { return pos_; }
  const std::string& path() const override { return path_; }
  Compression compression() const override { return compression_; }

 private:
  std::string where() const { return path_ + ": offset " + std::to_string(record_offset_) + ": "; }

  Status fail(Status s) {
    sticky_ = s;
    return s;
  }

  // A damaged compressed stream cannot be read past, so it is final like
  // any framing error (a caller that goes on after a non-final error would
  // otherwise ask again forever). The stream names the compressed byte; the
  // file and the record offset (where TensorFlow reports a truncated record
  // too) come from here. I/O errors already name the file.
  Status stream_error(const Status& s) const {
    if (s.code() != StatusCode::kDataLoss) return s;
    return data_loss_error(where() + std::string(s.message()));
  }

  // Makes at least n bytes available from begin_, fewer only at the end of
  // the stream. Returns the bytes available.
  Result<size_t> fill(size_t n) {
    if (end_ - begin_ >= n) return end_ - begin_;
    if (begin_ + n > buf_.size()) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    while (end_ - begin_ < n && !stream_done_) {
      if (end_ == buf_.size()) {
        // Grow towards n, doubling, so a compressed stream that lies about
        // a length costs no more memory than the bytes it really inflates.
        buf_.resize(std::min(std::max(buf_.size() * 2, size_t{4096}), n));
      }
      size_t want = buf_.size() - end_;
      Result<size_t> got = in_->read(buf_.data() + end_, want);
      if (!got.ok()) return fail(stream_error(got.status()));
      if (*got == 0) stream_done_ = true;
      end_ += *got;
    }
    return end_ - begin_;
  }

  std::string path_;
  Compression compression_;
  std::unique_ptr<detail::InputStream> in_;
  RecordReaderOptions options_;
  std::vector<char> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool stream_done_ = false;
  uint64_t pos_ = 0;
  uint64_t record_offset_ = 0;
  Status sticky_;
};

}  // namespace

void append_framed_record(std::string_view data, std::string* out) {
  char header[kHeaderBytes];
  uint64_t length = data.size();
  std::memcpy(header, &length, 8);
  uint32_t lcrc = mask_crc(crc32c(std::string_view(header, 8)));
  std::memcpy(header + 8, &lcrc, 4);
  uint32_t dcrc = mask_crc(crc32c(data));
  out->append(header, kHeaderBytes);
  out->append(data);
  out->append(reinterpret_cast<const char*>(&dcrc), kFooterBytes);
}

Result<std::unique_ptr<RecordReader>> RecordReader::open(const std::string& path,
                                                         const RecordReaderOptions& options) {
  Compression c = options.compression;
  if (c == Compression::kAuto) {
    SLUICE_ASSIGN_OR_RETURN(c, detect_compression(path));
  }
  SLUICE_ASSIGN_OR_RETURN(auto in, detail::open_input_stream(path, c));
  return std::unique_ptr<RecordReader>(new StreamRecordReader(path, c, std::move(in), options));
}

}  // namespace sluice
