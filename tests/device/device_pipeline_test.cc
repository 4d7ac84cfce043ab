// The pipeline on a CUDA device, run without a GPU: the CUDA runtime and
// sluice's kernel library are replaced by fakes (tests/device), loaded the
// way the real ones are. The fake runtime is asynchronous (streams are
// threads, copies read their source late), so missing event guards show up
// as wrong bytes. What only a real GPU can check (the CUDA kernel itself,
// real copies) is in tests/cuda and bench/gpu/check.sh.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "device/cuda_runtime.h"
#include "sluice/dataset.h"
#include "sluice/pipeline.h"
#include "sluice/record.h"
#include "tests/dataset/dataset_test_util.h"

namespace sluice {
namespace {

const device::CudaRuntime* cuda() {
  auto c = device::CudaRuntime::get();
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? *c : nullptr;
}

long fake_counter(const char* name) {
  void* h = ::dlopen(SLUICE_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  auto f = h ? reinterpret_cast<long (*)()>(::dlsym(h, name)) : nullptr;
  return f ? f() : -1;
}

// A batch's samples, copied back to the host once it is ready.
std::vector<uint8_t> host_copy(const Batch& b) {
  std::vector<uint8_t> out(b.bytes());
  if (b.device() < 0) {
    std::memcpy(out.data(), b.data(), out.size());
    return out;
  }
  const device::CudaRuntime* c = cuda();
  EXPECT_TRUE(b.wait_on(nullptr).ok());
  EXPECT_EQ(c->Memcpy(out.data(), b.data(), out.size(), device::cudaMemcpyDeviceToHost), 0);
  return out;
}

struct Batches {
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::vector<int64_t>> labels;
  std::vector<std::vector<uint64_t>> ids;
};

class DevicePipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("SLUICE_CUDART_LIBRARY", SLUICE_FAKE_CUDA, 1);
    ::setenv("SLUICE_KERNELS_LIBRARY", SLUICE_FAKE_KERNELS, 1);
    ::setenv("SLUICE_NVJPEG_LIBRARY", SLUICE_FAKE_NVJPEG, 1);
    dir_ = new TempDir();
    make_image_folder(dir_->path() + "/images", 3, 20, 48);
    ConvertOptions c;
    c.shards = 2;
    ASSERT_TRUE(convert_images(dir_->path() + "/images", dir_->path() + "/shards", c).ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  static PipelineOptions options() {
    PipelineOptions o;
    o.sources = {dir_->path() + "/shards"};
    o.batch_size = 8;
    o.sample.width = o.sample.height = 32;
    o.seed = 11;
    o.workers = 2;
    o.prefetch = 3;
    o.memory_budget = uint64_t{256} << 20;
    o.device_memory_budget = uint64_t{256} << 20;
    o.gpu_decode = Use::kOff;  // the GPU decoding tests turn it on
    return o;
  }

  // Every batch of `epochs` epochs, copied to the host; `stats` (when given)
  // the pipeline's at the end.
  static Batches run(const PipelineOptions& o, int epochs = 2, PipelineStats* stats = nullptr) {
    Batches r;
    auto p = Pipeline::create(o);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    if (!p.ok()) return r;
    for (int e = 0; e < epochs; ++e) {
      EXPECT_TRUE((*p)->set_epoch(e).ok());
      for (;;) {
        auto b = (*p)->next();
        if (b.status().code() == StatusCode::kOutOfRange) break;
        EXPECT_TRUE(b.ok()) << b.status().to_string();
        if (!b.ok()) return r;
        EXPECT_EQ(b->device(), o.device);
        r.data.push_back(host_copy(*b));
        r.labels.emplace_back(b->labels(), b->labels() + b->size());
        r.ids.emplace_back(b->sample_ids(), b->sample_ids() + b->size());
      }
    }
    if (stats) *stats = (*p)->stats();
    return r;
  }

  static TempDir* dir_;
};

TempDir* DevicePipelineTest::dir_ = nullptr;

TEST_F(DevicePipelineTest, CopyModeDeliversTheHostBatchesExactly) {
  PipelineOptions o = options();
  Batches host = run(o);
  ASSERT_EQ(host.data.size(), 14u);
  o.device = 0;
  o.gpu_augment = Use::kOff;
  Batches dev = run(o);
  EXPECT_EQ(dev.data, host.data);
  EXPECT_EQ(dev.labels, host.labels);
  EXPECT_EQ(dev.ids, host.ids);
}

// write_sample (8-bit OpenCV resize of the rounded crop) against the
// kernel's float filter on the exact crop: within about 1 on the 0..255
// scale where the shrink is moderate, as the image tests state for smooth
// images (these synthetic ones have hard edges, hence 2).
TEST_F(DevicePipelineTest, KernelModeMatchesTheCpuWithinTheResizeBound) {
  for (DType d : {DType::kUint8, DType::kFloat32, DType::kBFloat16}) {
    for (Layout l : {Layout::kNCHW, Layout::kNHWC}) {
      PipelineOptions o = options();
      o.sample.dtype = d;
      o.sample.layout = l;
      Batches host = run(o, 1);
      o.device = 0;
      o.gpu_augment = Use::kOn;
      Batches dev = run(o, 1);
      ASSERT_EQ(dev.data.size(), host.data.size());
      EXPECT_EQ(dev.labels, host.labels);
      EXPECT_EQ(dev.ids, host.ids);
      double worst = 0, sum = 0;
      size_t values = 0;
      for (size_t b = 0; b < dev.data.size(); ++b) {
        const size_t n = dev.data[b].size() / dtype_size(d);
        for (size_t i = 0; i < n; ++i) {
          double x, y;
          if (d == DType::kUint8) {
            x = dev.data[b][i];
            y = host.data[b][i];
          } else if (d == DType::kFloat32) {
            float fx, fy;
            std::memcpy(&fx, dev.data[b].data() + 4 * i, 4);
            std::memcpy(&fy, host.data[b].data() + 4 * i, 4);
            x = fx * 0.225 * 255;  // back on the 0..255 scale (std ~0.225)
            y = fy * 0.225 * 255;
          } else {
            uint16_t hx, hy;
            std::memcpy(&hx, dev.data[b].data() + 2 * i, 2);
            std::memcpy(&hy, host.data[b].data() + 2 * i, 2);
            x = bfloat16_to_float(hx) * 0.225 * 255;
            y = bfloat16_to_float(hy) * 0.225 * 255;
          }
          worst = std::max(worst, std::abs(x - y));
          sum += std::abs(x - y);
          ++values;
        }
      }
      const double bound = d == DType::kBFloat16 ? 4.0 : 2.0;  // bf16: 8 significant bits
      EXPECT_LE(worst, bound) << dtype_name(d) << " " << layout_name(l);
      EXPECT_LT(sum / values, 0.5) << dtype_name(d) << " " << layout_name(l);
    }
  }
}

// At 8x8 a PNG's window (the whole 48-52 px image) is larger than a
// sample's share of the arena, so the worker resizes it to 8x8 in 8 bits
// (write_sample, as the CPU path does) and the kernel only lays it out: in
// uint8 those samples equal the CPU path's bit for bit.
TEST_F(DevicePipelineTest, WindowsTooLargeForTheArenaAreResizedOnTheCpuFirst) {
  PipelineOptions o = options();
  o.sample.dtype = DType::kUint8;
  o.sample.width = o.sample.height = 8;
  Batches host = run(o, 1);
  o.device = 0;
  o.gpu_augment = Use::kOn;
  Batches dev = run(o, 1);
  ASSERT_EQ(dev.data.size(), host.data.size());
  const size_t bytes = 8 * 8 * 3;
  size_t same = 0, samples = 0;
  for (size_t b = 0; b < dev.data.size(); ++b) {
    for (size_t i = 0; i < dev.data[b].size() / bytes; ++i, ++samples) {
      same +=
          std::memcmp(dev.data[b].data() + i * bytes, host.data[b].data() + i * bytes, bytes) == 0;
    }
  }
  EXPECT_GE(same * 100, samples * 15) << same << " of " << samples;  // one image in 5 is a PNG
  EXPECT_LT(same, samples);  // the others went through the kernel's float filter
}

TEST_F(DevicePipelineTest, KernelModeIsReproducibleWhateverTheWorkerCount) {
  PipelineOptions o = options();
  o.device = 0;
  o.gpu_augment = Use::kOn;
  o.workers = 1;
  o.prefetch = 2;
  Batches a = run(o);
  o.workers = 3;
  o.prefetch = 4;
  Batches b = run(o);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.ids, b.ids);
}

// The consumer reads each batch on a stream of its own, late (its stream
// sleeps 30 ms first), and releases the batch at once with release_after:
// the pipeline must not overwrite the device buffer before that read ran.
TEST_F(DevicePipelineTest, ReleaseAfterGuardsTheDeviceBufferAgainstReuse) {
  const device::CudaRuntime* c = cuda();
  ASSERT_NE(c, nullptr);
  PipelineOptions o = options();
  Batches want = run(o, 1);
  o.device = 0;
  o.gpu_augment = Use::kOff;
  o.prefetch = 2;
  auto p = Pipeline::create(o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  void* fake = ::dlopen(SLUICE_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  auto launch_host_func =
      reinterpret_cast<int (*)(void*, void (*)(void*), void*)>(::dlsym(fake, "cudaLaunchHostFunc"));
  ASSERT_NE(launch_host_func, nullptr);
  auto sleep_30ms = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(30)); };
  device::cudaStream_t stream = nullptr;
  ASSERT_EQ(c->StreamCreateWithFlags(&stream, device::cudaStreamNonBlocking), 0);
  std::vector<std::vector<uint8_t>> got;
  for (;;) {
    auto b = (*p)->next();
    if (b.status().code() == StatusCode::kOutOfRange) break;
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    got.emplace_back(b->bytes());
    ASSERT_TRUE(b->wait_on(stream).ok());
    ASSERT_EQ(launch_host_func(stream, sleep_30ms, nullptr), 0);
    ASSERT_EQ(c->MemcpyAsync(got.back().data(), b->data(), b->bytes(),
                             device::cudaMemcpyDeviceToHost, stream),
              0);
    b->release_after(stream);
  }
  ASSERT_EQ(c->StreamSynchronize(stream), 0);
  c->StreamDestroy(stream);
  EXPECT_EQ(got, want.data);
}

TEST_F(DevicePipelineTest, RestartMidEpochAndStatsAndNoLeaks) {
  PipelineOptions o = options();
  o.device = 0;
  o.gpu_augment = Use::kOn;
  Batches whole = run(o, 1);
  {
    auto p = Pipeline::create(o);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE((*p)->restore({0, 4}).ok());
    std::vector<std::vector<uint8_t>> rest;
    for (;;) {
      auto b = (*p)->next();
      if (b.status().code() == StatusCode::kOutOfRange) break;
      ASSERT_TRUE(b.ok());
      rest.push_back(host_copy(*b));
    }
    ASSERT_EQ(rest.size(), 3u);
    for (size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i], whole.data[4 + i]);
    // A jump back while batches are staged ahead.
    ASSERT_TRUE((*p)->restore({0, 1}).ok());
    auto b = (*p)->next();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(host_copy(*b), whole.data[1]);
    b->release();
    PipelineStats s = (*p)->stats();
    EXPECT_EQ(s.device, 0);
    EXPECT_EQ(s.gpu_augment, "gpu kernel");
    EXPECT_GT(s.h2d_bytes, 0u);
    EXPECT_GT(s.device_slot_bytes, 0u);
  }
  EXPECT_EQ(fake_counter("fake_cuda_device_allocations"), 0);
  EXPECT_EQ(fake_counter("fake_cuda_host_allocations"), 0);
  EXPECT_EQ(fake_counter("fake_cuda_streams"), 0);
  EXPECT_EQ(fake_counter("fake_cuda_events"), 0);
}

TEST_F(DevicePipelineTest, BadDeviceAndBudgetAreClearErrors) {
  PipelineOptions o = options();
  o.device = 3;
  auto p = Pipeline::create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("only 1 CUDA device is visible"), std::string::npos)
      << p.status().to_string();
  o.device = 0;
  o.device_memory_budget = 1 << 10;
  p = Pipeline::create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("device memory budget"), std::string::npos)
      << p.status().to_string();
}

