// HTTP(S) and S3 requests through libcurl (Debian's libcurl4-openssl-dev):
// connection reuse, TLS with the system's certificates, and AWS Signature
// Version 4 (curl's CURLOPT_AWS_SIGV4) are libcurl's; what is ours is which
// requests to make, retrying the ones that may succeed a second time, and
// saying clearly why the others failed.
//
// Retries: connection failures, resets, timeouts and stalls (under 1 KB/s
// for 20 s), short bodies, HTTP 429 and 5xx, up to RetryPolicy::attempts
// with full-jitter exponential backoff. 403 and 404 are final at once: the
// error names the object and S3's own code ("AccessDenied",
// "SignatureDoesNotMatch", "NoSuchKey") with where the credentials came from.
//
// Thread safety: every method may be called from many threads at once;
// each call borrows an idle curl handle (keeping its connections alive) from
// the client's pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "remote/aws_config.h"
#include "remote/xml.h"
#include "sluice/status.h"

struct curl_slist;

namespace sluice::remote {

// Process-wide counts of what every client did (stats() reports them).
struct RemoteTotals {
  uint64_t requests = 0;  // HTTP requests sent (retries included)
  uint64_t retries = 0;   // of those, repeats of a failed attempt
  uint64_t failures = 0;  // requests given up on (after retries, or final)
  uint64_t bytes = 0;     // body bytes received
};
RemoteTotals remote_totals();

struct RetryPolicy {
  int attempts = 6;  // tries in all, first included
  double first_backoff_s = 0.05;
  double max_backoff_s = 5;
  long connect_timeout_s = 10;
  long stall_seconds = 20;  // below 1 KB/s for this long = a stalled transfer
};

struct ObjectInfo {
  uint64_t size = 0;
  std::string etag;
};

class ObjectClient {
 public:
  // The process's client, configured from the environment (aws_config.h)
  // on first use; a bad credentials file is an error each time.
  static Result<ObjectClient*> shared();

  ObjectClient(AwsConfig config, RetryPolicy retry);
  ~ObjectClient();
  ObjectClient(const ObjectClient&) = delete;
  ObjectClient& operator=(const ObjectClient&) = delete;

  const AwsConfig& config() const { return config_; }

  Result<ObjectInfo> head(std::string_view url);
  // Exactly n bytes at `offset` into `out`; fewer is kDataLoss. With an
  // ETag, only from that version of the object (If-Match).
  Status get_range(std::string_view url, uint64_t offset, uint64_t n, char* out,
                   std::string_view etag = {});
  // The whole object; over max_bytes is kResourceExhausted.
  Result<std::string> get(std::string_view url, uint64_t max_bytes);
  // The whole object in pieces to `sink`; a transfer cut short resumes
  // from where it stopped (If-Match on the ETag of the first answer, so a
  // changed object fails instead of mixing two versions).
  // With an ETag, only that version of the object.
  Status get_stream(std::string_view url, const std::function<Status(std::string_view)>& sink,
                    std::string_view etag = {});
  // Every object under an s3:// prefix (ListObjectsV2, all pages), in key
  // order. `url` s3://bucket/prefix.
  Result<std::vector<ListedObject>> list(std::string_view url);

  // Writing (s3:// only): a whole object in one PUT, or a multipart upload.
  Status put(std::string_view url, std::string_view body);
  Result<std::string> create_multipart(std::string_view url);
  Result<std::string> upload_part(std::string_view url, const std::string& upload_id, int part,
                                  std::string_view body);
  Status complete_multipart(std::string_view url, const std::string& upload_id,
                            const std::vector<std::string>& etags);
  Status abort_multipart(std::string_view url, const std::string& upload_id);
  Status remove(std::string_view url);

  struct Request;
  struct Response;

 private:
  Result<Response> perform(const Request& request);
  Response attempt(const Request& request);
  curl_slist* sign_and_head(const Request& request, const std::string& method, void* handle);
  Result<std::string> http_url(const Request& request) const;
  void* borrow();
  void give_back(void* handle);

  AwsConfig config_;
  RetryPolicy retry_;
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

}  // namespace sluice::remote
