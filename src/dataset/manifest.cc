// dataset.json: read, validate, write. The format is in docs/formats.md.
#include <fmt/format.h>

#include <filesystem>

#include "base/file_util.h"
#include "dataset/manifest_json.h"
#include "remote/files.h"
#include "remote/url.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

using detail::get_field;
using detail::json;

constexpr const char* kFormatTag = "sluice-dataset";
constexpr uint64_t kMaxManifestBytes = uint64_t{256} << 20;

json keys_to_json(const FeatureKeys& k) {
  return json{{"image", k.image},   {"format", k.format}, {"label", k.label},
              {"height", k.height}, {"width", k.width},   {"key", k.key}};
}

Status keys_from_json(const json& j, FeatureKeys* k, std::string_view where) {
  SLUICE_RETURN_IF_ERROR(get_field(j, "image", &k->image, where));
  SLUICE_RETURN_IF_ERROR(get_field(j, "format", &k->format, where));
  SLUICE_RETURN_IF_ERROR(get_field(j, "label", &k->label, where));
  SLUICE_RETURN_IF_ERROR(get_field(j, "height", &k->height, where));
  SLUICE_RETURN_IF_ERROR(get_field(j, "width", &k->width, where));
  SLUICE_RETURN_IF_ERROR(get_field(j, "key", &k->key, where));
  return Status();
}

Status split_from_json(const json& j, SplitInfo* s, std::string_view where) {
  SLUICE_RETURN_IF_ERROR(detail::compression_from_json(j, &s->compression, where));
  SLUICE_RETURN_IF_ERROR(get_field(j, "records", &s->records, where));
  SLUICE_RETURN_IF_ERROR(detail::shards_from_json(j, &s->shards, where));
  uint64_t total = 0;
  for (const ShardInfo& info : s->shards) total += info.records;
  if (total != s->records) {
    return data_loss_error(
        fmt::format("{}: shards hold {} records but the split says {}", where, total, s->records));
  }
  if (auto sk = j.find("skipped"); sk != j.end()) s->skipped = detail::skipped_from_json(*sk);
  if (auto m = j.find("command"); m != j.end() && m->is_string()) s->command = *m;
  if (auto m = j.find("created_by"); m != j.end() && m->is_string()) s->created_by = *m;
  if (auto m = j.find("source"); m != j.end() && m->is_string()) s->source = *m;
  return Status();
}

}  // namespace

namespace detail {

json shard_to_json(const ShardInfo& sh) {
  return json{{"file", sh.file},
              {"index", sh.index},
              {"records", sh.records},
              {"bytes", sh.bytes},
              {"crc32c", fmt::format("{:08x}", sh.crc32c)}};
}

Status shard_from_json(const json& j, ShardInfo* s, std::string_view where) {
  SLUICE_RETURN_IF_ERROR(get_field(j, "file", &s->file, where));
  SLUICE_RETURN_IF_ERROR(get_field(j, "index", &s->index, where));
  SLUICE_RETURN_IF_ERROR(get_field(j, "records", &s->records, where));
  SLUICE_RETURN_IF_ERROR(get_field(j, "bytes", &s->bytes, where));
  std::string crc;
  SLUICE_RETURN_IF_ERROR(get_field(j, "crc32c", &crc, where));
  unsigned long v = 0;
  size_t used = 0;
  try {
    v = std::stoul(crc, &used, 16);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != crc.size() || v > 0xffffffffu) {
    return data_loss_error(fmt::format("{}: crc32c '{}' is not 8 hex digits", where, crc));
  }
  s->crc32c = static_cast<uint32_t>(v);
  // Shard names must stay inside the dataset folder.
  for (const std::string* name : {&s->file, &s->index}) {
    std::filesystem::path p(*name);
    if (p.is_absolute() || name->find("..") != std::string::npos || name->empty()) {
      return data_loss_error(
          fmt::format("{}: shard path '{}' leaves the dataset folder", where, *name));
    }
  }
  return Status();
}

json skipped_to_json(const Skipped& skipped) {
  json out = json::array();
  for (const auto& [file, reason] : skipped)
    out.push_back(json{{"file", file}, {"reason", reason}});
  return out;
}

Status shards_from_json(const json& j, std::vector<ShardInfo>* out, std::string_view where) {
  auto shards = j.find("shards");
  if (shards == j.end() || !shards->is_array()) {
    return data_loss_error(fmt::format("{}: missing array 'shards'", where));
  }
  for (size_t i = 0; i < shards->size(); ++i) {
    ShardInfo info;
    SLUICE_RETURN_IF_ERROR(
        shard_from_json((*shards)[i], &info, fmt::format("{}: shard {}", where, i)));
    out->push_back(std::move(info));
  }
  return Status();
}

Status compression_from_json(const json& j, Compression* out, std::string_view where) {
  std::string name;
  SLUICE_RETURN_IF_ERROR(get_field(j, "compression", &name, where));
  auto c = parse_compression(name);
  if (!c.ok() || *c == Compression::kAuto) {
    return data_loss_error(fmt::format("{}: unknown compression '{}'", where, name));
  }
  *out = *c;
  return Status();
}

Skipped skipped_from_json(const json& j) {
  Skipped out;
  if (!j.is_array()) return out;
  for (const json& e : j) {
    if (e.is_object() && e.contains("file") && e.contains("reason") && e["file"].is_string() &&
        e["reason"].is_string()) {
      out.emplace_back(e["file"].get<std::string>(), e["reason"].get<std::string>());
    }
  }
  return out;
}

}  // namespace detail

