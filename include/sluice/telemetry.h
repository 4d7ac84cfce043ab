// Telemetry: where the time goes. Counters and timers per pipeline stage,
// process CPU and memory from /proc, a bottleneck verdict in words, and
// exporters (JSON lines, TensorBoard event files).
//
// Overhead: a stage update is a few relaxed atomic adds on the stage's own
// cache line; a timer is two steady_clock reads (~20 ns each). Per sample
// that is well under 1 % of a decode (~1 ms).
//
// Thread safety: StageStats::add*, snapshot() and Telemetry::snapshot() may
// be called from any thread at any time. Telemetry::stage() registers a stage
// and must be called before workers start (setup), returning a reference
// that stays valid for the Telemetry's lifetime. Exporters are one-thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice {

inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// What a stage did: items and bytes through it, time spent working, and
// time spent waiting (for input, or for room downstream).
struct StageSnapshot {
  std::string name;
  uint64_t items = 0;
  uint64_t bytes = 0;
  uint64_t busy_ns = 0;
  uint64_t wait_ns = 0;
};

class alignas(64) StageStats {
 public:
  explicit StageStats(std::string name) : name_(std::move(name)) {}
  void add(uint64_t items, uint64_t bytes, uint64_t busy_ns) {
    items_.fetch_add(items, std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
    busy_ns_.fetch_add(busy_ns, std::memory_order_relaxed);
  }
  void add_wait(uint64_t wait_ns) { wait_ns_.fetch_add(wait_ns, std::memory_order_relaxed); }
  StageSnapshot snapshot() const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::atomic<uint64_t> items_{0}, bytes_{0}, busy_ns_{0}, wait_ns_{0};
};

// Adds the time between construction and destruction to a stage as busy
// time (with the items and bytes given to done()).
class StageTimer {
 public:
  explicit StageTimer(StageStats& stats) : stats_(stats), start_(now_ns()) {}
  ~StageTimer() { stats_.add(items_, bytes_, now_ns() - start_); }
  void done(uint64_t items, uint64_t bytes) {
    items_ = items;
    bytes_ = bytes;
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  StageStats& stats_;
  uint64_t start_;
  uint64_t items_ = 1, bytes_ = 0;
};

// A registry of stages.
class Telemetry {
 public:
  // Returns the stage called `name`, creating it (setup only; see above).
  StageStats& stage(std::string_view name);
  std::vector<StageSnapshot> snapshot() const;

 private:
  std::deque<StageStats> stages_;  // deque: references stay valid
};

// CPU and memory of this process.
struct ProcessSample {
  double cpu_seconds = 0;       // user + system, all threads
  uint64_t rss_bytes = 0;       // resident now
  uint64_t peak_rss_bytes = 0;  // VmHWM
  int threads = 0;
};

// Reads /proc/self/stat and /proc/self/status.
Result<ProcessSample> sample_process();
// Parses their text (tests feed fakes): fields 14 (utime) and 15 (stime) of
// stat in clock ticks; VmRSS, VmHWM (kB) and Threads of status.
Result<ProcessSample> parse_process(std::string_view stat, std::string_view status,
                                    long ticks_per_second);

// Whole-machine CPU use from /proc/stat (for "CPU utilisation"): busy share
// of all cores between two samples.
struct CpuTimes {
  uint64_t busy = 0, total = 0;  // clock ticks summed over cores
};
Result<CpuTimes> sample_cpu_times();
Result<CpuTimes> parse_cpu_times(std::string_view proc_stat);

// The pipeline's stages that its workers run (read, decode, augment...):
// all but "batch" (the consumer's) and "idle" (the workers' wait for a
// free slot). The verdict weighs these.
bool is_worker_stage(std::string_view name);

// Inputs of the verdict, all over the same wall-clock interval.
struct VerdictInput {
  double wall_seconds = 0;
  // Time the consumer (the trainer, or bench) spent waiting for batches.
  double consumer_wait_seconds = 0;
  int workers = 1;
  std::vector<StageSnapshot> stages;  // worker stages: busy summed over workers
};

struct Verdict {
  // "input-bound", "consumer-bound" or "balanced".
  std::string kind;
  std::string bottleneck;  // busiest worker stage, e.g. "decode"
  // One sentence, e.g. "input-bound: the consumer waited 41 % of the time;
  // decode is 97 % busy on 2 workers".
  std::string text;
};

// input-bound when the consumer waited more than 10 % of the time,
// consumer-bound when workers were mostly idle (waiting for room) while the
// consumer never waited, balanced otherwise. A stage's busy share is its
// busy time / (wall * workers).
Verdict bottleneck_verdict(const VerdictInput& input);

// Seconds since the Unix epoch (the system clock): what TensorBoard's Event
// wall_time and the JSON lines' "time" hold.
double unix_seconds();

// One JSON object per line: {"step": s, "time": t, "<name>": value, ...},
// step and time first, then names in map order. Each line is one write(2),
// so readers see whole lines as they come. The names "step" and "time" are
// refused (kInvalidArgument); NaN and infinities are written as null.
class JsonLinesWriter {
 public:
  // Truncates `path`; with append = true keeps its lines and adds after
  // them (a resumed run goes on in the same file).
  static Result<std::unique_ptr<JsonLinesWriter>> create(const std::string& path,
                                                         bool append = false);
  Status write(int64_t step, double wall_time, const std::map<std::string, double>& values);
  Status close();
  ~JsonLinesWriter();

 private:
  JsonLinesWriter() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// TensorBoard scalars: events.out.tfevents.<secs>.<host>.<pid>.sluice in
// `logdir`, TFRecord-framed Event protos written through the record layer
// (first a file_version "brain.Event:2" event), readable by TensorBoard
// while it grows. Scalars carry the "scalars" plugin name. add_scalar
// buffers; flush() makes what was added visible to readers. A second
// writer in the same folder and second gets "<pid>.1.sluice" (and so on)
// instead of truncating the first.
class TensorBoardWriter {
 public:
  static Result<std::unique_ptr<TensorBoardWriter>> create(const std::string& logdir);
  Status add_scalar(const std::string& tag, float value, int64_t step, double wall_time);
  Status flush();
  Status close();
  const std::string& path() const;
  ~TensorBoardWriter();

 private:
  TensorBoardWriter() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice
