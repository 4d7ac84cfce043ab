// JPEG decoding on the GPU in three tiers, chosen per image:
//
//   H  nvJPEG's hardware engine (A100, H100, H200), batched, decoding only
//      the crop window where the library can (nvjpegDecodeBatchedEx + ROI);
//   G  nvJPEG's CUDA path (decoupled API: Huffman on the CPU below
//      gpu_huffman_min_pixels, on the GPU above, as DALI splits it) for
//      files the engine refuses (progressive, CMYK, unusual subsampling: its
//      own nvjpegDecodeBatchedSupported decides), for images outside the
//      engine's share, and for every image of an engine batch that failed;
//   C  the CPU crop decode (CropDecoder) and a copy, done by the caller:
//      non-JPEGs, files nvJPEG cannot read or decode, and everything when
//      nvJPEG is absent. Tier C is an answer, not an error.
//
// The engine's share. A sample goes to the engine when a hash of its sample
// id falls below `hardware_share` (DALI's starting point, 0.65), so for a
// fixed share the assignment is a pure function of (file, sample id): the
// same bytes come out whatever the batch composition or arrival order. With
// `adaptive`, the share follows measured per-image latency (H against G,
// both timed with CUDA events on their own streams, read without blocking
// one call later) toward the split where both finish together, and backs off
// while the engine's tail (p99 over the last 128 batches) grows. Tier choice
// then depends on timing, and since H, G and C do not produce identical
// pixels (different IDCTs and upsampling), neither do batches: a
// reproducible run fixes the share (adaptive = false, the default).
//
// Memory. H and G images land in two device arenas the decoder owns, used
// call by call in turn, each grown (never shrunk, in steps of 16 MB) when a
// call needs more: device memory is never allocated per image. Pixels are
// interleaved RGB with rows packed (pitch == width * 3, what SampleJob
// reads). A result is valid on `stream` after the call; every reader of it
// must be queued on `stream` before the next decode() call, and its arena
// is written again one call later, once those readers are done. nvJPEG's
// own buffers come through sluice's allocators (counted in stats()) with a
// padding that covers the largest image seen, and the engine's memory is
// reserved ahead for the batch's largest image, so that cudaMalloc and
// cudaFree (which waits for the whole device) stay out of a running epoch.
//
// Streams, and where nvJPEG departs from them. Engine batches are issued on
// the caller's stream, but the engine writes its output when the call is
// made, whatever the stream holds (torchcodec PR #1634, torchvision PR
// #9606): the host first waits until the readers of the arena it writes
// are done. CUDA-path images run on the decoder's own stream, which waits
// for the caller's stream before its first write and which the caller's
// stream waits for after its last, so all work is ordered on `stream` as
// if it ran there, and H and G overlap. The CUDA path's decoupled calls
// are not ordered by its stream alone either (nvjpegDecodeJpegTransferToDevice
// is partly synchronous with the host): its resources come in two lanes
// used image by image in turn, and the host waits for a lane's previous
// image before reusing it, as NVIDIA's sample and DALI do. The host also
// blocks in nvJPEG's host phase (Huffman on the CPU for small images),
// before re-initialising the engine's state for its next batch, and when
// an arena grows.
//
// Damaged files. nvJPEG is asked for strict bitstream checks
// (NVJPEG_FLAGS_BITSTREAM_STRICT) so that a truncated or corrupt file fails
// on the GPU and goes to tier C, where the CPU decode reports it as the bad
// sample it is, instead of decoding to plausible garbage.
//
// Destroy a decoder only after `stream` is done with its results.
//
// Thread safety: none; a decoder belongs to one thread (CUDA's current
// device is per thread: decode() makes `device` current).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/cuda_runtime.h"
#include "device/nvjpeg.h"
#include "sluice/crop_window.h"
#include "sluice/status.h"

