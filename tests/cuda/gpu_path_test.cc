// The GPU data path on a real CUDA device (skipped where none is visible;
// bench/gpu/check.sh runs it on a GPU machine, where it must not skip):
//   - the pipeline on the device (copy, kernel and GPU-decode modes)
//     against the same pipeline on the host;
//   - nvJPEG's tiers (H: the hardware engine, G: CUDA cores, with CPU and
//     GPU Huffman) against libjpeg-turbo, on crops at offsets and on an
//     image of more than a megapixel, with the measured difference printed;
//   - back-to-back batches read by work queued on a busy stream (the engine
//     writes at call time: each batch must keep its own pixels);
//   - damaged files refused on the GPU, and nvJPEG's buffers kept.
// With SLUICE_EXPECT_JPEG_ENGINE=1 (check.sh on an A100/H100/H200) the
// engine must be there and used: its tier counts and refusals are asserted.
// On machines without a GPU the same code runs against fakes in
// tests/device; only what a real GPU adds is here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "device/cuda_runtime.h"
#include "device/jpeg_tiers.h"
#include "sluice/dataset.h"
#include "sluice/image.h"
#include "sluice/pipeline.h"
#include "tests/dataset/dataset_test_util.h"
#include "tests/device/crop_rows.h"
#include "tests/test_seed.h"

