#include "device/libraries.h"

#include <dlfcn.h>
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "base/mutex.h"

namespace sluice::detail {
namespace {

Mutex added_mu;
std::vector<std::string>& added_dirs() SLUICE_REQUIRES(added_mu) {
  static auto* dirs = new std::vector<std::string>();  // never destroyed: used until exit
  return *dirs;
}

void add_unique(std::string s, std::vector<std::string>* out) {
  if (std::find(out->begin(), out->end(), s) == out->end()) out->push_back(std::move(s));
}

void add_glob(const std::string& pattern, std::vector<std::string>* out) {
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) add_unique(g.gl_pathv[i], out);
  }
  globfree(&g);
}

// The environment that `python3` means here: the first one on $PATH, when
// its folder's parent is a virtual environment (pyvenv.cfg) or a conda
// environment (conda-meta). A machine whose PyTorch lives in a venv that is
// on $PATH but not "activated" is found this way.
std::string path_python_prefix() {
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::string_view rest(path);
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty() || ::access((dir + "/python3").c_str(), X_OK) != 0) continue;
    std::error_code ec;
    const std::filesystem::path prefix = std::filesystem::path(dir).parent_path();
    if (std::filesystem::exists(prefix / "pyvenv.cfg", ec) ||
        std::filesystem::exists(prefix / "conda-meta", ec)) {
      return prefix.string();
    }
    return {};  // the first python3 is a system one
  }
  return {};
}

// An override replaces the search list (one file, or several separated by
// ':'): tests and users pointing at a library must not silently get another.
bool overridden(const char* env, std::vector<std::string>* out) {
  const char* v = std::getenv(env);
  if (!v || !*v) return false;
  std::string_view rest(v);
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    if (colon != 0) add_unique(std::string(rest.substr(0, colon)), out);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  return !out->empty();
}

// `file` (a glob) in the lib folder of every pip NVIDIA wheel in sight.
void add_pip_wheels(const char* file, std::vector<std::string>* out) {
  for (const std::string& site : python_site_dirs()) {
    add_glob(site + "/nvidia/*/lib/" + file, out);
  }
}

}  // namespace

void add_python_site_dirs(const std::vector<std::string>& dirs) {
  MutexLock lock(&added_mu);
  for (const std::string& d : dirs) add_unique(d, &added_dirs());
}

std::vector<std::string> python_site_dirs() {
  std::vector<std::string> out;
  {
    MutexLock lock(&added_mu);
    out = added_dirs();
  }
  std::vector<std::string> prefixes;
  for (const char* env : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (const char* v = std::getenv(env); v && *v) add_unique(v, &prefixes);
  }
  if (std::string p = path_python_prefix(); !p.empty()) add_unique(p, &prefixes);
  for (const std::string& p : prefixes) add_glob(p + "/lib/python3*/site-packages", &out);
  for (const char* site :
       {"/usr/local/lib/python3*/dist-packages", "/usr/lib/python3/dist-packages",
        "/usr/local/lib/python3*/site-packages"}) {
    add_glob(site, &out);
  }
  return out;
}

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
  std::vector<std::string> c;
  if (overridden("SLUICE_NVML_LIBRARY", &c)) return c;
  c.push_back("libnvidia-ml.so.1");
  add_pip_wheels("libnvidia-ml.so*", &c);
  return c;
}

std::vector<std::string> cudart_candidates() {
  std::vector<std::string> c;
  if (overridden("SLUICE_CUDART_LIBRARY", &c)) return c;
  c = {"libcudart.so.13",
       "libcudart.so.12",
       "libcudart.so",
       "/usr/local/cuda/lib64/libcudart.so.13",
       "/usr/local/cuda/lib64/libcudart.so.12",
       "/usr/local/cuda/lib64/libcudart.so"};
  add_pip_wheels("libcudart.so*", &c);
  return c;
}

std::vector<std::string> nccl_candidates() {
  std::vector<std::string> c;
  if (overridden("SLUICE_NCCL_LIBRARY", &c)) return c;
  c = {"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2"};
  add_pip_wheels("libnccl.so*", &c);
  return c;
}

std::vector<std::string> nvjpeg_candidates() {
  std::vector<std::string> c;
  if (overridden("SLUICE_NVJPEG_LIBRARY", &c)) return c;
  c = {"libnvjpeg.so.13", "libnvjpeg.so.12", "/usr/local/cuda/lib64/libnvjpeg.so.13",
       "/usr/local/cuda/lib64/libnvjpeg.so.12"};
  add_pip_wheels("libnvjpeg.so*", &c);
  for (const std::string& site : python_site_dirs()) {
    add_glob(site + "/torchvision.libs/libnvjpeg*.so*", &c);
  }
  return c;
}

}  // namespace sluice::detail
