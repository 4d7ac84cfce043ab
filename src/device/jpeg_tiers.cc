#include "device/jpeg_tiers.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>

namespace sluice::device {
namespace {

using Clock = std::chrono::steady_clock;

// Output rows start on 256-byte boundaries, as cudaMalloc's own blocks do.
constexpr size_t kSlotAlign = 256;
// Engine batch latencies kept for the tail check.
constexpr size_t kLatencyWindow = 128;
// nvJPEG rounds every allocation of a handle up to a multiple of its
// padding, so a buffer sized once serves every later image up to that size
// (DALI's defaults: 16 MB device, 8 MB pinned). Raised for huge images.
constexpr size_t kMinDevicePadding = size_t{16} << 20;
constexpr size_t kMinPinnedPadding = size_t{8} << 20;
// The output arenas grow in steps of this much at least.
constexpr size_t kArenaStep = size_t{16} << 20;
// The most the engine's memory is reserved ahead for (a batch of 4:4:4
// images at their largest size seen).
constexpr size_t kEngineReserve = size_t{512} << 20;

size_t round_up(size_t n, size_t step) {
  return (n + step - 1) / step * step;
}
size_t next_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// nvJPEG's buffers come through these: the loaded runtime's cudaMalloc and
// cudaHostAlloc, counted. nvJPEG replaces a buffer that is too small by
// freeing it and allocating a larger one; cudaFree waits for the whole
// device, so every such free in the middle of an epoch stalls the trainer's
// kernels. The counts (process-wide: the allocator interface carries no
// context) show whether that still happens after the first batches.
std::atomic<const CudaRuntime*> g_alloc_cuda{nullptr};
std::atomic<uint64_t> g_device_allocs{0}, g_device_frees{0}, g_pinned_allocs{0}, g_pinned_frees{0};
int counted_dev_malloc(void** p, size_t n) {
  ++g_device_allocs;
  return g_alloc_cuda.load()->Malloc(p, n);
}
int counted_dev_free(void* p) {
  if (p) ++g_device_frees;
  return g_alloc_cuda.load()->Free(p);
}
int counted_pinned_malloc(void** p, size_t n, unsigned flags) {
  ++g_pinned_allocs;
  return g_alloc_cuda.load()->HostAlloc(p, n, flags);
}
int counted_pinned_free(void* p) {
  if (p) ++g_pinned_frees;
  return g_alloc_cuda.load()->FreeHost(p);
}
nvjpegDevAllocator_t g_dev_allocator{&counted_dev_malloc, &counted_dev_free};
nvjpegPinnedAllocator_t g_pinned_allocator{&counted_pinned_malloc, &counted_pinned_free};

// Decoupled-API resources for one image in flight. Two lanes alternate,
// image by image, so the host phase of one image overlaps the device work
// of the one before. A lane is reused only after the host has waited for
// its last image's device phase (`done`): nvJPEG's decoupled calls are not
// ordered by the stream alone. nvjpegDecodeJpegTransferToDevice "is a mix
// of synchronous and asynchronous operations with respect to the host"
// (nvJPEG documentation), NVIDIA's own decoupled sample synchronises the
// stream before it, and DALI (PR #4292) saw parts of one image in another
// when its wait sat in the wrong place. Each backend (CPU Huffman, GPU
// Huffman) has its own state, pinned and device buffer in each lane.
struct Lane {
  nvjpegJpegStream_t stream = nullptr;  // the parsed file
  nvjpegDecodeParams_t params = nullptr;
  nvjpegJpegState_t state[2] = {};
  nvjpegBufferPinned_t pinned[2] = {};
  nvjpegBufferDevice_t device_buffer[2] = {};
  cudaEvent_t done = nullptr;
};

// One output arena. Two alternate, call by call. The engine writes its
// output when nvjpegDecodeBatched is called, not in stream order
// (torchcodec PR #1634 and torchvision PR #9606 measured it on H100 with
// nvJPEG 12.3 to 13.2: neither queued work nor cudaStreamWaitEvent holds
// the write back, only a host wait does), so before the engine writes an
// arena the host waits for `free`: recorded on the caller's stream at the
// start of the next call, it completes when every reader of that arena's
// last results (queued before that call) is done.
struct Arena {
  uint8_t* data = nullptr;
  size_t bytes = 0;
  cudaEvent_t free = nullptr;
};

// What classify() decides for one job before any decode.
struct Plan {
  JpegTier tier = JpegTier::kCpu;
  Status reason;  // tier C
  int image_w = 0, image_h = 0;
  size_t slot = 0;        // arena offset
  size_t slot_bytes = 0;  // room for the larger of its H and G outputs
};

}  // namespace

struct GpuJpegDecoder::State {
  const CudaRuntime* cuda = nullptr;
  int device = 0;
  GpuJpegOptions options;
  const Nvjpeg* nv = nullptr;
  std::string nv_reason;  // why nv is null
  double share = 0;
  bool strict = false;  // NVJPEG_FLAGS_BITSTREAM_STRICT accepted

  nvjpegHandle_t handle = nullptr;  // the CUDA backends
  // HYBRID (Huffman on the CPU), GPU_HYBRID (on the GPU; optional).
  nvjpegJpegDecoder_t decoders[2] = {};
  bool large_ok = false;
  Lane lanes[2];
  int next_lane = 0;