TEST_F(DevicePipelineTest, BadSamplesAreDroppedOnTheDeviceToo) {
  // A dataset with one corrupt image among good ones.
  TempDir d;
  make_image_folder(d.path() + "/images", 2, 8, 40);
  std::string victim;
  for (const auto& e : std::filesystem::recursive_directory_iterator(d.path() + "/images")) {
    if (e.path().extension() == ".jpg") victim = e.path().string();
  }
  ASSERT_FALSE(victim.empty());
  {
    std::FILE* f = std::fopen(victim.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 200, SEEK_SET);
    std::fputs("garbage garbage garbage garbage", f);
    std::fclose(f);
  }
  PipelineOptions o = options();
  o.sources = {d.path() + "/images"};
  o.on_error = ErrorPolicy::kSkip;
  o.drop_last = false;
  Batches host = run(o, 1);
  o.device = 0;
  o.gpu_augment = Use::kOn;
  Batches dev = run(o, 1);
  EXPECT_EQ(dev.ids, host.ids);
  size_t n = 0;
  for (const auto& ids : dev.ids) n += ids.size();
  EXPECT_LE(n, 16u);
}

// JPEGs decoded by nvJPEG's tiers inside the pipeline (the fake nvJPEG
// decodes with libjpeg-turbo, so its pixels equal the CPU's; on a real GPU
// the difference is measured by bench/gpu/check.sh). Against the same
// pipeline decoding every file whole on the CPU: the GPU decodes only the
// crop (ROI), and the kernel must land on the same pixels.
class GpuDecodeTest : public DevicePipelineTest {
 protected:
  static void SetUpTestSuite() {
    DevicePipelineTest::SetUpTestSuite();
    const std::string root = dir_->path() + "/mixed";
    make_image_folder(root, 2, 8, 48);  // baseline JPEGs and PNGs
    int n = 0;
    for (const char* f :
         {"wuffs-peacock.progressive.jpeg", "pillow-hopper.jpg", "libjpeg-turbo-testorig.jpg",
          "jpeg-decoder-jpg-cmyk-1.jpg", "wuffs-peacock.s-weird.jpeg"}) {
      std::filesystem::copy_file(std::string(SLUICE_TEST_DATA) + "/images/jpeg/" + f,
                                 root + (n++ % 2 ? "/c1/" : "/c0/") + f);
    }
  }
  static PipelineOptions mixed() {
    PipelineOptions o = options();
    o.sources = {dir_->path() + "/mixed"};
    o.drop_last = false;
    o.crop_decode = false;  // whole files on the CPU: the reference
    // Large enough that every whole file (up to 227x149) fits a sample's
    // share of the arena, so the reference runs the kernel's filter too.
    o.sample.width = o.sample.height = 96;
    o.device = 0;
    o.gpu_augment = Use::kOn;
    return o;
  }
  static void expect_close(const Batches& a, const Batches& b) {
    ASSERT_EQ(a.data.size(), b.data.size());
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.labels, b.labels);
    double worst = 0;
    for (size_t i = 0; i < a.data.size(); ++i) {
      ASSERT_EQ(a.data[i].size(), b.data[i].size());
      for (size_t k = 0; k + 4 <= a.data[i].size(); k += 4) {
        float x, y;
        std::memcpy(&x, a.data[i].data() + k, 4);
        std::memcpy(&y, b.data[i].data() + k, 4);
        worst = std::max(worst, static_cast<double>(std::abs(x - y)));
      }
    }
    EXPECT_LE(worst, 1e-4);
  }
};

