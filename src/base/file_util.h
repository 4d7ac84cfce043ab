// Small POSIX file helpers shared by every module: whole-file reads, pread
// loops, and the temp-name + fsync + rename dance that makes files appear
// whole (DESIGN.md invariant 5).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice::detail {

// Reads the whole file. Refuses files larger than `max_bytes`.
Result<std::string> read_file(const std::string& path, uint64_t max_bytes = uint64_t{1} << 32);

// An open file descriptor, closed on destruction.
class File {
 public:
  File() = default;
  File(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  File(File&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  static Result<File> open_read(const std::string& path);
  // Creates (truncating) for writing.
  static Result<File> create(const std::string& path);
  // Opens for writing at the end, creating it if missing (O_APPEND: each
  // write lands whole at the end, whoever else appends).
  static Result<File> append(const std::string& path);

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool is_open() const { return fd_ >= 0; }

  Result<uint64_t> size() const;
  // Reads up to n bytes at offset; returns the count (short only at EOF).
  Result<size_t> pread(uint64_t offset, void* buf, size_t n) const;
  // Reads up to n bytes from the current position (short only at EOF).
  Result<size_t> read(void* buf, size_t n);
  Status write_all(const void* buf, size_t n);
  Status sync();
  Status close();

 private:
  int fd_ = -1;
  std::string path_;
};

// Writes `data` to `path` atomically: to "path.tmp-PID", fsync, rename, then
// fsync the folder so the rename itself is durable.
Status write_file_atomic(const std::string& path, std::string_view data);

// fsync of the folder holding `path` (after a rename into it).
Status sync_parent_dir(const std::string& path);

// A temporary name beside `path`, unique to this process.
std::string temp_name_for(const std::string& path);

// Whether the process that named a temporary file ".tmp-PID" (`digits` is
// the PID) may still be writing it: this process, or any live one (one
// that exists but is not ours to signal counts). Not our naming: true.
bool temp_writer_alive(std::string_view digits);

// Removes the temporaries of `path` ("path.tmp-PID") that a killed writer
// left, whose PID is no longer alive; returns how many. A checkpoint or
// a shard is hundreds of MB: each crash would otherwise leave one more.
int remove_dead_temporaries_of(const std::string& path);

}  // namespace sluice::detail
