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
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "device/libraries.h"
#include "sluice/image.h"
#include "tests/device/crop_rows.h"
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
  static constexpr const char* kKnobs[] = {
      "FAKE_NVJPEG_NO_HARDWARE",       "FAKE_NVJPEG_MAJOR",
      "FAKE_NVJPEG_REFUSE_BYTES",      "FAKE_NVJPEG_FAIL_BATCH_AT",
      "FAKE_NVJPEG_FAIL_HYBRID_BYTES", "FAKE_NVJPEG_NO_STRICT"};

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
    return crop_rows(all.data(), r.pitch, r.crop);
  }

  // libjpeg-turbo's pixels for the crop (the CPU tier's reference).
  static std::vector<uint8_t> reference(const std::string& bytes, const CropWindow& c) {
    return reference_crop(bytes, c);
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

  // Holds `stream` back for `ms` milliseconds (fake_cuda runs host
  // functions on the stream's thread): work queued behind it waits, as it
  // would behind a busy GPU.
  void stall(cudaStream_t stream, int ms) {
    auto launch =
        fake_symbol<int (*)(void*, void (*)(void*), void*)>(SLUICE_FAKE_CUDA, "cudaLaunchHostFunc");
    ASSERT_NE(launch, nullptr);
    launch(
        stream,
        [](void* p) { ::usleep(static_cast<useconds_t>(reinterpret_cast<intptr_t>(p)) * 1000); },
        reinterpret_cast<void*>(static_cast<intptr_t>(ms)));
  }

  // A reader of a batch's results, queued on the stream as the pipeline's
  // kernel is: copies every crop to the host in stream order.
  struct Reader {
    std::vector<GpuJpegResult> results;
    std::vector<std::vector<uint8_t>> crops;
  };
  static void read_in_stream_order(void* p) {
    auto* r = static_cast<Reader*>(p);
    for (const GpuJpegResult& g : r->results)
      r->crops.push_back(crop_rows(g.pixels, g.pitch, g.crop));
  }
  void queue_reader(Reader* reader) {
    auto launch =
        fake_symbol<int (*)(void*, void (*)(void*), void*)>(SLUICE_FAKE_CUDA, "cudaLaunchHostFunc");
    ASSERT_NE(launch, nullptr);
    launch(stream_, &read_in_stream_order, reader);
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

TEST_F(JpegTiersTest, ArenasAreReusedAndFreed) {
  auto allocations = fake_symbol<long (*)()>(SLUICE_FAKE_CUDA, "fake_cuda_device_allocations");
  ASSERT_NE(allocations, nullptr);
  const long base = allocations();
  make_decoder({.hardware_share = 0.5});
  const std::string bytes = read_file(kBaseline[0]);
  std::vector<GpuJpegJob> jobs;
  for (uint64_t id = 0; id < 16; ++id) jobs.push_back({bytes, whole(bytes), id});
  decode(jobs);
  decode(jobs);  // the second arena
  const long after_two = allocations();
  for (int k = 0; k < 4; ++k) expect_pixels(jobs, decode(jobs));
  EXPECT_EQ(allocations(), after_two);
  GpuJpegStats s = decoder_->stats();
  EXPECT_EQ(s.arena_allocations, 2u);  // one per arena, not one block per image
  EXPECT_EQ(s.nvjpeg_reallocations, 0u);
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

// Bug: the engine writes when it is called, not in stream order. Batches
// decoded back to back, each read by work queued on a stream that is still
// busy, must each be read with their own pixels: batch N+1's engine call
// may not overwrite what batch N's readers have yet to read.
TEST_F(JpegTiersTest, EngineWaitsForTheReadersOfWhatItOverwrites) {
  make_decoder({.hardware_share = 1.0});
  std::vector<std::string> files;
  for (const char* f : kBaseline) files.push_back(read_file(f));
  std::vector<std::vector<GpuJpegJob>> batches;
  for (size_t b = 0; b < 4; ++b) {
    std::vector<GpuJpegJob> jobs;
    for (size_t k = 0; k < 3; ++k) {
      const std::string& f = files[(b + k) % files.size()];
      const CropWindow w = whole(f);
      jobs.push_back({f, {w.width / 8, w.height / 8, w.width / 2, w.height / 2}, b * 3 + k});
    }
    batches.push_back(std::move(jobs));
  }
  std::vector<Reader> readers(batches.size());
  stall(stream_, 100);  // the GPU is busy with earlier work
  for (size_t b = 0; b < batches.size(); ++b) {
    Status st = decoder_->decode(batches[b], stream_, &readers[b].results);
    ASSERT_TRUE(st.ok()) << st.to_string();
    for (const GpuJpegResult& r : readers[b].results) ASSERT_EQ(r.tier, JpegTier::kHardware);
    queue_reader(&readers[b]);
  }
  ASSERT_EQ(cuda_->StreamSynchronize(stream_), cudaSuccess);
  for (size_t b = 0; b < batches.size(); ++b) {
    ASSERT_EQ(readers[b].crops.size(), batches[b].size());
    for (size_t k = 0; k < batches[b].size(); ++k) {
      EXPECT_EQ(readers[b].crops[k],
                reference(std::string(batches[b][k].bytes), batches[b][k].crop))
          << "batch " << b << " image " << k << " was read with another batch's pixels";
    }
  }
}

// Bug: the CUDA path's decoupled calls are not ordered by the stream alone
// (nvjpegDecodeJpegTransferToDevice writes its device buffer partly at call
// time). Many images through it while its stream is held back must each
// come out whole.
TEST_F(JpegTiersTest, CudaPathReusesItsBuffersOnlyWhenTheirImageIsDone) {
  make_decoder({.hardware_share = 0.0, .gpu_huffman_min_pixels = 2000});
  std::vector<std::string> files;
  for (const char* f : kBaseline) files.push_back(read_file(f));
  files.push_back(read_file(kProgressive));
  std::vector<GpuJpegJob> jobs;
  for (size_t i = 0; i < 12; ++i) {
    const std::string& f = files[i % files.size()];
    const CropWindow w = whole(f);
    const int dx = static_cast<int>(i % 5), dy = static_cast<int>(i % 3);
    jobs.push_back({f, {dx, dy, w.width - 5, w.height - 3}, i});
  }
  Reader reader;
  stall(stream_, 100);
  Status st = decoder_->decode(jobs, stream_, &reader.results);
  ASSERT_TRUE(st.ok()) << st.to_string();
  queue_reader(&reader);
  ASSERT_EQ(cuda_->StreamSynchronize(stream_), cudaSuccess);
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_EQ(reader.results[i].tier, JpegTier::kCuda);
    EXPECT_EQ(reader.crops[i], reference(std::string(jobs[i].bytes), jobs[i].crop))
        << "image " << i << " holds another image's pixels";
  }
  EXPECT_GT(fake_counter("fake_nvjpeg_gpu_huffman_decodes"), 0);  // both backends ran
}

// Strict bitstream checks: a file cut mid-scan fails on the GPU (and so
// reaches the CPU, which reports it as a bad sample) instead of decoding to
// the grey-filled picture nvJPEG makes of it by default.
TEST_F(JpegTiersTest, DamagedFilesAreLeftToTheCpu) {
  const std::string cut = read_file("jpeg/wuffs-peacock.default.truncated.jpeg");
  const std::string good = read_file(kBaseline[2]);
  for (double share : {0.0, 1.0}) {
    make_decoder({.hardware_share = share});
    EXPECT_TRUE(decoder_->stats().strict_bitstream);
    std::vector<GpuJpegJob> jobs = {{cut, whole(cut), 1}, {good, whole(good), 2}};
    auto out = decode(jobs);
    EXPECT_EQ(out[0].tier, JpegTier::kCpu) << "share " << share;
    EXPECT_NE(out[0].cpu_reason.message().find("BAD_JPEG"), std::string_view::npos)
        << out[0].cpu_reason.to_string();
    EXPECT_NE(out[1].tier, JpegTier::kCpu);
    expect_pixels(jobs, out);
  }
  // A library that refuses the flag still decodes, without the checks.
  ::setenv("FAKE_NVJPEG_NO_STRICT", "1", 1);
  make_decoder({.hardware_share = 0.0});
  EXPECT_FALSE(decoder_->stats().strict_bitstream);
  const long lenient = fake_counter("fake_nvjpeg_lenient_decodes");
  EXPECT_EQ(decode({{cut, whole(cut), 1}})[0].tier, JpegTier::kCuda);
  EXPECT_EQ(fake_counter("fake_nvjpeg_lenient_decodes"), lenient + 1);
}

// nvJPEG's buffers are sized once for the largest image and kept: after the
// first batches no allocation and no free (each free waits for the whole
// device) happens, for the engine and for both CUDA-path backends.
TEST_F(JpegTiersTest, NvjpegBuffersGrowRarely) {
  make_decoder({.hardware_share = 0.5, .gpu_huffman_min_pixels = 5000});
  std::vector<std::string> files;
  for (const char* f : kBaseline) files.push_back(read_file(f));
  files.push_back(read_file(kProgressive));
  std::vector<GpuJpegJob> small, large;
  for (uint64_t id = 0; id < 24; ++id) {
    const std::string& f = files[id % files.size()];
    const CropWindow w = whole(f);
    small.push_back({f, {0, 0, std::max(1, w.width / 4), std::max(1, w.height / 4)}, id});
    large.push_back({f, w, id});
  }
  expect_pixels(small, decode(small));
  expect_pixels(large, decode(large));
  const GpuJpegStats first = decoder_->stats();
  EXPECT_GT(first.nvjpeg_allocations, 0u);
  EXPECT_EQ(first.nvjpeg_reallocations, 0u);
  EXPECT_GE(first.device_padding, size_t{16} << 20);
  for (int k = 0; k < 3; ++k) {
    expect_pixels(small, decode(small));
    expect_pixels(large, decode(large));
  }
  const GpuJpegStats later = decoder_->stats();
  EXPECT_EQ(later.nvjpeg_allocations, first.nvjpeg_allocations);
  EXPECT_EQ(later.nvjpeg_reallocations, 0u);
  EXPECT_EQ(later.arena_allocations, 2u);
  EXPECT_EQ(later.engine_preallocations, first.engine_preallocations);
  EXPECT_GE(first.engine_preallocations, 1u);
}

// The library search: every candidate is tried, one for another CUDA
// version is passed over (and named), a failed search is not remembered.
TEST_F(JpegTiersTest, SearchGoesOnPastALibraryForAnotherCuda) {
  // Fresh copies, so that nothing earlier in this process has loaded them.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sluice-search-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path v12 = dir / "libnvjpeg.so.12", v13 = dir / "libnvjpeg.so.13";
  fs::copy_file(SLUICE_FAKE_NVJPEG_CUDA12, v12, fs::copy_options::overwrite_existing);
  fs::copy_file(SLUICE_FAKE_NVJPEG, v13, fs::copy_options::overwrite_existing);
  ::setenv("SLUICE_NVJPEG_LIBRARY",
           (v12.string() + ":/nonexistent/libnvjpeg.so.13:" + v13.string()).c_str(), 1);
  auto lib = Nvjpeg::load(*cuda_);
  ASSERT_TRUE(lib.ok()) << lib.status().to_string();
  EXPECT_EQ((*lib)->library, v13.string());
  EXPECT_EQ((*lib)->major, 13);
  ASSERT_EQ((*lib)->refused.size(), 1u);
  EXPECT_NE((*lib)->refused[0].find(v12.string()), std::string::npos);
  EXPECT_NE((*lib)->refused[0].find("is for CUDA 12, not the runtime's CUDA 13"), std::string::npos)
      << (*lib)->refused[0];
  // Only the wrong one: unavailable, naming it and why.
  ::setenv("SLUICE_NVJPEG_LIBRARY", v12.c_str(), 1);
  auto none = Nvjpeg::load(*cuda_);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(none.status().message().find("no usable nvJPEG"), std::string_view::npos);
  EXPECT_NE(none.status().message().find("nvJPEG 12.0.0"), std::string_view::npos);
  // get(): the failure is not kept; the next call finds the right one.
  auto failed = Nvjpeg::get(*cuda_);
  EXPECT_FALSE(failed.ok());
  ::setenv("SLUICE_NVJPEG_LIBRARY", v13.c_str(), 1);
  auto found = Nvjpeg::get(*cuda_);
  ASSERT_TRUE(found.ok()) << found.status().to_string();
  EXPECT_EQ((*found)->library, v13.string());
  fs::remove_all(dir);  // the loaded copies stay mapped
}

// pip's wheels in the active Python environment: a venv named by
// $VIRTUAL_ENV, or the one whose python3 comes first on $PATH.
TEST_F(JpegTiersTest, SearchLooksInThePythonEnvironment) {
  namespace fs = std::filesystem;
  const fs::path venv = fs::temp_directory_path() / ("sluice-venv-" + std::to_string(::getpid()));
  const fs::path lib13 = venv / "lib/python3.12/site-packages/nvidia/cu13/lib";
  const fs::path lib12 = venv / "lib/python3.12/site-packages/nvidia/cu12/lib";
  fs::create_directories(lib13);
  fs::create_directories(lib12);
  fs::create_directories(venv / "bin");
  std::ofstream(venv / "pyvenv.cfg") << "home = /usr/bin\n";
  std::ofstream(venv / "bin/python3") << "#!/bin/sh\n";
  fs::permissions(venv / "bin/python3", fs::perms::owner_all);
  fs::copy_file(SLUICE_FAKE_NVJPEG_CUDA12, lib12 / "libnvjpeg.so.12");
  fs::copy_file(SLUICE_FAKE_NVJPEG, lib13 / "libnvjpeg.so.13");
  ::unsetenv("SLUICE_NVJPEG_LIBRARY");
  ::unsetenv("VIRTUAL_ENV");
  ::unsetenv("CONDA_PREFIX");
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", ((venv / "bin").string() + ":" + path).c_str(), 1);
  auto candidates = sluice::detail::nvjpeg_candidates();
  ::setenv("PATH", path.c_str(), 1);
  auto has = [&](const fs::path& p) {
    return std::find(candidates.begin(), candidates.end(), p.string()) != candidates.end();
  };
  EXPECT_TRUE(has(lib13 / "libnvjpeg.so.13"));
  EXPECT_TRUE(has(lib12 / "libnvjpeg.so.12"));
  ::setenv("VIRTUAL_ENV", venv.c_str(), 1);
  candidates = sluice::detail::nvjpeg_candidates();
  EXPECT_TRUE(has(lib13 / "libnvjpeg.so.13"));
  // Loaded already (as PyTorch would have), the venv's copies come first
  // (cu12 before cu13 in the list): the CUDA 12 one is refused, the CUDA 13
  // one chosen.
  void* h12 = ::dlopen((lib12 / "libnvjpeg.so.12").c_str(), RTLD_NOW | RTLD_LOCAL);
  void* h13 = ::dlopen((lib13 / "libnvjpeg.so.13").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h12, nullptr);
  ASSERT_NE(h13, nullptr);
  detail::NvjpegSearch found = detail::search_nvjpeg(13);
  ::unsetenv("VIRTUAL_ENV");
  EXPECT_EQ(found.library, (lib13 / "libnvjpeg.so.13").string());
  EXPECT_EQ(found.major, 13);
  bool refused12 = false;
  for (const std::string& r : found.refused)
    refused12 |= r.find("libnvjpeg.so.12") != std::string::npos;
  EXPECT_TRUE(refused12);
  fs::remove_all(venv);
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
