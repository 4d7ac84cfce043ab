// The worker autotuner (workers = auto): how many of the pipeline's worker
// threads may claim work. It judges windows of batches by the share of
// wall time the consumer spent waiting for them, and moves the active count
// by one: up while the consumer waits (input is the bottleneck), down while
// it never waits (a worker fewer leaves a core to the trainer), and back up
// at once if that makes the consumer wait. After a step up it holds still
// for a while, so that one slow window does not make it oscillate.
//
// Pure: time comes in as arguments, so a test drives it with a fake clock.
// Not thread-safe: the pipeline calls it under its mutex.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::detail {

class Autotuner {
 public:
  // The window is max(4, prefetch) batches. Disabled, all workers stay
  // active and on_batch never changes anything.
  Autotuner(int workers, int prefetch, bool enabled, uint64_t now_ns);

  // A batch was handed out at `now_ns` after the consumer waited `waited_ns`
  // for it. True when the active count changed (wake parked workers).
  bool on_batch(uint64_t now_ns, uint64_t waited_ns);

  int active() const { return active_; }
  // Why the count is what it is, once it has changed; empty before.
  const std::string& note() const { return note_; }

  // The thresholds, on the consumer's wait share of a window.
  static constexpr double kWaitingShare = 0.05;  // above: one worker more
  static constexpr double kCalmShare = 0.01;     // below, twice running: one fewer
  static constexpr int kCalmWindows = 2;
  static constexpr int kFreezeWindows = 8;  // no step down this long after a step up

 private:
  const int workers_;
  const int prefetch_;
  const bool enabled_;
  int active_;
  uint64_t window_start_ns_;
  uint64_t window_wait_ns_ = 0;
  uint64_t window_batches_ = 0;
  int calm_windows_ = 0;
  int freeze_windows_ = 0;
  std::string note_;
};

}  // namespace sluice::detail
