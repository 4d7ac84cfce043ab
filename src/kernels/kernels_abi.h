// The C ABI between sluice and its kernel library (libsluice_kernels.so),
// shared by both sides. No CUDA header: the library's side includes it.
#pragma once

#include "kernels/sample_math.h"

// Bumped whenever SampleJob's layout or a launcher's meaning changes; the
// library reports it together with sizeof(SampleJob), so a stale library
// is refused instead of misread.
#define SLUICE_KERNELS_ABI 1

extern "C" {
// SLUICE_KERNELS_ABI * 100000 + sizeof(SampleJob).
typedef int (*sluice_kernels_abi_fn)(void);
// Runs `count` fused-sample jobs (device memory: the job array and every
// pointer in it) on `stream`; returns a cudaError_t. Asynchronous.
typedef int (*sluice_launch_fused_samples_fn)(const void* device_jobs, int count, int max_width,
                                              int max_height, void* stream);
}

namespace sluice::device {
inline constexpr int kKernelsAbi =
    SLUICE_KERNELS_ABI * 100000 + static_cast<int>(sizeof(::sluice::detail::SampleJob));
}  // namespace sluice::device
