// Where convert's images come from: an ImageFolder tree or a list file.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>

#include "base/file_util.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Strips one pair of surrounding double quotes (CSV quoting of a field
// without embedded quotes).
std::string_view unquote(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

Result<SourceList> list_image_folder(const std::string& root,
                                     const std::vector<std::string>& classes) {
  std::error_code ec;
  if (!fs::exists(root, ec)) return not_found_error(root + ": no such folder");
  if (!fs::is_directory(root, ec)) return invalid_argument_error(root + ": not a folder");
  SourceList out;
  std::vector<std::string> dirs;
  fs::directory_iterator it(root, fs::directory_options::follow_directory_symlink, ec);
  if (ec) return errno_error(root, "cannot list", ec.value());
  for (const auto& e : it) {
    if (e.is_directory(ec)) {
      std::string name = e.path().filename().string();
      if (!name.empty() && name[0] != '.') dirs.push_back(name);
    } else {
      out.ignored.push_back(e.path().string());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) {
    return invalid_argument_error(root + ": no class folders (expected " + root +
                                  "/CLASS/*.jpg|jpeg|png)");
  }
  out.classes = classes.empty() ? dirs : classes;
  std::map<std::string, int64_t> ids;
  for (size_t i = 0; i < out.classes.size(); ++i) ids[out.classes[i]] = static_cast<int64_t>(i);
  for (const std::string& d : dirs) {
    auto id = ids.find(d);
    if (id == ids.end()) {
      return invalid_argument_error(
          fmt::format("{}/{}: class folder '{}' is not in the class list", root, d, d));
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(
             fs::path(root) / d, fs::directory_options::follow_directory_symlink, ec)) {
      if (!e.is_regular_file()) continue;
      if (is_image_name(e.path())) {
        files.push_back(e.path());
      } else {
        out.ignored.push_back(e.path().string());
      }
    }
    if (ec) return errno_error((fs::path(root) / d).string(), "cannot list", ec.value());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      out.items.push_back({f.string(), fs::relative(f, root).generic_string(), id->second});
    }
  }
  if (out.items.empty()) {
    return invalid_argument_error(root + ": no .jpg, .jpeg or .png files in any class folder");
  }
  return out;
}

namespace {

// One entry of a list file, with its line for messages.
struct ListRow {
  std::string path, label;
  size_t line;
};

// The entries of a list file: 'path,label' or 'path<TAB>label' per line,
// blank lines and '#' comments skipped, an optional header row.
Result<std::vector<ListRow>> parse_list_rows(std::string_view text, const std::string& list_path) {
  std::vector<ListRow> rows;
  size_t line_no = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    size_t sep = line.find('\t');
    if (sep == std::string_view::npos) sep = line.rfind(',');
    if (sep == std::string_view::npos) {
      return invalid_argument_error(fmt::format(
          "{}: line {}: expected 'path,label' or 'path<TAB>label'", list_path, line_no));
    }
    std::string_view path = unquote(trim(line.substr(0, sep)));
    std::string_view label = unquote(trim(line.substr(sep + 1)));
    if (rows.empty() && (path == "path" || path == "filename" || path == "file") &&
        (label == "label" || label == "class")) {
      continue;  // header
    }
    if (path.empty() || label.empty()) {
      return invalid_argument_error(
          fmt::format("{}: line {}: empty path or label", list_path, line_no));
    }
    rows.push_back({std::string(path), std::string(label), line_no});
  }
  if (rows.empty()) return invalid_argument_error(list_path + ": no entries");
  return rows;
}

// The class list: given, or 0..max for integer labels, or the sorted names.
Result<std::vector<std::string>> list_classes(const std::vector<ListRow>& rows, bool all_ints,
                                              const std::vector<std::string>& classes,
                                              const std::string& list_path) {
  if (!classes.empty()) return classes;
  std::vector<std::string> out;
  if (all_ints) {
    int64_t max_id = 0;
    for (const ListRow& r : rows) max_id = std::max(max_id, *parse_int(r.label));
    if (max_id > 1'000'000) {
      return invalid_argument_error(
          fmt::format("{}: label {} is too large for a class id", list_path, max_id));
    }
    for (int64_t i = 0; i <= max_id; ++i) out.push_back(std::to_string(i));
    return out;
  }
  for (const ListRow& r : rows) out.push_back(r.label);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

Result<SourceList> read_list_file(const std::string& list_path,
                                  const std::vector<std::string>& classes) {
  SLUICE_ASSIGN_OR_RETURN(std::string text, detail::read_file(list_path, uint64_t{4} << 30));
  SLUICE_ASSIGN_OR_RETURN(std::vector<ListRow> rows, parse_list_rows(text, list_path));
  const bool all_ints = std::all_of(rows.begin(), rows.end(), [](const ListRow& r) {
    auto v = parse_int(r.label);
    return v && *v >= 0;
  });
  SourceList out;
  SLUICE_ASSIGN_OR_RETURN(out.classes, list_classes(rows, all_ints, classes, list_path));
  // Integer labels numbering their own classes are their ids: no map of up
  // to a million names to build (text_formats_fuzz timed out on a one-line
  // list whose label was 999999).
  std::map<std::string, int64_t> ids;
  if (!(classes.empty() && all_ints)) {
    for (size_t i = 0; i < out.classes.size(); ++i) ids[out.classes[i]] = static_cast<int64_t>(i);
  }
  const fs::path base = fs::path(list_path).parent_path();
  for (const ListRow& r : rows) {
    int64_t id;
    if (auto it = ids.find(r.label); it != ids.end()) {
      id = it->second;
    } else if (auto v = parse_int(r.label);
               all_ints && v && *v >= 0 && *v < static_cast<int64_t>(out.classes.size())) {
      id = *v;
    } else {
      return invalid_argument_error(
          fmt::format("{}: line {}: label '{}' is outside the class list ({} classes)", list_path,
                      r.line, r.label, out.classes.size()));
    }
    fs::path p(r.path);
    fs::path full = p.is_absolute() ? p : base / p;
    out.items.push_back({full.string(), p.generic_string(), id});
  }
  return out;
}

}  // namespace sluice
