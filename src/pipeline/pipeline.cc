// The engine: worker threads fill batch slots sample by sample; the
// consumer takes whole batches in order.
//
// Work unit = one sample. Workers claim sample positions of the epoch in
// order from one cursor, but only for batches that already own a slot, so
// at most `prefetch` batches are in flight. Each sample's output position
// is fixed by its position in the plan, so the bytes of a batch do not
// depend on which worker did what, or when.
//
// Locking: one mutex guards the cursor, the slot table and the epoch; it is
// taken twice per sample (claim, complete), never while decoding.
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

struct Pipeline::Impl {
  PipelineOptions o;
  std::unique_ptr<detail::SampleSource> source;
  size_t sample_bytes = 0;
  int workers = 0;
  int prefetch = 0;
  uint64_t slot_bytes = 0;
  std::string tuning;  // how workers and prefetch were chosen (until the tuner moves)

  Telemetry telemetry;
  StageStats* read_stage = nullptr;
  StageStats* decode_stage = nullptr;
  StageStats* augment_stage = nullptr;
  StageStats* batch_stage = nullptr;
  StageStats* idle_stage = nullptr;  // workers waiting for work

  // On a device (o.device >= 0): the ring's device side; kernel: the fused
  // GPU kernel does the augmentation.
  std::unique_ptr<detail::DeviceSlots> dev;
  bool kernel = false;
  size_t arena_sample = 0;
  std::optional<detail::SlotArena> arena;  // kernel mode: each slot's arena
  // GPU decoding (kernel mode): nvJPEG's tiers, used by the stager only.
  std::unique_ptr<device::GpuJpegDecoder> jpeg;
  std::string jpeg_note;                            // what decodes JPEGs on the GPU, or why nothing
  std::atomic<uint64_t> cpu_decoded{0};             // tier C: decoded by the workers
  std::optional<detail::GpuDecodeStage> gpu_stage;  // the stager's half
  mutable Mutex mu;
  CondVar work_cv;                                        // workers wait here
  CondVar consumer_cv;                                    // next() and resets wait here
  device::GpuJpegStats jpeg_stats SLUICE_GUARDED_BY(mu);  // the stager's last snapshot
  uint64_t epoch SLUICE_GUARDED_BY(mu) = 0;
  uint64_t generation SLUICE_GUARDED_BY(mu) = 0;  // bumped by every reset; stale work is dropped
  std::shared_ptr<const std::vector<uint32_t>> plan SLUICE_GUARDED_BY(mu);
  uint64_t batches SLUICE_GUARDED_BY(mu) = 0;
  uint64_t next_sample SLUICE_GUARDED_BY(mu) = 0;
  uint64_t next_hand SLUICE_GUARDED_BY(mu) = 0;
  uint64_t next_assign SLUICE_GUARDED_BY(mu) = 0;
  uint64_t next_stage SLUICE_GUARDED_BY(mu) = 0;  // on a device: the next batch to stage
  std::map<uint64_t, int> batch_slot SLUICE_GUARDED_BY(mu);
  // Sized once by create(). A slot's state, batch, remaining and error
  // change under mu; its buffers belong to whoever the state says (the
  // workers while kFilling, the stager while kStaging, the caller while
  // kHeld), and are touched without the lock.
  std::vector<Slot> slots;
  int in_flight SLUICE_GUARDED_BY(mu) = 0;
  Status fatal SLUICE_GUARDED_BY(mu);
  std::vector<SampleEvent> events SLUICE_GUARDED_BY(mu);
  uint64_t samples_done SLUICE_GUARDED_BY(mu) = 0;
  std::deque<TraceSpan> spans SLUICE_GUARDED_BY(mu);  // options.trace
  uint64_t batches_done SLUICE_GUARDED_BY(mu) = 0;
  uint64_t consumer_wait_ns SLUICE_GUARDED_BY(mu) = 0;
  // How many workers may claim work (all, unless workers = auto).
  std::optional<detail::Autotuner> tuner SLUICE_GUARDED_BY(mu);

  // Pipeline::create's steps, in order; nothing runs until start().
  // On a device: a slot's sizes, measured before the ring is sized.
  struct DevicePlan {
    detail::DeviceSlots::Config config;
    size_t slot_bytes = 0;      // device memory of one slot
    uint64_t fit = UINT64_MAX;  // slots the device memory budget holds
  };
  Status plan_device(DevicePlan* plan);
  Status size_ring(const DevicePlan& plan);
  Status open_device(DevicePlan* plan);
  Status map_slots();
  void start();

  uint64_t samples_in_plan() const SLUICE_REQUIRES(mu) { return plan ? plan->size() : 0; }
  size_t batch_len(uint64_t b) const SLUICE_REQUIRES(mu) {
    uint64_t n = samples_in_plan();
    uint64_t start = b * static_cast<uint64_t>(o.batch_size);
    return static_cast<size_t>(std::min<uint64_t>(o.batch_size, n - start));
  }

