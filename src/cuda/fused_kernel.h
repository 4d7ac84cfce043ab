// The fused sample kernel on a CUDA device: crop (where not already decoded
// as a window), resize, flip, normalise, cast and lay out, one thread per
// output pixel, every sample of a batch in one launch. Its arithmetic is
// image/sample_kernel.h, checked on the CPU against write_sample_precise.
#pragma once

#include "image/sample_kernel.h"
#include "sluice/status.h"

namespace sluice::cuda {

// Whether a CUDA device is usable by this process (a driver, a device).
bool device_available();

// Runs `count` jobs whose pointers (pixels, tables, dst) and the job array
// itself are in device memory, on `stream` (a cudaStream_t; nullptr: the
// default stream). Asynchronous: returns once launched. `max_width` and
// `max_height` bound every job's output size.
Status launch_fused_samples(const detail::SampleJob* device_jobs, int count, int max_width,
                            int max_height, void* stream);

}  // namespace sluice::cuda
