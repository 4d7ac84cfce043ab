#include "remote/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>

#include "remote/url.h"

namespace sluice::remote {
namespace {

std::atomic<uint64_t> g_requests{0}, g_retries{0}, g_failures{0}, g_bytes{0};

constexpr size_t kErrorBodyBytes = 64 << 10;

bool retryable_curl(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return true;
    default: return false;
  }
}

bool retryable_http(long code) {
  return code == 429 || code == 500 || code == 502 || code == 503 || code == 504;
}

// Whether an ETag can go in If-Match: RFC 9110 compares If-Match strongly,
// so a weak one (W/"...", as Node's serve-static and many CDNs send) would
// fail every read with 412. Those objects are read without the check.
bool can_match(std::string_view etag) {
  return !etag.empty() && !etag.starts_with("W/");
}

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  }
  return true;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' '))
    s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

RemoteTotals remote_totals() {
  return {g_requests.load(), g_retries.load(), g_failures.load(), g_bytes.load()};
}

struct ObjectClient::Request {
  const char* method = "GET";
  std::string_view url;  // as the user wrote it
  std::string query;     // already canonical: sorted names, encoded values
  std::string range;     // "first-last" or "first-"; empty = whole object
  std::string_view body;
  std::vector<std::string> headers;
  // Where a 2xx body goes: exactly fixed_bytes into `fixed`, or to `sink`
  // (resuming at stream_offset after a cut), or into Response::body up to
  // max_bytes.
  char* fixed = nullptr;
  uint64_t fixed_bytes = 0;
  const std::function<Status(std::string_view)>* sink = nullptr;
  mutable uint64_t stream_offset = 0;
  mutable std::string stream_etag;
  uint64_t max_bytes = 1 << 20;
  // No stall limit: S3 may send only whitespace for minutes while it
  // assembles a multipart upload (CompleteMultipartUpload).
  bool slow_answer = false;
};

struct ObjectClient::Response {
  long code = 0;
  CURLcode curl = CURLE_OK;
  std::string curl_error;
  std::string body;  // a text body, or an error document
  uint64_t received = 0;
  std::string etag;
  int64_t content_length = -1;
  Status sink_status;
  bool overflow = false;
  CURL* handle = nullptr;
  const Request* request = nullptr;
};

struct ObjectClient::Pool {
  std::mutex mu;
  std::vector<CURL*> idle;
};

namespace {

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<ObjectClient::Response*>(user);
  std::string_view line(data, size * n);
  if (iequals_prefix(line, "etag:")) r->etag = trim(line.substr(5));
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<ObjectClient::Response*>(user);
  const auto* q = r->request;
  const size_t bytes = size * n;
  if (r->code == 0) curl_easy_getinfo(r->handle, CURLINFO_RESPONSE_CODE, &r->code);
  if (r->code < 200 || r->code >= 300) {
    r->body.append(data,
                   std::min(bytes, kErrorBodyBytes - std::min(kErrorBodyBytes, r->body.size())));
    return bytes;
  }
  if (q->fixed) {
    if (r->received + bytes > q->fixed_bytes) {
      r->overflow = true;
      return 0;
    }
    std::copy(data, data + bytes, q->fixed + r->received);
  } else if (q->sink) {
    r->sink_status = (*q->sink)(std::string_view(data, bytes));
    if (!r->sink_status.ok()) return 0;
    q->stream_offset += bytes;
  } else {
    if (r->body.size() + bytes > q->max_bytes) {
      r->overflow = true;
      return 0;
    }
    r->body.append(data, bytes);
  }
  r->received += bytes;
  g_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return bytes;
}

}  // namespace

Result<ObjectClient*> ObjectClient::shared() {
  // Never destroyed: threads of pipelines still alive at exit (a Python
  // interpreter shutting down) may be using it.
  static std::mutex mu;
  static ObjectClient* client = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (!client) {
    SLUICE_ASSIGN_OR_RETURN(AwsConfig config,
                            load_aws_config([](const char* k) { return std::getenv(k); }));
    RetryPolicy retry;
    if (const char* a = std::getenv("SLUICE_REMOTE_ATTEMPTS"))
      retry.attempts = std::max(1, std::atoi(a));
    client = new ObjectClient(std::move(config), retry);
  }
  return client;
}

ObjectClient::ObjectClient(AwsConfig config, RetryPolicy retry)
    : config_(std::move(config)), retry_(retry), pool_(std::make_unique<Pool>()) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

ObjectClient::~ObjectClient() {
  for (CURL* h : pool_->idle) curl_easy_cleanup(h);
}