TEST_F(GpuDecodeTest, TiersDecodeWhatTheCpuDecodes) {
  PipelineOptions cpu = mixed();
  Batches want = run(cpu, 1);
  PipelineOptions gpu = mixed();
  gpu.gpu_decode = Use::kOn;
  gpu.hardware_share = 1;  // every JPEG offered to the engine; it refuses some
  PipelineStats s;
  Batches got = run(gpu, 1, &s);
  expect_close(got, want);
  EXPECT_NE(s.gpu_decode.find("nvJPEG"), std::string::npos) << s.gpu_decode;
  EXPECT_GT(s.decoded_hardware, 0u);  // baseline files
  EXPECT_GT(s.decoded_cuda, 0u);      // what the engine refuses: progressive, odd subsampling
  EXPECT_GT(s.decoded_cpu, 0u);       // PNGs (and whatever nvJPEG cannot decode)
  EXPECT_EQ(s.decoded_hardware + s.decoded_cuda + s.decoded_cpu, 21u);
}

// Outside the engine's share, small JPEGs are decoded by the workers (in
// parallel, at reduced DCT scale) rather than by nvJPEG's CPU-Huffman path
// on the stager; only images of a megapixel or more go to the CUDA cores.
TEST_F(GpuDecodeTest, OutsideTheEngineShareSmallJpegsStayOnTheCpu) {
  PipelineOptions cpu = mixed();
  Batches want = run(cpu, 1);
  PipelineOptions gpu = mixed();
  gpu.gpu_decode = Use::kOn;
  gpu.hardware_share = 0.5;
  PipelineStats s;
  Batches got = run(gpu, 1, &s);
  expect_close(got, want);
  EXPECT_GT(s.decoded_hardware, 0u);
  EXPECT_LT(s.decoded_hardware + s.decoded_cuda, 19u);  // some JPEGs stayed on the CPU
  EXPECT_EQ(s.decoded_hardware + s.decoded_cuda + s.decoded_cpu, 21u);
  gpu.hardware_share = 0;
  expect_close(run(gpu, 1), want);
}

