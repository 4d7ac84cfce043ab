#include "device/jpeg_tiers.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>

namespace sluice::device {
namespace {

using Clock = std::chrono::steady_clock;

// Output rows start on 256-byte boundaries, as cudaMalloc's own blocks do.
constexpr size_t kSlotAlign = 256;
// Engine batch latencies kept for the tail check.
constexpr size_t kLatencyWindow = 128;

// One decoupled CUDA-path decoder. Two pinned staging buffers alternate so
// the host phase of one image overlaps the upload of the previous one; the
// event says when an upload has read its buffer.
struct CudaPath {
  nvjpegJpegDecoder_t decoder = nullptr;
  nvjpegJpegState_t state = nullptr;
  nvjpegBufferPinned_t pinned[2] = {};
  nvjpegBufferDevice_t device_buffer = nullptr;
  cudaEvent_t uploaded[2] = {};
  int next = 0;
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

  nvjpegHandle_t handle = nullptr;  // the CUDA backends
  // Two parsed streams and parameter sets, alternating per image, as
  // NVIDIA's sample, DALI and torchvision use the decoupled API: image k+2
  // reuses k's only after k's upload (streams_g_free) has run.
  nvjpegJpegStream_t streams_g[2] = {};
  nvjpegDecodeParams_t params_g[2] = {};
  cudaEvent_t streams_g_free[2] = {};
  int stream_g_next = 0;
  CudaPath small, large;  // HYBRID (CPU Huffman), GPU_HYBRID
  bool large_ok = false;

  nvjpegHandle_t hw = nullptr;  // the engine; null where there is none
  nvjpegJpegState_t hw_state = nullptr;
  nvjpegJpegStream_t stream_hw = nullptr;
  std::vector<nvjpegDecodeParams_t> params_hw;  // one per image of a batch
  std::string hw_reason;

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

  uint8_t* arena = nullptr;
  size_t arena_bytes = 0;

  GpuJpegStats stats;

  // Per call scratch, kept for its capacity.
  std::vector<Plan> plans;
  std::vector<size_t> h_jobs, g_jobs, g_retry;
  std::vector<const unsigned char*> h_data;
  std::vector<size_t> h_lengths;
  std::vector<nvjpegImage_t> h_images;

