// TFRecord files: sequential reading, writing, index files and random access.
//
// Files are byte-compatible with TensorFlow's tf.io.TFRecordWriter and
// tf.data.TFRecordDataset (see docs/formats.md for the framing): every record
// is `uint64 length, uint32 masked_crc32c(length), data, uint32
// masked_crc32c(data)`, little-endian, optionally inside one whole-file GZIP
// or ZLIB stream. Index files (`.idx`) follow DALI's tfrecord2idx text
// format: one line `offset size` per record, size = 16 + data length.
//
// Errors name the file, the byte offset of the record and the reason:
//   kOutOfRange  clean end of file (not an error: the records are done)
//   kDataLoss    truncation or corruption (bad CRC, impossible length)
//   kResourceExhausted  a record longer than max_record_bytes
// A reader never allocates more than the bytes the file actually holds (or,
// for compressed files, the bytes actually inflated), so a corrupt length
// field cannot cause a huge allocation.
//
// Thread safety: one reader or writer per thread. RecordFile::read is
// const and may be called from many threads at once on an uncompressed
// file (it uses pread); on a compressed file it serialises internally.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice {

enum class Compression {
  kNone,
  kGzip,  // RFC 1952 whole-file stream, as TFRecordOptions("GZIP") writes
  kZlib,  // RFC 1950 whole-file stream, as TFRecordOptions("ZLIB") writes
  kAuto,  // readers only: decided from the file's first bytes
};

// "none", "gzip", "zlib", "auto".
std::string_view compression_name(Compression c);
// Parses the names above; an unknown name is kInvalidArgument.
Result<Compression> parse_compression(std::string_view name);
// Detects the compression of `path` from its first bytes: GZIP magic
// 1f 8b, or a ZLIB header (CMF/FLG check) that is not a plausible TFRecord
// header, else kNone.
Result<Compression> detect_compression(const std::string& path);

// Size of a framed record holding `data_bytes` of payload.
constexpr uint64_t framed_size(uint64_t data_bytes) {
  return data_bytes + 16;
}

// Appends the framed form of `data` (header, data, footer) to `out`.
void append_framed_record(std::string_view data, std::string* out);

struct RecordReaderOptions {
  // How the file is compressed. kAuto looks at the first bytes.
  Compression compression = Compression::kAuto;
  // Check the data CRC of every record. The length CRC is always checked:
  // without it, framing cannot be trusted. Turning this off is for
  // benchmarks only.
  bool verify_data_crc = true;
  // Records longer than this are refused (kResourceExhausted) before any
  // allocation. Default 1 GiB.
  uint64_t max_record_bytes = uint64_t{1} << 30;
  // Read-ahead buffer. Larger buffers mean fewer system calls; 1 MiB
  // already reads at memory speed from the page cache.
  size_t buffer_bytes = size_t{1} << 20;
};

// Reads the records of one file in order.
class RecordReader {
 public:
  static Result<std::unique_ptr<RecordReader>> open(const std::string& path,
                                                    const RecordReaderOptions& options = {});
  virtual ~RecordReader() = default;

  // Reads the next record. On OK, *record views bytes owned by the reader,
  // valid until the next call. At the clean end of the file returns
  // kOutOfRange. A data CRC mismatch returns kDataLoss but leaves the reader
  // on the next record (the length was verified, so the framing still
  // holds): the caller may go on. Any other error is final: later calls
  // return the same status.
  virtual Status next(std::string_view* record) = 0;

  // True once the reader hit an error it cannot read past (every error but
  // a data CRC mismatch).
  virtual bool stuck() const = 0;

  // Offset of the last record returned (or failed), in the uncompressed
  // stream: a byte offset in the file for uncompressed files.
  virtual uint64_t record_offset() const = 0;
  // Bytes of the uncompressed stream consumed so far.
  virtual uint64_t position() const = 0;
  virtual const std::string& path() const = 0;
  virtual Compression compression() const = 0;
};

struct RecordWriterOptions {
  Compression compression = Compression::kNone;  // kAuto is refused
  // zlib level for kGzip and kZlib (0-9, -1 = zlib's default, 6).
  int level = -1;
  // true: write under a temporary name and rename on close(), so the file
  // appears whole (shards). false: write in place, for files read while they
  // grow (TensorBoard event files); flush() makes written records visible.
  bool atomic = true;
};

