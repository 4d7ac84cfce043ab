// A stand-in for libnvjpeg, built by the tests, implementing the entry
// points src/device/nvjpeg.h binds, so the decode tiers (jpeg_tiers.h) run
// on machines without a GPU. "Device memory" is host memory (with
// tests/device/fake_cuda.cc as the runtime) and decoding is sluice's own
// libjpeg-turbo decode. It reports version 13.0.0, like fake_cuda's 13000.
//
// It models the real library where callers can go wrong, including where
// the real one departs from its documentation; each behaviour names its
// source:
//   - The engine (NVJPEG_BACKEND_HARDWARE, nvjpegDecodeBatched[Ex]) writes
//     its output when it is called, not in stream order: queued stream work
//     and cudaStreamWaitEvent do not hold it back. The documentation says
//     "all GPU tasks for this function will be submitted to the provided
//     stream"; torchcodec PR #1634 and torchvision PR #9606 measured the
//     write happening at call time on H100 with nvJPEG 12.3 to 13.2.
//   - The decoupled API: nvjpegDecodeJpegHost is synchronous with the host
//     (documentation) and writes the attached pinned buffer at once;
//     nvjpegDecodeJpegTransferToDevice is "a mix of synchronous and
//     asynchronous operations with respect to the host" (documentation):
//     here the synchronous part sizes and overwrites the attached device
//     buffer at call time, the asynchronous part copies the pinned buffer
//     into it in stream order; nvjpegDecodeJpegDevice runs in stream order
//     and reads the device buffer. So a caller that reuses a state, pinned
//     or device buffer before its previous image's device phase ran gets
//     another image's pixels, as DALI PR #4292 showed on real GPUs.
//   - Buffers are allocated through the allocators given to
//     nvjpegCreateEx / nvjpegBuffer*Create (cudaMalloc and cudaHostAlloc
//     where none is given), each allocation rounded up to a multiple of the
//     handle's padding (nvjpegSet{Device,Pinned}MemoryPadding); a buffer too
//     small is replaced (free, then a larger allocation). The engine's
//     memory grows the same way unless nvjpegDecodeBatchedPreAllocate sized
//     it first.
//   - Without NVJPEG_FLAGS_BITSTREAM_STRICT, a damaged file decodes to what
//     libjpeg makes of it (missing data filled in) and reports success;
//     with it, NVJPEG_STATUS_BAD_JPEG (documentation, nvJPEG Flags). The
//     engine decodes damaged files to garbage whatever the flags: nothing
//     documents that it honours the flag, so the fake assumes the worst.
//   - nvjpegCreateEx(HARDWARE) succeeds (an A100-class GPU); the engine's
//     support query refuses what the real engine refuses: progressive,
//     arithmetic, lossless, 12-bit, 4-component (CMYK/YCCK) and irregular
//     subsampling; the GPU-Huffman decoder refuses progressive files.
//   - ROI decodes write the region alone at channel[0].
//
// Knobs, read from the environment at call time:
//   FAKE_NVJPEG_NO_HARDWARE=1      nvjpegCreateEx(HARDWARE) fails, as on a
//                                  GPU without the engine
//   FAKE_NVJPEG_MAJOR=N            nvjpegGetProperty's major version
//   FAKE_NVJPEG_REFUSE_BYTES=N,..  the engine also refuses files of N bytes
//   FAKE_NVJPEG_FAIL_BATCH_AT=K    a batched decode writes images 0..K-1,
//                                  scribbles over image K, and fails
//   FAKE_NVJPEG_FAIL_HYBRID_BYTES=N,..  the CUDA path fails on files of N
//                                  bytes (in its host phase)
//   FAKE_NVJPEG_NO_STRICT=1        nvjpegCreateEx refuses the strict flag
//                                  with NVJPEG_STATUS_INVALID_PARAMETER (how
//                                  a library without the flag answers is not
//                                  documented; this is the case sluice
//                                  handles by creating the handle again)
// Built with FAKE_NVJPEG_NO_ROI, it lacks nvjpegDecodeParamsSetROI and the
// Ex batched calls (an older library), so callers must decode whole images.
// Counters (fake_nvjpeg_*) let tests see which paths ran.
// jpeglib.h needs size_t and FILE declared first.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <atomic>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/image.h"

