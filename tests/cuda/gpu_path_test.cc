// The GPU data path on a real CUDA device (skipped where none is visible;
// bench/gpu/check.sh runs it on a GPU machine and keeps its output):
//   - the pipeline on the device against the same pipeline on the host;
//   - nvJPEG's tiers (H: the hardware engine, G: CUDA cores) against
//     libjpeg-turbo, printing the measured pixel difference per tier.
// On machines without a GPU the same code runs against fakes in
// tests/device; only what a real GPU adds is here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "device/cuda_runtime.h"
#include "device/jpeg_tiers.h"
#include "sluice/dataset.h"
#include "sluice/image.h"
#include "sluice/pipeline.h"
#include "tests/dataset/dataset_test_util.h"

namespace sluice {
namespace {

const device::CudaRuntime* gpu() {
  auto c = device::CudaRuntime::get();
  return c.ok() ? *c : nullptr;
}

std::string read_data(const std::string& name) {
  std::ifstream f(std::string(SLUICE_TEST_DATA) + "/images/" + name, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::vector<uint8_t>> batches(const PipelineOptions& o) {
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
  return out;
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
  int worst = 0;
  for (size_t b = 0; b < host.size(); ++b) {
    for (size_t i = 0; i < host[b].size(); ++i) {
      worst = std::max(worst, std::abs(int(host[b][i]) - int(kernel[b][i])));
    }
  }
  std::printf("kernel mode against the CPU path (uint8): largest difference %d\n", worst);
  EXPECT_LE(worst, 2);
}

// Tier H and G pixels against libjpeg-turbo's (decode_image), whole images.
TEST(GpuPathTest, NvjpegTiersAgainstLibjpegTurbo) {
  const device::CudaRuntime* cuda = gpu();
  if (!cuda) GTEST_SKIP() << "no CUDA device visible";
  const char* files[] = {"jpeg/libjpeg-turbo-testorig.jpg",  "jpeg/pillow-hopper.jpg",
                         "jpeg/wuffs-peacock.default.jpeg",  "jpeg/wuffs-peacock.s1x1-444.jpeg",
                         "jpeg/wuffs-peacock.s2x1-422.jpeg", "jpeg/wuffs-peacock.progressive.jpeg"};
  for (double share : {1.0, 0.0}) {
    device::GpuJpegOptions jo;
    jo.hardware_share = share;
    auto dec = device::GpuJpegDecoder::create(cuda, 0, jo);
    ASSERT_TRUE(dec.ok()) << dec.status().to_string();
    if (!(*dec)->stats().nvjpeg_available) GTEST_SKIP() << (*dec)->stats().nvjpeg_library;
    std::vector<std::string> bytes;
    std::vector<device::GpuJpegJob> jobs;
    for (size_t i = 0; i < std::size(files); ++i) {
      bytes.push_back(read_data(files[i]));
      auto info = probe_image(bytes.back());
      ASSERT_TRUE(info.ok());
      jobs.push_back({bytes.back(), {0, 0, info->width, info->height}, i});
    }
    std::vector<device::GpuJpegResult> out;
    ASSERT_TRUE((*dec)->decode(jobs, nullptr, &out).ok());
    ASSERT_EQ(cuda->StreamSynchronize(nullptr), 0);
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (out[i].tier == device::JpegTier::kCpu) {
        std::printf("%s: tier C (%s)\n", files[i],
                    std::string(out[i].cpu_reason.message()).c_str());
        continue;
      }
      auto want = decode_image(bytes[i]);
      ASSERT_TRUE(want.ok());
      std::vector<uint8_t> got(out[i].pitch * out[i].height);
      ASSERT_EQ(cuda->Memcpy(got.data(), out[i].pixels, got.size(), device::cudaMemcpyDeviceToHost),
                0);
      ASSERT_EQ(out[i].width, want->width);
      ASSERT_EQ(out[i].height, want->height);
      int worst = 0;
      double sum = 0;
      for (int y = 0; y < want->height; ++y) {
        for (int x = 0; x < want->width * 3; ++x) {
          int d =
              std::abs(int(got[y * out[i].pitch + x]) - int(want->pixels[y * want->width * 3 + x]));
          worst = std::max(worst, d);
          sum += d;
        }
      }
      double mean = sum / (want->width * want->height * 3.0);
      std::printf("%s: tier %s, largest difference %d, mean %.3f (0..255)\n", files[i],
                  std::string(device::jpeg_tier_name(out[i].tier)).c_str(), worst, mean);
      // Different IDCTs and chroma upsampling: close, not equal.
      EXPECT_LE(mean, 2.0) << files[i];
      EXPECT_LE(worst, 48) << files[i];
    }
  }
}

}  // namespace
}  // namespace sluice
