#include "pipeline/source.h"

#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "base/file_util.h"
#include "pipeline/read_ahead.h"
#include "pipeline/shard_cache.h"
#include "remote/files.h"
#include "remote/url.h"

namespace sluice::detail {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxImageFileBytes = uint64_t{1} << 30;

// One record file of a ShardSource: the file or object it was opened as,
// and, once the cache has a whole copy of an object, that copy.
struct ShardFile {
  std::unique_ptr<RecordFile> opened;
  std::string url;  // the object's URL; empty for a local file
  remote::ObjectInfo object;
  std::unique_ptr<RecordFile> copy_storage;  // set once, before `copy`
  std::atomic<const RecordFile*> copy{nullptr};

  const RecordFile& current() const {
    const RecordFile* c = copy.load(std::memory_order_acquire);
    return c ? *c : *opened;
  }
};

class ShardSource final : public SampleSource {
 public:
  // `baseline`: the process's request counts before the files were opened.
  ShardSource(std::vector<std::unique_ptr<ShardFile>> files, FeatureKeys keys,
              std::vector<std::string> classes, const PipelineOptions& o,
              remote::RemoteTotals baseline)
      : files_(std::move(files)),
        keys_(std::move(keys)),
        classes_(std::move(classes)),
        baseline_(baseline) {
    uint64_t total = 0;
    bool remote = false;
    for (const auto& f : files_) {
      starts_.push_back(total);
      total += f->opened->size();
      remote |= !f->url.empty();
    }
    size_ = total;
    for (size_t i = 0; i < classes_.size(); ++i) class_ids_[classes_[i]] = static_cast<int64_t>(i);
    if (!remote) return;
    requests_per_worker_ = o.remote_requests_per_worker;
    read_ahead_.emplace([this](uint64_t id) { return place(id); },
                        [this](size_t f, size_t i, size_t n, std::vector<std::string>* out) {
                          return read_span(f, i, n, out);
                        },
                        o.read_ahead_bytes);
  }

  ~ShardSource() override {
    if (filler_.joinable()) {
      filler_.request_stop();
      filler_.join();
    }
    read_ahead_.reset();  // its threads read files_
  }

  // Copies found in the cache are used from the start; the others are
  // fetched whole in the background, one at a time.
  void use_cache(std::unique_ptr<ShardCache> cache) {
    cache_ = std::move(cache);
    filler_ = std::jthread([this](std::stop_token st) { fill_cache(st); });
  }

  uint64_t size() const override { return size_; }
  const std::vector<std::string>& classes() const override { return classes_; }
  std::string kind() const override { return read_ahead_ ? "remote shards" : "shards"; }

  void will_read(std::shared_ptr<const std::vector<uint32_t>> plan, uint64_t first,
                 int workers) override {
    if (read_ahead_) read_ahead_->follow(std::move(plan), first, workers * requests_per_worker_);
  }

  void add_stats(PipelineStats* s) const override {
    if (!read_ahead_) return;
    remote::RemoteTotals t = remote::remote_totals();
    s->remote = true;
    s->remote_requests = t.requests - baseline_.requests;
    s->remote_retries = t.retries - baseline_.retries;
    s->remote_failures = t.failures - baseline_.failures;
    s->remote_bytes = t.bytes - baseline_.bytes;
    if (cache_) {
      s->cache_hits = cache_->hits();
      s->cache_fills = cache_->fills();
    }
  }

  Status read(uint64_t id, std::string* buffer, RawSample* out) const override {
    auto [file, index] = locate(id);
    std::string_view record;
    Status fetched;
    if (read_ahead_ && read_ahead_->take(id, buffer, &fetched)) {
      SLUICE_RETURN_IF_ERROR(fetched);
      record = *buffer;
    } else {
      SLUICE_RETURN_IF_ERROR(files_[file]->current().read(index, buffer, &record));
    }
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
    SLUICE_RETURN_IF_ERROR(files_[file]->current().read(index, &buffer, &record));
    const std::string_view keys[] = {keys_.key};
    FeatureView f[1];
    Status s = find_features(record, keys, 1, f);
    if (!s.ok()) return s.with_prefix(where_prefix(file, index));
    if (f[0].kind != Feature::Kind::kBytes || f[0].count == 0) return std::string();
    return std::string(f[0].first_bytes);
  }

  std::string where(uint64_t id, int64_t* offset) const override {
    auto [file, index] = locate(id);
    *offset = static_cast<int64_t>(files_[file]->opened->index()[index].offset);
    return files_[file]->opened->path();
  }

 private:
  std::pair<size_t, size_t> locate(uint64_t id) const {
    size_t file = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), id) -
                                      starts_.begin()) -
                  1;
    return {file, static_cast<size_t>(id - starts_[file])};
  }
  ReadAhead::Place place(uint64_t id) const {
    auto [file, index] = locate(id);
    const IndexEntry& e = files_[file]->opened->index()[index];
    return {file, index, e.offset, e.size};
  }
  Status read_span(size_t file, size_t index, size_t count, std::vector<std::string>* out) const {
    std::string buffer;
    std::vector<std::string_view> records;
    SLUICE_RETURN_IF_ERROR(files_[file]->current().read_span(index, count, &buffer, &records));
    for (std::string_view r : records) out->emplace_back(r);
    return Status();
  }
  std::string where_prefix(size_t file, size_t index) const {
    return fmt::format("{}: offset {}", files_[file]->opened->path(),
                       files_[file]->opened->index()[index].offset);
  }
  void fill_cache(std::stop_token st);

  std::vector<std::unique_ptr<ShardFile>> files_;
  std::vector<uint64_t> starts_;
  uint64_t size_ = 0;
  FeatureKeys keys_;
  std::vector<std::string> classes_;
  std::map<std::string, int64_t> class_ids_;
  int requests_per_worker_ = 4;
  remote::RemoteTotals baseline_;
  mutable std::optional<ReadAhead> read_ahead_;  // thread-safe itself
  std::unique_ptr<ShardCache> cache_;
  std::jthread filler_;
};

void ShardSource::fill_cache(std::stop_token st) {
  for (auto& f : files_) {
    if (st.stop_requested()) return;
    if (f->url.empty() || f->copy.load()) continue;
    auto path = cache_->fill(f->url, f->object.size, f->object.etag,
                             format_index(f->opened->index()), [&] { return st.stop_requested(); });
    Result<std::unique_ptr<RecordFile>> copy = path.status();
    if (path.ok() && !*path) continue;  // no room, or another process is filling it
    if (path.ok()) {
      RecordFileOptions fo;
      fo.compression = f->opened->compression();
      copy = RecordFile::open(**path, fo);
    }
    if (!copy.ok()) {
      std::fprintf(stderr, "sluice: cache: %s (reading %s by ranges)\n",
                   std::string(copy.status().message()).c_str(), f->url.c_str());
      continue;
    }
    f->copy_storage = std::move(*copy);
    f->copy.store(f->copy_storage.get(), std::memory_order_release);
  }
}

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

bool is_record_name(std::string_view name) {
  return !name.empty() && name[0] != '.' && !name.ends_with(".idx") && !name.ends_with(".json");
}

// An object URL: the object, or a folder's or pattern's record objects.
Status expand_url(const std::string& a, std::vector<std::string>* files) {
  bool folder = false;
  SLUICE_ASSIGN_OR_RETURN(auto found, remote::expand(a, &folder));
  size_t before = files->size();
  for (std::string& f : found) {
    if (folder || found.size() > 1 || a.find_first_of("*?[") != std::string::npos) {
      if (!is_record_name(f.substr(f.rfind('/') + 1))) continue;
    }
    files->push_back(std::move(f));
  }
  if (files->size() == before) return not_found_error(a + ": no record objects under it");
  return Status();
}

Result<std::vector<std::string>> expand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& a : args) {
    std::error_code ec;
    if (remote::is_url(a)) {
      SLUICE_RETURN_IF_ERROR(expand_url(a, &files));
    } else if (a.find_first_of("*?[") != std::string::npos && !fs::exists(a, ec)) {
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
        if (e.is_regular_file() && is_record_name(name)) {
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
  if (remote::is_url(dir)) return false;
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

Result<bool> has_manifest(const std::vector<std::string>& sources) {
  if (sources.size() != 1) return false;
  const std::string& src = sources[0];
  if (remote::is_url(src)) {
    if (src.find_first_of("*?[") != std::string::npos) return false;
    return remote::exists(remote::join(src, kManifestName));
  }
  std::error_code ec;
  return fs::exists(fs::path(src) / kManifestName, ec);
}

// An object whose whole copy the cache holds is read from it from the start
// (the copy's CRC32C is checked here, on the opening threads).
Status use_cached_copy(ShardCache* cache, ShardFile* f) {
  SLUICE_ASSIGN_OR_RETURN(remote::ObjectClient * client, remote::ObjectClient::shared());
  SLUICE_ASSIGN_OR_RETURN(f->object, client->head(f->url));
  SLUICE_ASSIGN_OR_RETURN(auto path, cache->lookup(f->url, f->object.size, f->object.etag));
  if (!path) return Status();
  RecordFileOptions fo;
  fo.compression = f->opened->compression();
  auto copy = RecordFile::open(*path, fo);
  // Another process may evict the copy between the check and the open: a
  // miss. A stale .idx: fetch again.
  if (!copy.ok() || (*copy)->index() != f->opened->index()) return Status();
  f->copy_storage = std::move(*copy);
  f->copy.store(f->copy_storage.get(), std::memory_order_release);
  return Status();
}

Result<std::unique_ptr<ShardFile>> open_shard(const std::string& path, Compression compression,
                                              ShardCache* cache) {
  auto f = std::make_unique<ShardFile>();
  RecordFileOptions fo;
  fo.compression = compression;
  fo.write_missing_index = false;
  SLUICE_ASSIGN_OR_RETURN(f->opened, RecordFile::open(path, fo));
  if (remote::is_url(path)) {
    f->url = path;
    if (cache) SLUICE_RETURN_IF_ERROR(use_cached_copy(cache, f.get()));
  }
  return f;
}

// Opens every record file; objects several at a time (each costs a few
// round trips: HEAD, the first bytes unless `compression` is known, the
// index; and a cached copy's check).
Result<std::vector<std::unique_ptr<ShardFile>>> open_files(const std::vector<std::string>& files,
                                                           Compression compression,
                                                           ShardCache* cache) {
  std::vector<std::unique_ptr<ShardFile>> out(files.size());
  std::vector<Status> status(files.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      auto f = open_shard(files[i], compression, cache);
      if (f.ok()) {
        out[i] = std::move(*f);
      } else {
        status[i] = f.status();
      }
    }
  };
  const bool any_remote = std::any_of(files.begin(), files.end(),
                                      [](const std::string& f) { return remote::is_url(f); });
  const size_t threads = any_remote ? std::min<size_t>(files.size(), 32) : 1;
  {
    std::vector<std::jthread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
  }
  for (Status& s : status) SLUICE_RETURN_IF_ERROR(s);
  return out;
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
  Compression compression = Compression::kAuto;  // dataset.json says, else each file's bytes
  const remote::RemoteTotals baseline = remote::remote_totals();
  SLUICE_ASSIGN_OR_RETURN(bool have_manifest, has_manifest(o.sources));
  if (have_manifest) {
    SLUICE_ASSIGN_OR_RETURN(DatasetManifest m, read_manifest(o.sources[0]));
    auto split = m.splits.find(o.split);
    if (split == m.splits.end()) {
      std::string have;
      for (const auto& [name, s] : m.splits) have += (have.empty() ? "" : ", ") + name;
      return not_found_error(
          fmt::format("{}: no split '{}' (it has: {})", o.sources[0], o.split, have));
    }
    for (const ShardInfo& s : split->second.shards) {
      files.push_back(remote::is_url(o.sources[0]) ? remote::join(o.sources[0], s.file)
                                                   : (fs::path(o.sources[0]) / s.file).string());
    }
    classes = m.classes;
    // Objects: trust dataset.json's compression rather than fetch each
    // shard's first bytes (a round trip per shard); files: look, it is free.
    if (remote::is_url(o.sources[0])) compression = split->second.compression;
    if (keys.image.empty()) keys = m.keys;
  } else {
    SLUICE_ASSIGN_OR_RETURN(files, expand(o.sources));
  }
  std::unique_ptr<ShardCache> cache;
  if (!o.cache_dir.empty()) cache = std::make_unique<ShardCache>(o.cache_dir, o.cache_bytes);
  SLUICE_ASSIGN_OR_RETURN(auto opened, open_files(files, compression, cache.get()));
  if (keys.image.empty()) {
    if (opened.empty()) return not_found_error("no record files");
    SLUICE_ASSIGN_OR_RETURN(keys, detect_keys(*opened.front()->opened));
  }
  auto source =
      std::make_unique<ShardSource>(std::move(opened), keys, std::move(classes), o, baseline);
  if (cache) source->use_cache(std::move(cache));
  return std::unique_ptr<SampleSource>(std::move(source));
}

}  // namespace sluice::detail
