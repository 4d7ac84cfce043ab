// libsluice_kernels.so: sluice's CUDA kernels behind the C ABI of
// kernels/kernels_abi.h. sluice loads this library at run time beside the
// CUDA runtime, so only this file is compiled by nvcc.
#include <cuda_runtime.h>

#include "kernels/kernels_abi.h"

namespace {

// blockIdx.z: the sample; x/y: 16x16 output pixels per block. A thread
// writes the three channels of its pixel.
__global__ void fused_samples(const sluice::detail::SampleJob* jobs) {
  const sluice::detail::SampleJob& j = jobs[blockIdx.z];
  const int ox = blockIdx.x * blockDim.x + threadIdx.x;
  const int oy = blockIdx.y * blockDim.y + threadIdx.y;
  if (ox >= j.out_width || oy >= j.out_height) return;
  for (int c = 0; c < 3; ++c) {
    sluice::detail::store_value(j, ox, oy, c, sluice::detail::sample_value(j, ox, oy, c));
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int sluice_kernels_abi(void) {
  return sluice::device::kKernelsAbi;
}

extern "C" __attribute__((visibility("default"))) int sluice_launch_fused_samples(
    const void* device_jobs, int count, int max_width, int max_height, void* stream) {
  if (count <= 0) return cudaSuccess;
  if (max_width <= 0 || max_height <= 0 || count > 65535) return cudaErrorInvalidValue;
  const dim3 block(16, 16, 1);
  const dim3 grid((max_width + 15) / 16, (max_height + 15) / 16, static_cast<unsigned>(count));
  fused_samples<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const sluice::detail::SampleJob*>(device_jobs));
  return cudaGetLastError();
}
