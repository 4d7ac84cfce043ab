#include "device/cuda_runtime.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <charconv>
#include <mutex>

#include "device/libraries.h"

namespace sluice::device {
namespace {

// Binds one loaded library; kUnavailable with the reason where it is not a
// usable runtime (entry points missing, no device, a driver too old).
Result<CudaRuntime> bind_runtime(void* h, const std::string& which) {
  CudaRuntime r;
  r.library = which;
  bool complete = true;
  auto bind = [&](auto& fn, const char* name) {
    fn = detail::sym<std::remove_reference_t<decltype(fn)>>(h, name);
    complete = complete && fn != nullptr;
  };
  int (*runtime_version)(int*) = nullptr;
  bind(runtime_version, "cudaRuntimeGetVersion");
  bind(r.GetDeviceCount, "cudaGetDeviceCount");
  bind(r.GetDevice, "cudaGetDevice");
  bind(r.SetDevice, "cudaSetDevice");
  bind(r.Malloc, "cudaMalloc");
  bind(r.Free, "cudaFree");
  bind(r.HostAlloc, "cudaHostAlloc");
  bind(r.FreeHost, "cudaFreeHost");
  bind(r.MemcpyAsync, "cudaMemcpyAsync");
  bind(r.Memcpy, "cudaMemcpy");
  bind(r.StreamCreateWithFlags, "cudaStreamCreateWithFlags");
  bind(r.StreamDestroy, "cudaStreamDestroy");
  bind(r.StreamSynchronize, "cudaStreamSynchronize");
  bind(r.StreamWaitEvent, "cudaStreamWaitEvent");
  bind(r.EventCreateWithFlags, "cudaEventCreateWithFlags");
  bind(r.EventDestroy, "cudaEventDestroy");
  bind(r.EventRecord, "cudaEventRecord");
  bind(r.EventQuery, "cudaEventQuery");
  bind(r.EventSynchronize, "cudaEventSynchronize");
  bind(r.EventElapsedTime, "cudaEventElapsedTime");
  bind(r.MemGetInfo, "cudaMemGetInfo");
  bind(r.GetLastError, "cudaGetLastError");
  bind(r.GetErrorString, "cudaGetErrorString");
  if (!complete) return unavailable_error(which + " lacks CUDA runtime entry points sluice uses");
  if (runtime_version(&r.version) != cudaSuccess) {
    return unavailable_error(which + ": cudaRuntimeGetVersion failed");
  }
  cudaError_t e = r.GetDeviceCount(&r.devices);
  if (e != cudaSuccess || r.devices <= 0) {
    r.GetLastError();
    return unavailable_error(fmt::format("{}: no CUDA device is visible ({})", which,
                                         e != cudaSuccess ? r.GetErrorString(e) : "0 devices"));
  }
  return r;
}

// The first runtime that sees a device. A runtime already in the process
// (PyTorch's, say) comes first, so the process keeps one; then the search
// list in order, going on past one the driver is too old for.
Result<CudaRuntime> load() {
  const std::vector<std::string> candidates = detail::cudart_candidates();
  std::string why;
  for (int flags : {RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD, RTLD_NOW | RTLD_LOCAL}) {
    for (const std::string& c : candidates) {
      void* h = ::dlopen(c.c_str(), flags);
      if (!h) continue;
      auto r = bind_runtime(h, c);
      if (r.ok()) return r;  // stays loaded for the life of the process
      why += (why.empty() ? "" : "; ") + std::string(r.status().message());
    }
  }
  if (!why.empty()) return unavailable_error(why);
  std::string tried;
  for (const std::string& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
  return unavailable_error(
      fmt::format("no CUDA runtime loads (tried {}; set SLUICE_CUDART_LIBRARY)", tried));
}

}  // namespace

Result<const CudaRuntime*> CudaRuntime::get() {
  static std::once_flag once;
  static Result<CudaRuntime>* loaded = nullptr;
  std::call_once(once, [] { loaded = new Result<CudaRuntime>(load()); });
  if (!loaded->ok()) return loaded->status();
  return &loaded->value();
}

Status CudaRuntime::check(cudaError_t e, std::string_view what) const {
  if (e == cudaSuccess) return Status();
  return internal_error(fmt::format("{}: {} (CUDA error {})", what, GetErrorString(e), e));
}

Status CudaRuntime::use_device(int device) const {
  if (device < 0 || device >= devices) {
    return invalid_argument_error(fmt::format("cuda:{} does not exist ({} device{} visible)",
                                              device, devices, devices == 1 ? "" : "s"));
  }
  return check(SetDevice(device), fmt::format("cudaSetDevice({})", device));
}

DeviceGuard::DeviceGuard(const CudaRuntime& cuda, int device) : cuda_(cuda) {
  if (cuda.GetDevice(&previous_) != cudaSuccess) previous_ = -1;
  status_ = previous_ == device ? Status() : cuda.use_device(device);
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cuda_.SetDevice(previous_);
}

Result<int> parse_device(std::string_view name) {
  if (name == "cpu") return -1;
  if (name == "cuda") return 0;
  if (name.rfind("cuda:", 0) == 0) {
    std::string_view n = name.substr(5);
    int d = -1;
    auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), d);
    if (ec == std::errc() && p == n.data() + n.size() && d >= 0 && d < 1024) return d;
  }
  return invalid_argument_error(
      fmt::format("device must be cpu, cuda or cuda:N, not '{}'", std::string(name)));
}

std::string device_name(int device) {
  return device < 0 ? "cpu" : fmt::format("cuda:{}", device);
}

}  // namespace sluice::device
