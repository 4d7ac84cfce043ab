// The input pipeline: records in, batches of decoded, augmented samples out.
//
//   auto pipe = sluice::Pipeline::create(options);   // Result<unique_ptr>
//   for (uint64_t epoch = 0; epoch < n; ++epoch) {
//     (*pipe)->set_epoch(epoch);
//     for (;;) {
//       auto batch = (*pipe)->next();                  // waits for a batch
//       if (batch.status().code() == StatusCode::kOutOfRange) break;  // epoch done
//       ... batch->data(), batch->labels(), batch->size() ...
//     }                                                // slot returns to the ring
//   }
//
// Reproducible (DESIGN.md invariant 1): the order of samples is a pure
// function of (seed, epoch, rank, world_size); each sample's augmentation of
// (seed, epoch, sample id). Batches are bit-identical whatever the worker
// count, and a pipeline restored from state() yields exactly the batches
// that would have followed.
//
// Bounded (invariant 2): the ring holds `prefetch` batch slots; together
// with the workers' scratch they stay within memory_budget. Only the plan
// (4 bytes per record) and the record index grow with the dataset.
//
// Ownership: a Batch views memory in one ring slot and gives the slot back
// when destroyed (or release()d); every Batch must be gone before its
// Pipeline is destroyed (the Python module enforces this by reference). At most `prefetch` batches
// can be held at once; next() with every slot held fails with kFailedPrecondition rather than wait
// forever.
//
// Thread safety: one consumer thread calls next()/set_epoch()/restore();
// stats() and events() may be called from any thread. Workers are internal.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/dataset.h"
#include "sluice/image_ops.h"
#include "sluice/status.h"
#include "sluice/telemetry.h"

namespace sluice {

enum class Order {
  kNone,    // storage order
  kGlobal,  // an exact random permutation of all records each epoch
  kQuasi,   // shuffled blocks of neighbouring records, shuffled within
            // groups of blocks: nearly sequential reads (FFCV's QUASI_RANDOM)
  kBuffer,  // tf.data's shuffle buffer over the storage order
};
std::string_view order_name(Order order);
Result<Order> parse_order(std::string_view name);

// Whether an optional part is used: where available (kAuto), always (kOn:
// an error where it is not there), never (kOff).
enum class Use { kAuto, kOn, kOff };

struct PipelineOptions {
  // A dataset folder (dataset.json), record files or glob patterns, or one
  // ImageFolder tree (SRC/CLASS/*.jpg: the slow baseline users start from).
  std::vector<std::string> sources;
  // Which split of a dataset folder.
  std::string split = "train";
  // Feature keys; an empty image key means detect from the first record.
  FeatureKeys keys{.image = ""};

  int batch_size = 256;
  // Output size, dtype, layout, mean/std of every sample.
  SampleSpec sample;
  AugmentMode augment = AugmentMode::kTrain;
  // RandomResizedCrop's area and aspect ranges (augment kTrain).
  RandomResizedCropParams crop;

  Order order = Order::kGlobal;
  int quasi_block = 64;        // records per block (kQuasi)
  int quasi_group = 16;        // blocks shuffled together (kQuasi)
  int shuffle_buffer = 10000;  // kBuffer
  uint64_t seed = 0;

  // Data parallelism: each rank gets a disjoint, equal-sized part of every
  // epoch. drop_last drops the remainder (and a last partial batch);
  // otherwise the epoch is padded by wrapping around (DistributedSampler's
  // rule) and the last batch may be short.
  int rank = 0;
  int world_size = 1;
  bool drop_last = true;

  // Worker threads (0 = autotune: one thread per core, of which the tuner
  // keeps active as many as keep the consumer from waiting, fewer when the
  // consumer is the bottleneck) and batch slots in the ring (0 = as many as
  // fit the memory budget, at most two per worker).
  int workers = 0;
  int prefetch = 0;
  // Everything in flight: ring slots, per-worker scratch and, for remote
  // shards, the read-ahead.
  uint64_t memory_budget = uint64_t{2} << 30;

