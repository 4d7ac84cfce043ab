#include "dataset/convert_remote.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "base/file_util.h"
#include "dataset/convert_output.h"
#include "dataset/part_record.h"
#include "remote/files.h"
#include "remote/url.h"

namespace sluice::detail {
namespace {

namespace fs = std::filesystem;

// A temporary folder, removed with everything in it on destruction.
class Staging {
 public:
  static Result<Staging> make() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/sluice-convert-XXXXXX";
    if (!::mkdtemp(tmpl.data())) return errno_error(tmpl, "cannot create staging folder", errno);
    return Staging(tmpl);
  }
  Staging(Staging&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ~Staging() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  explicit Staging(std::string p) : path_(std::move(p)) {}
  std::string path_;
};

Status must_be_s3(const std::string& url) {
  SLUICE_ASSIGN_OR_RETURN(remote::ObjectUrl u, remote::parse_url(url));
  if (u.scheme != remote::ObjectUrl::Scheme::kS3)
    return invalid_argument_error(url + ": conversion writes to a folder or an s3:// location");
  return Status();
}

// The output's dataset.json, when it has one, into the staging folder: the
// conversion keeps its classes and other splits as it would a folder's.
Status fetch_manifest(const std::string& url, const Staging& staging) {
  const std::string manifest = remote::join(url, kManifestName);
  SLUICE_ASSIGN_OR_RETURN(bool have, remote::exists(manifest));
  if (!have) return Status();
  SLUICE_ASSIGN_OR_RETURN(std::string text, remote::read_whole(manifest, uint64_t{256} << 20));
  return write_file_atomic(staging / kManifestName, text);
}

Status upload_shards(const std::vector<ShardInfo>& shards, const Staging& staging,
                     const std::string& url) {
  for (const ShardInfo& s : shards) {
    SLUICE_RETURN_IF_ERROR(upload_file(staging / s.file, remote::join(url, s.file)));
    SLUICE_RETURN_IF_ERROR(upload_file(staging / s.index, remote::join(url, s.index)));
  }
  return Status();
}

// What remove_stale_shards does in a folder: the split's shards and
// indexes from an earlier conversion with another shard count go, once the
// new dataset.json no longer names them.
void remove_stale_objects(const std::string& url, const std::string& split,
                          const std::vector<ShardInfo>& keep) {
  auto client = remote::ObjectClient::shared();
  auto listed = remote::list_folder(url);
  if (!client.ok() || !listed.ok()) return;  // best effort: nothing names them any more
  const std::regex pattern = shard_name_pattern(split);
  for (const remote::ListedObject& o : *listed) {
    const std::string name = o.key.substr(o.key.rfind('/') + 1);
    if (!std::regex_match(name, pattern)) continue;
    const bool kept = std::any_of(keep.begin(), keep.end(), [&](const ShardInfo& s) {
      return s.file == name || s.index == name;
    });
    if (!kept) (*client)->remove(o.key).ignore();
  }
}

// The split's part records under OUT/.parts/ (other splits' stay theirs).
Result<std::vector<remote::ListedObject>> split_part_records(const std::string& url,
                                                             const std::string& split) {
  auto listed = remote::list_folder(remote::join(url, std::string(kPartsFolder) + "/"));
  if (!listed.ok()) return listed.status();
  const std::regex pattern = part_record_pattern(split);
  std::vector<remote::ListedObject> out;
  for (remote::ListedObject& o : *listed) {
    const std::string name = o.key.substr(o.key.rfind('/') + 1);
    std::smatch m;
    if (std::regex_match(name, m, pattern) && !m[3].matched) out.push_back(std::move(o));
  }
  return out;
}

void remove_objects(const std::vector<remote::ListedObject>& objects) {
  auto client = remote::ObjectClient::shared();
  if (!client.ok()) return;  // best effort: dataset.json no longer names them
  for (const remote::ListedObject& o : objects) (*client)->remove(o.key).ignore();
}

// SLUICE_UPLOAD_PART_MB (64, at least S3's smallest part of 5), raised so
// that a file of `size` bytes needs at most S3's 10,000 parts.
uint64_t part_bytes(uint64_t size) {
  const char* mb = std::getenv("SLUICE_UPLOAD_PART_MB");
  const long n = mb ? std::atol(mb) : 64;
  return std::max(uint64_t(std::max(5L, n)) << 20, (size + 9999) / 10000);
}

}  // namespace

Status upload_file(const std::string& path, const std::string& url) {
  SLUICE_ASSIGN_OR_RETURN(remote::ObjectClient * client, remote::ObjectClient::shared());
  SLUICE_ASSIGN_OR_RETURN(File f, File::open_read(path));
  SLUICE_ASSIGN_OR_RETURN(uint64_t size, f.size());
  const uint64_t kPartBytes = part_bytes(size);
  std::string buffer(static_cast<size_t>(std::min(size, kPartBytes)), '\0');
  if (size <= kPartBytes) {
    SLUICE_ASSIGN_OR_RETURN(size_t got, f.pread(0, buffer.data(), buffer.size()));
    if (got != size) return data_loss_error(path + ": changed while being uploaded");
    return client->put(url, buffer);
  }
  SLUICE_ASSIGN_OR_RETURN(std::string upload, client->create_multipart(url));
  std::vector<std::string> etags;
  Status s;
  for (uint64_t offset = 0; s.ok() && offset < size; offset += kPartBytes) {
    const size_t n = static_cast<size_t>(std::min(kPartBytes, size - offset));
    auto got = f.pread(offset, buffer.data(), n);
    if (!got.ok() || *got != n) {
      s = got.ok() ? data_loss_error(path + ": changed while being uploaded") : got.status();
      break;
    }
    auto etag = client->upload_part(url, upload, static_cast<int>(etags.size() + 1),
                                    std::string_view(buffer.data(), n));
    if (etag.ok()) {
      etags.push_back(*etag);
    } else {
      s = etag.status();
    }
  }
  if (s.ok()) s = client->complete_multipart(url, upload, etags);
  if (!s.ok()) client->abort_multipart(url, upload).ignore();  // best effort: s says why
  return s;
}

Result<ConvertReport> convert_to_url(const std::string& src, const std::string& url,
                                     const ConvertOptions& options) {
  SLUICE_RETURN_IF_ERROR(must_be_s3(url));
  SLUICE_ASSIGN_OR_RETURN(Staging staging, Staging::make());
  SLUICE_RETURN_IF_ERROR(fetch_manifest(url, staging));
  SLUICE_ASSIGN_OR_RETURN(ConvertReport report, convert_images(src, staging.path(), options));
  SLUICE_RETURN_IF_ERROR(upload_shards(report.shards, staging, url));
  // Last: what makes the shards count.
  if (options.parts > 0) {
    const std::string name = std::string(kPartsFolder) + "/" +
                             part_record_name(options.split, options.part, options.parts);
    SLUICE_RETURN_IF_ERROR(upload_file(staging / name, remote::join(url, name)));
  } else {
    SLUICE_RETURN_IF_ERROR(upload_file(staging / kManifestName, remote::join(url, kManifestName)));
    remove_stale_objects(url, options.split, report.shards);
    // A whole conversion replaces the split: parts of an earlier one go, as in a folder.
    if (auto old = split_part_records(url, options.split); old.ok()) remove_objects(*old);
  }
  return report;
}

Result<ConvertReport> finish_url(const std::string& url, const FinishOptions& options) {
  SLUICE_RETURN_IF_ERROR(must_be_s3(url));
  SLUICE_ASSIGN_OR_RETURN(Staging staging, Staging::make());
  SLUICE_RETURN_IF_ERROR(fetch_manifest(url, staging));
  // The part records, into the staging folder; the shards stay where they
  // are and are checked there (sizes by HEAD, CRC32Cs by reading them).
  SLUICE_ASSIGN_OR_RETURN(std::vector<remote::ListedObject> records,
                          split_part_records(url, options.split));
  std::error_code ec;
  fs::create_directories(staging / kPartsFolder, ec);
  for (const remote::ListedObject& o : records) {
    const std::string name = o.key.substr(o.key.rfind('/') + 1);
    SLUICE_ASSIGN_OR_RETURN(std::string text, remote::read_whole(o.key, uint64_t{64} << 20));
    SLUICE_RETURN_IF_ERROR(
        write_file_atomic(staging / (std::string(kPartsFolder) + "/" + name), text));
  }
  SLUICE_ASSIGN_OR_RETURN(ConvertReport report, finish_staged(staging.path(), url, options));
  SLUICE_RETURN_IF_ERROR(upload_file(staging / kManifestName, remote::join(url, kManifestName)));
  // After dataset.json, as for a folder: the split's part records go.
  remove_objects(records);
  remove_stale_objects(url, options.split, report.shards);
  return report;
}

}  // namespace sluice::detail
