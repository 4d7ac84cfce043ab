// The part record: what one part of a partitioned convert (`sluice convert
// --part I/N`) wrote, as OUT/.parts/{split}-part-{I:05d}-of-{N:05d}.json.
// `sluice convert --finish` trusts nothing else: a shard without a part
// record naming it is not part of the dataset. docs/formats.md specifies it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/dataset.h"

namespace sluice::detail {

inline constexpr const char* kPartFormat = "sluice convert part 1";
inline constexpr const char* kPartsFolder = ".parts";

struct PartRecord {
  std::string split;
  int part = 0;   // I, from 0
  int parts = 0;  // N
  // Of everything that decides the split's bytes and layout: the listing,
  // the shard count and the options (not the worker count, not --on-error).
  // Parts made with different fingerprints do not form one dataset.
  std::string fingerprint;
  uint64_t images = 0;         // the whole listing's images (all parts)
  std::string listing_digest;  // of its keys, labels and classes
  uint64_t shard_count = 0;    // S: the split's shards (all parts)
  uint64_t first_shard = 0;    // this part's shards are [first_shard, + shards.size())
  std::vector<ShardInfo> shards;
  uint64_t records = 0;  // written by this part: the sum over its shards
  std::vector<std::pair<std::string, std::string>> skipped;  // file, reason
  std::vector<std::string> classes;
  Compression compression = Compression::kNone;
  std::string command, source, created_by;  // as dataset.json's split has them
};

// "train-part-00003-of-00008.json"
std::string part_record_name(std::string_view split, int part, int parts);

std::string format_part_record(const PartRecord& record);
// Parses and checks a part record; `name` is used in error messages.
Result<PartRecord> parse_part_record(std::string_view json, std::string_view name);

}  // namespace sluice::detail
