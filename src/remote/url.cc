#include "remote/url.h"

#include <cctype>

namespace sluice::remote {
namespace {

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

// S3's bucket naming rules (3-63 of a-z 0-9 . -, starting and ending with a
// letter or digit), so a typo fails here rather than as a signature error.
bool valid_bucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-'))
      return false;
  }
  auto edge = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c));
  };
  return edge(b.front()) && edge(b.back());
}

}  // namespace

bool is_url(std::string_view path) {
  return starts_with_ci(path, "s3://") || starts_with_ci(path, "http://") ||
         starts_with_ci(path, "https://");
}

Result<ObjectUrl> parse_url(std::string_view url) {
  ObjectUrl u;
  u.text = std::string(url);
  for (char c : url) {
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)))
      return invalid_argument_error("'" + u.text + "': whitespace or control character in URL");
  }
  if (starts_with_ci(url, "http://") || starts_with_ci(url, "https://")) {
    u.scheme = ObjectUrl::Scheme::kHttp;
    u.http = u.text;
    if (url.substr(url.find("://") + 3).empty())
      return invalid_argument_error("'" + u.text + "': no host in URL");
    return u;
  }
  if (!starts_with_ci(url, "s3://"))
    return invalid_argument_error("'" + u.text + "': not an s3:// or http(s):// URL");
  std::string_view rest = url.substr(5);
  size_t slash = rest.find('/');
  u.bucket = std::string(rest.substr(0, slash));
  u.key = slash == std::string_view::npos ? "" : std::string(rest.substr(slash + 1));
  if (!valid_bucket(u.bucket)) {
    return invalid_argument_error("'" + u.text + "': '" + u.bucket +
                                  "' is not a valid S3 bucket name (3-63 characters: a-z 0-9 . -)");
  }
  return u;
}

std::string join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out += '/';
  while (!name.empty() && name.front() == '/') name.remove_prefix(1);
  out += name;
  return out;
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace sluice::remote
