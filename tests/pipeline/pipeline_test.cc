// The engine end to end on real shards: shapes, labels, reproducibility
// across worker counts and restarts, ranks, bad samples, slot ownership.
#include "sluice/pipeline.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <map>
#include <set>

#include "base/file_util.h"
#include "sluice/dataset.h"
#include "sluice/image.h"
#include "sluice/record.h"
#include "tests/dataset/dataset_test_util.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  std::vector<uint64_t> digests;
  std::vector<uint64_t> ids;
  std::vector<int64_t> labels;
  std::vector<size_t> sizes;
};

uint64_t digest(const Batch& b) {
  std::string_view images(static_cast<const char*>(b.data()), b.bytes());
  std::string_view labels(reinterpret_cast<const char*>(b.labels()), b.size() * 8);
  return (uint64_t{crc32c(images)} << 32) | crc32c(labels);
}

class PipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    make_image_folder(images(), 3, 20, 48);
    ConvertOptions c;
    c.shards = 2;
    ASSERT_TRUE(convert_images(images(), shards(), c).ok());
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string images() { return dir_->path() + "/images"; }
  static std::string shards() { return dir_->path() + "/shards"; }

  static PipelineOptions options() {
    PipelineOptions o;
    o.sources = {shards()};
    o.batch_size = 8;
    o.sample.width = o.sample.height = 32;
    o.seed = 5;
    o.workers = 2;
    o.memory_budget = uint64_t{512} << 20;
    return o;
  }

  static Outcome run(const PipelineOptions& o, uint64_t epochs = 1, int64_t max_batches = -1,
                     PipelineState start = {}) {
    Outcome r;
    auto p = Pipeline::create(o);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    if (!p.ok()) return r;
    EXPECT_TRUE((*p)->restore(start).ok());
    for (uint64_t e = start.epoch; e < epochs; ++e) {
      if (e != start.epoch) {
        EXPECT_TRUE((*p)->set_epoch(e).ok());
      }
      for (;;) {
        if (max_batches >= 0 && static_cast<int64_t>(r.digests.size()) >= max_batches) return r;
        auto b = (*p)->next();
        if (b.status().code() == StatusCode::kOutOfRange) break;
        EXPECT_TRUE(b.ok()) << b.status().to_string();
        if (!b.ok()) return r;
        r.digests.push_back(digest(*b));
        r.sizes.push_back(b->size());
        r.ids.insert(r.ids.end(), b->sample_ids(), b->sample_ids() + b->size());
        r.labels.insert(r.labels.end(), b->labels(), b->labels() + b->size());
      }
    }
    return r;
  }

  static TempDir* dir_;
};

TempDir* PipelineTest::dir_ = nullptr;

TEST_F(PipelineTest, BatchesHaveTheRightShapeLabelsAndIds) {
  auto p = Pipeline::create(options());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ((*p)->records(), 60u);
  EXPECT_EQ((*p)->batches_per_epoch(), 7u);  // 60 / 8, last partial dropped
  EXPECT_EQ((*p)->classes().size(), 3u);
  Outcome r = run(options());
  ASSERT_EQ(r.digests.size(), 7u);
  for (size_t s : r.sizes) EXPECT_EQ(s, 8u);
  std::set<uint64_t> ids(r.ids.begin(), r.ids.end());
  EXPECT_EQ(ids.size(), 56u);  // distinct within an epoch
  for (int64_t l : r.labels) {
    EXPECT_GE(l, 0);
    EXPECT_LT(l, 3);
  }
}

TEST_F(PipelineTest, PaddedEpochKeepsTheLastPartialBatch) {
  PipelineOptions o = options();
  o.drop_last = false;
  Outcome r = run(o);
  ASSERT_EQ(r.sizes.size(), 8u);
  EXPECT_EQ(r.sizes.back(), 4u);
}

TEST_F(PipelineTest, SameBatchesWhateverTheWorkerCountAndPrefetch) {
  PipelineOptions o = options();
  o.workers = 1;
  o.prefetch = 1;
  Outcome base = run(o, 2);
  ASSERT_EQ(base.digests.size(), 14u);
  for (auto [workers, prefetch] : {std::pair{2, 2}, std::pair{4, 3}, std::pair{3, 0}}) {
    o.workers = workers;
    o.prefetch = prefetch;
    EXPECT_EQ(run(o, 2).digests, base.digests) << workers << " workers, prefetch " << prefetch;
  }
}

TEST_F(PipelineTest, EveryDtypeAndLayoutIsReproducible) {
  for (DType d : {DType::kUint8, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (Layout l : {Layout::kNCHW, Layout::kNHWC}) {
      PipelineOptions o = options();
      o.sample.dtype = d;
      o.sample.layout = l;
      o.workers = 1;
      Outcome a = run(o, 1, 3);
      o.workers = 3;
      EXPECT_EQ(run(o, 1, 3).digests, a.digests) << dtype_name(d) << " " << layout_name(l);
    }
  }
}

TEST_F(PipelineTest, ResumedRunContinuesExactly) {
  Outcome whole = run(options(), 3);
  ASSERT_EQ(whole.digests.size(), 21u);
  for (PipelineState s :
       {PipelineState{0, 3}, PipelineState{1, 0}, PipelineState{1, 6}, PipelineState{2, 7}}) {
    Outcome rest = run(options(), 3, -1, s);
    size_t skip = s.epoch * 7 + s.batches;
    std::vector<uint64_t> expected(whole.digests.begin() + static_cast<long>(skip),
                                   whole.digests.end());
    EXPECT_EQ(rest.digests, expected) << "from epoch " << s.epoch << " batch " << s.batches;
  }
}

TEST_F(PipelineTest, StateCountsBatchesHandedOut) {
  auto p = Pipeline::create(options());
  ASSERT_TRUE(p.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*p)->next().ok());
  EXPECT_EQ((*p)->state(), (PipelineState{0, 3}));
  ASSERT_TRUE((*p)->set_epoch(4).ok());
  EXPECT_EQ((*p)->state(), (PipelineState{4, 0}));
  EXPECT_EQ((*p)->restore({0, 99}).code(), StatusCode::kInvalidArgument);
}

TEST_F(PipelineTest, EpochsAndSeedsDiffer) {
  Outcome two = run(options(), 2);
  std::vector<uint64_t> e0(two.digests.begin(), two.digests.begin() + 7);
  std::vector<uint64_t> e1(two.digests.begin() + 7, two.digests.end());
  EXPECT_NE(e0, e1);
  PipelineOptions o = options();
  o.seed = 6;
  EXPECT_NE(run(o).digests, e0);
}

TEST_F(PipelineTest, RanksReadDisjointParts) {
  std::set<uint64_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    PipelineOptions o = options();
    o.rank = rank;
    o.world_size = 3;
    o.batch_size = 4;
    Outcome r = run(o);
    EXPECT_EQ(r.ids.size(), 20u);
    for (uint64_t id : r.ids) EXPECT_TRUE(seen.insert(id).second) << "id " << id << " on two ranks";
  }
  EXPECT_EQ(seen.size(), 60u);
}

TEST_F(PipelineTest, EvalAndResizeModesAreDeterministic) {
  for (AugmentMode m : {AugmentMode::kEval, AugmentMode::kResize}) {
    PipelineOptions o = options();
    o.augment = m;
    o.order = Order::kNone;
    Outcome a = run(o, 2);
    // No randomness left: both epochs give the same batches.
    EXPECT_EQ(std::vector<uint64_t>(a.digests.begin(), a.digests.begin() + 7),
              std::vector<uint64_t>(a.digests.begin() + 7, a.digests.end()));
  }
}

