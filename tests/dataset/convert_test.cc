#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "sluice/dataset.h"
#include "tests/dataset/dataset_test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

class ConvertTest : public ::testing::Test {
 protected:
  void SetUp() override { make_image_folder(src(), 3, 12); }
  std::string src() const { return dir_.path() + "/images"; }
  std::string out(const std::string& name = "out") const { return dir_.path() + "/" + name; }
  TempDir dir_;
};

TEST_F(ConvertTest, WritesShardsIndexesAndManifest) {
  ConvertOptions o;
  o.shards = 3;
  o.workers = 2;
  auto r = convert_images(src(), out(), o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->written, 36u);
  ASSERT_EQ(r->shards.size(), 3u);
  EXPECT_EQ(r->shards[0].file, "train-00000-of-00003.tfrecord");
  for (const ShardInfo& s : r->shards) {
    EXPECT_EQ(s.records, 12u);
    auto idx = read_index(out() + "/" + s.index);
    ASSERT_TRUE(idx.ok());
    auto built = build_index(out() + "/" + s.file);
    ASSERT_TRUE(built.ok());
    EXPECT_EQ(*idx, *built);
  }
  auto m = read_manifest(out());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->classes, (std::vector<std::string>{"c0", "c1", "c2"}));
  EXPECT_EQ(m->splits.at("train").records, 36u);
  // Every record is an Example with the image, its label and its file.
  auto f = RecordFile::open(out() + "/train-00000-of-00003.tfrecord");
  ASSERT_TRUE(f.ok());
  std::string buf;
  std::string_view rec;
  ASSERT_TRUE((*f)->read(0, &buf, &rec).ok());
  Example e;
  ASSERT_TRUE(decode_example(rec, &e).ok());
  const std::string& key = e.features["image/filename"].bytes_list.at(0);
  int64_t label = e.features["image/class/label"].int64_list.at(0);
  EXPECT_EQ(key.substr(0, 3), "c" + std::to_string(label) + "/");
  auto original = detail::read_file(src() + "/" + key);
  EXPECT_EQ(e.features["image/encoded"].bytes_list.at(0), *original);
  auto info = probe_image(*original);
  EXPECT_EQ(e.features["image/width"].int64_list.at(0), info->width);
}

TEST_F(ConvertTest, SameBytesWhateverTheWorkerCount) {
  std::map<std::string, std::string> first;
  for (int workers : {1, 2, 4, 7}) {
    ConvertOptions o;
    o.workers = workers;
    o.shard_bytes = 20000;  // several shards, rolled by size
    o.compression = workers == 7 ? Compression::kNone : Compression::kNone;
    std::string dir = out("w" + std::to_string(workers));
    auto r = convert_images(src(), dir, o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    auto files = folder_bytes(dir);
    files.erase("dataset.json");  // records the command line
    EXPECT_GT(files.size(), 4u);
    if (first.empty()) {
      first = files;
    } else {
      EXPECT_EQ(files, first) << workers << " workers";
    }
  }
}

TEST_F(ConvertTest, ShuffleMixesClassesAndNoShuffleKeepsOrder) {
  ConvertOptions o;
  o.shards = 1;
  o.shuffle = false;
  ASSERT_TRUE(convert_images(src(), out("a"), o).ok());
  auto f = RecordFile::open(out("a") + "/train-00000-of-00001.tfrecord");
  std::string buf;
  std::string_view rec;
  std::vector<int64_t> labels;
  for (size_t i = 0; i < (*f)->size(); ++i) {
    ASSERT_TRUE((*f)->read(i, &buf, &rec).ok());
    Example e;
    ASSERT_TRUE(decode_example(rec, &e).ok());
    labels.push_back(e.features["image/class/label"].int64_list[0]);
  }
  EXPECT_TRUE(std::is_sorted(labels.begin(), labels.end()));
  o.shuffle = true;
  ASSERT_TRUE(convert_images(src(), out("b"), o).ok());
  EXPECT_NE(folder_bytes(out("a"))["train-00000-of-00001.tfrecord"],
            folder_bytes(out("b"))["train-00000-of-00001.tfrecord"]);
}

TEST_F(ConvertTest, CompressedShardsReadBack) {
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    ConvertOptions o;
    o.compression = c;
    o.shards = 2;
    std::string dir = out(std::string(compression_name(c)));
    ASSERT_TRUE(convert_images(src(), dir, o).ok());
    InspectOptions io;
    io.verify = true;
    auto r = inspect({dir}, io);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->ok()) << (r->problems.empty() ? "" : r->problems[0].to_string());
    EXPECT_EQ(r->records, 36u);
    EXPECT_EQ(r->files[0].compression, c);
  }
}

TEST_F(ConvertTest, BadImagesUnderEachPolicy) {
  // A truncated JPEG (real file, cut mid-scan) and a text file named .jpg.
  fs::copy_file(test_data("images/jpeg/wuffs-peacock.default.truncated.jpeg"),
                src() + "/c1/trunc.jpg");
  write_bytes(src() + "/c2/fake.jpg", "this is not an image");
  std::vector<std::string> warned;
  for (ErrorPolicy p : {ErrorPolicy::kSkip, ErrorPolicy::kWarn}) {
    ConvertOptions o;
    o.on_error = p;
    o.warn = [&](const std::string& file, const std::string&) { warned.push_back(file); };
    std::string dir = out(std::string(error_policy_name(p)));
    auto r = convert_images(src(), dir, o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->written, 36u);
    ASSERT_EQ(r->skipped.size(), 2u);
    auto m = read_manifest(dir);
    EXPECT_EQ(m->splits.at("train").skipped.size(), 2u);
  }
  EXPECT_EQ(warned.size(), 2u);  // only under kWarn
  ConvertOptions o;
  o.on_error = ErrorPolicy::kFail;
  auto r = convert_images(src(), out("fail"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(r.status().message().find("trunc.jpg") != std::string_view::npos ||
              r.status().message().find("fake.jpg") != std::string_view::npos)
      << r.status().message();
  // Nothing that looks complete is left behind.
  for (const auto& e : fs::directory_iterator(out("fail"))) {
    std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tfrecord"), std::string::npos) << name;
    EXPECT_NE(name, "dataset.json");
  }
}

TEST_F(ConvertTest, HeaderOnlyCheckLetsTruncatedFilesThrough) {
  fs::copy_file(test_data("images/jpeg/wuffs-peacock.default.truncated.jpeg"),
                src() + "/c1/trunc.jpg");
  ConvertOptions o;
  o.check_decode = false;
  auto r = convert_images(src(), out(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->written, 37u);
}

TEST_F(ConvertTest, DecompressionBombIsRefused) {
  ConvertOptions o;
  o.max_pixels = 1000;  // every 40x40 image is over it
  o.on_error = ErrorPolicy::kSkip;
  auto r = convert_images(src(), out(), o);
  EXPECT_FALSE(r.ok());  // nothing could be converted
  EXPECT_NE(r.status().message().find("no image could be converted"), std::string_view::npos);
}

TEST_F(ConvertTest, MaxSideReencodes) {
  make_image_folder(dir_.path() + "/big", 2, 3, 200);
  ConvertOptions o;
  o.max_side = 64;
  o.quality = 80;
  auto r = convert_images(dir_.path() + "/big", out(), o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->resized, 6u);
  InspectOptions io;
  io.verify = true;
  auto rep = inspect({out()}, io);
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(rep->ok());
  EXPECT_EQ(rep->width.max, 64);
  EXPECT_EQ(rep->image_formats["jpeg"], 6u);
}

// image/channels is the shape TensorFlow's decode_image gives (checked
// against TensorFlow itself in tests/interop): PNG alpha and tRNS count.
TEST_F(ConvertTest, ChannelsAreWhatTensorFlowDecodes) {
  const std::map<std::string, int64_t> want = {
      {"png/pngsuite-basn0g01.png", 1}, {"png/pngsuite-basn4a08.png", 2},
      {"png/pngsuite-basn2c16.png", 3}, {"png/pngsuite-basn6a16.png", 4},
      {"png/pngsuite-tbbn3p08.png", 4}, {"jpeg/wuffs-peacock.grayscale.jpeg", 1},
      {"jpeg/pillow-hopper.jpg", 3},    {"jpeg/jpeg-decoder-jpg-cmyk-1.jpg", 3}};
  std::string folder = dir_.path() + "/third-party/a";
  fs::create_directories(folder);
  for (const auto& [file, channels] : want) {
    fs::copy_file(std::string(SLUICE_TEST_DATA) + "/images/" + file,
                  folder + "/" + fs::path(file).filename().string());
  }
  ConvertOptions o;
  o.shards = 1;
  ASSERT_TRUE(convert_images(dir_.path() + "/third-party", out(), o).ok());
  auto f = RecordFile::open(out() + "/train-00000-of-00001.tfrecord");
  ASSERT_TRUE(f.ok());
  ASSERT_EQ((*f)->size(), want.size());
  std::string buf;
  std::string_view rec;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE((*f)->read(i, &buf, &rec).ok());
    Example e;
    ASSERT_TRUE(decode_example(rec, &e).ok());
    std::string name = e.features["image/filename"].bytes_list.at(0);  // a/FILE
    auto it = std::find_if(want.begin(), want.end(), [&](const auto& w) {
      return fs::path(w.first).filename() == fs::path(name).filename();
    });
    ASSERT_NE(it, want.end()) << name;
    EXPECT_EQ(e.features["image/channels"].int64_list.at(0), it->second) << name;
  }
}

TEST_F(ConvertTest, SplitsShareTheClassListAndOldShardsGo) {
  ConvertOptions o;
  o.shards = 4;
  ASSERT_TRUE(convert_images(src(), out(), o).ok());
  o.shards = 2;
  ASSERT_TRUE(convert_images(src(), out(), o).ok());  // re-run with fewer shards
  o.split = "val";
  o.shards = 1;
  ASSERT_TRUE(convert_images(src(), out(), o).ok());
  auto m = read_manifest(out());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->splits.size(), 2u);
  EXPECT_FALSE(fs::exists(out() + "/train-00003-of-00004.tfrecord"));
  EXPECT_TRUE(fs::exists(out() + "/train-00001-of-00002.tfrecord"));
  // A source with another class list cannot join this dataset.
  make_image_folder(dir_.path() + "/other", 4, 1);
  o.split = "extra";
  auto bad = convert_images(dir_.path() + "/other", out(), o);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ConvertTest, RejectsBadOptionsAndSources) {
  ConvertOptions o;
  o.quality = 0;
  EXPECT_EQ(convert_images(src(), out(), o).status().code(), StatusCode::kInvalidArgument);
  o = ConvertOptions();
  o.split = "../x";
  EXPECT_EQ(convert_images(src(), out(), o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(convert_images(dir_.path() + "/nope", out(), ConvertOptions()).status().code(),
            StatusCode::kNotFound);
  fs::create_directories(dir_.path() + "/empty");
  EXPECT_EQ(convert_images(dir_.path() + "/empty", out(), ConvertOptions()).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST(ConvertRewriteTest, ProgressiveJpegsBecomeSequentialWithTheSamePixels) {
  TempDir dir;
  make_image_folder(dir.path() + "/images", 2, 3);
  std::filesystem::copy_file(test_data("images/jpeg/wuffs-peacock.progressive.jpeg"),
                             dir.path() + "/images/c0/p.jpg");
  ConvertOptions o;
  o.rewrite_progressive = true;
  auto r = convert_images(dir.path() + "/images", dir.path() + "/out", o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->rewritten, 1u);
  auto rep = inspect({dir.path() + "/out"}, InspectOptions{.verify = true});
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(rep->ok());
  EXPECT_EQ(rep->progressive, 0u);
}

// A progressive file with no lossless sequential copy (its scans leave
// coefficients incomplete) is stored as it is, not rewritten, not skipped.
TEST(ConvertRewriteTest, IncompleteProgressionIsKeptAsItIs) {
  TempDir dir;
  make_image_folder(dir.path() + "/images", 2, 3);
  std::filesystem::copy_file(test_data("fuzz/crop/regress-progressive-incomplete-coefficients"),
                             dir.path() + "/images/c0/p.jpg");
  ConvertOptions o;
  o.rewrite_progressive = true;
  auto r = convert_images(dir.path() + "/images", dir.path() + "/out", o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->rewritten, 0u);
  EXPECT_TRUE(r->skipped.empty());
  EXPECT_EQ(r->written, 7u);
  auto rep = inspect({dir.path() + "/out"}, InspectOptions{.verify = true});
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->progressive, 1u);
}

}  // namespace
}  // namespace sluice
