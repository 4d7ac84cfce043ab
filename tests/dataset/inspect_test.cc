#include <gtest/gtest.h>

#include <filesystem>

#include "sluice/dataset.h"
#include "tests/dataset/dataset_test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

class InspectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    make_image_folder(dir_.path() + "/images", 2, 10);
    ConvertOptions o;
    o.shards = 2;
    ASSERT_TRUE(convert_images(dir_.path() + "/images", data(), o).ok());
  }
  std::string data() const { return dir_.path() + "/data"; }
  std::string shard(int i) const {
    return data() + "/train-0000" + std::to_string(i) + "-of-00002.tfrecord";
  }
  TempDir dir_;
};

TEST_F(InspectTest, SummarisesADataset) {
  auto r = inspect({data()}, InspectOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->records, 20u);
  EXPECT_EQ(r->files.size(), 2u);
  EXPECT_EQ(r->labels, (std::map<int64_t, uint64_t>{{0, 10}, {1, 10}}));
  EXPECT_EQ(r->schema.at("image/encoded").records, 20u);
  EXPECT_EQ(r->schema.at("image/encoded").kind, "bytes_list");
  EXPECT_EQ(r->image_formats["jpeg"] + r->image_formats["png"], 20u);
  EXPECT_EQ(r->width.min, 40);
  EXPECT_EQ(r->height.max, 40);
  std::string text = format_inspect_text(*r);
  EXPECT_NE(text.find("20 records"), std::string::npos);
  EXPECT_NE(text.find("no problems found"), std::string::npos);
  EXPECT_NE(format_inspect_json(*r).find("\"ok\": true"), std::string::npos);
}

TEST_F(InspectTest, DataCrcDamageIsReportedWithOffsetAndReadingGoesOn) {
  std::string bytes = *detail::read_file(shard(0));
  bytes[40] ^= 0x20;  // inside the first record's data
  write_bytes(shard(0), bytes);
  auto r = inspect({data()}, InspectOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].file, shard(0));
  EXPECT_EQ(r->problems[0].offset, 0);
  EXPECT_EQ(r->problems[0].reason.rfind("data CRC mismatch", 0), 0u) << r->problems[0].reason;
  EXPECT_EQ(r->records, 19u);
  // --verify also sees the checksum against dataset.json.
  InspectOptions v;
  v.verify = true;
  auto rv = inspect({data()}, v);
  ASSERT_TRUE(rv.ok());
  bool checksum = false;
  for (const Problem& p : rv->problems) checksum |= p.reason.find("checksum") != std::string::npos;
  EXPECT_TRUE(checksum);
}

