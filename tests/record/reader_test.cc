// Reading: framing, clean end, and each kind of damage (after leveldb's
// log_test: flip a byte, re-sign a CRC, truncate).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "tests/record/record_test_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

class ReaderTest : public ::testing::Test {
 protected:
  std::string file(const std::string& name) { return dir_.path() + "/" + name; }
  TempDir dir_;
};

TEST_F(ReaderTest, EmptyFileHasNoRecords) {
  std::string p = write_records(file("e.tfrecord"), {});
  Status s;
  EXPECT_TRUE(read_all(p, &s).empty());
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
}

TEST_F(ReaderTest, RoundTripSizesAcrossBufferBoundaries) {
  std::mt19937 rng(1234);
  std::vector<std::string> recs;
  // Empty, tiny, around the 1 MiB buffer, and larger than it.
  for (size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{(1 << 20) - 16}, size_t{(1 << 20) - 3},
                   size_t{1 << 20}, size_t{3 << 20}, size_t{7}}) {
    std::string r(n, '\0');
    for (char& c : r) c = static_cast<char>(rng());
    recs.push_back(r);
  }
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    std::string p = write_records(file("r" + std::string(compression_name(c))), recs, c);
    Status s;
    RecordReaderOptions ro;
    ro.buffer_bytes = 4096;  // force many refills
    auto got = read_all(p, &s, ro);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.to_string();
    EXPECT_EQ(got, recs) << compression_name(c);
    auto detected = detect_compression(p);
    ASSERT_TRUE(detected.ok());
    EXPECT_EQ(*detected, c);
  }
}

TEST_F(ReaderTest, OffsetsAndPositions) {
  std::string p = write_records(file("o.tfrecord"), {"a", "bcd", ""});
  auto r = RecordReader::open(p);
  ASSERT_TRUE(r.ok());
  std::string_view rec;
  std::vector<uint64_t> offsets;
  while ((*r)->next(&rec).ok()) offsets.push_back((*r)->record_offset());
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, 17, 36}));
  EXPECT_EQ((*r)->position(), 52u);
}

TEST_F(ReaderTest, DataCrcMismatchIsReportedAndReadingGoesOn) {
  std::string p = write_records(file("d.tfrecord"), {"hello", "world", "again"});
  std::string bytes = slurp(p);
  bytes[21 + 12] ^= 0x01;  // first byte of record 1's data
  spit(p, bytes);
  auto r = RecordReader::open(p);
  ASSERT_TRUE(r.ok());
  std::string_view rec;
  ASSERT_TRUE((*r)->next(&rec).ok());
  EXPECT_EQ(rec, "hello");
  Status s = (*r)->next(&rec);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("d.tfrecord: offset 21: data CRC mismatch"), std::string_view::npos)
      << s.message();
  ASSERT_TRUE((*r)->next(&rec).ok());
  EXPECT_EQ(rec, "again");
}

TEST_F(ReaderTest, DataCrcCheckCanBeSkippedForBenchmarks) {
  std::string p = write_records(file("d.tfrecord"), {"hello"});
  std::string bytes = slurp(p);
  bytes[12] ^= 0x01;
  spit(p, bytes);
  RecordReaderOptions ro;
  ro.verify_data_crc = false;
  Status s;
  EXPECT_EQ(read_all(p, &s, ro).size(), 1u);
}

TEST_F(ReaderTest, LengthCrcMismatchIsFinal) {
  std::string p = write_records(file("l.tfrecord"), {"hello", "world"});
  std::string bytes = slurp(p);
  bytes[8] ^= 0x40;  // the length CRC itself
  spit(p, bytes);
  auto r = RecordReader::open(p);
  ASSERT_TRUE(r.ok());
  std::string_view rec;
  Status s = (*r)->next(&rec);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("offset 0: length CRC mismatch"), std::string_view::npos);
  EXPECT_EQ((*r)->next(&rec), s);  // sticky
}

