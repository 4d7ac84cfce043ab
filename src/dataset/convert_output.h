// The steps that put a conversion's files in place in a local folder, kept
// apart from the conversion so that another output (object storage) can
// slot in. Each makes one file appear whole or not at all, and the order of
// the calls is the protocol: shards, then the part record or dataset.json.
#pragma once

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "dataset/part_record.h"
#include "sluice/dataset.h"
#include "sluice/record.h"

namespace sluice::detail {

// Puts a closed shard in place: fills info->crc32c and info->bytes from the
// file `partial`, writes `index` as info->index, then renames `partial` to
// info->file (both names relative to `dir`).
Status publish_shard(const std::string& dir, const std::string& partial,
                     const std::vector<IndexEntry>& index, ShardInfo* info);

// DIR/.parts/{split}-part-{I}-of-{N}.json, atomically.
Status write_part_record(const std::string& dir, const PartRecord& record);

// Every part record of `split` under DIR/.parts, ordered by (parts, part).
// One that cannot be read or parsed is an error naming it.
Result<std::vector<PartRecord>> read_part_records(const std::string& dir, const std::string& split);

// Removes the part records of `split` (and their temporaries) for which
// which(part, parts) holds.
void remove_part_records(const std::string& dir, const std::string& split,
                         const std::function<bool(int part, int parts)>& which);

// Removes DIR/.parts when it is empty. Not while parts may run: one may have
// just created the folder to write its record in.
void remove_empty_parts_folder(const std::string& dir);

// Adds or replaces split `name` in DIR/dataset.json (creating it), whose
// class list must be `classes` when it has one. Written last: the split is
// whole once this returns.
Status publish_split(const std::string& dir, const std::string& name,
                     const std::vector<std::string>& classes, SplitInfo split);

// Removes this split's shards and indexes that `keep` does not name: what an
// earlier conversion with another shard count left.
void remove_stale_shards(const std::string& dir, const std::string& split,
                         const std::vector<ShardInfo>& keep);

// {split}-part-{I}-of-{N}.json (I and N captured), optionally with a
// writer's ".tmp-PID" (captured third).
std::regex part_record_pattern(const std::string& split);
// The split's shard files and their indexes, of any shard count.
std::regex shard_name_pattern(const std::string& split);

// The split name with regex metacharacters escaped.
std::string regex_quote(const std::string& text);

}  // namespace sluice::detail
