// Where S3 requests go and how they are signed, from the places the AWS
// CLI and SDKs read (same names, same precedence), so a user's existing
// setup works unchanged:
//
//   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN),
//                else [PROFILE] of AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials),
//                else [profile PROFILE] of AWS_CONFIG_FILE (~/.aws/config);
//                none at all = unsigned requests (public buckets)
//   profile      AWS_PROFILE, else "default"
//   region       AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, us-east-1
//   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
//                `endpoint_url`; none = AWS (virtual-hosted URLs); a custom
//                endpoint (MinIO, Ceph, a test server) gets path-style URLs
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::remote {

struct AwsConfig {
  std::string access_key, secret_key, session_token;
  std::string region = "us-east-1";
  std::string endpoint;  // empty = AWS's own
  // Where the credentials came from ("environment", a file and profile,
  // "none"), for messages.
  std::string credentials_from = "none";
  bool has_credentials() const { return !access_key.empty(); }
};

using IniFile = std::map<std::string, std::map<std::string, std::string>>;

// Parses the INI dialect of ~/.aws/credentials and ~/.aws/config:
// `[section]` lines, `key = value` lines, `#`/`;` comments. Indented lines
// (the nested `s3 =` blocks of the config file) are kept as "parent.key".
// A line that is none of these is kDataLoss naming `name` and the line.
Result<IniFile> parse_ini(std::string_view text, std::string_view name);

// Reads the configuration; `getenv` stands for the environment (tests pass
// their own). A credentials or config file that exists but cannot be parsed
// is an error naming it; a missing one is not.
Result<AwsConfig> load_aws_config(const std::function<const char*(const char*)>& getenv);

}  // namespace sluice::remote
