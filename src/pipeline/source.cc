#include "pipeline/source.h"

#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "base/file_util.h"

namespace sluice::detail {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxImageFileBytes = uint64_t{1} << 30;

class ShardSource final : public SampleSource {
 public:
  ShardSource(std::vector<std::unique_ptr<RecordFile>> files, FeatureKeys keys,
              std::vector<std::string> classes)
      : files_(std::move(files)), keys_(std::move(keys)), classes_(std::move(classes)) {
    uint64_t total = 0;
    for (const auto& f : files_) {
      starts_.push_back(total);
      total += f->size();
    }
    size_ = total;
    for (size_t i = 0; i < classes_.size(); ++i) class_ids_[classes_[i]] = static_cast<int64_t>(i);
  }

  uint64_t size() const override { return size_; }
  const std::vector<std::string>& classes() const override { return classes_; }
  std::string kind() const override { return "shards"; }

  Status read(uint64_t id, std::string* buffer, RawSample* out) const override {
    auto [file, index] = locate(id);
    std::string_view record;
    SLUICE_RETURN_IF_ERROR(files_[file]->read(index, buffer, &record));
    const std::string_view keys[] = {keys_.image, keys_.label};
    FeatureView f[2];
    Status s = find_features(record, keys, 2, f);
    if (!s.ok()) return s.with_prefix(where_prefix(file, index));
    if (f[0].kind != Feature::Kind::kBytes || f[0].count == 0) {
      return data_loss_error(where_prefix(file, index) + ": no image in feature '" + keys_.image +
                             "'");
    }
    // The image stays where it is, inside the record bytes in `buffer`.
    out->image = f[0].first_bytes;
    out->label = -1;
    if (f[1].kind == Feature::Kind::kInt64 && f[1].count > 0) {
      out->label = f[1].first_int64;
    } else if (f[1].kind == Feature::Kind::kBytes && f[1].count > 0) {
      auto c = class_ids_.find(std::string(f[1].first_bytes));
      if (c != class_ids_.end()) out->label = c->second;
    }
    return Status();
  }

  Result<std::string> key(uint64_t id) const override {
    if (id >= size_) return out_of_range_error(fmt::format("record {} of {}", id, size_));
    auto [file, index] = locate(id);
    if (keys_.key.empty()) return std::string();
    std::string buffer;
    std::string_view record;
    SLUICE_RETURN_IF_ERROR(files_[file]->read(index, &buffer, &record));
    const std::string_view keys[] = {keys_.key};
    FeatureView f[1];
    Status s = find_features(record, keys, 1, f);
    if (!s.ok()) return s.with_prefix(where_prefix(file, index));
    if (f[0].kind != Feature::Kind::kBytes || f[0].count == 0) return std::string();
    return std::string(f[0].first_bytes);
  }

  std::string where(uint64_t id, int64_t* offset) const override {
    auto [file, index] = locate(id);
    *offset = static_cast<int64_t>(files_[file]->index()[index].offset);
    return files_[file]->path();
  }

 private:
  std::pair<size_t, size_t> locate(uint64_t id) const {
    size_t file = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), id) -
                                      starts_.begin()) -
                  1;
    return {file, static_cast<size_t>(id - starts_[file])};
  }
  std::string where_prefix(size_t file, size_t index) const {
    return fmt::format("{}: offset {}", files_[file]->path(), files_[file]->index()[index].offset);
  }

  std::vector<std::unique_ptr<RecordFile>> files_;
  std::vector<uint64_t> starts_;
  uint64_t size_ = 0;
  FeatureKeys keys_;
  std::vector<std::string> classes_;
  std::map<std::string, int64_t> class_ids_;
};

class FolderSource final : public SampleSource {
 public:
  explicit FolderSource(SourceList list) : list_(std::move(list)) {}
  uint64_t size() const override { return list_.items.size(); }
  const std::vector<std::string>& classes() const override { return list_.classes; }
  std::string kind() const override { return "image folder"; }

  Status read(uint64_t id, std::string* buffer, RawSample* out) const override {
    const SourceItem& item = list_.items[id];
    SLUICE_ASSIGN_OR_RETURN(File f, File::open_read(item.path));
    SLUICE_ASSIGN_OR_RETURN(uint64_t size, f.size());
    if (size > kMaxImageFileBytes) return resource_exhausted_error(item.path + ": file too large");
    buffer->resize(size);
    SLUICE_ASSIGN_OR_RETURN(size_t got, f.pread(0, buffer->data(), size));
    buffer->resize(got);
    out->image = *buffer;
    out->label = item.label;
    return Status();
  }

