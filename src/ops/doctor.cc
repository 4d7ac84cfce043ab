#include "ops/doctor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/stubs/common.h>
#include <isa-l.h>
#include <jpeglib.h>
#include <spng.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/core/version.hpp>
#include <sstream>
#include <thread>

#include "device/kernels.h"
#include "ops/gpu_libs.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

std::string slurp(const char* path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string gb(uint64_t b) {
  return fmt::format("{:.1f} GB", b / 1e9);
}

void add(DoctorReport* r, std::string area, std::string level, std::string detail,
         std::string fix = "") {
  r->checks.push_back({std::move(area), std::move(level), std::move(detail), std::move(fix)});
}

// Reads up to `limit` bytes of the folder's files after dropping them from
// the page cache: the figure is what the device delivers to a cold epoch.
double measure_read(const std::string& dir, uint64_t limit, uint64_t* read_bytes) {
  std::vector<char> buf(size_t{4} << 20);
  uint64_t total = 0;
  auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (total >= limit) break;
    if (!e.is_regular_file(ec)) continue;
    int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ssize_t n;
    while (total < limit && (n = ::read(fd, buf.data(), buf.size())) > 0)
      total += static_cast<uint64_t>(n);
    ::close(fd);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *read_bytes = total;
  return secs > 0 ? total / secs / 1e6 : 0;
}

void check_host(DoctorReport* r) {
  CpuInfo cpu = parse_cpuinfo(slurp("/proc/cpuinfo"));
  r->cpu_model = cpu.model;
  r->simd = cpu.simd;
  r->cores = static_cast<int>(std::thread::hardware_concurrency());
  std::string line = fmt::format("{}, {} cores, {}", cpu.model.empty() ? "unknown CPU" : cpu.model,
                                 r->cores, cpu.simd);
  if (r->cores < 4) {
    add(r, "cpu", "warn", line + ": few cores to decode images with",
        "JPEG decoding takes about one core per 1,000 images/s: one modern GPU training ResNet-50 "
        "needs 3-8 "
        "such cores");
  } else {
    add(r, "cpu", "ok", line);
  }
  if (cpu.simd == "SSE2" || cpu.simd.empty()) {
    add(r, "cpu", "warn", "no AVX2: libjpeg-turbo's fastest kernels are unavailable",
        "run on a CPU with AVX2 (any x86-64 server since 2015)");
  }
  auto mem = parse_meminfo(slurp("/proc/meminfo"));
  if (mem.ok()) {
    r->memory_bytes = mem->total_bytes;
    r->memory_available_bytes = mem->available_bytes;
    std::string d =
        fmt::format("{} total, {} available", gb(mem->total_bytes), gb(mem->available_bytes));
    if (mem->available_bytes < (uint64_t{4} << 30)) {
      add(r, "memory", "warn", d,
          "the pipeline's default budget is 2 GiB; lower memory_budget or free memory");
    } else {
      add(r, "memory", "ok", d);
    }
  } else {
    add(r, "memory", "warn", std::string(mem.status().message()), "check /proc/meminfo");
  }
}

void check_data(const DoctorOptions& o, DoctorReport* r) {
  if (o.data_dir.empty()) return;
  struct statvfs st;
  if (::statvfs(o.data_dir.c_str(), &st) != 0) {
    add(r, "disk", "fail", o.data_dir + ": cannot be read",
        "give an existing data folder with --data");
    return;
  }
  uint64_t free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  uint64_t size = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  std::string d = fmt::format("{}: {} free of {}", o.data_dir, gb(free_bytes), gb(size));
  if (size > 0 && free_bytes * 10 < size) {
    add(r, "disk", "warn", d, "under 10 % free: checkpoints and logs may not fit");
  } else {
    add(r, "disk", "ok", d);
  }
  uint64_t n = 0;
  double mbps = measure_read(o.data_dir, o.read_bytes, &n);
  r->data_read_mb_per_second = mbps;
  if (n == 0) {
    add(r, "disk", "warn", o.data_dir + ": no files to measure",
        "point --data at a folder of shards");
    return;
  }
  std::string rd =
      fmt::format("{}: sequential read {:.0f} MB/s ({:.0f} MB, page cache dropped first)",
                  o.data_dir, mbps, n / 1e6);
  // ImageNet-like shards are ~110 KB an image: 3,000 images/s need 330 MB/s.
  if (mbps < 330) {
    add(r, "disk", "warn", rd,
        "below the ~330 MB/s that 3,000 images/s need: copy shards to local NVMe or RAM");
  } else {
    add(r, "disk", "ok", rd);
  }
}

void check_libraries(DoctorReport* r) {
  const char* simd_off = std::getenv("JSIMD_FORCENONE");
  add(r, "library", simd_off && std::string(simd_off) == "1" ? "warn" : "ok",
      fmt::format(
          "libjpeg-turbo {}.{}.{} (SIMD {})", LIBJPEG_TURBO_VERSION_NUMBER / 1000000,
          LIBJPEG_TURBO_VERSION_NUMBER / 1000 % 1000, LIBJPEG_TURBO_VERSION_NUMBER % 1000,
          simd_off && std::string(simd_off) == "1"
              ? "switched off by JSIMD_FORCENONE=1"
              : "chosen at run time: " +
                    std::string(r->simd == "AVX-512" ? "AVX2, the widest it has" : r->simd)),
      simd_off ? "unset JSIMD_FORCENONE" : "");
  add(r, "library", "ok",
      fmt::format("libspng {}.{}.{}", SPNG_VERSION_MAJOR, SPNG_VERSION_MINOR, SPNG_VERSION_PATCH));
  add(r, "library", "ok",
      fmt::format("OpenCV {} (imgproc, single-threaded in sluice's workers)", CV_VERSION));
  add(r, "library", "ok",
      fmt::format("protobuf {}.{}.{}", GOOGLE_PROTOBUF_VERSION / 1000000,
                  GOOGLE_PROTOBUF_VERSION / 1000 % 1000, GOOGLE_PROTOBUF_VERSION % 1000));
  add(r, "library", "ok",
      fmt::format("ISA-L {}.{}.{}, zlib {}", ISAL_MAJOR_VERSION, ISAL_MINOR_VERSION,
                  ISAL_PATCH_VERSION, ZLIB_VERSION));
}

// LibTorch lives in sluice-train only; it says which one it was built with.
void check_torch(const DoctorOptions& o, DoctorReport* r) {
  if (o.trainer.empty() || ::access(o.trainer.c_str(), X_OK) != 0) {
    add(r, "library", "info",
        "LibTorch: this sluice was built without it (no sluice-train): `sluice train` and "
        "`sluice extract` are unavailable",
        "install libtorch-dev and libgloo-dev (or PyTorch) and rebuild");
    return;
  }
  std::string command = "'" + o.trainer + "' --version 2>/dev/null";
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (out.find("LibTorch") == std::string::npos) {
    add(r, "library", "fail", o.trainer + " does not start (its --version printed nothing)",
        "rebuild sluice-train, or check that LibTorch's libraries load (ldd " + o.trainer + ")");
    return;
  }
  r->torch_build = true;
  r->torch_version = out;
  add(r, "library", "ok", out);
}

// The driver (NVML) and each GPU it sees.
void check_driver(DoctorReport* r) {
  if (r->nvml_library.empty()) {
    add(r, "gpu", "info",
        "no NVIDIA driver found (libnvidia-ml.so.1 did not load): GPU checks skipped");
  } else {
    add(r, "gpu", "ok",
        fmt::format("NVIDIA driver {} (CUDA {}), through {}", r->driver_version,
                    cuda_version_string(r->cuda_driver_version), r->nvml_library));
    if (r->gpus.empty())
      add(r, "gpu", "warn", "the driver sees no GPU", "check CUDA_VISIBLE_DEVICES and nvidia-smi");
    for (size_t i = 0; i < r->gpus.size(); ++i) {
      const GpuInfo& g = r->gpus[i];
      bool old = g.compute_major < 7;
      add(r, "gpu", old ? "warn" : "ok",
          fmt::format("GPU {}: {}, {}, compute capability {}.{}", i, g.name, gb(g.memory_bytes),
                      g.compute_major, g.compute_minor),
          old ? "compute capability under 7.0 has no tensor cores: mixed precision gains little"
              : "");
    }
  }
}

// The CUDA runtime against the driver's CUDA version.
void check_runtime(DoctorReport* r) {
  if (r->cuda_runtime_version == 0) {
    add(r, "cuda", "info", "no CUDA runtime library found (libcudart)");
  } else {
    std::string d = fmt::format("CUDA runtime {} ({})",
                                cuda_version_string(r->cuda_runtime_version), r->cudart_library);
    if (r->cuda_driver_version == 0) {
      add(r, "cuda", "info", d + "; no driver, so no GPU can run it");
    } else if (r->cuda_driver_version < r->cuda_runtime_version) {
      add(r, "cuda", "fail",
          d + fmt::format(" is newer than the driver's CUDA {}",
                          cuda_version_string(r->cuda_driver_version)),
          "update the NVIDIA driver, or use a runtime no newer than the driver's CUDA version");
    } else {
      add(r, "cuda", "ok",
          d + fmt::format(", driver supports CUDA {}",
                          cuda_version_string(r->cuda_driver_version)));
    }
  }
}

// nvJPEG: the GPU decode tiers. Its major version must be the runtime's.
void check_nvjpeg(DoctorReport* r) {
  const int runtime_major = r->cuda_runtime_version / 1000;
  if (r->nvjpeg_major == 0 && r->nvjpeg_refused.empty()) {
    add(r, "cuda", "info",
        "nvJPEG not found: JPEG decoding stays on the CPU (install the CUDA toolkit's libnvjpeg "
        "or pip's nvidia-nvjpeg to decode on the GPU)");
  } else if (r->nvjpeg_major == 0) {
    add(r, "cuda", "warn",
        fmt::format("no usable nvJPEG for CUDA runtime {}: JPEG decoding stays on the CPU",
                    cuda_version_string(r->cuda_runtime_version)),
        fmt::format("install nvJPEG for CUDA {} (or set SLUICE_NVJPEG_LIBRARY)", runtime_major));
  } else {
    std::string d = fmt::format("nvJPEG {}.{}.{} ({})", r->nvjpeg_major, r->nvjpeg_minor,
                                r->nvjpeg_patch, r->nvjpeg_library);
    add(r, "cuda", "ok",
        d + (r->cuda_build ? ": JPEGs decode on the GPU with --device cuda"
                           : ": found, but GPU decoding needs sluice's GPU kernels"));
  }
  for (const std::string& refused : r->nvjpeg_refused) {
    add(r, "cuda", "info", "nvJPEG passed over: " + refused);
  }
}

void check_gpus(DoctorReport* r) {
  detail::probe_gpu_libraries(r);
  // The CUDA build is the kernel library beside sluice (device/kernels.h).
  auto kernels = device::Kernels::get();
  r->cuda_build = kernels.ok();
  if (kernels.ok()) {
    add(r, "build", "ok", "sluice's GPU kernels: " + (*kernels)->library);
  } else {
    add(r, "build", "info",
        "sluice built without CUDA: with --device cuda, batches are augmented on the CPU and "
        "copied (" +
            std::string(kernels.status().message()) + ")");
  }
  check_driver(r);
  check_runtime(r);
  check_nvjpeg(r);
  if (r->nccl_version) {
    add(r, "cuda", "ok",
        fmt::format("NCCL {}.{}.{}", r->nccl_version / 10000, r->nccl_version / 100 % 100,
                    r->nccl_version % 100));
  }
}

}  // namespace

