// Builds small ImageFolder trees for dataset tests with the project's own
// renderer, and compares folders byte for byte.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "base/file_util.h"
#include "sluice/image.h"
#include "tests/temp_dir.h"

namespace sluice {

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// root/cN/imgK.jpg (and every 5th a .png), `per_class` per class.
inline void make_image_folder(const std::string& root, int classes, int per_class, int size = 40) {
  int index = 0;
  for (int c = 0; c < classes; ++c) {
    for (int i = 0; i < per_class; ++i, ++index) {
      Image img = render_synthetic_image(c, classes, 7, index, size + i % 5, size);
      bool png = index % 5 == 4;
      auto bytes = png ? encode_png(img) : encode_jpeg(img, 85);
      ASSERT_TRUE(bytes.ok());
      write_bytes(
          root + "/c" + std::to_string(c) + "/img" + std::to_string(i) + (png ? ".png" : ".jpg"),
          *bytes);
    }
  }
}

// Every regular file under `dir` (relative name -> bytes).
inline std::map<std::string, std::string> folder_bytes(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file())
      out[e.path().filename().string()] = *detail::read_file(e.path().string());
  }
  return out;
}

}  // namespace sluice
