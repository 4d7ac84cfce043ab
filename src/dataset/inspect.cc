// inspect: what a set of record files holds, and whether it is whole.
#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "base/file_util.h"
#include "remote/files.h"
#include "remote/url.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

struct Target {
  std::string path;
  const ShardInfo* shard = nullptr;  // when it comes from a dataset.json
};

bool looks_like_record_file(const fs::path& p) {
  std::string name = p.filename().string();
  if (name.empty() || name[0] == '.') return false;
  for (const char* skip : {".idx", ".json", ".md", ".txt", ".partial"}) {
    if (p.extension() == skip) return false;
  }
  return name.find(".tmp-") == std::string::npos;
}

// A dataset folder's shards, as its manifest lists them.
Status add_manifest(const std::string& dir, std::vector<Target>* targets,
                    std::vector<std::unique_ptr<DatasetManifest>>* manifests,
                    InspectReport* report) {
  SLUICE_ASSIGN_OR_RETURN(DatasetManifest m, read_manifest(dir));
  manifests->push_back(std::make_unique<DatasetManifest>(std::move(m)));
  const DatasetManifest& mp = *manifests->back();
  if (report->classes.empty()) report->classes = mp.classes;
  for (const auto& [name, split] : mp.splits) {
    for (const ShardInfo& s : split.shards) {
      targets->push_back(
          {remote::is_url(dir) ? remote::join(dir, s.file) : (fs::path(dir) / s.file).string(),
           &s});
    }
  }
  return Status();
}

// An s3:// or http(s):// object, folder or pattern.
Status resolve_url(const std::string& arg, std::vector<Target>* targets,
                   std::vector<std::unique_ptr<DatasetManifest>>* manifests,
                   InspectReport* report) {
  if (arg.find_first_of("*?[") == std::string::npos) {
    SLUICE_ASSIGN_OR_RETURN(bool manifest, remote::exists(remote::join(arg, kManifestName)));
    if (manifest) return add_manifest(arg, targets, manifests, report);
  }
  bool folder = false;
  SLUICE_ASSIGN_OR_RETURN(auto found, remote::expand(arg, &folder));
  size_t before = targets->size();
  for (const std::string& f : found) {
    if (found.size() == 1 && !folder) {
      targets->push_back({f});
    } else if (looks_like_record_file(fs::path(f.substr(f.rfind('/') + 1)))) {
      targets->push_back({f});
    }
  }
  if (targets->size() == before) return not_found_error(arg + ": no record objects under it");
  return Status();
}

Status resolve(const std::string& arg, std::vector<Target>* targets,
               std::vector<std::unique_ptr<DatasetManifest>>* manifests, InspectReport* report) {
  if (remote::is_url(arg)) return resolve_url(arg, targets, manifests, report);
  std::error_code ec;
  if (arg.find_first_of("*?[") != std::string::npos && !fs::exists(arg, ec)) {
    glob_t g{};
    int rc = ::glob(arg.c_str(), 0, nullptr, &g);
    std::vector<std::string> found;
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    if (found.empty()) return not_found_error(arg + ": no file matches");
    for (const std::string& f : found) targets->push_back({f});
    return Status();
  }
  if (!fs::exists(arg, ec)) return not_found_error(arg + ": no such file or folder");
  if (!fs::is_directory(arg, ec)) {
    targets->push_back({arg});
    return Status();
  }
  if (fs::exists(fs::path(arg) / kManifestName, ec)) {
    return add_manifest(arg, targets, manifests, report);
  }
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(arg, ec)) {
    if (e.is_regular_file() && looks_like_record_file(e.path())) files.push_back(e.path().string());
  }
  if (ec) return errno_error(arg, "cannot list", ec.value());
  std::sort(files.begin(), files.end());
  if (files.empty()) return not_found_error(arg + ": no record files in this folder");
  for (const std::string& f : files) targets->push_back({f});
  return Status();
}

class Inspector {
 public:
  Inspector(const InspectOptions& options, InspectReport* report) : options_(options), r_(*report) {
    if (!options.keys.image.empty()) keys_ = options.keys;
  }

  void file(const Target& t) {
    FileSummary fs_summary;
    fs_summary.path = t.path;
    size_t problems_before = r_.problems.size();
    scan(t, &fs_summary);
    fs_summary.problems = r_.problems.size() - problems_before;
    r_.records += fs_summary.records;
    r_.file_bytes += fs_summary.file_bytes;
    r_.record_bytes += fs_summary.record_bytes;
    r_.files.push_back(std::move(fs_summary));
    if (keys_) {
      r_.keys = *keys_;
    }
  }

 private:
  void problem(const std::string& file, int64_t offset, std::string reason) {
    r_.problems.push_back({file, offset, std::move(reason)});
  }

  // Strips "path: offset N: " that the record layer already put in front,
  // since Problem carries file and offset separately.
  static std::string bare(const Status& s, const std::string& path, int64_t offset) {
    std::string m(s.message());
    std::string prefix = path + ": ";
    if (m.rfind(prefix, 0) == 0) m = m.substr(prefix.size());
    std::string off = "offset " + std::to_string(offset) + ": ";
    if (offset >= 0 && m.rfind(off, 0) == 0) m = m.substr(off.size());
    return m;
  }

  void scan(const Target& t, FileSummary* f) {
    auto bytes = remote::file_size(t.path);
    f->file_bytes = bytes.ok() ? *bytes : 0;
    auto reader = RecordReader::open(t.path);
    if (!reader.ok()) {
      problem(t.path, -1, bare(reader.status(), t.path, -1));
      return;
    }
    f->compression = (*reader)->compression();
    std::vector<IndexEntry> entries;
    std::optional<bool> examples;  // does this file hold Examples?
    std::string_view rec;
    for (;;) {
      Status s = (*reader)->next(&rec);
      int64_t offset = static_cast<int64_t>((*reader)->record_offset());
      if (s.code() == StatusCode::kOutOfRange) break;
      if (!s.ok()) {
        problem(t.path, offset, bare(s, t.path, offset));
        // A data CRC mismatch leaves the framing intact; anything else
        // ends this file.
        if ((*reader)->stuck()) return;
        continue;
      }
      entries.push_back({static_cast<uint64_t>(offset), framed_size(rec.size())});
      ++f->records;
      f->record_bytes += rec.size();
      record(t.path, offset, rec, &examples);
    }
    if (options_.verify) verify_file(t, *f, entries);
  }

  void record(const std::string& path, int64_t offset, std::string_view rec,
              std::optional<bool>* examples) {
    Example e;
    Status s = decode_example(rec, &e);
    if (!s.ok()) {
      PayloadKind kind = classify_payload(rec);
      r_.payloads[std::string(payload_kind_name(kind))]++;
      if (!examples->has_value()) *examples = false;
      if (**examples) problem(path, offset, "record is not a tf.train.Example");
      return;
    }
    if (!examples->has_value()) *examples = true;
    r_.payloads["tf.train.Example"]++;
    for (const auto& [key, feature] : e.features) {
      FeatureStats& st = r_.schema[key];
      std::string kind(feature_kind_name(feature.kind));
      if (st.records == 0) {
        st.kind = kind;
        st.min_values = st.max_values = feature.size();
      } else if (st.kind != kind) {
        st.kind = "mixed";
      }
      ++st.records;
      st.min_values = std::min<uint64_t>(st.min_values, feature.size());
      st.max_values = std::max<uint64_t>(st.max_values, feature.size());
    }
    if (!keys_) {
      auto k = detect_feature_keys(e);
      if (!k.ok()) return;
      keys_ = *k;
    }
    image(path, offset, e);
  }