extern "C" {  // fake_cuda
int cudaLaunchHostFunc(void* stream, void (*fn)(void*), void* data);
int cudaMalloc(void** p, size_t n);
int cudaFree(void* p);
int cudaHostAlloc(void** p, size_t n, unsigned flags);
int cudaFreeHost(void* p);
}

#ifndef FAKE_NVJPEG_DEFAULT_MAJOR
#define FAKE_NVJPEG_DEFAULT_MAJOR 13
#endif

namespace {

enum : int {
  kSuccess = 0,
  kInvalidParameter = 2,
  kBadJpeg = 3,
  kNotSupported = 4,
  kAllocatorFailure = 5,
  kExecutionFailed = 6,
  kArchMismatch = 7,
};
constexpr int kHardware = 3;
constexpr int kGpuHybrid = 2;
constexpr int kRgbi = 5;
constexpr unsigned kStrict = 4;
constexpr unsigned kKnownFlags = 1 | 2 | 4 | 8 | 16 | 32;

struct Image {
  unsigned char* channel[4];
  size_t pitch[4];
};
struct DevAllocator {
  int (*malloc_fn)(void**, size_t);
  int (*free_fn)(void*);
};
struct PinnedAllocator {
  int (*malloc_fn)(void**, size_t, unsigned);
  int (*free_fn)(void*);
};

std::atomic<long> g_batched_calls{0}, g_batched_images{0}, g_hybrid_decodes{0}, g_roi_decodes{0},
    g_gpu_huffman{0}, g_lenient_decodes{0};

struct Handle {
  int backend = 0;
  unsigned flags = 0;
  DevAllocator dev{&cudaMalloc, &cudaFree};
  PinnedAllocator pinned{[](void** p, size_t n, unsigned f) { return cudaHostAlloc(p, n, f); },
                         &cudaFreeHost};
  size_t dev_padding = 0, pinned_padding = 0;
};

// One allocation, freed through the allocator that made it when its last
// user (a buffer, or stream work still queued) lets go.
struct Block {
  uint8_t* p = nullptr;
  size_t bytes = 0;
  int (*free_fn)(void*) = nullptr;
  ~Block() {
    if (p) free_fn(p);
  }
};

// A pinned or device buffer: grows by replacement, rounded up to the
// handle's padding (a multiple of it, as nvjpeg.h's comment says).
struct Buffer {
  Handle* handle = nullptr;
  bool pinned = false;
  DevAllocator dev{};
  PinnedAllocator host{};
  std::shared_ptr<Block> block;

