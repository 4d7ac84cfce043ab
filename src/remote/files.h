// Local paths and object URLs behind one set of calls, for the layers that
// read datasets (record, dataset, pipeline): a path that is_url() goes to
// the process's ObjectClient, any other to the file system.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "remote/client.h"
#include "sluice/status.h"

namespace sluice::remote {

// The whole of a file or object, up to max_bytes (kResourceExhausted over).
Result<std::string> read_whole(const std::string& path, uint64_t max_bytes);
// Whether a file or object exists (a 404 is false; a 403 is an error).
Result<bool> exists(const std::string& path);
// Writes a file atomically, or PUTs an object whole.
Status write_whole(const std::string& path, std::string_view data);

// The objects below an s3:// prefix taken as a folder (`prefix/`, one
// level: no deeper keys), as full s3:// URLs in key order, with sizes.
Result<std::vector<ListedObject>> list_folder(const std::string& url);

// What an object URL names: itself (an http(s):// URL, or an s3:// object
// that exists), or the objects of an s3:// folder (a URL ending in '/', or
// naming no object) or matching a pattern in its last part (`*?[`), as
// full URLs in key order. `*is_folder` says which.
Result<std::vector<std::string>> expand(const std::string& url, bool* is_folder);
// The size of a file or object.
Result<uint64_t> file_size(const std::string& path);

// An object read by ranges. Its size and ETag come from one HEAD at open;
// every read asks for that version (a changed object fails, kDataLoss).
class RemoteFile {
 public:
  static Result<std::unique_ptr<RemoteFile>> open(const std::string& url);
  uint64_t size() const { return info_.size; }
  const std::string& etag() const { return info_.etag; }
  const std::string& url() const { return url_; }
  // Reads up to n bytes at offset (fewer only at the end).
  Result<size_t> pread(uint64_t offset, void* buf, size_t n) const;

 private:
  RemoteFile(std::string url, ObjectInfo info, ObjectClient* client)
      : url_(std::move(url)), info_(std::move(info)), client_(client) {}
  std::string url_;
  ObjectInfo info_;
  ObjectClient* client_;
};

}  // namespace sluice::remote
