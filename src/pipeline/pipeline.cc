// The pipeline's public face: create() (its steps wire the ring, the
// sample work, the device side and the threads together), next(),
// restore(), stats(), and Batch. The executor is pipeline_impl.h and
// executor.cc.
#include "sluice/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <thread>

#include "base/mutex.h"
#include "device/jpeg_tiers.h"
#include "pipeline/autotune.h"
#include "pipeline/device_slots.h"
#include "pipeline/gpu_stage.h"
#include "pipeline/pipeline_impl.h"
#include "pipeline/ring.h"
#include "pipeline/sample_work.h"
#include "pipeline/sizing.h"
#include "pipeline/source.h"

namespace sluice {
namespace {

using detail::Slot;
using detail::SlotFree;
using detail::SlotState;

}  // namespace

// ---- Batch -----------------------------------------------------------------

Batch::Batch(Batch&& other) noexcept {
  *this = std::move(other);
}

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    slot_ = std::exchange(other.slot_, -1);
    data_ = other.data_;
    labels_ = other.labels_;
    ids_ = other.ids_;
    size_ = other.size_;
    sample_bytes_ = other.sample_bytes_;
    epoch_ = other.epoch_;
    index_ = other.index_;
    spec_ = other.spec_;
    device_ = other.device_;
    ready_event_ = other.ready_event_;
  }
  return *this;
}

Batch::~Batch() {
  release();
}

void Batch::release() {
  release_after(nullptr);
}

void Batch::release_after(void* stream) {
  if (owner_) owner_->release(slot_, stream);
  owner_ = nullptr;
  slot_ = -1;
}

Status Batch::copy_to_host(void* dst) const {
  if (device_ < 0) {
    std::memcpy(dst, data_, bytes());
    return Status();
  }
  if (!owner_) return failed_precondition_error("the batch was released");
  return owner_->impl_->dev->copy_to_host(slot_, dst, bytes());
}

Status Batch::wait_on(void* stream) const {
  if (device_ < 0 || !owner_) return Status();
  return owner_->impl_->dev->wait_on(slot_, stream);
}

std::string SampleEvent::to_string() const {
  if (offset < 0) return source + ": " + reason;
  return fmt::format("{}: offset {}: {}", source, offset, reason);
}

// ---- Pipeline --------------------------------------------------------------

Pipeline::Pipeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Pipeline::~Pipeline() {
  // Shutdown order: stop and join the workers, then free the slots.
  for (auto& t : impl_->threads) t.request_stop();
  impl_->threads.clear();
  // nvJPEG's arena is read by kernels still queued on the stream.
  if (impl_->dev) {
    (void)impl_->dev->synchronize();
    device::DeviceGuard guard(impl_->dev->cuda(), impl_->dev->device());
    impl_->jpeg.reset();
  }
}

