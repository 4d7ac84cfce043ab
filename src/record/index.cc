// Index files (DALI tfrecord2idx text) and random access through them.
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>

#include "base/file_util.h"
#include "base/mutex.h"
#include "record/format.h"
#include "record/stream.h"
#include "remote/files.h"
#include "remote/url.h"
#include "sluice/record.h"

namespace sluice {
namespace {

using record_format::kFramingBytes;
using record_format::kHeaderBytes;

// Checks the framing of one record read whole into `framed` and returns a
// view of its data.
Status check_framed(const std::string& path, uint64_t offset, std::string_view framed,
                    bool verify_data_crc, std::string_view* data) {
  if (framed.size() < kFramingBytes) {
    return data_loss_error(path + ": offset " + std::to_string(offset) + ": truncated record");
  }
  uint64_t length;
  uint32_t lcrc, dcrc;
  std::memcpy(&length, framed.data(), 8);
  std::memcpy(&lcrc, framed.data() + 8, 4);
  if (mask_crc(crc32c(framed.substr(0, 8))) != lcrc) {
    return data_loss_error(path + ": offset " + std::to_string(offset) + ": length CRC mismatch");
  }
  if (length != framed.size() - kFramingBytes) {
    return data_loss_error(path + ": offset " + std::to_string(offset) + ": index says " +
                           std::to_string(framed.size()) + " framed bytes, record header says " +
                           std::to_string(length + kFramingBytes) + " (stale index?)");
  }
  *data = framed.substr(kHeaderBytes, length);
  std::memcpy(&dcrc, framed.data() + kHeaderBytes + length, 4);
  if (verify_data_crc && mask_crc(crc32c(*data)) != dcrc) {
    return data_loss_error(path + ": offset " + std::to_string(offset) + ": data CRC mismatch");
  }
  return Status();
}

class IndexedRecordFile final : public RecordFile {
 public:
  IndexedRecordFile(std::string path, Compression c, std::vector<IndexEntry> index,
                    std::unique_ptr<detail::InputStream> plain, const RecordFileOptions& options)
      : path_(std::move(path)),
        compression_(c),
        index_(std::move(index)),
        plain_(std::move(plain)),
        options_(options) {}

  size_t size() const override { return index_.size(); }
  const std::vector<IndexEntry>& index() const override { return index_; }
  const std::string& path() const override { return path_; }
  Compression compression() const override { return compression_; }

  Status read(size_t i, std::string* buffer, std::string_view* record) const override {
    if (i >= index_.size()) {
      return out_of_range_error(path_ + ": record " + std::to_string(i) + " of " +
                                std::to_string(index_.size()));
    }
    const IndexEntry& e = index_[i];
    if (e.size > options_.max_record_bytes + kFramingBytes) {
      return resource_exhausted_error(path_ + ": offset " + std::to_string(e.offset) +
                                      ": index entry of " + std::to_string(e.size) +
                                      " bytes is over the record limit");
    }
    if (plain_) {
      buffer->resize(e.size);
      SLUICE_ASSIGN_OR_RETURN(size_t got, plain_->pread(e.offset, buffer->data(), e.size));
      if (got != e.size) {
        return data_loss_error(path_ + ": offset " + std::to_string(e.offset) +
                               ": truncated record (file ends after " + std::to_string(got) +
                               " of " + std::to_string(e.size) + " bytes)");
      }
      return check_framed(path_, e.offset, *buffer, options_.verify_data_crc, record);
    }
    return read_compressed(e, buffer, record);
  }

  Status read_span(size_t first, size_t count, std::string* buffer,
                   std::vector<std::string_view>* records) const override {
    records->clear();
    if (count == 0) return Status();
    if (first >= index_.size() || count > index_.size() - first) {
      return out_of_range_error(path_ + ": records " + std::to_string(first) + "+" +
                                std::to_string(count) + " of " + std::to_string(index_.size()));
    }
    uint64_t bytes = 0;
    bool contiguous = plain_ != nullptr;
    for (size_t i = first; i < first + count; ++i) {
      if (i > first && index_[i].offset != index_[i - 1].offset + index_[i - 1].size)
        contiguous = false;
      bytes += index_[i].size;
      if (index_[i].size > options_.max_record_bytes + kFramingBytes) contiguous = false;
    }
    if (!contiguous) return read_each(first, count, buffer, records);
    const uint64_t start = index_[first].offset;
    buffer->resize(bytes);
    SLUICE_ASSIGN_OR_RETURN(size_t got, plain_->pread(start, buffer->data(), bytes));
    if (got != bytes) {
      return data_loss_error(path_ + ": offset " + std::to_string(start) +
                             ": truncated records (file ends after " + std::to_string(got) +
                             " of " + std::to_string(bytes) + " bytes)");
    }
    std::string_view all(*buffer);
    for (size_t i = first; i < first + count; ++i) {
      std::string_view data;
      SLUICE_RETURN_IF_ERROR(check_framed(path_, index_[i].offset,
                                          all.substr(index_[i].offset - start, index_[i].size),
                                          options_.verify_data_crc, &data));
      records->push_back(data);
    }
    return Status();
  }