// Writes records to `path`. By default the file appears whole or not at all:
// records go to a temporary name beside it, and close() flushes, fsyncs and
// renames; destroying an unclosed writer removes the temporary file. With
// options.atomic = false the file is written in place and kept.
class RecordWriter {
 public:
  static Result<std::unique_ptr<RecordWriter>> create(const std::string& path,
                                                      const RecordWriterOptions& options = {});
  virtual ~RecordWriter() = default;

  // Appends one record. Returns its offset in the uncompressed stream.
  virtual Result<uint64_t> write(std::string_view record) = 0;
  // Bytes of the uncompressed stream written so far (= file size for
  // uncompressed files).
  virtual uint64_t position() const = 0;
  // Bytes the file holds so far (compressed size for compressed files;
  // exact only after close()).
  virtual uint64_t file_bytes() const = 0;
  // Hands buffered records to the operating system (other processes see
  // them; not fsynced). For compressed streams only what zlib has already
  // emitted is visible.
  virtual Status flush() = 0;
  // Finishes the stream, fsyncs and renames into place.
  virtual Status close() = 0;
};

// One index line: where a framed record starts and how long it is
// (16 + data length), in the uncompressed stream.
struct IndexEntry {
  uint64_t offset = 0;
  uint64_t size = 0;
  friend bool operator==(const IndexEntry&, const IndexEntry&) = default;
};

// The index path beside a record file: "x.tfrecord" -> "x.idx", otherwise
// the file name with ".idx" appended.
std::string index_path_for(const std::string& record_path);

// Parses DALI tfrecord2idx text. Every line must hold two unsigned decimal
// numbers; entries must not overlap. `name` is used in error messages.
Result<std::vector<IndexEntry>> parse_index(std::string_view text, std::string_view name);
Result<std::vector<IndexEntry>> read_index(const std::string& idx_path);
std::string format_index(const std::vector<IndexEntry>& entries);
// Writes atomically.
Status write_index(const std::string& idx_path, const std::vector<IndexEntry>& entries);
// Scans a record file (verifying length CRCs) and returns its index.
Result<std::vector<IndexEntry>> build_index(const std::string& record_path,
                                            Compression compression = Compression::kAuto);

struct RecordFileOptions {
  Compression compression = Compression::kAuto;
  bool verify_data_crc = true;
  uint64_t max_record_bytes = uint64_t{1} << 30;
  // Use the index file beside the record file when present; build one by
  // scanning otherwise (and write it when write_missing_index is set).
  bool write_missing_index = false;
};

// Random access to the records of one file through its index.
class RecordFile {
 public:
  static Result<std::unique_ptr<RecordFile>> open(const std::string& path,
                                                  const RecordFileOptions& options = {});
  virtual ~RecordFile() = default;

  virtual size_t size() const = 0;
  virtual const std::vector<IndexEntry>& index() const = 0;
  // Reads record i. *buffer receives the framed bytes (its capacity is
  // reused across calls) and *record views the data inside it, valid while
  // *buffer is unchanged. Thread-safe with one buffer per thread.
  virtual Status read(size_t i, std::string* buffer, std::string_view* record) const = 0;
  // Reads records first .. first+count-1 into *buffer, one view each in
  // *records: one read (one request, for an object) when they lie end to end
  // in an uncompressed file. Thread-safe with one buffer per thread.
  virtual Status read_span(size_t first, size_t count, std::string* buffer,
                           std::vector<std::string_view>* records) const = 0;
  virtual const std::string& path() const = 0;
  virtual Compression compression() const = 0;
};

// The CRC32C of `data` (Castagnoli), and TensorFlow's masked form of it.
uint32_t crc32c(std::string_view data);
uint32_t crc32c_extend(uint32_t crc, std::string_view data);
uint32_t mask_crc(uint32_t crc);
// The CRC32C of a whole file's bytes, read in 1 MiB pieces (memory stays
// flat whatever the file size); *bytes receives the file size.
Result<uint32_t> crc32c_of_file(const std::string& path, uint64_t* bytes);
uint32_t unmask_crc(uint32_t masked);

}  // namespace sluice