  nvjpegHandle_t hw = nullptr;  // the engine; null where there is none
  nvjpegJpegState_t hw_state = nullptr;
  nvjpegJpegStream_t stream_hw = nullptr;
  std::vector<nvjpegDecodeParams_t> params_hw;  // one per image of a batch
  std::string hw_reason;
  int prealloc_batch = 0, prealloc_w = 0, prealloc_h = 0;

  cudaStream_t g_stream = nullptr;
  // Ordering: caller -> G (ready, h_failed), G -> caller (g_done).
  cudaEvent_t ready = nullptr, h_failed = nullptr, g_done = nullptr;
  // The engine state's last batch; it must finish before the state is
  // initialised for the next one.
  cudaEvent_t h_batch_done = nullptr;
  // Timing, read one call later without blocking.
  cudaEvent_t h_begin = nullptr, h_end = nullptr, g_begin = nullptr, g_end = nullptr;
  uint64_t pending_h = 0, pending_g = 0;
  std::deque<double> h_batch_ms;

  Arena arenas[2];
  uint64_t calls = 0;
  size_t device_padding = 0, pinned_padding = 0;
  // Process-wide allocator counts when this decoder started.
  uint64_t base_allocs = 0, base_frees = 0;

  GpuJpegStats stats;

  // Per call scratch, kept for its capacity.
  std::vector<Plan> plans;
  std::vector<size_t> h_jobs, g_jobs, g_retry;
  std::vector<const unsigned char*> h_data;
  std::vector<size_t> h_lengths;
  std::vector<nvjpegImage_t> h_images;

