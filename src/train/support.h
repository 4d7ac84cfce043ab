// The pieces train() and extract() share: the device, autocast, batches as
// tensors, the held-out pipeline, GPU scalars.
#pragma once

#include <c10/util/Exception.h>
#include <torch/types.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "sluice/gpu_monitor.h"
#include "sluice/pipeline.h"
#include "sluice/status.h"
#include "sluice/train.h"

namespace sluice::training {

// A Status carried through code that can only throw (LibTorch callbacks,
// the tensor helpers below), so that it comes back out with its code.
class StatusError : public std::runtime_error {
 public:
  explicit StatusError(Status s) : std::runtime_error(std::string(s.message())), s_(std::move(s)) {}
  const Status& status() const { return s_; }

 private:
  Status s_;
};

// Runs `f` (returning a Result or Status), turning what it throws into a
// Status: a StatusError's own, LibTorch's and others' as kInternal naming
// LibTorch.
template <typename F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const StatusError& e) {
    return e.status();
  } catch (const c10::Error& e) {
    return internal_error(std::string("LibTorch: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return internal_error(std::string("LibTorch: ") + e.what());
  }
}

// "cpu" | "cuda" | "cuda:N"; plain "cuda" means cuda:LOCAL_RANK. A CUDA
// device without a CUDA build of LibTorch or without a GPU is an error.
Result<torch::Device> parse_device(const std::string& name, int local_rank);

// Autocast as a scope: on entry enables it for the device type with the
// dtype (bf16 on CPU or GPU, fp16 on GPU only), on exit restores it.
class AutocastScope {
 public:
  struct Mode {
    bool enabled = false;
    bool cuda = false;
    torch::ScalarType dtype = torch::kFloat;
  };
  explicit AutocastScope(const Mode& mode);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  Mode mode_;
  bool was_enabled_ = false;
  torch::ScalarType was_dtype_ = torch::kFloat;
};
Result<AutocastScope::Mode> autocast_mode(Amp amp, const torch::Device& device);

// The batch as an N x 3 x H x W tensor on `device` for the model: float32,
// float16 or bfloat16 samples as they are (a view of the ring slot on the
// CPU: hold the batch until the step is done), uint8 ones normalised with
// the spec's mean and std. NHWC batches come as channels-last views.
torch::Tensor batch_images(const Batch& batch, const SampleSpec& spec, const torch::Device& device);
torch::Tensor batch_labels(const Batch& batch, const torch::Device& device);

// The held-out pipeline: eval augmentation, storage order, nothing dropped,
// this rank's part. --val given, or the training dataset folder's "val"
// split when it has one; else none (nullptr).
Result<std::unique_ptr<Pipeline>> open_val_pipeline(const TrainOptions& o,
                                                    const PipelineOptions& train_options);

// NVML, opened on first use; nullptr without a driver.
const GpuMonitor* gpu_monitor();

// GPU utilisation and memory of `device` from NVML (loaded at run time),
// as gpu/utilisation and gpu/memory_used_gib; nothing on CPUs or without NVML.
void log_gpu_scalars(const torch::Device& device,
                     const std::function<void(const std::string&, double)>& log);

}  // namespace sluice::training
