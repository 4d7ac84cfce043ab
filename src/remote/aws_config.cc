#include "remote/aws_config.h"

#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"

namespace sluice::remote {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Reads an optional INI file: a missing file is an empty one.
Result<IniFile> read_optional_ini(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return IniFile{};
  SLUICE_ASSIGN_OR_RETURN(std::string text, detail::read_file(path, uint64_t{1} << 20));
  return parse_ini(text, path);
}

std::string lookup(const IniFile& ini, const std::string& section, const std::string& key) {
  auto s = ini.find(section);
  if (s == ini.end()) return "";
  auto k = s->second.find(key);
  return k == s->second.end() ? "" : k->second;
}

}  // namespace

Result<IniFile> parse_ini(std::string_view text, std::string_view name) {
  IniFile ini;
  std::string section, parent;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    const bool indented = !raw.empty() && (raw.front() == ' ' || raw.front() == '\t');
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    auto bad = [&](std::string_view why) {
      return data_loss_error(std::string(name) + ": line " + std::to_string(line_no) + ": " +
                             std::string(why));
    };
    if (line.front() == '[') {
      if (line.back() != ']' || line.size() < 3) return bad("section header without a closing ']'");
      section = std::string(trim(line.substr(1, line.size() - 2)));
      parent.clear();
      ini[section];
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return bad("expected 'key = value' or '[section]'");
    if (section.empty()) return bad("a setting before any [section]");
    std::string key(trim(line.substr(0, eq)));
    std::string value(trim(line.substr(eq + 1)));
    if (key.empty()) return bad("a setting without a name");
    if (indented && !parent.empty()) {
      ini[section][parent + "." + key] = value;
      continue;
    }
    parent = value.empty() ? key : "";
    ini[section][key] = value;
  }
  return ini;
}

Result<AwsConfig> load_aws_config(const std::function<const char*(const char*)>& getenv) {
  auto env = [&](const char* k) -> std::string {
    const char* v = getenv(k);
    return v ? v : "";
  };
  const std::string home = env("HOME");
  std::string cred_path = env("AWS_SHARED_CREDENTIALS_FILE");
  std::string config_path = env("AWS_CONFIG_FILE");
  if (cred_path.empty() && !home.empty()) cred_path = home + "/.aws/credentials";
  if (config_path.empty() && !home.empty()) config_path = home + "/.aws/config";
  std::string profile = env("AWS_PROFILE");
  if (profile.empty()) profile = "default";
  SLUICE_ASSIGN_OR_RETURN(IniFile creds, read_optional_ini(cred_path));
  SLUICE_ASSIGN_OR_RETURN(IniFile config, read_optional_ini(config_path));
  const std::string config_section = profile == "default" ? "default" : "profile " + profile;

  AwsConfig c;
  if (!env("AWS_ACCESS_KEY_ID").empty()) {
    c.access_key = env("AWS_ACCESS_KEY_ID");
    c.secret_key = env("AWS_SECRET_ACCESS_KEY");
    c.session_token = env("AWS_SESSION_TOKEN");
    c.credentials_from = "environment (AWS_ACCESS_KEY_ID)";
  } else {
    for (const auto& [ini, section, path] : {std::tuple{&creds, profile, cred_path},
                                             std::tuple{&config, config_section, config_path}}) {
      std::string key = lookup(*ini, section, "aws_access_key_id");
      if (key.empty()) continue;
      c.access_key = key;
      c.secret_key = lookup(*ini, section, "aws_secret_access_key");
      c.session_token = lookup(*ini, section, "aws_session_token");
      c.credentials_from = path + " [" + section + "]";
      break;
    }
  }
  if (c.has_credentials() && c.secret_key.empty())
    return invalid_argument_error("S3 credentials from " + c.credentials_from +
                                  " have an access key id but no secret access key");
  for (std::string r :
       {env("AWS_REGION"), env("AWS_DEFAULT_REGION"), lookup(config, config_section, "region")}) {
    if (!r.empty()) {
      c.region = r;
      break;
    }
  }
  for (std::string e : {env("AWS_ENDPOINT_URL_S3"), env("AWS_ENDPOINT_URL"),
                        lookup(config, config_section, "s3.endpoint_url"),
                        lookup(config, config_section, "endpoint_url")}) {
    if (!e.empty()) {
      while (!e.empty() && e.back() == '/') e.pop_back();
      c.endpoint = e;
      break;
    }
  }
  return c;
}

}  // namespace sluice::remote
