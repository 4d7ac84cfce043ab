// A partitioned conversion (`sluice convert --part I/N`): how shards are
// planned so that every part can place each record from the listing alone,
// what a part cleans up before it starts, and its part record.
#pragma once

#include <cstddef>
#include <string>

#include "sluice/dataset.h"

namespace sluice::detail {

// Which shard each position of the shuffled listing goes to. A count plan
// (`shards` fixed, or a partitioned conversion) decides from the position
// alone; a byte plan (one machine, --shard-size) starts the next shard when
// the current one is full, which only the one writer can know.
struct ShardPlan {
  size_t positions = 0;  // images in the whole listing
  size_t count = 0;      // shards of the split; 0: a byte plan
  size_t first = 0;      // this run writes shards [first, end) of a count plan
  size_t end = 0;
  size_t shard_of(size_t position) const { return position * count / positions; }
  // The smallest position p with shard_of(p) >= j.
  size_t first_position(size_t j) const { return (j * positions + count - 1) / count; }
  size_t begin_position() const { return count ? first_position(first) : 0; }
  size_t end_position() const { return count ? first_position(end) : positions; }
};

// The plan of a run: for a part, a count plan (ConvertOptions::part) and
// its share of the shards; otherwise `shards` (0: a byte plan), all of them.
ShardPlan plan_shards(const SourceList& source, const ConvertOptions& options);

// Removes what an interrupted earlier run of this part left, and its record.
void prepare_part(const std::string& dir, const ConvertOptions& options, const ShardPlan& plan);

// Removes the temporaries of shards [first, end) of `split`: closed shards
// not yet renamed (".train-00003.partial") and files still being written
// (".train-00003.partial.tmp-PID", "train-00003-of-00008.idx.tmp-PID").
void remove_partials(const std::string& dir, const std::string& split, size_t first, size_t end);

// Writes the part record of a part whose shards `report` lists (last: the
// part is then whole).
Status publish_part(const std::string& src, const std::string& out_dir,
                    const ConvertOptions& options, const SourceList& source, const ShardPlan& plan,
                    const ConvertReport& report);

}  // namespace sluice::detail