namespace {

Status validate(const PipelineOptions& o) {
  if (o.batch_size < 1) return invalid_argument_error("batch_size must be at least 1");
  if (o.sample.width < 1 || o.sample.height < 1 || o.sample.width > 16384 ||
      o.sample.height > 16384) {
    return invalid_argument_error("image size must be within 1..16384");
  }
  if (o.world_size < 1) return invalid_argument_error("world_size must be at least 1");
  if (o.rank < 0 || o.rank >= o.world_size) {
    return invalid_argument_error(
        fmt::format("rank {} is outside 0..{}", o.rank, o.world_size - 1));
  }
  if (o.workers < 0 || o.workers > 1024)
    return invalid_argument_error("workers must be within 0..1024");
  if (o.prefetch < 0 || o.prefetch > 1024)
    return invalid_argument_error("prefetch must be within 0..1024");
  if (o.keys.image.empty() && o.keys.label != FeatureKeys{}.label) {
    return invalid_argument_error("label_key needs image_key (without it the keys are detected)");
  }
  for (float s : o.sample.std) {
    if (!(s > 0)) return invalid_argument_error("std must be positive");
  }
  return Status();
}

// On a device: whether it is there, and where the augmentation runs.
Status check_device(const PipelineOptions& o, bool* kernel) {
  const std::string where = "--device " + device::device_name(o.device);
  auto cuda = device::CudaRuntime::get();
  if (!cuda.ok())
    return Status(cuda.status().code(), where + ": " + std::string(cuda.status().message()));
  if (o.device >= (*cuda)->devices) {
    return invalid_argument_error(fmt::format("{}: only {} CUDA device{} visible", where,
                                              (*cuda)->devices,
                                              (*cuda)->devices == 1 ? " is" : "s are"));
  }
  *kernel = false;
  if (o.gpu_augment != Use::kOff) {
    auto kernels = device::Kernels::get();
    if (kernels.ok()) {
      *kernel = true;
    } else if (o.gpu_augment == Use::kOn) {
      return Status(kernels.status().code(),
                    "--gpu-augment on: " + std::string(kernels.status().message()));
    }
  }
  return Status();
}

// With the GPU kernel: nvJPEG's tiers where nvJPEG loads (gpu_decode auto
// or on); `note` says what decodes, or why the CPU does.
Status open_gpu_decoder(const PipelineOptions& o, std::unique_ptr<device::GpuJpegDecoder>* out,
                        std::string* note) {
  if (o.gpu_decode == Use::kOff) {
    *note = "off (--gpu-decode off)";
    return Status();
  }
  SLUICE_ASSIGN_OR_RETURN(const device::CudaRuntime* cuda, device::CudaRuntime::get());
  device::GpuJpegOptions jo;
  // Auto: the tuner starts from the decoder's own default share.
  if (o.hardware_share >= 0) jo.hardware_share = o.hardware_share;
  jo.adaptive = o.hardware_share < 0;
  jo.max_batch = std::max(1, std::min(o.batch_size, 256));
  SLUICE_ASSIGN_OR_RETURN(auto decoder, device::GpuJpegDecoder::create(cuda, o.device, jo));
  device::GpuJpegStats st = decoder->stats();
  if (!st.nvjpeg_available) {
    if (o.gpu_decode == Use::kOn) {
      return unavailable_error("--gpu-decode on: nvJPEG is not usable: " + st.nvjpeg_library);
    }
    *note = "off: " + st.nvjpeg_library;
    return Status();
  }
  *out = std::move(decoder);
  return Status();
}

}  // namespace

// GPU decoding: an encoded file (at most half a share), its tables and,
// should the GPU refuse it, its CPU-decoded window all fit two shares.
Status Pipeline::Impl::plan_device(DevicePlan* plan) {
  arena_sample = detail::arena_per_sample(o.sample);
  if (kernel) SLUICE_RETURN_IF_ERROR(open_gpu_decoder(o, &jpeg, &jpeg_note));
  plan->config = {.device = o.device,
                  .slots = 0,
                  .batch_size = o.batch_size,
                  .spec = o.sample,
                  .kernel = kernel,
                  .arena_per_sample = jpeg ? 2 * arena_sample : arena_sample};
  size_t host = 0;
  detail::DeviceSlots::measure(plan->config, &host, &plan->slot_bytes);
  const uint64_t bs = static_cast<uint64_t>(o.batch_size);
  slot_bytes = host + bs * (sizeof(int64_t) + sizeof(uint64_t) + 1 +
                            (kernel ? sizeof(detail::SampleJob) : 0));
  plan->fit = o.device_memory_budget / plan->slot_bytes;
  if (plan->fit < 2) {
    return invalid_argument_error(fmt::format(
        "device memory budget of {} MB is too small: two batch slots need {} MB on {}",
        o.device_memory_budget >> 20, (2 * plan->slot_bytes) >> 20, device::device_name(o.device)));
  }
  return Status();
}

// Workers and batch slots (pipeline/sizing.h), said in `tuning`.
Status Pipeline::Impl::size_ring(const DevicePlan& plan) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const uint64_t read_ahead = source->kind() == "remote shards" ? o.read_ahead_bytes : 0;
  SLUICE_ASSIGN_OR_RETURN(detail::RingSize r,
                          detail::size_ring(o, slot_bytes, plan.fit, cores, read_ahead));
  workers = r.workers;
  prefetch = r.prefetch;
  tuning = std::move(r.tuning);
  return Status();
}