namespace sluice {
namespace {

using device::GpuJpegJob;
using device::GpuJpegResult;
using device::JpegTier;

const device::CudaRuntime* gpu() {
  auto c = device::CudaRuntime::get();
  return c.ok() ? *c : nullptr;
}

bool engine_expected() {
  const char* v = std::getenv("SLUICE_EXPECT_JPEG_ENGINE");
  return v && std::string(v) == "1";
}

std::string read_data(const std::string& name) {
  std::ifstream f(std::string(SLUICE_TEST_DATA) + "/images/" + name, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A JPEG of more than a megapixel (the GPU-Huffman decoder's size), from
// the project's own renderer.
std::string megapixel_jpeg() {
  Image img = render_synthetic_image(3, 10, 7, 11, 1280, 1024);
  auto bytes = encode_jpeg(img, 90);
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : std::string();
}

std::vector<std::vector<uint8_t>> batches(const PipelineOptions& o,
                                          PipelineStats* stats = nullptr) {
  std::vector<std::vector<uint8_t>> out;
  auto p = Pipeline::create(o);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  if (!p.ok()) return out;
  for (;;) {
    auto b = (*p)->next();
    if (b.status().code() == StatusCode::kOutOfRange) break;
    EXPECT_TRUE(b.ok()) << b.status().to_string();
    if (!b.ok()) break;
    out.emplace_back(b->bytes());
    EXPECT_TRUE(b->copy_to_host(out.back().data()).ok());
  }
  if (stats) *stats = (*p)->stats();
  return out;
}

struct Difference {
  int worst = 0;
  double mean = 0;
};
Difference compare(const std::vector<std::vector<uint8_t>>& a,
                   const std::vector<std::vector<uint8_t>>& b) {
  Difference d;
  double sum = 0, n = 0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    for (size_t i = 0; i < a[k].size() && i < b[k].size(); ++i) {
      const int x = std::abs(int(a[k][i]) - int(b[k][i]));
      d.worst = std::max(d.worst, x);
      sum += x, n += 1;
    }
  }
  d.mean = n > 0 ? sum / n : 0;
  return d;
}

TEST(GpuPathTest, PipelineOnTheDeviceMatchesTheHost) {
  if (!gpu()) GTEST_SKIP() << "no CUDA device visible";
  TempDir dir;
  make_image_folder(dir.path() + "/images", 4, 24, 96);
  PipelineOptions o;
  o.sources = {dir.path() + "/images"};
  o.batch_size = 16;
  o.sample.width = o.sample.height = 64;
  o.sample.dtype = DType::kUint8;
  o.seed = 9;
  o.gpu_decode = Use::kOff;
  auto host = batches(o);
  o.device = 0;
  o.gpu_augment = Use::kOff;
  EXPECT_EQ(batches(o), host) << "copy mode must deliver the host's bytes";
  o.gpu_augment = Use::kOn;
  auto kernel = batches(o);
  ASSERT_EQ(kernel.size(), host.size());
  Difference k = compare(host, kernel);
  std::printf("kernel mode against the CPU path (uint8): largest difference %d, mean %.4f\n",
              k.worst, k.mean);
  EXPECT_LE(k.worst, 2);
  // GPU decoding: nvJPEG's IDCT and upsampling are not libjpeg-turbo's.
  o.gpu_decode = Use::kOn;
  o.hardware_share = 0.65;
  PipelineStats st;
  auto decoded = batches(o, &st);
  ASSERT_EQ(decoded.size(), host.size());
  Difference g = compare(host, decoded);
  std::printf(
      "GPU-decode mode against the CPU path (uint8): largest difference %d, mean %.3f; "
      "tiers: hardware %llu, CUDA %llu, CPU %llu; %s\n",
      g.worst, g.mean, static_cast<unsigned long long>(st.decoded_hardware),
      static_cast<unsigned long long>(st.decoded_cuda),
      static_cast<unsigned long long>(st.decoded_cpu), st.gpu_decode.c_str());
  EXPECT_LE(g.mean, 3.0);
  EXPECT_GT(st.decoded_hardware + st.decoded_cuda, 0u) << st.gpu_decode;
  if (engine_expected()) {
    EXPECT_GT(st.decoded_hardware, 0u) << st.gpu_decode;
  }
  EXPECT_TRUE(st.gpu_decode_strict);
}

class NvjpegTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cuda_ = gpu();
    if (!cuda_) GTEST_SKIP() << "no CUDA device visible";
    ASSERT_EQ(cuda_->StreamCreateWithFlags(&stream_, device::cudaStreamNonBlocking), 0);
  }
  void TearDown() override {
    decoder_.reset();
    if (stream_) cuda_->StreamDestroy(stream_);
  }
  void make_decoder(device::GpuJpegOptions o) {
    auto d = device::GpuJpegDecoder::create(cuda_, 0, o);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    decoder_ = std::move(*d);
    const device::GpuJpegStats s = decoder_->stats();
    ASSERT_TRUE(s.nvjpeg_available) << s.nvjpeg_library;
    for (const std::string& r : s.nvjpeg_refused)
      std::printf("nvJPEG passed over: %s\n", r.c_str());
    if (engine_expected()) {
      ASSERT_TRUE(s.hardware_available) << s.nvjpeg_library;
    }
  }
  std::vector<GpuJpegResult> decode(const std::vector<GpuJpegJob>& jobs) {
    std::vector<GpuJpegResult> out;
    Status st = decoder_->decode(jobs, stream_, &out);
    EXPECT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(cuda_->StreamSynchronize(stream_), 0);
    return out;
  }
  // The crop's pixels of a result, on the host.
  std::vector<uint8_t> crop_of(const GpuJpegResult& r) {
    std::vector<uint8_t> all(r.pitch * r.height);
    EXPECT_EQ(cuda_->Memcpy(all.data(), r.pixels, all.size(), device::cudaMemcpyDeviceToHost), 0);
    return crop_rows(all.data(), r.pitch, r.crop);
  }
  static std::vector<uint8_t> reference(const std::string& bytes, const CropWindow& c) {
    return reference_crop(bytes, c);
  }
  static Difference diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    return compare({a}, {b});
  }

