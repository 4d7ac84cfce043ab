// The fused kernel on a real CUDA device against the same arithmetic on the
// CPU (which sample_kernel_test checks against write_sample_precise). Skips
// where no device is visible: the device run is part of bench/gpu/check.sh.
#include "cuda/fused_kernel.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "tests/image/random_window.h"
#include "tests/test_seed.h"

namespace sluice {
namespace {

template <typename T>
T* to_device(const T* host, size_t n) {
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, n * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, host, n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return static_cast<T*>(d);
}

TEST(FusedKernelTest, DeviceEqualsHostOverASweep) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device visible";
  std::mt19937_64 rng(run_seed("FusedKernelTest"));
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const DType dtypes[] = {DType::kUint8, DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  for (int trial = 0; trial < 64; ++trial) {
    DecodedWindow w = random_window(rng, 400);
    SampleSpec spec;
    spec.width = integer(1, 256);
    spec.height = integer(1, 256);
    spec.dtype = dtypes[trial % 4];
    spec.layout = trial % 8 < 4 ? Layout::kNCHW : Layout::kNHWC;
    const bool flip = trial % 2 == 1;
    const size_t bytes = sample_bytes(spec);
    std::vector<uint8_t> want(bytes), got(bytes);
    detail::SampleTables t;
    detail::SampleJob job;
    ASSERT_TRUE(detail::plan_sample_job(w, flip, spec, want.data(), &t, &job).ok());
    detail::run_sample_job_on_host(job);
    // The same job, its memory on the device.
    detail::SampleJob d = job;
    d.src = to_device(w.pixels.data(), w.pixels.size());
    d.x_start = to_device(t.x.start.data(), t.x.start.size());
    d.x_weight = to_device(t.x.weight.data(), t.x.weight.size());
    d.y_start = to_device(t.y.start.data(), t.y.start.size());
    d.y_weight = to_device(t.y.weight.data(), t.y.weight.size());
    void* out = nullptr;
    ASSERT_EQ(cudaMalloc(&out, bytes), cudaSuccess);
    d.dst = static_cast<uint8_t*>(out);
    detail::SampleJob* jobs = to_device(&d, 1);
    ASSERT_TRUE(cuda::launch_fused_samples(jobs, 1, spec.width, spec.height, nullptr).ok());
    ASSERT_EQ(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    for (const void* p : {static_cast<const void*>(d.src), static_cast<const void*>(d.x_start),
                          static_cast<const void*>(d.x_weight), static_cast<const void*>(d.y_start),
                          static_cast<const void*>(d.y_weight), static_cast<const void*>(out),
                          static_cast<const void*>(jobs)}) {
      cudaFree(const_cast<void*>(p));
    }
    // --fmad=false: the device rounds as the host does, bit for bit.
    ASSERT_EQ(std::memcmp(got.data(), want.data(), bytes), 0)
        << "trial " << trial << ": " << w.width << "x" << w.height << " -> " << spec.width << "x"
        << spec.height << " dtype " << dtype_name(spec.dtype);
  }
}

}  // namespace
}  // namespace sluice