// The ring's device side, once the number of slots is known.
Status Pipeline::Impl::open_device(DevicePlan* plan) {
  if (o.prefetch > 0 && static_cast<uint64_t>(prefetch) > plan->fit) {
    return invalid_argument_error(
        fmt::format("prefetch {} needs {} MB on {}, over the device memory budget of {} MB",
                    prefetch, (prefetch * plan->slot_bytes) >> 20, device::device_name(o.device),
                    o.device_memory_budget >> 20));
  }
  plan->config.slots = prefetch;
  SLUICE_ASSIGN_OR_RETURN(dev, detail::DeviceSlots::create(plan->config));
  if (kernel) arena.emplace(dev.get(), o.sample, arena_sample);
  if (jpeg) {
    device::GpuJpegStats js = jpeg->stats();
    jpeg_note = "nvJPEG " + js.nvjpeg_library;
    gpu_stage.emplace(o, jpeg.get(), dev.get(), &*arena);
    gpu_stage->follow(js);
    MutexLock lock(&mu);  // no thread runs yet; for the analysis
    jpeg_stats = std::move(js);
  }
  return Status();
}

// Each slot's memory: the device side's pinned host buffer, or a mapping.
Status Pipeline::Impl::map_slots() {
  const size_t bs = static_cast<size_t>(o.batch_size);
  slots.resize(static_cast<size_t>(prefetch));
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& s = slots[i];
    if (dev) {
      s.data = dev->host(static_cast<int>(i));
      if (kernel) s.jobs.resize(bs);
      if (jpeg) s.encoded.resize(bs);
    } else {
      size_t bytes = std::max<size_t>(1, bs * sample_bytes);
      s.mapped = std::unique_ptr<uint8_t[], SlotFree>(detail::map_slot(bytes), SlotFree{bytes});
      if (!s.mapped) {
        return resource_exhausted_error(
            fmt::format("cannot map a batch slot of {} MB", bytes >> 20));
      }
      s.data = s.mapped.get();
    }
    s.labels.assign(bs, -1);
    s.ids.assign(bs, 0);
    s.valid.assign(bs, 1);
  }
  return Status();
}

// The stages, the tuner, epoch 0's plan, then the threads.
void Pipeline::Impl::start() {
  read_stage = &telemetry.stage("read");
  decode_stage = &telemetry.stage("decode");
  augment_stage = &telemetry.stage("augment");
  batch_stage = &telemetry.stage("batch");
  idle_stage = &telemetry.stage("idle");
  {
    MutexLock lock(&mu);
    tuner.emplace(workers, prefetch, /*enabled=*/o.workers == 0, now_ns());
    reset(0, 0);
  }
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([this, w](std::stop_token st) { worker(st, w); });
  }
  if (dev) threads.emplace_back([this](std::stop_token st) { stager(st); });
}

Result<std::unique_ptr<Pipeline>> Pipeline::create(const PipelineOptions& options) {
  SLUICE_RETURN_IF_ERROR(validate(options));
  auto impl = std::make_unique<Impl>();
  Impl& m = *impl;
  m.o = options;
  SLUICE_ASSIGN_OR_RETURN(m.source, detail::open_sample_source(options));
  if (m.source->size() > UINT32_MAX) return invalid_argument_error("more than 2^32 records");
  if (m.source->size() == 0) return invalid_argument_error("the source holds no records");
  m.sample_bytes = sample_bytes(options.sample);
  m.slot_bytes = static_cast<uint64_t>(options.batch_size) *
                 (m.sample_bytes + sizeof(int64_t) + sizeof(uint64_t) + 1);
  std::optional<device::DeviceGuard> guard;  // the caller's device comes back
  Impl::DevicePlan plan;
  if (options.device >= 0) {
    SLUICE_RETURN_IF_ERROR(check_device(options, &m.kernel));
    guard.emplace(**device::CudaRuntime::get(), options.device);
    SLUICE_RETURN_IF_ERROR(guard->status());
    SLUICE_RETURN_IF_ERROR(m.plan_device(&plan));
  }
  SLUICE_RETURN_IF_ERROR(m.size_ring(plan));
  if (options.device >= 0) SLUICE_RETURN_IF_ERROR(m.open_device(&plan));
  SLUICE_RETURN_IF_ERROR(m.map_slots());
  m.start();
  return std::unique_ptr<Pipeline>(new Pipeline(std::move(impl)));
}