void* ObjectClient::borrow() {
  {
    std::lock_guard<std::mutex> lock(pool_->mu);
    if (!pool_->idle.empty()) {
      CURL* h = pool_->idle.back();
      pool_->idle.pop_back();
      curl_easy_reset(h);  // options go; live connections stay
      return h;
    }
  }
  return curl_easy_init();
}

void ObjectClient::give_back(void* handle) {
  std::lock_guard<std::mutex> lock(pool_->mu);
  pool_->idle.push_back(static_cast<CURL*>(handle));
}

Result<std::string> ObjectClient::http_url(const Request& q) const {
  SLUICE_ASSIGN_OR_RETURN(ObjectUrl u, parse_url(q.url));
  if (u.scheme == ObjectUrl::Scheme::kHttp) return u.http;
  std::string key = uri_encode(u.key, true);
  std::string out;
  if (!config_.endpoint.empty()) {
    out = config_.endpoint + "/" + u.bucket + (key.empty() ? "" : "/" + key);
  } else if (u.bucket.find('.') != std::string::npos) {
    out = "https://s3." + config_.region + ".amazonaws.com/" + u.bucket + "/" + key;
  } else {
    out = "https://" + u.bucket + ".s3." + config_.region + ".amazonaws.com/" + key;
  }
  if (!q.query.empty()) out += "?" + q.query;
  return out;
}

// The request's headers, and SigV4 signing for s3:// with credentials (or
// redirects for http(s)://). The caller frees the list.
curl_slist* ObjectClient::sign_and_head(const Request& q, const std::string& method, void* handle) {
  CURL* h = static_cast<CURL*>(handle);
  curl_slist* headers = nullptr;
  // Without a Content-Type curl would send a form's for PUT/POST bodies.
  // (Removing a header with "Name:" is not an option: curl 7.88's SigV4
  // signs the removed header as if it were sent, and S3 refuses the
  // signature; seen against moto, fixed in later curl.)
  if (method == "PUT" || method == "POST")
    headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
  for (const std::string& extra : q.headers) headers = curl_slist_append(headers, extra.c_str());
  if (q.sink && can_match(q.stream_etag))
    headers = curl_slist_append(headers, ("If-Match: " + q.stream_etag).c_str());
  auto parsed = parse_url(q.url);
  if (parsed.ok() && parsed->scheme == ObjectUrl::Scheme::kS3 && config_.has_credentials()) {
    std::string sigv4 = "aws:amz:" + config_.region + ":s3";
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(h, CURLOPT_USERNAME, config_.access_key.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, config_.secret_key.c_str());
    // S3 wants the payload's hash in this header for SigV4; UNSIGNED-PAYLOAD
    // is its documented value for bodies not hashed (TLS guards them).
    headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (!config_.session_token.empty())
      headers =
          curl_slist_append(headers, ("x-amz-security-token: " + config_.session_token).c_str());
  } else if (parsed.ok() && parsed->scheme == ObjectUrl::Scheme::kHttp) {
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  }
  return headers;
}

ObjectClient::Response ObjectClient::attempt(const Request& q) {
  Response r;
  r.request = &q;
  auto url = http_url(q);
  if (!url.ok()) {
    r.curl = CURLE_URL_MALFORMAT;
    r.curl_error = std::string(url.status().message());
    return r;
  }
  CURL* h = static_cast<CURL*>(borrow());
  r.handle = h;
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(h, CURLOPT_URL, url->c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, retry_.connect_timeout_s);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, q.slow_answer ? 0L : 1024L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, q.slow_answer ? 0L : retry_.stall_seconds);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "sluice");
  std::string method = q.method;
  if (method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (method == "PUT" || method == "POST") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q.method);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, q.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(q.body.size()));
  } else if (method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q.method);
  }
  std::string range = q.range;
  if (q.sink && q.stream_offset > 0) range = std::to_string(q.stream_offset) + "-";
  if (!range.empty()) curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
  curl_slist* headers = sign_and_head(q, method, h);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  g_requests.fetch_add(1, std::memory_order_relaxed);
  r.curl = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.code);
  curl_off_t length = -1;
  curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  r.content_length = length;
  if (r.curl != CURLE_OK) r.curl_error = error[0] ? error : curl_easy_strerror(r.curl);
  curl_slist_free_all(headers);
  r.handle = nullptr;
  give_back(h);
  return r;
}

