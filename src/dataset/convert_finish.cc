// finish_convert: checks the parts of a partitioned conversion, then writes
// dataset.json. Only part records are trusted: a part writes its record
// after its shards are in place, so a shard no record names, or one whose
// size or CRC32C differs from its record's, is an interrupted or later
// write, never part of the dataset.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "base/file_util.h"
#include "dataset/convert_output.h"
#include "dataset/convert_part.h"
#include "dataset/convert_remote.h"
#include "dataset/part_record.h"
#include "remote/files.h"
#include "remote/url.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using detail::PartRecord;

// Every problem found, so that one --finish names all the parts to rerun;
// the error message lists the first few.
class Problems {
 public:
  void add(std::string problem) { list_.push_back(std::move(problem)); }
  Status status() const {
    constexpr size_t kShown = 8;
    if (list_.empty()) return Status();
    if (list_.size() == 1) return data_loss_error(list_[0]);
    std::string message = fmt::format("{} problems: ", list_.size());
    for (size_t i = 0; i < list_.size() && i < kShown; ++i) message += (i ? "; " : "") + list_[i];
    if (list_.size() > kShown) message += fmt::format("; and {} more", list_.size() - kShown);
    return data_loss_error(message);
  }

 private:
  std::vector<std::string> list_;
};

std::string in(const std::string& dir, const std::string& name) {
  if (remote::is_url(dir)) return remote::join(dir, name);
  return (fs::path(dir) / name).string();
}

std::string record_path(const std::string& dir, const std::string& split, int part, int parts) {
  return in(in(dir, detail::kPartsFolder), detail::part_record_name(split, part, parts));
}

std::string record_path(const std::string& dir, const PartRecord& r) {
  return record_path(dir, r.split, r.part, r.parts);
}

// How two parts' conversions differ, in words.
std::string difference(const PartRecord& a, const PartRecord& b) {
  if (a.images != b.images) return fmt::format("from {} images, not {},", a.images, b.images);
  if (a.listing_digest != b.listing_digest) return "from another listing";
  if (a.shard_count != b.shard_count)
    return fmt::format("for {} shards, not {},", a.shard_count, b.shard_count);
  return "with other options";
}

// The shards a part must hold, by the plan every part computes.
void check_share(const std::string& dir, const PartRecord& r, Problems* problems) {
  const uint64_t first = r.shard_count * r.part / r.parts;
  const uint64_t end = r.shard_count * (r.part + 1) / r.parts;
  if (r.first_shard != first || r.shards.size() != end - first) {
    problems->add(fmt::format("{}: holds shards {}..{}, expected {}..{}", record_path(dir, r),
                              r.first_shard, r.first_shard + r.shards.size(), first, end));
    return;
  }
  for (size_t i = 0; i < r.shards.size(); ++i) {
    const std::string want =
        fmt::format("{}-{:05d}-of-{:05d}.tfrecord", r.split, first + i, r.shard_count);
    if (r.shards[i].file != want) {
      problems->add(fmt::format("{}: shard {} is named {}, expected {}", record_path(dir, r),
                                first + i, r.shards[i].file, want));
    }
  }
}

// All N parts there, each of one conversion (the first record's).
void check_parts(const std::string& dir, const std::vector<PartRecord>& parts, Problems* problems) {
  const PartRecord& ref = parts.front();
  std::vector<bool> seen(static_cast<size_t>(ref.parts));
  for (const PartRecord& r : parts) {
    if (r.parts != ref.parts) {
      problems->add(fmt::format("{}: a part of {}, but {} is a part of {}", record_path(dir, r),
                                r.parts, record_path(dir, ref), ref.parts));
    } else if (r.fingerprint != ref.fingerprint) {
      seen[static_cast<size_t>(r.part)] = true;
      problems->add(fmt::format("{}: made {} than {}: rerun it with the same source and options",
                                record_path(dir, r), difference(r, ref), record_path(dir, ref)));
    } else {
      seen[static_cast<size_t>(r.part)] = true;
      check_share(dir, r, problems);
    }
  }
  for (int i = 0; i < ref.parts; ++i) {
    if (!seen[static_cast<size_t>(i)]) {
      problems->add(fmt::format("{}: missing: part {} of {} has not finished",
                                record_path(dir, ref.split, i, ref.parts), i, ref.parts));
    }
  }
}

