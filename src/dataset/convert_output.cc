// Local-folder output of convert: see convert_output.h.
#include "dataset/convert_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "base/file_util.h"

namespace sluice::detail {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxPartRecordBytes = uint64_t{256} << 20;

std::string in(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

std::string parts_dir(const std::string& dir) {
  return in(dir, kPartsFolder);
}

}  // namespace

std::regex part_record_pattern(const std::string& split) {
  return std::regex(regex_quote(split) + R"(-part-(\d{5})-of-(\d{5})\.json(\.tmp-\d+)?)");
}

std::regex shard_name_pattern(const std::string& split) {
  return std::regex(regex_quote(split) + R"(-\d{5}-of-\d{5}\.(tfrecord|idx))");
}

std::string regex_quote(const std::string& text) {
  std::string quoted;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) quoted += '\\';
    quoted += c;
  }
  return quoted;
}

Status publish_shard(const std::string& dir, const std::string& partial,
                     const std::vector<IndexEntry>& index, ShardInfo* info) {
  SLUICE_ASSIGN_OR_RETURN(info->crc32c, crc32c_of_file(partial, &info->bytes));
  SLUICE_RETURN_IF_ERROR(write_index(in(dir, info->index), index));
  const std::string final_path = in(dir, info->file);
  if (::rename(partial.c_str(), final_path.c_str()) != 0) {
    return errno_error(final_path, "rename into place", errno);
  }
  return Status();
}

Status write_part_record(const std::string& dir, const PartRecord& record) {
  std::error_code ec;
  fs::create_directories(parts_dir(dir), ec);
  if (ec) return errno_error(parts_dir(dir), "cannot create folder", ec.value());
  const std::string path =
      in(parts_dir(dir), part_record_name(record.split, record.part, record.parts));
  return write_file_atomic(path, format_part_record(record));
}

Result<std::vector<PartRecord>> read_part_records(const std::string& dir,
                                                  const std::string& split) {
  const std::regex pattern = part_record_pattern(split);
  std::vector<PartRecord> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parts_dir(dir), ec)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (!std::regex_match(name, m, pattern) || m[3].matched) continue;
    SLUICE_ASSIGN_OR_RETURN(std::string text, read_file(e.path().string(), kMaxPartRecordBytes));
    SLUICE_ASSIGN_OR_RETURN(PartRecord r, parse_part_record(text, e.path().string()));
    if (r.split != split || part_record_name(split, r.part, r.parts) != name) {
      return data_loss_error(e.path().string() + ": its contents describe part " +
                             std::to_string(r.part) + " of " + std::to_string(r.parts) +
                             " of split '" + r.split + "', not what its name says");
    }
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const PartRecord& a, const PartRecord& b) {
    return std::pair(a.parts, a.part) < std::pair(b.parts, b.part);
  });
  return out;
}

void remove_part_records(const std::string& dir, const std::string& split,
                         const std::function<bool(int part, int parts)>& which) {
  const std::regex pattern = part_record_pattern(split);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parts_dir(dir), ec)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, m, pattern) && which(std::stoi(m[1]), std::stoi(m[2]))) {
      fs::remove(e.path(), ec);
    }
  }
}

void remove_empty_parts_folder(const std::string& dir) {
  std::error_code ec;
  if (fs::is_empty(parts_dir(dir), ec) && !ec) fs::remove(parts_dir(dir), ec);
}

Status publish_split(const std::string& dir, const std::string& name,
                     const std::vector<std::string>& classes, SplitInfo split) {
  DatasetManifest manifest;
  std::error_code ec;
  if (fs::exists(in(dir, kManifestName), ec)) {
    SLUICE_ASSIGN_OR_RETURN(manifest, read_manifest(dir));
  }
  if (!manifest.classes.empty() && manifest.classes != classes) {
    return invalid_argument_error(
        fmt::format("{}: its class list differs from split '{}''s", in(dir, kManifestName), name));
  }
  manifest.keys = tensorflow_feature_keys();
  manifest.classes = classes;
  manifest.splits[name] = std::move(split);
  return write_manifest(dir, manifest);
}

void remove_stale_shards(const std::string& dir, const std::string& split,
                         const std::vector<ShardInfo>& keep) {
  const std::regex pattern = shard_name_pattern(split);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (!std::regex_match(name, pattern)) continue;
    bool kept = std::any_of(keep.begin(), keep.end(),
                            [&](const ShardInfo& s) { return s.file == name || s.index == name; });
    if (!kept) fs::remove(e.path(), ec);
  }
}

}  // namespace sluice::detail
