#include "record/stream.h"

#include <isa-l/igzip_lib.h>
#include <zlib.h>

#include <cstring>
#include <vector>

#include "record/format.h"
#include "remote/files.h"
#include "remote/url.h"

namespace sluice::detail {
namespace {

class PlainInput final : public InputStream {
 public:
  PlainInput(File file, uint64_t size) : file_(std::move(file)), size_(size) {}

  Result<size_t> read(void* buf, size_t n) override {
    SLUICE_ASSIGN_OR_RETURN(size_t got, file_.pread(pos_, buf, n));
    pos_ += got;
    return got;
  }
  int64_t known_size() const override { return static_cast<int64_t>(size_); }
  Result<size_t> pread(uint64_t offset, void* buf, size_t n) const override {
    return file_.pread(offset, buf, n);
  }
  const std::string& name() const override { return file_.path(); }

 private:
  File file_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// An object in S3 or on a web server: pread is one ranged GET; read()
// fetches kBlockBytes ahead, so a sequential scan costs one request per
// block rather than per record.
class RemoteInput final : public InputStream {
 public:
  explicit RemoteInput(std::unique_ptr<remote::RemoteFile> file) : file_(std::move(file)) {}

  Result<size_t> read(void* buf, size_t n) override {
    size_t done = 0;
    auto* out = static_cast<uint8_t*>(buf);
    while (done < n) {
      if (head_ == block_.size()) {
        if (pos_ >= file_->size()) break;
        block_.resize(static_cast<size_t>(std::min<uint64_t>(kBlockBytes, file_->size() - pos_)));
        SLUICE_ASSIGN_OR_RETURN(size_t got, file_->pread(pos_, block_.data(), block_.size()));
        block_.resize(got);
        pos_ += got;
        head_ = 0;
        if (got == 0) break;
      }
      size_t take = std::min(n - done, block_.size() - head_);
      std::memcpy(out + done, block_.data() + head_, take);
      head_ += take;
      done += take;
    }
    return done;
  }
  int64_t known_size() const override { return static_cast<int64_t>(file_->size()); }
  Result<size_t> pread(uint64_t offset, void* buf, size_t n) const override {
    return file_->pread(offset, buf, n);
  }
  const std::string& name() const override { return file_->url(); }

 private:
  static constexpr size_t kBlockBytes = size_t{8} << 20;
  std::unique_ptr<remote::RemoteFile> file_;
  std::vector<uint8_t> block_;
  size_t head_ = 0;
  uint64_t pos_ = 0;
};

// Inflates a whole-file GZIP (possibly several concatenated members, as
// `cat a.gz b.gz` makes) or ZLIB stream. Checksums in the trailers are
// verified by ISA-L.
class InflateInput final : public InputStream {
 public:
  InflateInput(std::unique_ptr<InputStream> raw, Compression c)
      : raw_(std::move(raw)), compression_(c), in_(kInBytes) {
    reset_state();
  }

  // What inflated before damage (a cut, a corrupt block) is handed over
  // first, and the error with the next call: the records before the damage
  // are read, as TensorFlow reads them (their CRCs are checked upstream).
  Result<size_t> read(void* buf, size_t n) override {
    if (!pending_.ok()) return pending_;
    size_t done = 0;
    Status s = inflate_into(static_cast<uint8_t*>(buf), n, &done);
    if (s.ok()) return done;
    if (done == 0) return s;
    pending_ = s;
    return done;
  }

  int64_t known_size() const override { return -1; }
  Result<size_t> pread(uint64_t, void*, size_t) const override {
    return unimplemented_error(raw_->name() + ": no random access into a compressed stream");
  }
  const std::string& name() const override { return raw_->name(); }

 private:
  static constexpr size_t kInBytes = size_t{256} << 10;

