// Partitioned conversion (convert_part.cc, convert_finish.cc): N parts and
// finish_convert give the bytes one run gives; damage is named.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "sluice/dataset.h"
#include "tests/dataset/dataset_test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

class ConvertPartsTest : public ::testing::Test {
 protected:
  void SetUp() override { make_image_folder(src(), 3, 12); }
  std::string src() const { return dir_.path() + "/images"; }
  std::string out(const std::string& name) const { return dir_.path() + "/" + name; }

  // Every part of n, one after another (the parts of a cluster's job).
  void convert_in_parts(const std::string& out_dir, ConvertOptions o, int n) {
    o.parts = n;
    for (int i = 0; i < n; ++i) {
      o.part = i;
      auto r = convert_images(src(), out_dir, o);
      ASSERT_TRUE(r.ok()) << "part " << i << " of " << n << ": " << r.status().to_string();
      if (r->shards.empty()) continue;
      // Part i owns shards [count*i/n, count*(i+1)/n).
      EXPECT_EQ(r->first_shard, r->shard_count * i / n);
      EXPECT_EQ(r->first_shard + r->shards.size(), r->shard_count * (i + 1) / n);
    }
  }

  // The folder's files, dataset.json without its command line.
  static std::map<std::string, std::string> dataset_bytes(const std::string& dir) {
    auto files = folder_bytes(dir);
    auto m = read_manifest(dir);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (m.ok()) {
      for (auto& [name, split] : m->splits) split.command.clear();
      files["dataset.json"] = format_manifest(*m);
    }
    return files;
  }

  TempDir dir_;
};

TEST_F(ConvertPartsTest, PartsGiveTheBytesOfOneRun) {
  // A bad image too: under skip it leaves its shard one record shorter.
  write_bytes(src() + "/c2/fake.jpg", "this is not an image");
  ConvertOptions o;
  o.shards = 5;
  o.workers = 2;
  o.on_error = ErrorPolicy::kSkip;
  ASSERT_TRUE(convert_images(src(), out("one"), o).ok());
  const auto want = dataset_bytes(out("one"));
  ASSERT_EQ(want.size(), 11u);  // 5 shards, 5 indexes, dataset.json
  for (int n : {1, 3, 8}) {     // 8: more parts than shards, so some parts are empty
    const std::string dir = out("parts" + std::to_string(n));
    convert_in_parts(dir, o, n);
    EXPECT_FALSE(fs::exists(dir + "/dataset.json"));
    auto r = finish_convert(dir, FinishOptions{});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->written, 36u);
    EXPECT_EQ(r->skipped.size(), 1u);
    EXPECT_EQ(r->images, 37u);
    EXPECT_EQ(dataset_bytes(dir), want) << n << " parts";
    EXPECT_FALSE(fs::exists(dir + "/.parts")) << "the part records go once the split is whole";
  }
}

TEST_F(ConvertPartsTest, WithoutShardsThePlanComesFromTheSourceBytes) {
  uint64_t bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(src()))
    if (e.is_regular_file()) bytes += e.file_size();
  ConvertOptions o;
  o.shard_bytes = 20000;
  o.parts = 2;
  auto r = convert_images(src(), out("parts"), o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const uint64_t s = (bytes + o.shard_bytes - 1) / o.shard_bytes;
  ASSERT_GT(s, 2u);
  EXPECT_EQ(r->shard_count, s);
  EXPECT_EQ(r->shards.size(), s / 2);  // part 0 of 2: shards [0, S/2)
  o.part = 1;
  ASSERT_TRUE(convert_images(src(), out("parts"), o).ok());
  ASSERT_TRUE(finish_convert(out("parts"), FinishOptions{}).ok());
  ConvertOptions one;
  one.shards = static_cast<int>(s);
  ASSERT_TRUE(convert_images(src(), out("one"), one).ok());
  EXPECT_EQ(dataset_bytes(out("parts")), dataset_bytes(out("one")));
}

