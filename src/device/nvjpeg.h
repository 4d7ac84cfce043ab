// nvJPEG, loaded at run time (dlopen) with the project's own declarations of
// the entry points sluice uses, so building sluice needs no NVIDIA header,
// and tests can put a fake library in its place
// (SLUICE_NVJPEG_LIBRARY). nvJPEG's C API has been ABI-stable since CUDA 11:
// the values below are those of nvjpeg.h in CUDA 12 and 13.
//
// nvJPEG is optional: where none loads, or none whose major version is the
// CUDA runtime's (each nvJPEG is built against one runtime), sluice decodes
// on the CPU. The search goes through every candidate (libraries.h), the
// copies already loaded in the process first, and keeps the first that
// suits; what it passed over, and why, is kept for `sluice doctor` and
// stats(). Some entry points are optional too; a missing one turns one
// feature off (the hardware engine, decoding only a region, strict
// bitstream checks, allocation padding) and is never an error.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "device/cuda_runtime.h"
#include "sluice/status.h"

namespace sluice::device {

// nvjpegStatus_t.
using nvjpegStatus_t = int;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_SUCCESS = 0;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_NOT_INITIALIZED = 1;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_INVALID_PARAMETER = 2;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_BAD_JPEG = 3;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_ALLOCATOR_FAILURE = 5;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_EXECUTION_FAILED = 6;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_ARCH_MISMATCH = 7;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_INTERNAL_ERROR = 8;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9;
inline constexpr nvjpegStatus_t NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10;

// nvjpegBackend_t.
using nvjpegBackend_t = int;
inline constexpr nvjpegBackend_t NVJPEG_BACKEND_DEFAULT = 0;
inline constexpr nvjpegBackend_t NVJPEG_BACKEND_HYBRID = 1;      // Huffman on the CPU
inline constexpr nvjpegBackend_t NVJPEG_BACKEND_GPU_HYBRID = 2;  // Huffman on the GPU
inline constexpr nvjpegBackend_t NVJPEG_BACKEND_HARDWARE = 3;    // the A100/H100 engine

// nvjpegOutputFormat_t (only interleaved RGB is used).
using nvjpegOutputFormat_t = int;
inline constexpr nvjpegOutputFormat_t NVJPEG_OUTPUT_RGBI = 5;

// nvjpegChromaSubsampling_t.
using nvjpegChromaSubsampling_t = int;
inline constexpr nvjpegChromaSubsampling_t NVJPEG_CSS_444 = 0;
inline constexpr nvjpegChromaSubsampling_t NVJPEG_CSS_422 = 1;
inline constexpr nvjpegChromaSubsampling_t NVJPEG_CSS_420 = 2;
inline constexpr nvjpegChromaSubsampling_t NVJPEG_CSS_440 = 3;
inline constexpr nvjpegChromaSubsampling_t NVJPEG_CSS_411 = 4;
inline constexpr nvjpegChromaSubsampling_t NVJPEG_CSS_410 = 5;
inline constexpr nvjpegChromaSubsampling_t NVJPEG_CSS_GRAY = 6;
inline constexpr nvjpegChromaSubsampling_t NVJPEG_CSS_410V = 7;
inline constexpr nvjpegChromaSubsampling_t NVJPEG_CSS_UNKNOWN = -1;

// nvjpegCreateEx flags. BITSTREAM_STRICT: "nvJPEG library will try to
// decode a bitstream even if it doesn't strictly follow the JPEG
// specification. Using this flag will return an error in such cases"
// (nvJPEG documentation, nvJPEG Flags): without it a truncated or damaged
// file decodes to plausible garbage and reports success.
inline constexpr unsigned NVJPEG_FLAGS_DEFAULT = 0;
inline constexpr unsigned NVJPEG_FLAGS_BITSTREAM_STRICT = 4;
// Chroma upsampling by interpolation, as libjpeg-turbo's default (CUDA
// 12.1 and later; without it chroma samples are replicated).
inline constexpr unsigned NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION = 32;

// libraryPropertyType, for nvjpegGetProperty.
inline constexpr int kNvjpegMajorVersion = 0;
inline constexpr int kNvjpegMinorVersion = 1;
inline constexpr int kNvjpegPatchLevel = 2;

inline constexpr int NVJPEG_MAX_COMPONENT = 4;

// Opaque handles.
using nvjpegHandle_t = struct nvjpegHandle*;
using nvjpegJpegState_t = struct nvjpegJpegState*;
using nvjpegJpegDecoder_t = struct nvjpegJpegDecoder*;
using nvjpegJpegStream_t = struct nvjpegJpegStream*;
using nvjpegDecodeParams_t = struct nvjpegDecodeParams*;
using nvjpegBufferPinned_t = struct nvjpegBufferPinned*;
using nvjpegBufferDevice_t = struct nvjpegBufferDevice*;

// An output image: for RGBI, channel[0] and pitch[0] only.
struct nvjpegImage_t {
  unsigned char* channel[NVJPEG_MAX_COMPONENT];
  size_t pitch[NVJPEG_MAX_COMPONENT];
};

// Allocators for nvJPEG's own buffers (jpeg_tiers.cc passes counting ones;
// null means cudaMalloc and cudaHostAlloc).
struct nvjpegDevAllocator_t {
  int (*dev_malloc)(void**, size_t);
  int (*dev_free)(void*);
};
struct nvjpegPinnedAllocator_t {
  int (*pinned_malloc)(void**, size_t, unsigned);
  int (*pinned_free)(void*);
};

struct Nvjpeg {
  std::string library;  // the file that loaded
  int major = 0, minor = 0, patch = 0;