TEST_F(PipelineTest, ImageFolderSource) {
  PipelineOptions o = options();
  o.sources = {images()};
  auto p = Pipeline::create(o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ((*p)->records(), 60u);
  Outcome r = run(o);
  EXPECT_EQ(r.digests.size(), 7u);
  // Same images and labels as through the shards: the label histogram holds.
  std::map<int64_t, int> a, b;
  for (int64_t l : r.labels) a[l]++;
  for (int64_t l : run(options()).labels) b[l]++;
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(b.size(), 3u);
}

TEST_F(PipelineTest, HoldingEverySlotFailsClearly) {
  PipelineOptions o = options();
  o.prefetch = 2;
  auto p = Pipeline::create(o);
  ASSERT_TRUE(p.ok());
  auto a = (*p)->next();
  auto b = (*p)->next();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  auto c = (*p)->next();
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  a->release();
  EXPECT_TRUE((*p)->next().ok());
}

TEST_F(PipelineTest, BadOptionsAndSources) {
  PipelineOptions o = options();
  o.rank = 3;
  o.world_size = 2;
  EXPECT_EQ(Pipeline::create(o).status().code(), StatusCode::kInvalidArgument);
  o = options();
  o.memory_budget = 1 << 20;
  auto small = Pipeline::create(o);
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(small.status().message().find("memory budget"), std::string_view::npos);
  o = options();
  o.sources = {"/nonexistent/data"};
  EXPECT_EQ(Pipeline::create(o).status().code(), StatusCode::kNotFound);
  o = options();
  o.split = "test";
  auto split = Pipeline::create(o);
  EXPECT_EQ(split.status().code(), StatusCode::kNotFound);
  EXPECT_NE(split.status().message().find("no split 'test'"), std::string_view::npos);
}

// One shard, in folder order, without the decode check, so damaged or
// hostile files get in.
ConvertOptions one_unchecked_shard() {
  ConvertOptions c;
  c.shards = 1;
  c.check_decode = false;
  c.shuffle = false;
  return c;
}

class BadSampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    make_image_folder(dir_.path() + "/images", 2, 6, 40);
    fs::copy_file(test_data("images/jpeg/wuffs-peacock.default.truncated.jpeg"),
                  dir_.path() + "/images/c1/cut.jpg");
    ASSERT_TRUE(
        convert_images(dir_.path() + "/images", dir_.path() + "/shards", one_unchecked_shard())
            .ok());
  }
  PipelineOptions options(ErrorPolicy policy) {
    PipelineOptions o;
    o.sources = {dir_.path() + "/shards"};
    o.batch_size = 13;
    o.drop_last = false;
    o.sample.width = o.sample.height = 24;
    o.workers = 2;
    o.memory_budget = uint64_t{256} << 20;
    o.on_error = policy;
    return o;
  }
  TempDir dir_;
};

TEST_F(BadSampleTest, SkipDropsTheSampleAndReportsWhere) {
  for (ErrorPolicy policy : {ErrorPolicy::kSkip, ErrorPolicy::kWarn}) {
    auto p = Pipeline::create(options(policy));
    ASSERT_TRUE(p.ok());
    auto b = (*p)->next();
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_EQ(b->size(), 12u);
    b->release();
    EXPECT_EQ((*p)->next().status().code(), StatusCode::kOutOfRange);
    auto events = (*p)->events();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_NE(events[0].source.find("train-00000-of-00001.tfrecord"), std::string::npos);
    EXPECT_GE(events[0].offset, 0);
    EXPECT_NE(events[0].reason.find("premature end of data"), std::string::npos)
        << events[0].reason;
    EXPECT_EQ((*p)->stats().bad_samples, 1u);
  }
}

TEST_F(BadSampleTest, FailStopsWithFileAndOffset) {
  auto p = Pipeline::create(options(ErrorPolicy::kFail));
  ASSERT_TRUE(p.ok());
  auto b = (*p)->next();
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(b.status().message().find("train-00000-of-00001.tfrecord: offset "),
            std::string_view::npos)
      << b.status().message();
}