TEST_F(ConvertPartsTest, AMissingPartIsNamed) {
  ConvertOptions o;
  o.shards = 3;
  o.parts = 4;
  for (int i : {0, 2}) {
    o.part = i;
    ASSERT_TRUE(convert_images(src(), out("p"), o).ok());
  }
  auto r = finish_convert(out("p"), FinishOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  const std::string message(r.status().message());
  EXPECT_NE(message.find(".parts/train-part-00001-of-00004.json: missing"), std::string::npos)
      << message;
  EXPECT_NE(message.find("train-part-00003-of-00004.json: missing"), std::string::npos)
      << message;  // every missing part, not only the first
  EXPECT_FALSE(fs::exists(out("p") + "/dataset.json"));
  // Once they are done, the same folder finishes.
  for (int i : {1, 3}) {
    o.part = i;
    ASSERT_TRUE(convert_images(src(), out("p"), o).ok());
  }
  EXPECT_TRUE(finish_convert(out("p"), FinishOptions{}).ok());
}

// One byte flipped in place: a shard of the recorded size.
void flip_a_byte(const std::string& path) {
  auto bytes = *detail::read_file(path);
  bytes[bytes.size() / 2] ^= 0x20;
  write_bytes(path, bytes);
}

TEST_F(ConvertPartsTest, AHalfWrittenOrDamagedShardIsNamed) {
  ConvertOptions o;
  o.shards = 4;
  // Without verification only sizes are compared (the trade-off).
  convert_in_parts(out("p"), o, 2);
  flip_a_byte(out("p") + "/train-00002-of-00004.tfrecord");
  EXPECT_TRUE(finish_convert(out("p"), FinishOptions{.verify = false}).ok());

  convert_in_parts(out("q"), o, 2);
  const std::string shard = out("q") + "/train-00002-of-00004.tfrecord";
  const uint64_t size = fs::file_size(shard);
  flip_a_byte(shard);
  auto r = finish_convert(out("q"), FinishOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("train-00002-of-00004.tfrecord: CRC32C"), std::string::npos)
      << r.status().message();
  // Cut short: a size that is not the recorded one, named with its part.
  fs::resize_file(shard, size / 2);
  r = finish_convert(out("q"), FinishOptions{.verify = false});
  ASSERT_FALSE(r.ok());
  const std::string message(r.status().message());
  EXPECT_NE(message.find("train-00002-of-00004.tfrecord: " + std::to_string(size / 2) + " bytes"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("rerun part 1 of 2"), std::string::npos) << message;
  fs::remove(out("q") + "/train-00003-of-00004.idx");
  r = finish_convert(out("q"), FinishOptions{});
  EXPECT_NE(r.status().message().find("train-00003-of-00004.idx"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(fs::exists(out("q") + "/dataset.json"));
}

TEST_F(ConvertPartsTest, PartsOfAnotherConversionAreRefused) {
  ConvertOptions o;
  o.shards = 2;
  o.parts = 2;
  ASSERT_TRUE(convert_images(src(), out("p"), o).ok());
  o.part = 1;
  o.seed = 7;
  ASSERT_TRUE(convert_images(src(), out("p"), o).ok());
  auto r = finish_convert(out("p"), FinishOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("train-part-00001-of-00002.json: made with other options"),
            std::string::npos)
      << r.status().message();
  // Another listing: one more image after part 0 ran.
  write_bytes(src() + "/c0/extra.jpg", *detail::read_file(src() + "/c0/img0.jpg"));
  o.seed = 0;
  ASSERT_TRUE(convert_images(src(), out("p"), o).ok());
  r = finish_convert(out("p"), FinishOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("from 37 images, not 36"), std::string::npos)
      << r.status().message();
}

TEST_F(ConvertPartsTest, ARerunReplacesWhatAnInterruptedPartLeft) {
  ConvertOptions o;
  o.shards = 4;
  o.parts = 2;
  o.part = 1;
  // What a killed part 1 leaves (its shards are 2 and 3), written by a
  // process on another machine; and part 0's, which part 1 must not touch.
  fs::create_directories(out("p"));
  write_bytes(out("p") + "/.train-00002.partial", "x");
  write_bytes(out("p") + "/.train-00003.partial.tmp-4000000", "x");
  write_bytes(out("p") + "/train-00003-of-00004.idx.tmp-4000000", "x");
  write_bytes(out("p") + "/.train-00000.partial.tmp-4000000", "x");
  ASSERT_TRUE(convert_images(src(), out("p"), o).ok());
  EXPECT_FALSE(fs::exists(out("p") + "/.train-00002.partial"));
  EXPECT_FALSE(fs::exists(out("p") + "/.train-00003.partial.tmp-4000000"));
  EXPECT_FALSE(fs::exists(out("p") + "/train-00003-of-00004.idx.tmp-4000000"));
  EXPECT_TRUE(fs::exists(out("p") + "/.train-00000.partial.tmp-4000000"));
  ASSERT_TRUE(convert_images(src(), out("p"), o).ok());  // again: replaces its outputs
  o.part = 0;
  ASSERT_TRUE(convert_images(src(), out("p"), o).ok());
  ASSERT_TRUE(finish_convert(out("p"), FinishOptions{}).ok());
  for (const auto& e : fs::directory_iterator(out("p"))) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".partial"), std::string::npos) << name;
    EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
  }
}

// A rerun that stops part-way leaves its part unfinished, though the first
// run's shards are still in place: no record vouches for them any more.
TEST_F(ConvertPartsTest, ARerunThatFailsLeavesItsPartUnfinished) {
  ConvertOptions o;
  o.shards = 2;
  convert_in_parts(out("p"), o, 2);
  for (const auto& e : fs::recursive_directory_iterator(src()))  // same names, bad bytes
    if (e.is_regular_file()) write_bytes(e.path().string(), "not an image");
  o.parts = 2;
  o.part = 1;
  auto r = convert_images(src(), out("p"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(fs::exists(out("p") + "/train-00001-of-00002.tfrecord"));
  auto finished = finish_convert(out("p"), FinishOptions{});
  ASSERT_FALSE(finished.ok());
  EXPECT_NE(finished.status().message().find("part 1 of 2 has not finished"), std::string::npos)
      << finished.status().message();
}

TEST_F(ConvertPartsTest, FinishJoinsTheDatasetsOtherSplitsAndReplacesOldShards) {
  ConvertOptions o;
  o.split = "val";
  o.shards = 1;
  ASSERT_TRUE(convert_images(src(), out("p"), o).ok());
  o.split = "train";
  o.shards = 6;
  ASSERT_TRUE(convert_images(src(), out("p"), o).ok());  // an earlier, whole conversion
  o.shards = 3;
  convert_in_parts(out("p"), o, 2);
  ASSERT_TRUE(finish_convert(out("p"), FinishOptions{.split = "train"}).ok());
  auto m = read_manifest(out("p"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->splits.size(), 2u);
  EXPECT_EQ(m->splits.at("train").shards.size(), 3u);
  EXPECT_FALSE(fs::exists(out("p") + "/train-00005-of-00006.tfrecord"));
  EXPECT_TRUE(fs::exists(out("p") + "/val-00000-of-00001.tfrecord"));
  // No part records left: finishing again has nothing to finish.
  EXPECT_EQ(finish_convert(out("p"), FinishOptions{}).status().code(), StatusCode::kNotFound);
}

TEST_F(ConvertPartsTest, ANewPartitioningOrAWholeRunRetiresOldPartRecords) {
  ConvertOptions o;
  o.shards = 4;
  o.parts = 3;
  ASSERT_TRUE(convert_images(src(), out("p"), o).ok());  // part 0 of 3, then a change of mind
  convert_in_parts(out("p"), o, 2);
  EXPECT_FALSE(fs::exists(out("p") + "/.parts/train-part-00000-of-00003.json"));
  EXPECT_TRUE(finish_convert(out("p"), FinishOptions{}).ok());
  o.parts = 2;
  o.part = 0;
  ASSERT_TRUE(convert_images(src(), out("q"), o).ok());
  o.parts = 0;
  ASSERT_TRUE(convert_images(src(), out("q"), o).ok());  // a whole run supersedes the parts
  EXPECT_FALSE(fs::exists(out("q") + "/.parts"));
}

TEST_F(ConvertPartsTest, RejectsAPartOutsideItsCount) {
  ConvertOptions o;
  o.parts = 3;
  o.part = 3;
  EXPECT_EQ(convert_images(src(), out("p"), o).status().code(), StatusCode::kInvalidArgument);
  o.parts = -1;
  o.part = 0;
  EXPECT_EQ(convert_images(src(), out("p"), o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(finish_convert(out("nothing"), FinishOptions{}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice
