// The part record's JSON. The format is in docs/formats.md.
#include "dataset/part_record.h"

#include <fmt/format.h>

#include "dataset/manifest_json.h"

namespace sluice::detail {
namespace {

// Part 0 .. N-1 of N, shards within S, and the per-shard counts adding up:
// a record that breaks these was not written by sluice.
Status check_record(const PartRecord& r, std::string_view name) {
  if (r.parts < 1 || r.part < 0 || r.part >= r.parts) {
    return data_loss_error(fmt::format("{}: part {} of {} is out of range", name, r.part, r.parts));
  }
  if (r.first_shard + r.shards.size() > r.shard_count) {
    return data_loss_error(fmt::format("{}: shards {}..{} lie outside the split's {}", name,
                                       r.first_shard, r.first_shard + r.shards.size(),
                                       r.shard_count));
  }
  uint64_t total = 0;
  for (const ShardInfo& s : r.shards) total += s.records;
  if (total != r.records) {
    return data_loss_error(
        fmt::format("{}: shards hold {} records but the part says {}", name, total, r.records));
  }
  return Status();
}

Status fields_from_json(const json& j, PartRecord* r, std::string_view name) {
  SLUICE_RETURN_IF_ERROR(get_field(j, "split", &r->split, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "part", &r->part, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "parts", &r->parts, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "fingerprint", &r->fingerprint, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "images", &r->images, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "listing_digest", &r->listing_digest, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "shard_count", &r->shard_count, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "first_shard", &r->first_shard, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "records", &r->records, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "classes", &r->classes, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "command", &r->command, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "source", &r->source, name));
  SLUICE_RETURN_IF_ERROR(get_field(j, "created_by", &r->created_by, name));
  SLUICE_RETURN_IF_ERROR(compression_from_json(j, &r->compression, name));
  if (auto sk = j.find("skipped"); sk != j.end()) r->skipped = skipped_from_json(*sk);
  return Status();
}

}  // namespace

std::string part_record_name(std::string_view split, int part, int parts) {
  return fmt::format("{}-part-{:05d}-of-{:05d}.json", split, part, parts);
}

std::string format_part_record(const PartRecord& r) {
  json shards = json::array();
  for (const ShardInfo& s : r.shards) shards.push_back(shard_to_json(s));
  json j{{"format", kPartFormat},
         {"split", r.split},
         {"part", r.part},
         {"parts", r.parts},
         {"fingerprint", r.fingerprint},
         {"images", r.images},
         {"listing_digest", r.listing_digest},
         {"shard_count", r.shard_count},
         {"first_shard", r.first_shard},
         {"shards", shards},
         {"records", r.records},
         {"skipped", skipped_to_json(r.skipped)},
         {"classes", r.classes},
         {"compression", std::string(compression_name(r.compression))},
         {"command", r.command},
         {"source", r.source},
         {"created_by", r.created_by}};
  return j.dump(2) + "\n";
}

Result<PartRecord> parse_part_record(std::string_view text, std::string_view name) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return data_loss_error(fmt::format("{}: not valid JSON", name));
  }
  std::string tag;
  SLUICE_RETURN_IF_ERROR(get_field(j, "format", &tag, name));
  if (tag != kPartFormat) {
    return data_loss_error(
        fmt::format("{}: format is '{}', expected '{}'", name, tag, kPartFormat));
  }
  PartRecord r;
  SLUICE_RETURN_IF_ERROR(fields_from_json(j, &r, name));
  SLUICE_RETURN_IF_ERROR(shards_from_json(j, &r.shards, name));
  SLUICE_RETURN_IF_ERROR(check_record(r, name));
  return r;
}

}  // namespace sluice::detail
