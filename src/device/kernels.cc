#include "device/kernels.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "device/libraries.h"

namespace sluice::device {
namespace {

Result<Kernels> load() {
  std::vector<std::string> candidates = kernels_candidates();
  std::string which;
  void* h = nullptr;
  std::string tried;
  for (const std::string& c : candidates) {
    h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      which = c;
      break;
    }
    // A library that is there but does not load (its CUDA runtime missing,
    // say) is named with the loader's reason.
    const char* err = ::dlerror();
    std::error_code ec;
    bool exists = c.find('/') != std::string::npos && std::filesystem::exists(c, ec);
    tried += (tried.empty() ? "" : ", ") + c + (exists && err ? std::string(" (") + err + ")" : "");
  }
  if (!h) {
    return unavailable_error(fmt::format(
        "sluice's GPU kernels are not there (tried {}): this sluice was built without CUDA, "
        "or set SLUICE_KERNELS_LIBRARY",
        tried));
  }
  auto abi = detail::sym<sluice_kernels_abi_fn>(h, "sluice_kernels_abi");
  Kernels k;
  k.library = which;
  k.launch_fused_samples =
      detail::sym<sluice_launch_fused_samples_fn>(h, "sluice_launch_fused_samples");
  if (!abi || !k.launch_fused_samples) {
    return unavailable_error(which + " is not a sluice kernel library");
  }
  if (abi() != kKernelsAbi) {
    return unavailable_error(
        fmt::format("{} was built for kernel ABI {}, this sluice needs {}: rebuild both together",
                    which, abi(), kKernelsAbi));
  }
  return k;
}

}  // namespace

std::vector<std::string> kernels_candidates() {
  if (const char* v = std::getenv("SLUICE_KERNELS_LIBRARY"); v && *v) return {v};
  std::vector<std::string> c;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) c.push_back((exe.parent_path() / "libsluice_kernels.so").string());
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&kernels_candidates), &info) && info.dli_fname) {
    std::string self = fs::path(info.dli_fname).parent_path().string();
    if (!self.empty()) c.push_back(self + "/libsluice_kernels.so");
  }
#ifdef SLUICE_KERNELS_BUILD_PATH
  c.push_back(SLUICE_KERNELS_BUILD_PATH);
#endif
  c.push_back("libsluice_kernels.so");  // the loader's path (an install)
  return c;
}

Result<const Kernels*> Kernels::get() {
  static std::once_flag once;
  static Result<Kernels>* loaded = nullptr;
  std::call_once(once, [] { loaded = new Result<Kernels>(load()); });
  if (!loaded->ok()) return loaded->status();
  return &loaded->value();
}

}  // namespace sluice::device