  // Required: the library and the decoupled (per image) API of the CUDA
  // backends.
  nvjpegStatus_t (*GetProperty)(int, int*) = nullptr;
  nvjpegStatus_t (*CreateEx)(nvjpegBackend_t, nvjpegDevAllocator_t*, nvjpegPinnedAllocator_t*,
                             unsigned, nvjpegHandle_t*) = nullptr;
  nvjpegStatus_t (*Destroy)(nvjpegHandle_t) = nullptr;
  nvjpegStatus_t (*JpegStateCreate)(nvjpegHandle_t, nvjpegJpegState_t*) = nullptr;
  nvjpegStatus_t (*JpegStateDestroy)(nvjpegJpegState_t) = nullptr;
  nvjpegStatus_t (*GetImageInfo)(nvjpegHandle_t, const unsigned char*, size_t, int*,
                                 nvjpegChromaSubsampling_t*, int*, int*) = nullptr;
  nvjpegStatus_t (*DecoderCreate)(nvjpegHandle_t, nvjpegBackend_t, nvjpegJpegDecoder_t*) = nullptr;
  nvjpegStatus_t (*DecoderDestroy)(nvjpegJpegDecoder_t) = nullptr;
  nvjpegStatus_t (*DecoderStateCreate)(nvjpegHandle_t, nvjpegJpegDecoder_t,
                                       nvjpegJpegState_t*) = nullptr;
  nvjpegStatus_t (*DecoderJpegSupported)(nvjpegJpegDecoder_t, nvjpegJpegStream_t,
                                         nvjpegDecodeParams_t, int*) = nullptr;
  nvjpegStatus_t (*BufferPinnedCreate)(nvjpegHandle_t, nvjpegPinnedAllocator_t*,
                                       nvjpegBufferPinned_t*) = nullptr;
  nvjpegStatus_t (*BufferPinnedDestroy)(nvjpegBufferPinned_t) = nullptr;
  nvjpegStatus_t (*BufferDeviceCreate)(nvjpegHandle_t, nvjpegDevAllocator_t*,
                                       nvjpegBufferDevice_t*) = nullptr;
  nvjpegStatus_t (*BufferDeviceDestroy)(nvjpegBufferDevice_t) = nullptr;
  nvjpegStatus_t (*StateAttachPinnedBuffer)(nvjpegJpegState_t, nvjpegBufferPinned_t) = nullptr;
  nvjpegStatus_t (*StateAttachDeviceBuffer)(nvjpegJpegState_t, nvjpegBufferDevice_t) = nullptr;
  nvjpegStatus_t (*JpegStreamCreate)(nvjpegHandle_t, nvjpegJpegStream_t*) = nullptr;
  nvjpegStatus_t (*JpegStreamDestroy)(nvjpegJpegStream_t) = nullptr;
  nvjpegStatus_t (*JpegStreamParse)(nvjpegHandle_t, const unsigned char*, size_t, int, int,
                                    nvjpegJpegStream_t) = nullptr;
  nvjpegStatus_t (*DecodeParamsCreate)(nvjpegHandle_t, nvjpegDecodeParams_t*) = nullptr;
  nvjpegStatus_t (*DecodeParamsDestroy)(nvjpegDecodeParams_t) = nullptr;
  nvjpegStatus_t (*DecodeParamsSetOutputFormat)(nvjpegDecodeParams_t,
                                                nvjpegOutputFormat_t) = nullptr;
  nvjpegStatus_t (*DecodeJpegHost)(nvjpegHandle_t, nvjpegJpegDecoder_t, nvjpegJpegState_t,
                                   nvjpegDecodeParams_t, nvjpegJpegStream_t) = nullptr;
  nvjpegStatus_t (*DecodeJpegTransferToDevice)(nvjpegHandle_t, nvjpegJpegDecoder_t,
                                               nvjpegJpegState_t, nvjpegJpegStream_t,
                                               cudaStream_t) = nullptr;
  nvjpegStatus_t (*DecodeJpegDevice)(nvjpegHandle_t, nvjpegJpegDecoder_t, nvjpegJpegState_t,
                                     nvjpegImage_t*, cudaStream_t) = nullptr;