namespace {

// Why a response failed, as a Status naming `url`; OK for a usable one.
Status classify(const ObjectClient::Response& r, std::string_view method, std::string_view url,
                const AwsConfig& config) {
  const std::string name(url);
  if (!r.sink_status.ok()) return r.sink_status;
  if (r.overflow) {
    return resource_exhausted_error(name + ": the server sent more bytes than asked for (" +
                                    std::string(method) + ")");
  }
  if (r.curl != CURLE_OK) {
    return unavailable_error(name + ": " + std::string(method) + " failed: " + r.curl_error);
  }
  if (r.code >= 200 && r.code < 300) return Status();
  std::string why = parse_error_body(r.body);
  std::string detail = "HTTP " + std::to_string(r.code) + (why.empty() ? "" : " " + why);
  if (r.code == 403) {
    return permission_denied_error(name + ": access denied (" + detail + "; credentials from " +
                                   config.credentials_from + ")");
  }
  if (r.code == 404) return not_found_error(name + ": no such object (" + detail + ")");
  if (r.code == 412)
    return data_loss_error(name + ": the object changed while being read (" + detail + ")");
  if (r.code == 416)
    return data_loss_error(name + ": range beyond the object's end (" + detail + ")");
  if (retryable_http(r.code)) return unavailable_error(name + ": " + detail);
  return failed_precondition_error(name + ": " + std::string(method) + " refused: " + detail);
}

bool worth_retrying(const ObjectClient::Response& r, const ObjectClient::Request& q) {
  if (!r.sink_status.ok() || r.overflow) return false;
  if (r.curl != CURLE_OK) return retryable_curl(r.curl);
  if (retryable_http(r.code)) return true;
  // S3's 400 RequestTimeout: the connection was idle too long mid-upload;
  // the AWS SDKs retry it.
  if (r.code == 400 && parse_error_body(r.body).starts_with("RequestTimeout")) return true;
  // A 2xx that ended early without curl noticing (a proxy that closed
  // cleanly): the body is short.
  if (r.code >= 200 && r.code < 300 && q.fixed && r.received != q.fixed_bytes) return true;
  // S3 documents that CompleteMultipartUpload can answer 200 with an error
  // document in the body when it fails late; such an error is to be retried.
  if (r.code == 200 && !parse_error_body(r.body).empty()) return true;
  return false;
}

}  // namespace

