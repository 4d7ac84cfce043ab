// The part record's JSON (part_record.cc): round trip, and damage named.
#include "dataset/part_record.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::detail {
namespace {

PartRecord sample() {
  PartRecord r;
  r.split = "train";
  r.part = 1;
  r.parts = 3;
  r.fingerprint = "0123456789abcdef";
  r.images = 100;
  r.listing_digest = "fedcba9876543210";
  r.shard_count = 6;
  r.first_shard = 2;
  r.shards = {{"train-00002-of-00006.tfrecord", "train-00002-of-00006.idx", 17, 4000, 0xdeadbeef},
              {"train-00003-of-00006.tfrecord", "train-00003-of-00006.idx", 16, 3900, 7}};
  r.records = 33;
  r.skipped = {{"images/c1/x.jpg", "premature end of data"}};
  r.classes = {"cat", "dog"};
  r.compression = Compression::kGzip;
  r.command = "sluice convert images -o data --part 1/3";
  r.source = "/data/images";
  r.created_by = "sluice 0.1.0";
  return r;
}

TEST(PartRecordTest, RoundTrip) {
  const PartRecord r = sample();
  auto back = parse_part_record(format_part_record(r), "x.json");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(format_part_record(*back), format_part_record(r));
  EXPECT_EQ(back->shards[0].crc32c, 0xdeadbeefu);
  EXPECT_EQ(back->compression, Compression::kGzip);
  EXPECT_EQ(back->skipped, r.skipped);
  EXPECT_EQ(part_record_name("val", 3, 12), "val-part-00003-of-00012.json");
}

// Each damage is refused with the file's name and what is wrong.
TEST(PartRecordTest, RejectsDamage) {
  const std::string good = format_part_record(sample());
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  const std::pair<std::string, std::string> cases[] = {
      {good.substr(0, good.size() / 2), "not valid JSON"},
      {replaced("sluice convert part 1", "sluice convert part 9"), "format is"},
      {replaced("\"part\": 1", "\"part\": 3"), "part 3 of 3 is out of range"},
      {replaced("\"records\": 33", "\"records\": 34"),
       "shards hold 33 records but the part says 34"},
      {replaced("\"first_shard\": 2", "\"first_shard\": 5"), "lie outside the split's 6"},
      {replaced("\"train-00002-of-00006.idx\"", "\"../x.idx\""), "leaves the dataset folder"},
      {replaced("deadbeef", "nothex"), "not 8 hex digits"},
      {replaced("\"gzip\"", "\"lz4\""), "unknown compression 'lz4'"},
      {replaced("\"images\": 100", "\"images\": \"100\""), "field 'images' has the wrong type"},
  };
  for (const auto& [text, reason] : cases) {
    auto r = parse_part_record(text, "p.json");
    ASSERT_FALSE(r.ok()) << reason;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    const std::string message(r.status().message());
    EXPECT_EQ(message.rfind("p.json", 0), 0u) << message;
    EXPECT_NE(message.find(reason), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace sluice::detail