  void image(const std::string& path, int64_t offset, const Example& e) {
    auto it = e.features.find(keys_->image);
    if (it == e.features.end() || it->second.bytes_list.empty()) {
      if (options_.verify) problem(path, offset, "no image in feature '" + keys_->image + "'");
      return;
    }
    r_.has_images = true;
    if (auto l = e.features.find(keys_->label); l != e.features.end()) {
      if (!l->second.int64_list.empty()) {
        int64_t label = l->second.int64_list[0];
        r_.labels[label]++;
        if (!r_.classes.empty() &&
            (label < 0 || label >= static_cast<int64_t>(r_.classes.size()))) {
          problem(path, offset,
                  fmt::format("label {} is outside the class list ({} classes)", label,
                              r_.classes.size()));
        }
      } else if (!l->second.bytes_list.empty()) {
        r_.label_names[l->second.bytes_list[0]]++;
      }
    }
    const std::string& bytes = it->second.bytes_list[0];
    r_.image_bytes.add(static_cast<double>(bytes.size()));
    auto info = options_.verify ? check_image(bytes, options_.max_pixels)
                                : probe_image(bytes, options_.max_pixels);
    if (!info.ok()) {
      r_.image_formats["bad"]++;
      problem(path, offset, "image: " + std::string(info.status().message()));
      return;
    }
    r_.image_formats[std::string(image_format_name(info->format))]++;
    if (info->format == ImageFormat::kJpeg) r_.subsampling[info->subsampling]++;
    r_.progressive += info->progressive;
    r_.width.add(info->width);
    r_.height.add(info->height);
    if (options_.verify) check_declared_size(path, offset, e, *info);
  }

  void check_declared_size(const std::string& path, int64_t offset, const Example& e,
                           const ImageInfo& info) {
    for (auto [key, actual] :
         {std::pair{keys_->width, info.width}, std::pair{keys_->height, info.height}}) {
      auto f = e.features.find(key);
      if (key.empty() || f == e.features.end() || f->second.int64_list.empty()) continue;
      if (f->second.int64_list[0] != actual) {
        problem(path, offset,
                fmt::format("feature {} says {} but the image is {}", key, f->second.int64_list[0],
                            actual));
      }
    }
  }

  void verify_file(const Target& t, const FileSummary& f, const std::vector<IndexEntry>& entries) {
    std::error_code ec;
    std::string idx = index_path_for(t.path);
    if (t.shard) {
      idx = remote::is_url(t.path)
                ? remote::join(t.path.substr(0, t.path.rfind('/')), t.shard->index)
                : (fs::path(t.path).parent_path() / t.shard->index).string();
    }
    auto have_index = remote::exists(idx);
    if (!have_index.ok()) {
      problem(idx, -1, std::string(have_index.status().message()));
    } else if (*have_index) {
      auto index = read_index(idx);
      if (!index.ok()) {
        problem(idx, -1, bare(index.status(), idx, -1));
      } else if (*index != entries) {
        problem(idx, -1,
                fmt::format("index has {} entries that do not match the {} records of {}",
                            index->size(), entries.size(), t.path));
      }
    } else if (t.shard) {
      problem(idx, -1, "index file missing");
    }
    if (!t.shard) return;
    if (f.records != t.shard->records) {
      problem(t.path, -1,
              fmt::format("holds {} records, dataset.json says {}", f.records, t.shard->records));
    }
    uint64_t size = 0;
    auto crc = crc32c_of_file(t.path, &size);
    if (!crc.ok()) {
      problem(t.path, -1, bare(crc.status(), t.path, -1));
    } else if (size != t.shard->bytes) {
      problem(t.path, -1, fmt::format("is {} bytes, dataset.json says {}", size, t.shard->bytes));
    } else if (*crc != t.shard->crc32c) {
      problem(
          t.path, -1,
          fmt::format("checksum {:08x} differs from dataset.json's {:08x}", *crc, t.shard->crc32c));
    }
  }

  const InspectOptions& options_;
  InspectReport& r_;
  std::optional<FeatureKeys> keys_;
};

}  // namespace

void RangeStats::add(double v) {
  if (count == 0 || v < min) min = v;
  if (count == 0 || v > max) max = v;
  sum += v;
  ++count;
}

std::string Problem::to_string() const {
  if (offset < 0) return file + ": " + reason;
  return fmt::format("{}: offset {}: {}", file, offset, reason);
}

Result<InspectReport> inspect(const std::vector<std::string>& paths,
                              const InspectOptions& options) {
  if (paths.empty()) return invalid_argument_error("nothing to inspect: give one or more paths");
  InspectReport report;
  std::vector<Target> targets;
  std::vector<std::unique_ptr<DatasetManifest>> manifests;  // targets point into these
  for (const std::string& p : paths)
    SLUICE_RETURN_IF_ERROR(resolve(p, &targets, &manifests, &report));
  Inspector inspector(options, &report);
  for (const Target& t : targets) inspector.file(t);
  return report;
}

}  // namespace sluice
