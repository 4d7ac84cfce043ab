// Reads what advise needs from a `sluice train --summary` file
// (docs/formats.md, "Training summary"): the model, precision, GPU count
// and images/s of a run on the user's own machine.
#pragma once

#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice {

struct TrainRun {
  std::string model, amp, device;
  int world_size = 1;
  double images_per_second = 0;  // all ranks together
};

// Errors name the file and the field. Refuses other sluice documents by
// their "format", runs on the CPU, and runs without a positive rate.
Result<TrainRun> parse_train_summary(std::string_view json, std::string_view name);

}  // namespace sluice