TEST_F(ReaderTest, ResignedHugeLengthIsTruncationWithoutAllocation) {
  std::string p = write_records(file("h.tfrecord"), {"hello"});
  std::string bytes = slurp(p);
  uint64_t huge = uint64_t{1} << 40;  // 1 TiB, with a valid length CRC
  std::memcpy(bytes.data(), &huge, 8);
  uint32_t crc = mask_crc(crc32c(std::string_view(bytes.data(), 8)));
  std::memcpy(bytes.data() + 8, &crc, 4);
  spit(p, bytes);
  RecordReaderOptions ro;
  ro.max_record_bytes = uint64_t{1} << 62;
  Status s;
  read_all(p, &s, ro);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated record: header says 1099511627776 data bytes"),
            std::string_view::npos)
      << s.message();
}

TEST_F(ReaderTest, LengthOverLimitIsResourceExhausted) {
  std::string p = write_records(file("big.tfrecord"), {std::string(1000, 'x')});
  RecordReaderOptions ro;
  ro.max_record_bytes = 999;
  Status s;
  read_all(p, &s, ro);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
}

TEST_F(ReaderTest, TruncationAtEveryLengthIsDataLossOrCleanEnd) {
  std::string p = write_records(file("t.tfrecord"), {"hello", "world"});
  std::string bytes = slurp(p);
  for (size_t n = 0; n < bytes.size(); ++n) {
    spit(p, bytes.substr(0, n));
    Status s;
    auto got = read_all(p, &s);
    bool boundary = n == 0 || n == 21;
    EXPECT_EQ(s.code(), boundary ? StatusCode::kOutOfRange : StatusCode::kDataLoss) << n;
    EXPECT_EQ(got.size(), n >= 21 ? 1u : 0u) << n;
    if (!boundary) {
      EXPECT_NE(s.message().find("truncated"), std::string_view::npos) << s.message();
    }
  }
}

TEST_F(ReaderTest, TruncatedGzipStreamIsDataLoss) {
  std::vector<std::string> recs(50, std::string(1000, 'q'));
  std::string p = write_records(file("t.gz"), recs, Compression::kGzip);
  std::string bytes = slurp(p);
  spit(p, bytes.substr(0, bytes.size() - 10));  // cut into the trailer
  Status s;
  read_all(p, &s);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.to_string();
}

// A cut compressed stream is final: the reader must not be asked again
// forever (inspect once looped, growing its problem list until the OOM
// killer came), and the error names the record's offset in the inflated
// stream, where TensorFlow reports a truncated record, and the cut.
TEST_F(ReaderTest, TruncatedCompressedStreamIsFinalAndNamesTheRecord) {
  std::vector<std::string> recs;
  std::mt19937 rng(11);
  for (int i = 0; i < 40; ++i) {
    std::string r(3000, '\0');
    for (char& c : r) c = static_cast<char>(rng());  // incompressible, so the cut lands mid-stream
    recs.push_back(r);
  }
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    std::string name(compression_name(c));
    std::string p = write_records(file("t." + name), recs, c);
    std::string bytes = slurp(p);
    spit(p, bytes.substr(0, bytes.size() / 2));
    auto r = RecordReader::open(p);
    ASSERT_TRUE(r.ok());
    std::string_view rec;
    size_t good = 0;
    Status s;
    while ((s = (*r)->next(&rec)).ok()) ++good;
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.to_string();
    EXPECT_TRUE((*r)->stuck());
    EXPECT_GT(good, 0u);
    EXPECT_LT(good, recs.size());
    uint64_t offset = good * (3000 + 16);
    EXPECT_EQ((*r)->record_offset(), offset);
    EXPECT_EQ(s.message(), p + ": offset " + std::to_string(offset) +
                               ": compressed stream ends early at byte " +
                               std::to_string(bytes.size() / 2) + " (truncated " + name + " file)");
    Status again = (*r)->next(&rec);
    EXPECT_EQ(again.code(), StatusCode::kDataLoss);
    EXPECT_EQ(again.message(), s.message());
  }
}

