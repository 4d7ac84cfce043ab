// A stand-in for libnvjpeg, built by the tests, implementing the entry
// points src/device/nvjpeg.h binds, so the decode tiers (jpeg_tiers.h) run
// on machines without a GPU. "Device memory" is host memory (with
// tests/device/fake_cuda.cc as the runtime), decoding is sluice's own
// libjpeg-turbo decode (decode_image), done inside the call that would
// enqueue it; the pixels are written in stream order (through fake_cuda's
// cudaLaunchHostFunc), as the GPU writes them, so a caller that reuses
// output memory before its stream is done shows up in tests. It reports
// version 13.0.0, like fake_cuda's 13000.
//
// Behaviour of the real library that the tier logic depends on:
//   - nvjpegCreateEx(HARDWARE) succeeds (an A100-class GPU);
//   - the engine's support query refuses what the real engine refuses:
//     progressive, arithmetic, lossless, 12-bit, 4-component (CMYK/YCCK)
//     and irregular subsampling; the GPU-Huffman decoder refuses
//     progressive files;
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
// Built with FAKE_NVJPEG_NO_ROI, it lacks nvjpegDecodeParamsSetROI and the
// Ex batched calls (an older library), so callers must decode whole images.
// Counters (fake_nvjpeg_*) let tests see which paths ran.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/image.h"

extern "C" int cudaLaunchHostFunc(void* stream, void (*fn)(void*), void* data);  // fake_cuda

namespace {

enum : int {
  kSuccess = 0,
  kInvalidParameter = 2,
  kBadJpeg = 3,
  kNotSupported = 4,
  kExecutionFailed = 6,
  kArchMismatch = 7,
};
constexpr int kHardware = 3;
constexpr int kGpuHybrid = 2;
constexpr int kRgbi = 5;

struct Image {
  unsigned char* channel[4];
  size_t pitch[4];
};

struct Handle {
  int backend = 0;
};
struct Decoder {
  int backend = 0;
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
  int batch = 0;
  bool pinned = false, device = false;
  sluice::Image host;  // the host phase's result, for the device phase
  Params roi;
  bool staged = false;
};

std::atomic<long> g_batched_calls{0}, g_batched_images{0}, g_hybrid_decodes{0}, g_roi_decodes{0},
    g_gpu_huffman{0};

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

// Writes h rows of w*3 bytes (packed in `rows`) to dst with its pitch, in
// the order of `stream`.
struct PendingWrite {
  std::vector<uint8_t> rows;
  uint8_t* dst;
  size_t pitch, row_bytes;
  int h;
};
void run_write(void* p) {
  auto* w = static_cast<PendingWrite*>(p);
  for (int r = 0; r < w->h; ++r) {
    std::memcpy(w->dst + r * w->pitch, w->rows.data() + r * w->row_bytes, w->row_bytes);
  }
  delete w;
}
void write_rows(void* stream, const uint8_t* src, size_t src_stride, uint8_t* dst, size_t pitch,
                size_t row_bytes, int h) {
  auto* w = new PendingWrite{std::vector<uint8_t>(row_bytes * h), dst, pitch, row_bytes, h};
  for (int r = 0; r < h; ++r)
    std::memcpy(w->rows.data() + r * row_bytes, src + r * src_stride, row_bytes);
  cudaLaunchHostFunc(stream, run_write, w);
}

// Decodes `bytes` and writes the ROI (or whole image) as RGBI into dst.
int decode_into(std::string_view bytes, const Params& p, Image* dst, void* stream) {
  if (p.format != kRgbi || !dst || !dst->channel[0]) return kInvalidParameter;
  auto img = sluice::decode_image(bytes);
  if (!img.ok()) {
    return img.status().code() == sluice::StatusCode::kDataLoss ? kBadJpeg : kNotSupported;
  }
  const bool roi = p.w > 0 && p.h > 0;
  const int x = roi ? p.x : 0, y = roi ? p.y : 0;
  const int w = roi ? p.w : img->width, h = roi ? p.h : img->height;
  if (x < 0 || y < 0 || x + w > img->width || y + h > img->height) return kInvalidParameter;
  if (dst->pitch[0] < static_cast<size_t>(w) * 3) return kInvalidParameter;
  if (roi) ++g_roi_decodes;
  write_rows(stream, img->pixels.data() + (static_cast<size_t>(y) * img->width + x) * 3,
             static_cast<size_t>(img->width) * 3, dst->channel[0], dst->pitch[0],
             static_cast<size_t>(w) * 3, h);
  return kSuccess;
}

}  // namespace

