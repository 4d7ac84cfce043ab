// sluice doctor: checks the machine the way a careful engineer would before
// a long job, and says for each finding whether it is fine, worth a look,
// or a problem, with the fix.
//
// GPU libraries (NVML, the CUDA runtime, NCCL) are loaded at run time with
// dlopen from a search list; on a machine without them the GPU section says
// so and nothing fails. Thread safety: run_doctor is reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice {

struct Check {
  std::string area;   // "cpu", "memory", "disk", "library", "gpu", "cuda", ...
  std::string level;  // "ok", "warn", "fail" or "info"
  std::string detail;
  std::string fix;  // for warn and fail
};

struct GpuInfo {
  std::string name;
  uint64_t memory_bytes = 0;
  int compute_major = 0, compute_minor = 0;
};

struct DoctorReport {
  std::vector<Check> checks;
  std::string cpu_model;
  int cores = 0;
  std::string simd;  // "AVX-512", "AVX2", "SSE4.2", "SSE2"
  uint64_t memory_bytes = 0, memory_available_bytes = 0;
  std::string nvml_library, driver_version;  // empty when absent
  int cuda_driver_version = 0;               // e.g. 13000; 0 = none
  std::string cudart_library;
  int cuda_runtime_version = 0;
  int nccl_version = 0;
  // nvJPEG (the GPU decode tiers), loaded at run time: the library the GPU
  // decoder would choose for the CUDA runtime above (0 = none suits), and
  // those passed over ("<file>: <why not>").
  std::string nvjpeg_library;
  int nvjpeg_major = 0, nvjpeg_minor = 0, nvjpeg_patch = 0;
  std::vector<std::string> nvjpeg_refused;
  std::vector<GpuInfo> gpus;
  bool cuda_build = false;
  bool torch_build = false;
  std::string
      torch_version;  // "sluice-train ... LibTorch 1.13.0, CPU only", from sluice-train --version
  double data_read_mb_per_second = 0;  // with --data
};

struct DoctorOptions {
  // A data folder to measure: free disk and sequential read speed (pages
  // dropped from the cache first, so the figure is the device's).
  std::string data_dir;
  uint64_t read_bytes = uint64_t{512} << 20;  // read at most this much
  // The trainer executable (sluice-train), asked for its LibTorch with
  // `--version`; empty or missing: built without LibTorch.
  std::string trainer;
};

DoctorReport run_doctor(const DoctorOptions& options);

// Renderings: one verdict per line (text) and the whole report (JSON).
std::string format_doctor_text(const DoctorReport& report);
std::string format_doctor_json(const DoctorReport& report);

// Parsers of /proc text, for tests with fakes.
struct CpuInfo {
  std::string model;
  int logical_cores = 0;
  std::string simd;
};
CpuInfo parse_cpuinfo(std::string_view text);
struct MemInfo {
  uint64_t total_bytes = 0, available_bytes = 0;
};
Result<MemInfo> parse_meminfo(std::string_view text);

// "13.0" from 13000 (CUDA's version encoding: 1000 * major + 10 * minor).
std::string cuda_version_string(int version);

}  // namespace sluice
