// JSON pieces that dataset.json and the part record share (manifest.cc,
// part_record.cc): typed field reads that name what is wrong, and a shard's
// and a skipped file's entries.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/dataset.h"

namespace sluice::detail {

using json = nlohmann::ordered_json;

// Reads a required field of the expected JSON type, or explains which one
// is missing or wrong.
template <typename T>
Status get_field(const json& j, const char* field, T* out, std::string_view where) {
  auto it = j.find(field);
  if (it == j.end()) return data_loss_error(fmt::format("{}: missing field '{}'", where, field));
  try {
    *out = it->template get<T>();
  } catch (const json::exception&) {
    return data_loss_error(fmt::format("{}: field '{}' has the wrong type", where, field));
  }
  return Status();
}

json shard_to_json(const ShardInfo& shard);
// Checks the CRC's spelling and that the names stay inside the dataset folder.
Status shard_from_json(const json& j, ShardInfo* shard, std::string_view where);

// The "shards" array: each entry as shard_from_json reads it, named by its place.
Status shards_from_json(const json& j, std::vector<ShardInfo>* out, std::string_view where);

// The "compression" field: a name parse_compression knows, never "auto".
Status compression_from_json(const json& j, Compression* out, std::string_view where);

using Skipped = std::vector<std::pair<std::string, std::string>>;
json skipped_to_json(const Skipped& skipped);
// Entries that are not {file, reason} strings are left out.
Skipped skipped_from_json(const json& j);

}  // namespace sluice::detail
