// The decode tiers against fake_cuda (device memory is host memory) and a
// fake nvJPEG (tests/device/fake_nvjpeg.cc) that decodes with sluice's own
// libjpeg-turbo decode. Pixel equality with libjpeg-turbo is therefore exact
// here: these tests prove the plumbing (tiers, fallbacks, ROI, arena
// placement, pitch), not nvJPEG's arithmetic. On a real GPU, nvJPEG's IDCT
// and chroma upsampling differ from libjpeg-turbo's; bench/gpu/check.sh
// measures and states that difference.
#include "device/jpeg_tiers.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/image.h"
#include "tests/test_seed.h"

namespace sluice::device {
namespace {

std::string read_file(const std::string& name) {
  std::ifstream f(std::string(SLUICE_TEST_DATA) + "/images/" + name, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char* const kBaseline[] = {
    "jpeg/libjpeg-turbo-testorig.jpg", "jpeg/pillow-hopper.jpg", "jpeg/wuffs-peacock.default.jpeg",
    "jpeg/wuffs-peacock.s1x1-444.jpeg", "jpeg/wuffs-peacock.s2x1-422.jpeg"};
constexpr const char* kProgressive = "jpeg/wuffs-peacock.progressive.jpeg";
constexpr const char* kCmyk = "jpeg/pillow-pil_sample_cmyk.jpg";
constexpr const char* kPng = "png/pngsuite-basi2c08.png";
constexpr const char* kTwelveBit = "jpeg/libjpeg-turbo-monkey12.jpg";

const CudaRuntime* runtime() {
  static const CudaRuntime* rt = [] {
    ::setenv("SLUICE_CUDART_LIBRARY", SLUICE_FAKE_CUDA, 1);
    ::setenv("SLUICE_FAKE_CUDA_DELAY_US", "0", 1);
    auto r = CudaRuntime::get();
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : nullptr;
  }();
  return rt;
}

template <typename F>
F fake_symbol(const char* library, const char* name) {
  void* h = ::dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  return h ? reinterpret_cast<F>(::dlsym(h, name)) : nullptr;
}

long fake_counter(const char* name) {
  auto f = fake_symbol<long (*)()>(SLUICE_FAKE_NVJPEG, name);
  return f ? f() : -1;
}

class JpegTiersTest : public ::testing::Test {
 protected:
  static constexpr const char* kKnobs[] = {"FAKE_NVJPEG_NO_HARDWARE", "FAKE_NVJPEG_MAJOR",
                                           "FAKE_NVJPEG_REFUSE_BYTES", "FAKE_NVJPEG_FAIL_BATCH_AT",
                                           "FAKE_NVJPEG_FAIL_HYBRID_BYTES"};

  void SetUp() override {
    for (const char* k : kKnobs) ::unsetenv(k);
    cuda_ = runtime();
    ASSERT_NE(cuda_, nullptr);
    ASSERT_EQ(cuda_->StreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    decoder_.reset();
    if (stream_) cuda_->StreamDestroy(stream_);
    for (const char* k : kKnobs) ::unsetenv(k);
  }

  // A decoder over the given fake library (loaded now, so knobs set before
  // this call apply to loading).
  void make_decoder(GpuJpegOptions options = {}, const char* library = SLUICE_FAKE_NVJPEG) {
    decoder_.reset();  // before the library it uses
    ::setenv("SLUICE_NVJPEG_LIBRARY", library, 1);
    auto lib = Nvjpeg::load(*cuda_);
    Result<const Nvjpeg*> nv = lib.ok() ? Result<const Nvjpeg*>(lib->get()) : lib.status();
    if (lib.ok()) library_ = std::move(*lib);
    auto d = GpuJpegDecoder::create(cuda_, 0, options, nv);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    decoder_ = std::move(*d);
  }

  std::vector<GpuJpegResult> decode(const std::vector<GpuJpegJob>& jobs) {
    std::vector<GpuJpegResult> out;
    Status s = decoder_->decode(jobs, stream_, &out);
    EXPECT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(out.size(), jobs.size());
    EXPECT_EQ(cuda_->StreamSynchronize(stream_), cudaSuccess);
    return out;
  }

  // The crop's pixels in a GPU result, copied to the host.
  std::vector<uint8_t> crop_pixels(const GpuJpegResult& r) {
    std::vector<uint8_t> all(r.pitch * r.height);
    EXPECT_EQ(cuda_->Memcpy(all.data(), r.pixels, all.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<uint8_t> out;
    for (int y = r.crop.y; y < r.crop.y + r.crop.height; ++y) {
      const uint8_t* row = all.data() + y * r.pitch + r.crop.x * 3;
      out.insert(out.end(), row, row + r.crop.width * 3);
    }
    return out;
  }

  // libjpeg-turbo's pixels for the crop (the CPU tier's reference).
  static std::vector<uint8_t> reference(const std::string& bytes, const CropWindow& c) {
    auto img = decode_image(bytes);
    EXPECT_TRUE(img.ok()) << img.status().to_string();
    std::vector<uint8_t> out;
    for (int y = c.y; y < c.y + c.height; ++y) {
      const uint8_t* row = img->pixels.data() + (static_cast<size_t>(y) * img->width + c.x) * 3;
      out.insert(out.end(), row, row + c.width * 3);
    }
    return out;
  }

  static CropWindow whole(const std::string& bytes) {
    auto info = probe_image(bytes);
    return info.ok() ? CropWindow{0, 0, info->width, info->height} : CropWindow{0, 0, 1, 1};
  }

  void expect_pixels(const std::vector<GpuJpegJob>& jobs, const std::vector<GpuJpegResult>& out) {
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (out[i].tier == JpegTier::kCpu) continue;
      EXPECT_EQ(out[i].pitch, static_cast<size_t>(out[i].width) * 3);
      EXPECT_EQ(crop_pixels(out[i]), reference(std::string(jobs[i].bytes), jobs[i].crop))
          << "job " << i << " tier " << jpeg_tier_name(out[i].tier);
    }
  }

  const CudaRuntime* cuda_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Nvjpeg> library_;
  std::unique_ptr<GpuJpegDecoder> decoder_;
};

TEST_F(JpegTiersTest, TierPerFile) {
  make_decoder({.hardware_share = 1.0});
  const std::string baseline = read_file(kBaseline[0]), progressive = read_file(kProgressive),
                    cmyk = read_file(kCmyk), png = read_file(kPng);
  std::vector<GpuJpegJob> jobs = {{baseline, {10, 20, 100, 50}, 1},
                                  {progressive, {5, 5, 40, 30}, 2},
                                  {cmyk, whole(cmyk), 3},
                                  {png, whole(png), 4}};
  auto out = decode(jobs);
  EXPECT_EQ(out[0].tier, JpegTier::kHardware);
  EXPECT_EQ(out[1].tier, JpegTier::kCuda);  // the engine refuses progressive files
  EXPECT_EQ(out[2].tier, JpegTier::kCuda);  // and CMYK
  EXPECT_EQ(out[3].tier, JpegTier::kCpu);
  EXPECT_EQ(out[3].cpu_reason.code(), StatusCode::kUnimplemented);
  EXPECT_NE(out[3].cpu_reason.message().find("not a JPEG"), std::string_view::npos);
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(decoder_->planned_tier(jobs[i]), out[i].tier);
  expect_pixels(jobs, out);
  // With ROI, only the crop was decoded.
  EXPECT_TRUE(out[0].region_decoded);
  EXPECT_EQ(out[0].width, 100);
  EXPECT_EQ(out[0].crop, (CropWindow{0, 0, 100, 50}));

  GpuJpegStats s = decoder_->stats();
  EXPECT_TRUE(s.nvjpeg_available);
  EXPECT_TRUE(s.hardware_available);
  EXPECT_EQ(s.hardware.images, 1u);
  EXPECT_EQ(s.cuda.images, 2u);
  EXPECT_EQ(s.cpu.images, 1u);
  EXPECT_EQ(s.hardware_refused, 2u);
  EXPECT_EQ(s.hardware.bytes, baseline.size());
  EXPECT_EQ(s.cpu.bytes, png.size());
}

TEST_F(JpegTiersTest, ShareSplitIsAFunctionOfSampleId) {
  make_decoder({.hardware_share = 0.65});
  const std::string bytes = read_file(kBaseline[1]);
  std::vector<GpuJpegJob> jobs;
  for (uint64_t id = 0; id < 400; ++id) jobs.push_back({bytes, {0, 0, 64, 64}, id * 7919 + 3});
  auto first = decode(jobs);
  std::vector<JpegTier> by_id(jobs.size());
  int hardware = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    by_id[i] = first[i].tier;
    hardware += first[i].tier == JpegTier::kHardware;
    EXPECT_EQ(first[i].tier, detail::share_point(jobs[i].sample_id) < 0.65 ? JpegTier::kHardware
                                                                           : JpegTier::kCuda);
  }
  EXPECT_GT(hardware, 400 * 0.55);
  EXPECT_LT(hardware, 400 * 0.75);
  // Another order and other batch companions: the same tier per sample.
  std::vector<GpuJpegJob> reversed(jobs.rbegin(), jobs.rend());
  reversed.resize(150);
  auto second = decode(reversed);
  for (size_t i = 0; i < reversed.size(); ++i) {
    EXPECT_EQ(second[i].tier, by_id[jobs.size() - 1 - i]) << "sample " << reversed[i].sample_id;
  }
  expect_pixels(reversed, second);
}

TEST_F(JpegTiersTest, ShareZeroAndOne) {
  const std::string bytes = read_file(kBaseline[2]);
  std::vector<GpuJpegJob> jobs;
  for (uint64_t id = 0; id < 20; ++id) jobs.push_back({bytes, whole(bytes), id});
  for (double share : {0.0, 1.0}) {
    make_decoder({.hardware_share = share});
    for (const GpuJpegResult& r : decode(jobs)) {
      EXPECT_EQ(r.tier, share == 0 ? JpegTier::kCuda : JpegTier::kHardware);
    }
  }
}

TEST_F(JpegTiersTest, AbsentLibraryMeansCpuOnly) {
  make_decoder({}, "/nonexistent/libnvjpeg.so.13");
  const std::string bytes = read_file(kBaseline[0]);
  auto out = decode({{bytes, whole(bytes), 1}, {bytes, {1, 2, 3, 4}, 2}});
  for (const GpuJpegResult& r : out) {
    EXPECT_EQ(r.tier, JpegTier::kCpu);
    EXPECT_EQ(r.cpu_reason.code(), StatusCode::kUnavailable);
    EXPECT_NE(r.cpu_reason.message().find("no nvJPEG loads"), std::string_view::npos)
        << r.cpu_reason.to_string();
  }
  GpuJpegStats s = decoder_->stats();
  EXPECT_FALSE(s.nvjpeg_available);
  EXPECT_EQ(s.cpu.images, 2u);
}

TEST_F(JpegTiersTest, MajorVersionMismatchIsUnavailable) {
  ::setenv("FAKE_NVJPEG_MAJOR", "12", 1);
  ::setenv("SLUICE_NVJPEG_LIBRARY", SLUICE_FAKE_NVJPEG, 1);
  auto lib = Nvjpeg::load(*cuda_);
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(lib.status().message().find("nvJPEG 12.0.0"), std::string_view::npos)
      << lib.status().to_string();
  EXPECT_NE(lib.status().message().find("CUDA 13.0"), std::string_view::npos);
  make_decoder();
  const std::string bytes = read_file(kBaseline[0]);
  EXPECT_EQ(decode({{bytes, whole(bytes), 1}})[0].tier, JpegTier::kCpu);
}

TEST_F(JpegTiersTest, NoEngineMeansCudaPath) {
  ::setenv("FAKE_NVJPEG_NO_HARDWARE", "1", 1);
  make_decoder({.hardware_share = 1.0});
  const std::string bytes = read_file(kBaseline[0]);
  auto out = decode({{bytes, {3, 4, 50, 60}, 1}});
  EXPECT_EQ(out[0].tier, JpegTier::kCuda);
  GpuJpegStats s = decoder_->stats();
  EXPECT_FALSE(s.hardware_available);
  EXPECT_NE(s.nvjpeg_library.find("no hardware JPEG engine"), std::string::npos);
  expect_pixels({{bytes, {3, 4, 50, 60}, 1}}, out);
}

TEST_F(JpegTiersTest, RefusedFileGoesToCudaPath) {
  const std::string refused = read_file(kBaseline[0]), accepted = read_file(kBaseline[1]);
  ::setenv("FAKE_NVJPEG_REFUSE_BYTES", std::to_string(refused.size()).c_str(), 1);
  make_decoder({.hardware_share = 1.0});
  std::vector<GpuJpegJob> jobs = {{refused, whole(refused), 1}, {accepted, whole(accepted), 2}};
  auto out = decode(jobs);
  EXPECT_EQ(out[0].tier, JpegTier::kCuda);
  EXPECT_EQ(out[1].tier, JpegTier::kHardware);
  EXPECT_EQ(decoder_->stats().hardware_refused, 1u);
  expect_pixels(jobs, out);
}

TEST_F(JpegTiersTest, FailedEngineBatchIsRedoneOnCudaPath) {
  ::setenv("FAKE_NVJPEG_FAIL_BATCH_AT", "1", 1);
  make_decoder({.hardware_share = 1.0, .max_batch = 2});
  std::vector<std::string> files;
  for (const char* f : kBaseline) files.push_back(read_file(f));
  std::vector<GpuJpegJob> jobs;
  for (size_t i = 0; i < files.size(); ++i) {
    const CropWindow w = whole(files[i]);
    jobs.push_back({files[i], {w.width / 4, w.height / 3, w.width / 2, w.height / 2}, i});
  }
  // Batches {0, 1} and {2, 3} fail at their second image; {4} succeeds.
  auto out = decode(jobs);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(out[i].tier, JpegTier::kCuda) << i;
    EXPECT_TRUE(out[i].hardware_fallback) << i;
  }
  EXPECT_EQ(out[4].tier, JpegTier::kHardware);
  EXPECT_FALSE(out[4].hardware_fallback);
  expect_pixels(jobs, out);
  GpuJpegStats s = decoder_->stats();
  EXPECT_EQ(s.hardware_batch_failures, 2u);
  EXPECT_EQ(s.hardware_fallback_images, 4u);
  EXPECT_EQ(s.hardware.images, 1u);
  EXPECT_EQ(s.cuda.images, 4u);
}

TEST_F(JpegTiersTest, FailedCudaDecodeGoesToCpuWithReason) {
  const std::string progressive = read_file(kProgressive), baseline = read_file(kBaseline[2]),
                    twelve = read_file(kTwelveBit);
  ::setenv("FAKE_NVJPEG_FAIL_HYBRID_BYTES", std::to_string(progressive.size()).c_str(), 1);
  make_decoder({.hardware_share = 0.0});
  std::vector<GpuJpegJob> jobs = {{progressive, whole(progressive), 1},
                                  {baseline, whole(baseline), 2},
                                  {twelve, {0, 0, 16, 16}, 3}};
  auto out = decode(jobs);
  EXPECT_EQ(out[0].tier, JpegTier::kCpu);
  EXPECT_NE(out[0].cpu_reason.message().find("nvjpegDecodeJpegHost"), std::string_view::npos)
      << out[0].cpu_reason.to_string();
  EXPECT_NE(out[0].cpu_reason.message().find("EXECUTION_FAILED"), std::string_view::npos);
  EXPECT_EQ(out[1].tier, JpegTier::kCuda);
  // A 12-bit file: nvJPEG reads its header but cannot decode it.
  EXPECT_EQ(out[2].tier, JpegTier::kCpu);
  EXPECT_NE(out[2].cpu_reason.message().find("JPEG_NOT_SUPPORTED"), std::string_view::npos)
      << out[2].cpu_reason.to_string();
  EXPECT_EQ(decoder_->stats().cuda_failures, 2u);
  expect_pixels(jobs, out);
}

TEST_F(JpegTiersTest, CropOutsideTheImageIsLeftToTheCpu) {
  make_decoder();
  const std::string bytes = read_file(kBaseline[2]);  // 100x75
  auto out = decode({{bytes, {90, 0, 20, 10}, 1}});
  EXPECT_EQ(out[0].tier, JpegTier::kCpu);
  EXPECT_EQ(out[0].cpu_reason.code(), StatusCode::kInvalidArgument);
}

// Random crops over every decodable file, on both tiers, with and without
// ROI support in the library.
TEST_F(JpegTiersTest, CropPixelsMatchLibjpegTurbo) {
  std::mt19937_64 rng(run_seed("JpegTiersTest"));
  std::vector<std::string> files;
  for (const char* f : kBaseline) files.push_back(read_file(f));
  files.push_back(read_file(kProgressive));
  files.push_back(read_file(kCmyk));
  files.push_back(read_file("jpeg/jpeg-decoder-jpg-cmyk-1.jpg"));
  files.push_back(read_file("jpeg/wuffs-peacock.s-weird.jpeg"));
  for (const char* library : {SLUICE_FAKE_NVJPEG, SLUICE_FAKE_NVJPEG_NOROI}) {
    for (double share : {0.0, 1.0}) {
      make_decoder({.hardware_share = share}, library);
      std::vector<GpuJpegJob> jobs;
      for (size_t i = 0; i < files.size(); ++i) {
        const CropWindow w = whole(files[i]);
        for (int k = 0; k < 4; ++k) {
          const int cw = 1 + static_cast<int>(rng() % w.width);
          const int ch = 1 + static_cast<int>(rng() % w.height);
          const int cx = static_cast<int>(rng() % (w.width - cw + 1));
          const int cy = static_cast<int>(rng() % (w.height - ch + 1));
          jobs.push_back({files[i], {cx, cy, cw, ch}, i * 4 + k});
        }
      }
      auto out = decode(jobs);
      const bool roi = std::string(library) == SLUICE_FAKE_NVJPEG;
      for (const GpuJpegResult& r : out) {
        ASSERT_NE(r.tier, JpegTier::kCpu) << r.cpu_reason.to_string();
        EXPECT_EQ(r.region_decoded, roi);
      }
      expect_pixels(jobs, out);
    }
  }
}

TEST_F(JpegTiersTest, LargeImagesTakeGpuHuffmanUnlessProgressive) {
  make_decoder({.hardware_share = 0.0, .gpu_huffman_min_pixels = 1000});
  const std::string baseline = read_file(kBaseline[0]), progressive = read_file(kProgressive);
  const long before = fake_counter("fake_nvjpeg_gpu_huffman_decodes");
  std::vector<GpuJpegJob> jobs = {{baseline, whole(baseline), 1},
                                  {progressive, whole(progressive), 2},
                                  {baseline, {0, 0, 10, 10}, 3}};
  auto out = decode(jobs);
  EXPECT_EQ(fake_counter("fake_nvjpeg_gpu_huffman_decodes") - before, 1);
  expect_pixels(jobs, out);
}

TEST_F(JpegTiersTest, ArenaIsReusedAndFreed) {
  auto allocations = fake_symbol<long (*)()>(SLUICE_FAKE_CUDA, "fake_cuda_device_allocations");
  ASSERT_NE(allocations, nullptr);
  const long base = allocations();
  make_decoder({.hardware_share = 0.5});
  const std::string bytes = read_file(kBaseline[0]);
  std::vector<GpuJpegJob> jobs;
  for (uint64_t id = 0; id < 16; ++id) jobs.push_back({bytes, whole(bytes), id});
  decode(jobs);
  const long after_first = allocations();
  EXPECT_EQ(after_first - base, 1);  // one arena, not one block per image
  for (int k = 0; k < 3; ++k) expect_pixels(jobs, decode(jobs));
  EXPECT_EQ(allocations(), after_first);
  decoder_.reset();
  EXPECT_EQ(allocations(), base);
}

TEST_F(JpegTiersTest, TimingIsCounted) {
  make_decoder({.hardware_share = 0.5, .adaptive = true});
  const std::string bytes = read_file(kBaseline[1]);
  std::vector<GpuJpegJob> jobs;
  for (uint64_t id = 0; id < 32; ++id) jobs.push_back({bytes, whole(bytes), id});
  decode(jobs);
  decode(jobs);
  GpuJpegStats s = decoder_->stats();
  EXPECT_GT(s.hardware.host_seconds + s.cuda.host_seconds, 0);
  EXPECT_GE(s.hardware_share, 0.05);
  EXPECT_LE(s.hardware_share, 0.95);
}

TEST(AdaptShare, MovesTowardBalanceAndBacksOffOnTail) {
  // Equal latency: a quarter of the way from 0.65 to 0.5.
  EXPECT_DOUBLE_EQ(detail::adapt_share(0.65, 1.0, 1.0, 1.0), 0.6125);
  // The engine 3x slower per image: toward 0.25.
  EXPECT_DOUBLE_EQ(detail::adapt_share(0.65, 3.0, 1.0, 1.0), 0.55);
  // A growing tail lowers the share further.
  EXPECT_DOUBLE_EQ(detail::adapt_share(0.65, 1.0, 1.0, 2.5), 0.5925);
  // No measurement: unchanged; bounds hold.
  EXPECT_DOUBLE_EQ(detail::adapt_share(0.65, 0.0, 1.0, 1.0), 0.65);
  EXPECT_DOUBLE_EQ(detail::adapt_share(0.96, 0.0, 1.0, 1.0), 0.95);
  EXPECT_DOUBLE_EQ(detail::adapt_share(0.05, 1.0, 1e-9, 3.0), 0.05);
}

TEST(SharePoint, SpreadsIds) {
  int below = 0;
  for (uint64_t id = 0; id < 10000; ++id) {
    const double p = detail::share_point(id);
    ASSERT_GE(p, 0.0);
    ASSERT_LT(p, 1.0);
    below += p < 0.65;
  }
  EXPECT_NEAR(below / 10000.0, 0.65, 0.03);
}

}  // namespace
}  // namespace sluice::device
