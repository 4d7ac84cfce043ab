#include "cli/common.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>

#include "sluice/dataset.h"

namespace sluice::cli {
namespace {
std::string g_command_line;

std::string duration(double s) {
  if (s < 0 || s > 1e7) return "?";
  int t = static_cast<int>(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02d}:{:02d}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02d}", t / 60, t % 60);
}
}  // namespace

int report_error(const std::string& command, const Status& status) {
  std::fprintf(stderr, "sluice %s: %s\n", command.c_str(), std::string(status.message()).c_str());
  return kExitFailure;
}

void set_command_line(int argc, char** argv) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i) g_command_line += ' ';
    std::string a = argv[i];
    bool quote = a.empty() || a.find_first_of(" \t'\"$") != std::string::npos;
    g_command_line += quote ? "'" + a + "'" : a;
  }
}

std::string joined_command_line() {
  return g_command_line;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

Progress::Progress(std::string label, std::string unit, bool quiet)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      quiet_(quiet),
      tty_(::isatty(STDERR_FILENO) != 0) {}

void Progress::update(uint64_t done, uint64_t total, double seconds, bool final) {
  if (quiet_) return;
  auto now = std::chrono::steady_clock::now();
  auto interval = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10'000);
  if (!final && drawn_ && now - last_ < interval) return;
  if (!final && !drawn_ && !tty_ && seconds < 10) return;  // short runs print no plain lines
  last_ = now;
  double rate = seconds > 0 ? done / seconds : 0;
  double eta = rate > 0 && total >= done ? (total - done) / rate : -1;
  double frac = total ? static_cast<double>(done) / total : 1.0;
  if (tty_) {
    constexpr int kWidth = 30;
    int filled = static_cast<int>(frac * kWidth);
    std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
    std::fprintf(stderr, "\r%s [%s] %llu/%llu %3.0f%%  %.0f %s/s  ETA %s \x1b[K", label_.c_str(),
                 bar.c_str(), static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total), frac * 100, rate, unit_.c_str(),
                 duration(eta).c_str());
    if (final) std::fputc('\n', stderr);
  } else if (!final || drawn_) {
    std::fprintf(stderr, "%s: %llu/%llu %s (%.0f%%), %.0f %s/s, ETA %s\n", label_.c_str(),
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                 unit_.c_str(), frac * 100, rate, unit_.c_str(), duration(eta).c_str());
  }
  std::fflush(stderr);
  drawn_ = true;
}

LadderSources find_ladder_sources(const std::string& data, const std::string& split,
                                  const std::string& raw_flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  LadderSources s;
  bool manifest = fs::exists(fs::path(data) / kManifestName, ec);
  // As the pipeline tells them apart: a folder with class folders and no
  // manifest is an image folder; anything else is records.
  bool image_folder = false;
  if (!manifest && fs::is_directory(data, ec)) {
    for (const auto& e : fs::directory_iterator(data, ec)) image_folder |= e.is_directory(ec);
  }
  s.shards = !image_folder;
  std::string raw = raw_flag, from = "--raw";
  if (raw.empty() && manifest) {
    auto m = read_manifest(data);
    if (m.ok() && m->splits.count(split)) {
      raw = m->splits.at(split).source;
      from = std::string(kManifestName) + "'s source";
    }
  } else if (raw.empty() && image_folder) {
    raw = data;
    from = "DATA";
  }
  if (raw.empty()) {
    s.no_raw = "no image folder: give --raw DIR";
  } else if (!fs::is_directory(raw, ec)) {
    s.no_raw = fmt::format("no image folder: {} {} is not a folder; give --raw DIR", from, raw);
  } else {
    s.raw = raw;
  }
  return s;
}

}  // namespace sluice::cli
