// Byte streams under the record reader and writer: a plain file, or a
// whole-file GZIP/ZLIB stream. Readers inflate with ISA-L (several times
// zlib's speed); writers deflate with zlib, the reference encoder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/file_util.h"
#include "sluice/record.h"

namespace sluice::detail {

class InputStream {
 public:
  virtual ~InputStream() = default;
  // Reads up to n bytes; fewer only at the end of the stream. 0 = end.
  // Damage to the stream is kDataLoss naming the compressed byte but not the
  // file: the record reader adds the file and the record's offset.
  virtual Result<size_t> read(void* buf, size_t n) = 0;
  // Total uncompressed bytes when known in advance (plain files), else -1.
  virtual int64_t known_size() const = 0;
  // Reads n bytes at `offset` without moving the stream, when the stream
  // supports it (plain files); kUnimplemented otherwise.
  virtual Result<size_t> pread(uint64_t offset, void* buf, size_t n) const = 0;
  // The file's path or the object's URL.
  virtual const std::string& name() const = 0;
};

// Opens `path` (a file, or an s3:// or http(s):// object) as a stream of
// the given compression (not kAuto).
Result<std::unique_ptr<InputStream>> open_input_stream(const std::string& path,
                                                       Compression compression);

class OutputStream {
 public:
  virtual ~OutputStream() = default;
  virtual Status write(const void* buf, size_t n) = 0;
  // Compressed bytes handed to the file so far.
  virtual uint64_t file_bytes() const = 0;
  // Ends the compressed stream (if any), flushes, fsyncs, closes.
  virtual Status finish() = 0;
};

Result<std::unique_ptr<OutputStream>> open_output_stream(File file, Compression compression,
                                                         int level);

}  // namespace sluice::detail
