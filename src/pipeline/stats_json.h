// PipelineStats as JSON, defined once: `sluice bench --json`'s "stages"
// and "device" (docs/formats.md, "Bench summary") and the same parts of
// the Python module's Pipeline.stats(). Here too: verdict_input and
// busy_share (declared in sluice/pipeline.h), which all of them use.
#pragma once

#include <nlohmann/json.hpp>

#include "sluice/pipeline.h"

namespace sluice {

// Per stage: items, bytes, busy_seconds, wait_seconds and busy_share (busy /
// (wall x workers); 0 for the consumer's "batch"), over `wall_seconds`.
nlohmann::ordered_json stages_json(const PipelineStats& stats, double wall_seconds);

// On a device (stats.device >= 0): where augmentation and decoding ran, the
// copies, the kernel, images per decode tier ({images, images_per_second}),
// the decoder's state and `gpu_busy_percent` (negative: unknown, null).
nlohmann::ordered_json device_json(const PipelineStats& stats, double wall_seconds,
                                   double gpu_busy_percent);

// Remote shards (stats.remote): requests, retries, failures, bytes and
// the cache's hits and fills.
nlohmann::ordered_json remote_json(const PipelineStats& stats);

}  // namespace sluice