  void assign_slots() SLUICE_REQUIRES(mu) {
    for (size_t s = 0; s < slots.size() && next_assign < batches; ++s) {
      if (slots[s].state != SlotState::kFree) continue;
      Slot& slot = slots[s];
      slot.state = SlotState::kFilling;
      slot.batch = next_assign;
      slot.size = batch_len(next_assign);
      slot.remaining = slot.size;
      slot.error = Status();
      slot.error_index = SIZE_MAX;
      std::fill(slot.valid.begin(), slot.valid.end(), 1);
      if (kernel) dev->reset_arena(static_cast<int>(s));
      for (auto& e : slot.encoded) e.pending = false;
      batch_slot[next_assign] = static_cast<int>(s);
      ++next_assign;
    }
  }

  // Points the engine at (epoch, first batch); waits for in-flight samples
  // of the old plan to finish first, so no stale write lands in a slot.
  void reset(uint64_t new_epoch, uint64_t first_batch) SLUICE_REQUIRES(mu) {
    ++generation;
    next_sample = std::numeric_limits<uint64_t>::max();  // stop claims
    consumer_cv.wait(mu, [&] {
      mu.assert_held();
      return in_flight == 0;
    });
    if (!plan || epoch != new_epoch) {
      plan =
          std::make_shared<const std::vector<uint32_t>>(plan_epoch(source->size(), o, new_epoch));
    }
    epoch = new_epoch;
    uint64_t n = plan->size();
    batches = o.drop_last ? n / o.batch_size : (n + o.batch_size - 1) / o.batch_size;
    first_batch = std::min(first_batch, batches);
    next_hand = next_assign = next_stage = first_batch;
    next_sample = first_batch * static_cast<uint64_t>(o.batch_size);
    batch_slot.clear();
    for (size_t i = 0; i < slots.size(); ++i) {
      Slot& s = slots[i];
      if (s.state == SlotState::kHeld) continue;
      // A staged slot's host memory may still be read by its copy.
      if (dev && s.state == SlotState::kStaged) {
        Status r = dev->reclaim(static_cast<int>(i));
        if (!r.ok()) std::fprintf(stderr, "sluice: %s\n", std::string(r.message()).c_str());
      }
      s.state = SlotState::kFree;
    }
    fatal = Status();
    assign_slots();
    work_cv.notify_all();
  }

  bool claimable(int index) const SLUICE_REQUIRES(mu) {
    if (index >= tuner->active()) return false;
    if (next_sample >= uint64_t{batches} * o.batch_size || next_sample >= samples_in_plan())
      return false;
    return batch_slot.count(next_sample / o.batch_size) != 0;
  }

  void worker(std::stop_token st, int index) {
    CropDecoder decoder;
    DecodedWindow window;
    std::vector<float> scratch;
    std::string buffer;
    for (;;) {
      uint64_t k, gen, ep;
      int s;
      std::shared_ptr<const std::vector<uint32_t>> my_plan;
      {
        MutexLock lock(&mu);
        if (!claimable(index)) {
          // Time a worker spends with nothing to do: no free slot (the
          // consumer is slower) or parked by the tuner.
          uint64_t t0 = now_ns();
          bool go = work_cv.wait(mu, st, [&] {
            mu.assert_held();
            return claimable(index);
          });
          idle_stage->add_wait(now_ns() - t0);
          if (!go) return;
        }
        k = next_sample++;
        gen = generation;
        ep = epoch;
        my_plan = plan;
        s = batch_slot.at(k / o.batch_size);
        ++in_flight;
      }
      Slot& slot = slots[static_cast<size_t>(s)];
      size_t i = static_cast<size_t>(k % static_cast<uint64_t>(o.batch_size));
      uint64_t id = (*my_plan)[k];
      uint64_t marks[4] = {};
      Status st_sample = prepare(id, ep, &decoder, &window, &scratch, &buffer, s, i,
                                 &slot.labels[i], o.trace ? marks : nullptr);
      slot.ids[i] = id;
      MutexLock lock(&mu);
      --in_flight;
      if (gen != generation) {
        consumer_cv.notify_all();
        continue;
      }
      if (o.trace) add_sample_spans(index, id, marks);
      if (!st_sample.ok()) record_bad(ep, id, st_sample, &slot, i);
      const bool ready = --slot.remaining == 0;
      if (ready) slot.state = SlotState::kReady;
      ++samples_done;
      // Waking the consumer per sample cost a futex call and a context
      // switch each (sluice bench, 2 epochs of 5,000 images on 2 cores:
      // 36,483 context switches, 7 % more CPU); it waits for a ready slot or
      // an error, and a reset's wait is woken above.
      if (ready || !st_sample.ok()) consumer_cv.notify_all();
    }
  }

