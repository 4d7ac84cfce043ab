// Helpers for record tests: write records to a file, damage files.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file_util.h"
#include "sluice/record.h"

namespace sluice {

inline std::string write_records(const std::string& path, const std::vector<std::string>& records,
                                 Compression c = Compression::kNone) {
  RecordWriterOptions wo;
  wo.compression = c;
  auto w = RecordWriter::create(path, wo);
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  for (const auto& r : records) EXPECT_TRUE((*w)->write(r).ok());
  EXPECT_TRUE((*w)->close().ok());
  return path;
}

inline std::vector<std::string> read_all(const std::string& path, Status* final_status,
                                         const RecordReaderOptions& ro = {}) {
  std::vector<std::string> out;
  auto r = RecordReader::open(path, ro);
  if (!r.ok()) {
    *final_status = r.status();
    return out;
  }
  std::string_view rec;
  for (;;) {
    Status s = (*r)->next(&rec);
    if (!s.ok()) {
      *final_status = s;
      return out;
    }
    out.emplace_back(rec);
  }
}

inline std::string slurp(const std::string& path) {
  return *detail::read_file(path);
}
inline void spit(const std::string& path, const std::string& data) {
  ASSERT_TRUE(detail::write_file_atomic(path, data).ok());
}

}  // namespace sluice