  const device::CudaRuntime* cuda_ = nullptr;
  device::cudaStream_t stream_ = nullptr;
  std::unique_ptr<device::GpuJpegDecoder> decoder_;
};

const char* const kFiles[] = {
    "jpeg/libjpeg-turbo-testorig.jpg",  "jpeg/pillow-hopper.jpg",
    "jpeg/wuffs-peacock.default.jpeg",  "jpeg/wuffs-peacock.s1x1-444.jpeg",
    "jpeg/wuffs-peacock.s2x1-422.jpeg", "jpeg/wuffs-peacock.progressive.jpeg"};
constexpr size_t kProgressiveFiles = 1;

// Tier H and G pixels against libjpeg-turbo's, on random crops at offsets,
// and a megapixel image whole (Huffman on the GPU).
TEST_F(NvjpegTest, TiersAgainstLibjpegTurboOnCrops) {
  std::mt19937_64 rng(run_seed("NvjpegTest"));
  std::vector<std::string> bytes;
  for (const char* f : kFiles) bytes.push_back(read_data(f));
  bytes.push_back(megapixel_jpeg());
  for (double share : {1.0, 0.0}) {
    make_decoder({.hardware_share = share});
    std::vector<GpuJpegJob> jobs;
    for (size_t i = 0; i < bytes.size(); ++i) {
      auto info = probe_image(bytes[i]);
      ASSERT_TRUE(info.ok());
      for (int k = 0; k < 3; ++k) {
        const int cw =
            std::max(1, info->width / 2 + static_cast<int>(rng() % (info->width / 3 + 1)));
        const int ch =
            std::max(1, info->height / 2 + static_cast<int>(rng() % (info->height / 3 + 1)));
        const int cx = static_cast<int>(rng() % (info->width - cw + 1));
        const int cy = static_cast<int>(rng() % (info->height - ch + 1));
        jobs.push_back({bytes[i], {cx, cy, cw, ch}, i * 4 + k});
      }
      if (i + 1 == bytes.size()) jobs.push_back({bytes[i], {0, 0, info->width, info->height}, 99});
    }
    auto out = decode(jobs);
    for (size_t j = 0; j < jobs.size(); ++j) {
      ASSERT_NE(out[j].tier, JpegTier::kCpu) << out[j].cpu_reason.to_string();
      Difference d = diff(crop_of(out[j]), reference(std::string(jobs[j].bytes), jobs[j].crop));
      std::printf(
          "share %.0f job %zu (%dx%d at %d,%d): tier %s%s, largest difference %d, mean %.3f\n",
          share, j, jobs[j].crop.width, jobs[j].crop.height, jobs[j].crop.x, jobs[j].crop.y,
          std::string(device::jpeg_tier_name(out[j].tier)).c_str(),
          out[j].region_decoded ? " (ROI)" : "", d.worst, d.mean);
      // Different IDCTs and chroma upsampling: close on average, not equal
      // (the largest difference, at sharp colour edges, is printed only).
      EXPECT_LE(d.mean, 2.0) << "job " << j;
    }
    const device::GpuJpegStats s = decoder_->stats();
    const uint64_t progressive = 3 * kProgressiveFiles;
    std::printf("share %.0f: engine %llu images, refused %llu, failed batches %llu; CUDA %llu\n",
                share, static_cast<unsigned long long>(s.hardware.images),
                static_cast<unsigned long long>(s.hardware_refused),
                static_cast<unsigned long long>(s.hardware_batch_failures),
                static_cast<unsigned long long>(s.cuda.images));
    if (share == 1.0 && engine_expected()) {
      // The progressive file's crops at least are refused; most are not.
      EXPECT_GE(s.hardware_refused, progressive);
      EXPECT_GE(s.hardware.images, (jobs.size() - progressive) / 2);
      EXPECT_EQ(s.hardware.images + s.cuda.images, jobs.size());
      EXPECT_EQ(s.hardware_batch_failures, 0u);
    }
    if (share == 0.0) {
      EXPECT_EQ(s.cuda.images, jobs.size());
    }
    EXPECT_EQ(s.cuda_failures, 0u);
  }
}

// The engine writes when it is called: batches decoded back to back while
// the stream is busy must each be read with their own pixels.
TEST_F(NvjpegTest, BackToBackBatchesKeepTheirPixels) {
  make_decoder({.hardware_share = 1.0});
  // About 40 ms of copying ahead of everything on the stream.
  const size_t busy = size_t{1} << 31;
  void *pinned = nullptr, *dev = nullptr;
  ASSERT_EQ(cuda_->HostAlloc(&pinned, busy, 0), 0);
  ASSERT_EQ(cuda_->Malloc(&dev, busy), 0);
  std::vector<std::string> bytes;
  for (const char* f : kFiles) bytes.push_back(read_data(f));
  const size_t n = std::size(kFiles) - kProgressiveFiles;  // engine files
  std::vector<std::vector<GpuJpegJob>> jobs(6);
  std::vector<std::vector<GpuJpegResult>> results(jobs.size());
  std::vector<std::vector<std::vector<uint8_t>>> copies(jobs.size());
  std::vector<void*> host(jobs.size());
  ASSERT_EQ(cuda_->MemcpyAsync(dev, pinned, busy, device::cudaMemcpyHostToDevice, stream_), 0);
  for (size_t b = 0; b < jobs.size(); ++b) {
    for (size_t k = 0; k < 4; ++k) {
      const std::string& f = bytes[(b + k) % n];
      auto info = probe_image(f);
      ASSERT_TRUE(info.ok());
      jobs[b].push_back(
          {f, {info->width / 8, info->height / 8, info->width / 2, info->height / 2}, b * 8 + k});
    }
    Status st = decoder_->decode(jobs[b], stream_, &results[b]);
    ASSERT_TRUE(st.ok()) << st.to_string();
    // The reader: copies of this batch's results, queued behind the busy copy.
    size_t total = 0;
    for (const GpuJpegResult& r : results[b]) total += r.pitch * r.height;
    ASSERT_EQ(cuda_->HostAlloc(&host[b], total, 0), 0);
    size_t at = 0;
    for (const GpuJpegResult& r : results[b]) {
      ASSERT_EQ(cuda_->MemcpyAsync(static_cast<uint8_t*>(host[b]) + at, r.pixels,
                                   r.pitch * r.height, device::cudaMemcpyDeviceToHost, stream_),
                0);
      at += r.pitch * r.height;
    }
  }
  ASSERT_EQ(cuda_->StreamSynchronize(stream_), 0);
  for (size_t b = 0; b < jobs.size(); ++b) {
    size_t at = 0;
    for (size_t k = 0; k < jobs[b].size(); ++k) {
      const GpuJpegResult& r = results[b][k];
      if (engine_expected()) {
        EXPECT_EQ(r.tier, JpegTier::kHardware);
      }
      Difference d = diff(crop_rows(static_cast<uint8_t*>(host[b]) + at, r.pitch, r.crop),
                          reference(std::string(jobs[b][k].bytes), jobs[b][k].crop));
      EXPECT_LE(d.mean, 2.0) << "batch " << b << " image " << k << " read another batch's pixels";
      at += r.pitch * r.height;
    }
    cuda_->FreeHost(host[b]);
  }
  cuda_->Free(dev);
  cuda_->FreeHost(pinned);
}

// Strict bitstream checks: a file cut mid-scan is not decoded on the GPU.
TEST_F(NvjpegTest, DamagedFilesAreLeftToTheCpu) {
  const std::string cut = read_data("jpeg/wuffs-peacock.default.truncated.jpeg");
  for (double share : {1.0, 0.0}) {
    make_decoder({.hardware_share = share});
    const device::GpuJpegStats s = decoder_->stats();
    std::printf("strict bitstream checks: %s\n", s.strict_bitstream ? "on" : "off");
    auto out = decode({{cut, {0, 0, 100, 75}, 1}});
    std::printf("share %.0f: truncated file: tier %s (%s)\n", share,
                std::string(device::jpeg_tier_name(out[0].tier)).c_str(),
                out[0].cpu_reason.to_string().c_str());
    EXPECT_EQ(out[0].tier, JpegTier::kCpu);
  }
}

// After the first batches, nvJPEG's buffers and the arenas are kept: no
// allocation, and no free (which would wait for the whole device).
TEST_F(NvjpegTest, BuffersAreKeptAfterTheFirstBatches) {
  make_decoder({.hardware_share = 0.5});
  std::vector<std::string> bytes;
  for (const char* f : kFiles) bytes.push_back(read_data(f));
  bytes.push_back(megapixel_jpeg());
  std::vector<GpuJpegJob> jobs;
  for (size_t i = 0; i < 64; ++i) {
    const std::string& f = bytes[i % bytes.size()];
    auto info = probe_image(f);
    ASSERT_TRUE(info.ok());
    jobs.push_back({f, {0, 0, info->width, info->height}, i});
  }
  decode(jobs);
  decode(jobs);
  const device::GpuJpegStats first = decoder_->stats();
  for (int k = 0; k < 4; ++k) decode(jobs);
  const device::GpuJpegStats later = decoder_->stats();
  std::printf(
      "nvJPEG allocations %llu (reallocations %llu), arena allocations %llu, engine "
      "pre-allocations %llu, padding %zu MB\n",
      static_cast<unsigned long long>(later.nvjpeg_allocations),
      static_cast<unsigned long long>(later.nvjpeg_reallocations),
      static_cast<unsigned long long>(later.arena_allocations),
      static_cast<unsigned long long>(later.engine_preallocations), later.device_padding >> 20);
  EXPECT_EQ(later.nvjpeg_allocations, first.nvjpeg_allocations);
  EXPECT_EQ(later.nvjpeg_reallocations, first.nvjpeg_reallocations);
  EXPECT_EQ(later.arena_allocations, 2u);
}

}  // namespace
}  // namespace sluice