  void record_bad(uint64_t ep, uint64_t id, const Status& s, Slot* slot, size_t i)
      SLUICE_REQUIRES(mu) {
    SampleEvent e;
    e.epoch = ep;
    e.sample_id = id;
    e.source = source->where(id, &e.offset);
    std::string m(s.message());
    // The record layer already names the file and offset; keep the reason.
    for (const std::string& prefix :
         {e.source + ": offset " + std::to_string(e.offset) + ": ", e.source + ": "}) {
      if (m.rfind(prefix, 0) == 0) m = m.substr(prefix.size());
    }
    e.reason = m;
    // i is the sample's place in the batch (after compaction on the GPU
    // path, which only moves a sample towards the front past bad ones, so
    // the earliest still wins).
    if (o.on_error == ErrorPolicy::kFail && i < slot->error_index) {
      slot->error_index = i;
      slot->error = Status(s.code(), "sample " + std::to_string(id) + ": " + e.to_string());
    }
    if (o.on_error == ErrorPolicy::kWarn)
      std::fprintf(stderr, "sluice: skipping bad sample: %s\n", e.to_string().c_str());
    slot->valid[i] = 0;
    events.push_back(std::move(e));
  }

  void add_span(int track, const char* name, uint64_t start, uint64_t end, uint64_t sample)
      SLUICE_REQUIRES(mu) {
    if (end <= start) return;
    spans.push_back({track, name, start, end, sample});
    while (spans.size() > o.trace_limit) spans.pop_front();
  }

  void add_sample_spans(int worker, uint64_t id, const uint64_t* marks) SLUICE_REQUIRES(mu) {
    add_span(worker, "read", marks[0], marks[1], id);
    add_span(worker, "decode", marks[1], marks[2], id);
    add_span(worker, "augment", marks[2], marks[3], id);
  }

  // On a device: takes finished slots in batch order, drops bad samples,
  // and queues the copy (and the kernel) on the pipeline's stream.
  void stager(std::stop_token st) {
    for (;;) {
      int s;
      uint64_t gen;
      {
        MutexLock lock(&mu);
        bool go = consumer_cv.wait(mu, st, [&] {
          mu.assert_held();
          auto it = batch_slot.find(next_stage);
          return it != batch_slot.end() &&
                 slots[static_cast<size_t>(it->second)].state == SlotState::kReady;
        });
        if (!go) return;
        s = batch_slot.at(next_stage);
        gen = generation;
        slots[static_cast<size_t>(s)].state = SlotState::kStaging;
        ++in_flight;
      }
      Slot& slot = slots[static_cast<size_t>(s)];
      size_t n = compact(&slot);
      Status r;
      if (jpeg) r = decode_on_gpu(s, &slot, gen, &n);
      if (r.ok()) {
        r = dev->stage(s, n * sample_bytes, kernel ? &staged_jobs : nullptr,
                       jpeg ? &staged_src : nullptr);
      }
      MutexLock lock(&mu);
      --in_flight;
      if (gen == generation) {
        if (!r.ok() && slot.error.ok()) slot.error = r;
        slot.count = n;
        ++next_stage;
      }
      // Staged even when a reset made it stale: its copy may still be
      // queued, and reset() reclaims (waits for) staged slots only.
      slot.state = SlotState::kStaged;
      consumer_cv.notify_all();
    }
  }

  // Drops bad samples from a finished slot, keeping the good ones' order;
  // returns how many are left. Kernel mode gathers their jobs instead of
  // moving bytes.
  std::vector<detail::SampleJob> staged_jobs;
  std::vector<Slot::Encoded> staged_encoded;
  std::vector<const uint8_t*> staged_src;
  size_t compact(Slot* slot) {
    size_t n = 0;
    if (kernel) {
      staged_jobs.clear();
      staged_encoded.clear();
    }
    for (size_t i = 0; i < slot->size; ++i) {
      if (!slot->valid[i]) continue;
      if (kernel) {
        staged_jobs.push_back(slot->jobs[i]);
        if (jpeg) staged_encoded.push_back(slot->encoded[i]);
      } else if (n != i) {
        std::memmove(slot->data + n * sample_bytes, slot->data + i * sample_bytes, sample_bytes);
      }
      slot->labels[n] = slot->labels[i];
      slot->ids[n] = slot->ids[i];
      ++n;
    }
    return n;
  }

