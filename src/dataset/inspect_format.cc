// Text and JSON renderings of an inspect report.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "sluice/dataset.h"

namespace sluice {
namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} {}", b, units[u]) : fmt::format("{:.1f} {}", b, units[u]);
}

void append_range(std::string* out, const char* name, const RangeStats& r, bool bytes) {
  if (r.count == 0) return;
  if (bytes) {
    *out += fmt::format("  {:<7} min {}  mean {}  max {}\n", name, human_bytes(r.min),
                        human_bytes(r.mean()), human_bytes(r.max));
  } else {
    *out +=
        fmt::format("  {:<7} min {:.0f}  mean {:.1f}  max {:.0f}\n", name, r.min, r.mean(), r.max);
  }
}

void append_classes(std::string* out, const InspectReport& r) {
  uint64_t most = 0;
  for (const auto& [label, n] : r.labels) most = std::max(most, n);
  for (const auto& [label, n] : r.label_names) most = std::max(most, n);
  auto bar = [&](uint64_t n) { return std::string(most ? (n * 30 + most - 1) / most : 0, '#'); };
  if (!r.labels.empty()) {
    *out += fmt::format(
        "classes: {} labels seen{}\n", r.labels.size(),
        r.classes.empty() ? "" : fmt::format(" of {} in dataset.json", r.classes.size()));
    size_t shown = 0;
    for (const auto& [label, n] : r.labels) {
      if (++shown > 40) {
        *out += fmt::format("  ... {} more\n", r.labels.size() - 40);
        break;
      }
      std::string name = label >= 0 && label < static_cast<int64_t>(r.classes.size())
                             ? r.classes[static_cast<size_t>(label)]
                             : "";
      *out += fmt::format("  {:>5} {:<20} {:>8}  {}\n", label, name.substr(0, 20), n, bar(n));
    }
  }
  if (!r.label_names.empty()) {
    *out += fmt::format("classes: {} label names seen\n", r.label_names.size());
    for (const auto& [name, n] : r.label_names) {
      *out += fmt::format("  {:<26} {:>8}  {}\n", name.substr(0, 26), n, bar(n));
    }
  }
}

}  // namespace

std::string format_inspect_text(const InspectReport& r) {
  std::string out = fmt::format("{} file{}, {} records, {} on disk ({} of records)\n",
                                r.files.size(), r.files.size() == 1 ? "" : "s", r.records,
                                human_bytes(r.file_bytes), human_bytes(r.record_bytes));
  for (const FileSummary& f : r.files) {
    out += fmt::format(
        "  {}  {} records  {}{}{}\n", f.path, f.records, human_bytes(f.file_bytes),
        f.compression == Compression::kNone ? ""
                                            : fmt::format("  {}", compression_name(f.compression)),
        f.problems ? fmt::format("  {} problem{}", f.problems, f.problems == 1 ? "" : "s") : "");
  }
  if (!r.payloads.empty()) {
    out += "payload:";
    for (const auto& [kind, n] : r.payloads) out += fmt::format(" {} x{}", kind, n);
    out += "\n";
  }
  if (!r.schema.empty()) {
    out += "schema:\n";
    for (const auto& [key, st] : r.schema) {
      std::string values = st.min_values == st.max_values
                               ? fmt::format("{}", st.min_values)
                               : fmt::format("{}..{}", st.min_values, st.max_values);
      out += fmt::format("  {:<34} {:<11} in {:>8} records, {} value{}\n", key, st.kind, st.records,
                         values, st.max_values == 1 ? "" : "s");
    }
  }
  if (r.has_images) {
    out += fmt::format("images ({}):", r.keys.image);
    for (const auto& [fmt_name, n] : r.image_formats) out += fmt::format(" {} {}", fmt_name, n);
    if (r.progressive) out += fmt::format(", {} progressive/interlaced", r.progressive);
    out += "\n";
    if (!r.subsampling.empty()) {
      out += "  jpeg   ";
      for (const auto& [s, n] : r.subsampling) out += fmt::format(" {} {}", s, n);
      out += "\n";
    }
    append_range(&out, "width", r.width, false);
    append_range(&out, "height", r.height, false);
    append_range(&out, "size", r.image_bytes, true);
  }
  append_classes(&out, r);
  if (r.problems.empty()) {
    out += "no problems found\n";
  } else {
    out += fmt::format("{} problem{}:\n", r.problems.size(), r.problems.size() == 1 ? "" : "s");
    for (const Problem& p : r.problems) out += "  " + p.to_string() + "\n";
  }
  return out;
}

std::string format_inspect_json(const InspectReport& r) {
  using json = nlohmann::ordered_json;
  json j;
  j["records"] = r.records;
  j["file_bytes"] = r.file_bytes;
  j["record_bytes"] = r.record_bytes;
  json files = json::array();
  for (const FileSummary& f : r.files) {
    files.push_back({{"path", f.path},
                     {"compression", std::string(compression_name(f.compression))},
                     {"records", f.records},
                     {"file_bytes", f.file_bytes},
                     {"record_bytes", f.record_bytes},
                     {"problems", f.problems}});
  }
  j["files"] = files;
  j["payloads"] = r.payloads;
  json schema = json::object();
  for (const auto& [key, st] : r.schema) {
    schema[key] = {{"kind", st.kind},
                   {"records", st.records},
                   {"min_values", st.min_values},
                   {"max_values", st.max_values}};
  }
  j["schema"] = schema;
  if (r.has_images) {
    auto range = [](const RangeStats& s) {
      return json{{"count", s.count}, {"min", s.min}, {"mean", s.mean()}, {"max", s.max}};
    };
    j["images"] = {{"key", r.keys.image},          {"formats", r.image_formats},
                   {"subsampling", r.subsampling}, {"progressive", r.progressive},
                   {"width", range(r.width)},      {"height", range(r.height)},
                   {"bytes", range(r.image_bytes)}};
  }
  j["classes"] = r.classes;
  json labels = json::object();
  for (const auto& [label, n] : r.labels) labels[std::to_string(label)] = n;
  j["labels"] = labels;
  j["label_names"] = r.label_names;
  json problems = json::array();
  for (const Problem& p : r.problems) {
    problems.push_back({{"file", p.file}, {"offset", p.offset}, {"reason", p.reason}});
  }
  j["problems"] = problems;
  j["ok"] = r.ok();
  return j.dump(2) + "\n";
}

}  // namespace sluice
