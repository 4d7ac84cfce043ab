// Record writing: frames records into a buffer and hands whole buffers to
// the (optionally deflating) output stream, so a small record costs no
// system call. The file is written under a temporary name and renamed by
// close(); a writer destroyed before close() removes its temporary file.
#include <unistd.h>

#include <cstring>

#include "record/format.h"
#include "record/stream.h"
#include "sluice/record.h"

namespace sluice {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 20;

class StreamRecordWriter final : public RecordWriter {
 public:
  StreamRecordWriter(std::string path, std::string tmp, std::unique_ptr<detail::OutputStream> out,
                     bool atomic)
      : path_(std::move(path)), tmp_(std::move(tmp)), out_(std::move(out)), atomic_(atomic) {
    buf_.reserve(kBufferBytes + 64);
  }
  ~StreamRecordWriter() override {
    if (!closed_) {
      if (!atomic_) flush().ignore();
      out_.reset();
      if (atomic_) ::unlink(tmp_.c_str());
    }
  }

  Result<uint64_t> write(std::string_view record) override {
    if (closed_) return failed_precondition_error(path_ + ": write after close");
    uint64_t offset = pos_;
    if (record.size() >= kBufferBytes) {
      // Large record: frame header and footer around it without copying it.
      char header[record_format::kHeaderBytes];
      uint64_t length = record.size();
      std::memcpy(header, &length, 8);
      uint32_t lcrc = mask_crc(crc32c(std::string_view(header, 8)));
      std::memcpy(header + 8, &lcrc, 4);
      uint32_t dcrc = mask_crc(crc32c(record));
      buf_.append(header, sizeof(header));
      SLUICE_RETURN_IF_ERROR(flush());
      SLUICE_RETURN_IF_ERROR(out_->write(record.data(), record.size()));
      buf_.append(reinterpret_cast<const char*>(&dcrc), 4);
    } else {
      append_framed_record(record, &buf_);
      if (buf_.size() >= kBufferBytes) SLUICE_RETURN_IF_ERROR(flush());
    }
    pos_ += framed_size(record.size());
    return offset;
  }

  uint64_t position() const override { return pos_; }
  uint64_t file_bytes() const override { return out_->file_bytes() + buf_.size(); }

  Status flush() override {
    if (buf_.empty()) return Status();
    Status s = out_->write(buf_.data(), buf_.size());
    buf_.clear();
    return s;
  }

  Status close() override {
    if (closed_) return Status();
    SLUICE_RETURN_IF_ERROR(flush());
    SLUICE_RETURN_IF_ERROR(out_->finish());
    if (!atomic_) {
      closed_ = true;
      return Status();
    }
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      return errno_error(path_, "rename into place", errno);
    }
    closed_ = true;
    return detail::sync_parent_dir(path_);
  }

 private:
  std::string path_;
  std::string tmp_;
  std::unique_ptr<detail::OutputStream> out_;
  std::string buf_;
  uint64_t pos_ = 0;
  bool atomic_;
  bool closed_ = false;
};

}  // namespace

Result<std::unique_ptr<RecordWriter>> RecordWriter::create(const std::string& path,
                                                           const RecordWriterOptions& options) {
  if (options.compression == Compression::kAuto) {
    return invalid_argument_error(path + ": a writer needs compression none, gzip or zlib");
  }
  if (options.level < -1 || options.level > 9) {
    return invalid_argument_error(path + ": compression level " + std::to_string(options.level) +
                                  " is outside -1..9");
  }
  std::string tmp = options.atomic ? detail::temp_name_for(path) : path;
  SLUICE_ASSIGN_OR_RETURN(detail::File file, detail::File::create(tmp));
  auto out = detail::open_output_stream(std::move(file), options.compression, options.level);
  if (!out.ok()) {
    ::unlink(tmp.c_str());
    return out.status();
  }
  return std::unique_ptr<RecordWriter>(
      new StreamRecordWriter(path, std::move(tmp), std::move(out).value(), options.atomic));
}

}  // namespace sluice
