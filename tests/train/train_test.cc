// The trainer on real shards: it learns, resumes exactly, two Gloo ranks
// match one rank on the combined batch, bf16 autocast trains, the loss
// scaler backs off, and extract's rows join back to the dataset.
#include "sluice/train.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torch/nn.h>

#include <cmath>
#include <filesystem>

#include "base/file_util.h"
#include "sluice/dataset.h"
#include "tests/dataset/dataset_test_util.h"
#include "train/checkpoint.h"
#include "train/models.h"
#include "train/npy.h"
#include "train/scaler.h"
#include "train/support.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using training::LossScaler;

// --- the loss scaler ---------------------------------------------------------

TEST(LossScalerTest, BacksOffOnOverflowAndSkipsTheStep) {
  LossScaler s(true, {.init_scale = 1024, .growth_interval = 3});
  torch::Tensor p = torch::ones({4}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({1.0f, 2.0f, INFINITY, 4.0f});
  EXPECT_FALSE(s.unscale_and_update({p}));
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.growth_tracker(), 0);
  p.mutable_grad() = torch::tensor({NAN, 0.0f, 0.0f, 0.0f});
  EXPECT_FALSE(s.unscale_and_update({p}));
  EXPECT_EQ(s.scale(), 256);
}

TEST(LossScalerTest, UnscalesCleanGradientsAndGrowsAfterTheInterval) {
  LossScaler s(true, {.init_scale = 8, .growth_interval = 2});
  torch::Tensor p = torch::ones({2}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({8.0f, -16.0f});
  EXPECT_TRUE(s.unscale_and_update({p}));
  EXPECT_TRUE(torch::equal(p.grad(), torch::tensor({1.0f, -2.0f})));
  EXPECT_EQ(s.scale(), 8);
  p.mutable_grad() = torch::tensor({8.0f, 8.0f});
  EXPECT_TRUE(s.unscale_and_update({p}));
  EXPECT_EQ(s.scale(), 16);  // two clean steps in a row
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_TRUE(torch::allclose(s.scale_loss(torch::tensor(2.0f)), torch::tensor(32.0f)));
}

TEST(LossScalerTest, DisabledIsTheIdentity) {
  LossScaler s(false);
  torch::Tensor p = torch::ones({1}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({INFINITY});
  EXPECT_TRUE(s.unscale_and_update({p}));
  EXPECT_EQ(s.scale(), 1);
}

// --- .npy ----------------------------------------------------------------------

TEST(NpyTest, HeaderIsNumpyVersion1AlignedTo64) {
  std::string h = training::npy_header("<f4", {3, 5});
  ASSERT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<size_t>(static_cast<uint8_t>(h[8]) | (static_cast<uint8_t>(h[9]) << 8)),
            h.size() - 10);
  EXPECT_NE(h.find("'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }"),
            std::string::npos);
  EXPECT_EQ(h.back(), '\n');
  EXPECT_NE(training::npy_header("<i8", {7}).find("'shape': (7,)"), std::string::npos);
}

TEST(NpyTest, StringsAsUtf32WithReplacementForBadBytes) {
  TempDir dir;
  std::string path = dir.path() + "/k.npy";
  ASSERT_TRUE(training::write_npy_strings(path, {"a/b.jpg", "\xc3\xa9", "x\xff"}).ok());
  std::string bytes = *detail::read_file(path);
  EXPECT_NE(bytes.find("'descr': '<U7'"), std::string::npos);
  size_t data = bytes.size() - 3 * 7 * 4;
  auto cp = [&](size_t row, size_t i) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + data + (row * 7 + i) * 4, 4);
    return v;
  };
  EXPECT_EQ(cp(0, 0), 'a');
  EXPECT_EQ(cp(1, 0), 0xe9u);  // é
  EXPECT_EQ(cp(1, 1), 0u);     // padding
  EXPECT_EQ(cp(2, 1), 0xfffdu);
}

// --- models --------------------------------------------------------------------

