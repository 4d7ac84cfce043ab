// The fused kernel (libsluice_kernels.so, loaded as sluice loads it) on a
// real CUDA device against the same arithmetic on the CPU (which
// sample_kernel_test checks against write_sample_precise). Skips where no
// device is visible: the device run is part of bench/gpu/check.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "device/cuda_runtime.h"
#include "device/kernels.h"
#include "image/sample_kernel.h"
#include "tests/image/random_window.h"
#include "tests/test_seed.h"

namespace sluice {
namespace {

using device::cudaMemcpyDeviceToHost;
using device::cudaMemcpyHostToDevice;
using device::cudaSuccess;

const device::CudaRuntime* g_cuda = nullptr;

template <typename T>
T* to_device(const T* host, size_t n) {
  void* d = nullptr;
  EXPECT_EQ(g_cuda->Malloc(&d, n * sizeof(T)), cudaSuccess);
  EXPECT_EQ(g_cuda->Memcpy(d, host, n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return static_cast<T*>(d);
}

TEST(FusedKernelTest, DeviceEqualsHostOverASweep) {
  auto cuda = device::CudaRuntime::get();
  if (!cuda.ok()) GTEST_SKIP() << cuda.status().message();
  g_cuda = *cuda;
  ASSERT_TRUE(g_cuda->use_device(0).ok());
  // With a device visible, the kernels must be there (a CUDA build).
  auto kernels = device::Kernels::get();
  ASSERT_TRUE(kernels.ok()) << kernels.status().message();
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
    ASSERT_EQ(g_cuda->Malloc(&out, bytes), cudaSuccess);
    d.dst = static_cast<uint8_t*>(out);
    detail::SampleJob* jobs = to_device(&d, 1);
    ASSERT_EQ((*kernels)->launch_fused_samples(jobs, 1, spec.width, spec.height, nullptr),
              cudaSuccess);
    ASSERT_EQ(g_cuda->Memcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    for (const void* p : {static_cast<const void*>(d.src), static_cast<const void*>(d.x_start),
                          static_cast<const void*>(d.x_weight), static_cast<const void*>(d.y_start),
                          static_cast<const void*>(d.y_weight), static_cast<const void*>(out),
                          static_cast<const void*>(jobs)}) {
      g_cuda->Free(const_cast<void*>(p));
    }
    // --fmad=false: the device rounds as the host does, bit for bit.
    ASSERT_EQ(std::memcmp(got.data(), want.data(), bytes), 0)
        << "trial " << trial << ": " << w.width << "x" << w.height << " -> " << spec.width << "x"
        << spec.height << " dtype " << dtype_name(spec.dtype);
  }
}

}  // namespace
}  // namespace sluice
