#include "device/nvjpeg.h"

#include <fmt/format.h>

#include <mutex>
#include <type_traits>

#include "device/libraries.h"

namespace sluice::device {
namespace {

std::string tried_list() {
  std::string tried;
  for (const std::string& c : detail::nvjpeg_candidates()) {
    tried += (tried.empty() ? "" : ", ") + c;
  }
  return tried;
}

// Binds what every use needs; false names the first missing entry point.
bool bind_required(void* h, Nvjpeg* n, std::string* missing) {
  bool complete = true;
  auto bind = [&](auto& fn, const char* name) {
    fn = detail::sym<std::remove_reference_t<decltype(fn)>>(h, name);
    if (!fn && complete) *missing = name;
    complete = complete && fn != nullptr;
  };
  bind(n->GetProperty, "nvjpegGetProperty");
  bind(n->CreateEx, "nvjpegCreateEx");
  bind(n->Destroy, "nvjpegDestroy");
  bind(n->JpegStateCreate, "nvjpegJpegStateCreate");
  bind(n->JpegStateDestroy, "nvjpegJpegStateDestroy");
  bind(n->GetImageInfo, "nvjpegGetImageInfo");
  bind(n->DecoderCreate, "nvjpegDecoderCreate");
  bind(n->DecoderDestroy, "nvjpegDecoderDestroy");
  bind(n->DecoderStateCreate, "nvjpegDecoderStateCreate");
  bind(n->DecoderJpegSupported, "nvjpegDecoderJpegSupported");
  bind(n->BufferPinnedCreate, "nvjpegBufferPinnedCreate");
  bind(n->BufferPinnedDestroy, "nvjpegBufferPinnedDestroy");
  bind(n->BufferDeviceCreate, "nvjpegBufferDeviceCreate");
  bind(n->BufferDeviceDestroy, "nvjpegBufferDeviceDestroy");
  bind(n->StateAttachPinnedBuffer, "nvjpegStateAttachPinnedBuffer");
  bind(n->StateAttachDeviceBuffer, "nvjpegStateAttachDeviceBuffer");
  bind(n->JpegStreamCreate, "nvjpegJpegStreamCreate");
  bind(n->JpegStreamDestroy, "nvjpegJpegStreamDestroy");
  bind(n->JpegStreamParse, "nvjpegJpegStreamParse");
  bind(n->DecodeParamsCreate, "nvjpegDecodeParamsCreate");
  bind(n->DecodeParamsDestroy, "nvjpegDecodeParamsDestroy");
  bind(n->DecodeParamsSetOutputFormat, "nvjpegDecodeParamsSetOutputFormat");
  bind(n->DecodeJpegHost, "nvjpegDecodeJpegHost");
  bind(n->DecodeJpegTransferToDevice, "nvjpegDecodeJpegTransferToDevice");
  bind(n->DecodeJpegDevice, "nvjpegDecodeJpegDevice");
  return complete;
}

void bind_optional(void* h, Nvjpeg* n) {
  auto bind = [&](auto& fn, const char* name) {
    fn = detail::sym<std::remove_reference_t<decltype(fn)>>(h, name);
  };
  bind(n->DecodeBatchedSupported, "nvjpegDecodeBatchedSupported");
  bind(n->DecodeBatchedInitialize, "nvjpegDecodeBatchedInitialize");
  bind(n->DecodeBatched, "nvjpegDecodeBatched");
  bind(n->DecodeParamsSetROI, "nvjpegDecodeParamsSetROI");
  bind(n->DecodeBatchedSupportedEx, "nvjpegDecodeBatchedSupportedEx");
  bind(n->DecodeBatchedEx, "nvjpegDecodeBatchedEx");
  bind(n->DecodeParamsSetAllowCMYK, "nvjpegDecodeParamsSetAllowCMYK");
}

}  // namespace

Result<std::unique_ptr<Nvjpeg>> Nvjpeg::load(const CudaRuntime& cuda) {
  std::string which;
  void* h = detail::open_first(detail::nvjpeg_candidates(), &which);
  if (!h) {
    return unavailable_error(
        fmt::format("no nvJPEG loads (tried {}; set SLUICE_NVJPEG_LIBRARY)", tried_list()));
  }
  auto n = std::make_unique<Nvjpeg>();
  n->library = which;
  std::string missing;
  if (!bind_required(h, n.get(), &missing)) {
    ::dlclose(h);
    return unavailable_error(fmt::format("{} lacks {}, which sluice uses", which, missing));
  }
  bind_optional(h, n.get());
  if (n->GetProperty(kNvjpegMajorVersion, &n->major) != NVJPEG_STATUS_SUCCESS ||
      n->GetProperty(kNvjpegMinorVersion, &n->minor) != NVJPEG_STATUS_SUCCESS ||
      n->GetProperty(kNvjpegPatchLevel, &n->patch) != NVJPEG_STATUS_SUCCESS) {
    ::dlclose(h);
    return unavailable_error(which + ": nvjpegGetProperty failed");
  }
  // Each nvJPEG is built against one CUDA major version; another runtime's
  // would fail in the middle of a decode rather than here.
  const int cuda_major = cuda.version / 1000;
  if (n->major != cuda_major) {
    ::dlclose(h);
    return unavailable_error(fmt::format(
        "{} is nvJPEG {}.{}.{}, but the CUDA runtime ({}) is CUDA {}.{}: their major versions "
        "must match (set SLUICE_NVJPEG_LIBRARY to the nvJPEG of CUDA {})",
        which, n->major, n->minor, n->patch, cuda.library, cuda_major, cuda.version % 1000 / 10,
        cuda_major));
  }
  // The library stays loaded for the life of the process: handles made from
  // it may outlive this object's owner.
  return n;
}

Result<const Nvjpeg*> Nvjpeg::get(const CudaRuntime& cuda) {
  static std::once_flag once;
  static Result<std::unique_ptr<Nvjpeg>>* loaded = nullptr;
  std::call_once(once, [&] { loaded = new Result<std::unique_ptr<Nvjpeg>>(load(cuda)); });
  if (!loaded->ok()) return loaded->status();
  return static_cast<const Nvjpeg*>(loaded->value().get());
}

Status Nvjpeg::check(nvjpegStatus_t s, std::string_view what) const {
  if (s == NVJPEG_STATUS_SUCCESS) return Status();
  return internal_error(fmt::format("{}: {} ({})", what, nvjpeg_status_name(s), s));
}

std::string nvjpeg_status_name(nvjpegStatus_t s) {
  static constexpr const char* kNames[] = {"NVJPEG_STATUS_SUCCESS",
                                           "NVJPEG_STATUS_NOT_INITIALIZED",
                                           "NVJPEG_STATUS_INVALID_PARAMETER",
                                           "NVJPEG_STATUS_BAD_JPEG",
                                           "NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
                                           "NVJPEG_STATUS_ALLOCATOR_FAILURE",
                                           "NVJPEG_STATUS_EXECUTION_FAILED",
                                           "NVJPEG_STATUS_ARCH_MISMATCH",
                                           "NVJPEG_STATUS_INTERNAL_ERROR",
                                           "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
                                           "NVJPEG_STATUS_INCOMPLETE_BITSTREAM"};
  if (s >= 0 && s < static_cast<int>(std::size(kNames))) return kNames[s];
  return fmt::format("NVJPEG_STATUS_{}", s);
}

}  // namespace sluice::device