std::string cuda_version_string(int v) {
  if (v <= 0) return "none";
  return fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

CpuInfo parse_cpuinfo(std::string_view text) {
  CpuInfo c;
  std::string flags;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (key == "processor") ++c.logical_cores;
    if (key == "model name" && c.model.empty()) c.model = std::string(value);
    if (key == "flags" && flags.empty()) flags = " " + std::string(value) + " ";
  }
  auto has = [&](const char* f) {
    return flags.find(std::string(" ") + f + " ") != std::string::npos;
  };
  c.simd = has("avx512f")  ? "AVX-512"
           : has("avx2")   ? "AVX2"
           : has("sse4_2") ? "SSE4.2"
           : flags.empty() ? ""
                           : "SSE2";
  return c;
}

Result<MemInfo> parse_meminfo(std::string_view text) {
  MemInfo m;
  auto field = [&](std::string_view name, uint64_t* out) -> bool {
    size_t p = text.find(name);
    if (p == std::string_view::npos) return false;
    std::string rest(text.substr(p + name.size(), 40));
    unsigned long long kb = 0;
    if (std::sscanf(rest.c_str(), ": %llu kB", &kb) != 1) return false;
    *out = kb * 1024;
    return true;
  };
  if (!field("MemTotal", &m.total_bytes)) return data_loss_error("/proc/meminfo: no MemTotal line");
  if (!field("MemAvailable", &m.available_bytes)) {
    uint64_t free_b = 0;
    if (!field("MemFree", &free_b))
      return data_loss_error("/proc/meminfo: no MemAvailable or MemFree line");
    m.available_bytes = free_b;
  }
  return m;
}

