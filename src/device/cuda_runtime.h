// The CUDA runtime, loaded at run time (dlopen), with the project's own
// declarations of the entry points sluice uses: one sluice binary runs on
// machines with and without CUDA, and tests can put a fake runtime in its
// place (SLUICE_CUDART_LIBRARY). The GPU kernels live in a separate
// library (kernels.h) built with nvcc; nothing else in sluice links CUDA.
//
// CUDA's current device is per thread: every thread that calls into the
// runtime first calls use_device().
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::device {

// cuda_runtime_api.h's types and constants, as far as sluice needs them
// (stable since CUDA 10).
using cudaError_t = int;
using cudaStream_t = struct CUstream_st*;
using cudaEvent_t = struct CUevent_st*;
using cudaHostFn_t = void (*)(void* user_data);
inline constexpr cudaError_t cudaSuccess = 0;
inline constexpr cudaError_t cudaErrorNotReady = 600;
inline constexpr int cudaMemcpyHostToDevice = 1;
inline constexpr int cudaMemcpyDeviceToHost = 2;
inline constexpr int cudaMemcpyDeviceToDevice = 3;
inline constexpr unsigned cudaHostAllocDefault = 0;
inline constexpr unsigned cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDefault = 0;
inline constexpr unsigned cudaEventDisableTiming = 2;

struct CudaRuntime {
  std::string library;  // the file that loaded
  int version = 0;      // cudaRuntimeGetVersion: 1000 * major + 10 * minor
  int devices = 0;      // visible devices

  cudaError_t (*GetDeviceCount)(int*) = nullptr;
  cudaError_t (*GetDevice)(int*) = nullptr;
  cudaError_t (*SetDevice)(int) = nullptr;
  cudaError_t (*Malloc)(void**, size_t) = nullptr;
  cudaError_t (*Free)(void*) = nullptr;
  cudaError_t (*HostAlloc)(void**, size_t, unsigned) = nullptr;
  cudaError_t (*FreeHost)(void*) = nullptr;
  cudaError_t (*MemcpyAsync)(void*, const void*, size_t, int, cudaStream_t) = nullptr;
  cudaError_t (*Memcpy)(void*, const void*, size_t, int) = nullptr;
  cudaError_t (*StreamCreateWithFlags)(cudaStream_t*, unsigned) = nullptr;
  cudaError_t (*StreamDestroy)(cudaStream_t) = nullptr;
  cudaError_t (*StreamSynchronize)(cudaStream_t) = nullptr;
  cudaError_t (*StreamWaitEvent)(cudaStream_t, cudaEvent_t, unsigned) = nullptr;
  cudaError_t (*EventCreateWithFlags)(cudaEvent_t*, unsigned) = nullptr;
  cudaError_t (*EventDestroy)(cudaEvent_t) = nullptr;
  cudaError_t (*EventRecord)(cudaEvent_t, cudaStream_t) = nullptr;
  cudaError_t (*EventQuery)(cudaEvent_t) = nullptr;
  cudaError_t (*EventSynchronize)(cudaEvent_t) = nullptr;
  cudaError_t (*EventElapsedTime)(float*, cudaEvent_t, cudaEvent_t) = nullptr;
  cudaError_t (*MemGetInfo)(size_t*, size_t*) = nullptr;
  cudaError_t (*GetLastError)() = nullptr;
  const char* (*GetErrorString)(cudaError_t) = nullptr;

  // The runtime of this process, loaded once: kUnavailable (naming what
  // was tried) where no CUDA runtime loads or no device is visible.
  static Result<const CudaRuntime*> get();

  // kInternal "<what>: <CUDA's message> (error N)" unless e is cudaSuccess.
  Status check(cudaError_t e, std::string_view what) const;
  // Makes `device` current on the calling thread.
  Status use_device(int device) const;
};

// Makes `device` current for a scope and restores the caller's device after:
// for calls made on the consumer's threads (Python, LibTorch), whose
// current device is theirs, not the pipeline's.
class DeviceGuard {
 public:
  DeviceGuard(const CudaRuntime& cuda, int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  const Status& status() const { return status_; }

 private:
  const CudaRuntime& cuda_;
  int previous_ = -1;
  Status status_;
};

// "cpu" -> -1, "cuda" -> 0, "cuda:N" -> N (kInvalidArgument otherwise).
Result<int> parse_device(std::string_view name);
std::string device_name(int device);

}  // namespace sluice::device