  bool ensure(size_t n) {
    if (block && block->bytes >= n) return true;
    const size_t pad = pinned ? handle->pinned_padding : handle->dev_padding;
    const size_t size = pad > 0 ? (n + pad - 1) / pad * pad : n;
    auto b = std::make_shared<Block>();
    void* p = nullptr;
    const int r = pinned ? host.malloc_fn(&p, size, 0) : dev.malloc_fn(&p, size);
    if (r != 0 || !p) return false;
    b->p = static_cast<uint8_t*>(p);
    b->bytes = size;
    b->free_fn = pinned ? host.free_fn : dev.free_fn;
    block = std::move(b);
    return true;
  }
};

Buffer* make_buffer(Handle* h, bool pinned, const void* allocator) {
  auto* b = new Buffer();
  b->handle = h;
  b->pinned = pinned;
  b->dev = h->dev;
  b->host = h->pinned;
  if (allocator && pinned) b->host = *static_cast<const PinnedAllocator*>(allocator);
  if (allocator && !pinned) b->dev = *static_cast<const DevAllocator*>(allocator);
  return b;
}

struct Decoder {
  int backend = 0;
  Handle* handle = nullptr;
};
struct Params {
  int format = 0;
  int x = 0, y = 0, w = -1, h = -1;  // (0, 0, -1, -1): whole image
  bool cmyk = false;
};
struct Stream {
  std::string bytes;
  sluice::ImageInfo info;
  bool parsed = false;
};
struct State {
  Handle* handle = nullptr;
  int batch = 0;
  Buffer* pinned = nullptr;
  Buffer* device = nullptr;
  std::unique_ptr<Buffer> engine;  // the engine's own memory (batched states)
  int width = 0, height = 0;       // the host phase's image, in the pinned buffer
  Params roi;
  bool hosted = false, staged = false;
};

bool env_lists(const char* name, size_t value) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string_view s(v);
  while (!s.empty()) {
    size_t comma = s.find(',');
    if (std::strtoull(std::string(s.substr(0, comma)).c_str(), nullptr, 10) == value) return true;
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return false;
}

bool engine_can(const sluice::ImageInfo& i) {
  const bool sequential_huffman = i.jpeg_sof == 0 || i.jpeg_sof == 1;
  return sequential_huffman && i.bit_depth == 8 && i.components != 4 && i.subsampling != "other";
}

int css_of(const sluice::ImageInfo& i) {
  if (i.subsampling == "4:4:4") return 0;
  if (i.subsampling == "4:2:2") return 1;
  if (i.subsampling == "4:2:0") return 2;
  if (i.subsampling == "4:4:0") return 3;
  if (i.subsampling == "4:1:1") return 4;
  if (i.subsampling == "gray") return 6;
  return -1;
}

// What libjpeg makes of a damaged file when warnings are ignored (djpeg's
// behaviour: missing entropy-coded data is filled in), as RGB.
struct LenientError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
};
std::optional<sluice::Image> decode_lenient(std::string_view bytes) {
  jpeg_decompress_struct d{};
  LenientError err{};
  d.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = [](j_common_ptr c) {
    std::longjmp(reinterpret_cast<LenientError*>(c->err)->jump, 1);
  };
  err.mgr.emit_message = [](j_common_ptr, int) {};
  // Held through a pointer: locals changed after setjmp are not reliable
  // after the jump.
  auto img = std::make_unique<sluice::Image>();
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&d);
    return std::nullopt;
  }
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  jpeg_read_header(&d, TRUE);
  d.out_color_space = JCS_RGB;
  jpeg_start_decompress(&d);
  img->width = static_cast<int>(d.output_width);
  img->height = static_cast<int>(d.output_height);
  img->channels = 3;
  img->pixels.resize(img->row_bytes() * img->height);
  while (d.output_scanline < d.output_height) {
    JSAMPROW row = img->pixels.data() + d.output_scanline * img->row_bytes();
    jpeg_read_scanlines(&d, &row, 1);
  }
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  return std::move(*img);
}

// The decode every backend shares: libjpeg-turbo's pixels, or, for a
// damaged file, BAD_JPEG under strict checks and the lenient pixels without.
int decode_bytes(std::string_view bytes, unsigned flags, sluice::Image* out) {
  auto img = sluice::decode_image(bytes);
  if (img.ok()) {
    *out = std::move(*img);
    return kSuccess;
  }
  if (img.status().code() != sluice::StatusCode::kDataLoss) return kNotSupported;
  if (flags & kStrict) return kBadJpeg;
  auto lenient = decode_lenient(bytes);
  if (!lenient) return kBadJpeg;
  ++g_lenient_decodes;
  *out = std::move(*lenient);
  return kSuccess;
}

// A region of `img` (x, y, w, h), or the whole image for (0, 0, -1, -1).
struct Region {
  int x = 0, y = 0, w = 0, h = 0;
};
int region_of(const Params& p, int width, int height, Region* r) {
  const bool roi = p.w > 0 && p.h > 0;
  *r = roi ? Region{p.x, p.y, p.w, p.h} : Region{0, 0, width, height};
  if (r->x < 0 || r->y < 0 || r->x + r->w > width || r->y + r->h > height) return kInvalidParameter;
  if (roi) ++g_roi_decodes;
  return kSuccess;
}

void copy_region(const uint8_t* src, int src_width, const Region& r, Image* dst) {
  for (int row = 0; row < r.h; ++row) {
    std::memcpy(dst->channel[0] + row * dst->pitch[0],
                src + (static_cast<size_t>(r.y + row) * src_width + r.x) * 3,
                static_cast<size_t>(r.w) * 3);
  }
}

// Runs `fn` in the order of `stream` (fake_cuda runs host functions on the
// stream's thread).
template <typename F>
void in_stream_order(void* stream, F fn) {
  auto* heap = new F(std::move(fn));
  cudaLaunchHostFunc(
      stream,
      [](void* p) {
        auto* f = static_cast<F*>(p);
        (*f)();
        delete f;
      },
      heap);
}

}  // namespace