DoctorReport run_doctor(const DoctorOptions& options) {
  DoctorReport r;
  check_host(&r);
  check_data(options, &r);
  check_libraries(&r);
  check_torch(options, &r);
  check_gpus(&r);
  return r;
}

std::string format_doctor_text(const DoctorReport& r) {
  std::string out;
  for (const Check& c : r.checks) {
    out += fmt::format("{:<5} {:<8} {}\n", c.level, c.area, c.detail);
    if (!c.fix.empty() && (c.level == "warn" || c.level == "fail"))
      out += fmt::format("{:<14} fix: {}\n", "", c.fix);
  }
  return out;
}

std::string format_doctor_json(const DoctorReport& r) {
  using json = nlohmann::ordered_json;
  json j;
  json checks = json::array();
  for (const Check& c : r.checks) {
    checks.push_back({{"area", c.area}, {"level", c.level}, {"detail", c.detail}, {"fix", c.fix}});
  }
  j["checks"] = checks;
  j["cpu"] = {{"model", r.cpu_model}, {"cores", r.cores}, {"simd", r.simd}};
  j["memory"] = {{"total_bytes", r.memory_bytes}, {"available_bytes", r.memory_available_bytes}};
  json gpus = json::array();
  for (const GpuInfo& g : r.gpus) {
    gpus.push_back(
        {{"name", g.name},
         {"memory_bytes", g.memory_bytes},
         {"compute_capability", fmt::format("{}.{}", g.compute_major, g.compute_minor)}});
  }
  j["gpu"] = {{"nvml", r.nvml_library},
              {"driver", r.driver_version},
              {"cuda_driver", cuda_version_string(r.cuda_driver_version)},
              {"devices", gpus}};
  j["cuda"] = {{"runtime", cuda_version_string(r.cuda_runtime_version)},
               {"library", r.cudart_library},
               {"nccl", r.nccl_version},
               {"nvjpeg", r.nvjpeg_major ? fmt::format("{}.{}.{}", r.nvjpeg_major, r.nvjpeg_minor,
                                                       r.nvjpeg_patch)
                                         : std::string()},
               {"nvjpeg_library", r.nvjpeg_library},
               {"nvjpeg_refused", r.nvjpeg_refused},
               {"cuda_build", r.cuda_build}};
  j["torch_build"] = r.torch_build;
  j["torch_version"] = r.torch_version;
  j["data_read_mb_per_second"] = r.data_read_mb_per_second;
  return j.dump(2) + "\n";
}

}  // namespace sluice
