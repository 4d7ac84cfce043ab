// Process and machine samplers over /proc text. Parsing is separate from
// reading so tests can feed fakes, and it is strict: a /proc layout we do
// not understand is an error, never a silent zero.
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_util.h"
#include "sluice/telemetry.h"

namespace sluice {
namespace {

// /proc/self/status is ~1.5 KiB and /proc/stat grows with cores (~100 bytes
// a core); 4 MiB bounds both with room to spare.
constexpr uint64_t kMaxProcBytes = uint64_t{4} << 20;

// /proc files report size 0, so read until end of file instead of trusting
// fstat (detail::read_file does the latter).
Result<std::string> read_proc(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(detail::File f, detail::File::open_read(path));
  std::string data;
  char buf[4096];
  for (;;) {
    SLUICE_ASSIGN_OR_RETURN(size_t n, f.read(buf, sizeof(buf)));
    if (n == 0) return data;
    data.append(buf, n);
    if (data.size() > kMaxProcBytes) {
      return resource_exhausted_error(path + ": more than " + std::to_string(kMaxProcBytes) +
                                      " bytes");
    }
  }
}

bool parse_u64(std::string_view text, uint64_t* out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && p == end && !text.empty();
}

// Splits on spaces and tabs, dropping empty pieces.
std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

std::string_view first_line(std::string_view text) {
  return text.substr(0, text.find('\n'));
}

// The value of "Key:\t  123 kB" in /proc/self/status, as a number (the unit
// is left to the caller). Keys match whole: "VmRSS" is not "VmRSSx".
Status status_field(std::string_view status, std::string_view key, uint64_t* out) {
  size_t pos = 0;
  while (pos < status.size()) {
    size_t eol = status.find('\n', pos);
    if (eol == std::string_view::npos) eol = status.size();
    std::string_view line = status.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') {
      continue;
    }
    std::vector<std::string_view> f = split_fields(line.substr(key.size() + 1));
    if (f.empty() || !parse_u64(f[0], out)) {
      return data_loss_error("/proc/self/status: " + std::string(key) + ": not a number: '" +
                             std::string(line) + "'");
    }
    return Status();
  }
  return data_loss_error("/proc/self/status: no " + std::string(key) + " line");
}

// utime and stime (fields 14 and 15) of /proc/self/stat. Field 2 is the
// command name in parentheses and may itself hold spaces and ')' (a thread
// can name itself anything), so fields are counted from the LAST ')'.
Status stat_ticks(std::string_view stat, uint64_t* utime, uint64_t* stime) {
  size_t open = stat.find('(');
  size_t close = stat.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return data_loss_error("/proc/self/stat: no '(comm)' field: '" +
                           std::string(first_line(stat).substr(0, 80)) + "'");
  }
  // After ')' come fields 3 (state) onwards: utime is the 12th, stime the 13th.
  std::vector<std::string_view> f = split_fields(first_line(stat.substr(close + 1)));
  constexpr size_t kUtime = 14 - 3, kStime = 15 - 3;
  if (f.size() <= kStime) {
    return data_loss_error("/proc/self/stat: " + std::to_string(f.size() + 2) +
                           " fields, need at least 15");
  }
  if (!parse_u64(f[kUtime], utime) || !parse_u64(f[kStime], stime)) {
    return data_loss_error("/proc/self/stat: utime/stime not numbers: '" + std::string(f[kUtime]) +
                           "', '" + std::string(f[kStime]) + "'");
  }
  return Status();
}

}  // namespace

Result<ProcessSample> parse_process(std::string_view stat, std::string_view status,
                                    long ticks_per_second) {
  if (ticks_per_second <= 0) {
    return invalid_argument_error("parse_process: ticks_per_second is " +
                                  std::to_string(ticks_per_second) + ", must be positive");
  }
  uint64_t utime = 0, stime = 0, rss_kb = 0, hwm_kb = 0, threads = 0;
  SLUICE_RETURN_IF_ERROR(stat_ticks(stat, &utime, &stime));
  SLUICE_RETURN_IF_ERROR(status_field(status, "VmRSS", &rss_kb));
  SLUICE_RETURN_IF_ERROR(status_field(status, "VmHWM", &hwm_kb));
  SLUICE_RETURN_IF_ERROR(status_field(status, "Threads", &threads));
  ProcessSample s;
  s.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(ticks_per_second);
  s.rss_bytes = rss_kb * 1024;
  s.peak_rss_bytes = hwm_kb * 1024;
  s.threads = static_cast<int>(threads);
  return s;
}

Result<ProcessSample> sample_process() {
  SLUICE_ASSIGN_OR_RETURN(std::string stat, read_proc("/proc/self/stat"));
  SLUICE_ASSIGN_OR_RETURN(std::string status, read_proc("/proc/self/status"));
  return parse_process(stat, status, ::sysconf(_SC_CLK_TCK));
}

// The aggregate "cpu " line: user nice system idle iowait irq softirq steal
// guest guest_nice. guest and guest_nice are already inside user and nice,
// so they are not added again. Kernels before 2.6.11 stop after idle/iowait;
// missing trailing fields count as zero.
Result<CpuTimes> parse_cpu_times(std::string_view proc_stat) {
  size_t pos = 0;
  while (pos < proc_stat.size()) {
    size_t eol = proc_stat.find('\n', pos);
    if (eol == std::string_view::npos) eol = proc_stat.size();
    std::string_view line = proc_stat.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.starts_with("cpu ")) continue;
    std::vector<std::string_view> f = split_fields(line.substr(4));
    if (f.size() < 4) {
      return data_loss_error("/proc/stat: 'cpu' line has " + std::to_string(f.size()) +
                             " fields, need at least 4");
    }
    uint64_t v[8] = {};
    for (size_t i = 0; i < f.size() && i < 8; ++i) {
      if (!parse_u64(f[i], &v[i])) {
        return data_loss_error("/proc/stat: 'cpu' field " + std::to_string(i + 1) +
                               " is not a number: '" + std::string(f[i]) + "'");
      }
    }
    enum { kUser, kNice, kSystem, kIdle, kIowait, kIrq, kSoftirq, kSteal };
    // Real counters are jiffies since boot, far below 2^64; a sum that
    // wraps is a corrupt file, and a wrapped sum would make busy > total.
    CpuTimes t;
    bool wrapped = false;
    for (int k : {kUser, kNice, kSystem, kIrq, kSoftirq, kSteal}) {
      wrapped |= __builtin_add_overflow(t.busy, v[k], &t.busy);
    }
    wrapped |= __builtin_add_overflow(t.busy, v[kIdle], &t.total);
    wrapped |= __builtin_add_overflow(t.total, v[kIowait], &t.total);
    if (wrapped) return data_loss_error("/proc/stat: 'cpu' line's times add up past 2^64");
    return t;
  }
  return data_loss_error("/proc/stat: no 'cpu ' line");
}

Result<CpuTimes> sample_cpu_times() {
  SLUICE_ASSIGN_OR_RETURN(std::string text, read_proc("/proc/stat"));
  return parse_cpu_times(text);
}

}  // namespace sluice
