// A checkpoint's description: what was trained (model, classes, input) and
// where training stood (epoch, batches of it done, step, the epoch's
// running sums, the plan that "batches done" refers to). Stored as JSON
// inside the checkpoint; parsed here, without LibTorch, into typed fields,
// so that a hand-edited or damaged description is a clear error naming the
// file and the key, never an exception thrown from deep in a resume.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice::training {

struct CheckpointMeta {
  std::string format = "sluice checkpoint 1";
  std::string model;
  std::vector<std::string> classes;
  // The input the model was trained on (absent in checkpoints of other
  // writers: the reader's defaults then apply).
  std::optional<std::array<int, 2>> image_size;  // width, height
  std::optional<std::array<float, 3>> mean, std;
  int epoch = 0;              // the epoch being trained (0-based)
  uint64_t batches_done = 0;  // of that epoch, per rank
  uint64_t batches_per_epoch = 0;
  int64_t step = 0;
  int world_size = 1;
  // The plan "batches_done" refers to: a mid-epoch resume needs the same.
  std::optional<uint64_t> seed;
  std::optional<int> batch_size;
  std::optional<std::string> order;
  std::optional<uint64_t> records;
  std::string amp, optimizer;
  int epochs = 0;
  // The epoch's running sums: loss, correct, seen, wait and busy seconds.
  std::optional<std::array<double, 5>> running;

  friend bool operator==(const CheckpointMeta&, const CheckpointMeta&) = default;
};

std::string format_checkpoint_meta(const CheckpointMeta& meta);

// kDataLoss naming `path` and the key for text that is not a JSON object,
// or a known key of the wrong type or out of range (negative counts, an
// image size that is not two positive ints). Unknown keys are ignored.
Result<CheckpointMeta> parse_checkpoint_meta(std::string_view text, std::string_view path);

}  // namespace sluice::training