 private:
  Status read_each(size_t first, size_t count, std::string* buffer,
                   std::vector<std::string_view>* records) const {
    std::string one;
    std::string_view data;
    std::vector<std::pair<size_t, size_t>> at;
    buffer->clear();
    for (size_t i = first; i < first + count; ++i) {
      SLUICE_RETURN_IF_ERROR(read(i, &one, &data));
      at.emplace_back(buffer->size(), data.size());
      buffer->append(data);
    }
    for (auto [pos, n] : at) records->push_back(std::string_view(*buffer).substr(pos, n));
    return Status();
  }

  // A compressed stream has no random access: keep one forward reader and
  // restart it when asked to go back. Sequential access costs one inflate.
  Status read_compressed(const IndexEntry& e, std::string* buffer, std::string_view* record) const {
    MutexLock lock(&mu_);
    if (!reader_ || reader_->position() > e.offset) {
      RecordReaderOptions ro;
      ro.compression = compression_;
      ro.verify_data_crc = options_.verify_data_crc;
      ro.max_record_bytes = options_.max_record_bytes;
      SLUICE_ASSIGN_OR_RETURN(reader_, RecordReader::open(path_, ro));
    }
    std::string_view data;
    while (reader_->position() <= e.offset) {
      Status s = reader_->next(&data);
      if (s.code() == StatusCode::kOutOfRange) {
        return data_loss_error(path_ + ": offset " + std::to_string(e.offset) +
                               ": index points past the end of the stream (stale index?)");
      }
      if (reader_->record_offset() == e.offset) {
        SLUICE_RETURN_IF_ERROR(s);
        if (framed_size(data.size()) != e.size) {
          return data_loss_error(path_ + ": offset " + std::to_string(e.offset) +
                                 ": index size does not match the record (stale index?)");
        }
        buffer->assign(data);
        *record = *buffer;
        return Status();
      }
      if (!s.ok() && s.code() != StatusCode::kDataLoss) return s;
      if (reader_->record_offset() > e.offset) break;
    }
    return data_loss_error(path_ + ": offset " + std::to_string(e.offset) +
                           ": no record starts there (stale index?)");
  }

  std::string path_;
  Compression compression_;
  std::vector<IndexEntry> index_;
  std::unique_ptr<detail::InputStream> plain_;
  RecordFileOptions options_;
  mutable Mutex mu_;
  mutable std::unique_ptr<RecordReader> reader_ SLUICE_GUARDED_BY(mu_);
};

// The index at `idx`, or nullopt when there is none. An object's is asked
// for directly (a 404 means none): one round trip, not two.
Result<std::optional<std::vector<IndexEntry>>> read_index_if_any(const std::string& idx) {
  if (remote::is_url(idx)) {
    // A URL with a query (a presigned one) signs only itself: no URL of its
    // index can be known, so the records are found by reading.
    if (idx.find('?') != std::string::npos) return std::optional<std::vector<IndexEntry>>();
    auto entries = read_index(idx);
    if (entries.ok()) return std::optional(std::move(*entries));
    if (entries.status().code() == StatusCode::kNotFound)
      return std::optional<std::vector<IndexEntry>>();
    return entries.status();
  }
  std::error_code ec;
  if (!std::filesystem::exists(idx, ec)) return std::optional<std::vector<IndexEntry>>();
  SLUICE_ASSIGN_OR_RETURN(auto entries, read_index(idx));
  return std::optional(std::move(entries));
}

}  // namespace

std::string index_path_for(const std::string& record_path) {
  std::filesystem::path p(record_path);
  if (p.extension() == ".tfrecord" || p.extension() == ".tfrecords" || p.extension() == ".record") {
    return p.replace_extension(".idx").string();
  }
  return record_path + ".idx";
}

Result<std::vector<IndexEntry>> parse_index(std::string_view text, std::string_view name) {
  std::vector<IndexEntry> entries;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (line.empty()) continue;
    auto bad = [&](std::string_view why) {
      return data_loss_error(std::string(name) + ": line " + std::to_string(line_no) + ": " +
                             std::string(why));
    };
    IndexEntry e;
    const char* p = line.data();
    const char* end = line.data() + line.size();
    auto r1 = std::from_chars(p, end, e.offset);
    if (r1.ec != std::errc())
      return bad("expected 'offset size', found '" + std::string(line) + "'");
    p = r1.ptr;
    if (p == end || (*p != ' ' && *p != '\t')) return bad("expected 'offset size'");
    while (p != end && (*p == ' ' || *p == '\t')) ++p;
    auto r2 = std::from_chars(p, end, e.size);
    if (r2.ec != std::errc() || r2.ptr != end) {
      return bad("expected 'offset size', found '" + std::string(line) + "'");
    }
    if (e.size < kFramingBytes)
      return bad("record size " + std::to_string(e.size) + " is below 16");
    if (!entries.empty() && e.offset < entries.back().offset + entries.back().size) {
      return bad("record at offset " + std::to_string(e.offset) + " overlaps the one before");
    }
    entries.push_back(e);
  }
  return entries;
}

