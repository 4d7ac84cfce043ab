// Fuzzes the parsers of /proc text (telemetry's process and CPU samplers,
// doctor's cpuinfo and meminfo). The kernel writes these files, but a
// container runtime or an odd kernel can put anything there, and a
// sampler runs inside every training job: never a crash, a hang or a
// nonsense value read past the text.
#include <string_view>

#include "ops/doctor.h"
#include "sluice/telemetry.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::FuzzInput in(data, size);
  const long ticks = static_cast<long>(in.take(-1, 1000));
  const std::string_view text = in.rest();
  // /proc/self/stat and /proc/self/status split at the first form feed.
  const size_t cut = text.find('\f');
  const std::string_view stat = text.substr(0, cut);
  const std::string_view status = cut == std::string_view::npos ? "" : text.substr(cut + 1);
  sluice::parse_process(stat, status, ticks).status().ignore();
  sluice::parse_process(text, text, ticks).status().ignore();
  const auto cpu = sluice::parse_cpu_times(text);
  if (cpu.ok() && cpu->busy > cpu->total) __builtin_trap();
  const sluice::CpuInfo info = sluice::parse_cpuinfo(text);
  if (info.logical_cores < 0) __builtin_trap();
  sluice::parse_meminfo(text).status().ignore();
  return 0;
}