// --hardware-share auto: the share follows measured latency (engine against
// CUDA cores; the engine refuses the progressive and odd files here).
TEST_F(GpuDecodeTest, AnAdaptiveShareMoves) {
  PipelineOptions gpu = mixed();
  gpu.gpu_decode = Use::kOn;
  gpu.hardware_share = -1;
  PipelineStats s;
  run(gpu, 6, &s);
  EXPECT_NE(s.hardware_share, 0.65);
}

TEST_F(GpuDecodeTest, AFailingEngineBatchIsRedoneAndTheBytesAgree) {
  PipelineOptions gpu = mixed();
  gpu.gpu_decode = Use::kOn;
  gpu.hardware_share = 1;
  Batches clean = run(gpu, 1);
  ::setenv("FAKE_NVJPEG_FAIL_BATCH_AT", "1", 1);
  PipelineStats s;
  Batches failing = run(gpu, 1, &s);
  ::unsetenv("FAKE_NVJPEG_FAIL_BATCH_AT");
  EXPECT_GT(s.gpu_decode_fallbacks, 0u);
  EXPECT_EQ(failing.data, clean.data);  // the fake's G decodes as its H does
  EXPECT_EQ(failing.ids, clean.ids);
}

TEST_F(GpuDecodeTest, GpuDecodingIsReproducibleForAFixedShare) {
  PipelineOptions gpu = mixed();
  gpu.gpu_decode = Use::kOn;
  gpu.hardware_share = 0.65;
  gpu.workers = 1;
  Batches a = run(gpu, 2);
  gpu.workers = 3;
  gpu.prefetch = 4;
  Batches b = run(gpu, 2);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.ids, b.ids);
}

}  // namespace
}  // namespace sluice
