#include "pipeline/run_status.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sluice/telemetry.h"

namespace sluice {

std::string run_status_json(std::string_view job, const RunStatus& run, const PipelineStats& stats,
                            double images_per_second) {
  using json = nlohmann::json;
  json stages = json::object();
  for (const StageSnapshot& s : stats.stages) {
    if (is_worker_stage(s.name)) stages[s.name] = busy_share(s, run.seconds, stats.workers);
  }
  json gpus = json::array();
  for (size_t i = 0; i < run.gpu_samples.size() && i < run.gpu_names.size(); ++i) {
    const GpuSample& g = run.gpu_samples[i];
    gpus.push_back({{"name", run.gpu_names[i]},
                    {"utilization", g.utilization},
                    {"memory_used_bytes", g.memory_used_bytes},
                    {"memory_total_bytes", g.memory_total_bytes}});
  }
  auto proc = sample_process();
  json j = {
      {"format", "sluice status 1"},
      {"time", unix_seconds()},
      {"job", job},
      {"seconds", run.seconds},
      {"images_per_second", images_per_second},
      {"images", run.images},
      {"batches", run.batches},
      {"consumer_wait_share", run.seconds > 0 ? stats.consumer_wait_seconds / run.seconds : 0.0},
      {"stages", stages},
      {"workers", stats.workers},
      {"active_workers", stats.active_workers},
      {"prefetch", stats.prefetch},
      {"ready_batches", stats.ready_batches},
      {"bad_samples", stats.bad_samples},
      {"cpu_cores_busy", run.cpu_cores_busy},
      {"rss_bytes", proc.ok() ? proc->rss_bytes : 0},
      {"verdict", bottleneck_verdict(verdict_input(stats, run.seconds)).text},
      {"gpus", gpus},
      {"done", run.done}};
  if (run.training) {
    const RunStatus::Training& t = *run.training;
    j["epoch"] = t.epoch;
    j["epochs"] = t.epochs;
    j["step"] = t.step;
    j["loss"] = t.loss;
    j["accuracy"] = t.accuracy;
    j["lr"] = t.lr;
  }
  return j.dump() + "\n";
}

bool RunStatusWriter::due(bool done) const {
  if (path_.empty()) return false;
  return done || !wrote_ || Clock::now() - last_ >= std::chrono::milliseconds(500);
}

Status RunStatusWriter::write(const RunStatus& run, const PipelineStats& stats) {
  if (path_.empty()) return Status();
  const auto now = Clock::now();
  // While running, the rate since the previous write (the first: since the
  // start); at the end, the whole run's.
  const bool whole = run.done || !wrote_;
  const double secs = whole ? run.seconds : std::chrono::duration<double>(now - last_).count();
  const uint64_t from = whole ? 0 : std::min(images_at_last_, run.images);
  const std::string text =
      run_status_json(job_, run, stats, secs > 0 ? double(run.images - from) / secs : 0);
  last_ = now;
  wrote_ = true;
  images_at_last_ = run.images;
  Status s = replace_file(text);
  if (!s.ok()) path_.clear();  // said once; the job goes on without it
  return s;
}

Status RunStatusWriter::replace_file(const std::string& text) const {
  const std::string tmp = path_ + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return errno_error(tmp, "cannot create", errno);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_errno = errno;
  if (std::fclose(f) != 0 && ok) return errno_error(tmp, "cannot write", errno);
  if (!ok) return errno_error(tmp, "cannot write", write_errno);
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    return errno_error(path_, "cannot replace", errno);
  }
  return Status();
}

}  // namespace sluice