uint64_t Pipeline::records() const {
  return impl_->source->size();
}
const std::vector<std::string>& Pipeline::classes() const {
  return impl_->source->classes();
}
const PipelineOptions& Pipeline::options() const {
  return impl_->o;
}

uint64_t Pipeline::samples_per_epoch() const {
  MutexLock lock(&impl_->mu);
  uint64_t n = impl_->samples_in_plan();
  return impl_->o.drop_last ? n / impl_->o.batch_size * impl_->o.batch_size : n;
}

uint64_t Pipeline::batches_per_epoch() const {
  MutexLock lock(&impl_->mu);
  return impl_->batches;
}

Status Pipeline::set_epoch(uint64_t epoch) {
  return restore({epoch, 0});
}

Status Pipeline::restore(const PipelineState& state) {
  MutexLock lock(&impl_->mu);
  if (state.batches > impl_->batches && impl_->plan) {
    // batches per epoch do not change between epochs
    return invalid_argument_error(fmt::format("state says {} batches consumed, an epoch has {}",
                                              state.batches, impl_->batches));
  }
  // Already there (a restore right after create, or a set_epoch of the
  // epoch just started): keep the work in flight instead of redoing it.
  if (impl_->plan && state.epoch == impl_->epoch && state.batches == impl_->next_hand &&
      impl_->fatal.ok()) {
    return Status();
  }
  impl_->reset(state.epoch, state.batches);
  return Status();
}

PipelineState Pipeline::state() const {
  MutexLock lock(&impl_->mu);
  return {impl_->epoch, impl_->next_hand};
}

Result<Batch> Pipeline::next() {
  Impl& m = *impl_;
  MutexLock lock(&m.mu);
  if (!m.fatal.ok()) return m.fatal;
  if (m.next_hand >= m.batches) {
    return out_of_range_error(fmt::format("epoch {} is done ({} batches)", m.epoch, m.batches));
  }
  auto it = m.batch_slot.find(m.next_hand);
  if (it == m.batch_slot.end()) {
    return failed_precondition_error(fmt::format(
        "all {} batch slots are held by the caller: release batches before asking for more",
        m.prefetch));
  }
  Slot& slot = m.slots[static_cast<size_t>(it->second)];
  uint64_t t0 = now_ns();
  const SlotState done = m.dev ? SlotState::kStaged : SlotState::kReady;
  m.consumer_cv.wait(m.mu, [&] {
    m.mu.assert_held();
    return slot.state == done || !m.fatal.ok();
  });
  uint64_t waited = now_ns() - t0;
  m.consumer_wait_ns += waited;

  if (m.o.trace) m.add_span(-1, "wait for batch", t0, t0 + waited, m.next_hand);
  m.batch_stage->add_wait(waited);
  if (m.tuner->on_batch(now_ns(), waited)) m.work_cv.notify_all();
  if (!m.fatal.ok()) return m.fatal;
  if (!slot.error.ok()) {
    m.fatal = slot.error;  // the run stays failed until a restore
    return m.fatal;
  }
  // Drop bad samples (on a device the stager already did).
  size_t n = m.dev ? slot.count : m.compact(&slot);
  slot.state = SlotState::kHeld;
  Batch b;
  b.owner_ = this;
  b.slot_ = it->second;
  b.data_ = m.dev ? m.dev->output(it->second) : slot.data;
  if (m.dev) {
    b.device_ = m.o.device;
    b.ready_event_ = m.dev->ready_event(it->second);
  }
  b.labels_ = slot.labels.data();
  b.ids_ = slot.ids.data();
  b.size_ = n;
  b.sample_bytes_ = m.sample_bytes;
  b.epoch_ = m.epoch;
  b.index_ = m.next_hand;
  b.spec_ = m.o.sample;
  m.batch_slot.erase(it);
  ++m.next_hand;
  ++m.batches_done;
  m.batch_stage->add(1, b.bytes(), 0);
  return b;
}