extern "C" {

#define EXPORT __attribute__((visibility("default")))

EXPORT int nvjpegGetProperty(int type, int* value) {
  const char* major = std::getenv("FAKE_NVJPEG_MAJOR");
  switch (type) {
    case 0: *value = major ? std::atoi(major) : FAKE_NVJPEG_DEFAULT_MAJOR; return kSuccess;
    case 1: *value = 0; return kSuccess;
    case 2: *value = 0; return kSuccess;
  }
  return kInvalidParameter;
}

EXPORT int nvjpegCreateEx(int backend, const DevAllocator* dev, const PinnedAllocator* pinned,
                          unsigned flags, Handle** h) {
  if (backend == kHardware && std::getenv("FAKE_NVJPEG_NO_HARDWARE")) return kArchMismatch;
  if ((flags & ~kKnownFlags) || ((flags & kStrict) && std::getenv("FAKE_NVJPEG_NO_STRICT"))) {
    return kInvalidParameter;
  }
  *h = new Handle();
  (*h)->backend = backend;
  (*h)->flags = flags;
  if (dev) (*h)->dev = *dev;
  if (pinned) (*h)->pinned = *pinned;
  return kSuccess;
}
EXPORT int nvjpegDestroy(Handle* h) {
  delete h;
  return kSuccess;
}
EXPORT int nvjpegSetDeviceMemoryPadding(size_t padding, Handle* h) {
  h->dev_padding = padding;
  return kSuccess;
}
EXPORT int nvjpegSetPinnedMemoryPadding(size_t padding, Handle* h) {
  h->pinned_padding = padding;
  return kSuccess;
}
EXPORT int nvjpegJpegStateCreate(Handle* h, State** s) {
  *s = new State();
  (*s)->handle = h;
  return kSuccess;
}
EXPORT int nvjpegJpegStateDestroy(State* s) {
  delete s;
  return kSuccess;
}

EXPORT int nvjpegGetImageInfo(Handle*, const unsigned char* data, size_t length, int* components,
                              int* subsampling, int* widths, int* heights) {
  auto info = sluice::probe_image(std::string_view(reinterpret_cast<const char*>(data), length));
  if (!info.ok() || info->format != sluice::ImageFormat::kJpeg) return kBadJpeg;
  *components = info->components;
  *subsampling = css_of(*info);
  for (int c = 0; c < 4; ++c) widths[c] = heights[c] = 0;
  widths[0] = info->width;
  heights[0] = info->height;
  return kSuccess;
}

EXPORT int nvjpegJpegStreamCreate(Handle*, Stream** s) {
  *s = new Stream();
  return kSuccess;
}
EXPORT int nvjpegJpegStreamDestroy(Stream* s) {
  delete s;
  return kSuccess;
}
EXPORT int nvjpegJpegStreamParse(Handle*, const unsigned char* data, size_t length, int, int,
                                 Stream* s) {
  s->bytes.assign(reinterpret_cast<const char*>(data), length);
  auto info = sluice::probe_image(s->bytes);
  s->parsed = info.ok() && info->format == sluice::ImageFormat::kJpeg;
  if (!s->parsed) return kBadJpeg;
  s->info = *info;
  return kSuccess;
}

EXPORT int nvjpegDecodeParamsCreate(Handle*, Params** p) {
  *p = new Params();
  return kSuccess;
}
EXPORT int nvjpegDecodeParamsDestroy(Params* p) {
  delete p;
  return kSuccess;
}
EXPORT int nvjpegDecodeParamsSetOutputFormat(Params* p, int format) {
  p->format = format;
  return kSuccess;
}
EXPORT int nvjpegDecodeParamsSetAllowCMYK(Params* p, int allow) {
  p->cmyk = allow != 0;
  return kSuccess;
}

// The engine, batched.
EXPORT int nvjpegDecodeBatchedSupported(Handle* h, Stream* s, int* verdict) {
  if (!h || h->backend != kHardware || !s->parsed) return kInvalidParameter;
  const bool ok = engine_can(s->info) && !env_lists("FAKE_NVJPEG_REFUSE_BYTES", s->bytes.size());
  *verdict = ok ? 0 : 1;
  return kSuccess;
}
EXPORT int nvjpegDecodeBatchedInitialize(Handle* h, State* s, int batch, int threads, int format) {
  if (!h || h->backend != kHardware || batch < 1 || threads < 1 || format != kRgbi) {
    return kInvalidParameter;
  }
  s->batch = batch;
  return kSuccess;
}
// The engine's working memory: a batch of full-size 4:4:4 images.
EXPORT int nvjpegDecodeBatchedPreAllocate(Handle* h, State* s, int batch, int width, int height,
                                          int, int format) {
  if (!h || h->backend != kHardware || batch < 1 || width < 1 || height < 1 || format != kRgbi) {
    return kInvalidParameter;
  }
  if (!s->engine) s->engine.reset(make_buffer(h, false, nullptr));
  return s->engine->ensure(static_cast<size_t>(batch) * width * height * 3) ? kSuccess
                                                                            : kAllocatorFailure;
}

static int decode_batch(State* s, const unsigned char* const* data, const size_t* lengths,
                        Image* out, Params* const* params) {
  ++g_batched_calls;
  const char* fail = std::getenv("FAKE_NVJPEG_FAIL_BATCH_AT");
  const int fail_at = fail ? std::atoi(fail) : -1;
  size_t working = 0;
  for (int i = 0; i < s->batch; ++i) {
    auto info =
        sluice::probe_image(std::string_view(reinterpret_cast<const char*>(data[i]), lengths[i]));
    if (info.ok()) working += static_cast<size_t>(info->width) * info->height * 3;
  }
  if (!s->engine) s->engine.reset(make_buffer(s->handle, false, nullptr));
  if (!s->engine->ensure(working)) return kAllocatorFailure;
  // Everything below happens now, at call time: the engine does not wait
  // for the stream.
  for (int i = 0; i < s->batch; ++i) {
    if (i == fail_at) {
      // A torn write, as a crash mid-batch leaves.
      for (int row = 0; row < 2; ++row)
        std::memset(out[i].channel[0] + row * out[i].pitch[0], 0xAB, out[i].pitch[0]);
      return kExecutionFailed;
    }
    std::string_view bytes(reinterpret_cast<const char*>(data[i]), lengths[i]);
    auto info = sluice::probe_image(bytes);
    if (!info.ok() || !engine_can(*info)) return kNotSupported;
    Params p = params ? *params[i] : Params{};
    if (!params) p.format = kRgbi;
    if (p.format != kRgbi || !out[i].channel[0]) return kInvalidParameter;
    sluice::Image img;
    // Nothing documents that the engine honours BITSTREAM_STRICT: the fake
    // takes the cautious view that it does not (damaged files decode to
    // garbage there, whatever the flags).
    if (int r = decode_bytes(bytes, s->handle->flags & ~kStrict, &img); r != kSuccess) return r;
    Region reg;
    if (int r = region_of(p, img.width, img.height, &reg); r != kSuccess) return r;
    if (out[i].pitch[0] < static_cast<size_t>(reg.w) * 3) return kInvalidParameter;
    copy_region(img.pixels.data(), img.width, reg, &out[i]);
    ++g_batched_images;
  }
  return kSuccess;
}

EXPORT int nvjpegDecodeBatched(Handle* h, State* s, const unsigned char* const* data,
                               const size_t* lengths, Image* out, void*) {
  if (!h || h->backend != kHardware || s->batch < 1) return kInvalidParameter;
  return decode_batch(s, data, lengths, out, nullptr);
}

#ifndef FAKE_NVJPEG_NO_ROI
EXPORT int nvjpegDecodeParamsSetROI(Params* p, int x, int y, int w, int h) {
  p->x = x, p->y = y, p->w = w, p->h = h;
  return kSuccess;
}
EXPORT int nvjpegDecodeBatchedSupportedEx(Handle* h, Stream* s, Params*, int* verdict) {
  return nvjpegDecodeBatchedSupported(h, s, verdict);
}
EXPORT int nvjpegDecodeBatchedEx(Handle* h, State* s, const unsigned char* const* data,
                                 const size_t* lengths, Image* out, Params** params, void*) {
  if (!h || h->backend != kHardware || s->batch < 1 || !params) return kInvalidParameter;
  return decode_batch(s, data, lengths, out, params);
}
#endif

// The decoupled API of the CUDA backends.
EXPORT int nvjpegDecoderCreate(Handle* h, int backend, Decoder** d) {
  if (backend == kHardware) return kInvalidParameter;  // the engine is batched only
  *d = new Decoder{backend, h};
  return kSuccess;
}
EXPORT int nvjpegDecoderDestroy(Decoder* d) {
  delete d;
  return kSuccess;
}
EXPORT int nvjpegDecoderStateCreate(Handle* h, Decoder*, State** s) {
  *s = new State();
  (*s)->handle = h;
  return kSuccess;
}
EXPORT int nvjpegDecoderJpegSupported(Decoder* d, Stream* s, Params*, int* verdict) {
  if (!s->parsed) return kInvalidParameter;
  *verdict = d->backend == kGpuHybrid && s->info.progressive ? 1 : 0;
  return kSuccess;
}
EXPORT int nvjpegBufferPinnedCreate(Handle* h, const void* allocator, Buffer** b) {
  *b = make_buffer(h, true, allocator);
  return kSuccess;
}
EXPORT int nvjpegBufferPinnedDestroy(Buffer* b) {
  delete b;
  return kSuccess;
}
EXPORT int nvjpegBufferDeviceCreate(Handle* h, const void* allocator, Buffer** b) {
  *b = make_buffer(h, false, allocator);
  return kSuccess;
}
EXPORT int nvjpegBufferDeviceDestroy(Buffer* b) {
  delete b;
  return kSuccess;
}
EXPORT int nvjpegStateAttachPinnedBuffer(State* s, Buffer* b) {
  s->pinned = b;
  return kSuccess;
}
EXPORT int nvjpegStateAttachDeviceBuffer(State* s, Buffer* b) {
  s->device = b;
  return kSuccess;
}
// Synchronous: the image lands in the pinned buffer now.
EXPORT int nvjpegDecodeJpegHost(Handle*, Decoder* d, State* s, Params* p, Stream* js) {
  if (!s->pinned || !s->device || !js->parsed || p->format != kRgbi) return kInvalidParameter;
  if (env_lists("FAKE_NVJPEG_FAIL_HYBRID_BYTES", js->bytes.size())) return kExecutionFailed;
  if (js->info.components == 4 && !p->cmyk) return kNotSupported;
  if (d->backend == kGpuHybrid) ++g_gpu_huffman;
  sluice::Image img;
  if (int r = decode_bytes(js->bytes, d->handle->flags, &img); r != kSuccess) return r;
  if (!s->pinned->ensure(img.pixels.size())) return kAllocatorFailure;
  std::memcpy(s->pinned->block->p, img.pixels.data(), img.pixels.size());
  s->width = img.width, s->height = img.height;
  s->roi = *p;
  s->hosted = true, s->staged = false;
  return kSuccess;
}
// Partly synchronous: the device buffer is sized and overwritten now, the
// pinned buffer's contents reach it in stream order.
EXPORT int nvjpegDecodeJpegTransferToDevice(Handle*, Decoder*, State* s, Stream*, void* stream) {
  if (!s->hosted) return kInvalidParameter;
  const size_t bytes = static_cast<size_t>(s->width) * s->height * 3;
  if (!s->device->ensure(bytes)) return kAllocatorFailure;
  std::memset(s->device->block->p, 0xCD, bytes);
  in_stream_order(stream, [src = s->pinned->block, dst = s->device->block, bytes] {
    std::memcpy(dst->p, src->p, bytes);
  });
  s->hosted = false, s->staged = true;
  return kSuccess;
}
EXPORT int nvjpegDecodeJpegDevice(Handle*, Decoder*, State* s, Image* out, void* stream) {
  if (!s->staged || !out || !out->channel[0]) return kInvalidParameter;
  Region r;
  if (int e = region_of(s->roi, s->width, s->height, &r); e != kSuccess) return e;
  if (out->pitch[0] < static_cast<size_t>(r.w) * 3) return kInvalidParameter;
  in_stream_order(stream, [src = s->device->block, width = s->width, r, dst = *out]() mutable {
    copy_region(src->p, width, r, &dst);
  });
  ++g_hybrid_decodes;
  s->staged = false;
  return kSuccess;
}

// For tests.
EXPORT long fake_nvjpeg_batched_calls() {
  return g_batched_calls;
}
EXPORT long fake_nvjpeg_batched_images() {
  return g_batched_images;
}
EXPORT long fake_nvjpeg_hybrid_decodes() {
  return g_hybrid_decodes;
}
EXPORT long fake_nvjpeg_roi_decodes() {
  return g_roi_decodes;
}
EXPORT long fake_nvjpeg_gpu_huffman_decodes() {
  return g_gpu_huffman;
}
EXPORT long fake_nvjpeg_lenient_decodes() {
  return g_lenient_decodes;
}

}  // extern "C"
