#include "pipeline/shard_cache.h"

#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "remote/client.h"
#include "sluice/record.h"

namespace sluice::detail {
namespace {

namespace fs = std::filesystem;

struct Meta {
  std::string url, etag;
  uint64_t size = 0;
  uint32_t crc32c = 0;
};

std::string format_meta(const Meta& m) {
  nlohmann::json j = {{"format", "sluice cache entry 1"},
                      {"url", m.url},
                      {"size", m.size},
                      {"etag", m.etag},
                      {"crc32c", m.crc32c}};
  return j.dump(2) + "\n";
}

std::optional<Meta> read_meta(const std::string& path) {
  auto text = read_file(path, 1 << 16);
  if (!text.ok()) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "sluice cache entry 1")
    return std::nullopt;
  try {
    return Meta{j.at("url").get<std::string>(), j.at("etag").get<std::string>(),
                j.at("size").get<uint64_t>(), j.at("crc32c").get<uint32_t>()};
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

void remove_entry(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
  fs::remove(path + ".meta", ec);
  fs::remove(index_path_for(path), ec);
}

}  // namespace

std::string ShardCache::entry_path(const std::string& url) const {
  // The object's name for people, a hash of the whole URL for uniqueness.
  std::string name = url.substr(url.rfind('/') + 1);
  if (name.empty() || name[0] == '.') name = "object";
  return (fs::path(dir_) / fmt::format("{:08x}-{}", crc32c(url), name)).string();
}

Result<std::optional<std::string>> ShardCache::lookup(const std::string& url, uint64_t size,
                                                      const std::string& etag) {
  const std::string path = entry_path(url);
  auto meta = read_meta(path + ".meta");
  std::error_code ec;
  if (!meta || meta->url != url || meta->size != size || meta->etag != etag ||
      !fs::exists(index_path_for(path), ec)) {
    if (meta) remove_entry(path);  // stale: the object changed
    return std::optional<std::string>();
  }
  uint64_t bytes = 0;
  auto crc = crc32c_of_file(path, &bytes);
  if (!crc.ok() || *crc != meta->crc32c || bytes != size) {
    remove_entry(path);  // damaged or cut short: fetch again
    return std::optional<std::string>();
  }
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
  std::lock_guard<std::mutex> lock(mu_);
  in_use_.insert(path);
  ++hits_;
  return std::optional<std::string>(path);
}

// Evicts least recently used copies not in use until `bytes` more fit,
// only when that is enough. Downloads in progress (other ranks' included)
// count; what killed processes left (their temporaries, and a copy whose
// sidecar was never written) goes.
Status ShardCache::make_room(uint64_t bytes) {
  struct Copy {
    fs::file_time_type used;
    std::string path;
    uint64_t size;
  };
  std::vector<Copy> copies;
  uint64_t total = 0, evictable = 0;
  std::error_code ec;
  const auto orphan_age = std::chrono::minutes(10);
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string p = e.path().string(), name = e.path().filename().string();
    if (size_t t = name.rfind(".tmp-"); t != std::string::npos) {
      if (!temp_writer_alive(std::string_view(name).substr(t + 5))) {
        fs::remove(p, ec);
      } else {
        total += fs::file_size(p, ec);
      }
      continue;
    }
    if (p.ends_with(".lock")) {
      const std::string data = p.substr(0, p.size() - 5);
      if (!fs::exists(data + ".meta", ec) && fs::exists(data, ec) &&
          fs::last_write_time(data, ec) < fs::file_time_type::clock::now() - orphan_age) {
        remove_entry(data);
      }
      continue;
    }
    if (!p.ends_with(".meta")) continue;
    std::string data = p.substr(0, p.size() - 5);
    uint64_t size = fs::file_size(data, ec);
    if (ec) continue;
    total += size;
    if (in_use_.count(data)) continue;
    evictable += size;
    copies.push_back({fs::last_write_time(data, ec), data, size});
  }
  if (total - evictable + bytes > max_bytes_) return resource_exhausted_error("no room");
  std::sort(copies.begin(), copies.end(),
            [](const Copy& a, const Copy& b) { return a.used < b.used; });
  for (const Copy& c : copies) {
    if (total + bytes <= max_bytes_) break;
    remove_entry(c.path);
    total -= c.size;
  }
  return Status();
}

Result<std::optional<std::string>> ShardCache::fill(const std::string& url, uint64_t size,
                                                    const std::string& etag,
                                                    const std::string& index_text,
                                                    const std::function<bool()>& stop) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return errno_error(dir_, "cannot create the cache folder", ec.value());
  const std::string path = entry_path(url);
  // One process fills an entry; the others (ranks on one machine sharing
  // the folder) go on reading by ranges and find the copy next time.
  SLUICE_ASSIGN_OR_RETURN(File lock_file, File::append(path + ".lock"));
  if (::flock(lock_file.fd(), LOCK_EX | LOCK_NB) != 0) return std::optional<std::string>();
  // Another process may have finished it while this one read by ranges.
  SLUICE_ASSIGN_OR_RETURN(auto done, lookup(url, size, etag));
  if (done) return done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!make_room(size + index_text.size()).ok()) return std::optional<std::string>();
  }
  const std::string tmp = temp_name_for(path);  // make_room clears a killed writer's
  SLUICE_ASSIGN_OR_RETURN(File out, File::create(tmp));
  SLUICE_ASSIGN_OR_RETURN(remote::ObjectClient * client, remote::ObjectClient::shared());
  uint32_t crc = 0;
  uint64_t bytes = 0;
  Status s = client->get_stream(
      url,
      [&](std::string_view piece) {
        if (stop()) return cancelled_error(url + ": download stopped");
        crc = crc32c_extend(crc, piece);
        bytes += piece.size();
        return out.write_all(piece.data(), piece.size());
      },
      etag);
  if (s.ok() && bytes != size) {
    s = data_loss_error(fmt::format("{}: {} bytes arrived, the object has {}", url, bytes, size));
  }
  if (s.ok()) s = out.sync();
  if (s.ok()) s = out.close();
  if (s.ok()) s = write_file_atomic(index_path_for(path), index_text);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = errno_error(path, "rename", errno);
  // The sidecar last: a copy without one is never used.
  if (s.ok()) s = write_file_atomic(path + ".meta", format_meta({url, etag, size, crc}));
  if (!s.ok()) {
    fs::remove(tmp, ec);
    if (s.code() == StatusCode::kCancelled) return std::optional<std::string>();
    return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  in_use_.insert(path);
  ++fills_;
  return std::optional<std::string>(path);
}

uint64_t ShardCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

uint64_t ShardCache::fills() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fills_;
}

}  // namespace sluice::detail