TEST(ModelsTest, ShapesAndTorchvisionNames) {
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({2, 3, 32, 32});
  struct Case {
    const char* name;
    int64_t dim;
  };
  for (Case c : {Case{"seed-cnn", 1024}, Case{"resnet18", 512}, Case{"resnet50", 2048}}) {
    auto m = training::make_model(c.name, 7, 32);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    (*m)->eval();
    EXPECT_EQ((*m)->forward(x).sizes(), (std::vector<int64_t>{2, 7})) << c.name;
    EXPECT_EQ((*m)->features(x, "").sizes(), (std::vector<int64_t>{2, c.dim})) << c.name;
    for (const std::string& layer : (*m)->layer_names()) {
      EXPECT_EQ((*m)->features(x, layer).dim(), 2) << c.name << " " << layer;
    }
  }
  auto r50 = *training::make_model("resnet50", 1000, 224);
  auto named = r50->named_parameters();
  for (const char* k : {"conv1.weight", "bn1.weight", "layer1.0.conv3.weight",
                        "layer1.0.downsample.0.weight", "layer4.2.bn3.bias", "fc.weight"}) {
    EXPECT_NE(named.find(k), nullptr) << k;
  }
  int64_t count = 0;
  for (const auto& p : r50->parameters()) count += p.numel();
  EXPECT_EQ(count, 25557032);  // torchvision's resnet50
  auto r18 = *training::make_model("resnet18", 1000, 224);
  count = 0;
  for (const auto& p : r18->parameters()) count += p.numel();
  EXPECT_EQ(count, 11689512);  // torchvision's resnet18
  EXPECT_EQ(training::make_model("vgg", 10, 32).status().code(), StatusCode::kInvalidArgument);
}

TEST(ModelsTest, OutputStaysFloat32UnderBf16Autocast) {
  auto m = *training::make_model("seed-cnn", 3, 16);
  training::AutocastScope scope(*training::autocast_mode(Amp::kBFloat16, torch::kCPU));
  EXPECT_EQ(m->forward(torch::randn({2, 3, 16, 16})).scalar_type(), torch::kFloat);
  EXPECT_EQ(m->features(torch::randn({2, 3, 16, 16}), "fc1").scalar_type(), torch::kBFloat16);
}

TEST(ModelsTest, Fp16AutocastNeedsCuda) {
  EXPECT_EQ(training::autocast_mode(Amp::kFloat16, torch::kCPU).status().code(),
            StatusCode::kInvalidArgument);
}

