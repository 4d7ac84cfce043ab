#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "tests/record/record_test_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

TEST(WriterTest, FramingIsTensorFlows) {
  TempDir dir;
  std::string p = write_records(dir.path() + "/f.tfrecord", {"abc"});
  std::string bytes = slurp(p);
  ASSERT_EQ(bytes.size(), 19u);
  // length 3, little-endian
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  uint32_t lcrc, dcrc;
  std::memcpy(&lcrc, bytes.data() + 8, 4);
  std::memcpy(&dcrc, bytes.data() + 15, 4);
  EXPECT_EQ(lcrc, mask_crc(crc32c(bytes.substr(0, 8))));
  EXPECT_EQ(bytes.substr(12, 3), "abc");
  EXPECT_EQ(dcrc, mask_crc(crc32c("abc")));
  std::string framed;
  append_framed_record("abc", &framed);
  EXPECT_EQ(framed, bytes);
}

TEST(WriterTest, ReturnsOffsetsAndPosition) {
  TempDir dir;
  auto w = RecordWriter::create(dir.path() + "/o.tfrecord");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*(*w)->write("a"), 0u);
  EXPECT_EQ(*(*w)->write(std::string(2 << 20, 'b')), 17u);  // large: written around the buffer
  EXPECT_EQ(*(*w)->write("c"), 17u + 16 + (2 << 20));
  EXPECT_EQ((*w)->position(), 17u + 16 + (2 << 20) + 17);
  ASSERT_TRUE((*w)->close().ok());
  Status s;
  auto got = read_all(dir.path() + "/o.tfrecord", &s);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].size(), size_t{2} << 20);
}

TEST(WriterTest, NothingAppearsBeforeCloseAndAbandonedWritersCleanUp) {
  TempDir dir;
  std::string p = dir.path() + "/x.tfrecord";
  {
    auto w = RecordWriter::create(p);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->write("data").ok());
    EXPECT_FALSE(std::filesystem::exists(p));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(WriterTest, DeterministicCompressedBytes) {
  TempDir dir;
  std::vector<std::string> recs(100, "some text to compress");
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    std::string a = slurp(write_records(dir.path() + "/a", recs, c));
    std::string b = slurp(write_records(dir.path() + "/b", recs, c));
    EXPECT_EQ(a, b);
    EXPECT_LT(a.size(), 100u * 37);
  }
  std::string gz = slurp(dir.path() + "/a");
  EXPECT_EQ(static_cast<uint8_t>(gz[0]), 0x78);  // last one written was zlib
}

TEST(WriterTest, RejectsBadOptions) {
  TempDir dir;
  RecordWriterOptions wo;
  wo.compression = Compression::kAuto;
  EXPECT_EQ(RecordWriter::create(dir.path() + "/a", wo).status().code(),
            StatusCode::kInvalidArgument);
  wo.compression = Compression::kGzip;
  wo.level = 12;
  EXPECT_EQ(RecordWriter::create(dir.path() + "/a", wo).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(RecordWriter::create("/nonexistent-dir/a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(parse_compression("lz4").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST(WriterTest, InPlaceWriterShowsFlushedRecordsWhileOpen) {
  TempDir dir;
  std::string p = dir.path() + "/events.out.tfevents.1";
  RecordWriterOptions wo;
  wo.atomic = false;
  auto w = RecordWriter::create(p, wo);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->write("first").ok());
  ASSERT_TRUE((*w)->flush().ok());
  Status s;
  EXPECT_EQ(read_all(p, &s), std::vector<std::string>{"first"});
  ASSERT_TRUE((*w)->write("second").ok());
  w->reset();  // destroyed without close: what was written stays
  EXPECT_EQ(read_all(p, &s), (std::vector<std::string>{"first", "second"}));
}

}  // namespace
}  // namespace sluice