namespace sluice::device {

struct GpuJpegOptions {
  // Share of engine-eligible samples sent to the engine (0..1). DALI starts
  // at 0.65 because the engine alone is slower than engine + CUDA cores.
  double hardware_share = 0.65;
  // Tune the share from measured latency (non-reproducible; see above).
  bool adaptive = false;
  // Images per engine call; larger batches amortise the call, smaller ones
  // bound the latency of the first image. 0: no limit.
  int max_batch = 64;
  // Decode only the crop window where nvJPEG supports it; off decodes
  // whole images (the crop is then reported inside them).
  bool decode_roi = true;
  // CUDA path: images of at least this many pixels (of the decoded region)
  // get Huffman decoding on the GPU; smaller ones on the CPU, where it is
  // faster (DALI's threshold).
  int64_t gpu_huffman_min_pixels = 1'000'000;
};

enum class JpegTier : uint8_t { kHardware, kCuda, kCpu };
std::string_view jpeg_tier_name(JpegTier tier);  // "hardware", "cuda", "cpu"

struct GpuJpegJob {
  // The encoded file: valid until `stream` has run this decode() call's
  // work (the engine may read it asynchronously, as DALI assumes).
  std::string_view bytes;
  CropWindow crop;         // full-resolution pixels; must lie inside the image
  uint64_t sample_id = 0;  // keys the engine share (not the order in the batch)
};

struct GpuJpegResult {
  JpegTier tier = JpegTier::kCpu;
  // Tiers H and G: device memory in the arena, RGB interleaved.
  const uint8_t* pixels = nullptr;
  int width = 0, height = 0;       // what was decoded: the crop, or the whole image
  size_t pitch = 0;                // bytes between rows: always width * 3
  CropWindow crop;                 // the requested crop, in these pixels
  bool region_decoded = false;     // only the crop was decoded (ROI)
  bool hardware_fallback = false;  // its engine batch failed: redone on G
  // Tier C: why the GPU did not decode it (for logs and counters; the
  // caller's CPU decode reports the file's own errors).
  Status cpu_reason;
};

struct TierCounters {
  uint64_t images = 0;
  uint64_t bytes = 0;       // encoded bytes
  double host_seconds = 0;  // host time in the tier's calls
  double device_ms = 0;     // GPU time between the tier's events (H, G)
};

struct GpuJpegStats {
  TierCounters hardware, cuda, cpu;
  uint64_t hardware_refused = 0;          // engine-share images the engine refused
  uint64_t hardware_batch_failures = 0;   // engine calls that failed
  uint64_t hardware_fallback_images = 0;  // their images, redone on G
  uint64_t cuda_failures = 0;             // G decodes that failed: sent to C
  double classify_seconds = 0;            // host time reading headers, asking the engine
  double hardware_share = 0;              // current share
  bool hardware_available = false;        // the engine exists and is used
  bool nvjpeg_available = false;
  bool strict_bitstream = false;  // nvJPEG accepted NVJPEG_FLAGS_BITSTREAM_STRICT
  std::string nvjpeg_library;     // or why none is used
  // Libraries the search passed over: "<candidate>: <why not>".
  std::vector<std::string> nvjpeg_refused;
  // Allocations. nvJPEG's own buffers through sluice's allocators since
  // this decoder started (cudaMalloc + cudaHostAlloc calls, and the frees
  // that replaced a buffer too small: each one waits for the whole device).
  // Process-wide counts: two decoders at once count each other's.
  uint64_t nvjpeg_allocations = 0, nvjpeg_reallocations = 0;
  uint64_t arena_allocations = 0;      // the output arenas' cudaMalloc calls
  uint64_t arena_reallocations = 0;    // of those, the ones that replaced a smaller arena
  uint64_t engine_preallocations = 0;  // nvjpegDecodeBatchedPreAllocate calls
  size_t device_padding = 0;           // nvJPEG's allocation rounding now
};

class GpuJpegDecoder {
 public:
  // Never fails for want of nvJPEG: without it (absent, wrong major
  // version, no engine) the decoder answers tier C or G as it can, and
  // stats() says why. Fails (kInvalidArgument) on bad options or a device
  // that does not exist, and kInternal where CUDA itself fails.
  static Result<std::unique_ptr<GpuJpegDecoder>> create(const CudaRuntime* cuda, int device,
                                                        const GpuJpegOptions& options);
  // The same with a given library (or the reason there is none): tests.
  static Result<std::unique_ptr<GpuJpegDecoder>> create(const CudaRuntime* cuda, int device,
                                                        const GpuJpegOptions& options,
                                                        Result<const Nvjpeg*> nvjpeg);
  ~GpuJpegDecoder();
  GpuJpegDecoder(const GpuJpegDecoder&) = delete;
  GpuJpegDecoder& operator=(const GpuJpegDecoder&) = delete;

  // Decodes a batch: out->size() becomes jobs.size(), in order. A file
  // that fails on the GPU is a tier C result, never an error; the call
  // fails only where CUDA itself fails (kInternal) or the arena cannot grow
  // (kResourceExhausted); then no result is usable: decode the batch on the
  // CPU.
  Status decode(std::span<const GpuJpegJob> jobs, cudaStream_t stream,
                std::vector<GpuJpegResult>* out);

  // The tier a job would get before any decode is tried, from its header
  // and sample id (what decode() assigns unless a decode fails).
  JpegTier planned_tier(const GpuJpegJob& job);

  GpuJpegStats stats();

 private:
  struct State;
  explicit GpuJpegDecoder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

namespace detail {

// Where a sample id falls in [0, 1): a fixed mix of its bits (splitmix64).
double share_point(uint64_t sample_id);

// One adaptive step: moves `share` a quarter of the way toward the split at
// which the engine and the CUDA path finish together (g / (h + g) for
// per-image latencies h, g), then lowers it by 0.02 while the engine's p99
// batch latency is over twice its median. Clamped to [0.05, 0.95].
double adapt_share(double share, double h_ms_per_image, double g_ms_per_image,
                   double h_p99_over_median);

}  // namespace detail

}  // namespace sluice::device