  // GPU decoding (pipeline/gpu_stage.h): the batch's pending JPEGs, then
  // its bad samples recorded and dropped like any other. `n`: the batch's
  // samples, updated.
  Status decode_on_gpu(int s, Slot* slot, uint64_t gen, size_t* n) {
    std::optional<device::GpuJpegStats> now;
    std::vector<detail::GpuDecodeStage::Bad> bad =
        gpu_stage->decode(s, *slot, *n, staged_encoded, &staged_jobs, &staged_src, &now);
    MutexLock lock(&mu);
    if (now) jpeg_stats = std::move(*now);
    if (gen == generation) {
      for (const auto& b : bad) record_bad(epoch, slot->ids[b.index], b.status, slot, b.index);
    }
    if (!bad.empty()) drop_staged(slot, bad, n);
    return fatal;
  }

  // Drops the staged samples at `bad` (ascending), keeping the order
  // (labels and ids were already compacted).
  void drop_staged(Slot* slot, const std::vector<detail::GpuDecodeStage::Bad>& bad, size_t* n) {
    size_t w = 0;
    for (size_t k = 0, b = 0; k < *n; ++k) {
      if (b < bad.size() && bad[b].index == k) {
        ++b;
        continue;
      }
      staged_jobs[w] = staged_jobs[k];
      staged_src[w] = staged_src[k];
      slot->labels[w] = slot->labels[k];
      slot->ids[w] = slot->ids[k];
      ++w;
    }
    *n = w;
    staged_jobs.resize(w);
    staged_src.resize(w);
  }

  // `marks` (when tracing): start, after read, after decode, end.
  Status prepare(uint64_t id, uint64_t ep, CropDecoder* decoder, DecodedWindow* window,
                 std::vector<float>* scratch, std::string* buffer, int slot, size_t i,
                 int64_t* label, uint64_t* marks) {
    if (marks) marks[0] = now_ns();
    Status s = prepare_stages(id, ep, decoder, window, scratch, buffer, slot, i, label, marks);
    if (marks) {
      // A stage that failed ends the others where it stopped.
      uint64_t end = now_ns();
      for (int k = 1; k < 4; ++k) {
        if (marks[k] == 0) marks[k] = end;
      }
    }
    return s;
  }

  Status prepare_stages(uint64_t id, uint64_t ep, CropDecoder* decoder, DecodedWindow* window,
                        std::vector<float>* scratch, std::string* buffer, int slot, size_t i,
                        int64_t* label, uint64_t* marks) {
    detail::RawSample raw;
    {
      StageTimer t(*read_stage);
      SLUICE_RETURN_IF_ERROR(source->read(id, buffer, &raw));
      t.done(1, raw.image.size());
    }
    if (marks) marks[1] = now_ns();
    *label = raw.label;
    AugmentPlan aug;
    {
      StageTimer t(*decode_stage);
      SLUICE_ASSIGN_OR_RETURN(ImageInfo info, probe_image(raw.image, o.max_pixels));
      aug = detail::plan_sample(o, ep, id, info);
      // GPU decoding: the encoded file goes to the arena for nvJPEG; the
      // stager decodes the batch (a file too large for its share of the
      // arena is decoded here).
      if (jpeg && info.format == ImageFormat::kJpeg && raw.image.size() <= arena_sample / 2 &&
          gpu_stage->to_gpu(id, info)) {
        size_t at = dev->reserve(slot, raw.image.size(), /*host_only=*/true);
        if (at == SIZE_MAX) return internal_error("batch slot arena overflow");
        Slot& sl = slots[static_cast<size_t>(slot)];
        std::memcpy(sl.data + at, raw.image.data(), raw.image.size());
        sl.encoded[i] = {true, at, raw.image.size(), aug.crop, aug.flip};
        t.done(1, 0);
        if (marks) marks[2] = marks[3] = now_ns();
        return Status();
      }
      SLUICE_RETURN_IF_ERROR(detail::decode_window(o, decoder, raw.image, info, aug.crop, window));
      t.done(1, static_cast<uint64_t>(window->width) * window->height * 3);
    }
    if (marks) marks[2] = now_ns();
    StageTimer t(*augment_stage);
    Slot& sl = slots[static_cast<size_t>(slot)];
    if (kernel) {
      ++cpu_decoded;
      SLUICE_RETURN_IF_ERROR(
          arena->put_window(*window, aug.flip, slot, sl.data, &sl.jobs[i], scratch));
    } else {
      SLUICE_RETURN_IF_ERROR(
          write_sample(*window, aug.flip, o.sample, sl.data + i * sample_bytes, scratch));
    }
    t.done(1, sample_bytes);
    if (marks) marks[3] = now_ns();
    return Status();
  }

  // Declared last: destroyed (stopped and joined) first, while everything
  // the workers and the stager touch (all the members above) is still alive.
  std::vector<std::jthread> threads;
};

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
  SLUICE_ASSIGN_OR_RETURN(detail::RingSize r, detail::size_ring(o, slot_bytes, plan.fit, cores));
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