  ~State();
  Status init();
  Status create_handle(nvjpegBackend_t backend, nvjpegHandle_t* out);
  Status init_lane(Lane* lane);
  void init_hardware();
  bool use_roi_g() const { return options.decode_roi && nv->has_roi(); }
  bool use_roi_h() const { return options.decode_roi && nv->has_batched_roi(); }
  Plan classify(const GpuJpegJob& job);
  bool engine_accepts(const GpuJpegJob& job);
  Status reserve_arena(Arena* arena, size_t bytes);
  void reserve_nvjpeg(size_t largest_pixels);
  void preallocate_engine(std::span<const size_t> idx);
  void set_params(nvjpegDecodeParams_t p, const CropWindow& crop, bool roi) const;
  GpuJpegResult place(const GpuJpegJob& job, const Plan& plan, const Arena& arena, JpegTier tier,
                      bool roi) const;
  bool run_engine_batch(std::span<const GpuJpegJob> jobs, std::span<const size_t> idx,
                        const Arena& arena, cudaStream_t stream, std::vector<GpuJpegResult>* out);
  Status run_cuda_one(const GpuJpegJob& job, const Plan& plan, const Arena& arena,
                      GpuJpegResult* r);
  size_t plan_call(std::span<const GpuJpegJob> jobs, size_t* largest);
  Status run_engine(std::span<const GpuJpegJob> jobs, const Arena& arena, cudaStream_t stream,
                    std::vector<GpuJpegResult>* out);
  Status run_cuda_path(std::span<const GpuJpegJob> jobs, const Arena& arena, cudaStream_t stream,
                       std::vector<GpuJpegResult>* out);
  Status queue_cuda_path(std::span<const GpuJpegJob> jobs, const Arena& arena, cudaStream_t stream,
                         std::vector<GpuJpegResult>* out);
  void count(std::span<const GpuJpegJob> jobs, std::vector<GpuJpegResult>* out);
  void harvest_timing(bool next_call);
};

namespace detail {

double share_point(uint64_t id) {
  uint64_t z = id + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

double adapt_share(double share, double h_ms, double g_ms, double h_p99_over_median) {
  if (h_ms > 0 && g_ms > 0) share += 0.25 * (g_ms / (h_ms + g_ms) - share);
  if (h_p99_over_median > 2.0) share -= 0.02;
  return std::clamp(share, 0.05, 0.95);
}

}  // namespace detail

std::string_view jpeg_tier_name(JpegTier tier) {
  switch (tier) {
    case JpegTier::kHardware: return "hardware";
    case JpegTier::kCuda: return "cuda";
    case JpegTier::kCpu: return "cpu";
  }
  return "?";
}

GpuJpegDecoder::State::~State() {
  // Work in flight may still write the arenas or read nvJPEG's buffers:
  // finish it before anything is destroyed.
  if (g_stream) cuda->StreamSynchronize(g_stream);
  for (const Arena& a : arenas) {
    if (a.free) cuda->EventSynchronize(a.free);
  }
  if (nv) {
    for (nvjpegDecodeParams_t p : params_hw) nv->DecodeParamsDestroy(p);
    if (stream_hw) nv->JpegStreamDestroy(stream_hw);
    if (hw_state) nv->JpegStateDestroy(hw_state);
    for (Lane& l : lanes) {
      if (l.done) cuda->EventSynchronize(l.done);
      for (int b = 0; b < 2; ++b) {
        if (l.state[b]) nv->JpegStateDestroy(l.state[b]);
        if (l.pinned[b]) nv->BufferPinnedDestroy(l.pinned[b]);
        if (l.device_buffer[b]) nv->BufferDeviceDestroy(l.device_buffer[b]);
      }
      if (l.params) nv->DecodeParamsDestroy(l.params);
      if (l.stream) nv->JpegStreamDestroy(l.stream);
    }
    for (nvjpegJpegDecoder_t d : decoders) {
      if (d) nv->DecoderDestroy(d);
    }
    if (hw) nv->Destroy(hw);
    if (handle) nv->Destroy(handle);
  }
  for (Arena& a : arenas) {
    if (a.data) cuda->Free(a.data);
    if (a.free) cuda->EventDestroy(a.free);
  }
  for (Lane& l : lanes) {
    if (l.done) cuda->EventDestroy(l.done);
  }
  for (cudaEvent_t e : {ready, h_failed, g_done, h_batch_done, h_begin, h_end, g_begin, g_end}) {
    if (e) cuda->EventDestroy(e);
  }
  if (g_stream) cuda->StreamDestroy(g_stream);
}

// A handle with strict bitstream checks, so a damaged file is an error
// (then decoded on the CPU, which reports it) instead of plausible garbage,
// and chroma upsampling by interpolation, as libjpeg-turbo does it (without
// it nvJPEG replicates chroma samples, and sharp colour edges differ far
// more from the CPU's pixels; nvImageCodec sets it for the same reason).
// How an nvJPEG that lacks a flag answers is not documented: a handle that
// fails with the flags is made again without them, whatever the status,
// and stats() says the strict checks are off.
Status GpuJpegDecoder::State::create_handle(nvjpegBackend_t backend, nvjpegHandle_t* out) {
  const unsigned flags = NVJPEG_FLAGS_BITSTREAM_STRICT | NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION;
  if (nv->CreateEx(backend, &g_dev_allocator, &g_pinned_allocator, flags, out) ==
      NVJPEG_STATUS_SUCCESS) {
    if (backend != NVJPEG_BACKEND_HARDWARE) strict = true;
    return Status();
  }
  *out = nullptr;
  return nv->check(
      nv->CreateEx(backend, &g_dev_allocator, &g_pinned_allocator, NVJPEG_FLAGS_DEFAULT, out),
      fmt::format("nvjpegCreateEx(backend {})", backend));
}

Status GpuJpegDecoder::State::init_lane(Lane* l) {
  SLUICE_RETURN_IF_ERROR(
      nv->check(nv->JpegStreamCreate(handle, &l->stream), "nvjpegJpegStreamCreate"));
  SLUICE_RETURN_IF_ERROR(
      nv->check(nv->DecodeParamsCreate(handle, &l->params), "nvjpegDecodeParamsCreate"));
  SLUICE_RETURN_IF_ERROR(
      cuda->check(cuda->EventCreateWithFlags(&l->done, cudaEventDisableTiming), "cudaEventCreate"));
  for (int b = 0; b < 2; ++b) {
    if (!decoders[b]) continue;
    const std::string what = fmt::format("nvJPEG decoder state (backend {})", b + 1);
    SLUICE_RETURN_IF_ERROR(
        nv->check(nv->DecoderStateCreate(handle, decoders[b], &l->state[b]), what));
    SLUICE_RETURN_IF_ERROR(
        nv->check(nv->BufferPinnedCreate(handle, &g_pinned_allocator, &l->pinned[b]), what));
    SLUICE_RETURN_IF_ERROR(
        nv->check(nv->BufferDeviceCreate(handle, &g_dev_allocator, &l->device_buffer[b]), what));
    SLUICE_RETURN_IF_ERROR(nv->check(nv->StateAttachPinnedBuffer(l->state[b], l->pinned[b]), what));
    SLUICE_RETURN_IF_ERROR(
        nv->check(nv->StateAttachDeviceBuffer(l->state[b], l->device_buffer[b]), what));
  }
  return Status();
}

// The engine is optional twice over: the batched entry points may be
// missing, and nvjpegCreateEx refuses the hardware backend on GPUs without
// the engine. Either way tier H is off and G takes its share.
void GpuJpegDecoder::State::init_hardware() {
  if (!nv->has_batched()) {
    hw_reason = nv->library + " lacks the batched decode API";
    return;
  }
  Status s = create_handle(NVJPEG_BACKEND_HARDWARE, &hw);
  if (!s.ok()) {
    hw = nullptr;
    hw_reason = fmt::format("no hardware JPEG engine ({})", s.message());
    return;
  }
  if (nv->JpegStateCreate(hw, &hw_state) != NVJPEG_STATUS_SUCCESS ||
      nv->JpegStreamCreate(hw, &stream_hw) != NVJPEG_STATUS_SUCCESS) {
    hw_reason = "the hardware JPEG engine would not start";
    if (stream_hw) nv->JpegStreamDestroy(stream_hw);
    if (hw_state) nv->JpegStateDestroy(hw_state);
    nv->Destroy(hw);
    hw = nullptr, hw_state = nullptr, stream_hw = nullptr;
  }
}

Status GpuJpegDecoder::State::init() {
  SLUICE_RETURN_IF_ERROR(cuda->use_device(device));
  SLUICE_RETURN_IF_ERROR(cuda->check(cuda->StreamCreateWithFlags(&g_stream, cudaStreamNonBlocking),
                                     "cudaStreamCreate"));
  for (cudaEvent_t* e :
       {&ready, &h_failed, &g_done, &h_batch_done, &arenas[0].free, &arenas[1].free}) {
    SLUICE_RETURN_IF_ERROR(
        cuda->check(cuda->EventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate"));
  }
  for (cudaEvent_t* e : {&h_begin, &h_end, &g_begin, &g_end}) {
    SLUICE_RETURN_IF_ERROR(
        cuda->check(cuda->EventCreateWithFlags(e, cudaEventDefault), "cudaEventCreate"));
  }
  if (!nv) return Status();
  const CudaRuntime* expected = nullptr;
  g_alloc_cuda.compare_exchange_strong(expected, cuda);
  base_allocs = g_device_allocs + g_pinned_allocs;
  base_frees = g_device_frees + g_pinned_frees;
  SLUICE_RETURN_IF_ERROR(create_handle(NVJPEG_BACKEND_DEFAULT, &handle));
  SLUICE_RETURN_IF_ERROR(nv->check(nv->DecoderCreate(handle, NVJPEG_BACKEND_HYBRID, &decoders[0]),
                                   "nvJPEG backend 1"));
  // GPU Huffman is an optimisation: without it large images take the
  // CPU-Huffman decoder too.
  large_ok =
      nv->DecoderCreate(handle, NVJPEG_BACKEND_GPU_HYBRID, &decoders[1]) == NVJPEG_STATUS_SUCCESS;
  if (!large_ok) decoders[1] = nullptr;
  for (Lane& l : lanes) SLUICE_RETURN_IF_ERROR(init_lane(&l));
  init_hardware();
  reserve_nvjpeg(0);
  return Status();
}

bool GpuJpegDecoder::State::engine_accepts(const GpuJpegJob& job) {
  const auto* data = reinterpret_cast<const unsigned char*>(job.bytes.data());
  if (nv->JpegStreamParse(hw, data, job.bytes.size(), 0, 0, stream_hw) != NVJPEG_STATUS_SUCCESS) {
    return false;
  }
  // nvJPEG answers 0 for "supported".
  int verdict = -1;
  nvjpegStatus_t s;
  if (use_roi_h()) {
    if (params_hw.empty()) {
      nvjpegDecodeParams_t p = nullptr;
      if (nv->DecodeParamsCreate(hw, &p) != NVJPEG_STATUS_SUCCESS) return false;
      params_hw.push_back(p);
    }
    set_params(params_hw[0], job.crop, true);
    s = nv->DecodeBatchedSupportedEx(hw, stream_hw, params_hw[0], &verdict);
  } else {
    s = nv->DecodeBatchedSupported(hw, stream_hw, &verdict);
  }
  return s == NVJPEG_STATUS_SUCCESS && verdict == 0;
}

Plan GpuJpegDecoder::State::classify(const GpuJpegJob& job) {
  Plan plan;
  if (!nv) {
    plan.reason = unavailable_error(nv_reason);
    return plan;
  }
  const auto* data = reinterpret_cast<const unsigned char*>(job.bytes.data());
  if (job.bytes.size() < 2 || data[0] != 0xFF || data[1] != 0xD8) {
    plan.reason = unimplemented_error("not a JPEG");
    return plan;
  }
  int components = 0;
  nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
  int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
  nvjpegStatus_t s =
      nv->GetImageInfo(handle, data, job.bytes.size(), &components, &css, widths, heights);
  if (s != NVJPEG_STATUS_SUCCESS) {
    plan.reason = unimplemented_error("nvjpegGetImageInfo: " + nvjpeg_status_name(s));
    return plan;
  }
  plan.image_w = widths[0], plan.image_h = heights[0];
  const CropWindow& c = job.crop;
  if (c.width <= 0 || c.height <= 0 || c.x < 0 || c.y < 0 || c.x + c.width > plan.image_w ||
      c.y + c.height > plan.image_h) {
    plan.reason = invalid_argument_error(
        fmt::format("crop {}x{} at ({}, {}) is not inside the {}x{} image", c.width, c.height, c.x,
                    c.y, plan.image_w, plan.image_h));
    return plan;
  }
  plan.tier = JpegTier::kCuda;
  // Nothing says the engine honours the strict flag (DALI PR #3113 saw it
  // fail on some corrupt streams, not on all): a file cut short, the usual
  // damage, has no end-of-image marker and goes to the CUDA path, which
  // checks strictly.
  const bool whole = job.bytes.size() >= 4 && data[job.bytes.size() - 2] == 0xFF &&
                     data[job.bytes.size() - 1] == 0xD9;
  if (hw && whole && detail::share_point(job.sample_id) < share) {
    if (engine_accepts(job)) {
      plan.tier = JpegTier::kHardware;
    } else {
      ++stats.hardware_refused;
    }
  }
  // An engine image may be redone on G, so its slot fits either output.
  const size_t full = static_cast<size_t>(plan.image_w) * 3 * plan.image_h;
  const size_t crop = static_cast<size_t>(c.width) * 3 * c.height;
  const bool full_needed = !use_roi_g() || (plan.tier == JpegTier::kHardware && !use_roi_h());
  plan.slot_bytes = round_up(full_needed ? full : crop, kSlotAlign);
  return plan;
}

// Growing waits for the readers of the arena's last results (the caller
// queued them before this call) and for nothing else; the new block is
// rounded up so that it grows rarely.
Status GpuJpegDecoder::State::reserve_arena(Arena* a, size_t bytes) {
  if (bytes <= a->bytes) return Status();
  const size_t want = round_up(std::max(bytes, a->bytes + a->bytes / 2), kArenaStep);
  if (a->data) {
    ++stats.arena_reallocations;
    SLUICE_RETURN_IF_ERROR(cuda->check(cuda->EventSynchronize(a->free), "cudaEventSynchronize"));
    SLUICE_RETURN_IF_ERROR(cuda->check(cuda->Free(a->data), "cudaFree"));
    a->data = nullptr, a->bytes = 0;
  }
  void* p = nullptr;
  if (cuda->Malloc(&p, want) != cudaSuccess) {
    cuda->GetLastError();
    return resource_exhausted_error(
        fmt::format("cannot allocate {} bytes of device memory for decoded JPEGs", want));
  }
  ++stats.arena_allocations;
  a->data = static_cast<uint8_t*>(p), a->bytes = want;
  return Status();
}

// nvJPEG sizes its buffers for the image at hand; with a padding that
// covers the largest image seen so far (a quarter of the next power of two
// of its worst-case 16-bit coefficients, at least DALI's defaults), the
// first buffers serve the rest of the epoch.
void GpuJpegDecoder::State::reserve_nvjpeg(size_t largest_pixels) {
  const size_t need = next_pow2(largest_pixels * 6) / 4;
  const size_t device_pad = std::max(kMinDevicePadding, need);
  const size_t pinned_pad = std::max(kMinPinnedPadding, need);
  for (nvjpegHandle_t h : {handle, hw}) {
    if (!h) continue;
    if (nv->SetDeviceMemoryPadding && device_pad > device_padding) {
      nv->SetDeviceMemoryPadding(device_pad, h);
    }
    if (nv->SetPinnedMemoryPadding && pinned_pad > pinned_padding) {
      nv->SetPinnedMemoryPadding(pinned_pad, h);
    }
  }
  device_padding = std::max(device_padding, device_pad);
  pinned_padding = std::max(pinned_padding, pinned_pad);
}

// The engine's memory for a batch of this many images of this size, taken
// once ahead (nvjpegDecodeBatchedPreAllocate, with 4:4:4 as the worst
// case, as DALI hints it) instead of on the first batch that needs more.
void GpuJpegDecoder::State::preallocate_engine(std::span<const size_t> idx) {
  if (!nv->DecodeBatchedPreAllocate) return;
  int w = 0, h = 0;
  for (size_t i : idx) {
    w = std::max(w, plans[i].image_w);
    h = std::max(h, plans[i].image_h);
  }
  const int want_w = static_cast<int>(round_up(std::max(w, prealloc_w), 256));
  const int want_h = static_cast<int>(round_up(std::max(h, prealloc_h), 256));
  // At most kEngineReserve for the whole batch: a few huge images must not
  // reserve room for max_batch of them.
  const size_t per_image = static_cast<size_t>(want_w) * want_h * 3;
  const int fits = static_cast<int>(std::max<size_t>(1, kEngineReserve / per_image));
  const int batch = std::min(std::max<int>(static_cast<int>(idx.size()), options.max_batch), fits);
  if (batch <= prealloc_batch && want_w <= prealloc_w && want_h <= prealloc_h) return;
  // The state may still serve the engine's last batch.
  if (cuda->EventSynchronize(h_batch_done) != cudaSuccess) return;
  if (nv->DecodeBatchedPreAllocate(hw, hw_state, batch, want_w, want_h, NVJPEG_CSS_444,
                                   NVJPEG_OUTPUT_RGBI) == NVJPEG_STATUS_SUCCESS) {
    ++stats.engine_preallocations;
  }
  prealloc_batch = std::max(prealloc_batch, batch);
  prealloc_w = want_w, prealloc_h = want_h;
}

void GpuJpegDecoder::State::set_params(nvjpegDecodeParams_t p, const CropWindow& crop,
                                       bool roi) const {
  nv->DecodeParamsSetOutputFormat(p, NVJPEG_OUTPUT_RGBI);
  if (nv->DecodeParamsSetAllowCMYK) nv->DecodeParamsSetAllowCMYK(p, 1);
  // (0, 0, -1, -1) is nvJPEG's "whole image".
  if (roi) {
    nv->DecodeParamsSetROI(p, crop.x, crop.y, crop.width, crop.height);
  } else if (nv->has_roi()) {
    nv->DecodeParamsSetROI(p, 0, 0, -1, -1);
  }
}

GpuJpegResult GpuJpegDecoder::State::place(const GpuJpegJob& job, const Plan& plan,
                                           const Arena& arena, JpegTier tier, bool roi) const {
  GpuJpegResult r;
  r.tier = tier;
  r.pixels = arena.data + plan.slot;
  r.region_decoded = roi;
  r.width = roi ? job.crop.width : plan.image_w;
  r.height = roi ? job.crop.height : plan.image_h;
  r.pitch = static_cast<size_t>(r.width) * 3;
  r.crop = roi ? CropWindow{0, 0, job.crop.width, job.crop.height} : job.crop;
  return r;
}

// One engine call; false when it failed (its images then go to G). The
// caller has waited for the arena's readers: the engine writes now.
bool GpuJpegDecoder::State::run_engine_batch(std::span<const GpuJpegJob> jobs,
                                             std::span<const size_t> idx, const Arena& arena,
                                             cudaStream_t stream, std::vector<GpuJpegResult>* out) {
  const bool roi = use_roi_h();
  const int n = static_cast<int>(idx.size());
  h_data.clear(), h_lengths.clear(), h_images.clear();
  while (roi && params_hw.size() < idx.size()) {
    nvjpegDecodeParams_t p = nullptr;
    if (nv->DecodeParamsCreate(hw, &p) != NVJPEG_STATUS_SUCCESS) return false;
    params_hw.push_back(p);
  }
  for (int k = 0; k < n; ++k) {
    const size_t i = idx[k];
    (*out)[i] = place(jobs[i], plans[i], arena, JpegTier::kHardware, roi);
    h_data.push_back(reinterpret_cast<const unsigned char*>(jobs[i].bytes.data()));
    h_lengths.push_back(jobs[i].bytes.size());
    nvjpegImage_t img{};
    img.channel[0] = const_cast<uint8_t*>((*out)[i].pixels);
    img.pitch[0] = (*out)[i].pitch;
    h_images.push_back(img);
    if (roi) set_params(params_hw[k], jobs[i].crop, true);
  }
  if (cuda->EventSynchronize(h_batch_done) != cudaSuccess ||
      nv->DecodeBatchedInitialize(hw, hw_state, n, 1, NVJPEG_OUTPUT_RGBI) !=
          NVJPEG_STATUS_SUCCESS) {
    return false;
  }
  nvjpegStatus_t s = roi ? nv->DecodeBatchedEx(hw, hw_state, h_data.data(), h_lengths.data(),
                                               h_images.data(), params_hw.data(), stream)
                         : nv->DecodeBatched(hw, hw_state, h_data.data(), h_lengths.data(),
                                             h_images.data(), stream);
  return s == NVJPEG_STATUS_SUCCESS && cuda->EventRecord(h_batch_done, stream) == cudaSuccess;
}

// One image through the decoupled API on g_stream: host phase, upload,
// device phase, in the next lane once its previous image is done.
Status GpuJpegDecoder::State::run_cuda_one(const GpuJpegJob& job, const Plan& plan,
                                           const Arena& arena, GpuJpegResult* r) {
  const bool roi = use_roi_g();
  *r = place(job, plan, arena, JpegTier::kCuda, roi);
  Lane& l = lanes[next_lane];
  next_lane ^= 1;
  SLUICE_RETURN_IF_ERROR(cuda->check(cuda->EventSynchronize(l.done), "cudaEventSynchronize"));
  const auto* data = reinterpret_cast<const unsigned char*>(job.bytes.data());
  SLUICE_RETURN_IF_ERROR(
      nv->check(nv->JpegStreamParse(handle, data, job.bytes.size(), 0, 0, l.stream),
                "nvjpegJpegStreamParse"));
  set_params(l.params, job.crop, roi);
  int b = 0;
  if (large_ok && static_cast<int64_t>(r->width) * r->height >= options.gpu_huffman_min_pixels) {
    int verdict = -1;
    if (nv->DecoderJpegSupported(decoders[1], l.stream, l.params, &verdict) ==
            NVJPEG_STATUS_SUCCESS &&
        verdict == 0) {
      b = 1;
    }
  }
  SLUICE_RETURN_IF_ERROR(
      nv->check(nv->DecodeJpegHost(handle, decoders[b], l.state[b], l.params, l.stream),
                "nvjpegDecodeJpegHost"));
  Status st =
      nv->check(nv->DecodeJpegTransferToDevice(handle, decoders[b], l.state[b], l.stream, g_stream),
                "nvjpegDecodeJpegTransferToDevice");
  if (st.ok()) {
    nvjpegImage_t img{};
    img.channel[0] = const_cast<uint8_t*>(r->pixels);
    img.pitch[0] = r->pitch;
    st = nv->check(nv->DecodeJpegDevice(handle, decoders[b], l.state[b], &img, g_stream),
                   "nvjpegDecodeJpegDevice");
  }
  // Whatever was queued (a transfer, even if the device phase failed) ends
  // before the lane is reused.
  Status recorded = cuda->check(cuda->EventRecord(l.done, g_stream), "cudaEventRecord");
  return st.ok() ? recorded : st;
}

// The previous call's device times, if its events have completed; a call
// still running is skipped rather than waited for.
void GpuJpegDecoder::State::harvest_timing(bool next_call) {
  // Before the next call records over the events: with adaptive tuning,
  // wait for the last call's timing (the share needs both paths' times);
  // otherwise take what has completed.
  if (next_call && options.adaptive) {
    if (pending_h > 0) cuda->EventSynchronize(h_end);
    if (pending_g > 0) cuda->EventSynchronize(g_end);
  }
  double h_ms = 0, g_ms = 0;
  float ms = 0;
  const bool h_ok = pending_h > 0 && cuda->EventQuery(h_end) == cudaSuccess &&
                    cuda->EventElapsedTime(&ms, h_begin, h_end) == cudaSuccess;
  if (h_ok) h_ms = ms;
  const bool g_ok = pending_g > 0 && cuda->EventQuery(g_end) == cudaSuccess &&
                    cuda->EventElapsedTime(&ms, g_begin, g_end) == cudaSuccess;
  if (g_ok) g_ms = ms;
  cuda->GetLastError();
  stats.hardware.device_ms += h_ms;
  stats.cuda.device_ms += g_ms;
  if (h_ok) {
    h_batch_ms.push_back(h_ms);
    if (h_batch_ms.size() > kLatencyWindow) h_batch_ms.pop_front();
  }
  if (options.adaptive && h_ok && g_ok) {
    std::vector<double> sorted(h_batch_ms.begin(), h_batch_ms.end());
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    const double p99 = sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)];
    share = detail::adapt_share(share, h_ms / pending_h, g_ms / pending_g,
                                median > 0 ? p99 / median : 1.0);
  }
  // A path whose time was read is done; with the next call, whatever was
  // not read is given up (its events are recorded again).
  if (h_ok || next_call) pending_h = 0;
  if (g_ok || next_call) pending_g = 0;
}

GpuJpegDecoder::GpuJpegDecoder(std::unique_ptr<State> state) : state_(std::move(state)) {}
GpuJpegDecoder::~GpuJpegDecoder() = default;

Result<std::unique_ptr<GpuJpegDecoder>> GpuJpegDecoder::create(const CudaRuntime* cuda, int device,
                                                               const GpuJpegOptions& options) {
  if (!cuda) return invalid_argument_error("GpuJpegDecoder needs a CUDA runtime");
  return create(cuda, device, options, Nvjpeg::get(*cuda));
}

Result<std::unique_ptr<GpuJpegDecoder>> GpuJpegDecoder::create(const CudaRuntime* cuda, int device,
                                                               const GpuJpegOptions& options,
                                                               Result<const Nvjpeg*> nvjpeg) {
  if (!cuda) return invalid_argument_error("GpuJpegDecoder needs a CUDA runtime");
  if (!(options.hardware_share >= 0 && options.hardware_share <= 1) || options.max_batch < 0 ||
      options.gpu_huffman_min_pixels < 0) {
    return invalid_argument_error(
        fmt::format("GPU JPEG options: hardware_share {} must be in [0, 1], max_batch {} and "
                    "gpu_huffman_min_pixels {} must not be negative",
                    options.hardware_share, options.max_batch, options.gpu_huffman_min_pixels));
  }
  auto s = std::make_unique<State>();
  s->cuda = cuda, s->device = device, s->options = options, s->share = options.hardware_share;
  if (nvjpeg.ok()) {
    s->nv = *nvjpeg;
  } else {
    s->nv_reason = std::string(nvjpeg.status().message());
  }
  Status st = s->init();
  if (!st.ok() && s->nv && st.code() != StatusCode::kInvalidArgument) {
    // nvJPEG would not start on this device: decode on the CPU instead.
    auto cpu_only = std::make_unique<State>();
    cpu_only->cuda = cuda, cpu_only->device = device, cpu_only->options = options;
    cpu_only->nv_reason = fmt::format("{} did not start: {}", s->nv->library, st.message());
    s = std::move(cpu_only);
    st = s->init();
  }
  if (!st.ok()) return st;
  return std::unique_ptr<GpuJpegDecoder>(new GpuJpegDecoder(std::move(s)));
}

JpegTier GpuJpegDecoder::planned_tier(const GpuJpegJob& job) {
  const uint64_t refused = state_->stats.hardware_refused;
  JpegTier t = state_->classify(job).tier;
  state_->stats.hardware_refused = refused;
  return t;
}

GpuJpegStats GpuJpegDecoder::stats() {
  State& s = *state_;
  s.harvest_timing(false);
  GpuJpegStats out = s.stats;
  out.hardware_share = s.share;
  out.nvjpeg_available = s.nv != nullptr;
  out.hardware_available = s.hw != nullptr;
  out.strict_bitstream = s.strict;
  out.nvjpeg_library = s.nv ? fmt::format("{} ({}.{}.{}){}", s.nv->library, s.nv->major,
                                          s.nv->minor, s.nv->patch, s.hw ? "" : "; " + s.hw_reason)
                            : s.nv_reason;
  if (s.nv) out.nvjpeg_refused = s.nv->refused;
  if (s.nv) {
    out.nvjpeg_allocations = g_device_allocs + g_pinned_allocs - s.base_allocs;
    out.nvjpeg_reallocations = g_device_frees + g_pinned_frees - s.base_frees;
  }
  out.device_padding = s.device_padding;
  return out;
}

// 1. Tiers and arena slots: fills plans, h_jobs and g_jobs; returns the
// arena bytes the call needs and the largest image's pixels.
size_t GpuJpegDecoder::State::plan_call(std::span<const GpuJpegJob> jobs, size_t* largest) {
  plans.clear(), h_jobs.clear(), g_jobs.clear(), g_retry.clear();
  size_t total = 0;
  *largest = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    Plan p = classify(jobs[i]);
    p.slot = total;
    total += p.slot_bytes;
    if (p.tier == JpegTier::kHardware) h_jobs.push_back(i);
    if (p.tier == JpegTier::kCuda) g_jobs.push_back(i);
    if (p.tier != JpegTier::kCpu) {
      *largest = std::max(*largest, static_cast<size_t>(p.image_w) * p.image_h);
    }
    plans.push_back(std::move(p));
  }
  return total;
}

// 2. The engine, on the caller's stream, in batches of max_batch, once the
// arena's last readers are done (the engine does not wait for the stream).
Status GpuJpegDecoder::State::run_engine(std::span<const GpuJpegJob> jobs, const Arena& arena,
                                         cudaStream_t stream, std::vector<GpuJpegResult>* out) {
  if (h_jobs.empty()) return Status();
  SLUICE_RETURN_IF_ERROR(cuda->check(cuda->EventSynchronize(arena.free), "cudaEventSynchronize"));
  preallocate_engine(h_jobs);
  SLUICE_RETURN_IF_ERROR(cuda->check(cuda->EventRecord(h_begin, stream), "cudaEventRecord"));
  const size_t step = options.max_batch > 0 ? options.max_batch : h_jobs.size();
  for (size_t k = 0; k < h_jobs.size(); k += step) {
    std::span<const size_t> chunk(h_jobs.data() + k, std::min(step, h_jobs.size() - k));
    if (!run_engine_batch(jobs, chunk, arena, stream, out)) {
      ++stats.hardware_batch_failures;
      g_retry.insert(g_retry.end(), chunk.begin(), chunk.end());
    }
  }
  return cuda->check(cuda->EventRecord(h_end, stream), "cudaEventRecord");
}

// 3. The CUDA path on its own stream (which waits for what the caller
// queued before this call); images of a failed engine batch go last, after
// the engine's writes to their slots.
Status GpuJpegDecoder::State::run_cuda_path(std::span<const GpuJpegJob> jobs, const Arena& arena,
                                            cudaStream_t stream, std::vector<GpuJpegResult>* out) {
  Status st = queue_cuda_path(jobs, arena, stream, out);
  // On every way out, the caller's stream waits for what the CUDA path
  // queued: the arena's `free` event must cover those writes too.
  Status done = cuda->check(cuda->EventRecord(g_done, g_stream), "cudaEventRecord");
  if (done.ok()) {
    done = cuda->check(cuda->StreamWaitEvent(stream, g_done, 0), "cudaStreamWaitEvent");
  }
  return st.ok() ? done : st;
}

Status GpuJpegDecoder::State::queue_cuda_path(std::span<const GpuJpegJob> jobs, const Arena& arena,
                                              cudaStream_t stream,
                                              std::vector<GpuJpegResult>* out) {
  auto run_g = [&](size_t i, bool retry) {
    Status st = run_cuda_one(jobs[i], plans[i], arena, &(*out)[i]);
    if (!st.ok()) {
      ++stats.cuda_failures;
      (*out)[i] = GpuJpegResult{};
      (*out)[i].cpu_reason = st;
    }
    (*out)[i].hardware_fallback = retry;
  };
  const bool any = !g_jobs.empty() || !g_retry.empty();
  if (any) {
    SLUICE_RETURN_IF_ERROR(cuda->check(cuda->EventRecord(g_begin, g_stream), "cudaEventRecord"));
  }
  for (size_t i : g_jobs) run_g(i, false);
  if (!g_retry.empty()) {
    SLUICE_RETURN_IF_ERROR(cuda->check(cuda->EventRecord(h_failed, stream), "cudaEventRecord"));
    SLUICE_RETURN_IF_ERROR(
        cuda->check(cuda->StreamWaitEvent(g_stream, h_failed, 0), "cudaStreamWaitEvent"));
    for (size_t i : g_retry) run_g(i, true);
    stats.hardware_fallback_images += g_retry.size();
  }
  if (any) {
    SLUICE_RETURN_IF_ERROR(cuda->check(cuda->EventRecord(g_end, g_stream), "cudaEventRecord"));
  }
  return Status();
}

// 4. Tier C answers and the counters.
void GpuJpegDecoder::State::count(std::span<const GpuJpegJob> jobs,
                                  std::vector<GpuJpegResult>* out) {
  uint64_t n_h = 0, n_g = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    GpuJpegResult& r = (*out)[i];
    if (plans[i].tier == JpegTier::kCpu) r.cpu_reason = plans[i].reason;
    TierCounters& c = r.tier == JpegTier::kHardware ? stats.hardware
                      : r.tier == JpegTier::kCuda   ? stats.cuda
                                                    : stats.cpu;
    ++c.images;
    c.bytes += jobs[i].bytes.size();
    n_h += r.tier == JpegTier::kHardware;
    n_g += r.tier == JpegTier::kCuda;
  }
  pending_h = n_h, pending_g = n_g;
}

Status GpuJpegDecoder::decode(std::span<const GpuJpegJob> jobs, cudaStream_t stream,
                              std::vector<GpuJpegResult>* out) {
  State& s = *state_;
  out->assign(jobs.size(), GpuJpegResult{});
  SLUICE_RETURN_IF_ERROR(s.cuda->use_device(s.device));
  s.harvest_timing(true);
  const auto t0 = Clock::now();
  // This call's results go to one arena; the previous call's arena is free
  // once what the caller queued before this call is done.
  Arena& arena = s.arenas[s.calls % 2];
  Arena& previous = s.arenas[(s.calls + 1) % 2];
  ++s.calls;
  SLUICE_RETURN_IF_ERROR(
      s.cuda->check(s.cuda->EventRecord(previous.free, stream), "cudaEventRecord"));
  SLUICE_RETURN_IF_ERROR(s.cuda->check(s.cuda->EventRecord(s.ready, stream), "cudaEventRecord"));
  SLUICE_RETURN_IF_ERROR(
      s.cuda->check(s.cuda->StreamWaitEvent(s.g_stream, s.ready, 0), "cudaStreamWaitEvent"));
  size_t largest = 0;
  const size_t total = s.plan_call(jobs, &largest);
  if (total > 0) {
    s.reserve_nvjpeg(largest);
    Status st = s.reserve_arena(&arena, total);
    if (!st.ok()) {
      for (size_t i = 0; i < jobs.size(); ++i) (*out)[i].cpu_reason = st;
      return st;
    }
  }
  const auto t_plan = Clock::now();
  SLUICE_RETURN_IF_ERROR(s.run_engine(jobs, arena, stream, out));
  const auto t_h = Clock::now();
  SLUICE_RETURN_IF_ERROR(s.run_cuda_path(jobs, arena, stream, out));
  const auto t_g = Clock::now();
  s.count(jobs, out);
  s.stats.hardware.host_seconds += std::chrono::duration<double>(t_h - t_plan).count();
  s.stats.cuda.host_seconds += std::chrono::duration<double>(t_g - t_h).count();
  s.stats.classify_seconds += std::chrono::duration<double>(t_plan - t0).count();
  return Status();
}

}  // namespace sluice::device
