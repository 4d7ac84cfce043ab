// Read-ahead for remote shards: a few threads per worker fetch the records
// the epoch's plan will ask for next, so that many ranged GETs are in flight
// while the workers decode. Fetching follows the plan from where the epoch
// starts; consecutive records of one file (no shuffle, or quasi blocks) go
// as one request of up to kBlockBytes. What is fetched and not yet taken
// stays within the byte budget (part of PipelineOptions::memory_budget).
//
// A worker's take() gets its record's bytes when the read-ahead has (or is
// fetching) it; otherwise the worker reads it itself and the read-ahead
// skips it. The bytes are the same either way: the read-ahead calls the
// same RecordFile::read.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sluice/status.h"

namespace sluice::detail {

class ReadAhead {
 public:
  // Where record `id` is: a file number and the record's offset and size in
  // it (for grouping neighbours).
  struct Place {
    size_t file = 0;
    size_t index = 0;
    uint64_t offset = 0, size = 0;
  };
  // Reads `count` consecutive records of `file` from `index` on, one string
  // each.
  using ReadSpan =
      std::function<Status(size_t file, size_t index, size_t count, std::vector<std::string>* out)>;

  ReadAhead(std::function<Place(uint64_t)> locate, ReadSpan read, uint64_t budget_bytes);
  ~ReadAhead();

  // A new epoch (or a restart inside one): drops what was fetched and
  // follows `plan` from position `first`, with `threads` fetchers.
  void follow(std::shared_ptr<const std::vector<uint32_t>> plan, uint64_t first, int threads);

  // The record's bytes if the read-ahead has or is fetching it (waits for
  // it), with the status of its read; false when the caller is to read it.
  bool take(uint64_t id, std::string* bytes, Status* status);

  // Bytes reserved from the budget now (fetched and not taken, or in flight).
  uint64_t held_bytes();

  static constexpr uint64_t kBlockBytes = uint64_t{4} << 20;

 private:
  struct Entry {
    bool ready = false;
    uint64_t bytes = 0;  // reserved from the budget
    std::string data;
    Status status;
  };
  struct Job {
    uint64_t generation = 0;
    size_t file = 0, index = 0;
    std::vector<uint64_t> ids;
    uint64_t bytes = 0;
  };
  bool next_job(Job* job);  // under mu_
  void fetcher(std::stop_token st);
  void finish(const Job& job, Status s, std::vector<std::string>* records);

  std::function<Place(uint64_t)> locate_;
  ReadSpan read_;
  const uint64_t budget_;

  std::mutex mu_;
  std::condition_variable_any cv_;
  std::shared_ptr<const std::vector<uint32_t>> plan_;
  uint64_t cursor_ = 0;
  uint64_t generation_ = 0;
  uint64_t held_ = 0;
  std::unordered_map<uint64_t, Entry> entries_;
  std::unordered_set<uint64_t> skip_;  // read by a worker before the fetchers got there
  std::vector<std::jthread> threads_;
};

}  // namespace sluice::detail
