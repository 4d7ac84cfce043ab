#include "train/support.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <charconv>

#include "sluice/gpu_monitor.h"

namespace sluice::training {

Result<torch::Device> parse_device(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name != "cuda" && name.rfind("cuda:", 0) != 0) {
    return invalid_argument_error("--device: unknown value '" + name +
                                  "' (expected cpu, cuda or cuda:N)");
  }
  int index = -1;
  if (name.size() > 5) {
    auto [end, ec] = std::from_chars(name.data() + 5, name.data() + name.size(), index);
    if (ec != std::errc() || end != name.data() + name.size() || index < 0) {
      return invalid_argument_error("--device: '" + name + "' is not cuda:N");
    }
  }
  if (!torch::cuda::is_available()) {
    return failed_precondition_error(
        "--device " + name +
        ": this LibTorch sees no CUDA GPU (a CPU-only build, or no driver); `sluice doctor` "
        "says which");
  }
  auto count = static_cast<int>(torch::cuda::device_count());
  // Plain "cuda": this machine's rank picks its GPU; with one GPU visible per
  // process (CUDA_VISIBLE_DEVICES set by the scheduler) that is GPU 0.
  if (index < 0) index = count > 0 ? local_rank % count : 0;
  if (index >= count) {
    return invalid_argument_error(
        fmt::format("--device {}: GPU {} of {} does not exist", name, index, count));
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

Result<AutocastScope::Mode> autocast_mode(Amp amp, const torch::Device& device) {
  AutocastScope::Mode m;
  m.cuda = device.is_cuda();
  switch (amp) {
    case Amp::kOff: return m;
    case Amp::kBFloat16: m.dtype = torch::kBFloat16; break;
    case Amp::kFloat16:
      if (!m.cuda) {
        return invalid_argument_error(
            "--amp fp16 runs on CUDA only (LibTorch's CPU autocast is bf16); use --amp bf16 on "
            "the CPU");
      }
      m.dtype = torch::kHalf;
      break;
  }
  m.enabled = true;
  return m;
}

// LibTorch 2.4 replaced the per-device autocast calls with ones that take
// the device type (the old ones warn, and fail -Werror).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
namespace {
c10::DeviceType autocast_device(bool cuda) {
  return cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
}
bool autocast_enabled(bool cuda) {
  return at::autocast::is_autocast_enabled(autocast_device(cuda));
}
void set_autocast(bool cuda, bool on) {
  at::autocast::set_autocast_enabled(autocast_device(cuda), on);
}
torch::ScalarType autocast_dtype(bool cuda) {
  return at::autocast::get_autocast_dtype(autocast_device(cuda));
}
void set_autocast_dtype(bool cuda, torch::ScalarType t) {
  at::autocast::set_autocast_dtype(autocast_device(cuda), t);
}
}  // namespace
#else
namespace {
bool autocast_enabled(bool cuda) {
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void set_autocast(bool cuda, bool on) {
  if (cuda) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
}
torch::ScalarType autocast_dtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void set_autocast_dtype(bool cuda, torch::ScalarType t) {
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(t);
  } else {
    at::autocast::set_autocast_cpu_dtype(t);
  }
}
}  // namespace
#endif

AutocastScope::AutocastScope(const Mode& mode) : mode_(mode) {
  if (!mode_.enabled) return;
  was_enabled_ = autocast_enabled(mode_.cuda);
  was_dtype_ = autocast_dtype(mode_.cuda);
  set_autocast_dtype(mode_.cuda, mode_.dtype);
  set_autocast(mode_.cuda, true);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!mode_.enabled) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(mode_.cuda, was_enabled_);
  set_autocast_dtype(mode_.cuda, was_dtype_);
}

torch::Tensor batch_images(const Batch& batch, const SampleSpec& spec,
                           const torch::Device& device) {
  torch::ScalarType type = torch::kFloat;
  switch (spec.dtype) {
    case DType::kUint8: type = torch::kByte; break;
    case DType::kFloat32: type = torch::kFloat; break;
    case DType::kFloat16: type = torch::kHalf; break;
    case DType::kBFloat16: type = torch::kBFloat16; break;
  }
  const auto n = static_cast<int64_t>(batch.size());
  void* data = const_cast<void*>(batch.data());  // read only: no op here writes its input
  auto where = torch::TensorOptions().dtype(type);
  if (batch.device() >= 0) {
    // Already on the GPU, written on the pipeline's stream: LibTorch works
    // on the legacy default stream here, which waits for the batch's event
    // (and Batch::release records its own use there before reuse).
    Status s = batch.wait_on(nullptr);
    if (!s.ok()) throw StatusError(std::move(s));
    where =
        where.device(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(batch.device())));
  }
  torch::Tensor x;
  if (spec.layout == Layout::kNCHW) {
    x = torch::from_blob(data, {n, 3, spec.height, spec.width}, where);
  } else {
    x = torch::from_blob(data, {n, spec.height, spec.width, 3}, where).permute({0, 3, 1, 2});
  }
  if (device.is_cuda() && batch.device() < 0) x = x.to(device, /*non_blocking=*/true);
  // Half-precision batches halve the copy; the model takes float32 (autocast
  // casts again where it runs in lower precision).
  if (type == torch::kHalf || type == torch::kBFloat16) x = x.to(torch::kFloat);
  if (type == torch::kByte) {
    auto opts = torch::TensorOptions().dtype(torch::kFloat).device(device);
    torch::Tensor mean = torch::tensor({spec.mean[0], spec.mean[1], spec.mean[2]}, opts);
    torch::Tensor std = torch::tensor({spec.std[0], spec.std[1], spec.std[2]}, opts);
    x = (x.to(torch::kFloat).div(255.0f) - mean.view({1, 3, 1, 1})) / std.view({1, 3, 1, 1});
  }
  return x;
}

