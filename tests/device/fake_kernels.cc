// A stand-in for libsluice_kernels.so for machines without a GPU: the same
// C ABI, running the kernel's own arithmetic (kernels/sample_math.h, the
// code the CUDA kernel runs per thread) on the fake runtime's stream, in
// stream order like a launch.
extern "C" int cudaLaunchHostFunc(void* stream, void (*fn)(void*), void* data);

#include <vector>

#include "kernels/kernels_abi.h"

namespace {

struct Launch {
  const sluice::detail::SampleJob* jobs;
  int count;
};

void run(void* p) {
  Launch* l = static_cast<Launch*>(p);
  for (int i = 0; i < l->count; ++i) sluice::detail::run_sample_job_on_host(l->jobs[i]);
  delete l;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int sluice_kernels_abi(void) {
  return sluice::device::kKernelsAbi;
}

extern "C" __attribute__((visibility("default"))) int sluice_launch_fused_samples(
    const void* device_jobs, int count, int max_width, int max_height, void* stream) {
  if (count <= 0) return 0;
  if (max_width <= 0 || max_height <= 0 || count > 65535) return 1;  // cudaErrorInvalidValue
  return cudaLaunchHostFunc(
      stream, run, new Launch{static_cast<const sluice::detail::SampleJob*>(device_jobs), count});
}
