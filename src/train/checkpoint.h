// Checkpoints: one file (LibTorch's archive format) holding the model, the
// optimiser, the loss scaler, the RNG state and a JSON description (model,
// classes, image size and normalisation, where training stood: epoch,
// batches of it done, step, the epoch's running sums, the pipeline's seed
// and world size). Written whole (temporary name + rename).
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <string>

#include "sluice/status.h"
#include "train/checkpoint_meta.h"
#include "train/scaler.h"

namespace sluice::training {

Status write_checkpoint(const std::string& path, const CheckpointMeta& meta,
                        torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                        const LossScaler* scaler);

// Only the description (cheap enough: the archive is read, tensors are not
// copied out). kDataLoss naming the path and key when it is damaged.
Result<CheckpointMeta> read_checkpoint_meta(const std::string& path);

// Loads what `path` holds into the given objects (any may be null, except
// the model); restores the CPU (and CUDA) RNG state when `rng` is true.
Status read_checkpoint(const std::string& path, torch::nn::Module& model,
                       torch::optim::Optimizer* optimizer, LossScaler* scaler, bool rng,
                       const torch::Device& device);

}  // namespace sluice::training