torch::Tensor batch_labels(const Batch& batch, const torch::Device& device) {
  // A copy: labels are tiny, and the loss must not see the slot reused.
  torch::Tensor y = torch::from_blob(const_cast<int64_t*>(batch.labels()),
                                     {static_cast<int64_t>(batch.size())}, torch::kLong)
                        .clone();
  return device.is_cuda() ? y.to(device) : y;
}

Result<std::unique_ptr<Pipeline>> open_val_pipeline(const TrainOptions& o,
                                                    const PipelineOptions& train_options) {
  if (!o.validate) return std::unique_ptr<Pipeline>();
  PipelineOptions v = train_options;
  v.augment = AugmentMode::kEval;
  v.order = Order::kNone;
  v.drop_last = false;
  v.trace = false;
  if (!o.val_sources.empty()) {
    v.sources = o.val_sources;
    // A dataset folder given with --val: its val split (or its only one).
    v.split = o.val_split;
    auto p = Pipeline::create(v);
    if (!p.ok() && p.status().code() == StatusCode::kNotFound) {
      v.split = "train";
      auto q = Pipeline::create(v);
      if (q.ok()) return q;
    }
    if (!p.ok()) return p.status().with_prefix("--val");
    return p;
  }
  // The training dataset's own val split, when its dataset.json (in a
  // folder or at an s3:// or http(s):// location) has one.
  if (train_options.sources.size() != 1 || train_options.split == o.val_split) {
    return std::unique_ptr<Pipeline>();
  }
  auto manifest = read_manifest(train_options.sources[0]);
  if (!manifest.ok() || manifest->splits.count(o.val_split) == 0) {
    return std::unique_ptr<Pipeline>();
  }
  v.split = o.val_split;
  auto p = Pipeline::create(v);
  if (!p.ok() && p.status().code() == StatusCode::kNotFound) return std::unique_ptr<Pipeline>();
  return p;
}

const GpuMonitor* gpu_monitor() {
  // Opened once, kept for the process; absent NVML means no GPU figures.
  static GpuMonitor* monitor = [] {
    auto m = GpuMonitor::open();
    return m.ok() ? m->release() : nullptr;
  }();
  return monitor;
}

void log_gpu_scalars(const torch::Device& device,
                     const std::function<void(const std::string&, double)>& log) {
  if (!device.is_cuda() || gpu_monitor() == nullptr) return;
  std::vector<GpuSample> samples = gpu_monitor()->sample();
  // NVML numbers every GPU; CUDA_VISIBLE_DEVICES may have renumbered them,
  // so take the device's index only where it exists.
  size_t i = static_cast<size_t>(device.index());
  if (i >= samples.size()) return;
  if (samples[i].utilization >= 0) log("gpu/utilisation", samples[i].utilization / 100.0);
  log("gpu/memory_used_gib", static_cast<double>(samples[i].memory_used_bytes) / (1ull << 30));
}

}  // namespace sluice::training

namespace sluice {

std::string torch_build_info() {
  std::string s = std::string("LibTorch ") + TORCH_VERSION;
  if (at::hasCUDA()) {
    return s + fmt::format(", CUDA {}", at::detail::getCUDAHooks().versionCUDART());
  }
  return s + (at::detail::getCUDAHooks().hasCUDART() ? ", CUDA runtime, no GPU" : ", CPU only");
}

}  // namespace sluice