Result<ObjectClient::Response> ObjectClient::perform(const Request& q) {
  thread_local std::minstd_rand rng(std::random_device{}());
  for (int attempt_no = 1;; ++attempt_no) {
    Response r = attempt(q);
    if (q.sink && r.code >= 200 && r.code < 300 && q.stream_etag.empty()) q.stream_etag = r.etag;
    bool again = worth_retrying(r, q) && attempt_no < retry_.attempts;
    if (!again) {
      Status s = classify(r, q.method, q.url, config_);
      if (s.ok() && q.fixed && r.received != q.fixed_bytes) {
        s = data_loss_error(std::string(q.url) + ": " + std::to_string(r.received) + " of " +
                            std::to_string(q.fixed_bytes) + " bytes of range " + q.range +
                            " arrived");
      }
      if (s.ok() && r.code == 200 && !parse_error_body(r.body).empty()) {
        s = unavailable_error(std::string(q.url) + ": " + parse_error_body(r.body));
      }
      if (!s.ok()) {
        g_failures.fetch_add(1, std::memory_order_relaxed);
        if (attempt_no == 1) return s;
        return Status(s.code(), std::string(s.message()) + " (gave up after " +
                                    std::to_string(attempt_no) + " attempts)");
      }
      return r;
    }
    g_retries.fetch_add(1, std::memory_order_relaxed);
    double cap = std::min(retry_.max_backoff_s,
                          retry_.first_backoff_s * (1 << std::min(attempt_no - 1, 16)));
    double wait = std::uniform_real_distribution<double>(0, cap)(rng);
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
}

Result<ObjectInfo> ObjectClient::head(std::string_view url) {
  Request q;
  q.method = "HEAD";
  q.url = url;
  SLUICE_ASSIGN_OR_RETURN(Response r, perform(q));
  if (r.content_length < 0)
    return data_loss_error(std::string(url) + ": the server gave no Content-Length");
  return ObjectInfo{static_cast<uint64_t>(r.content_length), r.etag};
}

Status ObjectClient::get_range(std::string_view url, uint64_t offset, uint64_t n, char* out,
                               std::string_view etag) {
  if (n == 0) return Status();
  Request q;
  q.url = url;
  if (can_match(etag)) q.headers.push_back("If-Match: " + std::string(etag));
  q.range = std::to_string(offset) + "-" + std::to_string(offset + n - 1);
  q.fixed = out;
  q.fixed_bytes = n;
  SLUICE_ASSIGN_OR_RETURN(Response r, perform(q));
  // A server that ignores Range answers 200 with the whole object: only
  // right when the range is the whole object.
  if (r.code != 206 && offset != 0) {
    return unimplemented_error(std::string(url) + ": the server ignored the byte range " + q.range +
                               " (HTTP " + std::to_string(r.code) + ")");
  }
  return Status();
}

Result<std::string> ObjectClient::get(std::string_view url, uint64_t max_bytes) {
  Request q;
  q.url = url;
  q.max_bytes = max_bytes;
  auto r = perform(q);
  if (!r.ok() && r.status().code() == StatusCode::kResourceExhausted) {
    return resource_exhausted_error(std::string(url) + ": object larger than " +
                                    std::to_string(max_bytes) + " bytes");
  }
  SLUICE_RETURN_IF_ERROR(r.status());
  return std::move(r->body);
}

Status ObjectClient::get_stream(std::string_view url,
                                const std::function<Status(std::string_view)>& sink,
                                std::string_view etag) {
  Request q;
  q.url = url;
  q.sink = &sink;
  q.stream_etag = std::string(etag);
  return perform(q).status();
}

Result<std::vector<ListedObject>> ObjectClient::list(std::string_view url) {
  SLUICE_ASSIGN_OR_RETURN(ObjectUrl u, parse_url(url));
  if (u.scheme != ObjectUrl::Scheme::kS3)
    return unimplemented_error(std::string(url) + ": only s3:// locations can be listed");
  const std::string bucket_url = "s3://" + u.bucket;
  std::vector<ListedObject> all;
  std::string token;
  for (;;) {
    Request q;
    q.url = bucket_url;
    // Names in byte order, values encoded: curl signs the query as given.
    if (!token.empty()) q.query = "continuation-token=" + uri_encode(token, false) + "&";
    q.query += "list-type=2&prefix=" + uri_encode(u.key, false);
    q.max_bytes = 64 << 20;
    SLUICE_ASSIGN_OR_RETURN(Response r, perform(q));
    SLUICE_ASSIGN_OR_RETURN(ListPage page, parse_list_page(r.body, url));
    for (auto& o : page.objects) all.push_back(std::move(o));
    if (!page.truncated) break;
    token = page.next_token;
  }
  return all;
}

Status ObjectClient::put(std::string_view url, std::string_view body) {
  Request q;
  q.method = "PUT";
  q.url = url;
  q.body = body;
  return perform(q).status();
}

Result<std::string> ObjectClient::create_multipart(std::string_view url) {
  Request q;
  q.method = "POST";
  q.url = url;
  q.query = "uploads=";
  SLUICE_ASSIGN_OR_RETURN(Response r, perform(q));
  auto id = xml_elements(r.body, "UploadId");
  if (id.size() != 1 || id[0].empty())
    return data_loss_error(std::string(url) +
                           ": CreateMultipartUpload answered without an UploadId");
  return xml_text(id[0]);
}

Result<std::string> ObjectClient::upload_part(std::string_view url, const std::string& upload_id,
                                              int part, std::string_view body) {
  Request q;
  q.method = "PUT";
  q.url = url;
  q.query = "partNumber=" + std::to_string(part) + "&uploadId=" + uri_encode(upload_id, false);
  q.body = body;
  SLUICE_ASSIGN_OR_RETURN(Response r, perform(q));
  if (r.etag.empty())
    return data_loss_error(std::string(url) + ": part " + std::to_string(part) +
                           " uploaded without an ETag");
  return r.etag;
}

Status ObjectClient::complete_multipart(std::string_view url, const std::string& upload_id,
                                        const std::vector<std::string>& etags) {
  std::string body = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    std::string etag;
    for (char c : etags[i]) etag += c == '&' ? "&amp;" : c == '<' ? "&lt;" : std::string(1, c);
    body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etag +
            "</ETag></Part>";
  }
  body += "</CompleteMultipartUpload>";
  Request q;
  q.method = "POST";
  q.url = url;
  q.query = "uploadId=" + uri_encode(upload_id, false);
  q.body = body;
  q.slow_answer = true;
  return perform(q).status();
}

Status ObjectClient::abort_multipart(std::string_view url, const std::string& upload_id) {
  Request q;
  q.method = "DELETE";
  q.url = url;
  q.query = "uploadId=" + uri_encode(upload_id, false);
  return perform(q).status();
}

Status ObjectClient::remove(std::string_view url) {
  Request q;
  q.method = "DELETE";
  q.url = url;
  return perform(q).status();
}

}  // namespace sluice::remote
