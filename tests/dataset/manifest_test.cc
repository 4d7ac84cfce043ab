#include <gtest/gtest.h>

#include "sluice/dataset.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

DatasetManifest sample() {
  DatasetManifest m;
  m.classes = {"cat", "dog"};
  SplitInfo s;
  s.compression = Compression::kGzip;
  s.records = 5;
  s.shards = {{"train-00000-of-00002.tfrecord", "train-00000-of-00002.idx", 3, 100, 0xdeadbeef},
              {"train-00001-of-00002.tfrecord", "train-00001-of-00002.idx", 2, 80, 0x00000001}};
  s.skipped = {{"a/b.jpg", "truncated"}};
  s.command = "sluice convert x -o y";
  s.created_by = "sluice 0.1.0";
  m.splits["train"] = s;
  return m;
}

TEST(ManifestTest, RoundTrip) {
  TempDir dir;
  ASSERT_TRUE(write_manifest(dir.path(), sample()).ok());
  auto m = read_manifest(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->classes, sample().classes);
  EXPECT_EQ(m->keys, tensorflow_feature_keys());
  const SplitInfo& s = m->splits.at("train");
  EXPECT_EQ(s.compression, Compression::kGzip);
  ASSERT_EQ(s.shards.size(), 2u);
  EXPECT_EQ(s.shards[0].crc32c, 0xdeadbeefu);
  EXPECT_EQ(s.shards[1].records, 2u);
  EXPECT_EQ(s.skipped.size(), 1u);
  EXPECT_EQ(s.command, "sluice convert x -o y");
  EXPECT_EQ(format_manifest(*m), format_manifest(sample()));
}

TEST(ManifestTest, RejectsDamage) {
  std::string good = format_manifest(sample());
  auto expect_bad = [](const std::string& text, const char* why) {
    auto m = parse_manifest(text, "d/dataset.json");
    EXPECT_FALSE(m.ok()) << why;
    EXPECT_NE(m.status().message().find("d/dataset.json"), std::string_view::npos) << why;
  };
  expect_bad("{", "not JSON");
  expect_bad("[]", "not an object");
  expect_bad(std::string(good).replace(good.find("\"version\": 1"), 12, "\"version\": 9"),
             "version");
  expect_bad(std::string(good).replace(good.find("\"records\": 5"), 12, "\"records\": 6"),
             "count sum");
  expect_bad(std::string(good).replace(good.find("deadbeef"), 8, "deadbeeg"), "crc hex");
  expect_bad(
      std::string(good).replace(good.find("train-00000-of-00002.tfrecord"), 29, "../../etc/passwd"),
      "path escape");
  expect_bad(std::string(good).replace(good.find("\"classes\""), 9, "\"klasses\""),
             "missing field");
}

TEST(ManifestTest, MissingManifestIsNotFound) {
  TempDir dir;
  EXPECT_EQ(read_manifest(dir.path()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice
