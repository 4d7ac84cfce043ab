#include "device/libraries.h"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>

namespace sluice::detail {
namespace {

// An override replaces the search list: tests and users pointing at one
// library must not silently get another.
std::vector<std::string> with_override(const char* env, std::vector<std::string> rest) {
  if (const char* v = std::getenv(env); v && *v) return {v};
  return rest;
}

void add_glob(const char* pattern, std::vector<std::string>* out) {
  glob_t g{};
  if (::glob(pattern, 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out->emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
}

}  // namespace

void* open_first(const std::vector<std::string>& candidates, std::string* which) {
  for (const std::string& c : candidates) {
    if (void* h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *which = c;
      return h;
    }
  }
  return nullptr;
}

std::vector<std::string> nvml_candidates() {
  std::vector<std::string> c = with_override("SLUICE_NVML_LIBRARY", {"libnvidia-ml.so.1"});
  if (std::getenv("SLUICE_NVML_LIBRARY")) return c;
  add_glob("/usr/local/lib/python3*/dist-packages/nvidia/nvml/lib/libnvidia-ml.so*", &c);
  return c;
}

std::vector<std::string> cudart_candidates() {
  std::vector<std::string> c = with_override(
      "SLUICE_CUDART_LIBRARY",
      {"libcudart.so.13", "libcudart.so.12", "libcudart.so", "/usr/local/cuda/lib64/libcudart.so"});
  if (std::getenv("SLUICE_CUDART_LIBRARY")) return c;
  add_glob("/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib/libcudart.so*", &c);
  add_glob("/usr/local/lib/python3*/dist-packages/nvidia/cuda_runtime/lib/libcudart.so*", &c);
  return c;
}

std::vector<std::string> nccl_candidates() {
  std::vector<std::string> c =
      with_override("SLUICE_NCCL_LIBRARY", {"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2"});
  if (std::getenv("SLUICE_NCCL_LIBRARY")) return c;
  add_glob("/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so*", &c);
  return c;
}

std::vector<std::string> nvjpeg_candidates() {
  std::vector<std::string> c =
      with_override("SLUICE_NVJPEG_LIBRARY",
                    {"libnvjpeg.so.13", "libnvjpeg.so.12", "/usr/local/cuda/lib64/libnvjpeg.so.13",
                     "/usr/local/cuda/lib64/libnvjpeg.so.12"});
  if (std::getenv("SLUICE_NVJPEG_LIBRARY")) return c;
  for (const char* site :
       {"/usr/local/lib/python3*/dist-packages", "/usr/lib/python3/dist-packages",
        "/usr/local/lib/python3*/site-packages"}) {
    std::string base(site);
    add_glob((base + "/nvidia/cu13/lib/libnvjpeg.so*").c_str(), &c);
    add_glob((base + "/nvidia/nvjpeg/lib/libnvjpeg.so*").c_str(), &c);
    add_glob((base + "/torchvision.libs/libnvjpeg*.so*").c_str(), &c);
  }
  return c;
}

}  // namespace sluice::detail
