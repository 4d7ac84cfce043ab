// The host's half of the fused sample kernel (kernels/sample_math.h holds
// the arithmetic both sides run): the filter tables and the job for one
// sample, planned from the image module's types.
#pragma once

#include "kernels/sample_math.h"
#include "sluice/image_ops.h"

namespace sluice::detail {

// The filter tables and the job for one sample, exactly as
// write_sample_precise would resize, flip, normalise and store it (same
// checks, same kInvalidArgument). `tables` must outlive the job; a GPU
// caller copies them (and the pixels) to the device and repoints the job.
// A window with no pixels (pixels empty: they live on the device) plans
// from its geometry alone and leaves job->src null.
struct SampleTables {
  AxisTable x, y;
};
Status plan_sample_job(const DecodedWindow& src, bool flip, const SampleSpec& spec, void* dst,
                       SampleTables* tables, SampleJob* job);

}  // namespace sluice::detail
