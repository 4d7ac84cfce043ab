// NumPy's .npy format (version 1.0): written here so that features, labels
// and keys load with numpy.load (no pickle) and torch.from_numpy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "sluice/status.h"

namespace sluice::training {

// Rows appended as they come; the header, with the final row count, is
// written last over the space reserved for it. The file appears whole
// (temporary name + rename) on finish().
class NpyWriter {
 public:
  // `descr` is NumPy's type string ("<f4", "<f2", "<i8"); a row holds
  // `cols` values. cols 0: a 1-D array of single values.
  static Result<NpyWriter> create(const std::string& path, std::string descr, int64_t cols,
                                  int item_bytes);
  NpyWriter(NpyWriter&&) = default;
  NpyWriter& operator=(NpyWriter&&) = default;
  ~NpyWriter();

  Status append(const void* rows, int64_t count);
  Status finish();
  int64_t rows() const { return rows_; }

 private:
  NpyWriter() = default;
  std::vector<int64_t> shape() const {
    return cols_ > 0 ? std::vector<int64_t>{rows_, cols_} : std::vector<int64_t>{rows_};
  }
  std::string path_, tmp_, descr_;
  int64_t cols_ = 0, rows_ = 0;
  int item_bytes_ = 0;
  detail::File file_;
  uint64_t at_ = 0;
  bool finished_ = false;
};

// NumPy's header for an array of `shape`, padded so the data starts at a
// multiple of 64 bytes; `min_bytes` reserves room for a later rewrite.
std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape,
                       size_t min_bytes = 0);

// A whole 1-D array of strings as fixed-width UTF-32 ('<U<n>'), n = the
// longest; invalid UTF-8 becomes U+FFFD.
Status write_npy_strings(const std::string& path, const std::vector<std::string>& values);

}  // namespace sluice::training