  ~State();
  Status init();
  Status init_cuda_path(nvjpegBackend_t backend, CudaPath* p);
  void init_hardware();
  bool use_roi_g() const { return options.decode_roi && nv->has_roi(); }
  bool use_roi_h() const { return options.decode_roi && nv->has_batched_roi(); }
  Plan classify(const GpuJpegJob& job);
  bool engine_accepts(const GpuJpegJob& job);
  Status reserve_arena(size_t bytes, cudaStream_t stream);
  void set_params(nvjpegDecodeParams_t p, const CropWindow& crop, bool roi) const;
  GpuJpegResult place(const GpuJpegJob& job, const Plan& plan, JpegTier tier, bool roi) const;
  bool run_engine_batch(std::span<const GpuJpegJob> jobs, std::span<const size_t> idx,
                        cudaStream_t stream, std::vector<GpuJpegResult>* out);
  Status run_cuda_one(const GpuJpegJob& job, const Plan& plan, GpuJpegResult* r);
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
  // Work in flight may still write the arena or read nvJPEG's buffers:
  // finish it before anything is destroyed.
  if (g_stream) cuda->StreamSynchronize(g_stream);
  if (nv) {
    for (nvjpegDecodeParams_t p : params_hw) nv->DecodeParamsDestroy(p);
    for (nvjpegDecodeParams_t p : params_g) {
      if (p) nv->DecodeParamsDestroy(p);
    }
    if (stream_hw) nv->JpegStreamDestroy(stream_hw);
    for (nvjpegJpegStream_t j : streams_g) {
      if (j) nv->JpegStreamDestroy(j);
    }
    if (hw_state) nv->JpegStateDestroy(hw_state);
    for (CudaPath* p : {&small, &large}) {
      for (cudaEvent_t e : p->uploaded) {
        if (e) cuda->EventSynchronize(e);
      }
      if (p->state) nv->JpegStateDestroy(p->state);
      for (nvjpegBufferPinned_t b : p->pinned) {
        if (b) nv->BufferPinnedDestroy(b);
      }
      if (p->device_buffer) nv->BufferDeviceDestroy(p->device_buffer);
      if (p->decoder) nv->DecoderDestroy(p->decoder);
      for (cudaEvent_t e : p->uploaded) {
        if (e) cuda->EventDestroy(e);
      }
    }
    if (hw) nv->Destroy(hw);
    if (handle) nv->Destroy(handle);
  }
  if (arena) cuda->Free(arena);
  for (cudaEvent_t e : {ready, h_failed, g_done, h_batch_done, h_begin, h_end, g_begin, g_end,
                        streams_g_free[0], streams_g_free[1]}) {
    if (e) cuda->EventDestroy(e);
  }
  if (g_stream) cuda->StreamDestroy(g_stream);
}

Status GpuJpegDecoder::State::init_cuda_path(nvjpegBackend_t backend, CudaPath* p) {
  const std::string what = fmt::format("nvJPEG backend {}", backend);
  SLUICE_RETURN_IF_ERROR(nv->check(nv->DecoderCreate(handle, backend, &p->decoder), what));
  SLUICE_RETURN_IF_ERROR(nv->check(nv->DecoderStateCreate(handle, p->decoder, &p->state), what));
  for (int i = 0; i < 2; ++i) {
    SLUICE_RETURN_IF_ERROR(nv->check(nv->BufferPinnedCreate(handle, nullptr, &p->pinned[i]), what));
    SLUICE_RETURN_IF_ERROR(cuda->check(
        cuda->EventCreateWithFlags(&p->uploaded[i], cudaEventDisableTiming), "cudaEventCreate"));
  }
  SLUICE_RETURN_IF_ERROR(
      nv->check(nv->BufferDeviceCreate(handle, nullptr, &p->device_buffer), what));
  return nv->check(nv->StateAttachDeviceBuffer(p->state, p->device_buffer), what);
}

// The engine is optional twice over: the batched entry points may be
// missing, and nvjpegCreateEx refuses the hardware backend on GPUs without
// the engine. Either way tier H is off and G takes its share.
void GpuJpegDecoder::State::init_hardware() {
  if (!nv->has_batched()) {
    hw_reason = nv->library + " lacks the batched decode API";
    return;
  }
  nvjpegStatus_t s = nv->CreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &hw);
  if (s != NVJPEG_STATUS_SUCCESS) {
    hw = nullptr;
    hw_reason = fmt::format("no hardware JPEG engine ({})", nvjpeg_status_name(s));
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
       {&ready, &h_failed, &g_done, &h_batch_done, &streams_g_free[0], &streams_g_free[1]}) {
    SLUICE_RETURN_IF_ERROR(
        cuda->check(cuda->EventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate"));
  }
  for (cudaEvent_t* e : {&h_begin, &h_end, &g_begin, &g_end}) {
    SLUICE_RETURN_IF_ERROR(
        cuda->check(cuda->EventCreateWithFlags(e, cudaEventDefault), "cudaEventCreate"));
  }
  if (!nv) return Status();
  SLUICE_RETURN_IF_ERROR(nv->check(
      nv->CreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, 0, &handle), "nvjpegCreateEx"));
  for (int j = 0; j < 2; ++j) {
    SLUICE_RETURN_IF_ERROR(
        nv->check(nv->JpegStreamCreate(handle, &streams_g[j]), "nvjpegJpegStreamCreate"));
    SLUICE_RETURN_IF_ERROR(
        nv->check(nv->DecodeParamsCreate(handle, &params_g[j]), "nvjpegDecodeParamsCreate"));
  }
  SLUICE_RETURN_IF_ERROR(init_cuda_path(NVJPEG_BACKEND_HYBRID, &small));
  // GPU Huffman is an optimisation: without it large images take the
  // CPU-Huffman decoder too.
  large_ok = init_cuda_path(NVJPEG_BACKEND_GPU_HYBRID, &large).ok();
  init_hardware();
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
  if (hw && detail::share_point(job.sample_id) < share) {
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
  plan.slot_bytes = ((full_needed ? full : crop) + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  return plan;
}

// Growing waits for the previous call's readers (on `stream`) to finish:
// the old block is freed only after that.
Status GpuJpegDecoder::State::reserve_arena(size_t bytes, cudaStream_t stream) {
  if (bytes <= arena_bytes) return Status();
  const size_t want = std::max(bytes, arena_bytes + arena_bytes / 2);
  if (arena) {
    SLUICE_RETURN_IF_ERROR(cuda->check(cuda->StreamSynchronize(stream), "cudaStreamSynchronize"));
    SLUICE_RETURN_IF_ERROR(cuda->check(cuda->Free(arena), "cudaFree"));
    arena = nullptr, arena_bytes = 0;
  }
  void* p = nullptr;
  if (cuda->Malloc(&p, want) != cudaSuccess) {
    cuda->GetLastError();
    return resource_exhausted_error(
        fmt::format("cannot allocate {} bytes of device memory for decoded JPEGs", want));
  }
  arena = static_cast<uint8_t*>(p), arena_bytes = want;
  return Status();
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

GpuJpegResult GpuJpegDecoder::State::place(const GpuJpegJob& job, const Plan& plan, JpegTier tier,
                                           bool roi) const {
  GpuJpegResult r;
  r.tier = tier;
  r.pixels = arena + plan.slot;
  r.region_decoded = roi;
  r.width = roi ? job.crop.width : plan.image_w;
  r.height = roi ? job.crop.height : plan.image_h;
  r.pitch = static_cast<size_t>(r.width) * 3;
  r.crop = roi ? CropWindow{0, 0, job.crop.width, job.crop.height} : job.crop;
  return r;
}

// One engine call; false when it failed (its images then go to G).
bool GpuJpegDecoder::State::run_engine_batch(std::span<const GpuJpegJob> jobs,
                                             std::span<const size_t> idx, cudaStream_t stream,
                                             std::vector<GpuJpegResult>* out) {
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
    (*out)[i] = place(jobs[i], plans[i], JpegTier::kHardware, roi);
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
// device phase.
Status GpuJpegDecoder::State::run_cuda_one(const GpuJpegJob& job, const Plan& plan,
                                           GpuJpegResult* r) {
  const bool roi = use_roi_g();
  *r = place(job, plan, JpegTier::kCuda, roi);
  const auto* data = reinterpret_cast<const unsigned char*>(job.bytes.data());
  const int j = stream_g_next;
  stream_g_next ^= 1;
  SLUICE_RETURN_IF_ERROR(
      cuda->check(cuda->EventSynchronize(streams_g_free[j]), "cudaEventSynchronize"));
  nvjpegJpegStream_t stream_g = streams_g[j];
  nvjpegDecodeParams_t params = params_g[j];
  SLUICE_RETURN_IF_ERROR(
      nv->check(nv->JpegStreamParse(handle, data, job.bytes.size(), 0, 0, stream_g),
                "nvjpegJpegStreamParse"));
  set_params(params, job.crop, roi);
  CudaPath* p = &small;
  if (large_ok && static_cast<int64_t>(r->width) * r->height >= options.gpu_huffman_min_pixels) {
    int verdict = -1;
    if (nv->DecoderJpegSupported(large.decoder, stream_g, params, &verdict) ==
            NVJPEG_STATUS_SUCCESS &&
        verdict == 0) {
      p = &large;
    }
  }
  const int b = p->next;
  p->next ^= 1;
  // nvJPEG's host phase writes this pinned buffer: its last upload must be done.
  SLUICE_RETURN_IF_ERROR(
      cuda->check(cuda->EventSynchronize(p->uploaded[b]), "cudaEventSynchronize"));
  SLUICE_RETURN_IF_ERROR(nv->check(nv->StateAttachPinnedBuffer(p->state, p->pinned[b]),
                                   "nvjpegStateAttachPinnedBuffer"));
  SLUICE_RETURN_IF_ERROR(nv->check(
      nv->DecodeJpegHost(handle, p->decoder, p->state, params, stream_g), "nvjpegDecodeJpegHost"));
  SLUICE_RETURN_IF_ERROR(
      nv->check(nv->DecodeJpegTransferToDevice(handle, p->decoder, p->state, stream_g, g_stream),
                "nvjpegDecodeJpegTransferToDevice"));
  SLUICE_RETURN_IF_ERROR(
      cuda->check(cuda->EventRecord(p->uploaded[b], g_stream), "cudaEventRecord"));
  SLUICE_RETURN_IF_ERROR(
      cuda->check(cuda->EventRecord(streams_g_free[j], g_stream), "cudaEventRecord"));
  nvjpegImage_t img{};
  img.channel[0] = const_cast<uint8_t*>(r->pixels);
  img.pitch[0] = r->pitch;
  return nv->check(nv->DecodeJpegDevice(handle, p->decoder, p->state, &img, g_stream),
                   "nvjpegDecodeJpegDevice");
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
  out.nvjpeg_library = s.nv ? fmt::format("{} ({}.{}.{}){}", s.nv->library, s.nv->major,
                                          s.nv->minor, s.nv->patch, s.hw ? "" : "; " + s.hw_reason)
                            : s.nv_reason;
  return out;
}

Status GpuJpegDecoder::decode(std::span<const GpuJpegJob> jobs, cudaStream_t stream,
                              std::vector<GpuJpegResult>* out) {
  State& s = *state_;
  out->assign(jobs.size(), GpuJpegResult{});
  SLUICE_RETURN_IF_ERROR(s.cuda->use_device(s.device));
  s.harvest_timing(true);
  const auto t0 = Clock::now();

  // 1. Tiers and arena slots.
  s.plans.clear(), s.h_jobs.clear(), s.g_jobs.clear(), s.g_retry.clear();
  size_t total = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    Plan p = s.classify(jobs[i]);
    p.slot = total;
    total += p.slot_bytes;
    if (p.tier == JpegTier::kHardware) s.h_jobs.push_back(i);
    if (p.tier == JpegTier::kCuda) s.g_jobs.push_back(i);
    s.plans.push_back(std::move(p));
  }
  if (total > 0) {
    Status st = s.reserve_arena(total, stream);
    if (!st.ok()) {
      for (size_t i = 0; i < jobs.size(); ++i) (*out)[i].cpu_reason = st;
      return st;
    }
  }
  const auto t_plan = Clock::now();
  const double plan_seconds = std::chrono::duration<double>(t_plan - t0).count();

  // 2. The engine, on the caller's stream, in batches of max_batch. G waits
  // for whatever the caller queued before this call (readers of the arena).
  auto cuda_ok = [&](cudaError_t e, const char* what) { return s.cuda->check(e, what); };
  SLUICE_RETURN_IF_ERROR(cuda_ok(s.cuda->EventRecord(s.ready, stream), "cudaEventRecord"));
  SLUICE_RETURN_IF_ERROR(
      cuda_ok(s.cuda->StreamWaitEvent(s.g_stream, s.ready, 0), "cudaStreamWaitEvent"));
  if (!s.h_jobs.empty()) {
    SLUICE_RETURN_IF_ERROR(cuda_ok(s.cuda->EventRecord(s.h_begin, stream), "cudaEventRecord"));
    const size_t step = s.options.max_batch > 0 ? s.options.max_batch : s.h_jobs.size();
    for (size_t k = 0; k < s.h_jobs.size(); k += step) {
      std::span<const size_t> chunk(s.h_jobs.data() + k, std::min(step, s.h_jobs.size() - k));
      if (!s.run_engine_batch(jobs, chunk, stream, out)) {
        ++s.stats.hardware_batch_failures;
        s.g_retry.insert(s.g_retry.end(), chunk.begin(), chunk.end());
      }
    }
    SLUICE_RETURN_IF_ERROR(cuda_ok(s.cuda->EventRecord(s.h_end, stream), "cudaEventRecord"));
  }
  const auto t_h = Clock::now();

  // 3. The CUDA path on its own stream; images of a failed engine batch go
  // last, after the engine's writes to their slots.
  if (!s.g_jobs.empty() || !s.g_retry.empty()) {
    SLUICE_RETURN_IF_ERROR(cuda_ok(s.cuda->EventRecord(s.g_begin, s.g_stream), "cudaEventRecord"));
  }
  auto run_g = [&](size_t i, bool retry) {
    Status st = s.run_cuda_one(jobs[i], s.plans[i], &(*out)[i]);
    if (st.ok()) {
      (*out)[i].hardware_fallback = retry;
      return;
    }
    ++s.stats.cuda_failures;
    (*out)[i] = GpuJpegResult{};
    (*out)[i].cpu_reason = st;
    (*out)[i].hardware_fallback = retry;
  };
  for (size_t i : s.g_jobs) run_g(i, false);
  if (!s.g_retry.empty()) {
    SLUICE_RETURN_IF_ERROR(cuda_ok(s.cuda->EventRecord(s.h_failed, stream), "cudaEventRecord"));
    SLUICE_RETURN_IF_ERROR(
        cuda_ok(s.cuda->StreamWaitEvent(s.g_stream, s.h_failed, 0), "cudaStreamWaitEvent"));
    for (size_t i : s.g_retry) run_g(i, true);
    s.stats.hardware_fallback_images += s.g_retry.size();
  }
  if (!s.g_jobs.empty() || !s.g_retry.empty()) {
    SLUICE_RETURN_IF_ERROR(cuda_ok(s.cuda->EventRecord(s.g_end, s.g_stream), "cudaEventRecord"));
  }
  SLUICE_RETURN_IF_ERROR(cuda_ok(s.cuda->EventRecord(s.g_done, s.g_stream), "cudaEventRecord"));
  SLUICE_RETURN_IF_ERROR(
      cuda_ok(s.cuda->StreamWaitEvent(stream, s.g_done, 0), "cudaStreamWaitEvent"));
  const auto t_g = Clock::now();

  // 4. Tier C answers and the counters.
  uint64_t n_h = 0, n_g = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    GpuJpegResult& r = (*out)[i];
    if (s.plans[i].tier == JpegTier::kCpu) r.cpu_reason = s.plans[i].reason;
    TierCounters& c = r.tier == JpegTier::kHardware ? s.stats.hardware
                      : r.tier == JpegTier::kCuda   ? s.stats.cuda
                                                    : s.stats.cpu;
    ++c.images;
    c.bytes += jobs[i].bytes.size();
    n_h += r.tier == JpegTier::kHardware;
    n_g += r.tier == JpegTier::kCuda;
  }
  s.stats.hardware.host_seconds += std::chrono::duration<double>(t_h - t_plan).count();
  s.stats.cuda.host_seconds += std::chrono::duration<double>(t_g - t_h).count();
  s.stats.classify_seconds += plan_seconds;
  s.pending_h = n_h, s.pending_g = n_g;
  return Status();
}

}  // namespace sluice::device
