// sluice train DATA --ablation: the original team's ladder, reproduced by
// one command. Each rung is a fresh sluice-train process (as the team
// measured: nothing warm carries over) running the same amount of work:
//   1 raw image files, one worker, no prefetch, fp32
//   2 shards, parallel decode, prefetch (workers and prefetch auto)
//   3 + mixed precision (bf16)
//   4 + every local GPU (one rank each)
//   5 + GPU decode (nvJPEG) and the fused GPU kernel
// Rungs that this machine cannot run are skipped, each with its reason.
#pragma once

#include <string>
#include <vector>

namespace sluice::cli {

// `args` are those after `sluice train`, --ablation among them; the rest
// pass through to every rung. Returns the exit status: 0 when every rung
// that could run did, 1 when one failed, 2 for bad usage, 130 when
// interrupted (the rows so far are still printed and written).
int run_train_ablation(const std::vector<std::string>& args);

}  // namespace sluice::cli