Result<DatasetManifest> parse_manifest(std::string_view text, std::string_view name) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return data_loss_error(fmt::format("{}: not valid JSON", name));
  }
  std::string tag;
  SLUICE_RETURN_IF_ERROR(get_field(j, "format", &tag, name));
  if (tag != kFormatTag) {
    return data_loss_error(fmt::format("{}: format is '{}', expected '{}'", name, tag, kFormatTag));
  }
  int version = 0;
  SLUICE_RETURN_IF_ERROR(get_field(j, "version", &version, name));
  if (version != DatasetManifest::kVersion) {
    return unimplemented_error(fmt::format("{}: manifest version {} (this sluice reads version {})",
                                           name, version, DatasetManifest::kVersion));
  }
  DatasetManifest m;
  auto keys = j.find("keys");
  if (keys == j.end() || !keys->is_object()) {
    return data_loss_error(fmt::format("{}: missing object 'keys'", name));
  }
  SLUICE_RETURN_IF_ERROR(keys_from_json(*keys, &m.keys, fmt::format("{}: keys", name)));
  SLUICE_RETURN_IF_ERROR(get_field(j, "classes", &m.classes, name));
  auto splits = j.find("splits");
  if (splits == j.end() || !splits->is_object()) {
    return data_loss_error(fmt::format("{}: missing object 'splits'", name));
  }
  for (const auto& [split, value] : splits->items()) {
    if (!value.is_object())
      return data_loss_error(fmt::format("{}: split '{}' is not an object", name, split));
    SLUICE_RETURN_IF_ERROR(
        split_from_json(value, &m.splits[split], fmt::format("{}: split '{}'", name, split)));
  }
  return m;
}

std::string format_manifest(const DatasetManifest& m) {
  json j;
  j["format"] = kFormatTag;
  j["version"] = DatasetManifest::kVersion;
  j["keys"] = keys_to_json(m.keys);
  j["classes"] = m.classes;
  json splits = json::object();
  for (const auto& [name, s] : m.splits) {
    json shards = json::array();
    for (const ShardInfo& sh : s.shards) shards.push_back(detail::shard_to_json(sh));
    splits[name] = json{{"compression", std::string(compression_name(s.compression))},
                        {"records", s.records},
                        {"shards", shards},
                        {"skipped", detail::skipped_to_json(s.skipped)},
                        {"command", s.command},
                        {"source", s.source},
                        {"created_by", s.created_by}};
  }
  j["splits"] = splits;
  return j.dump(2) + "\n";
}

Result<DatasetManifest> read_manifest(const std::string& dir_or_file) {
  std::string path = dir_or_file;
  std::error_code ec;
  if (remote::is_url(path)) {
    // An object URL names the manifest itself, or the folder it is in.
    if (!path.ends_with(".json")) path = remote::join(path, kManifestName);
  } else if (std::filesystem::is_directory(path, ec)) {
    path = (std::filesystem::path(path) / kManifestName).string();
  }
  SLUICE_ASSIGN_OR_RETURN(std::string text, remote::read_whole(path, kMaxManifestBytes));
  return parse_manifest(text, path);
}

Status write_manifest(const std::string& dir, const DatasetManifest& manifest) {
  if (remote::is_url(dir))
    return remote::write_whole(remote::join(dir, kManifestName), format_manifest(manifest));
  return detail::write_file_atomic((std::filesystem::path(dir) / kManifestName).string(),
                                   format_manifest(manifest));
}

}  // namespace sluice
