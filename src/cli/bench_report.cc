#include "cli/bench_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "base/file_util.h"

namespace sluice::cli {

void SeriesRecorder::start(const PipelineStats& stats) {
  t0_ = last_ = Clock::now();
  auto p = sample_process();
  cpu_seconds_ = p.ok() ? p->cpu_seconds : 0;
  auto m = sample_cpu_times();
  machine_ = m.ok() ? *m : CpuTimes{};
  stages_ = stats.stages;
}

ReportSample SeriesRecorder::measure(const PipelineStats& stats, uint64_t images) {
  auto now = Clock::now();
  ReportSample s;
  s.end_seconds = std::chrono::duration<double>(now - t0_).count();
  s.interval_seconds = std::chrono::duration<double>(now - last_).count();
  s.images = images - images_;
  if (auto p = sample_process(); p.ok()) {
    s.process_cpu_seconds = p->cpu_seconds - cpu_seconds_;
    cpu_seconds_ = p->cpu_seconds;
  }
  // Machine CPU stays "unknown" (total 0) rather than wrong when /proc/stat
  // cannot be read or went backwards.
  if (auto m = sample_cpu_times(); m.ok()) {
    if (m->total > machine_.total && m->busy >= machine_.busy) {
      s.machine_busy_ticks = m->busy - machine_.busy;
      s.machine_total_ticks = m->total - machine_.total;
    }
    machine_ = *m;
  }
  for (const StageSnapshot& st : stats.stages) {
    uint64_t busy0 = 0, wait0 = 0;
    for (const StageSnapshot& old : stages_) {
      if (old.name == st.name) {
        busy0 = old.busy_ns;
        wait0 = old.wait_ns;
      }
    }
    s.stages.push_back({st.name, st.busy_ns >= busy0 ? (st.busy_ns - busy0) / 1e9 : 0,
                        st.wait_ns >= wait0 ? (st.wait_ns - wait0) / 1e9 : 0});
  }
  s.workers = stats.workers;
  s.ready_batches = stats.ready_batches;
  s.prefetch = stats.prefetch;
  if (gpu_) s.gpus = gpu_->sample();
  stages_ = stats.stages;
  images_ = images;
  last_ = now;
  return s;
}

void SeriesRecorder::poll(const Pipeline& pipe, uint64_t images) {
  if (Clock::now() - last_ < kInterval) return;
  ReportSample s = measure(pipe.stats(), images);
  if (held_) series_.add(*held_);
  held_ = std::move(s);
}

void SeriesRecorder::finish(const PipelineStats& stats, uint64_t images) {
  bool short_tail = Clock::now() - last_ < kInterval / 2;
  ReportSample s = measure(stats, images);
  if (held_ && short_tail) {
    s = merge_samples(*held_, s);
  } else if (held_) {
    series_.add(*held_);
  }
  held_.reset();
  series_.add(s);
}

Status check_report_path(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return invalid_argument_error(flag + " " + path +
                                  ": is a folder; give a file name such as report.html");
  }
  // Created and removed at once: the page itself is written under a
  // temporary name and renamed at the end (write_file_atomic).
  std::string probe = detail::temp_name_for(path);
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(flag + " " + path, "cannot be written", errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return Status();
}

}  // namespace sluice::cli