void Pipeline::release(int slot, void* stream) {
  // On a device, outside the lock (the slot is held, so only this thread
  // touches it): this may wait for the batch's copy to finish reading it.
  Status r = impl_->dev ? impl_->dev->release(slot, stream) : Status();
  MutexLock lock(&impl_->mu);
  if (!r.ok() && impl_->fatal.ok()) {
    impl_->fatal = r;
    impl_->consumer_cv.notify_all();  // a next() waiting on another thread
  }
  impl_->slots[static_cast<size_t>(slot)].state = SlotState::kFree;
  impl_->assign_slots();
  impl_->work_cv.notify_all();
}

PipelineStats Pipeline::stats() const {
  PipelineStats s;
  s.stages = impl_->telemetry.snapshot();
  MutexLock lock(&impl_->mu);
  s.samples = impl_->samples_done;
  s.decoded_cpu =
      impl_->kernel ? impl_->cpu_decoded + (impl_->gpu_stage ? impl_->gpu_stage->cpu_decoded() : 0)
                    : impl_->samples_done;
  s.batches = impl_->batches_done;
  s.bad_samples = impl_->events.size();
  s.consumer_wait_seconds = impl_->consumer_wait_ns / 1e9;
  s.workers = impl_->workers;
  s.active_workers = impl_->tuner->active();
  s.prefetch = impl_->prefetch;
  const SlotState ready = impl_->dev ? SlotState::kStaged : SlotState::kReady;
  for (const Slot& slot : impl_->slots) s.ready_batches += slot.state == ready;
  s.slot_bytes = impl_->slot_bytes;
  s.tuning = impl_->tuner->note().empty() ? impl_->tuning : impl_->tuner->note();
  impl_->source->add_stats(&s);
  if (impl_->dev) {
    auto c = impl_->dev->counters();
    s.device = impl_->o.device;
    s.gpu_augment = impl_->kernel ? "gpu kernel" : "cpu";
    s.device_slot_bytes = impl_->dev->device_bytes();
    s.h2d_bytes = c.copy_bytes;
    s.h2d_seconds = c.copy_ns / 1e9;
    s.kernel_seconds = c.kernel_ns / 1e9;
    s.gpu_decode = impl_->kernel ? impl_->jpeg_note : "off (CPU augmentation)";
    s.decoded_hardware = impl_->jpeg_stats.hardware.images;
    s.decoded_cuda = impl_->jpeg_stats.cuda.images;
    s.hardware_share = impl_->jpeg_stats.hardware_share;
    s.gpu_decode_fallbacks = impl_->gpu_stage ? impl_->gpu_stage->fallbacks() : 0;
    const device::GpuJpegStats js = impl_->jpeg_stats;  // a copy, under the lock
    s.nvjpeg_refused = js.nvjpeg_refused;
    s.gpu_decode_strict = js.strict_bitstream;
    s.gpu_decode_allocations = js.nvjpeg_allocations + js.arena_allocations;
    s.gpu_decode_reallocations = js.nvjpeg_reallocations + js.arena_reallocations;
  }
  return s;
}

std::vector<TraceSpan> Pipeline::trace() const {
  MutexLock lock(&impl_->mu);
  return {impl_->spans.begin(), impl_->spans.end()};
}

Result<std::string> Pipeline::record_key(uint64_t id) const {
  return impl_->source->key(id);
}

std::vector<SampleEvent> Pipeline::events() const {
  MutexLock lock(&impl_->mu);
  return impl_->events;
}

}  // namespace sluice
