// Pipeline::Impl, the executor: the ring's state under one mutex, the
// worker threads that fill batch slots sample by sample, and (on a device)
// the stager. Declared here for pipeline.cc (the public API and the steps
// of create()) and executor.cc (the threads' loops and the ring's
// bookkeeping).
//
// Work unit = one sample. Workers claim sample positions of the epoch in
// order from one cursor, but only for batches that already own a slot, so
// at most `prefetch` batches are in flight. Each sample's output position
// is fixed by its position in the plan, so the bytes of a batch do not
// depend on which worker did what, or when.
//
// Locking: one mutex guards the cursor, the slot table and the epoch; it is
// taken twice per sample (claim, complete), never while decoding.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "device/jpeg_tiers.h"
#include "pipeline/autotune.h"
#include "pipeline/device_slots.h"
#include "pipeline/gpu_stage.h"
#include "pipeline/ring.h"
#include "pipeline/sample_work.h"
#include "pipeline/source.h"
#include "sluice/pipeline.h"

namespace sluice {

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
  std::vector<detail::Slot> slots;
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

  void assign_slots() SLUICE_REQUIRES(mu);

  // Points the engine at (epoch, first batch); waits for in-flight samples
  // of the old plan to finish first, so no stale write lands in a slot.
  void reset(uint64_t new_epoch, uint64_t first_batch) SLUICE_REQUIRES(mu);

  // Whether worker `index` may claim the next sample: the tuner lets it,
  // the plan has one, and its batch owns a slot.
  bool claimable(int index) const SLUICE_REQUIRES(mu);

  // A worker's loop: claims the next sample, prepares it into its place in
  // its slot, and marks the slot ready when its last sample lands.
  void worker(std::stop_token st, int index);

  // A bad sample: its event (and a line, under on_error=warn), and under
  // on_error=fail the slot's error, the earliest in batch order.
  void record_bad(uint64_t ep, uint64_t id, const Status& s, detail::Slot* slot, size_t i)
      SLUICE_REQUIRES(mu);

  // Trace spans (options.trace), the oldest dropped beyond trace_limit.
  void add_span(int track, const char* name, uint64_t start, uint64_t end, uint64_t sample)
      SLUICE_REQUIRES(mu);

  void add_sample_spans(int worker, uint64_t id, const uint64_t* marks) SLUICE_REQUIRES(mu);

  // On a device: takes finished slots in batch order, drops bad samples,
  // and queues the copy (and the kernel) on the pipeline's stream.
  void stager(std::stop_token st);

  // Drops bad samples from a finished slot, keeping the good ones' order;
  // returns how many are left. Kernel mode gathers their jobs instead of
  // moving bytes.
  std::vector<detail::SampleJob> staged_jobs;
  std::vector<detail::Slot::Encoded> staged_encoded;
  std::vector<const uint8_t*> staged_src;
  size_t compact(detail::Slot* slot);

  // GPU decoding (pipeline/gpu_stage.h): the batch's pending JPEGs, then
  // its bad samples recorded and dropped like any other. `n`: the batch's
  // samples, updated.
  Status decode_on_gpu(int s, detail::Slot* slot, uint64_t gen, size_t* n);

  // Drops the staged samples at `bad` (ascending), keeping the order
  // (labels and ids were already compacted).
  void drop_staged(detail::Slot* slot, const std::vector<detail::GpuDecodeStage::Bad>& bad,
                   size_t* n);

  // `marks` (when tracing): start, after read, after decode, end.
  Status prepare(uint64_t id, uint64_t ep, CropDecoder* decoder, DecodedWindow* window,
                 std::vector<float>* scratch, std::string* buffer, int slot, size_t i,
                 int64_t* label, uint64_t* marks);

  Status prepare_stages(uint64_t id, uint64_t ep, CropDecoder* decoder, DecodedWindow* window,
                        std::vector<float>* scratch, std::string* buffer, int slot, size_t i,
                        int64_t* label, uint64_t* marks);

  // Declared last: destroyed (stopped and joined) first, while everything
  // the workers and the stager touch (all the members above) is still alive.
  std::vector<std::jthread> threads;
};

}  // namespace sluice
