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
  std::string gpu;  // the driver's name for it, e.g. "NVIDIA A10G" ("" when not recorded)
  int world_size = 1;
  double images_per_second = 0;  // all ranks together
};

// Errors name the file and the field. Refuses other sluice documents by
// their "format", runs on the CPU, and runs without a positive rate.
Result<TrainRun> parse_train_summary(std::string_view json, std::string_view name);

// The catalogue type (data/gpus.json names) a driver's GPU name is, e.g.
// "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA A100-SXM4-40GB" -> "A100-40GB",
// "NVIDIA A10G" -> "A10"; "" when none.
std::string catalogue_gpu(std::string_view driver_name);

}  // namespace sluice