  // Inflates up to n bytes into out, counting them in *done, until n, the
  // end of the stream, or an error.
  Status inflate_into(uint8_t* out, size_t n, size_t* done_out) {
    size_t& done = *done_out;
    while (done < n && !eof_) {
      if (state_.avail_in == 0 && !input_done_) SLUICE_RETURN_IF_ERROR(refill());
      if (state_.block_state == ISAL_BLOCK_FINISH) {
        SLUICE_RETURN_IF_ERROR(next_member());
        continue;
      }
      if (state_.avail_in == 0 && input_done_) {
        return data_loss_error("compressed stream ends early at byte " + std::to_string(consumed_) +
                               " (truncated " + std::string(compression_name(compression_)) +
                               " file)");
      }
      state_.next_out = out + done;
      state_.avail_out = static_cast<uint32_t>(std::min<size_t>(n - done, UINT32_MAX));
      uint32_t before_in = state_.avail_in;
      uint32_t before_out = state_.avail_out;
      int rc = isal_inflate(&state_);
      consumed_ += before_in - state_.avail_in;
      done += before_out - state_.avail_out;
      if (rc < 0) {
        return data_loss_error("corrupt " + std::string(compression_name(compression_)) +
                               " stream near byte " + std::to_string(consumed_) + " (" +
                               isal_error_name(rc) + ")");
      }
      if (before_in == state_.avail_in && before_out == state_.avail_out &&
          state_.block_state != ISAL_BLOCK_FINISH && input_done_) {
        return data_loss_error("compressed stream ends early at byte " + std::to_string(consumed_) +
                               " (truncated)");
      }
    }
    return Status();
  }

  static const char* isal_error_name(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK: return "invalid deflate block";
      case ISAL_INVALID_SYMBOL: return "invalid symbol";
      case ISAL_INVALID_LOOKBACK: return "invalid back-reference";
      case ISAL_INVALID_WRAPPER: return "invalid gzip/zlib header";
      case ISAL_UNSUPPORTED_METHOD: return "unsupported compression method";
      case ISAL_INCORRECT_CHECKSUM: return "checksum mismatch";
      default: return "inflate error";
    }
  }

  void reset_state() {
    isal_inflate_init(&state_);
    state_.crc_flag = compression_ == Compression::kGzip ? ISAL_GZIP : ISAL_ZLIB;
  }

  Status refill() {
    SLUICE_ASSIGN_OR_RETURN(size_t got, raw_->read(in_.data(), in_.size()));
    if (got == 0) input_done_ = true;
    state_.next_in = in_.data();
    state_.avail_in = static_cast<uint32_t>(got);
    return Status();
  }

  // After one member ends: the end of the file, or another gzip member.
  Status next_member() {
    if (state_.avail_in == 0 && !input_done_) SLUICE_RETURN_IF_ERROR(refill());
    if (state_.avail_in == 0) {
      eof_ = true;
      return Status();
    }
    if (compression_ == Compression::kGzip && state_.next_in[0] == record_format::kGzipMagic0) {
      uint8_t* next = state_.next_in;
      uint32_t avail = state_.avail_in;
      reset_state();
      state_.next_in = next;
      state_.avail_in = avail;
      return Status();
    }
    return data_loss_error("unexpected bytes after the end of the " +
                           std::string(compression_name(compression_)) + " stream at byte " +
                           std::to_string(consumed_));
  }

  std::unique_ptr<InputStream> raw_;
  Compression compression_;
  std::vector<uint8_t> in_;
  inflate_state state_;
  uint64_t consumed_ = 0;
  bool input_done_ = false;
  bool eof_ = false;
  Status pending_;  // an error met after bytes that read() has handed over
};

class PlainOutput final : public OutputStream {
 public:
  explicit PlainOutput(File file) : file_(std::move(file)) {}
  Status write(const void* buf, size_t n) override {
    bytes_ += n;
    return file_.write_all(buf, n);
  }
  uint64_t file_bytes() const override { return bytes_; }
  Status finish() override {
    SLUICE_RETURN_IF_ERROR(file_.sync());
    return file_.close();
  }

