// The 8-bit resize under the previous write_sample (OpenCV's SIMD code), kept
// for the benchmark that measures the integer kernel against it.
#pragma once

#include <cstdint>

#include "sluice/status.h"

namespace sluice::detail {

// Resizes the w x h rectangle at (x, y) of the interleaved RGB image `src`
// (src_width x src_height, rows packed) to out_w x out_h into `dst`:
// bilinear (cv::INTER_LINEAR, fixed-point) unless an axis shrinks by more
// than 2x, then area averaging (cv::INTER_AREA). Single-threaded.
Status resize_rgb8(const uint8_t* src, int src_width, int src_height, int x, int y, int w, int h,
                   uint8_t* dst, int out_w, int out_h);

}  // namespace sluice::detail