TEST_F(ReaderTest, CorruptGzipStreamIsDataLoss) {
  std::vector<std::string> recs;
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    std::string r(500, '\0');
    for (char& c : r) c = static_cast<char>('a' + rng() % 4);
    recs.push_back(r);
  }
  std::string p = write_records(file("c.gz"), recs, Compression::kGzip);
  std::string bytes = slurp(p);
  bytes[bytes.size() / 2] ^= 0x55;
  spit(p, bytes);
  Status s;
  read_all(p, &s);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.to_string();
}

TEST_F(ReaderTest, ConcatenatedGzipMembersReadAsOneStream) {
  std::string a = slurp(write_records(file("a.gz"), {"one", "two"}, Compression::kGzip));
  std::string b = slurp(write_records(file("b.gz"), {"three"}, Compression::kGzip));
  spit(file("ab.gz"), a + b);
  Status s;
  EXPECT_EQ(read_all(file("ab.gz"), &s), (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
}

// A gzip file of `head` then `zeros` zero bytes, deflated a megabyte at a
// time (a bomb: a few hundred KB that inflate to hundreds of MB).
void write_gzip_bomb(const std::string& path, const std::string& head, uint64_t zeros) {
  z_stream z{};
  ASSERT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out;
  std::vector<unsigned char> buf(1 << 16);
  const std::string chunk(1 << 20, '\0');
  auto pump = [&](const std::string& in, int flush) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    do {
      z.next_out = buf.data();
      z.avail_out = static_cast<uInt>(buf.size());
      deflate(&z, flush);
      out.append(reinterpret_cast<char*>(buf.data()), buf.size() - z.avail_out);
    } while (z.avail_out == 0);
  };
  pump(head, Z_NO_FLUSH);
  for (uint64_t done = 0; done < zeros; done += chunk.size()) pump(chunk, Z_NO_FLUSH);
  pump("", Z_FINISH);
  deflateEnd(&z);
  spit(path, out);
}

long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Gzip bombs: a record header (valid CRC) claiming 256 MB over 256 MB of
// deflated zeros is refused before any of it is inflated or allocated when
// over max_record_bytes (the cap on one record's memory, 1 GiB by default);
// and a good record followed by 256 MB of zeros gives the record, then a
// length CRC error at the zeros, without inflating them.
TEST_F(ReaderTest, GzipBombsAreRefusedWithBoundedMemory) {
  const uint64_t big = uint64_t{256} << 20;
  std::string header(12, '\0');
  std::memcpy(header.data(), &big, 8);
  const uint32_t crc = mask_crc(crc32c(std::string_view(header.data(), 8)));
  std::memcpy(header.data() + 8, &crc, 4);
  write_gzip_bomb(file("bomb.gz"), header, big);
  EXPECT_LT(std::filesystem::file_size(file("bomb.gz")), 1u << 20);
  const long before = max_rss_kb();
  RecordReaderOptions ro;
  ro.max_record_bytes = uint64_t{64} << 20;
  Status s;
  EXPECT_TRUE(read_all(file("bomb.gz"), &s, ro).empty());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_NE(s.message().find("offset 0"), std::string_view::npos) << s.message();

  const std::string good = slurp(write_records(file("good.tfrecord"), {"hello"}));
  write_gzip_bomb(file("tail.gz"), good, big);
  EXPECT_EQ(read_all(file("tail.gz"), &s), std::vector<std::string>{"hello"});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.to_string();
  EXPECT_NE(s.message().find("offset 21: length CRC mismatch"), std::string_view::npos)
      << s.message();
  EXPECT_LT(max_rss_kb() - before, 32 * 1024);
}

TEST_F(ReaderTest, MissingFileAndFolderAreClear) {
  Status s;
  read_all(file("nope.tfrecord"), &s);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("nope.tfrecord"), std::string_view::npos);
  read_all(dir_.path(), &s);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST_F(ReaderTest, PlainRecordWithZlibLookingLengthIsPlain) {
  // Length 40056 = bytes 78 9c ...: a valid zlib header, but a valid record.
  std::string p = write_records(file("z.tfrecord"), {std::string(40056, 'z')});
  auto c = detect_compression(p);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, Compression::kNone);
  Status s;
  EXPECT_EQ(read_all(p, &s).size(), 1u);
}

}  // namespace
}  // namespace sluice