// A checkpoint's description, as a resume reads it: typed, and damage is
// an error naming the file and the key, never an exception.
TEST(CheckpointMetaTest, RoundTripsAndNamesTheDamagedKey) {
  training::CheckpointMeta m;
  m.model = "seed-cnn";
  m.classes = {"a", "b"};
  m.image_size = std::array<int, 2>{16, 24};
  m.mean = std::array<float, 3>{0.485f, 0.456f, 0.406f};
  m.std = std::array<float, 3>{0.229f, 0.224f, 0.225f};
  m.epoch = 2;
  m.batches_done = 5;
  m.step = 41;
  m.seed = uint64_t{1} << 63;                              // beyond int64: stays unsigned
  m.running = std::array<double, 5>{NAN, 3, 8, 0.5, 1.5};  // a diverged loss resumes
  auto back = training::parse_checkpoint_meta(training::format_checkpoint_meta(m), "x.pt");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_TRUE(std::isnan((*back->running)[0]));
  back->running.reset();
  m.running.reset();
  EXPECT_EQ(*back, m);

  for (auto [text, key] : std::vector<std::pair<std::string, std::string>>{
           {R"({"step": "9"})", "step"},
           {R"({"epoch": -1})", "epoch"},
           {R"({"batches_done": 1.5})", "batches_done"},
           {R"({"world_size": 0})", "world_size"},
           {R"({"image_size": [16]})", "image_size"},
           {R"({"image_size": [16, 0]})", "image_size"},
           {R"({"mean": [0, "a", 0]})", "mean"},
           {R"({"classes": ["a", 1]})", "classes"},
           {R"({"running": [1, 2, 3]})", "running"},
           {R"({"epoch": 99999999999})", "epoch"}}) {
    auto r = training::parse_checkpoint_meta(text, "dir/last.pt");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(r.status().message().find("dir/last.pt"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find('"' + key + '"'), std::string::npos)
        << r.status().message();
  }
  EXPECT_FALSE(training::parse_checkpoint_meta("[1]", "x.pt").ok());
  EXPECT_FALSE(training::parse_checkpoint_meta(R"({"std": [1, 0, 1]})", "x.pt").ok());
  // Unknown keys (a later writer's) are no error.
  EXPECT_TRUE(training::parse_checkpoint_meta(R"({"later": {"x": 1}})", "x.pt").ok());
}

// What the trainer's code throws comes back as a Status: a StatusError
// with its own code, LibTorch's errors and others as kInternal.
TEST(GuardedTest, KeepsAThrownStatusCode) {
  auto lost = training::guarded([]() -> Result<int> {
    throw training::StatusError(data_loss_error("shard.tfrecord: offset 12: bad"));
  });
  EXPECT_EQ(lost.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(lost.status().message(), "shard.tfrecord: offset 12: bad");
  auto torch_error = training::guarded([]() -> Result<int> {
    return torch::zeros({2}).view({3}).size(0);  // a shape LibTorch refuses
  });
  EXPECT_EQ(torch_error.status().code(), StatusCode::kInternal);
  EXPECT_EQ(torch_error.status().message().rfind("LibTorch: ", 0), 0u);
  EXPECT_EQ(*training::guarded([]() -> Result<int> { return 7; }), 7);
}

// --- training on shards ----------------------------------------------------------

class TrainTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    make_image_folder(dir_->path() + "/images", 3, 24, 40);
    ConvertOptions c;
    c.shards = 2;
    ASSERT_TRUE(convert_images(dir_->path() + "/images", shards(), c).ok());
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string shards() { return dir_->path() + "/shards"; }

  static TrainOptions options(const std::string& ckpt = "") {
    TrainOptions o;
    o.pipeline.sources = {shards()};
    o.pipeline.batch_size = 8;
    o.pipeline.sample.width = o.pipeline.sample.height = 16;
    o.pipeline.crop.scale_min = 0.5;
    o.pipeline.seed = 3;
    o.pipeline.workers = 2;
    o.pipeline.memory_budget = uint64_t{256} << 20;
    o.model = "seed-cnn";
    o.lr = 0.02;
    o.epochs = 3;
    o.threads = 1;  // the same reductions every run: exact comparisons
    o.quiet = true;
    o.checkpoint_dir = ckpt;
    return o;
  }

  // Every parameter and buffer of a checkpoint's model.
  static std::vector<torch::Tensor> weights(const std::string& path) {
    auto meta = training::read_checkpoint_meta(path);
    EXPECT_TRUE(meta.ok()) << meta.status().to_string();
    auto m = *training::make_model(meta->model, 3, 16);
    EXPECT_TRUE(training::read_checkpoint(path, *m, nullptr, nullptr, false, torch::kCPU).ok());
    std::vector<torch::Tensor> out = m->parameters();
    for (auto& b : m->buffers()) out.push_back(b);
    return out;
  }

  static double max_difference(const std::string& a, const std::string& b) {
    auto wa = weights(a), wb = weights(b);
    EXPECT_EQ(wa.size(), wb.size());
    double d = 0;
    for (size_t i = 0; i < wa.size() && i < wb.size(); ++i) {
      d = std::max(d, (wa[i] - wb[i]).abs().max().item<double>());
    }
    return d;
  }

  static inline TempDir* dir_ = nullptr;
};

TEST_F(TrainTest, LossFallsAndAccuracyRises) {
  TrainOptions o = options();
  o.epochs = 10;
  o.lr = 0.05;
  o.logdir = dir_->path() + "/logs";
  auto r = train(o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->epochs.size(), 10u);
  EXPECT_LT(r->epochs.back().loss, 0.8 * r->epochs.front().loss);
  EXPECT_GT(r->epochs.back().accuracy, r->epochs.front().accuracy);
  EXPECT_GT(r->epochs.back().accuracy, 0.5);  // 3 classes: chance is 1/3
  EXPECT_EQ(r->steps, 10 * 9);                // 72 samples, batches of 8
  EXPECT_FALSE(r->stopped);
  EXPECT_TRUE(fs::exists(r->event_file));
  EXPECT_GT(fs::file_size(r->event_file), 100u);
}

TEST_F(TrainTest, StoppedAndResumedEqualsUninterrupted) {
  std::string a = dir_->path() + "/ckpt-a", b = dir_->path() + "/ckpt-b";
  ASSERT_TRUE(train(options(a)).ok());
  // Stop inside epoch 2, then again at an epoch's end, then finish.
  for (int64_t stop : {13, 18, -1}) {
    TrainOptions o = options(b);
    o.resume = true;
    o.max_steps = stop;
    auto r = train(o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->stopped, stop >= 0);
    EXPECT_EQ(r->steps, stop >= 0 ? stop : 27);
  }
  EXPECT_EQ(max_difference(a + "/last.pt", b + "/last.pt"), 0.0);
}

TEST_F(TrainTest, StopRequestWritesACheckpoint) {
  std::string c = dir_->path() + "/ckpt-stop";
  std::atomic<bool> stop{true};  // as a Ctrl-C before the first step ends
  TrainOptions o = options(c);
  o.stop = &stop;
  auto r = train(o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->stopped);
  EXPECT_EQ(r->steps, 1);
  auto meta = training::read_checkpoint_meta(c + "/last.pt");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->step, 1);
  EXPECT_EQ(meta->batches_done, 1u);
}