 private:
  File file_;
  uint64_t bytes_ = 0;
};

// zlib deflate. Its gzip header carries mtime 0 and no name, so output
// bytes depend only on the input.
class DeflateOutput final : public OutputStream {
 public:
  DeflateOutput(File file, Compression c)
      : file_(std::move(file)), compression_(c), out_(kOutBytes) {}
  ~DeflateOutput() override {
    if (initialised_) deflateEnd(&z_);
  }

  Status init(int level) {
    std::memset(&z_, 0, sizeof(z_));
    int bits = compression_ == Compression::kGzip ? 15 + 16 : 15;
    if (deflateInit2(&z_, level, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      return invalid_argument_error(file_.path() + ": zlib refused compression level " +
                                    std::to_string(level));
    }
    initialised_ = true;
    return Status();
  }

  Status write(const void* buf, size_t n) override {
    z_.next_in = static_cast<Bytef*>(const_cast<void*>(buf));
    z_.avail_in = static_cast<uInt>(n);
    return pump(Z_NO_FLUSH);
  }
  uint64_t file_bytes() const override { return bytes_; }
  Status finish() override {
    z_.next_in = nullptr;
    z_.avail_in = 0;
    SLUICE_RETURN_IF_ERROR(pump(Z_FINISH));
    SLUICE_RETURN_IF_ERROR(file_.sync());
    return file_.close();
  }

 private:
  static constexpr size_t kOutBytes = size_t{256} << 10;

  Status pump(int flush) {
    for (;;) {
      z_.next_out = out_.data();
      z_.avail_out = static_cast<uInt>(out_.size());
      int rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) return internal_error(file_.path() + ": zlib deflate failed");
      size_t have = out_.size() - z_.avail_out;
      if (have > 0) {
        SLUICE_RETURN_IF_ERROR(file_.write_all(out_.data(), have));
        bytes_ += have;
      }
      if (flush == Z_FINISH ? rc == Z_STREAM_END : (z_.avail_in == 0 && z_.avail_out != 0)) {
        return Status();
      }
    }
  }

  File file_;
  Compression compression_;
  std::vector<uint8_t> out_;
  z_stream z_;
  bool initialised_ = false;
  uint64_t bytes_ = 0;
};

}  // namespace

Result<std::unique_ptr<InputStream>> open_input_stream(const std::string& path,
                                                       Compression compression) {
  if (compression == Compression::kAuto) {
    return invalid_argument_error(path + ": compression must be resolved before opening");
  }
  std::unique_ptr<InputStream> raw;
  if (remote::is_url(path)) {
    SLUICE_ASSIGN_OR_RETURN(auto file, remote::RemoteFile::open(path));
    raw = std::make_unique<RemoteInput>(std::move(file));
  } else {
    SLUICE_ASSIGN_OR_RETURN(File file, File::open_read(path));
    SLUICE_ASSIGN_OR_RETURN(uint64_t size, file.size());
    raw = std::make_unique<PlainInput>(std::move(file), size);
  }
  if (compression == Compression::kNone) return raw;
  return std::unique_ptr<InputStream>(new InflateInput(std::move(raw), compression));
}

Result<std::unique_ptr<OutputStream>> open_output_stream(File file, Compression compression,
                                                         int level) {
  switch (compression) {
    case Compression::kNone: return std::unique_ptr<OutputStream>(new PlainOutput(std::move(file)));
    case Compression::kGzip:
    case Compression::kZlib: {
      auto out = std::make_unique<DeflateOutput>(std::move(file), compression);
      SLUICE_RETURN_IF_ERROR(out->init(level));
      return std::unique_ptr<OutputStream>(std::move(out));
    }
    case Compression::kAuto: break;
  }
  return invalid_argument_error(file.path() + ": a writer needs an explicit compression, not auto");
}

}  // namespace sluice::detail