TEST_F(InspectTest, TruncatedShardIsReported) {
  std::string bytes = *detail::read_file(shard(1));
  write_bytes(shard(1), bytes.substr(0, bytes.size() - 100));
  auto r = inspect({shard(1)}, InspectOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_NE(r->problems[0].reason.find("truncated record"), std::string::npos);
}

// A cut GZIP shard ends its file with one problem (inspect once asked the
// stuck reader again forever).
TEST_F(InspectTest, TruncatedGzipShardIsOneProblem) {
  ConvertOptions o;
  o.shards = 1;
  o.compression = Compression::kGzip;
  std::string gz = dir_.path() + "/gz";
  ASSERT_TRUE(convert_images(dir_.path() + "/images", gz, o).ok());
  std::string path = gz + "/train-00000-of-00001.tfrecord";
  std::string bytes = *detail::read_file(path);
  write_bytes(path, bytes.substr(0, bytes.size() * 2 / 3));
  auto r = inspect({path}, InspectOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_NE(r->problems[0].reason.find("compressed stream ends early"), std::string::npos)
      << r->problems[0].reason;
  EXPECT_LT(r->records, 20u);
}

TEST_F(InspectTest, VerifyFindsStaleIndexAndMissingIndex) {
  auto idx = read_index(data() + "/train-00000-of-00002.idx");
  ASSERT_TRUE(idx.ok());
  idx->pop_back();
  ASSERT_TRUE(write_index(data() + "/train-00000-of-00002.idx", *idx).ok());
  fs::remove(data() + "/train-00001-of-00002.idx");
  InspectOptions v;
  v.verify = true;
  auto r = inspect({data()}, v);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 2u);
  EXPECT_NE(r->problems[0].reason.find("do not match"), std::string::npos);
  EXPECT_EQ(r->problems[1].reason, "index file missing");
}

TEST_F(InspectTest, LabelOutsideTheClassListIsAProblem) {
  // Re-write one record with label 7 (the dataset has 2 classes).
  auto f = RecordFile::open(shard(0));
  std::string buf;
  std::string_view rec;
  ASSERT_TRUE((*f)->read(0, &buf, &rec).ok());
  Example e;
  ASSERT_TRUE(decode_example(rec, &e).ok());
  e.features["image/class/label"] = Feature::of_int64s({7});
  std::string framed;
  append_framed_record(encode_example(e), &framed);
  std::string bytes = *detail::read_file(shard(1));
  write_bytes(shard(1), bytes + framed);
  auto r = inspect({data()}, InspectOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_NE(r->problems[0].reason.find("label 7 is outside the class list (2 classes)"),
            std::string::npos);
}

TEST_F(InspectTest, NonExampleRecordAmongExamples) {
  std::string framed;
  append_framed_record("\xff\xff not a proto", &framed);
  write_bytes(shard(1), *detail::read_file(shard(1)) + framed);
  auto r = inspect({shard(1)}, InspectOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].reason, "record is not a tf.train.Example");
}

TEST(InspectThirdPartyTest, DetectsImageRawTutorialKeys) {
  auto r = inspect({test_data("tfrecord/tfrecord_lite/images.tfrecord")}, InspectOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->keys.image, "image_raw");
  EXPECT_EQ(r->labels, (std::map<int64_t, uint64_t>{{0, 1}, {1, 1}}));
  EXPECT_EQ(r->image_formats["jpeg"], 2u);
}

TEST(InspectThirdPartyTest, DeeplabImagesAndVerifiedSizes) {
  InspectOptions v;
  v.verify = true;
  auto r = inspect(
      {test_data("tfrecord/tensorflow-models/deeplab_pascal_voc_seg_val-00000-of-00001.tfrecord")},
      v);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok()) << (r->problems.empty() ? "" : r->problems[0].to_string());
  EXPECT_EQ(r->records, 3u);
  EXPECT_EQ(r->width.max, 500);
  EXPECT_EQ(r->schema.size(), 8u);
}

TEST(InspectThirdPartyTest, EventFilesAndGlobs) {
  auto r = inspect({test_data("events/*/events.out.tfevents.*")}, InspectOptions{});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->files.size(), 4u);
  EXPECT_EQ(r->payloads["tensorflow.Event"], 361u + 101 + 28 + 105);
  EXPECT_TRUE(r->ok());
}

TEST(InspectThirdPartyTest, GzipAndCorruptFiles) {
  auto r = inspect({test_data("tfrecord/tfx")}, InspectOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->records, 100u + 100 + 4500);
  EXPECT_TRUE(r->ok());
  auto bad =
      inspect({test_data("tfrecord/corrupt/pets_examples.crlf-mangled.record")}, InspectOptions{});
  ASSERT_TRUE(bad.ok());
  ASSERT_EQ(bad->problems.size(), 2u);
  EXPECT_EQ(bad->problems[0].to_string().substr(bad->problems[0].file.size()),
            ": offset 0: data CRC mismatch (18430 data bytes)");
  EXPECT_EQ(bad->problems[1].offset, 18446);
}

TEST(InspectThirdPartyTest, MissingPathsFail) {
  EXPECT_EQ(inspect({"/nonexistent/x.tfrecord"}, InspectOptions{}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(inspect({"/nonexistent/*.tfrecord"}, InspectOptions{}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(inspect({}, InspectOptions{}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
