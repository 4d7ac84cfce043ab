#include <cuda_runtime.h>

#include <string>

#include "cuda/fused_kernel.h"

namespace sluice::cuda {
namespace {

// blockIdx.z: the sample; x/y: 16x16 output pixels per block. A thread
// writes the three channels of its pixel.
__global__ void fused_samples(const detail::SampleJob* jobs) {
  const detail::SampleJob& j = jobs[blockIdx.z];
  const int ox = blockIdx.x * blockDim.x + threadIdx.x;
  const int oy = blockIdx.y * blockDim.y + threadIdx.y;
  if (ox >= j.out_width || oy >= j.out_height) return;
  for (int c = 0; c < 3; ++c) detail::store_value(j, ox, oy, c, detail::sample_value(j, ox, oy, c));
}

}  // namespace

bool device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

Status launch_fused_samples(const detail::SampleJob* device_jobs, int count, int max_width,
                            int max_height, void* stream) {
  if (count <= 0) return Status();
  if (max_width <= 0 || max_height <= 0) return invalid_argument_error("empty sample size");
  if (count > 65535) return invalid_argument_error("at most 65535 samples per launch");
  const dim3 block(16, 16, 1);
  const dim3 grid((max_width + 15) / 16, (max_height + 15) / 16, static_cast<unsigned>(count));
  fused_samples<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(device_jobs);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    return internal_error(std::string("fused sample kernel launch: ") + cudaGetErrorString(e));
  }
  return Status();
}

}  // namespace sluice::cuda
