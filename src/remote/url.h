// Object URLs: `s3://bucket/key` (S3 and S3-compatible stores) and
// `http(s)://host/path` (any server that answers ranged GETs). Wherever
// sluice takes a file or folder path it also takes one of these.
#pragma once

#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::remote {

// True for s3://, http:// and https:// (case-insensitive scheme).
bool is_url(std::string_view path);

struct ObjectUrl {
  enum class Scheme { kS3, kHttp };
  Scheme scheme = Scheme::kS3;
  std::string bucket;  // s3 only
  std::string key;     // s3: the object key, without a leading '/'
  std::string http;    // http(s): the URL as given
  std::string text;    // as given, for messages
};

// Parses an object URL; kInvalidArgument naming it when malformed (no
// bucket, a bucket name S3 would refuse, whitespace).
Result<ObjectUrl> parse_url(std::string_view url);

// `dir` joined with `name` by exactly one '/'.
std::string join(std::string_view dir, std::string_view name);

// Percent-encodes everything but RFC 3986's unreserved characters (and '/'
// when keep_slash): S3's canonical URI and query encoding.
std::string uri_encode(std::string_view s, bool keep_slash);

}  // namespace sluice::remote
