#include "train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <fmt/format.h>
#include <torch/serialize.h>

#include <sstream>

#include "base/file_util.h"

namespace sluice::training {

Status write_checkpoint(const std::string& path, const CheckpointMeta& meta,
                        torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                        const LossScaler* scaler) {
  std::ostringstream bytes;
  try {
    torch::serialize::OutputArchive archive;
    archive.write("meta", c10::IValue(format_checkpoint_meta(meta)));
    torch::serialize::OutputArchive m;
    model.save(m);
    archive.write("model", m);
    if (optimizer != nullptr) {
      torch::serialize::OutputArchive o;
      optimizer->save(o);
      archive.write("optimizer", o);
    }
    if (scaler != nullptr) {
      archive.write("scaler",
                    torch::tensor({scaler->scale(), static_cast<double>(scaler->growth_tracker())},
                                  torch::kDouble));
    }
    {
      at::Generator gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      archive.write("rng_cpu", gen.get_state());
    }
    archive.save_to(bytes);
  } catch (const std::exception& e) {
    return internal_error(fmt::format("{}: cannot serialise the checkpoint: {}", path, e.what()));
  }
  return detail::write_file_atomic(path, bytes.str());
}

namespace {

Status load_archive(const std::string& path, torch::serialize::InputArchive* archive,
                    const torch::Device& device) {
  SLUICE_ASSIGN_OR_RETURN(std::string bytes, detail::read_file(path));
  try {
    archive->load_from(bytes.data(), bytes.size(), device);
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    return data_loss_error(fmt::format("{}: not a sluice checkpoint: {}", path, what));
  }
  return Status();
}

}  // namespace

Result<CheckpointMeta> read_checkpoint_meta(const std::string& path) {
  torch::serialize::InputArchive archive;
  SLUICE_RETURN_IF_ERROR(load_archive(path, &archive, torch::kCPU));
  c10::IValue meta;
  if (!archive.try_read("meta", meta) || !meta.isString()) {
    return data_loss_error(path + ": not a sluice checkpoint (no description)");
  }
  return parse_checkpoint_meta(meta.toStringRef(), path);
}

Status read_checkpoint(const std::string& path, torch::nn::Module& model,
                       torch::optim::Optimizer* optimizer, LossScaler* scaler, bool rng,
                       const torch::Device& device) {
  torch::serialize::InputArchive archive;
  // Tensors land on `device` directly, the optimiser's state included.
  SLUICE_RETURN_IF_ERROR(load_archive(path, &archive, device));
  try {
    torch::serialize::InputArchive m;
    archive.read("model", m);
    model.load(m);
    model.to(device);
    if (optimizer != nullptr) {
      torch::serialize::InputArchive o;
      if (!archive.try_read("optimizer", o)) {
        return data_loss_error(path + ": the checkpoint holds no optimiser state");
      }
      optimizer->load(o);
    }
    if (scaler != nullptr) {
      torch::Tensor s;
      if (archive.try_read("scaler", s) && s.numel() == 2) {
        scaler->restore(s[0].item<double>(), static_cast<int64_t>(s[1].item<double>()));
      }
    }
    if (rng) {
      torch::Tensor state;
      if (archive.try_read("rng_cpu", state)) {
        at::Generator gen = at::detail::getDefaultCPUGenerator();
        std::lock_guard<std::mutex> lock(gen.mutex());
        gen.set_state(state.to(torch::kCPU));
      }
    }
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    return data_loss_error(fmt::format("{}: does not fit this model or optimiser: {}", path, what));
  }
  return Status();
}

}  // namespace sluice::training