  // Remote shards (s3://, http(s)://): records fetched ahead of the workers
  // along the epoch's order, by this many requests in flight per worker,
  // holding at most read_ahead_bytes (part of memory_budget).
  int remote_requests_per_worker = 4;
  uint64_t read_ahead_bytes = uint64_t{64} << 20;
  // A folder where whole remote shards are kept after their first use, so
  // later epochs read them from disk (empty = no cache); at most
  // cache_bytes, least recently used shards evicted first.
  std::string cache_dir;
  uint64_t cache_bytes = uint64_t{100} << 30;

  // Where batches are delivered: -1 is host memory; N is CUDA device N
  // ("cuda:N"). On a device the ring's slots are pinned host memory, each
  // batch is copied on the pipeline's own stream, and Batch::data() is
  // device memory, ready once Batch::ready_event() has completed.
  int device = -1;
  // On a device: crop, resize, flip, normalise, cast and layout run in the
  // fused GPU kernel after the CPU decode (the workers then only decode),
  // or on the CPU workers before the copy. kAuto: on the GPU where sluice's
  // kernel library loads.
  Use gpu_augment = Use::kAuto;
  // With the GPU kernel: decode JPEGs on the GPU with nvJPEG, per image in
  // tiers (H: the hardware engine, G: CUDA cores; C: the CPU workers, for
  // everything nvJPEG cannot do). kAuto: where nvJPEG loads.
  Use gpu_decode = Use::kAuto;
  // The share of JPEGs offered to the hardware engine. For a fixed share
  // the tier of every sample is fixed, so batches are reproducible;
  // negative tunes it from measured latency (starting at 0.65), which makes
  // the tiers, and so the exact pixels, depend on timing.
  double hardware_share = 0.65;
  // On a device: device memory for the ring (the device part of the budget).
  uint64_t device_memory_budget = uint64_t{4} << 30;

  // Decode only the crop window at the smallest sufficient DCT scale (the
  // default), or every pixel at full size first (the ablation's baseline).
  bool crop_decode = true;

  // A bad sample: fail stops the pipeline in that sample's batch: next()
  // hands out every batch before it, then returns the error (file, offset,
  // reason of the batch's first bad sample) in place of its batch, and
  // keeps returning it until a restore; the same batch on every run, for
  // any worker count. skip drops it from its batch (the batch is shorter);
  // warn is skip plus a line on stderr. Every event is counted and kept
  // (events(), in the order the workers met them).
  ErrorPolicy on_error = ErrorPolicy::kWarn;
  uint64_t max_pixels = kDefaultMaxPixels;

  // Record a span per sample stage (read, decode, augment) per worker and
  // the consumer's waits, for a Chrome/Perfetto trace (trace()). Costs four
  // clock reads a sample; the oldest spans beyond trace_limit are dropped.
  bool trace = false;
  size_t trace_limit = 1'000'000;

  friend bool operator==(const PipelineOptions&, const PipelineOptions&) = default;
};

// One span of a trace: on worker `track` (-1 = the consumer), stage `name`.
struct TraceSpan {
  int track = 0;
  const char* name = "";
  uint64_t start_ns = 0, end_ns = 0;  // steady clock
  uint64_t sample = 0;                // record id (batch index for the consumer)
};

// Where an epoch stands: `batches` batches of `epoch` have been handed out.
struct PipelineState {
  uint64_t epoch = 0;
  uint64_t batches = 0;
  friend bool operator==(const PipelineState&, const PipelineState&) = default;
};

// The state as a file (`sluice bench --state-out/--state-in`, docs/formats.md):
// {"epoch": E, "batches": B}. Parsing fails with kDataLoss naming `name`
// for anything else (other keys are ignored).
std::string format_pipeline_state(const PipelineState& state);
Result<PipelineState> parse_pipeline_state(std::string_view json, std::string_view name);

// A bad sample, with where it came from.
struct SampleEvent {
  uint64_t epoch = 0;
  uint64_t sample_id = 0;
  std::string source;   // shard or file
  int64_t offset = -1;  // record offset in the shard, -1 for files
  std::string reason;
  std::string to_string() const;
};

class Pipeline;

// One batch in a ring slot. Move-only.
class Batch {
 public:
  Batch() = default;
  Batch(Batch&& other) noexcept;
  Batch& operator=(Batch&& other) noexcept;
  ~Batch();

  // size() samples of sample_bytes(spec()) each, in spec().layout.
  const void* data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sample_bytes_; }
  const int64_t* labels() const { return labels_; }
  // Global record ids of the samples (for joining features back).
  const uint64_t* sample_ids() const { return ids_; }
  uint64_t epoch() const { return epoch_; }
  uint64_t index() const { return index_; }  // within the epoch
  const SampleSpec& spec() const { return spec_; }
  // Returns the slot to the ring now.
  void release();

  // Where data() lives: -1 host memory, N CUDA device N.
  int device() const { return device_; }
  // On a device: the event (a cudaEvent_t) recorded after the batch's last
  // write on the pipeline's stream. Read data() only after it: wait_on().
  void* ready_event() const { return ready_event_; }
  // Makes `stream` (a cudaStream_t; nullptr: the legacy default stream, as
  // PyTorch uses by default) wait for the batch, without blocking the host.
  // A no-op for a host batch.
  Status wait_on(void* stream) const;
  // On a device, release() lets the pipeline reuse the batch's device
  // buffer once the work queued so far on the legacy default stream is
  // done; release_after(stream) names the stream that reads the batch.
  void release_after(void* stream);
  // Copies the samples (bytes() of them) to host memory `dst`, waiting for
  // the batch first: for checks and digests, not for the training path.
  Status copy_to_host(void* dst) const;

 private:
  friend class Pipeline;
  Pipeline* owner_ = nullptr;
  int slot_ = -1;
  const void* data_ = nullptr;
  const int64_t* labels_ = nullptr;
  const uint64_t* ids_ = nullptr;
  size_t size_ = 0;
  size_t sample_bytes_ = 0;
  uint64_t epoch_ = 0, index_ = 0;
  SampleSpec spec_;
  int device_ = -1;
  void* ready_event_ = nullptr;
};

struct PipelineStats {
  std::vector<StageSnapshot> stages;  // read, decode, augment (workers), batch (consumer)
  uint64_t samples = 0;
  uint64_t batches = 0;
  uint64_t bad_samples = 0;
  double consumer_wait_seconds = 0;
  int workers = 0;         // threads started
  int active_workers = 0;  // of those, allowed to work now (autotune)
  int prefetch = 0;
  int ready_batches = 0;  // prepared and waiting for the consumer (queue depth)
  uint64_t slot_bytes = 0;
  // How the engine settled workers and prefetch, in words.
  std::string tuning;
  // On a device: where the augmentation ran ("gpu kernel" or "cpu"), and
  // the staging measured on the device's clock.
  int device = -1;
  std::string gpu_augment;
  uint64_t device_slot_bytes = 0;
  // JPEG decoding on the GPU: what is used ("nvJPEG <library>: ..." or why
  // not), images decoded per tier (hardware engine, CUDA cores, CPU), and
  // the engine's share now.
  std::string gpu_decode;
  uint64_t decoded_hardware = 0, decoded_cuda = 0, decoded_cpu = 0;
  uint64_t gpu_decode_fallbacks = 0;  // GPU decodes redone on another tier
  double hardware_share = 0;
  // nvJPEG libraries the search passed over, and why ("<file>: <reason>");
  // the one chosen is named in gpu_decode.
  std::vector<std::string> nvjpeg_refused;
  // Damaged files fail on the GPU, as on the CPU (nvJPEG's strict
  // bitstream checks); false where the library refused the flag.
  bool gpu_decode_strict = false;
  // Device and pinned allocations made for GPU decoding (nvJPEG's buffers
  // and the output arenas), and the frees that replaced a buffer grown too
  // small (cudaFree waits for the whole device): both stay flat after the
  // first batches. nvJPEG's counts are process-wide.
  uint64_t gpu_decode_allocations = 0, gpu_decode_reallocations = 0;
  uint64_t h2d_bytes = 0;
  double h2d_seconds = 0;     // device time of the host-to-device copies
  double kernel_seconds = 0;  // device time of the fused kernel
  // Remote shards (s3://, http(s)://): whether the source is remote, the
  // HTTP requests made since the pipeline opened (retries included), the
  // retries, the requests given up on, the body bytes received; and, with
  // a cache folder, the shards found whole in it and those fetched into it.
  bool remote = false;
  uint64_t remote_requests = 0, remote_retries = 0, remote_failures = 0, remote_bytes = 0;
  uint64_t cache_hits = 0, cache_fills = 0;
};

// The verdict's inputs for a run of `wall_seconds` that ended with `stats`:
// its worker stages (is_worker_stage) and the consumer's wait.
VerdictInput verdict_input(const PipelineStats& stats, double wall_seconds);
// A stage's busy share of the workers: busy / (wall * workers); 0 before
// any time has passed.
double busy_share(const StageSnapshot& stage, double wall_seconds, int workers);

class Pipeline {
 public:
  static Result<std::unique_ptr<Pipeline>> create(const PipelineOptions& options);
  ~Pipeline();

  uint64_t records() const;            // in the whole source
  uint64_t samples_per_epoch() const;  // for this rank
  uint64_t batches_per_epoch() const;  // for this rank
  const std::vector<std::string>& classes() const;
  const PipelineOptions& options() const;

  // Starts `epoch` from its first batch (finishing the current one).
  Status set_epoch(uint64_t epoch);
  // The next batch of the current epoch; kOutOfRange when it is done.
  Result<Batch> next();

  PipelineState state() const;
  // Continues exactly where `state` left off.
  Status restore(const PipelineState& state);

  PipelineStats stats() const;
  std::vector<SampleEvent> events() const;
  // The spans recorded so far (options.trace), oldest first.
  std::vector<TraceSpan> trace() const;

  // A record's key, to join outputs back to their images: the key feature
  // (options.keys.key, image/filename by default; empty where a record has
  // none) or, for an ImageFolder tree, the file's path below its root.
  // `id` is a global record id, as in Batch::sample_ids(). Reads the record.
  Result<std::string> record_key(uint64_t id) const;

 private:
  friend class Batch;
  struct Impl;
  explicit Pipeline(std::unique_ptr<Impl> impl);
  void release(int slot, void* stream);
  std::unique_ptr<Impl> impl_;
};

// Benchmark references measured on the same images as a pipeline would
// read (the first `samples` of this rank's epoch-0 plan, held in memory so
// that only decoding is timed), on `threads` threads:
//   kFullDecode  libjpeg-turbo / libspng decoding every pixel at full size
//                (what a plain loader pays: the "ceiling" to beat)
//   kPlanFloor   exactly the decode calls the pipeline's plan makes (same
//                DCT scales, same crop windows) and nothing else
enum class DecodeReference { kFullDecode, kPlanFloor };
struct ReferenceResult {
  double images_per_second = 0;
  uint64_t images = 0;
  uint64_t failed = 0;  // images that did not decode (left out of the rate)
};
Result<ReferenceResult> measure_decode_reference(const PipelineOptions& options,
                                                 DecodeReference kind, uint64_t samples,
                                                 int threads);

// Exposed for tests: the record ids this rank reads in `epoch`, in order.
std::vector<uint32_t> plan_epoch(uint64_t records, const PipelineOptions& options, uint64_t epoch);

}  // namespace sluice