Result<std::vector<IndexEntry>> read_index(const std::string& idx_path) {
  SLUICE_ASSIGN_OR_RETURN(std::string text, remote::read_whole(idx_path, uint64_t{1} << 32));
  return parse_index(text, idx_path);
}

std::string format_index(const std::vector<IndexEntry>& entries) {
  std::string out;
  out.reserve(entries.size() * 16);
  for (const IndexEntry& e : entries) {
    out += std::to_string(e.offset);
    out += ' ';
    out += std::to_string(e.size);
    out += '\n';
  }
  return out;
}

Status write_index(const std::string& idx_path, const std::vector<IndexEntry>& entries) {
  return detail::write_file_atomic(idx_path, format_index(entries));
}

Result<std::vector<IndexEntry>> build_index(const std::string& record_path,
                                            Compression compression) {
  RecordReaderOptions ro;
  ro.compression = compression;
  ro.verify_data_crc = false;  // the index needs framing only; reads verify data
  SLUICE_ASSIGN_OR_RETURN(auto reader, RecordReader::open(record_path, ro));
  std::vector<IndexEntry> entries;
  std::string_view data;
  for (;;) {
    Status s = reader->next(&data);
    if (s.code() == StatusCode::kOutOfRange) break;
    SLUICE_RETURN_IF_ERROR(s);
    entries.push_back({reader->record_offset(), framed_size(data.size())});
  }
  return entries;
}

Result<std::unique_ptr<RecordFile>> RecordFile::open(const std::string& path,
                                                     const RecordFileOptions& options) {
  Compression c = options.compression;
  if (c == Compression::kAuto) {
    SLUICE_ASSIGN_OR_RETURN(c, detect_compression(path));
  }
  std::unique_ptr<detail::InputStream> plain;
  if (c == Compression::kNone) {
    SLUICE_ASSIGN_OR_RETURN(plain, detail::open_input_stream(path, c));
  }
  std::string idx = index_path_for(path);
  std::vector<IndexEntry> entries;
  SLUICE_ASSIGN_OR_RETURN(auto found, read_index_if_any(idx));
  if (found) {
    entries = std::move(*found);
    if (plain && !entries.empty()) {
      const IndexEntry& last = entries.back();
      if (last.offset + last.size > static_cast<uint64_t>(plain->known_size())) {
        return data_loss_error(idx + ": index reaches byte " +
                               std::to_string(last.offset + last.size) + " but " + path + " has " +
                               std::to_string(plain->known_size()) +
                               " bytes (stale index: delete it to rebuild)");
      }
    }
  } else {
    SLUICE_ASSIGN_OR_RETURN(entries, build_index(path, c));
    if (options.write_missing_index) SLUICE_RETURN_IF_ERROR(write_index(idx, entries));
  }
  return std::unique_ptr<RecordFile>(
      new IndexedRecordFile(path, c, std::move(entries), std::move(plain), options));
}

}  // namespace sluice
