// Partitioned conversion: see convert_part.h.
#include "dataset/convert_part.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "dataset/convert_output.h"

namespace sluice::detail {
namespace {

namespace fs = std::filesystem;

// S for a partitioned conversion: `shards`, or the listed files' bytes over
// shard_bytes. Every part must reach the same S from the listing alone; one
// machine's byte plan cannot be followed, as it depends on the sizes of
// records other machines prepare. A file that cannot be stat'ed counts 0:
// converting it reports it.
size_t planned_shard_count(const SourceList& source, const ConvertOptions& o) {
  if (o.shards > 0) return static_cast<size_t>(o.shards);
  uint64_t bytes = 0;
  for (const SourceItem& item : source.items) {
    std::error_code ec;
    const uint64_t n = fs::file_size(item.path, ec);
    if (!ec) bytes += n;
  }
  return static_cast<size_t>(std::max<uint64_t>(1, (bytes + o.shard_bytes - 1) / o.shard_bytes));
}

// FNV-1a, 64 bits: a digest fixed on every platform, to tell listings and
// option sets apart (not against tampering). Each piece ends with 0xff, so
// ("ab", "c") and ("a", "bc") differ.
struct Digest {
  uint64_t h = 0xcbf29ce484222325ull;
  Digest& add(std::string_view piece) {
    for (unsigned char c : piece) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
    return *this;
  }
  Digest& add(uint64_t v) { return add(std::to_string(v)); }
  std::string hex() const { return fmt::format("{:016x}", h); }
};

std::string listing_digest(const SourceList& source) {
  Digest d;
  d.add(source.classes.size());
  for (const std::string& c : source.classes) d.add(c);
  for (const SourceItem& item : source.items)
    d.add(item.key).add(static_cast<uint64_t>(item.label));
  return d.hex();
}

// What decides the split's bytes and layout. Not `workers` (the bytes do
// not depend on it) nor on_error (good images give the same records under
// any policy, so one part may be rerun with --on-error skip).
std::string fingerprint(const ConvertOptions& o, const std::string& listing,
                        const ShardPlan& plan) {
  Digest d;
  d.add(kPartFormat).add(o.split).add(listing).add(plan.positions).add(plan.count);
  d.add(o.shuffle ? "shuffle" : "keep").add(o.seed).add(compression_name(o.compression));
  d.add(static_cast<uint64_t>(o.max_side)).add(static_cast<uint64_t>(o.quality));
  d.add(o.rewrite_progressive ? "rewrite" : "keep").add(o.check_decode ? "decode" : "header");
  return d.add(o.max_pixels).hex();
}

}  // namespace

ShardPlan plan_shards(const SourceList& source, const ConvertOptions& o) {
  ShardPlan plan;
  plan.positions = source.items.size();
  if (o.parts == 0) {
    plan.count = static_cast<size_t>(o.shards);
    plan.end = plan.count;
    return plan;
  }
  const auto part = static_cast<size_t>(o.part), parts = static_cast<size_t>(o.parts);
  plan.count = planned_shard_count(source, o);
  plan.first = part * plan.count / parts;
  plan.end = (part + 1) * plan.count / parts;
  return plan;
}

// A part owns its shards' names and its part record. A rerun first removes
// its old record, so that no record vouches for shards being replaced, and
// those of another part count (an earlier partitioning).
void prepare_part(const std::string& dir, const ConvertOptions& o, const ShardPlan& plan) {
  remove_part_records(dir, o.split,
                      [&](int part, int parts) { return parts != o.parts || part == o.part; });
  remove_partials(dir, o.split, plan.first, plan.end);
}

// Whoever wrote them: on a cluster the PIDs in temporary names are other
// machines', so whether the writer lives cannot be asked here.
void remove_partials(const std::string& dir, const std::string& split, size_t first, size_t end) {
  const std::string q = regex_quote(split);
  const std::regex ours("\\." + q + "-([0-9]{5})\\.partial(\\.tmp-[0-9]+)?|" + q +
                        "-([0-9]{5})-of-[0-9]{5}\\.idx\\.tmp-[0-9]+");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, ours)) continue;
    const size_t number = std::stoul(m[1].matched ? m[1].str() : m[3].str());
    if (number >= first && number < end) fs::remove(entry.path(), ec);
  }
}

Status publish_part(const std::string& src, const std::string& out_dir, const ConvertOptions& o,
                    const SourceList& source, const ShardPlan& plan, const ConvertReport& report) {
  PartRecord r;
  r.split = o.split;
  r.part = o.part;
  r.parts = o.parts;
  r.images = plan.positions;
  r.listing_digest = listing_digest(source);
  r.fingerprint = fingerprint(o, r.listing_digest, plan);
  r.shard_count = plan.count;
  r.first_shard = plan.first;
  r.shards = report.shards;
  r.records = report.written;
  r.skipped = report.skipped;
  r.classes = report.classes;
  r.compression = o.compression;
  r.command = o.command;
  r.source = fs::absolute(src).lexically_normal().string();
  r.created_by = "sluice " SLUICE_VERSION;
  return write_part_record(out_dir, r);  // last: the part is now whole
}

}  // namespace sluice::detail