// One shard as its part record says: there, of that size (and CRC32C),
// with an index of as many entries.
void check_shard(const std::string& dir, const PartRecord& r, const ShardInfo& s, bool verify,
                 Problems* problems) {
  const std::string path = in(dir, s.file);
  const std::string rerun = fmt::format("rerun part {} of {}", r.part, r.parts);
  auto found = remote::file_size(path);
  if (!found.ok()) {
    if (found.status().code() != StatusCode::kNotFound) {
      return problems->add(fmt::format("{} ({})", found.status().message(), rerun));
    }
    return problems->add(fmt::format("{}: missing ({})", path, rerun));
  }
  const uint64_t size = *found;
  if (size != s.bytes) {
    return problems->add(
        fmt::format("{}: {} bytes where part {} wrote {}: half-written or "
                    "replaced since ({})",
                    path, size, r.part, s.bytes, rerun));
  }
  if (verify) {
    uint64_t bytes = 0;
    auto crc = crc32c_of_file(path, &bytes);
    if (!crc.ok()) return problems->add(std::string(crc.status().message()));
    if (*crc != s.crc32c) {
      return problems->add(
          fmt::format("{}: CRC32C {:08x} where part {} wrote {:08x}: damaged "
                      "or replaced since ({})",
                      path, *crc, r.part, s.crc32c, rerun));
    }
  }
  auto index = read_index(in(dir, s.index));
  if (!index.ok()) {
    problems->add(fmt::format("{} ({})", index.status().message(), rerun));
  } else if (index->size() != s.records) {
    problems->add(fmt::format("{}: {} entries where part {} wrote {} records ({})",
                              in(dir, s.index), index->size(), r.part, s.records, rerun));
  }
}

// The split as the parts made it, in shard order.
ConvertReport merge(const std::vector<PartRecord>& parts) {
  ConvertReport report;
  report.images = parts.front().images;
  report.classes = parts.front().classes;
  report.shard_count = parts.front().shard_count;
  for (const PartRecord& r : parts) {
    report.written += r.records;
    report.skipped.insert(report.skipped.end(), r.skipped.begin(), r.skipped.end());
    report.shards.insert(report.shards.end(), r.shards.begin(), r.shards.end());
    for (const ShardInfo& s : r.shards) report.bytes_out += s.bytes;
  }
  return report;
}

// dataset.json's entry: part 0's command and source stand for all.
SplitInfo split_info(const std::vector<PartRecord>& parts, const ConvertReport& report) {
  SplitInfo split;
  split.compression = parts.front().compression;
  split.records = report.written;
  split.shards = report.shards;
  split.skipped = report.skipped;
  split.command = parts.front().command;
  split.source = parts.front().source;
  split.created_by = parts.front().created_by;
  return split;
}

// The part records in `records_dir`, checked against the shards at `dir`.
Result<std::vector<PartRecord>> checked_parts(const std::string& records_dir,
                                              const std::string& dir, const FinishOptions& o) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<PartRecord> parts,
                          detail::read_part_records(records_dir, o.split));
  if (parts.empty()) {
    return not_found_error(
        fmt::format("{}: no part records of split '{}' (convert with --part "
                    "I/N first)",
                    in(dir, detail::kPartsFolder), o.split));
  }
  Problems problems;
  check_parts(dir, parts, &problems);
  SLUICE_RETURN_IF_ERROR(problems.status());
  for (const PartRecord& r : parts) {
    for (const ShardInfo& s : r.shards) check_shard(dir, r, s, o.verify, &problems);
  }
  SLUICE_RETURN_IF_ERROR(problems.status());
  return parts;
}

}  // namespace

Result<ConvertReport> finish_convert(const std::string& out_dir, const FinishOptions& options) {
  if (remote::is_url(out_dir)) return detail::finish_url(out_dir, options);
  return detail::finish_staged(out_dir, out_dir, options);
}

namespace detail {

Result<ConvertReport> finish_staged(const std::string& out_dir, const std::string& shards_at,
                                    const FinishOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  SLUICE_ASSIGN_OR_RETURN(std::vector<PartRecord> parts,
                          checked_parts(out_dir, shards_at, options));
  ConvertReport report = merge(parts);
  if (report.written == 0) {
    return data_loss_error(fmt::format("{}: no image could be converted ({} bad files)",
                                       parts.front().source, report.skipped.size()));
  }
  SLUICE_RETURN_IF_ERROR(
      detail::publish_split(out_dir, options.split, report.classes, split_info(parts, report)));
  // After dataset.json: until then a rerun of --finish finds the records.
  detail::remove_stale_shards(out_dir, options.split, report.shards);
  detail::remove_partials(out_dir, options.split, 0, SIZE_MAX);
  detail::remove_part_records(out_dir, options.split, [](int, int) { return true; });
  detail::remove_empty_parts_folder(out_dir);
  // What a killed earlier --finish left (this one, on this machine, is the
  // only writer now).
  detail::remove_dead_temporaries_of(in(out_dir, kManifestName));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace detail
}  // namespace sluice