extern "C" {

#define EXPORT __attribute__((visibility("default")))

EXPORT int nvjpegGetProperty(int type, int* value) {
  const char* major = std::getenv("FAKE_NVJPEG_MAJOR");
  switch (type) {
    case 0: *value = major ? std::atoi(major) : 13; return kSuccess;
    case 1: *value = 0; return kSuccess;
    case 2: *value = 0; return kSuccess;
  }
  return kInvalidParameter;
}

EXPORT int nvjpegCreateEx(int backend, void*, void*, unsigned, Handle** h) {
  if (backend == kHardware && std::getenv("FAKE_NVJPEG_NO_HARDWARE")) return kArchMismatch;
  *h = new Handle{backend};
  return kSuccess;
}
EXPORT int nvjpegDestroy(Handle* h) {
  delete h;
  return kSuccess;
}
EXPORT int nvjpegJpegStateCreate(Handle*, State** s) {
  *s = new State();
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

static int decode_batch(State* s, const unsigned char* const* data, const size_t* lengths,
                        Image* out, Params* const* params, void* stream) {
  ++g_batched_calls;
  const char* fail = std::getenv("FAKE_NVJPEG_FAIL_BATCH_AT");
  const int fail_at = fail ? std::atoi(fail) : -1;
  for (int i = 0; i < s->batch; ++i) {
    if (i == fail_at) {
      // A torn write, as a crash mid-batch leaves.
      std::vector<uint8_t> junk(out[i].pitch[0] * 2, 0xAB);
      write_rows(stream, junk.data(), out[i].pitch[0], out[i].channel[0], out[i].pitch[0],
                 out[i].pitch[0], 2);
      return kExecutionFailed;
    }
    std::string_view bytes(reinterpret_cast<const char*>(data[i]), lengths[i]);
    auto info = sluice::probe_image(bytes);
    if (!info.ok() || !engine_can(*info)) return kNotSupported;
    Params p = params ? *params[i] : Params{};
    if (!params) p.format = kRgbi;
    if (int r = decode_into(bytes, p, &out[i], stream); r != kSuccess) return r;
    ++g_batched_images;
  }
  return kSuccess;
}

EXPORT int nvjpegDecodeBatched(Handle* h, State* s, const unsigned char* const* data,
                               const size_t* lengths, Image* out, void* cuda_stream) {
  if (!h || h->backend != kHardware || s->batch < 1) return kInvalidParameter;
  return decode_batch(s, data, lengths, out, nullptr, cuda_stream);
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
                                 const size_t* lengths, Image* out, Params** params,
                                 void* cuda_stream) {
  if (!h || h->backend != kHardware || s->batch < 1 || !params) return kInvalidParameter;
  return decode_batch(s, data, lengths, out, params, cuda_stream);
}
#endif

// The decoupled API of the CUDA backends.
EXPORT int nvjpegDecoderCreate(Handle*, int backend, Decoder** d) {
  if (backend == kHardware) return kInvalidParameter;  // the engine is batched only
  *d = new Decoder{backend};
  return kSuccess;
}
EXPORT int nvjpegDecoderDestroy(Decoder* d) {
  delete d;
  return kSuccess;
}
EXPORT int nvjpegDecoderStateCreate(Handle*, Decoder*, State** s) {
  *s = new State();
  return kSuccess;
}
EXPORT int nvjpegDecoderJpegSupported(Decoder* d, Stream* s, Params*, int* verdict) {
  if (!s->parsed) return kInvalidParameter;
  *verdict = d->backend == kGpuHybrid && s->info.progressive ? 1 : 0;
  return kSuccess;
}
EXPORT int nvjpegBufferPinnedCreate(Handle*, void*, void** b) {
  *b = new char;
  return kSuccess;
}
EXPORT int nvjpegBufferPinnedDestroy(void* b) {
  delete static_cast<char*>(b);
  return kSuccess;
}
EXPORT int nvjpegBufferDeviceCreate(Handle*, void*, void** b) {
  *b = new char;
  return kSuccess;
}
EXPORT int nvjpegBufferDeviceDestroy(void* b) {
  delete static_cast<char*>(b);
  return kSuccess;
}
EXPORT int nvjpegStateAttachPinnedBuffer(State* s, void* b) {
  s->pinned = b != nullptr;
  return kSuccess;
}
EXPORT int nvjpegStateAttachDeviceBuffer(State* s, void* b) {
  s->device = b != nullptr;
  return kSuccess;
}
EXPORT int nvjpegDecodeJpegHost(Handle*, Decoder* d, State* s, Params* p, Stream* js) {
  if (!s->pinned || !s->device || !js->parsed || p->format != kRgbi) return kInvalidParameter;
  if (env_lists("FAKE_NVJPEG_FAIL_HYBRID_BYTES", js->bytes.size())) return kExecutionFailed;
  if (js->info.components == 4 && !p->cmyk) return kNotSupported;
  if (d->backend == kGpuHybrid) ++g_gpu_huffman;
  auto img = sluice::decode_image(js->bytes);
  if (!img.ok()) {
    return img.status().code() == sluice::StatusCode::kDataLoss ? kBadJpeg : kNotSupported;
  }
  s->host = std::move(*img);
  s->roi = *p;
  s->staged = false;
  return kSuccess;
}
EXPORT int nvjpegDecodeJpegTransferToDevice(Handle*, Decoder*, State* s, Stream*, void*) {
  if (s->host.pixels.empty()) return kInvalidParameter;
  s->staged = true;
  return kSuccess;
}
EXPORT int nvjpegDecodeJpegDevice(Handle*, Decoder*, State* s, Image* out, void* stream) {
  if (!s->staged) return kInvalidParameter;
  const Params& p = s->roi;
  const bool roi = p.w > 0 && p.h > 0;
  const int x = roi ? p.x : 0, y = roi ? p.y : 0;
  const int w = roi ? p.w : s->host.width, h = roi ? p.h : s->host.height;
  if (x < 0 || y < 0 || x + w > s->host.width || y + h > s->host.height ||
      out->pitch[0] < static_cast<size_t>(w) * 3) {
    return kInvalidParameter;
  }
  if (roi) ++g_roi_decodes;
  write_rows(stream, s->host.pixels.data() + (static_cast<size_t>(y) * s->host.width + x) * 3,
             static_cast<size_t>(s->host.width) * 3, out->channel[0], out->pitch[0],
             static_cast<size_t>(w) * 3, h);
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

}  // extern "C"