TEST_F(TrainTest, Bf16AutocastTrains) {
  TrainOptions o = options();
  o.amp = Amp::kBFloat16;
  o.epochs = 4;
  o.lr = 0.05;
  auto r = train(o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  for (const auto& e : r->epochs) EXPECT_TRUE(std::isfinite(e.loss));
  EXPECT_LT(r->epochs.back().loss, r->epochs.front().loss);
}

TEST_F(TrainTest, InitFromCopiesTheWeightsThenTrainsOnThem) {
  std::string a = dir_->path() + "/ckpt-src", b = dir_->path() + "/ckpt-init";
  TrainOptions o = options(a);
  o.epochs = 1;
  ASSERT_TRUE(train(o).ok());
  TrainOptions f = options(b);
  f.init_from = a + "/last.pt";
  f.pipeline.seed = 11;  // another initialisation, overwritten by the source's weights
  f.max_steps = 0;       // stop before the first step: the weights as loaded
  auto r = train(f);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(max_difference(a + "/last.pt", b + "/last.pt"), 0.0);
  f.model = "resnet18";
  EXPECT_NE(train(f).status().message().find("seed-cnn"), std::string::npos);
}

TEST_F(TrainTest, LabelSmoothingNesterovAndClippingTrain) {
  TrainOptions o = options();
  o.label_smoothing = 0.1;
  o.nesterov = true;
  o.clip_grad_norm = 1.0;
  o.epochs = 4;
  o.lr = 0.05;
  auto r = train(o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  for (const auto& e : r->epochs) EXPECT_TRUE(std::isfinite(e.loss));
  EXPECT_LT(r->epochs.back().loss, r->epochs.front().loss);
}

TEST_F(TrainTest, BadOptionsSayWhich) {
  TrainOptions o = options();
  o.model = "alexnet";
  EXPECT_NE(train(o).status().message().find("alexnet"), std::string::npos);
  o = options();
  o.amp = Amp::kFloat16;
  EXPECT_NE(train(o).status().message().find("fp16"), std::string::npos);
  o = options();
  o.device = "cuda:0";
  EXPECT_FALSE(train(o).ok());
  o = options();
  o.resume = true;
  EXPECT_NE(train(o).status().message().find("--checkpoint-dir"), std::string::npos);
  o = options();
  o.label_smoothing = 1.0;
  EXPECT_NE(train(o).status().message().find("--label-smoothing"), std::string::npos);
  o = options();
  o.nesterov = true;
  o.optimizer = "adam";
  EXPECT_NE(train(o).status().message().find("--nesterov"), std::string::npos);
  o = options();
  o.log_every = 0;
  EXPECT_NE(train(o).status().message().find("--log-every"), std::string::npos);
  o = options();
  o.model = "seed-cnn";
  o.pipeline.sample.width = o.pipeline.sample.height = 224;
  EXPECT_NE(train(o).status().message().find("dense layer"), std::string::npos);
  o = options();
  o.pipeline.batch_size = 1000;
  EXPECT_NE(train(o).status().message().find("no full batch"), std::string::npos);
}

TEST_F(TrainTest, ResumeRefusesAnotherModelAndDamagedCheckpoints) {
  std::string c = dir_->path() + "/ckpt-other";
  TrainOptions o = options(c);
  o.epochs = 1;
  ASSERT_TRUE(train(o).ok());
  o.model = "resnet18";
  o.resume = true;
  EXPECT_NE(train(o).status().message().find("seed-cnn"), std::string::npos);
  std::string bytes = *detail::read_file(c + "/last.pt");
  ASSERT_TRUE(detail::write_file_atomic(c + "/last.pt", bytes.substr(0, bytes.size() / 2)).ok());
  o.model = "seed-cnn";
  auto r = train(o);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("last.pt"), std::string::npos);
}

// Row `row` of a 1-D '<U<n>' .npy of `rows` ASCII strings.
std::string utf32_cell(const std::string& npy, size_t rows, size_t row) {
  size_t at = npy.find("'<U");
  if (at == std::string::npos) return "?";
  size_t width = std::stoul(npy.substr(at + 3));
  size_t data = npy.size() - rows * width * 4;
  std::string out;
  for (size_t i = 0; i < width; ++i) {
    uint32_t cp;
    std::memcpy(&cp, npy.data() + data + (row * width + i) * 4, 4);
    if (cp == 0) break;
    out += static_cast<char>(cp);
  }
  return out;
}

// Runs sluice-train with `args` and the environment's RANK etc. unset.
int run_trainer(const std::vector<std::string>& args) {
  pid_t pid = ::fork();
  if (pid == 0) {
    for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) {
      ::unsetenv(v);
    }
    std::vector<char*> argv;
    std::string bin = SLUICE_TRAIN_BIN;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Two ranks (Gloo over loopback) with batches of 4 see, step by step, the
// same samples as one rank with batches of 8 (the plan interleaves ranks),
// and average their gradients: they must end with the same weights, up to
// float32 rounding of the sums in another order.
TEST_F(TrainTest, TwoGlooRanksMatchOneRankOnTheCombinedBatch) {
  std::string one = dir_->path() + "/ddp-1", two = dir_->path() + "/ddp-2";
  std::vector<std::string> common = {"train",  shards(),    "--model",   "seed-cnn", "--size",
                                     "16",     "--epochs",  "2",         "--lr",     "0.02",
                                     "--seed", "3",         "--threads", "1",        "--crop-scale",
                                     "0.5,1",  "--workers", "1",         "-q"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  ASSERT_EQ(run_trainer(with({"--batch", "8", "--checkpoint-dir", one})), 0);
  // Tiny buckets: each parameter its own all-reduce, launched in order from
  // the hooks while backward runs (seed-cnn's five tensors, five buckets).
  ASSERT_EQ(run_trainer(with(
                {"--batch", "4", "--procs", "2", "--bucket-mb", "0.001", "--checkpoint-dir", two})),
            0);
  auto m1 = *training::read_checkpoint_meta(one + "/last.pt");
  auto m2 = *training::read_checkpoint_meta(two + "/last.pt");
  EXPECT_EQ(m1.step, m2.step);
  EXPECT_EQ(m2.world_size, 2);
  double d = max_difference(one + "/last.pt", two + "/last.pt");
  EXPECT_LT(d, 1e-5) << "largest weight difference after " << m1.step << " steps";
  std::printf("two ranks vs one: largest weight difference %.3g after %lld steps\n", d,
              static_cast<long long>(m1.step));
  // And they did train: the weights moved from where the seed put them.
  torch::manual_seed(3);
  auto start = *training::make_model("seed-cnn", 3, 16);
  auto trained = weights(one + "/last.pt");
  EXPECT_GT((start->parameters()[0] - trained[0]).abs().max().item<double>(), 1e-3);
}

TEST_F(TrainTest, ExtractRowsJoinBackAndMatchAForwardPass) {
  std::string c = dir_->path() + "/ckpt-x";
  TrainOptions o = options(c);
  o.epochs = 1;
  ASSERT_TRUE(train(o).ok());
  ExtractOptions e;
  e.pipeline.sources = {shards()};
  e.pipeline.batch_size = 10;
  e.pipeline.workers = 2;
  e.weights = c + "/last.pt";
  e.out = dir_->path() + "/feats.npy";
  e.quiet = true;
  auto r = extract(e);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->rows, 72u);  // every sample, the last batch short
  EXPECT_EQ(r->dim, 1024);

  // The same samples in the same order, straight from the pipeline.
  PipelineOptions p = e.pipeline;
  p.augment = AugmentMode::kEval;
  p.order = Order::kNone;
  p.drop_last = false;
  p.sample.width = p.sample.height = 16;
  auto created = Pipeline::create(p);
  ASSERT_TRUE(created.ok());
  auto& pipe = *created;
  auto model = *training::make_model("seed-cnn", 3, 16);
  ASSERT_TRUE(
      training::read_checkpoint(e.weights, *model, nullptr, nullptr, false, torch::kCPU).ok());
  model->eval();
  std::string feats = *detail::read_file(r->features_path);
  std::string labels = *detail::read_file(r->labels_path);
  std::string keys = *detail::read_file(r->keys_path);
  const size_t feat_header = feats.size() - 72 * 1024 * 4;
  const size_t label_header = labels.size() - 72 * 8;
  EXPECT_NE(feats.find("'shape': (72, 1024)"), std::string::npos);
  ASSERT_TRUE(pipe->set_epoch(0).ok());
  size_t row = 0;
  torch::NoGradGuard no_grad;
  for (;;) {
    auto b = pipe->next();
    if (!b.ok()) break;
    torch::Tensor x = training::batch_images(*b, p.sample, torch::kCPU);
    torch::Tensor direct = model->features(x, "");
    torch::Tensor written =
        torch::from_blob(feats.data() + feat_header + row * 1024 * 4,
                         {static_cast<int64_t>(b->size()), 1024}, torch::kFloat);
    EXPECT_TRUE(torch::allclose(direct, written, 1e-5, 1e-6)) << "batch at row " << row;
    for (size_t i = 0; i < b->size(); ++i, ++row) {
      int64_t label;
      std::memcpy(&label, labels.data() + label_header + row * 8, 8);
      EXPECT_EQ(label, b->labels()[i]) << row;
      EXPECT_EQ(b->sample_ids()[i], row);  // storage order
      std::string key = *pipe->record_key(b->sample_ids()[i]);
      ASSERT_FALSE(key.empty());
      EXPECT_EQ(utf32_cell(keys, 72, row), key) << row;
    }
  }
  EXPECT_EQ(row, 72u);
  e.layer = "nope";
  EXPECT_NE(extract(e).status().message().find("conv, fc1, fc2"), std::string::npos);
}

}  // namespace
}  // namespace sluice