// Under fail, the error takes the place of the batch that holds the bad
// sample: every batch before it is handed out first, on every run and for
// any worker count, however far ahead the workers have run (a later error
// used to overtake batches already prepared).
TEST(ErrorOrder, FailureArrivesInItsBatchsTurnForAnyWorkerCount) {
  TempDir dir;
  make_image_folder(dir.path() + "/images", 2, 60, 32);
  fs::copy_file(test_data("images/jpeg/wuffs-peacock.default.truncated.jpeg"),
                dir.path() + "/images/c1/cut.jpg");
  ASSERT_TRUE(
      convert_images(dir.path() + "/images", dir.path() + "/shards", one_unchecked_shard()).ok());
  auto options = [&](ErrorPolicy policy, int workers, int prefetch) {
    PipelineOptions o;
    o.sources = {dir.path() + "/shards"};
    o.batch_size = 4;
    o.drop_last = false;
    o.sample.width = o.sample.height = 16;
    o.workers = workers;
    o.prefetch = prefetch;
    o.memory_budget = uint64_t{256} << 20;
    o.on_error = policy;
    o.seed = 7;
    return o;
  };
  // Where the bad sample lands: the batch that comes out one short.
  size_t bad_batch = SIZE_MAX, batches = 0;
  {
    auto p = Pipeline::create(options(ErrorPolicy::kSkip, 1, 2));
    ASSERT_TRUE(p.ok());
    for (auto b = (*p)->next(); b.ok(); b = (*p)->next(), ++batches) {
      if (b->size() < 4 && b->index() + 1 < 31) bad_batch = b->index();
    }
  }
  ASSERT_EQ(batches, 31u);  // 121 samples
  ASSERT_NE(bad_batch, SIZE_MAX) << "the bad sample fell in the short last batch";
  for (int workers : {1, 2, 3, 4, 8}) {
    for (int prefetch : {2, 8}) {
      for (int trial = 0; trial < 3; ++trial) {
        auto p = Pipeline::create(options(ErrorPolicy::kFail, workers, prefetch));
        ASSERT_TRUE(p.ok());
        size_t good = 0;
        Status error;
        for (;;) {
          auto b = (*p)->next();
          if (!b.ok()) {
            error = b.status();
            break;
          }
          ++good;
        }
        EXPECT_EQ(good, bad_batch) << workers << " workers, prefetch " << prefetch;
        EXPECT_EQ(error.code(), StatusCode::kDataLoss) << error.to_string();
        EXPECT_NE(error.message().find("train-00000-of-00001.tfrecord: offset "),
                  std::string_view::npos)
            << error.message();
        // The run stays failed.
        EXPECT_EQ((*p)->next().status().code(), StatusCode::kDataLoss);
      }
    }
  }
}

// The bytes of `jpeg` with its frame header declaring width x height.
std::string with_frame_size(std::string jpeg, int width, int height) {
  for (size_t i = 0; i + 9 < jpeg.size(); ++i) {
    const auto b = [&](size_t k) { return static_cast<uint8_t>(jpeg[k]); };
    if (b(i) == 0xFF && (b(i + 1) == 0xC0 || b(i + 1) == 0xC2)) {
      jpeg[i + 5] = static_cast<char>(height >> 8);
      jpeg[i + 6] = static_cast<char>(height & 0xFF);
      jpeg[i + 7] = static_cast<char>(width >> 8);
      jpeg[i + 8] = static_cast<char>(width & 0xFF);
      return jpeg;
    }
  }
  ADD_FAILURE() << "no frame header";
  return jpeg;
}

// A PNG bomb: a header declaring 60,000 x 60,000 RGB (10.8 GB of pixels)
// over a few kilobytes of deflated zeros.
std::string png_bomb() {
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  auto chunk = [&](const std::string& type, const std::string& data) {
    const std::string body = type + data;
    const uLong crc =
        crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
    return be32(static_cast<uint32_t>(data.size())) + body + be32(static_cast<uint32_t>(crc));
  };
  std::string ihdr = be32(60000) + be32(60000) + std::string{8, 2, 0, 0, 0};
  std::string zeros(1 << 20, '\0');
  uLongf packed_size = compressBound(zeros.size());
  std::string packed(packed_size, '\0');
  compress(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
           reinterpret_cast<const Bytef*>(zeros.data()), zeros.size());
  packed.resize(packed_size);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", packed) +
         chunk("IEND", "");
}

