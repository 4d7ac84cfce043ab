#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>

#include "sluice/record.h"

namespace sluice {
namespace {

TEST(Crc32cTest, KnownVectors) {
  // RFC 3720 B.4 and the common check value.
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8a9136aau);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62a8ab43u);
  std::string inc;
  for (int i = 0; i < 32; ++i) inc.push_back(static_cast<char>(i));
  EXPECT_EQ(crc32c(inc), 0x46dd794eu);
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  std::mt19937_64 rng(std::random_device{}());
  std::string data(10000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t split : {size_t{0}, size_t{1}, size_t{4095}, size_t{9999}, size_t{10000}}) {
    std::string_view v(data);
    EXPECT_EQ(crc32c_extend(crc32c(v.substr(0, split)), v.substr(split)), crc32c(v)) << split;
  }
}

TEST(Crc32cTest, MaskRoundTripsAndDiffers) {
  for (uint32_t c : {0u, 1u, 0xe3069283u, 0xffffffffu}) {
    EXPECT_EQ(unmask_crc(mask_crc(c)), c);
    EXPECT_NE(mask_crc(c), c);
  }
  EXPECT_EQ(mask_crc(0), 0xa282ead8u);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST(Crc32cFileTest, MatchesInMemoryAcrossPieces) {
  std::string path = ::testing::TempDir() + "/crc32c_file_test.bin";
  std::string data(3 * (1 << 20) + 17, '\0');
  std::mt19937_64 rng(99);
  for (char& c : data) c = static_cast<char>(rng());
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(data.data(), 1, data.size(), f);
    std::fclose(f);
  }
  uint64_t bytes = 0;
  auto crc = crc32c_of_file(path, &bytes);
  ASSERT_TRUE(crc.ok());
  EXPECT_EQ(*crc, crc32c(data));
  EXPECT_EQ(bytes, data.size());
  std::remove(path.c_str());
  EXPECT_EQ(crc32c_of_file(path, &bytes).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice
