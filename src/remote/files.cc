#include "remote/files.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>

#include "base/file_util.h"
#include "remote/url.h"

namespace sluice::remote {

Result<std::string> read_whole(const std::string& path, uint64_t max_bytes) {
  if (!is_url(path)) return detail::read_file(path, max_bytes);
  SLUICE_ASSIGN_OR_RETURN(ObjectClient * c, ObjectClient::shared());
  return c->get(path, max_bytes);
}

Result<bool> exists(const std::string& path) {
  if (!is_url(path)) {
    std::error_code ec;
    return std::filesystem::exists(path, ec);
  }
  SLUICE_ASSIGN_OR_RETURN(ObjectClient * c, ObjectClient::shared());
  auto info = c->head(path);
  if (info.ok()) return true;
  if (info.status().code() == StatusCode::kNotFound) return false;
  return info.status();
}

Status write_whole(const std::string& path, std::string_view data) {
  if (!is_url(path)) return detail::write_file_atomic(path, data);
  SLUICE_ASSIGN_OR_RETURN(ObjectClient * c, ObjectClient::shared());
  return c->put(path, data);
}

Result<std::vector<ListedObject>> list_folder(const std::string& url) {
  SLUICE_ASSIGN_OR_RETURN(ObjectClient * c, ObjectClient::shared());
  SLUICE_ASSIGN_OR_RETURN(ObjectUrl u, parse_url(url));
  std::string prefix = u.key;
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  SLUICE_ASSIGN_OR_RETURN(auto listed, c->list("s3://" + u.bucket + "/" + prefix));
  std::vector<ListedObject> out;
  for (ListedObject& o : listed) {
    std::string_view rest = std::string_view(o.key).substr(prefix.size());
    if (rest.empty() || rest.find('/') != std::string_view::npos) continue;
    o.key = "s3://" + u.bucket + "/" + o.key;
    out.push_back(std::move(o));
  }
  return out;
}

Result<std::vector<std::string>> expand(const std::string& url, bool* is_folder) {
  SLUICE_ASSIGN_OR_RETURN(ObjectUrl u, parse_url(url));
  const bool pattern = url.find_first_of("*?[") != std::string::npos;
  *is_folder = false;
  bool object = u.scheme == ObjectUrl::Scheme::kHttp;
  if (!object && !pattern && !url.ends_with("/")) {
    SLUICE_ASSIGN_OR_RETURN(object, exists(url));
  }
  if (object) return std::vector<std::string>{url};
  *is_folder = !pattern;
  SLUICE_ASSIGN_OR_RETURN(auto listed,
                          list_folder(pattern ? url.substr(0, url.rfind('/') + 1) : url));
  std::vector<std::string> out;
  for (const ListedObject& o : listed) {
    if (pattern && ::fnmatch(url.c_str(), o.key.c_str(), FNM_PATHNAME) != 0) continue;
    out.push_back(o.key);
  }
  if (out.empty()) {
    return not_found_error(url + (pattern ? ": no object matches" : ": no such object or folder"));
  }
  return out;
}

Result<uint64_t> file_size(const std::string& path) {
  if (!is_url(path)) {
    std::error_code ec;
    uint64_t n = std::filesystem::file_size(path, ec);
    if (ec) return errno_error(path, "cannot read the size of", ec.value());
    return n;
  }
  SLUICE_ASSIGN_OR_RETURN(ObjectClient * c, ObjectClient::shared());
  SLUICE_ASSIGN_OR_RETURN(ObjectInfo info, c->head(path));
  return info.size;
}

Result<std::unique_ptr<RemoteFile>> RemoteFile::open(const std::string& url) {
  SLUICE_ASSIGN_OR_RETURN(ObjectClient * c, ObjectClient::shared());
  SLUICE_ASSIGN_OR_RETURN(ObjectInfo info, c->head(url));
  return std::unique_ptr<RemoteFile>(new RemoteFile(url, std::move(info), c));
}

Result<size_t> RemoteFile::pread(uint64_t offset, void* buf, size_t n) const {
  if (offset >= info_.size) return size_t{0};
  size_t want = static_cast<size_t>(std::min<uint64_t>(n, info_.size - offset));
  SLUICE_RETURN_IF_ERROR(
      client_->get_range(url_, offset, want, static_cast<char*>(buf), info_.etag));
  return want;
}

}  // namespace sluice::remote