long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Hostile samples cost a clear error each and no memory to speak of, and
// under skip the run goes on: a JPEG declaring 65,535 x 65,535 and a PNG
// bomb are refused before any pixel memory (max_pixels, 100 million by
// default), as the events say.
TEST(HostileInputs, AreRefusedBeforeAllocatingAndTheRunGoesOn) {
  TempDir dir;
  make_image_folder(dir.path() + "/images", 2, 20, 32);
  auto good = encode_jpeg(render_synthetic_image(0, 2, 7, 0, 48, 40), 90);
  ASSERT_TRUE(good.ok());
  write_bytes(dir.path() + "/images/c0/huge.jpg", with_frame_size(*good, 65535, 65535));
  write_bytes(dir.path() + "/images/c1/bomb.png", png_bomb());
  ConvertOptions c = one_unchecked_shard();
  c.max_pixels = uint64_t{1} << 34;  // let them into the shard
  auto report = convert_images(dir.path() + "/images", dir.path() + "/shards", c);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  ASSERT_EQ(report->written, 42u);
  PipelineOptions o;
  o.sources = {dir.path() + "/shards"};
  o.batch_size = 8;
  o.drop_last = false;
  o.sample.width = o.sample.height = 16;
  o.workers = 2;
  o.memory_budget = uint64_t{256} << 20;
  o.on_error = ErrorPolicy::kSkip;
  const long before = max_rss_kb();
  auto p = Pipeline::create(o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  size_t samples = 0;
  for (auto b = (*p)->next(); b.ok(); b = (*p)->next()) samples += b->size();
  EXPECT_EQ(samples, 40u);
  const auto events = (*p)->events();
  ASSERT_EQ(events.size(), 2u);
  for (const SampleEvent& e : events) {
    EXPECT_NE(e.source.find("train-00000-of-00001.tfrecord"), std::string::npos);
    EXPECT_NE(e.reason.find("pixels"), std::string::npos) << e.reason;
  }
  // Decoding either would take gigabytes; refusing them takes nothing.
  EXPECT_LT(max_rss_kb() - before, 200 * 1024);
}

// A shard truncated or replaced while a run reads it: clear events or the
// data the run started with, never a crash or a label that is not the
// sample's. The record files stay open, so a shard renamed over is still
// read from the file the run opened; a truncated one ends in skips.
TEST(ChangedShards, TruncatedOrReplacedMidRunGiveSkipsOrTheOriginalData) {
  TempDir dir;
  make_image_folder(dir.path() + "/images", 2, 100, 24);
  make_image_folder(dir.path() + "/other", 2, 100, 24);
  ConvertOptions c;
  c.shards = 1;
  c.shuffle = false;
  ASSERT_TRUE(convert_images(dir.path() + "/images", dir.path() + "/shards", c).ok());
  c.shuffle = true;  // same classes, other order: other labels at the same offsets
  ASSERT_TRUE(convert_images(dir.path() + "/other", dir.path() + "/replacement", c).ok());
  const std::string shard = dir.path() + "/shards/train-00000-of-00001.tfrecord";
  auto options = [&] {
    PipelineOptions o;
    o.sources = {dir.path() + "/shards"};
    o.batch_size = 4;
    o.sample.width = o.sample.height = 16;
    o.workers = 1;
    o.prefetch = 2;
    o.memory_budget = uint64_t{256} << 20;
    o.on_error = ErrorPolicy::kSkip;
    return o;
  };
  std::map<uint64_t, int64_t> label_of;
  {
    auto p = Pipeline::create(options());
    ASSERT_TRUE(p.ok());
    for (auto b = (*p)->next(); b.ok(); b = (*p)->next()) {
      for (size_t i = 0; i < b->size(); ++i) label_of[b->sample_ids()[i]] = b->labels()[i];
    }
  }
  ASSERT_EQ(label_of.size(), 200u);
  const std::string original = *detail::read_file(shard);
  for (bool truncate : {true, false}) {
    ASSERT_TRUE(detail::write_file_atomic(shard, original).ok());
    auto p = Pipeline::create(options());
    ASSERT_TRUE(p.ok());
    size_t seen = 0, batches = 0;
    for (auto b = (*p)->next(); b.ok(); b = (*p)->next(), ++batches) {
      if (batches == 1) {
        if (truncate) {
          ASSERT_EQ(::truncate(shard.c_str(), static_cast<off_t>(original.size() / 3)), 0);
        } else {
          fs::rename(dir.path() + "/replacement/train-00000-of-00001.tfrecord", shard);
        }
      }
      for (size_t i = 0; i < b->size(); ++i) {
        ASSERT_EQ(b->labels()[i], label_of.at(b->sample_ids()[i]))
            << "sample " << b->sample_ids()[i];
      }
      seen += b->size();
    }
    const auto events = (*p)->events();
    if (truncate) {
      EXPECT_LT(seen, 200u);
      EXPECT_EQ(seen + events.size(), 200u);
      for (const SampleEvent& e : events) {
        EXPECT_NE(e.reason.find("truncated"), std::string::npos) << e.reason;
      }
    } else {
      EXPECT_EQ(seen, 200u);
      EXPECT_TRUE(events.empty());
    }
  }
}

}  // namespace
}  // namespace sluice
