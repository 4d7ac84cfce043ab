// Per-sample cost of the CPU augment path: crop decode at each DCT scale
// (against decode_full, the ceiling) and write_sample for the common specs.
// The JPEG is a real photo (the corpus' 960x720 video frame) resized to
// 500x375 and re-encoded 4:2:0 at quality 90, like an ImageNet image.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "image/resample_kernel.h"
#include "sluice/image_ops.h"

namespace sluice {
namespace {

struct Photo {
  std::string jpeg;
  ImageInfo info;
};

const Photo& photo() {
  static const Photo p = [] {
    Photo out;
    auto bytes =
        detail::read_file(std::string(SLUICE_BENCH_DATA) + "/images/jpeg/jpeg-decoder-mjpeg.jpg");
    if (!bytes.ok()) std::abort();
    auto image = decode_image(*bytes);
    if (!image.ok()) std::abort();
    auto jpeg = encode_jpeg(resize_image(*image, 500, 375), 90);
    if (!jpeg.ok()) std::abort();
    out.jpeg = *jpeg;
    auto info = probe_image(out.jpeg);
    if (!info.ok()) std::abort();
    out.info = *info;
    return out;
  }();
  return p;
}

// A typical RandomResizedCrop window: 60% of the area, centred.
constexpr CropWindow kCrop{56, 42, 388, 290};

void BM_CropDecode(benchmark::State& state) {
  const int d = static_cast<int>(state.range(0));
  CropDecoder decoder;
  DecodedWindow win;
  for (auto _ : state) {
    if (!decoder.decode(photo().jpeg, photo().info, kCrop, d, &win).ok()) std::abort();
    benchmark::DoNotOptimize(win.pixels.data());
  }
}
BENCHMARK(BM_CropDecode)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMicrosecond);

void BM_DecodeFull(benchmark::State& state) {
  CropDecoder decoder;
  DecodedWindow win;
  for (auto _ : state) {
    if (!decoder.decode_full(photo().jpeg, photo().info, &win).ok()) std::abort();
    benchmark::DoNotOptimize(win.pixels.data());
  }
}
BENCHMARK(BM_DecodeFull)->Unit(benchmark::kMicrosecond);

// A ~300x300 window with a fractional crop, resized to 224x224.
DecodedWindow bench_window() {
  DecodedWindow win;
  win.width = win.height = 300;
  win.pixels.resize(300 * 300 * 3);
  for (size_t i = 0; i < win.pixels.size(); ++i) win.pixels[i] = static_cast<uint8_t>(i * 7);
  win.crop_x = 1.5;
  win.crop_y = 2.25;
  win.crop_width = 296;
  win.crop_height = 294.5;
  return win;
}

using Writer = Status (*)(const DecodedWindow&, bool, const SampleSpec&, void*,
                          std::vector<float>*);

void run_writer(benchmark::State& state, Writer writer, const char* name) {
  SampleSpec spec;
  spec.dtype = static_cast<DType>(state.range(0));
  spec.layout = static_cast<Layout>(state.range(1));
  const DecodedWindow win = bench_window();
  std::vector<uint8_t> out(sample_bytes(spec));
  std::vector<float> scratch;
  bool flip = false;
  for (auto _ : state) {
    if (!writer(win, flip, spec, out.data(), &scratch).ok()) std::abort();
    flip = !flip;
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(name) + " " + std::string(dtype_name(spec.dtype)) + " " +
                 std::string(layout_name(spec.layout)));
}

// write_sample (the integer SIMD kernel on this CPU's best target); arg 0 =
// dtype, 1 = layout.
void BM_WriteSample(benchmark::State& state) {
  run_writer(state, write_sample, "kernel");
}
void specs(benchmark::internal::Benchmark* b) {
  b->Args({static_cast<int>(DType::kFloat32), static_cast<int>(Layout::kNCHW)})
      ->Args({static_cast<int>(DType::kFloat32), static_cast<int>(Layout::kNHWC)})
      ->Args({static_cast<int>(DType::kFloat16), static_cast<int>(Layout::kNCHW)})
      ->Args({static_cast<int>(DType::kBFloat16), static_cast<int>(Layout::kNCHW)})
      ->Args({static_cast<int>(DType::kUint8), static_cast<int>(Layout::kNHWC)})
      ->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_WriteSample)->Apply(specs);

// The kernel before this one (OpenCV's 8-bit resize, then a table per
// value): the side by side the speed-up is measured against.
void BM_WriteSampleOpenCv(benchmark::State& state) {
  run_writer(state, detail::write_sample_opencv, "opencv");
}
BENCHMARK(BM_WriteSampleOpenCv)->Apply(specs);

// The kernel forced onto each Highway target this CPU runs (float32 NCHW).
void BM_WriteSampleTarget(benchmark::State& state, std::string target) {
  if (!detail::force_resample_target(target).ok()) std::abort();
  run_writer(state, write_sample, target.c_str());
  if (!detail::force_resample_target("").ok()) std::abort();
}

// From a whole 1/1 decode of a large crop (area-filter path, 2.6x).
void BM_WriteSampleAreaShrink(benchmark::State& state) {
  SampleSpec spec;
  DecodedWindow win;
  win.width = 600;
  win.height = 580;
  win.pixels.resize(600 * 580 * 3);
  for (size_t i = 0; i < win.pixels.size(); ++i) win.pixels[i] = static_cast<uint8_t>(i * 13);
  win.crop_width = 590;
  win.crop_height = 580;
  std::vector<uint8_t> out(sample_bytes(spec));
  std::vector<float> scratch;
  for (auto _ : state) {
    if (!write_sample(win, false, spec, out.data(), &scratch).ok()) std::abort();
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_WriteSampleAreaShrink)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  for (const std::string& t : sluice::detail::resample_targets()) {
    benchmark::RegisterBenchmark(("BM_WriteSampleTarget/" + t).c_str(),
                                 sluice::BM_WriteSampleTarget, t)
        ->Args({static_cast<int>(sluice::DType::kFloat32), static_cast<int>(sluice::Layout::kNCHW)})
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
