// A local cache of remote shards (PipelineOptions::cache_dir): each shard
// is downloaded whole, once, in the background while the first epoch reads
// it by ranges; from then on its records are read from the local copy. The
// cache is bounded (cache_bytes): the least recently used shards go first
// (last use = the copy's modification time, touched on each use), never one
// this process has open. Each copy has a sidecar `NAME.meta` holding the
// object's URL, size and ETag and the copy's CRC32C: a copy is used only
// when the object still has that size and ETag and the bytes still have
// that CRC (checked once per process), so a stale or damaged copy is
// fetched again, never read.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sluice/status.h"

namespace sluice::detail {

class ShardCache {
 public:
  ShardCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

  // The local copy of `url` when it is whole and current; its .idx is
  // beside it (index_path_for).
  Result<std::optional<std::string>> lookup(const std::string& url, uint64_t size,
                                            const std::string& etag);
  // Downloads `url` into the cache (making room first), writes `index_text`
  // beside it, and returns the copy's path; nullopt when it cannot fit.
  // `stop` is polled between pieces: true abandons the download.
  Result<std::optional<std::string>> fill(const std::string& url, uint64_t size,
                                          const std::string& etag, const std::string& index_text,
                                          const std::function<bool()>& stop);

  uint64_t hits() const;
  uint64_t fills() const;

 private:
  std::string entry_path(const std::string& url) const;
  Status make_room(uint64_t bytes);

  std::string dir_;
  uint64_t max_bytes_;
  mutable std::mutex mu_;
  std::set<std::string> in_use_;  // copies this process reads
  uint64_t hits_ = 0, fills_ = 0;
};

}  // namespace sluice::detail
