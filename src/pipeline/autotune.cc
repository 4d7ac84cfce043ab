#include "pipeline/autotune.h"

#include <fmt/format.h>

#include <algorithm>

namespace sluice::detail {

Autotuner::Autotuner(int workers, int prefetch, bool enabled, uint64_t now_ns)
    : workers_(workers),
      prefetch_(prefetch),
      enabled_(enabled),
      active_(workers),
      window_start_ns_(now_ns) {}

bool Autotuner::on_batch(uint64_t now_ns, uint64_t waited_ns) {
  window_wait_ns_ += waited_ns;
  const auto window = static_cast<uint64_t>(std::max(4, prefetch_));
  if (!enabled_ || ++window_batches_ < window) return false;
  const double wall = static_cast<double>(now_ns - window_start_ns_);
  const double wait_share = wall > 0 ? window_wait_ns_ / wall : 0;
  const int before = active_;
  if (freeze_windows_ > 0) --freeze_windows_;
  if (wait_share > kWaitingShare) {
    calm_windows_ = 0;
    if (active_ < workers_) {
      ++active_;
      freeze_windows_ = kFreezeWindows;
    }
  } else if (wait_share < kCalmShare && ++calm_windows_ >= kCalmWindows && freeze_windows_ == 0 &&
             active_ > 1) {
    --active_;
    calm_windows_ = 0;
  }
  if (active_ != before) {
    note_ = fmt::format(
        "workers {} of {} active (autotune: the consumer waited {:.0f} % of the last {} batches), "
        "prefetch {}",
        active_, workers_, 100 * wait_share, window, prefetch_);
  }
  window_start_ns_ = now_ns;
  window_wait_ns_ = 0;
  window_batches_ = 0;
  return active_ != before;
}

}  // namespace sluice::detail
