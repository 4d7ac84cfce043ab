// Where samples come from: shards (through their index) or an ImageFolder
// tree. A source maps a record id (0..size-1, in storage order) to the
// encoded image and its label.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/pipeline.h"

namespace sluice::detail {

// The RNG stream of per-sample augmentation: key = (seed, epoch, sample id,
// kAugmentStream). Shared by the pipeline and its benchmark references.
inline constexpr uint64_t kAugmentStream = 0x61756700ull;  // "aug"

struct RawSample {
  std::string_view image;  // encoded JPEG/PNG, valid while the buffer is
  int64_t label = -1;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual uint64_t size() const = 0;
  // Thread-safe with one `buffer` per thread.
  virtual Status read(uint64_t id, std::string* buffer, RawSample* out) const = 0;
  // The file a record lives in, and its byte offset (-1 for image files).
  virtual std::string where(uint64_t id, int64_t* offset) const = 0;
  // The record's key (options.keys.key, e.g. image/filename; empty where a
  // record has none), or an image file's path below the tree's root.
  virtual Result<std::string> key(uint64_t id) const = 0;
  virtual const std::vector<std::string>& classes() const = 0;
  // "shards", "remote shards" or "image folder", for reports.
  virtual std::string kind() const = 0;
  // The order the next reads follow: `plan` from position `first`, read by
  // `workers` threads (remote sources fetch ahead along it).
  virtual void will_read(std::shared_ptr<const std::vector<uint32_t>> /*plan*/, uint64_t /*first*/,
                         int /*workers*/) {}
  // Adds what the source counts (requests, retries, cache) to `stats`.
  virtual void add_stats(PipelineStats* /*stats*/) const {}
};

Result<std::unique_ptr<SampleSource>> open_sample_source(const PipelineOptions& options);

}  // namespace sluice::detail
