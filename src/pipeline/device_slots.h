// The device side of the batch ring (PipelineOptions::device >= 0): each
// slot's pinned host memory, its device buffers and events, and the
// staging of a finished slot onto the device on the pipeline's own stream.
//
//   copy mode    the CPU workers write finished samples into the pinned
//                slot; staging copies them to the device output.
//   kernel mode  the workers decode and leave each sample's decoded window
//                and resize tables in the slot's pinned arena; staging
//                copies the arena and runs the fused kernel (crop, resize,
//                flip, normalise, cast, layout) into the device output.
//
// Slot reuse is guarded by events: a slot's host memory is written again
// only after its staging finished reading it (ready), and its device
// buffers are overwritten only after the work the consumer had queued when
// it released the batch (consumed).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/mutex.h"
#include "device/cuda_runtime.h"
#include "device/kernels.h"
#include "image/sample_kernel.h"
#include "sluice/image_ops.h"
#include "sluice/status.h"

namespace sluice::detail {

class DeviceSlots {
 public:
  struct Config {
    int device = 0;
    int slots = 0;
    int batch_size = 0;
    SampleSpec spec;
    bool kernel = false;          // kernel mode (else copy mode)
    size_t arena_per_sample = 0;  // kernel mode: the most one sample may stage
  };
  // kUnavailable without a CUDA runtime and device (or, in kernel mode,
  // without sluice's kernel library); kResourceExhausted where memory runs out.
  static Result<std::unique_ptr<DeviceSlots>> create(const Config& config);
  // What one slot of `config` takes: pinned host bytes and device bytes.
  static void measure(const Config& config, size_t* host_bytes, size_t* device_bytes);
  ~DeviceSlots();
  DeviceSlots(const DeviceSlots&) = delete;
  DeviceSlots& operator=(const DeviceSlots&) = delete;

  // Pinned host memory of slot s: the batch's samples (copy mode) or the
  // arena (kernel mode), host_bytes() long.
  uint8_t* host(int s) const { return slots_[s].host; }
  size_t host_bytes() const { return host_bytes_; }
  // Device bytes one slot holds.
  size_t device_bytes() const { return device_bytes_; }
  // Kernel mode: reserves `bytes` of slot s's arena (thread-safe); returns
  // the offset, or SIZE_MAX when the arena is full. What the device reads
  // (decoded windows, tables) grows from the bottom and is copied; what
  // only the host reads (encoded files for nvJPEG, `host_only`) grows from
  // the top and is not.
  size_t reserve(int s, size_t bytes, bool host_only = false);
  // Starts a new batch in slot s (arena empty).
  void reset_arena(int s) {
    MutexLock lock(&slots_[s].arena_mu);
    slots_[s].arena_bottom = slots_[s].arena_top = 0;
  }

  // Copy mode: copies the first `bytes` of host(s) to the device output.
  // Kernel mode: copies the used arena, then runs `jobs` (their pointer
  // fields hold arena offsets; job k writes sample k of the output).
  // Records the slot's ready event. Asynchronous. `device_src`, where
  // given, holds for each job either nullptr (its pixels are in the arena)
  // or the device address of pixels decoded on the GPU, in stream order
  // before this call.
  Status stage(int s, size_t bytes, std::vector<SampleJob>* jobs,
               const std::vector<const uint8_t*>* device_src = nullptr);
  // The pipeline's stream (a cudaStream_t): staging, and GPU decoding before it.
  device::cudaStream_t stream() const { return stream_; }
  // Waits until everything queued on the stream is done.
  Status synchronize() const;

  void* output(int s) const { return slots_[s].output; }
  void* ready_event(int s) const { return slots_[s].ready; }
  // Copies `bytes` of slot s's output to host memory, after its staging.
  Status copy_to_host(int s, void* dst, size_t bytes) const;
  // Makes `stream` wait for slot s's staging (no host wait).
  Status wait_on(int s, void* stream) const;
  // The consumer is done with slot s once the work it queued on `stream`
  // so far is done (nullptr: the legacy default stream). Waits until the
  // staging has finished reading host(s), and folds its timing into the
  // counters.
  Status release(int s, void* stream);
  // Slot s goes back to the workers without having been handed out.
  Status reclaim(int s);

  struct Counters {
    uint64_t batches = 0;
    uint64_t copy_bytes = 0;
    uint64_t copy_ns = 0;    // device time of the host-to-device copies
    uint64_t kernel_ns = 0;  // device time of the fused kernel
  };
  Counters counters() const;
  int device() const { return config_.device; }
  const device::CudaRuntime& cuda() const { return *cuda_; }

 private:
  struct Slot {
    uint8_t* host = nullptr;
    uint8_t* output = nullptr;
    uint8_t* arena = nullptr;        // device copy of the host arena (kernel mode)
    SampleJob* jobs = nullptr;       // device
    SampleJob* host_jobs = nullptr;  // pinned
    device::cudaEvent_t start = nullptr, copied = nullptr, ready = nullptr, consumed = nullptr;
    Mutex arena_mu;
    // Bytes used from each end.
    size_t arena_bottom SLUICE_GUARDED_BY(arena_mu) = 0;
    size_t arena_top SLUICE_GUARDED_BY(arena_mu) = 0;
    bool timing_pending = false;
    size_t staged_bytes = 0;
    bool has_kernel = false;
  };
  explicit DeviceSlots(const Config& config) : config_(config) {}
  Status settle(Slot& slot);

  Config config_;
  const device::CudaRuntime* cuda_ = nullptr;
  const device::Kernels* kernels_ = nullptr;
  device::cudaStream_t stream_ = nullptr;
  size_t host_bytes_ = 0, device_bytes_ = 0, output_bytes_ = 0;
  std::unique_ptr<Slot[]> slots_;
  mutable std::atomic<uint64_t> batches_{0}, copy_bytes_{0}, copy_ns_{0}, kernel_ns_{0};
};

}  // namespace sluice::detail
