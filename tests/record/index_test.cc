#include <gtest/gtest.h>

#include <filesystem>

#include "tests/record/record_test_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

TEST(IndexTest, ParseAndFormatRoundTrip) {
  std::vector<IndexEntry> e{{0, 21}, {21, 17}, {38, 1000}};
  EXPECT_EQ(format_index(e), "0 21\n21 17\n38 1000\n");
  auto parsed = parse_index("0 21\n21 17\r\n38 1000", "x.idx");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, e);
}

TEST(IndexTest, ParseRejectsGarbageWithLineNumbers) {
  auto r = parse_index("0 21\n21 x\n", "bad.idx");
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("bad.idx: line 2"), std::string_view::npos);
  EXPECT_FALSE(parse_index("0 21 5\n", "i").ok());
  EXPECT_FALSE(parse_index("-1 21\n", "i").ok());
  EXPECT_FALSE(parse_index("0 8\n", "i").ok());                         // below framing size
  EXPECT_FALSE(parse_index("0 21\n10 21\n", "i").ok());                 // overlap
  EXPECT_FALSE(parse_index("99999999999999999999999 21\n", "i").ok());  // overflow
}

TEST(IndexTest, BuildMatchesWriterOffsets) {
  TempDir dir;
  std::string p = write_records(dir.path() + "/a.tfrecord", {"x", "yy", "", "zzz"});
  auto idx = build_index(p);
  ASSERT_TRUE(idx.ok());
  EXPECT_EQ(*idx, (std::vector<IndexEntry>{{0, 17}, {17, 18}, {35, 16}, {51, 19}}));
  EXPECT_EQ(index_path_for(p), dir.path() + "/a.idx");
  EXPECT_EQ(index_path_for("/d/data.gz"), "/d/data.gz.idx");
}

TEST(RecordFileTest, RandomAccessAllOrdersAndCompressions) {
  TempDir dir;
  std::vector<std::string> recs;
  for (int i = 0; i < 50; ++i)
    recs.push_back("record-" + std::to_string(i) + std::string(i * 37, 'p'));
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    std::string p = write_records(dir.path() + "/r-" + std::string(compression_name(c)), recs, c);
    RecordFileOptions fo;
    fo.write_missing_index = true;
    auto f = RecordFile::open(p, fo);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    ASSERT_EQ((*f)->size(), recs.size());
    EXPECT_TRUE(std::filesystem::exists(index_path_for(p)));
    std::string buf;
    std::string_view rec;
    for (size_t i : {size_t{7}, size_t{3}, size_t{49}, size_t{0}, size_t{8}, size_t{8}}) {
      ASSERT_TRUE((*f)->read(i, &buf, &rec).ok()) << i;
      EXPECT_EQ(rec, recs[i]);
    }
    EXPECT_EQ((*f)->read(50, &buf, &rec).code(), StatusCode::kOutOfRange);
    // Re-open through the written index gives the same entries.
    auto again = RecordFile::open(p);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)->index(), (*f)->index());
  }
}

TEST(RecordFileTest, StaleIndexIsDetected) {
  TempDir dir;
  std::string p = write_records(dir.path() + "/s.tfrecord", {"aaaa", "bbbb"});
  ASSERT_TRUE(write_index(index_path_for(p), {{0, 20}, {20, 20}, {40, 20}}).ok());
  auto f = RecordFile::open(p);
  EXPECT_EQ(f.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(f.status().message().find("stale index"), std::string_view::npos);
  // An index whose sizes disagree with the headers fails at read time.
  ASSERT_TRUE(write_index(index_path_for(p), {{0, 19}, {19, 21}}).ok());
  auto g = RecordFile::open(p);
  ASSERT_TRUE(g.ok());
  std::string buf;
  std::string_view rec;
  EXPECT_EQ((*g)->read(0, &buf, &rec).code(), StatusCode::kDataLoss);
}

TEST(RecordFileTest, CorruptRecordFailsAloneOthersRead) {
  TempDir dir;
  std::string p = write_records(dir.path() + "/c.tfrecord", {"aaaa", "bbbb", "cccc"});
  std::string bytes = slurp(p);
  bytes[20 + 12] ^= 1;
  spit(p, bytes);
  auto f = RecordFile::open(p);
  ASSERT_TRUE(f.ok());
  std::string buf;
  std::string_view rec;
  EXPECT_TRUE((*f)->read(0, &buf, &rec).ok());
  Status s = (*f)->read(1, &buf, &rec);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("offset 20: data CRC mismatch"), std::string_view::npos);
  EXPECT_TRUE((*f)->read(2, &buf, &rec).ok());
  EXPECT_EQ(rec, "cccc");
}

}  // namespace
}  // namespace sluice
