// How big the pipeline's ring is: worker threads and batch slots, from the
// options and the memory budgets. Pure functions, so the rules are tested
// without starting a pipeline (tests/pipeline/sizing_test.cc).
#pragma once

#include <cstdint>
#include <string>

#include "sluice/image_ops.h"
#include "sluice/pipeline.h"

namespace sluice::detail {

// Per-worker scratch budgeted for: a decoded crop window (a 4000x3000
// photo decoded whole is 36 MB, a typical crop at reduced scale far less),
// the encoded image and the resize rows.
inline constexpr uint64_t kWorkerScratchBytes = uint64_t{48} << 20;

// Kernel mode: the most of a slot's arena one sample may take (its decoded
// window and resize tables). Crop decoding picks the smallest DCT scale
// that covers the output, so a window is usually under (2w x 2h) pixels;
// anything larger is resized on the CPU to w x h first (SlotArena).
size_t arena_per_sample(const SampleSpec& spec);

struct RingSize {
  int workers = 0;
  int prefetch = 0;
  std::string tuning;  // how they were chosen, in words (PipelineStats::tuning)
};

// Workers: set, or one per core. Slots: set, or as many as the host budget
// (less the workers' scratch) and `device_fit` (slots the device budget
// holds; UINT64_MAX on the host) allow, up to two per worker: they hide
// the jitter of single slow samples, and more only adds memory. Fewer than
// two slots fit: kInvalidArgument saying what to raise or lower.
// `reserved` is taken from the budget first (a remote source's read-ahead).
Result<RingSize> size_ring(const PipelineOptions& o, uint64_t slot_bytes, uint64_t device_fit,
                           int cores, uint64_t reserved = 0);

}  // namespace sluice::detail
