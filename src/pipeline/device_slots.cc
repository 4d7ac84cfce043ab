#include "pipeline/device_slots.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace sluice::detail {
namespace {

using device::cudaSuccess;

constexpr size_t kAlign = 256;
size_t aligned(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

template <typename T>
T* offset_to(uint8_t* base, const T* offset) {
  return reinterpret_cast<T*>(base + reinterpret_cast<uintptr_t>(offset));
}

}  // namespace

void DeviceSlots::measure(const Config& config, size_t* host_bytes, size_t* device_bytes) {
  const size_t bs = static_cast<size_t>(config.batch_size);
  const size_t output = std::max<size_t>(1, bs * sample_bytes(config.spec));
  *host_bytes = config.kernel ? bs * config.arena_per_sample : output;
  *device_bytes =
      aligned(output) + (config.kernel ? aligned(*host_bytes) + bs * sizeof(SampleJob) : 0);
}

Result<std::unique_ptr<DeviceSlots>> DeviceSlots::create(const Config& config) {
  SLUICE_ASSIGN_OR_RETURN(const device::CudaRuntime* cuda, device::CudaRuntime::get());
  std::unique_ptr<DeviceSlots> d(new DeviceSlots(config));
  d->cuda_ = cuda;
  if (config.kernel) {
    SLUICE_ASSIGN_OR_RETURN(d->kernels_, device::Kernels::get());
  }
  device::DeviceGuard guard(*cuda, config.device);  // the caller's device comes back
  SLUICE_RETURN_IF_ERROR(guard.status());
  const size_t bs = static_cast<size_t>(config.batch_size);
  d->output_bytes_ = std::max<size_t>(1, bs * sample_bytes(config.spec));
  measure(config, &d->host_bytes_, &d->device_bytes_);
  SLUICE_RETURN_IF_ERROR(cuda->check(
      cuda->StreamCreateWithFlags(&d->stream_, device::cudaStreamNonBlocking), "cudaStreamCreate"));
  d->slots_ = std::make_unique<Slot[]>(static_cast<size_t>(config.slots));
  for (int s = 0; s < config.slots; ++s) {
    Slot& slot = d->slots_[s];
    void* p = nullptr;
    if (cuda->HostAlloc(&p, d->host_bytes_, device::cudaHostAllocDefault) != cudaSuccess) {
      return resource_exhausted_error(
          fmt::format("cannot pin {} MB of host memory for batch slot {} (lower the memory budget)",
                      d->host_bytes_ >> 20, s));
    }
    slot.host = static_cast<uint8_t*>(p);
    if (cuda->Malloc(&p, d->device_bytes_) != cudaSuccess) {
      return resource_exhausted_error(
          fmt::format("cannot allocate {} MB on {} for batch slot {} (lower the device budget)",
                      d->device_bytes_ >> 20, device::device_name(config.device), s));
    }
    slot.output = static_cast<uint8_t*>(p);
    if (config.kernel) {
      slot.arena = slot.output + aligned(d->output_bytes_);
      slot.jobs = reinterpret_cast<SampleJob*>(slot.arena + aligned(d->host_bytes_));
      if (cuda->HostAlloc(&p, bs * sizeof(SampleJob), device::cudaHostAllocDefault) !=
          cudaSuccess) {
        return resource_exhausted_error("cannot pin host memory for the kernel's job list");
      }
      slot.host_jobs = static_cast<SampleJob*>(p);
    }
    for (device::cudaEvent_t* e : {&slot.start, &slot.copied, &slot.ready}) {
      SLUICE_RETURN_IF_ERROR(
          cuda->check(cuda->EventCreateWithFlags(e, device::cudaEventDefault), "cudaEventCreate"));
    }
    SLUICE_RETURN_IF_ERROR(
        cuda->check(cuda->EventCreateWithFlags(&slot.consumed, device::cudaEventDisableTiming),
                    "cudaEventCreate"));
  }
  return d;
}

DeviceSlots::~DeviceSlots() {
  if (!cuda_) return;
  device::DeviceGuard guard(*cuda_, config_.device);
  if (stream_) cuda_->StreamSynchronize(stream_);
  if (slots_) {
    for (int s = 0; s < config_.slots; ++s) {
      Slot& slot = slots_[s];
      // The consumer may still read the output on its own stream.
      if (slot.consumed) cuda_->EventSynchronize(slot.consumed);
      if (slot.host) cuda_->FreeHost(slot.host);
      if (slot.host_jobs) cuda_->FreeHost(slot.host_jobs);
      if (slot.output) cuda_->Free(slot.output);
      for (device::cudaEvent_t e : {slot.start, slot.copied, slot.ready, slot.consumed}) {
        if (e) cuda_->EventDestroy(e);
      }
    }
  }
  if (stream_) cuda_->StreamDestroy(stream_);
}

size_t DeviceSlots::reserve(int s, size_t bytes, bool host_only) {
  bytes = aligned(bytes);
  Slot& slot = slots_[s];
  MutexLock lock(&slot.arena_mu);
  if (slot.arena_bottom + slot.arena_top + bytes > host_bytes_) return SIZE_MAX;
  if (host_only) {
    slot.arena_top += bytes;
    return host_bytes_ - slot.arena_top;
  }
  size_t at = slot.arena_bottom;
  slot.arena_bottom += bytes;
  return at;
}

Status DeviceSlots::synchronize() const {
  device::DeviceGuard guard(*cuda_, config_.device);
  SLUICE_RETURN_IF_ERROR(guard.status());
  return cuda_->check(cuda_->StreamSynchronize(stream_), "cudaStreamSynchronize");
}

Status DeviceSlots::stage(int s, size_t bytes, std::vector<SampleJob>* jobs,
                          const std::vector<const uint8_t*>* device_src) {
  const device::CudaRuntime& c = *cuda_;
  Slot& slot = slots_[s];
  SLUICE_RETURN_IF_ERROR(c.use_device(config_.device));
  // The consumer's last use of this slot's device buffers comes first.
  SLUICE_RETURN_IF_ERROR(
      c.check(c.StreamWaitEvent(stream_, slot.consumed, 0), "cudaStreamWaitEvent"));
  SLUICE_RETURN_IF_ERROR(c.check(c.EventRecord(slot.start, stream_), "cudaEventRecord"));
  const bool kernel = config_.kernel && jobs != nullptr;
  size_t copy = bytes;
  if (kernel) {
    MutexLock lock(&slot.arena_mu);
    copy = slot.arena_bottom;  // the top holds what only the host reads
  }
  uint8_t* to = kernel ? slot.arena : slot.output;
  if (copy > 0) {
    SLUICE_RETURN_IF_ERROR(
        c.check(c.MemcpyAsync(to, slot.host, copy, device::cudaMemcpyHostToDevice, stream_),
                "host-to-device copy of a batch"));
  }
  size_t n = kernel ? jobs->size() : 0;
  if (kernel && n > 0) {
    const size_t out_bytes = sample_bytes(config_.spec);
    for (size_t k = 0; k < n; ++k) {
      SampleJob j = (*jobs)[k];
      const uint8_t* on_device = device_src ? (*device_src)[k] : nullptr;
      j.src = on_device ? on_device : offset_to(slot.arena, j.src);
      j.x_start = offset_to(slot.arena, j.x_start);
      j.x_weight = offset_to(slot.arena, j.x_weight);
      j.y_start = offset_to(slot.arena, j.y_start);
      j.y_weight = offset_to(slot.arena, j.y_weight);
      j.dst = slot.output + k * out_bytes;
      slot.host_jobs[k] = j;
    }
    SLUICE_RETURN_IF_ERROR(c.check(c.MemcpyAsync(slot.jobs, slot.host_jobs, n * sizeof(SampleJob),
                                                 device::cudaMemcpyHostToDevice, stream_),
                                   "host-to-device copy of the kernel's jobs"));
    copy += n * sizeof(SampleJob);
  }
  SLUICE_RETURN_IF_ERROR(c.check(c.EventRecord(slot.copied, stream_), "cudaEventRecord"));
  for (size_t k = 0; k < n; k += 65535) {
    int count = static_cast<int>(std::min<size_t>(65535, n - k));
    SLUICE_RETURN_IF_ERROR(
        c.check(kernels_->launch_fused_samples(slot.jobs + k, count, config_.spec.width,
                                               config_.spec.height, stream_),
                "fused sample kernel"));
  }
  SLUICE_RETURN_IF_ERROR(c.check(c.EventRecord(slot.ready, stream_), "cudaEventRecord"));
  slot.timing_pending = true;
  slot.staged_bytes = copy;
  slot.has_kernel = n > 0;
  return Status();
}

Status DeviceSlots::copy_to_host(int s, void* dst, size_t bytes) const {
  const device::CudaRuntime& c = *cuda_;
  device::DeviceGuard guard(c, config_.device);
  SLUICE_RETURN_IF_ERROR(guard.status());
  SLUICE_RETURN_IF_ERROR(c.check(c.EventSynchronize(slots_[s].ready), "waiting for a batch"));
  return c.check(c.Memcpy(dst, slots_[s].output, bytes, device::cudaMemcpyDeviceToHost),
                 "device-to-host copy of a batch");
}

Status DeviceSlots::wait_on(int s, void* stream) const {
  const device::CudaRuntime& c = *cuda_;
  device::DeviceGuard guard(c, config_.device);
  SLUICE_RETURN_IF_ERROR(guard.status());
  return c.check(c.StreamWaitEvent(static_cast<device::cudaStream_t>(stream), slots_[s].ready, 0),
                 "cudaStreamWaitEvent on a batch");
}

Status DeviceSlots::settle(Slot& slot) {
  const device::CudaRuntime& c = *cuda_;
  SLUICE_RETURN_IF_ERROR(c.check(c.EventSynchronize(slot.ready), "waiting for a batch's staging"));
  if (slot.timing_pending) {
    slot.timing_pending = false;
    float copy_ms = 0, kernel_ms = 0;
    if (c.EventElapsedTime(&copy_ms, slot.start, slot.copied) == cudaSuccess) {
      copy_ns_ += static_cast<uint64_t>(copy_ms * 1e6);
    }
    if (slot.has_kernel && c.EventElapsedTime(&kernel_ms, slot.copied, slot.ready) == cudaSuccess) {
      kernel_ns_ += static_cast<uint64_t>(kernel_ms * 1e6);
    }
    copy_bytes_ += slot.staged_bytes;
    ++batches_;
  }
  return Status();
}

Status DeviceSlots::release(int s, void* stream) {
  const device::CudaRuntime& c = *cuda_;
  Slot& slot = slots_[s];
  device::DeviceGuard guard(c, config_.device);
  SLUICE_RETURN_IF_ERROR(guard.status());
  SLUICE_RETURN_IF_ERROR(c.check(
      c.EventRecord(slot.consumed, static_cast<device::cudaStream_t>(stream)), "cudaEventRecord"));
  return settle(slot);
}

Status DeviceSlots::reclaim(int s) {
  device::DeviceGuard guard(*cuda_, config_.device);
  SLUICE_RETURN_IF_ERROR(guard.status());
  return settle(slots_[s]);
}

DeviceSlots::Counters DeviceSlots::counters() const {
  return {batches_.load(), copy_bytes_.load(), copy_ns_.load(), kernel_ns_.load()};
}

}  // namespace sluice::detail