  std::string where(uint64_t id, int64_t* offset) const override {
    *offset = -1;
    return list_.items[id].path;
  }

  Result<std::string> key(uint64_t id) const override {
    if (id >= list_.items.size())
      return out_of_range_error(fmt::format("file {} of {}", id, list_.items.size()));
    return list_.items[id].key;
  }

 private:
  SourceList list_;
};

Result<std::vector<std::string>> expand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& a : args) {
    std::error_code ec;
    if (a.find_first_of("*?[") != std::string::npos && !fs::exists(a, ec)) {
      glob_t g{};
      int rc = ::glob(a.c_str(), 0, nullptr, &g);
      size_t before = files.size();
      for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
      globfree(&g);
      if (files.size() == before) return not_found_error(a + ": no file matches");
    } else if (fs::is_directory(a, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& e : fs::directory_iterator(a, ec)) {
        std::string name = e.path().filename().string();
        if (e.is_regular_file() && name[0] != '.' && e.path().extension() != ".idx" &&
            e.path().extension() != ".json") {
          in_dir.push_back(e.path().string());
        }
      }
      std::sort(in_dir.begin(), in_dir.end());
      if (in_dir.empty()) return not_found_error(a + ": no record files in this folder");
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::exists(a, ec)) {
      files.push_back(a);
    } else {
      return not_found_error(a + ": no such file or folder");
    }
  }
  return files;
}

bool is_image_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || fs::exists(fs::path(dir) / kManifestName, ec)) return false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) return true;
  }
  return false;
}

Result<FeatureKeys> detect_keys(const RecordFile& file) {
  if (file.size() == 0) return tensorflow_feature_keys();
  std::string buf;
  std::string_view rec;
  SLUICE_RETURN_IF_ERROR(file.read(0, &buf, &rec));
  Example e;
  SLUICE_RETURN_IF_ERROR(decode_example(rec, &e).with_prefix(file.path() + ": offset 0"));
  auto keys = detect_feature_keys(e);
  if (!keys.ok()) return keys.status().with_prefix(file.path());
  return keys;
}

}  // namespace

Result<std::unique_ptr<SampleSource>> open_sample_source(const PipelineOptions& o) {
  if (o.sources.empty())
    return invalid_argument_error(
        "no source: give a dataset folder, record files or an image folder");
  if (o.sources.size() == 1 && is_image_folder(o.sources[0])) {
    SLUICE_ASSIGN_OR_RETURN(SourceList list, list_image_folder(o.sources[0]));
    return std::unique_ptr<SampleSource>(new FolderSource(std::move(list)));
  }
  std::vector<std::string> files;
  std::vector<std::string> classes;
  FeatureKeys keys = o.keys;
  std::error_code ec;
  if (o.sources.size() == 1 && fs::exists(fs::path(o.sources[0]) / kManifestName, ec)) {
    SLUICE_ASSIGN_OR_RETURN(DatasetManifest m, read_manifest(o.sources[0]));
    auto split = m.splits.find(o.split);
    if (split == m.splits.end()) {
      std::string have;
      for (const auto& [name, s] : m.splits) have += (have.empty() ? "" : ", ") + name;
      return not_found_error(
          fmt::format("{}: no split '{}' (it has: {})", o.sources[0], o.split, have));
    }
    for (const ShardInfo& s : split->second.shards)
      files.push_back((fs::path(o.sources[0]) / s.file).string());
    classes = m.classes;
    if (keys.image.empty()) keys = m.keys;
  } else {
    SLUICE_ASSIGN_OR_RETURN(files, expand(o.sources));
  }
  std::vector<std::unique_ptr<RecordFile>> opened;
  for (const std::string& f : files) {
    RecordFileOptions fo;
    fo.write_missing_index = false;
    SLUICE_ASSIGN_OR_RETURN(auto rf, RecordFile::open(f, fo));
    opened.push_back(std::move(rf));
  }
  if (keys.image.empty()) {
    if (opened.empty()) return not_found_error("no record files");
    SLUICE_ASSIGN_OR_RETURN(keys, detect_keys(*opened.front()));
  }
  return std::unique_ptr<SampleSource>(
      new ShardSource(std::move(opened), keys, std::move(classes)));
}

}  // namespace sluice::detail