  // Optional: the batched API that drives the hardware engine (off
  // without all three).
  nvjpegStatus_t (*DecodeBatchedSupported)(nvjpegHandle_t, nvjpegJpegStream_t, int*) = nullptr;
  nvjpegStatus_t (*DecodeBatchedInitialize)(nvjpegHandle_t, nvjpegJpegState_t, int, int,
                                            nvjpegOutputFormat_t) = nullptr;
  nvjpegStatus_t (*DecodeBatched)(nvjpegHandle_t, nvjpegJpegState_t, const unsigned char* const*,
                                  const size_t*, nvjpegImage_t*, cudaStream_t) = nullptr;
  // Optional: decoding a region only (off without SetROI); on the engine
  // it also needs the Ex forms of the batched calls.
  nvjpegStatus_t (*DecodeParamsSetROI)(nvjpegDecodeParams_t, int, int, int, int) = nullptr;
  nvjpegStatus_t (*DecodeBatchedSupportedEx)(nvjpegHandle_t, nvjpegJpegStream_t,
                                             nvjpegDecodeParams_t, int*) = nullptr;
  nvjpegStatus_t (*DecodeBatchedEx)(nvjpegHandle_t, nvjpegJpegState_t, const unsigned char* const*,
                                    const size_t*, nvjpegImage_t*, nvjpegDecodeParams_t*,
                                    cudaStream_t) = nullptr;
  // Optional: CMYK/YCCK files to RGB (without it they are refused, so the
  // CPU decodes them).
  nvjpegStatus_t (*DecodeParamsSetAllowCMYK)(nvjpegDecodeParams_t, int) = nullptr;
  // Optional: allocation sizes rounded up to a multiple of the padding, so
  // nvJPEG's buffers grow rarely; and the engine's memory reserved ahead of
  // its first batch of a given size.
  nvjpegStatus_t (*SetDeviceMemoryPadding)(size_t, nvjpegHandle_t) = nullptr;
  nvjpegStatus_t (*SetPinnedMemoryPadding)(size_t, nvjpegHandle_t) = nullptr;
  nvjpegStatus_t (*DecodeBatchedPreAllocate)(nvjpegHandle_t, nvjpegJpegState_t, int, int, int,
                                             nvjpegChromaSubsampling_t,
                                             nvjpegOutputFormat_t) = nullptr;

  // The search that chose this library: "<candidate>: <why not>" for each
  // one that was there but passed over (another CUDA major version, an
  // entry point missing, a load error).
  std::vector<std::string> refused;

  bool has_batched() const {
    return DecodeBatchedSupported && DecodeBatchedInitialize && DecodeBatched;
  }
  bool has_roi() const { return DecodeParamsSetROI != nullptr; }
  bool has_batched_roi() const {
    return has_batched() && has_roi() && DecodeBatchedSupportedEx && DecodeBatchedEx;
  }

  // The library of this process for `cuda`: kUnavailable (naming what was
  // tried and why each candidate that loaded was refused) where none suits.
  // A library once found is kept for the life of the process; a failed
  // search is not remembered, so a later call (after PyTorch loaded its
  // nvJPEG, or with SLUICE_NVJPEG_LIBRARY set) searches again.
  static Result<const Nvjpeg*> get(const CudaRuntime& cuda);
  // The same, never kept (tests load fakes with different settings).
  static Result<std::unique_ptr<Nvjpeg>> load(const CudaRuntime& cuda);

  // kInternal "<what>: NVJPEG_STATUS_... (N)" unless s is success.
  Status check(nvjpegStatus_t s, std::string_view what) const;
};

// "NVJPEG_STATUS_BAD_JPEG" etc.; "NVJPEG_STATUS_<n>" for unknown values.
std::string nvjpeg_status_name(nvjpegStatus_t s);

namespace detail {

// One pass over nvjpeg_candidates() for a CUDA runtime of major version
// `cuda_major` (0: any): copies already loaded in the process first, then
// the list in order; the first that loads, has every required entry point
// and the right major version is chosen and stays loaded. Needs no GPU
// (nvjpegGetProperty only), so `sluice doctor` uses it too.
struct NvjpegSearch {
  void* handle = nullptr;  // the chosen library; null where none suits
  std::string library;
  int major = 0, minor = 0, patch = 0;
  std::vector<std::string> refused;  // "<candidate>: <why not>"
  std::vector<std::string> tried;    // every candidate looked at
};
NvjpegSearch search_nvjpeg(int cuda_major);

}  // namespace detail

}  // namespace sluice::device
