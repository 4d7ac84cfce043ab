#include "device/nvjpeg.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <type_traits>

#include "base/mutex.h"
#include "device/libraries.h"

namespace sluice::device {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& c : items) out += (out.empty() ? "" : ", ") + c;
  return out;
}

// Binds what every use needs; false names the first missing entry point.
bool bind_required(void* h, Nvjpeg* n, std::string* missing) {
  bool complete = true;
  auto bind = [&](auto& fn, const char* name) {
    fn = sluice::detail::sym<std::remove_reference_t<decltype(fn)>>(h, name);
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
    fn = sluice::detail::sym<std::remove_reference_t<decltype(fn)>>(h, name);
  };
  bind(n->DecodeBatchedSupported, "nvjpegDecodeBatchedSupported");
  bind(n->DecodeBatchedInitialize, "nvjpegDecodeBatchedInitialize");
  bind(n->DecodeBatched, "nvjpegDecodeBatched");
  bind(n->DecodeParamsSetROI, "nvjpegDecodeParamsSetROI");
  bind(n->DecodeBatchedSupportedEx, "nvjpegDecodeBatchedSupportedEx");
  bind(n->DecodeBatchedEx, "nvjpegDecodeBatchedEx");
  bind(n->DecodeParamsSetAllowCMYK, "nvjpegDecodeParamsSetAllowCMYK");
  bind(n->SetDeviceMemoryPadding, "nvjpegSetDeviceMemoryPadding");
  bind(n->SetPinnedMemoryPadding, "nvjpegSetPinnedMemoryPadding");
  bind(n->DecodeBatchedPreAllocate, "nvjpegDecodeBatchedPreAllocate");
}

// Why one loaded candidate does not suit; empty when it does.
std::string verdict(void* h, int cuda_major, int* major, int* minor, int* patch) {
  Nvjpeg probe;
  std::string missing;
  if (!bind_required(h, &probe, &missing)) return "lacks " + missing + ", which sluice uses";
  if (probe.GetProperty(kNvjpegMajorVersion, major) != NVJPEG_STATUS_SUCCESS ||
      probe.GetProperty(kNvjpegMinorVersion, minor) != NVJPEG_STATUS_SUCCESS ||
      probe.GetProperty(kNvjpegPatchLevel, patch) != NVJPEG_STATUS_SUCCESS) {
    return "nvjpegGetProperty failed";
  }
  // Each nvJPEG is built against one CUDA major version; another runtime's
  // would fail in the middle of a decode rather than here.
  if (cuda_major != 0 && *major != cuda_major) {
    return fmt::format("nvJPEG {}.{}.{} is for CUDA {}, not the runtime's CUDA {}", *major, *minor,
                       *patch, *major, cuda_major);
  }
  return {};
}

}  // namespace

namespace detail {

NvjpegSearch search_nvjpeg(int cuda_major) {
  NvjpegSearch s;
  s.tried = sluice::detail::nvjpeg_candidates();
  // A copy the process already holds (PyTorch's, torchvision's) first: two
  // nvJPEGs in one process work, but one is less memory and fewer surprises.
  for (int flags : {RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD, RTLD_NOW | RTLD_LOCAL}) {
    for (const std::string& c : s.tried) {
      void* h = ::dlopen(c.c_str(), flags);
      if (!h) {
        // There but not loadable: say why (a name the loader does not
        // know is only "tried").
        std::error_code ec;
        if (flags == (RTLD_NOW | RTLD_LOCAL) && c.find('/') != std::string::npos &&
            std::filesystem::exists(c, ec)) {
          const char* err = ::dlerror();
          s.refused.push_back(c + ": " + (err ? err : "does not load"));
        }
        continue;
      }
      std::string why = verdict(h, cuda_major, &s.major, &s.minor, &s.patch);
      if (why.empty()) {
        s.handle = h;
        s.library = c;
        // Stays loaded for the life of the process: handles made from it
        // may outlive their owner.
        return s;
      }
      ::dlclose(h);
      const std::string line = c + ": " + why;
      if (std::find(s.refused.begin(), s.refused.end(), line) == s.refused.end()) {
        s.refused.push_back(line);
      }
    }
  }
  s.major = s.minor = s.patch = 0;
  return s;
}

}  // namespace detail

Result<std::unique_ptr<Nvjpeg>> Nvjpeg::load(const CudaRuntime& cuda) {
  const int cuda_major = cuda.version / 1000;
  detail::NvjpegSearch s = detail::search_nvjpeg(cuda_major);
  if (!s.handle) {
    if (s.refused.empty()) {
      return unavailable_error(
          fmt::format("no nvJPEG loads (tried {}; set SLUICE_NVJPEG_LIBRARY)", joined(s.tried)));
    }
    return unavailable_error(fmt::format(
        "no usable nvJPEG for the CUDA runtime ({}, CUDA {}.{}): {} (set SLUICE_NVJPEG_LIBRARY to "
        "the nvJPEG of CUDA {})",
        cuda.library, cuda_major, cuda.version % 1000 / 10, joined(s.refused), cuda_major));
  }
  auto n = std::make_unique<Nvjpeg>();
  n->library = s.library;
  n->major = s.major, n->minor = s.minor, n->patch = s.patch;
  n->refused = std::move(s.refused);
  std::string missing;
  bind_required(s.handle, n.get(), &missing);
  bind_optional(s.handle, n.get());
  return n;
}

Result<const Nvjpeg*> Nvjpeg::get(const CudaRuntime& cuda) {
  static Mutex mu;
  static const Nvjpeg* found SLUICE_GUARDED_BY(mu) = nullptr;  // never destroyed: used until exit
  MutexLock lock(&mu);
  if (found) return found;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Nvjpeg> n, load(cuda));
  found = n.release();
  return found;
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
